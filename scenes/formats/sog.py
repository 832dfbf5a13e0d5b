"""PlayCanvas SOG v2 (format ``sog``): a ``.sog`` zip, or an unzipped folder, of ``meta.json`` + WebP images.

Source: PlayCanvas's public reader and writer (github.com/playcanvas/splat-transform,
``src/lib/readers/read-sog.ts``, ``src/lib/writers/write-sog.ts``). Read for the layout; the code here is
our own. Images are lossless WebP (decoded by Pillow); texel ``i`` (row-major, ``W·H ≥ count``) holds
Gaussian ``i``; every image is RGBA.

``meta.json`` (``version: 2``, ``count``) and what each image holds:

* ``means``: ``means_l.webp`` / ``means_u.webp`` hold the low / high byte of a 16-bit unorm per axis (RGB);
  the value is ``l = lerp(mins[a], maxs[a], v / 65535)`` in the log-mapped space ``l = sign(x)·ln(|x| + 1)``,
  so ``x = sign(l)·(e^|l| − 1)``. Error ≤ half a step in ``l``: ``(maxs − mins)·0.5 / 65535``.
* ``quats``: ``quats.webp``: alpha = 252 + index of the largest component of the unit quaternion in
  ``rot_0..3`` = wxyz order (made positive); RGB = the other three in order, each ``b / 255·2 − 1`` times
  1/√2. Error per stored component ≤ 1 / (255·√2).
* ``scales``: ``scales.webp`` RGB = indices into ``codebook`` (256 log-scales shared by the three axes).
* ``sh0``: ``sh0.webp`` RGB = indices into ``codebook`` (256 DC coefficients ``f_dc`` shared by the three
  channels), alpha = ``round(sigmoid(opacity)·255)``.
* ``shN`` (optional; ``bands`` 1-3): ``shN_labels.webp`` R + 256·G = a palette entry per Gaussian;
  ``shN_centroids.webp`` (64·(K−1) texels wide) holds, for palette entry ``p``, its ``K−1`` coefficients at
  row ``p // 64``, columns ``(p % 64)·(K−1) + j``, RGB = indices into ``codebook`` (256 values).

Decoding is exact to these codes; a codebook-coded value decodes to the entry the file stores (the writer
below picks the nearest entry). An opacity byte of 0 or 255 decodes with alpha clamped to [1e-6, 1 − 1e-6].

Writer (ours, documented choices): Morton order by default (as splat-transform); codes rounded to nearest
(splat-transform truncates some; both decode the same way); quaternion near-ties broken by reconstruction
error (:func:`~scenes.formats.quantize.smallest_three`); codebooks by 1-D k-means seeded at quantiles
(:func:`~scenes.formats.quantize.codebook_1d`: the exact values when a quantity has ≤ 256 distinct values,
so re-encoding a decoded file reproduces its codes); the SH palette by k-means on the coefficient rows
(scipy ``kmeans2``, seeded, palette size as splat-transform: ``min(64, 2^⌊log2(N/1024)⌋)·1024``, or the
distinct rows when there are no more than that — exact). The SH palette k-means is only for modest scenes:
beyond ~2e10 multiply-adds per pass (e.g. 100k Gaussians of degree 1) the writer stops with an error naming
the alternatives; degree 0 (the common case) writes a 1M scene in well under a minute.

Frame: the file's own (SOG keeps the PLY frame of the scene it was made from; usually COLMAP's, up ≈ −y).
Recognised by content: a zip, folder or ``meta.json`` with a ``meta.json`` naming these images.
"""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from infra.files import atomic_write_bytes, atomic_write_text, temp_name
from ..gaussians import GaussianScene, SceneError
from .quantize import (ALPHA_LOGITS, SMALLEST_THREE_SLOTS, byte_table, codebook_1d, codebook_index, morton_order,
                       sigmoid, smallest_three)
from .registry import SceneFormat, register_format

NAME = "sog"
_SQRT2 = math.sqrt(2.0)
_SH_COEFFS = {1: 3, 2: 8, 3: 15}
_QUAT = byte_table(lambda b: (b / 255.0 * 2.0 - 1.0) / _SQRT2)  # stored quaternion byte → component


