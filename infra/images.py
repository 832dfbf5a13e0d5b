"""Images in and out: the PNG encoder every stimulus and rendered frame goes through, PIL's encoder for sheets,
and the one loader of user images (16/32-bit scaled, float clipped, bombs and broken files refused by name).

* **PNG**: :func:`png_bytes` (a minimal fast deterministic encoder, used by the 2D generators and, through
  :func:`save_frame_png`, for rendered frames) and :func:`save_png` (PIL's encoder with adaptive row filters,
  for contact sheets and galleries).
* **Images in**: :func:`read_image` / :func:`read_image_array` — the one loader for user images (distortion and
  grating ``source=`` folders, evaluation): 16-bit and 32-bit integer images are scaled by their range, float
  images clipped to [0, 1] (PIL's ``convert`` would saturate them to white), decompression bombs and undecodable
  files raise :class:`UnreadableImage` with the reason; :func:`read_image_small` (thumbnails for the shortcut
  audit, by the same rules; :func:`small_uint8` the same of a frame in memory); :func:`class_folder_images`
  lists ``<root>/<class>/*``.
"""
from __future__ import annotations

import functools
import io
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from .files import atomic_write_bytes


def to_uint8(a) -> np.ndarray:
    """Float intensities → 8-bit: clamp to [0, 1], then ⌊255·v + 0.5⌋ — the one rounding rule of every image
    Vantage writes (rendered frames, 2D stimuli, sheets, thumbnails)."""
    return (np.clip(a, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


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
    return to_uint8(a)


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
