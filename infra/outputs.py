"""The output-folder guard: the one mechanism of every command that writes a folder (``render.trajectory``,
``tasks.threedpc``, ``tasks.generate``): an exclusive lock on ``<out>/.lock`` for the whole run, removal of
temporary files of dead processes only, a marked configuration stamp compared on every run (refuse / resume /
overwrite only the files Vantage wrote), written atomically.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .files import atomic_write_text, package_version


# ------------------------------------------------------------------------------------------- output folders
STAMP_MARK = "_vantage"  # key of the stamp's marker: {"output": <kind>, "version": ...}
OWNED_MARK = ".vantage-owned"  # a file in a folder Vantage created and may delete whole
_TMP_PID = re.compile(r"\.tmp(\d+)")


class OutputError(RuntimeError):
    """An output folder that cannot be used as asked (in use, or holding other output)."""


class OutputInUse(OutputError):
    pass


class OutputConflict(OutputError):
    pass


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (zombies count as alive; a PID of another user too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # pragma: no cover - e.g. Windows without the process
        return False
    return True


def remove_dead_temps(paths: Iterable[Path]) -> list[Path]:
    """Remove the temporary files/folders among ``paths`` (names ``….tmp<pid>…``) whose process is dead.

    A temporary of a live process (another build's worker) is left alone; our own PID's temporaries
    are stale at start-up (a dead process that had our PID) and removed too. Returns what was removed."""
    removed = []
    for p in paths:
        m = _TMP_PID.search(p.name)
        if not m:
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and pid_alive(pid):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        removed.append(p)
    return removed


@contextlib.contextmanager
def folder_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<out>/.lock`` (``fcntl.flock``; the OS releases it when the process
    dies, so a killed run never leaves a stale lock). Raises :class:`OutputInUse` naming the holder."""
    out = Path(out)
    lock = out / ".lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK):
            os.close(fd)
            raise
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise OutputInUse(f"out={out} is in use by PID {holder} (another run writes there); wait for it to "
                          "finish or choose another out=") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # releases the lock; the file stays (removing it would race with a waiting locker)


def read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise OutputConflict(f"{path}: unreadable ({e}); it was not written by Vantage or is damaged — "
                             "choose another out=") from None


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k == STAMP_MARK:
                continue
            if k not in a or k not in b:
                out.append(f"{prefix}{k}")
            else:
                out += _differences(a[k], b[k], f"{prefix}{k}.")
        return out
    return [] if a == b else [prefix.rstrip(".") or "(value)"]


def remove_owned(out: Path, files: Iterable[Path], folders: Iterable[Path] = ()) -> None:
    """Delete ``files`` (what Vantage's records list) and the ``folders`` that carry Vantage's
    :data:`OWNED_MARK`, then every folder these leave empty. Nothing else is touched."""
    out = Path(out).resolve()
    parents = set()
    for f in files:
        f = Path(f)
        if out not in f.resolve().parents:
            continue  # a record pointing outside the folder is never followed
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            f.unlink()
        parents.add(f.parent)
    for d in folders:
        d = Path(d)
        if (d / OWNED_MARK).is_file():
            shutil.rmtree(d, ignore_errors=True)
        elif d.is_dir():
            parents.add(d)
    for d in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        while d != out and out in d.resolve().parents:
            try:
                d.rmdir()  # only if empty: a folder holding a file Vantage did not write stays
            except OSError:
                break
            d = d.parent


def mark_owned(folder: Path) -> None:
    (Path(folder) / OWNED_MARK).write_bytes(b"")


@contextlib.contextmanager
def output_folder(out: str | os.PathLike, kind: str, config: dict, *, overwrite: bool = False,
                  stamp: str = "config.json", stamp_extra: dict | None = None, config_key: str | None = None,
                  owned: Callable[[Path], tuple[Iterable[Path], Iterable[Path]]] | None = None,
                  temps: Callable[[Path], Iterable[Path]] | None = None,
                  upgrade: Callable[[dict], dict] | None = None) -> Iterator[Path]:
    """Claim ``out`` for a run producing ``kind`` output with ``config`` (JSON-able); yields the folder.

    1. Locks ``<out>/.lock`` for the whole ``with`` block (:class:`OutputInUse` if another run holds it).
    2. Removes the temporaries ``temps(out)`` lists whose process is dead.
    3. Compares ``config`` with the stamp's (``stamp`` holds the config itself, or under ``config_key``):
       no stamp → a new output (files already there are left alone); same → resume; different →
       :class:`OutputConflict` naming the differing keys, unless ``overwrite``: then the files and owned
       folders ``owned(out)`` returns (what Vantage's records list) are deleted — never anything else.
       ``upgrade`` maps the stamp's config to today's form first (keys that today's code leaves out when
       they hold what older code always did), so an equivalent older stamp resumes.
       A stamp without Vantage's mark is someone else's file: refused even with ``overwrite``, unless it
       holds exactly ``config`` (a stamp written before marks existed).
    4. Writes the marked stamp atomically (``stamp_extra`` adds fields beside the config)."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputConflict(f"out={out}: exists and is not a folder; choose another out=") from None
    except OSError as e:
        raise OutputConflict(f"out={out}: cannot create the folder ({e.strerror}); choose another out=") from None
    with folder_lock(out):
        if temps is not None:
            remove_dead_temps(temps(out))
        path = out / stamp
        prev = read_stamp(path)
        config = json.loads(json.dumps(config, default=list))
        if prev is not None:
            mark = prev.get(STAMP_MARK) if isinstance(prev, dict) else None
            had = prev.get(config_key) if (config_key and isinstance(prev, dict)) else (
                {k: v for k, v in prev.items() if k != STAMP_MARK} if isinstance(prev, dict) else prev)
            if mark is None and had != config:
                raise OutputConflict(
                    f"out={out}: {stamp} was not written by Vantage (no {STAMP_MARK!r} mark); Vantage never "
                    "deletes files it did not write — choose another (empty or new) out=")
            if upgrade is not None and mark is not None and isinstance(had, dict):
                had = upgrade(json.loads(json.dumps(had)))
            if mark is not None and mark.get("output") != kind:
                raise OutputConflict(f"out={out}: holds {mark.get('output')} output, not {kind}; choose another out=")
            if had != config:
                diff = _differences(had, config)
                if not overwrite:
                    raise OutputConflict(
                        f"out={out}: holds {kind} output made with a different configuration (differs in: "
                        f"{', '.join(diff[:8])}); choose another out=, or pass overwrite=true to delete the files "
                        "Vantage wrote there (files it did not write are kept)")
                if owned is not None:
                    files, folders = owned(out)
                    remove_owned(out, files, folders)
        from_version = package_version()
        payload = {config_key: config, **(stamp_extra or {})} if config_key else {**config, **(stamp_extra or {})}
        payload[STAMP_MARK] = {"output": kind, "version": from_version}
        atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, default=str))
        yield out