class _Source:
    """The members of a SOG: a zip, or a folder (given as the folder or its meta.json)."""

    def __init__(self, path: Path):
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        self.prefix = ""
        if path.is_dir():
            self.folder = path
        elif path.name.lower() == "meta.json":
            self.folder = path.parent
        else:
            self.folder = None
            try:
                self.zip = zipfile.ZipFile(path)
            except (OSError, zipfile.BadZipFile) as e:
                raise SceneError(f"{path}: not a SOG file: not a zip archive ({e}); a .sog is a zip of meta.json "
                                 "and WebP images") from e
            names = self.zip.namelist()
            metas = [n for n in names if n == "meta.json" or n.endswith("/meta.json")]
            if not metas:
                shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
                raise SceneError(f"{path}: not a SOG file: the zip holds no meta.json (members: {shown or 'none'})")
            self.prefix = min(metas, key=len)[: -len("meta.json")]

    def read(self, name: str, what: str) -> bytes:
        if self.zip is not None:
            try:
                return self.zip.read(self.prefix + name)
            except KeyError:
                raise SceneError(f"{self.path}: meta.json names {what} file {name!r} but the zip has no member "
                                 f"{self.prefix + name!r}") from None
        f = self.folder / name
        if not f.is_file():
            raise SceneError(f"{self.path}: meta.json names {what} file {name!r} but {f} does not exist")
        return f.read_bytes()

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()


def _image(src: _Source, name: str, what: str, count: int, width: int | None = None) -> np.ndarray:
    """Texels of image ``name`` as uint8 [W·H, 4] (RGBA), checked to hold ``count`` texels."""
    from PIL import Image, UnidentifiedImageError

    data = src.read(name, what)
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if im.mode != "RGBA":
                im = im.convert("RGBA")
            arr = np.asarray(im)
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise SceneError(f"{src.path}: {name} ({what}) cannot be decoded as an image ({e})") from e
    h, w = arr.shape[:2]
    if width is not None and w != width:
        raise SceneError(f"{src.path}: {name} ({what}) is {w} texels wide; expected {width}")
    if w * h < count:
        raise SceneError(f"{src.path}: wrong texture size: {name} ({what}) is {w}x{h} = {w * h} texels, fewer than "
                         f"the {count} {'palette entries' if width else 'Gaussians'} meta.json declares")
    return arr.reshape(-1, 4)[:count]


def _meta(src: _Source) -> dict:
    raw = src.read("meta.json", "the")
    try:
        meta = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SceneError(f"{src.path}: meta.json is not valid JSON ({e})") from e
    if not isinstance(meta, dict):
        raise SceneError(f"{src.path}: meta.json must hold a JSON object, found {type(meta).__name__}")
    version = meta.get("version")
    if version is None:
        raise SceneError(f"{src.path}: unsupported SOG version: meta.json has no 'version' (SOG v1, the legacy "
                         "layout); only version 2 is read — re-save it with a current splat-transform or SuperSplat")
    if version != 2:
        raise SceneError(f"{src.path}: unsupported SOG version {version!r}; this reader knows version 2")
    missing = [k for k in ("count", "means", "scales", "quats", "sh0") if k not in meta]
    if missing:
        raise SceneError(f"{src.path}: meta.json lacks {missing}; found: {', '.join(meta)}")
    count = meta["count"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise SceneError(f"{src.path}: meta.json count={count!r} must be a whole number >= 0")
    for key, need in (("means", ("mins", "maxs", "files")), ("scales", ("codebook", "files")), ("quats", ("files",)),
                      ("sh0", ("codebook", "files")), ("shN", ("count", "bands", "codebook", "files"))):
        part = meta.get(key)
        if part is None and key == "shN":
            continue
        if not isinstance(part, dict) or any(k not in part for k in need):
            raise SceneError(f"{src.path}: meta.json '{key}' must be an object with {', '.join(need)}; found {part!r:.80}")
        files = part["files"]
        n_files = {"means": 2, "shN": 2}.get(key, 1)
        if not isinstance(files, list) or len(files) < n_files or not all(isinstance(f, str) for f in files):
            raise SceneError(f"{src.path}: meta.json '{key}.files' must list {n_files} image file name(s); found {files!r}")
    for key in ("mins", "maxs"):
        v = meta["means"][key]
        if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, (int, float)) and math.isfinite(x) for x in v)):
            raise SceneError(f"{src.path}: meta.json 'means.{key}' must be 3 finite numbers; found {v!r}")
    return meta


def _codebook(src: _Source, meta: dict, key: str) -> np.ndarray:
    book = meta[key]["codebook"]
    try:
        arr = np.asarray(book, np.float64)
    except (TypeError, ValueError):
        arr = np.zeros(0)
    if arr.ndim != 1 or len(arr) == 0 or not np.isfinite(arr).all():
        raise SceneError(f"{src.path}: meta.json '{key}.codebook' must be a list of finite numbers")
    return arr.astype(np.float32)


