"""PlayCanvas / SuperSplat compressed ``.ply`` (format ``compressed-ply``): read and write, SH 0-3.

Source: PlayCanvas's public readers and writers (github.com/playcanvas/splat-transform,
``src/lib/readers/decompress-ply.ts`` and ``src/lib/writers/compressed-chunk.ts``; the same layout is
written by SuperSplat and read by the PlayCanvas engine). Read for the layout; the code here is our own.

Layout (binary little-endian PLY, 16 bytes per Gaussian plus 72 per chunk):

* ``element chunk C`` with float ``min_x min_y min_z max_x max_y max_z min_scale_x .. max_scale_z`` and
  optionally ``min_r min_g min_b max_r max_g max_b``: bounds of each run of 256 consecutive Gaussians
  (``C = ceil(N / 256)``).
* ``element vertex N`` with uint ``packed_position packed_rotation packed_scale packed_color``:

  - position: x 11 bits (31..21), y 10 bits (20..11), z 11 bits (10..0), unorm between the chunk's bounds;
  - scale: log-scales, the same 11/10/11 layout between ``min_scale_*`` and ``max_scale_*`` (the writer
    clamps the bounds to [−20, 20]);
  - rotation: "smallest three": bits 31..30 the index (in ``rot_0..3`` = wxyz order) of the largest
    component, made positive; the other three in order, 10 bits each, unorm over [−1/√2, 1/√2] (our writer
    breaks near-ties by reconstruction error: :func:`~scenes.formats.quantize.smallest_three`);
  - colour: 8 bits each of r, g, b (bits 31..8) and opacity (7..0). Colour is the DC colour
    ``0.5 + C0·f_dc``, unorm between the chunk's ``min_r..max_r`` (or over [0, 1] when the chunk has no
    colour bounds); opacity is ``sigmoid(logit)`` over [0, 1].
* optional ``element sh N`` with uchar ``f_rest_0..`` (9, 24 or 45: degree 1-3, channel-major as in the
  INRIA ``.ply``): byte ``b`` decodes to ``(b/256 + 0.5/256 − 0.5)·8`` (``b`` = 0 → −4, 255 → +4).

Decode bounds (what ``tests/test_formats.py`` checks; ``R`` is the chunk's range of that quantity):
position and log-scale error ≤ R·0.5/2047 (x, z) and R·0.5/1023 (y); colour ≤ R·0.5/255 (colour units;
÷ C0 for ``f_dc``); opacity ≤ 0.5/255 after the sigmoid; each stored quaternion component of the unit,
sign-fixed quaternion ≤ √2·0.5/1023; SH coefficients ≤ 4/256 inside [−4, 4] (clamped outside).
An opacity byte of 0 or 255 decodes with alpha clamped to [1e-6, 1 − 1e-6] (finite logits).

Frame: the file's own (PLY files from these tools keep the trainer's frame, usually COLMAP's with up
≈ −y). Recognised by its header (a ``chunk`` element), whatever the suffix.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from infra.files import atomic_write_bytes
from ..gaussians import GaussianScene, SceneError
from ..sh import C0
from .inria import ply_header_text
from .ply import PlyHeader, numbered, read_elements, read_header
from .quantize import (SMALLEST_THREE_SLOTS, alpha_to_logit, morton_order, sigmoid, smallest_three, unorm_pack,
                       unorm_unpack)
from .registry import SceneFormat, register_format

NAME = "compressed-ply"
CHUNK = 256
_CHUNK_BOUNDS = ["min_x", "min_y", "min_z", "max_x", "max_y", "max_z",
                 "min_scale_x", "min_scale_y", "min_scale_z", "max_scale_x", "max_scale_y", "max_scale_z"]
_CHUNK_COLOUR = ["min_r", "min_g", "min_b", "max_r", "max_g", "max_b"]
_PACKED = ["packed_position", "packed_rotation", "packed_scale", "packed_color"]
_SQRT1_2 = math.sqrt(0.5)


def _check_header(path: str, header: PlyHeader) -> None:
    names = [e.name for e in header.elements]
    if header.format != "binary_little_endian":
        raise SceneError(f"{path}: compressed PLY must be binary_little_endian, header says {header.format}")
    if sorted(names) not in (["chunk", "vertex"], ["chunk", "sh", "vertex"]):
        raise SceneError(f"{path}: a compressed PLY has elements chunk, vertex and optionally sh; found {names}")
    chunk, vertex = header.element("chunk"), header.element("vertex")
    for elem, need in ((chunk, _CHUNK_BOUNDS), (vertex, _PACKED)):
        missing = [p for p in need if p not in elem.names]
        if missing:
            raise SceneError(f"{path}: {elem.name} properties {missing} missing; found: {', '.join(elem.names)}. "
                             f"A compressed PLY's {elem.name} element needs {' '.join(need)}")
    colour = [p for p in _CHUNK_COLOUR if p in chunk.names]
    if colour and len(colour) != 6:
        raise SceneError(f"{path}: chunk colour bounds incomplete: found {colour}, need all of {' '.join(_CHUNK_COLOUR)}")
    wrong = [n for n, t in vertex.props if n in _PACKED and t != "u4"]
    if wrong:
        raise SceneError(f"{path}: vertex properties {wrong} must be 'uint' (32-bit packed words)")
    want = math.ceil(vertex.count / CHUNK)
    if chunk.count != want:
        raise SceneError(f"{path}: chunk count does not match: {chunk.count} chunks for {vertex.count} vertices "
                         f"(one chunk per {CHUNK} vertices needs {want}); the file is corrupt or truncated")
    sh = header.element("sh")
    if sh is not None:
        rest = numbered(sh.names, "f_rest_")
        if len(rest) not in (9, 24, 45) or len(rest) != len(sh.names):
            raise SceneError(f"{path}: element sh must hold f_rest_0..8, ..23 or ..44 (SH degree 1-3); found "
                             f"{', '.join(sh.names)}")
        if sh.count != vertex.count:
            raise SceneError(f"{path}: element sh has {sh.count} rows, vertex has {vertex.count}; they must match")


def _unpack_rotation(words: np.ndarray) -> np.ndarray:
    """Smallest-three words → wxyz quaternions [N, 4] (float64, unit length, largest component ≥ 0)."""
    largest = (words >> np.uint32(30)).astype(np.int64)
    rest = np.stack([(unorm_unpack(words, s, 10) - 0.5) / _SQRT1_2 for s in (20, 10, 0)], 1)
    m = np.sqrt(np.maximum(0.0, 1.0 - (rest**2).sum(1)))
    q = np.empty((len(words), 4))
    # the three stored components fill the slots other than `largest`, in order
    slots = SMALLEST_THREE_SLOTS[largest]
    rows = np.arange(len(words))[:, None]
    q[rows, slots] = rest
    q[np.arange(len(words)), largest] = m
    return q


def _pack_rotation(quats: np.ndarray) -> np.ndarray:
    """wxyz quaternions [N, 4] → smallest-three words (:func:`~scenes.formats.quantize.smallest_three`)."""

    def roundtrip(v: np.ndarray) -> np.ndarray:
        return (unorm_pack(v * _SQRT1_2 + 0.5, 10) / 1023.0 - 0.5) / _SQRT1_2

    dropped, stored = smallest_three(quats, roundtrip)
    packed = [unorm_pack(stored[:, i] * _SQRT1_2 + 0.5, 10) for i in range(3)]
    return _fields([dropped.astype(np.uint32), *packed], [30, 20, 10, 0])


def _fields(values: list[np.ndarray], shifts: list[int]) -> np.ndarray:
    """One uint32 word per row from bit fields: ``values[i] << shifts[i]``, or-ed together."""
    word = np.zeros(len(values[0]), np.uint32)
    for v, shift in zip(values, shifts):
        word |= np.asarray(v, np.uint32) << np.uint32(shift)
    return word


def _lerp(lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> np.ndarray:
    return lo.astype(np.float64) * (1.0 - t) + hi.astype(np.float64) * t


def decode_packed(chunk: np.ndarray, vertex: np.ndarray, sh: np.ndarray | None, source: str,
                  metadata: dict | None = None) -> GaussianScene:
    """The scene held by a compressed PLY's element arrays (structured, as :func:`read_elements` returns)."""
    n = len(vertex)
    ci = np.arange(n) // CHUNK
    c = {k: chunk[k][ci] for k in chunk.dtype.names}
    pos, scl = vertex["packed_position"], vertex["packed_scale"]
    t_pos = [unorm_unpack(pos, 21, 11), unorm_unpack(pos, 11, 10), unorm_unpack(pos, 0, 11)]
    t_scl = [unorm_unpack(scl, 21, 11), unorm_unpack(scl, 11, 10), unorm_unpack(scl, 0, 11)]
    means = np.stack([_lerp(c[f"min_{a}"], c[f"max_{a}"], t) for a, t in zip("xyz", t_pos)], 1)
    log_scales = np.stack([_lerp(c[f"min_scale_{a}"], c[f"max_scale_{a}"], t) for a, t in zip("xyz", t_scl)], 1)
    col = vertex["packed_color"]
    t_col = [unorm_unpack(col, 24, 8), unorm_unpack(col, 16, 8), unorm_unpack(col, 8, 8)]
    if "min_r" in c:
        rgb = np.stack([_lerp(c[f"min_{a}"], c[f"max_{a}"], t) for a, t in zip("rgb", t_col)], 1)
    else:
        rgb = np.stack(t_col, 1)
    dc = (rgb - 0.5) / C0
    opacity = alpha_to_logit(unorm_unpack(col, 0, 8))
    sh_all = dc[:, None, :]
    if sh is not None:
        names = numbered(list(sh.dtype.names), "f_rest_")
        b = np.stack([sh[k] for k in names], 1).astype(np.float64)
        v = np.where(b == 0, 0.0, np.where(b == 255, 1.0, (b + 0.5) / 256.0))
        rest = ((v - 0.5) * 8.0).reshape(n, 3, len(names) // 3).transpose(0, 2, 1)
        sh_all = np.concatenate([sh_all, rest], 1)
    return GaussianScene(means=means, quats=_unpack_rotation(vertex["packed_rotation"]), log_scales=log_scales,
                         opacity_logits=opacity, sh=sh_all, source=source, metadata=dict(metadata or {}))


def read_compressed_ply(path: str | os.PathLike) -> GaussianScene:
    """Read a PlayCanvas compressed ``.ply`` (see the module docstring) into a :class:`GaussianScene`."""
    path = str(path)
    header = read_header(path)
    _check_header(path, header)
    els = read_elements(path, header)
    sh = els.get("sh")
    meta = {"format": NAME, "sh_degree": {None: 0, 9: 1, 24: 2, 45: 3}[None if sh is None else len(sh.dtype.names)],
            "chunk_colour_bounds": "min_r" in els["chunk"].dtype.names}
    generator = [c for c in header.comments if c]
    if generator:
        meta["generator"] = generator[0]
    return decode_packed(els["chunk"], els["vertex"], sh, path, meta)


def encode_packed(scene: GaussianScene) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``scene`` (in its order, chunks of 256 consecutive Gaussians) → ``(chunk, vertex, sh)`` structured
    arrays of the compressed PLY (``sh`` None for degree 0). The last chunk is padded with copies of the last
    Gaussian for its bounds (as PlayCanvas's writer does), which leaves the bounds unchanged."""
    n = len(scene)
    if n == 0:
        raise SceneError(f"{scene.source}: no Gaussians to write (a compressed PLY needs at least one)")
    chunks = math.ceil(n / CHUNK)
    pad = np.concatenate([np.arange(n), np.full(chunks * CHUNK - n, n - 1)])

    def per_chunk(x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float64)[pad].reshape(chunks, CHUNK, -1)

    def bounds(x: np.ndarray, clamp: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = per_chunk(x).min(1).astype(np.float32), per_chunk(x).max(1).astype(np.float32)
        if clamp is not None:
            lo, hi = np.clip(lo, -clamp, clamp), np.clip(hi, -clamp, clamp)
        return lo, hi  # [chunks, 3] float32, as stored

    def normalise(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        ci = np.arange(n) // CHUNK
        lo, hi = lo[ci].astype(np.float64), hi[ci].astype(np.float64)
        x = np.asarray(x, np.float64)
        span = hi - lo
        t = np.where(span < 1e-5, 0.0, (x - lo) / np.where(span < 1e-5, 1.0, span))
        return np.where(x <= lo, 0.0, np.where(x >= hi, 1.0, t))

    def pack111011(t: np.ndarray) -> np.ndarray:
        return _fields([unorm_pack(t[:, 0], 11), unorm_pack(t[:, 1], 10), unorm_pack(t[:, 2], 11)], [21, 11, 0])

    rgb = scene.sh[:, 0, :].astype(np.float64) * C0 + 0.5
    p_lo, p_hi = bounds(scene.means)
    s_lo, s_hi = bounds(scene.log_scales, clamp=20.0)
    c_lo, c_hi = bounds(rgb)
    chunk = np.zeros(chunks, [(k, "<f4") for k in _CHUNK_BOUNDS + _CHUNK_COLOUR])
    for i, a in enumerate("xyz"):
        chunk[f"min_{a}"], chunk[f"max_{a}"] = p_lo[:, i], p_hi[:, i]
        chunk[f"min_scale_{a}"], chunk[f"max_scale_{a}"] = s_lo[:, i], s_hi[:, i]
    for i, a in enumerate("rgb"):
        chunk[f"min_{a}"], chunk[f"max_{a}"] = c_lo[:, i], c_hi[:, i]
    vertex = np.zeros(n, [(k, "<u4") for k in _PACKED])
    vertex["packed_position"] = pack111011(normalise(scene.means, p_lo, p_hi))
    vertex["packed_scale"] = pack111011(normalise(scene.log_scales, s_lo, s_hi))
    vertex["packed_rotation"] = _pack_rotation(scene.quats)
    t_rgb = normalise(rgb, c_lo, c_hi)
    bytes_ = [unorm_pack(t_rgb[:, i], 8) for i in range(3)] + [unorm_pack(sigmoid(scene.opacity_logits), 8)]
    vertex["packed_color"] = _fields(bytes_, [24, 16, 8, 0])
    sh = None
    k1 = scene.sh.shape[1] - 1
    if k1:
        rest = scene.sh[:, 1:, :].astype(np.float64).transpose(0, 2, 1).reshape(n, 3 * k1)  # channel-major
        b = np.clip(np.trunc((rest / 8.0 + 0.5) * 256.0), 0, 255).astype(np.uint8)
        sh = np.zeros(n, [(f"f_rest_{i}", "u1") for i in range(3 * k1)])
        for i in range(3 * k1):
            sh[f"f_rest_{i}"] = b[:, i]
    return chunk, vertex, sh


def write_compressed_ply(scene: GaussianScene, path: str | os.PathLike, *, sort: bool = True) -> Path:
    """Write ``scene`` as a compressed ``.ply`` (atomically). ``sort=True`` stores the Gaussians in Morton
    order (:func:`~scenes.formats.quantize.morton_order`, as SuperSplat does: tight chunk bounds, so a smaller
    quantisation step); ``sort=False`` keeps the scene's order (the round-trip tests compare row by row)."""
    path = Path(path)
    if sort:
        scene = scene.subset(morton_order(scene.means))
    chunk, vertex, sh = encode_packed(scene)
    lines = ["ply", "format binary_little_endian 1.0", "comment written by vantage", f"element chunk {len(chunk)}"]
    lines += [f"property float {k}" for k in chunk.dtype.names]
    lines += [f"element vertex {len(vertex)}"] + [f"property uint {k}" for k in vertex.dtype.names]
    if sh is not None:
        lines += [f"element sh {len(sh)}"] + [f"property uchar {k}" for k in sh.dtype.names]
    body = [("\n".join(lines) + "\nend_header\n").encode("ascii"), chunk.tobytes(), vertex.tobytes()]
    if sh is not None:
        body.append(sh.tobytes())
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, b"".join(body))
    return path


def _sniff(path: Path, head: bytes) -> bool:
    text = ply_header_text(head)
    return text is not None and b"element chunk " in text


register_format(SceneFormat(
    name=NAME, suffixes=(".compressed.ply",),
    description="PlayCanvas/SuperSplat compressed .ply (256-Gaussian chunks, 16 bytes per Gaussian, SH 0-3)",
    sniff=_sniff, read=read_compressed_ply, write=write_compressed_ply,
))
