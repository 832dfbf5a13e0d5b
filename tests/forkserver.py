"""Run ``python -m <module> <args>`` many times without paying the interpreter's imports each time.

A bad-input table runs ~130 commands that each stop within milliseconds of their start, after 1-3 s of
importing numpy, pandas, torch, trimesh, Hydra ... (measured: 1.6 CPU-s a case, 3.5 CPU-min for the table).
:class:`ForkServer` starts one plain Python process (``python tests/forkserver.py``) that imports those
libraries once and never runs them, then forks a child per request; the child sets the request's folder,
environment and ``sys.argv`` and runs the module as ``python -m`` does (:func:`runpy.run_module` with
``run_name="__main__"``), its stdout/stderr going to files. A child starts from the same warm state every
time, so cases cannot leak state into each other (Hydra's global state, logging handlers, caches).

The server is a fresh process rather than a fork of the test process itself: a process that has already run
OpenMP work (torch) must not fork children that run it again (libgomp is not fork-safe), and pytest's own
threads stay out of the children. The server only imports.

What differs from ``subprocess.run([python, "-m", ...])``: the listed modules are already imported when the
command starts (a command that fails *while importing them* would fail in the server instead; the server
then reports its own start-up error). :func:`tests.test_cli_errors.test_forkserver_matches_a_subprocess`
compares both ways on cases of every CLI (the plain twin).

Protocol: one JSON object per line on stdin ``{"args": [...], "cwd": str, "env": {...}, "timeout": s}``, one
JSON line back ``{"rc": int, "stdout": str, "stderr": str, "seconds": float}``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

# imported once by the server: the third-party libraries and project modules CLIs import before they can check
# their arguments. None of these is a CLI run as __main__ (that module would be executed twice).
WARM = ["numpy", "pandas", "pyarrow", "pyarrow.parquet", "scipy.spatial", "scipy.ndimage", "PIL.Image",
        "omegaconf", "hydra", "hydra.core.global_hydra", "torch", "trimesh", "tqdm",
        "infra.cli", "infra.files", "scenes.props", "scenes.catalogue", "tasks.placement"]


def _child(req: dict, out_path: str, err_path: str) -> None:
    """In the forked child: become ``python -m <args>`` and never return."""
    import runpy

    code = 1
    try:
        out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(os.devnull)
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for p in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
            if p and p not in sys.path:
                sys.path.insert(0, p)
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # the server script's folder
        sys.path.insert(0, req["cwd"])  # as `python -m` puts the working folder first
        sys.argv = [req["args"][0], *req["args"][1:]]
        try:
            runpy.run_module(req["args"][0], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            c = e.code
            code = 0 if c is None else c if isinstance(c, int) else 1
            if not isinstance(c, (int, type(None))):
                print(c, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - the interpreter's own report of an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve(warm: list[str]) -> None:
    """The server's loop (``python tests/forkserver.py MODULE ...``): import, then answer requests."""
    import importlib
    import tempfile

    for m in warm:
        importlib.import_module(m)
    tmp = tempfile.mkdtemp(prefix="forkserver_")
    out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
    reply = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the reply channel
    print(json.dumps({"ready": True}), file=reply, flush=True)
    import atexit
    import shutil

    atexit.register(shutil.rmtree, tmp, True)  # the children's output files (the children exit with os._exit)
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(req, out_path, err_path)
        deadline = t0 + float(req.get("timeout", 300))
        status = None
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.perf_counter() > deadline:
                os.kill(pid, 9)
                _, status = os.waitpid(pid, 0)
            else:
                time.sleep(0.002)
        rc = os.waitstatus_to_exitcode(status)
        res = {"rc": rc, "seconds": time.perf_counter() - t0}
        for k, p in (("stdout", out_path), ("stderr", err_path)):
            res[k] = Path(p).read_text(errors="replace")
        print(json.dumps(res), file=reply, flush=True)


class ForkServer:
    """A running server (context manager); :meth:`run` is thread-safe (one request at a time)."""

    def __init__(self, warm: list[str] | None = None, pythonpath: str | None = None):
        env = {**os.environ}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        import tempfile

        self.log = tempfile.TemporaryFile("w+")  # the server's own stderr (a pipe nobody reads could fill up)
        self.proc = subprocess.Popen([sys.executable, __file__, *(warm if warm is not None else WARM)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env)
        if not self.proc.stdout.readline():
            raise RuntimeError(f"fork server did not start: {self._log()}")
        self.lock = threading.Lock()

    def _log(self) -> str:
        self.log.seek(0)
        return self.log.read()[-3000:]

    def run(self, args: list[str], cwd, env: dict, timeout: float = 300) -> dict:
        """``python -m args[0] args[1:]`` in ``cwd`` with exactly ``env``: rc, stdout, stderr, seconds."""
        req = {"args": list(args), "cwd": str(cwd), "env": dict(env), "timeout": timeout}
        with self.lock:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fork server died: {self._log()}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.stdout.close()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


if __name__ == "__main__":
    serve(sys.argv[1:])