def _lookup(src: _Source, book: np.ndarray, idx: np.ndarray, what: str) -> np.ndarray:
    if idx.size and int(idx.max()) >= len(book):
        raise SceneError(f"{src.path}: {what} index {int(idx.max())} is outside its codebook of {len(book)} entries")
    return book[idx]


def read_sog(path: str | os.PathLike) -> GaussianScene:
    """Read a SOG v2 scene (``.sog`` zip, unzipped folder, or its ``meta.json``) into a :class:`GaussianScene`."""
    path = Path(path)
    if not path.exists():
        raise SceneError(f"{path}: no such file")
    src = _Source(path)
    try:
        meta = _meta(src)
        n = meta["count"]
        files = {k: meta[k]["files"] for k in ("means", "scales", "quats", "sh0")}
        lo = _image(src, files["means"][0], "means (low bytes)", n)[:, :3].astype(np.uint16)
        hi = _image(src, files["means"][1], "means (high bytes)", n)[:, :3].astype(np.uint16)
        v = (lo | (hi << 8)) / 65535.0
        mins, maxs = np.asarray(meta["means"]["mins"], np.float64), np.asarray(meta["means"]["maxs"], np.float64)
        span = np.where(maxs - mins != 0, maxs - mins, 1.0)  # as splat-transform: a zero range decodes to mins
        logv = mins + span * v
        means = np.sign(logv) * np.expm1(np.abs(logv))

        q = _image(src, files["quats"][0], "quaternions", n)
        tag = q[:, 3].astype(np.int64) - 252
        if n and (tag.min() < 0 or tag.max() > 3):
            bad = np.flatnonzero((tag < 0) | (tag > 3))
            raise SceneError(f"{path}: {files['quats'][0]}: {len(bad)} of {n} texels have alpha outside 252-255 "
                             f"(the largest-component tag; first: Gaussian {bad[0]}, alpha {q[bad[0], 3]}); the image "
                             "is corrupt or not lossless")
        rest = _QUAT[q[:, :3]]
        quats = np.empty((n, 4), np.float32)
        rows = np.arange(n)
        quats[rows[:, None], SMALLEST_THREE_SLOTS[tag]] = rest
        quats[rows, tag] = np.sqrt(np.maximum(0.0, 1.0 - (rest**2).sum(1)))

        s = _image(src, files["scales"][0], "scales", n)
        log_scales = _lookup(src, _codebook(src, meta, "scales"), s[:, :3], "scale")
        c = _image(src, files["sh0"][0], "colours and opacities", n)
        dc = _lookup(src, _codebook(src, meta, "sh0"), c[:, :3], "colour")
        opacity = ALPHA_LOGITS[c[:, 3]]
        sh = dc[:, None, :]
        degree = 0
        if meta.get("shN") is not None and meta["shN"].get("bands", 0):
            sh, degree = _read_shn(src, meta, n, sh)
    finally:
        src.close()
    info = {"format": NAME, "format_version": 2, "sh_degree": degree}
    generator = (meta.get("asset") or {}).get("generator") if isinstance(meta.get("asset"), dict) else None
    if generator:
        info["generator"] = str(generator)
    if "model" in meta:
        info["model"] = str(meta["model"])
        info["antialiased"] = meta["model"] == "antialiased"
    return GaussianScene(means=means, quats=quats, log_scales=log_scales, opacity_logits=opacity, sh=sh,
                         source=str(path), metadata=info)


def _read_shn(src: _Source, meta: dict, n: int, sh: np.ndarray) -> tuple[np.ndarray, int]:
    shn = meta["shN"]
    bands = shn["bands"]
    if bands not in _SH_COEFFS:
        raise SceneError(f"{src.path}: meta.json shN.bands={bands!r}; must be 1, 2 or 3")
    k1 = _SH_COEFFS[bands]
    palette = shn["count"]
    if not isinstance(palette, int) or palette < 1 or palette > 65536:
        raise SceneError(f"{src.path}: meta.json shN.count={palette!r}; must be a whole number in [1, 65536]")
    book = _codebook(src, meta, "shN")
    labels_img = _image(src, shn["files"][1], "SH palette labels", n).astype(np.int64)
    labels = labels_img[:, 0] | (labels_img[:, 1] << 8)
    rows = math.ceil(palette / 64)
    cent = _image(src, shn["files"][0], "SH palette", 64 * k1 * rows, width=64 * k1)
    if labels.size and labels.max() >= palette:
        raise SceneError(f"{src.path}: SH label {int(labels.max())} is outside the palette of {palette} entries")
    # palette entry p, coefficient j sits at texel (p // 64)·64·k1 + (p % 64)·k1 + j = p·k1 + j
    coeffs = _lookup(src, book, cent[:, :3].reshape(-1, k1, 3)[:palette], "SH palette")  # [palette, k1, 3]
    return np.concatenate([sh, coeffs[labels]], axis=1), bands


