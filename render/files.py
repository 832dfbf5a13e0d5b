"""Writing outputs safely: every file goes to a temporary name in the same folder and is renamed into
place (``os.replace`` is atomic), so a reader never sees a half-written file. Also the tables (CSV +
Parquet pairs) and the package version recorded in every run's metadata."""
from __future__ import annotations

import io
import os
from pathlib import Path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def save_png(path: str | os.PathLike, rgb_uint8) -> None:
    """Write an 8-bit image as PNG with PIL (adaptive row filters suit rendered images), atomically."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb_uint8).save(buf, format="PNG")
    atomic_write_bytes(path, buf.getvalue())


def write_table(df, stem: str | os.PathLike) -> None:
    """Write ``df`` as ``<stem>.csv`` and ``<stem>.parquet``, each atomically."""
    stem = Path(stem)
    for ext in (".csv", ".parquet"):
        final = stem.with_suffix(ext)
        tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
        if ext == ".csv":
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, index=False)
        os.replace(tmp, final)


def safe_name(text: str) -> str:
    """``text`` with every character other than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in str(text))


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vantage")
    except PackageNotFoundError:
        return "unknown"
