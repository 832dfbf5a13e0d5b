"""Issue 20 point 8: pool workers (and multiprocessing's resource tracker) exit when the parent dies;
a failing job stops the pool at once."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and ps")
def test_workers_exit_when_the_parent_is_killed():
    code = ("import time\nfrom infra.pool import run_jobs\n"
            "print('start', flush=True)\n"
            "for _ in run_jobs(time.sleep, [60, 60, 60], 2):\n    pass\n")
    parent = subprocess.Popen([sys.executable, "-c", code], env=ENV, stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline().strip() == "start"
    t0 = time.time()
    kids: list[int] = []
    while time.time() - t0 < 60:  # two workers and the resource tracker
        kids = _children(parent.pid)
        if len(kids) >= 3:
            break
        time.sleep(0.2)
    assert len(kids) >= 2, kids
    time.sleep(1.0)  # let the workers pick up their (60 s) jobs
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    t0 = time.time()
    while any(_running(k) for k in kids) and time.time() - t0 < 10:
        time.sleep(0.2)
    alive = [k for k in kids if _running(k)]
    for k in alive:
        os.kill(k, signal.SIGKILL)
    assert not alive, f"orphaned workers still running: {alive}"


def test_first_failure_stops_the_pool_fast():
    from infra.pool import run_jobs

    t0 = time.time()
    with pytest.raises(TypeError):
        for _ in run_jobs(time.sleep, ["x", 30, 30, 30], 2):  # sleep("x") fails at once, the others take 30 s
            pass
    assert time.time() - t0 < 20, "queued jobs were cancelled, not waited for"


def _pool_managers() -> list:
    import concurrent.futures.process as cfp
    import threading

    return [t for t in threading.enumerate() if isinstance(t, cfp._ExecutorManagerThread) and t.is_alive()]


@pytest.mark.parametrize("how", ["failure", "consumer stops"])
def test_a_stopped_pool_leaves_no_manager_thread(how):
    """A stopped pool's manager thread has ended (and closed its wake-up pipe) before run_jobs returns: left
    running, it raced Python's exit hook, and a Ctrl-C'd ``tasks.generate`` printed a traceback (CI)."""
    from infra.pool import run_jobs

    before = _pool_managers()
    if how == "failure":
        with pytest.raises(TypeError):
            for _ in run_jobs(time.sleep, ["x", 30, 30], 2):
                pass
    else:
        jobs = run_jobs(time.sleep, [0, 30, 30, 30], 2)
        next(jobs)
        jobs.close()  # what a KeyboardInterrupt in the consumer's loop does to the generator
    assert _pool_managers() == before