# ---------------------------------------------------------------------------------------------- writing
def _webp(texels: np.ndarray, width: int, height: int) -> bytes:
    """uint8 texels [≤ W·H, 4] → lossless WebP bytes (``exact``: RGB kept where alpha is 0)."""
    from PIL import Image

    img = np.zeros((width * height, 4), np.uint8)
    img[: len(texels)] = texels
    buf = io.BytesIO()
    Image.fromarray(img.reshape(height, width, 4), "RGBA").save(buf, "WEBP", lossless=True, exact=True, quality=100,
                                                                 method=2)
    return buf.getvalue()


_KMEANS_BUDGET = 2e10  # multiply-adds of one k-means pass (rows × palette × dims) we accept: about a minute


def _shn_palette(rows: np.ndarray, size: int, seed: int, source: str = "<scene>") -> tuple[np.ndarray, np.ndarray]:
    """Palette [P, D] and labels [N] for coefficient rows [N, D]: exact when ≤ ``size`` distinct rows."""
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    if len(uniq) <= size:
        return uniq, inverse.reshape(-1)
    work = float(rows.shape[0]) * size * rows.shape[1]
    if work > _KMEANS_BUDGET:
        raise SceneError(f"{source}: the SOG writer's SH palette would need k-means over {rows.shape[0]} rows of "
                         f"{rows.shape[1]} coefficients into {size} entries ({work:.1e} multiply-adds per pass, hours "
                         "here); write scene.with_sh_degree(0) as SOG, or keep the SH in .ply / .compressed.ply / .spz")
    from scipy.cluster.vq import kmeans2, vq

    centroids, _ = kmeans2(rows.astype(np.float64), size, iter=10, minit="points", seed=seed)
    labels, _ = vq(rows.astype(np.float64), centroids)
    return centroids, labels


