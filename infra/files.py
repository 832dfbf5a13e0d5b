"""Files appear whole or not at all, and say what made them: atomic writes, CSV + Parquet table pairs, sha256
of files and folders, cache folders, safe names, the package version recorded in every output.

The bottom layer (``infra`` < ``scenes`` < ``render`` < ``tasks`` < ``eval`` < ``experiment``): every layer writes
files, so none of this belongs to rendering or geometry.

Atomic write: every file goes to a temporary name in the same folder (``.<name>.tmp<pid>``) and is renamed into
place (``os.replace`` is atomic on POSIX within one file system), so a reader never sees a half-written file; a
failed write (e.g. ENOSPC, Ctrl-C) removes its temporary file. The PID in the name lets the output-folder guard
(:func:`infra.outputs.remove_dead_temps`) tell a dead process's leftovers from a live writer's.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "cache_dir", "package_version", "package_version_reference",
           "safe_name", "sha256_file", "sha256_path", "temp_name", "write_table"]


def temp_name(path: str | os.PathLike) -> Path:
    """The temporary name :func:`atomic_write_bytes` uses for ``path`` (same folder, carries our PID)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    tmp = temp_name(path)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        # a full disk (ENOSPC), a quota or Ctrl-C must not leave a temporary file behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


# ---------------------------------------------------------------------------------------------- tables
def write_table(df, stem: str | os.PathLike, csv: str | None = None) -> None:
    """Write ``df`` as ``<stem>.csv`` and ``<stem>.parquet``, each atomically. ``csv``: the CSV text when the
    caller has it already (it must equal ``df.to_csv(index=False)``; the stimulus writer builds it shard by
    shard while its workers render). ``df`` may be a pyarrow Table carrying its pandas metadata (with ``csv``):
    written by pyarrow, as pandas' ``to_parquet`` would write the frame it stands for."""
    stem = Path(stem)
    for ext in (".csv", ".parquet"):
        final = stem.with_suffix(ext)
        tmp = temp_name(final)
        try:
            if ext == ".csv" and csv is not None:
                with open(tmp, "wb") as f:
                    f.write(csv.encode("utf-8"))
            elif ext == ".csv":
                df.to_csv(tmp, index=False)
            elif hasattr(df, "to_parquet"):
                df.to_parquet(tmp, index=False)
            else:
                import pyarrow.parquet as pq

                pq.write_table(df, tmp)
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (embedding caches and shards can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_path(path: str | os.PathLike) -> str:
    """sha256 of a file, or of a folder's files (relative names and contents, sorted), e.g. an unzipped SOG."""
    p = Path(path)
    if not p.is_dir():
        return sha256_file(p)
    h = hashlib.sha256()
    for q in sorted(q for q in p.rglob("*") if q.is_file()):
        h.update(str(q.relative_to(p)).encode() + b"\0")
        with open(q, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def cache_dir(kind: str) -> Path:
    """``$VANTAGE_CACHE/<kind>`` (default ``~/.cache/vantage/<kind>``): where embeddings, proxy meshes and API
    replies are cached, never beside the data (which may be read-only)."""
    return Path(os.environ.get("VANTAGE_CACHE") or Path.home() / ".cache" / "vantage") / kind


def safe_name(text: str) -> str:
    """``text`` with every character other than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in str(text))


def package_version(dist: str = "vantage") -> str:
    """The installed version of ``dist`` (vantage's is recorded in every output's config and manifest): read
    from the first ``<dist>-<version>.dist-info/METADATA`` on ``sys.path``, the file ``importlib.metadata``
    reads, without importing it (~0.03 s, before any worker of a run can start); anything else (an egg-info,
    no match, no Version line) goes through :func:`package_version_reference` (tested equal)."""
    import sys

    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found = [n for n in names if re.fullmatch(rf"{re.escape(dist)}-[^-/]+\.(dist|egg)-info", n, re.IGNORECASE)]
        if len(found) == 1 and found[0].endswith(".dist-info") and found[0].startswith(f"{dist}-"):
            try:
                with open(os.path.join(entry or ".", found[0], "METADATA"), encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line[len("Version:"):].strip()
                        if not line.strip():
                            break  # end of the headers
            except OSError:
                pass
        if found:
            break
    return package_version_reference(dist)


def package_version_reference(dist: str = "vantage") -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"
