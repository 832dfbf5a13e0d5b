"""Scripted participants and a local server, for tests, benchmarks and trying a design before a study.

* :func:`make_demo_dataset` — a tiny dataset in the 3D-PC build layout (``metadata.parquet``,
  ``manifest.json``, PNGs) that :func:`eval.tasks.load_task` reads like a real build.
* :class:`LocalServer` — the app served by uvicorn in a background thread on 127.0.0.1 (a free port).
* :class:`ScriptedParticipant` — an HTTP client that goes through a session like the page does
  (session, consent, next, stimulus, response) and answers by a given policy; it records the latency of
  every response request (seconds, ``time.perf_counter``).
"""
from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import numpy as np


def make_demo_dataset(out: str | Path, n_train: int = 24, n_human: int = 12, size: int = 64, seed: int = 0) -> Path:
    """A 3D-PC-shaped folder: ``n_train`` training and ``n_human`` test images (all in the human subset),
    VPT and depth labels alternating, each image a flat colour with a stripe (``size`` px, RGB PNG)."""
    import pandas as pd

    from infra.images import save_png
    from infra.files import atomic_write_bytes, atomic_write_text

    out = Path(out)
    rng = np.random.default_rng(seed)
    rows = []
    for split, n in (("train", n_train), ("test", n_human)):
        for i in range(n):
            name = f"images/{split}/demo/scene_{i // 4:02d}/s{i % 4:02d}/f000.png"
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            img = np.full((size, size, 3), rng.integers(40, 215, 3), np.uint8)
            img[:, (i * 7) % size] = 255
            save_png(out / name, img)
            rows.append({"file_name": name, "split": split, "vpt_label": i % 2, "depth_label": (i // 2) % 2,
                         "in_vpt": True, "in_depth": True, "in_human": split == "test", "in_strategy": False,
                         "scene": f"{split}_{i // 4:02d}", "setting": i % 4})
    md = pd.DataFrame(rows).astype({"vpt_label": "Int8", "depth_label": "Int8", "setting": "int32"})
    atomic_write_bytes(out / "metadata.parquet", md.to_parquet(index=False))
    atomic_write_text(out / "manifest.json", json.dumps({"kind": "demo", "seed": seed, "images": len(md)}))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """``with LocalServer(app) as url:`` — uvicorn on 127.0.0.1 in a daemon thread until the block ends."""

    def __init__(self, app, port: int | None = None, timeout: float = 20.0):
        import uvicorn

        self.port = port or free_port()
        # keep-alive longer than any pause between a simulated participant's requests: with uvicorn's default
        # (5 s) a loaded machine lets the server close an idle connection just as the client's pool reuses it,
        # and the request fails with "connection reset by peer" (seen once in a full `make test`)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False, backlog=2048, timeout_keep_alive=120))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.timeout = timeout

    def __enter__(self) -> str:
        self.thread.start()
        t0 = time.monotonic()
        while not self.server.started:
            if time.monotonic() - t0 > self.timeout or not self.thread.is_alive():
                raise RuntimeError(f"the experiment server did not start on 127.0.0.1:{self.port}")
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(self.timeout)


class ScriptedParticipant:
    """Goes through a session over HTTP. ``answer(trial, client)`` returns the key to press (``None`` = let
    the deadline pass) for a trial dict from ``/api/next``; default: the first key. ``rt_ms`` is what the
    participant reports as their reaction time (a callable of the trial or a number)."""

    def __init__(self, base_url: str, participant: str | None, study: str = "S1", session: str = "x",
                 client=None):
        import httpx

        self.base = base_url
        self.client = client or httpx.Client(base_url=base_url, timeout=60.0)
        self.ids = {"participant": participant, "study": study, "session": session}
        self.token: str | None = None
        self.keys: list[dict] = []
        self.latencies: list[float] = []
        self.answered: list[dict] = []

    def _headers(self) -> dict:
        return {"X-Session": self.token} if self.token else {}

    def _call(self, method: str, path: str, **kw):
        for attempt in range(20):  # back off on 429 like the page does
            headers = {**self._headers(), **kw.pop("headers", {})} if attempt == 0 else headers
            r = self.client.request(method, path, headers=headers, **kw)
            if r.status_code != 429:
                return r
            time.sleep(0.05 * (attempt + 1))
        return r

    def start(self) -> dict:
        r = self._call("POST", "/api/session", json=self.ids)
        r.raise_for_status()
        s = r.json()
        self.token, self.keys = s["token"], s["keys"]
        return s

    def run(self, answer=None, rt_ms=250.0, max_trials: int | None = None) -> dict:
        """Answer trials until done (or ``max_trials`` answers); returns the last ``/api/next`` state."""
        if self.token is None:
            self.start()
        n = 0
        while True:
            r = self._call("GET", "/api/next")
            r.raise_for_status()
            t = r.json()
            if t["state"] == "consent":
                self._call("POST", "/api/consent").raise_for_status()
                continue
            if t["state"] == "done" or (max_trials is not None and n >= max_trials):
                return t
            if "attention" not in t:
                img = self._call("GET", f"/api/stimulus/{t['trial_id']}")
                img.raise_for_status()
            key = answer(t, self) if answer else self.keys[0]["key"]
            rt = rt_ms(t) if callable(rt_ms) else rt_ms
            time.sleep(rt / 1000.0)  # the server refuses an RT longer than the time since it served the trial
            t0 = time.perf_counter()
            r = self._call("POST", "/api/response", json={"trial_id": t["trial_id"], "key": key, "rt_ms": rt})
            self.latencies.append(time.perf_counter() - t0)
            r.raise_for_status()
            self.answered.append({**t, "key": key, "rt_ms": rt, "result": r.json()})
            n += 1


class TemporaryPostgres:
    """A throwaway PostgreSQL cluster in a temporary folder on a free 127.0.0.1 port (``initdb`` + ``pg_ctl``;
    trust authentication, fsync off: for tests and benchmarks only). As root, the server runs as the
    ``postgres`` system user (PostgreSQL refuses to run as root). ``url(name)`` creates a database.
    Raises :class:`RuntimeError` naming what is missing when the binaries or the user are absent."""

    def __init__(self):
        self.bindir = self._find_bindir()
        self.port = free_port()

    @staticmethod
    def _find_bindir() -> Path:
        import shutil

        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
        if found:
            return found[0].parent
        w = shutil.which("initdb")
        if w:
            return Path(w).resolve().parent
        raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found: install the Debian package "
                           "postgresql (make debs)")

    def _run(self, *args: str) -> None:
        import os
        import subprocess

        cmd = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()[-800:]}")

    def __enter__(self) -> "TemporaryPostgres":
        import os
        import pwd
        import shutil
        import tempfile

        self.dir = Path(tempfile.mkdtemp(prefix="vantage-pg-"))
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.dir)
                raise RuntimeError("running as root needs the 'postgres' system user (Debian package postgresql)")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", "vantage", "-N", "-E", "UTF8", "--locale=C")
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(self.dir / "log"), "-w", "-t", "60", "start")
        self._dbs = 0
        return self

    def url(self, name: str | None = None) -> str:
        import psycopg

        self._dbs += 1
        name = name or f"t{self._dbs}"
        with psycopg.connect(f"postgresql://vantage@127.0.0.1:{self.port}/postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://vantage@127.0.0.1:{self.port}/{name}"

    def __exit__(self, *exc) -> None:
        import shutil

        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def _serve_process(dataset: str, design_cfg: dict, db_url: str, port: int, limits: dict) -> None:
    import uvicorn

    from .app import create_app
    from .design import design_from_config
    from .study import open_study

    study = open_study(dataset, design_from_config(design_cfg), db_url)
    uvicorn.run(create_app(study, secrets_token(), limits), host="127.0.0.1", port=port, log_level="warning",
                access_log=False, backlog=4096)


def secrets_token() -> str:
    import secrets

    return secrets.token_urlsafe(24)


def run_load(dataset: str | Path, design_cfg: dict, db_url: str, participants: int, rt_ms: float = 20.0,
             deadline_s: float = 600.0, prefix: str = "load") -> dict:
    """``participants`` scripted participants at once (one thread and one connection each) against a server
    in a separate process on 127.0.0.1, all answering the first key after ``rt_ms``. Returns the latency
    of every ``POST /api/response`` (seconds), wall time, errors, and the database's own count check:
    ``stored`` answered rows and ``duplicates`` (rows sharing a participant and position), ``expected``."""
    import multiprocessing as mp

    import httpx
    from sqlalchemy import func, select

    from . import db as D

    port = free_port()
    unlimited = {"session_rate": 1e6, "session_burst": 10**6, "api_rate": 1e6, "api_burst": 10**6}
    proc = mp.get_context("spawn").Process(target=_serve_process, args=(str(dataset), design_cfg, db_url, port,
                                                                        unlimited), daemon=True)
    proc.start()
    base = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    while True:
        try:
            if httpx.get(base + "/", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() - t0 > 120 or not proc.is_alive():
            proc.terminate()
            raise RuntimeError(f"the load-test server did not start on {base}")
        time.sleep(0.1)
    parts: list[ScriptedParticipant] = []
    errors: list[str] = []
    lock = threading.Lock()

    def go(i: int) -> None:
        try:
            with httpx.Client(base_url=base, timeout=60.0) as c:
                p = ScriptedParticipant(base, f"{prefix}-{i:04d}", client=c)
                p.run(rt_ms=rt_ms)
            with lock:
                parts.append(p)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            with lock:
                errors.append(repr(e)[:300])

    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(participants)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline_s - (time.perf_counter() - start)))
    wall = time.perf_counter() - start
    timed_out = sum(t.is_alive() for t in threads)
    proc.terminate()
    proc.join(10)
    engine = D.make_engine(db_url)
    T, P = D.trials, D.participants
    with engine.connect() as c:
        stored = c.execute(select(func.count(T.c.response)).select_from(T.join(P, T.c.participant_id == P.c.id))
                           .where(P.c.pseudonym.is_not(None))).scalar()
        dup = c.execute(select(func.count()).select_from(
            select(T.c.participant_id, T.c.position).group_by(T.c.participant_id, T.c.position)
            .having(func.count() > 1).subquery())).scalar()
        completed = c.execute(select(func.count(P.c.completed_at))).scalar()
    engine.dispose()
    lat = np.array([x for p in parts for x in p.latencies])
    return {"participants": participants, "finished": len(parts), "errors": errors, "timed_out": timed_out,
            "wall_s": wall, "latencies_s": lat, "acknowledged": int(sum(len(p.answered) for p in parts)),
            "stored": int(stored), "duplicates": int(dup), "completed": int(completed)}
