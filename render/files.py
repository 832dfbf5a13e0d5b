"""Writing and reading files safely; the one place Vantage's builders share for output folders.

* **Atomic writes** are one layer down (:mod:`scenes.files`, which scene files use too); everything here
  writes through them.
* **PNG**: :func:`png_bytes` (a minimal fast encoder, used by the 2D generators and, through
  :func:`save_frame_png`, for rendered frames) and :func:`save_png`
  (PIL's encoder with adaptive row filters, smaller for rendered images); every caller goes through here.
* **Images in**: :func:`read_image` — the one loader for user images (distortion/grating ``source=``
  folders, evaluation): 16-bit and 32-bit integer images are scaled by their range, float images clipped
  to [0, 1] (PIL's ``convert`` would saturate them to white), decompression bombs and undecodable files
  raise :class:`UnreadableImage` with the reason; :func:`read_image_small` (thumbnails for the shortcut
  audit, by the same rules); :func:`class_folder_images` lists ``<root>/<class>/*``.
* **Output folders**: :func:`output_folder` — the one mechanism of ``render.trajectory``,
  ``tasks.threedpc`` and ``tasks.generate``: an exclusive lock on ``<out>/.lock`` for the whole run,
  removal of temporary files of dead processes only, a marked configuration stamp compared on every
  run (refuse / resume / overwrite only the files Vantage wrote), written atomically.
* Tables (CSV + Parquet pairs) and the package version recorded in every run's metadata.
"""
from __future__ import annotations

import contextlib
import errno
import io
import functools
import json
import os
import re
import shutil
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from scenes.files import atomic_write_bytes, atomic_write_text, temp_name


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
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------ PNG out
def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def _idat(data: bytes) -> bytes:
    """``_chunk(b"IDAT", data)`` (its reference, tested equal) without copying the data for its CRC: the CRC
    of the tag continued over the data."""
    return struct.pack(">I", len(data)) + b"IDAT" + data + struct.pack(">I", zlib.crc32(data, _IDAT_CRC) & 0xFFFFFFFF)


_IDAT_CRC = zlib.crc32(b"IDAT")
_IEND = _chunk(b"IEND", b"")


@functools.lru_cache(maxsize=8)
def _png_head(w: int, h: int, colour: int) -> bytes:
    """The signature and IHDR chunk of a PNG of this size and colour type (the same for every image of a run)."""
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0))


# Deflate by zlib-ng at level 2. Deterministic: the same bytes in, the same bytes out, in any process and
# whatever ran before. ISA-L (used until 2026-11) was ~2x faster but not: twice the same filtered rows gave a
# stream different in a few bytes (a 3D-PC frame; a MindSet image written serially and by a worker, which
# failed CI), so a re-rendered or sharded file could differ from the original in bytes although never in pixels.
# Level 2 on flat stimuli: 0.063 ms per 224 px RGB image (ISA-L 0.033) with smaller files; on a rendered
# 256 px frame 1.64 ms (ISA-L 0.60) and 3% smaller (docs/benchmarks.md, "Deterministic PNG deflate"). Stdlib
# zlib is 3-4x slower on flat images and is not used as a silent fallback (other bytes).
from zlib_ng import zlib_ng as _zlib_ng

DEFLATE_LEVEL = 2
DEFLATE = f"zlib-ng {_zlib_ng.ZLIBNG_VERSION} level {DEFLATE_LEVEL}"  # what wrote the PNGs: for provenance
# Run-length deflate (zlib's Z_RLE strategy: matches at distance 1 only) for binary line drawings, chosen by
# the generator (``Generator.png_deflate``): on the degraded polygons 22% smaller files and ~15% less time
# than level 2; on the other generators' stimuli files 0.92-4.1x their level-2 size, larger for 30 of 33
# (docs/benchmarks.md), so not the default.
DEFLATE_MODES = {"default": DEFLATE, "rle": f"{DEFLATE}, run-length (Z_RLE)"}


def _compress(data, level: int, deflate: str = "default") -> bytes:
    """The zlib stream of ``data``: stored (level 0) or zlib-ng at :data:`DEFLATE_LEVEL` (any other level),
    with the run-length strategy for ``deflate="rle"``."""
    if level == 0 or deflate == "default":
        return _zlib_ng.compress(data, 0 if level == 0 else DEFLATE_LEVEL)
    c = _zlib_ng.compressobj(DEFLATE_LEVEL, _zlib_ng.DEFLATED, 15, 8, _zlib_ng.Z_RLE)
    return c.compress(data) + c.flush()


