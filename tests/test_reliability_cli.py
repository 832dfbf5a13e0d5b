"""Issue 20 point 9: Ctrl-C ends a run with one line and exit 130 (workers included); the README's
``scene_splits={...}`` example works as written; ``progress=false`` on every long CLI."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _interrupt(args, ready, tmp_path, timeout=120):
    """Start ``python -m args`` in its own session, wait until ``ready()``, press Ctrl-C (SIGINT to the
    whole process group, as a terminal does) and return the finished process."""
    # SIGINT back to its default in the child: a shell's background job (e.g. ``make test &``) starts with
    # SIGINT ignored, which Python then keeps; a terminal's foreground command never has it ignored
    p = subprocess.Popen([sys.executable, "-m", *args], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    while not ready() and time.time() - t0 < timeout and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


@pytest.mark.parametrize("cli", ["trajectory", "generate"])
def test_ctrl_c_exits_130_with_one_line(tmp_path, cli):
    if cli == "trajectory":
        args = ["render.trajectory", "scene=plant_02", "frames=400", "size=64", "out=o", "progress=false"]
        ready = lambda: len(list((tmp_path / "o").glob("frame_*.png"))) >= 1  # noqa: E731 - rendering (numba)
    else:
        args = ["tasks.generate", "dataset=degraded_polygons", "out=o", "workers=2", "progress=false"]
        ready = lambda: len(list((tmp_path / "o").glob("*/*.png"))) >= 50  # noqa: E731 - workers busy
    rc, out, err = _interrupt(args, ready, tmp_path)
    assert rc == 130, err
    assert "Traceback" not in err and "SystemError" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted"), err
    if cli == "generate":
        time.sleep(1)
        assert not [ln for ln in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
                    if str(tmp_path) in ln], "no worker left running"


def test_readme_scene_splits_example_composes(tmp_path, monkeypatch):
    from tasks.threedpc.config import compose_config

    monkeypatch.chdir(tmp_path)  # scene files must exist when the configuration is checked
    for name in ("a.yaml", "b.yaml", "c.yaml"):
        (tmp_path / name).write_text("splat: x.ply\n")
    readme = (ROOT / "README.md").read_text()
    m = re.search(r'"(scene_splits=\{[^"]+\})"', readme)
    assert m, "the README shows a scene_splits example"
    cfg = compose_config(["out=x", "scenes=[a.yaml,b.yaml,c.yaml]", m.group(1)])
    assert dict(cfg.scene_splits) == {"a.yaml": "train", "b.yaml": "test", "c.yaml": "strategy"}


@pytest.mark.parametrize("args", [
    ["render.trajectory", "scene=plant_02", "frames=1", "size=16", "out=o", "progress=false"],
    ["tasks.generate", "dataset=degraded_polygons", "out=o", "per_class=1", "levels=[0.3]", "classes=[triangle]",
     "progress=false"],
], ids=["trajectory", "generate"])
def test_progress_false_is_quiet(tmp_path, args):
    p = subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "it/s" not in p.stderr and "%|" not in p.stderr, p.stderr