def encode_sog(scene: GaussianScene, *, sort: bool = True, seed: int = 0,
               means_range: tuple[list[float], list[float]] | None = None) -> dict[str, bytes]:
    """``scene`` → the SOG members ``{file name: bytes}`` (``meta.json`` + WebP images); see the module
    docstring for the choices. ``seed`` seeds the SH palette's k-means (degree > 0 only). ``means_range`` =
    ``(mins, maxs)`` in the log-mapped space replaces the scene's own range (to re-encode a file with its
    bounds: a writer that truncates codes may never reach 65535, so the decoded positions span less)."""
    n = len(scene)
    if n == 0:
        raise SceneError(f"{scene.source}: no Gaussians to write (a SOG needs at least one)")
    if sort:
        scene = scene.subset(morton_order(scene.means))
    width = math.ceil(math.sqrt(n) / 4) * 4
    height = math.ceil(n / width / 4) * 4
    files: dict[str, bytes] = {}

    x = scene.means.astype(np.float64)
    logx = np.sign(x) * np.log1p(np.abs(x))
    mins, maxs = (logx.min(0), logx.max(0)) if means_range is None else (np.asarray(r, np.float64) for r in means_range)
    span = np.where(maxs > mins, maxs - mins, 1.0)
    v = np.clip(np.floor((logx - mins) / span * 65535.0 + 0.5), 0, 65535).astype(np.uint32)
    opaque = np.full((n, 1), 255, np.uint8)
    files["means_l.webp"] = _webp(np.concatenate([(v & 255).astype(np.uint8), opaque], 1), width, height)
    files["means_u.webp"] = _webp(np.concatenate([(v >> 8).astype(np.uint8), opaque], 1), width, height)

    def quat_bytes(v: np.ndarray) -> np.ndarray:
        return np.clip(np.floor((v * _SQRT2 * 0.5 + 0.5) * 255.0 + 0.5), 0, 255)

    largest, rest = smallest_three(scene.quats, lambda v: (quat_bytes(v) / 255.0 * 2.0 - 1.0) / _SQRT2)
    qb = quat_bytes(rest).astype(np.uint8)
    files["quats.webp"] = _webp(np.concatenate([qb, (252 + largest).astype(np.uint8)[:, None]], 1), width, height)

    scale_book = codebook_1d(scene.log_scales)
    files["scales.webp"] = _webp(np.concatenate([codebook_index(scene.log_scales, scale_book), opaque], 1), width, height)
    dc = scene.sh[:, 0, :]
    colour_book = codebook_1d(dc)
    alpha = np.clip(np.floor(sigmoid(scene.opacity_logits) * 255.0 + 0.5), 0, 255).astype(np.uint8)[:, None]
    files["sh0.webp"] = _webp(np.concatenate([codebook_index(dc, colour_book), alpha], 1), width, height)

    meta = {"version": 2, "asset": {"generator": "vantage"}, "count": n,
            "means": {"mins": mins.tolist(), "maxs": maxs.tolist(), "files": ["means_l.webp", "means_u.webp"]},
            "scales": {"codebook": scale_book.tolist(), "files": ["scales.webp"]},
            "quats": {"files": ["quats.webp"]},
            "sh0": {"codebook": colour_book.tolist(), "files": ["sh0.webp"]}}
    degree = scene.sh_degree
    if degree:
        k1 = _SH_COEFFS[degree]
        coeffs = scene.sh[:, 1:, :].reshape(n, k1 * 3)
        size = max(1, int(min(64, 2 ** math.floor(math.log2(n / 1024))) * 1024))
        palette, labels = _shn_palette(coeffs, min(size, 65536), seed, scene.source)
        book = codebook_1d(palette)
        idx = codebook_index(palette.reshape(len(palette), k1, 3), book)  # [P, k1, 3]
        prow = math.ceil(len(palette) / 64)
        cent = np.zeros((prow * 64 * k1, 4), np.uint8)
        cent[: len(palette) * k1, :3] = idx.reshape(-1, 3)
        cent[:, 3] = 255
        files["shN_centroids.webp"] = _webp(cent, 64 * k1, prow)
        lab = np.stack([labels & 255, labels >> 8, np.zeros(n, np.int64), np.full(n, 255)], 1).astype(np.uint8)
        files["shN_labels.webp"] = _webp(lab, width, height)
        meta["shN"] = {"count": len(palette), "bands": degree, "codebook": book.tolist(),
                       "files": ["shN_centroids.webp", "shN_labels.webp"]}
    files["meta.json"] = json.dumps(meta).encode("utf-8")
    return files


def write_sog(scene: GaussianScene, path: str | os.PathLike, *, sort: bool = True, seed: int = 0) -> Path:
    """Write ``scene`` as SOG v2: a zip when ``path`` ends in ``.sog``; otherwise an unzipped folder (``path``
    is the folder, which must not exist or be empty, or its ``meta.json``). Atomic: a zip is written to a
    temporary name and renamed; a folder is assembled under a temporary name and renamed into place
    (for a ``meta.json`` path into an existing folder, the images are written first and ``meta.json``
    last, each atomically)."""
    path = Path(path)
    files = encode_sog(scene, sort=sort, seed=seed)
    if path.suffix.lower() == ".sog":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
            for name in [k for k in files if k != "meta.json"] + ["meta.json"]:
                z.writestr(name, files[name])
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, buf.getvalue())
        return path
    if path.name.lower() == "meta.json":
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            if name != "meta.json":
                atomic_write_bytes(path.parent / name, data)
        atomic_write_text(path, files["meta.json"].decode("utf-8"))
        return path
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise SceneError(f"{path}: exists and is not an empty folder; a SOG folder is written to a new or empty "
                         "folder (or name a .sog file for the zipped form)")
    tmp = temp_name(path)
    try:
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        if path.exists():
            path.rmdir()
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _sniff(path: Path, head: bytes) -> bool:
    if path.is_dir():
        return (path / "meta.json").is_file()
    if path.name.lower() == "meta.json":
        return b'"means"' in head or b'"version"' in head
    if not head.startswith(b"PK\x03\x04"):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(n == "meta.json" or n.endswith("/meta.json") for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


register_format(SceneFormat(
    name=NAME, suffixes=(".sog",), file_names=("meta.json",), folder=True,
    description="PlayCanvas SOG v2 (.sog zip or unzipped folder: meta.json + lossless WebP images)",
    sniff=_sniff, read=read_sog, write=write_sog,
))