def png_bytes(img: np.ndarray, compress_level: int = 6, row_filter: str = "none", deflate: str = "default") -> bytes:
    """8-bit greyscale [H, W] or RGB [H, W, 3] PNG. A minimal encoder (one row filter for every row, one
    deflate stream by zlib-ng, deterministic), many times faster than PIL's for the mostly flat images stimuli
    are; any PNG decoder reads it (tested against PIL). ``compress_level`` 0 stores uncompressed.
    ``row_filter``: "none" (PNG filter 0; flat stimuli) or "sub" (filter 1, each byte minus the same channel
    of the pixel to its left: rendered, textured images, e.g. the 3D-PC frames, compress ~17% smaller than
    with "none" at the same speed, ~13% larger than PIL's adaptive filters at zlib level 6 in 1/28 of the
    time; docs/benchmarks.md). ``deflate``: "default" or "rle" (:data:`DEFLATE_MODES`: run-length matching
    only, for binary line drawings)."""
    if row_filter not in ("none", "sub"):
        raise ValueError(f"png_bytes: row_filter={row_filter!r}; one of 'none', 'sub'")
    if deflate not in DEFLATE_MODES:
        raise ValueError(f"png_bytes: deflate={deflate!r}; one of {', '.join(map(repr, DEFLATE_MODES))}")
    a = np.asarray(img, np.uint8)
    if a.ndim == 2:
        colour, channels = 0, 1
    elif a.ndim == 3 and a.shape[2] == 3:
        colour, channels = 2, 3
    else:
        raise ValueError(f"png_bytes: need [H, W] or [H, W, 3] uint8, got shape {list(a.shape)}")
    h, w = a.shape[:2]
    raw = np.empty((h, 1 + w * channels), np.uint8)
    raw[:, 0] = 0  # filter type: none
    if channels == 1:
        raw[:, 1:] = a
    elif a.strides[2] == 0:  # a grey image broadcast to RGB: three strided copies of the grey plane
        pix = raw[:, 1:].reshape(h, w, 3)
        for c in range(3):
            pix[:, :, c] = a[:, :, 0]
    else:
        raw[:, 1:] = a.reshape(h, -1)
    if row_filter == "sub":  # PNG filter 1: Sub(x) = Raw(x) − Raw(x − bytes per pixel), modulo 256
        pix = raw[:, 1:].copy()
        np.subtract(pix[:, channels:], pix[:, :-channels], out=raw[:, 1 + channels:])
        raw[:, 0] = 1
    return _png_head(w, h, colour) + _idat(_compress(memoryview(raw).cast("B"), compress_level, deflate)) + _IEND


def save_frame_png(path: str | os.PathLike, rgb_uint8) -> None:
    """A rendered frame as PNG, atomically; creates the parent folder. Vantage's minimal encoder with the Sub
    row filter and zlib-ng deflate (:func:`png_bytes`; deterministic bytes): ~1.6 ms CPU per 256-px frame
    against ~18-30 ms for PIL's adaptive filters at zlib level 6, files ~10% larger, pixels identical
    (issue 19, docs/benchmarks.md). The one writer of the 3D-PC's and ``render.trajectory``'s frames."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, png_bytes(rgb_uint8, 1, row_filter="sub"))


def save_png(path: str | os.PathLike, rgb_uint8) -> None:
    """Write an 8-bit image as PNG with PIL (adaptive row filters suit rendered images), atomically;
    creates the parent folder."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb_uint8).save(buf, format="PNG")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buf.getvalue())


# ------------------------------------------------------------------------------------------------ images in
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif")


class UnreadableImage(ValueError):
    """A file that cannot be used as an image; the message names the file and the reason."""


def image_to_unit(im) -> np.ndarray:
    """A PIL image as float64 in [0, 1]: [H, W] for one channel, [H, W, C] otherwise.

    Integer images are scaled by the range of their type: 8-bit modes by 255, ``I;16*`` by 65535, ``I``
    (32-bit signed; PIL also opens 16-bit PNG/TIFF this way) by 65535 when every value lies in
    [0, 65535] and by its full range [−2³¹, 2³¹ − 1] otherwise; ``F`` (32-bit float) is taken as
    intensity in [0, 1] and clipped. PIL's ``convert("L"/"RGB")`` instead clips these to 255 (white)."""
    mode = im.mode
    if mode.startswith("I;16"):
        return np.asarray(im, dtype=np.float64) / 65535.0
    if mode == "I":
        a = np.asarray(im, dtype=np.float64)
        if a.size and (a.min() < 0 or a.max() > 65535):
            return (a + 2.0 ** 31) / (2.0 ** 32 - 1)
        return a / 65535.0
    if mode == "F":
        return np.clip(np.nan_to_num(np.asarray(im, dtype=np.float64)), 0.0, 1.0)
    if mode == "1":
        return np.asarray(im.convert("L"), dtype=np.float64) / 255.0
    if mode not in ("L", "LA", "RGB", "RGBA"):
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    return np.asarray(im, dtype=np.float64) / 255.0


def read_image_array(path: str | os.PathLike, mode: str = "RGB") -> np.ndarray:
    """The image at ``path`` as uint8: [H, W, 3] for ``mode="RGB"``, [H, W] for ``"L"`` (ITU-R 601-2 luma,
    as PIL's). Alpha is dropped. Raises :class:`UnreadableImage` for a decompression bomb (more pixels
    than PIL's ``MAX_IMAGE_PIXELS`` limit allows), a truncated or unknown file."""
    from PIL import Image, UnidentifiedImageError

    if mode not in ("RGB", "L"):
        raise ValueError(f"read_image_array: mode={mode!r}; use 'RGB' or 'L'")
    try:
        with Image.open(path) as im:
            im.load()
            a = image_to_unit(im)
    except Image.DecompressionBombError as e:
        raise UnreadableImage(f"{path}: too large to decode safely ({e})") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise UnreadableImage(f"{path}: not a readable image ({type(e).__name__}: {e})") from None
    if a.ndim == 3:
        a = a[..., :3] if a.shape[2] >= 3 else a[..., :1]
        if a.shape[2] == 1:
            a = a[..., 0]
    if mode == "RGB" and a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    elif mode == "L" and a.ndim == 3:
        a = a @ np.array([0.299, 0.587, 0.114])
    return (np.clip(a, 0, 1) * 255.0 + 0.5).astype(np.uint8)


def read_image_small(path: str | os.PathLike, size: int) -> np.ndarray:
    """The image at ``path`` as a (size, size, 3) float32 array in [0, 1]: PIL's integer ``reduce`` (box
    average; cheap) to about ``size``, then a box resize to exactly ``size`` (the shortcut audit's thumbnails
    of a build's renders). 8-bit images are reduced before any conversion; other depths go through
    :func:`read_image_array` first (scaled, not saturated). Errors as :func:`read_image_array`."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.mode in ("RGB", "RGBA", "L", "LA", "P", "1"):
                im = im.convert("RGB")
            else:
                im = Image.fromarray(read_image_array(path, "RGB"))
            return np.asarray(_reduce_small(im, size), np.float32) / 255.0
    except Image.DecompressionBombError as e:
        raise UnreadableImage(f"{path}: too large to decode safely ({e})") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise UnreadableImage(f"{path}: not a readable image ({type(e).__name__}: {e})") from None


def _reduce_small(im, size: int):
    """:func:`read_image_small`'s resampling of a PIL RGB image to (size, size)."""
    from PIL import Image

    f = max(1, min(im.size) // size)
    if f > 1:
        im = im.reduce(f)
    if im.size != (size, size):
        im = im.resize((size, size), Image.BOX)
    return im


def small_uint8(img: np.ndarray, size: int) -> np.ndarray:
    """The 8-bit (size, size, 3) thumbnail that :func:`read_image_small` makes of the PNG of ``img`` (an
    [H, W, 3] uint8 image in memory; PNG is lossless, so the same pixels go through the same resampling):
    ``read_image_small(path, size) == small_uint8(img, size) / 255`` in float32, bit for bit (tested). Lets a
    writer thumbnail a frame while it still holds it instead of a reader decoding the file again."""
    from PIL import Image

    return np.asarray(_reduce_small(Image.fromarray(np.ascontiguousarray(img, np.uint8)), size))


def read_image(path: str | os.PathLike, mode: str = "RGB"):
    """:func:`read_image_array` as a PIL image (what torchvision/timm transforms take)."""
    from PIL import Image

    return Image.fromarray(read_image_array(path, mode))


def class_folder_images(root: str | os.PathLike) -> list[tuple[str, str]]:
    """(path, class) for every file under ``root/<class>/`` (sorted; hidden files skipped), dangling symbolic
    links included: they fail when read, so the writer lists them in ``skipped`` with the reason instead of
    losing them silently.

    Images directly in ``root`` next to class folders would have no class: they raise ``ValueError``
    naming them rather than being silently ignored."""
    rootp = Path(root)
    if not rootp.is_dir():
        raise ValueError(f"{root!r} is not a folder (expected <folder>/<class>/<image files>)")
    stray = sorted(p.name for p in rootp.iterdir()
                   if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith("."))
    if stray:
        more = f" and {len(stray) - 3} more" if len(stray) > 3 else ""
        raise ValueError(f"{root}: {len(stray)} image file(s) directly in the folder ({', '.join(stray[:3])}{more}) "
                         "belong to no class; move them into <folder>/<class>/")
    out = []
    for cls in sorted(p for p in rootp.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for f in sorted(cls.iterdir()):
            if (f.is_file() or (f.is_symlink() and not f.exists())) and not f.name.startswith("."):
                out.append((str(f), cls.name))
    return out


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
                  temps: Callable[[Path], Iterable[Path]] | None = None) -> Iterator[Path]:
    """Claim ``out`` for a run producing ``kind`` output with ``config`` (JSON-able); yields the folder.

    1. Locks ``<out>/.lock`` for the whole ``with`` block (:class:`OutputInUse` if another run holds it).
    2. Removes the temporaries ``temps(out)`` lists whose process is dead.
    3. Compares ``config`` with the stamp's (``stamp`` holds the config itself, or under ``config_key``):
       no stamp → a new output (files already there are left alone); same → resume; different →
       :class:`OutputConflict` naming the differing keys, unless ``overwrite``: then the files and owned
       folders ``owned(out)`` returns (what Vantage's records list) are deleted — never anything else.
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
