"""GaussianSplats3D ``.ksplat`` (format ``ksplat``): read compression levels 0-2, write levels 0-1; SH 0-2.

Source: github.com/mkkellogg/GaussianSplats3D (``src/loaders/SplatBuffer.js``: header, sections, buckets,
``writeSplatDataToSectionBuffer``; ``src/loaders/ply/INRIAV1PlyParser.js``: how PLY values become stored
values). Read for the layout; the code here is our own.

Layout (little-endian): a 4096-byte header — u8 version major (0) and minor (≥ 1), u32 at byte 4 the
section count ``S``, u32 at 16 the Gaussian count, u16 at 20 the compression level, f32 at 24..32 the
scene centre, f32 at 36 / 40 the SH range of level 2 (default ±1.5); then ``S`` 1024-byte section headers —
u32 count, u32 max count, u32 bucket size, u32 bucket count, f32 bucket block size, u16 (at 20) bytes per
bucket (12), u32 (24) position range ``R`` (32767 for levels ≥ 1), u32 (28) section bytes, u32 (32) full
buckets, u32 (36) partially filled buckets, u16 (40) SH degree; then each section's data: the sizes (u32)
of its partially filled buckets, the bucket centres (3 × f32 each; levels ≥ 1), and the Gaussians,
bucket by bucket (full buckets first), each:

* position: level 0: 3 × f32; levels ≥ 1: 3 × u16 ``round((x − centre)·R / (block/2)) + R`` (error ≤ half a
  step of ``block / (2R)``, 7.6e-5 for the default 5-unit blocks);
* scale: **linear** (exp of the log-scale), 3 × f32 (level 0) or float16 (levels ≥ 1: relative error
  ≤ 2⁻¹¹; scales below float16's range, < 2⁻²⁴, are stored as 0 and decode to 2⁻²⁵);
* rotation: the normalised wxyz quaternion, 4 × f32 or float16 (error ≤ 2⁻¹² per component);
* colour: 4 × u8 ``floor(255·(0.5 + C0·f_dc))`` and ``floor(255·sigmoid(opacity))`` (clamped; our writer
  rounds to nearest instead: both decode as ``byte / 255``);
* SH (degree 1-2, max 2): per degree, channel-major (``r1 r2 r3 g1 g2 g3 b1 b2 b3``, then the five degree-2
  coefficients of r, g, b), as f32 (level 0), float16 (1) or u8 over the header's SH range (2).

An opacity byte of 0 or 255 decodes with alpha clamped to [1e-6, 1 − 1e-6] (finite logits).
Frame: the file's own (converted from a PLY, so usually COLMAP's; up ≈ −y). Recognised by the ``.ksplat``
suffix (no magic number) and checked by the reader (version bytes, level, sizes).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from infra.files import atomic_write_bytes
from ..gaussians import GaussianScene, SceneError
from ..sh import C0
from .quantize import alpha_to_logit, sigmoid
from .registry import SceneFormat, register_format

NAME = "ksplat"
HEADER, SECTION = 4096, 1024
_BYTES = {0: (12, 12, 16, 4, 4), 1: (6, 6, 8, 4, 2), 2: (6, 6, 8, 4, 1)}  # centre, scale, rotation, colour, SH
_SH_COUNT = {0: 0, 1: 9, 2: 24}
_TINY_SCALE = 2.0**-25


def _rest_order(degree: int) -> np.ndarray:
    """For each stored SH value (degree-1 block, then degree-2 block, channel-major within each), the index
    into basis-major coefficients ``sh[:, 1:, :]`` flattened as ``k·3 + channel``."""
    order = []
    for first, count in ((0, 3), (3, 5))[:degree]:
        for channel in range(3):
            order += [(first + i) * 3 + channel for i in range(count)]
    return np.array(order, np.int64)


def _dtype(level: int, degree: int) -> np.dtype:
    f = "<f4" if level == 0 else "<u2"
    centre = "<f4" if level == 0 else "<u2"
    sh = {0: "<f4", 1: "<u2", 2: "u1"}[level]
    fields = [("centre", centre, 3), ("scale", f, 3), ("rot", f, 4), ("rgba", "u1", 4)]
    if _SH_COUNT[degree]:
        fields.append(("sh", sh, _SH_COUNT[degree]))
    return np.dtype(fields)


def read_ksplat(path: str | os.PathLike) -> GaussianScene:
    """Read a ``.ksplat`` (see the module docstring) into a :class:`GaussianScene`."""
    path = str(path)
    if not os.path.exists(path):
        raise SceneError(f"{path}: no such file")
    data = Path(path).read_bytes()
    if len(data) < HEADER:
        raise SceneError(f"{path}: truncated or not a .ksplat file: {len(data)} bytes, the header alone is {HEADER}")
    major, minor = data[0], data[1]
    if major != 0 or minor < 1:
        raise SceneError(f"{path}: not a .ksplat file or unsupported version {major}.{minor} (this reader knows 0.1+)")
    u32 = np.frombuffer(data, "<u4", count=HEADER // 4)
    f32 = np.frombuffer(data, "<f4", count=HEADER // 4)
    sections, total = int(u32[1]), int(u32[4])
    level = int(np.frombuffer(data, "<u2", count=11)[10])
    if level not in _BYTES:
        raise SceneError(f"{path}: unknown .ksplat compression level {level} (known: 0, 1, 2)")
    sh_lo, sh_hi = float(f32[9]) or -1.5, float(f32[10]) or 1.5
    if len(data) < HEADER + SECTION * sections:
        raise SceneError(f"{path}: truncated .ksplat: {sections} section headers need {HEADER + SECTION * sections} "
                         f"bytes, the file has {len(data)}")
    parts, base = [], HEADER + SECTION * sections
    degrees = []
    for s in range(sections):
        h = HEADER + SECTION * s
        hu32 = np.frombuffer(data, "<u4", count=SECTION // 4, offset=h)
        hu16 = np.frombuffer(data, "<u2", count=SECTION // 2, offset=h)
        count, cap, bucket_size, buckets = (int(v) for v in hu32[:4])
        block = float(np.frombuffer(data, "<f4", count=5, offset=h)[4])
        bucket_bytes, srange = int(hu16[10]), int(hu32[6]) or (1 if level == 0 else 32767)
        full, partial, degree = int(hu32[8]), int(hu32[9]), int(hu16[20])
        if degree not in _SH_COUNT:
            raise SceneError(f"{path}: section {s} declares SH degree {degree}; .ksplat holds degree 0-2")
        dtype = _dtype(level, degree)
        meta_bytes = 4 * partial
        storage = bucket_bytes * buckets + meta_bytes
        end = base + storage + dtype.itemsize * cap
        if count > cap or end > len(data):
            raise SceneError(f"{path}: truncated .ksplat: section {s} needs bytes up to {end} ({cap} Gaussians of "
                             f"{dtype.itemsize} bytes), the file has {len(data)}")
        rec = np.frombuffer(data, dtype, count=count, offset=base + storage)
        centre = rec["centre"].astype(np.float64)
        if level >= 1:
            sizes = np.concatenate([np.full(full, bucket_size), np.frombuffer(data, "<u4", count=partial, offset=base)])
            if sizes.sum() < count or buckets < len(sizes):
                raise SceneError(f"{path}: section {s}: its buckets hold {int(sizes.sum())} Gaussians, it declares {count}")
            centres = np.frombuffer(data, "<f4", count=3 * buckets, offset=base + meta_bytes).reshape(buckets, 3)
            which = np.repeat(np.arange(len(sizes)), sizes.astype(np.int64))[:count]
            centre = (centre - srange) * (block / 2.0 / srange) + centres[which]
        scale = rec["scale"] if level == 0 else rec["scale"].view(np.float16)
        rot = rec["rot"] if level == 0 else rec["rot"].view(np.float16)
        sh = None
        if degree:
            raw = rec["sh"]
            vals = {0: lambda r: r.astype(np.float64), 1: lambda r: r.view(np.float16).astype(np.float64),
                    2: lambda r: r.astype(np.float64) / 255.0 * (sh_hi - sh_lo) + sh_lo}[level](raw)
            sh = np.zeros((count, 8 * 3))
            sh[:, _rest_order(degree)] = vals
            sh = sh.reshape(count, 8, 3)[:, : (degree + 1) ** 2 - 1]
        parts.append((centre, scale.astype(np.float64), rot.astype(np.float64), rec["rgba"], sh, degree))
        degrees.append(degree)
        base = end
    if sum(len(p[0]) for p in parts) != total:
        raise SceneError(f"{path}: the header declares {total} Gaussians, the sections hold "
                         f"{sum(len(p[0]) for p in parts)}")
    degree = max(degrees, default=0)
    k1 = (degree + 1) ** 2 - 1

    def cat(i: int, width: int) -> np.ndarray:
        arrs = [p[i] for p in parts]
        return np.concatenate(arrs) if arrs else np.zeros((0, width))

    def rest_of(part: tuple) -> np.ndarray:  # a section of lower degree than another gets zero coefficients
        got = part[4] if part[4] is not None else np.zeros((len(part[0]), 0, 3))
        return np.pad(got, ((0, 0), (0, k1 - got.shape[1]), (0, 0)))

    scale = cat(1, 3)
    rgba = cat(3, 4).astype(np.float64) / 255.0
    rest = np.concatenate([rest_of(p) for p in parts]) if parts else np.zeros((0, k1, 3))
    sh = np.concatenate([((rgba[:, :3] - 0.5) / C0)[:, None, :], rest], 1)
    return GaussianScene(
        means=cat(0, 3), quats=cat(2, 4), log_scales=np.log(np.where(scale > 0, scale, _TINY_SCALE)),
        opacity_logits=alpha_to_logit(rgba[:, 3]), sh=sh, source=path,
        metadata={"format": NAME, "format_version": f"{major}.{minor}", "compression_level": level,
                  "sh_degree": degree},
    )


def bucket_layout(means: np.ndarray, block_size: float = 5.0, bucket_size: int = 256
                  ) -> tuple[np.ndarray, np.ndarray, int, list[int]]:
    """How a level ≥ 1 ``.ksplat`` stores points [N, 3]: ``(order, bucket centres [B, 3] float32, number of
    full buckets, sizes of the partially filled ones)``. Points are grouped by ``block_size`` cubes (from the
    minimum corner), each cube cut into buckets of ``bucket_size`` in the original order; full buckets come
    first, as the format requires. The file's Gaussian ``i`` is the scene's ``order[i]``."""
    p = np.asarray(means, np.float64)
    n = len(p)
    lo = p.min(0)
    cell = np.floor((p - lo) / block_size).astype(np.int64)
    _, block_of = np.unique(cell, axis=0, return_inverse=True)
    block_of = block_of.reshape(-1)
    order = np.argsort(block_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(block_of[order]) != 0])
    ends = np.r_[starts[1:], n]
    full_b, part_b = [], []  # (start, stop, centre) of each bucket, in sorted positions
    for a, b in zip(starts, ends):  # one iteration per bucket (N / bucket_size), not per Gaussian
        centre = lo + (cell[order[a]] + 0.5) * block_size
        for s in range(a, b, bucket_size):
            (full_b if min(s + bucket_size, b) - s == bucket_size else part_b).append((s, min(s + bucket_size, b), centre))
    buckets = full_b + part_b
    order = np.concatenate([order[a:b] for a, b, _ in buckets])
    centres = np.array([c for _, _, c in buckets], np.float32).reshape(-1, 3)
    return order, centres, len(full_b), [b - a for a, b, _ in part_b]


def encode_ksplat(scene: GaussianScene, *, level: int = 1, block_size: float = 5.0, bucket_size: int = 256) -> bytes:
    """``scene`` → ``.ksplat`` bytes (one section). Level 0: floats, the scene's order; level 1: float16 and
    16-bit positions in buckets (:func:`bucket_layout`, GaussianSplats3D's default sizes), so the file's order
    is ``bucket_layout(scene.means)[0]``."""
    if level not in (0, 1):
        raise SceneError(f"level={level!r}: this writer writes .ksplat compression level 0 or 1")
    degree = scene.sh_degree
    if degree > 2:
        raise SceneError(f"{scene.source}: .ksplat holds SH degree 0-2, the scene has degree {degree}; write "
                         "scene.with_sh_degree(2) (drops degree 3) or another format")
    n = len(scene)
    if n == 0:
        raise SceneError(f"{scene.source}: no Gaussians to write (a .ksplat needs at least one)")
    srange = 1 if level == 0 else 32767
    p = scene.means.astype(np.float64)
    if level >= 1:
        order, centres, full, partial_sizes = bucket_layout(p, block_size, bucket_size)
        per = np.repeat(np.arange(len(centres)), [bucket_size] * full + partial_sizes)
    else:
        order, centres, full, partial_sizes = np.arange(n), np.zeros((0, 3), np.float32), 0, []
    s = scene.subset(order)
    rec = np.zeros(n, _dtype(level, degree))
    q = s.quats.astype(np.float64)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    scale = np.exp(s.log_scales.astype(np.float64))
    if level == 0:
        rec["centre"], rec["scale"], rec["rot"] = s.means, scale, q
    else:
        delta = (s.means.astype(np.float64) - centres[per]) * (srange / (block_size / 2.0))
        rec["centre"] = np.clip(np.floor(delta + 0.5) + srange, 0, 2 * srange + 1)  # Math.round: half up
        rec["scale"] = scale.astype(np.float16).view("<u2")
        rec["rot"] = q.astype(np.float16).view("<u2")
    rgb = 0.5 + C0 * s.sh[:, 0, :].astype(np.float64)
    rec["rgba"] = np.clip(np.floor(np.concatenate([rgb, sigmoid(s.opacity_logits)[:, None]], 1) * 255.0 + 0.5), 0, 255)
    if degree:
        vals = s.sh[:, 1:, :].reshape(n, -1)[:, _rest_order(degree)]
        rec["sh"] = vals if level == 0 else vals.astype(np.float16).view("<u2")
    header = np.zeros(HEADER, np.uint8)
    hu32, hf32 = header.view("<u4"), header.view("<f4")
    header[0], header[1] = 0, 1
    hu32[1], hu32[2], hu32[3], hu32[4] = 1, 1, n, n
    header.view("<u2")[10] = level
    hf32[6:9] = p.mean(0) if n else 0.0
    hf32[9], hf32[10] = -1.5, 1.5
    meta = np.asarray(partial_sizes, "<u4").tobytes() + centres.astype("<f4").tobytes()
    body = rec.tobytes()
    section = np.zeros(SECTION, np.uint8)
    su32, su16 = section.view("<u4"), section.view("<u2")
    su32[0], su32[1] = n, n
    if level >= 1:
        su32[2], su32[3] = bucket_size, len(centres)
        section.view("<f4")[4] = block_size
        su16[10] = 12
        su32[6] = srange
        su32[8], su32[9] = full, len(partial_sizes)
    su32[7] = len(meta) + len(body)
    su16[20] = degree
    return header.tobytes() + section.tobytes() + meta + body


def write_ksplat(scene: GaussianScene, path: str | os.PathLike, *, level: int = 1) -> Path:
    """Write ``scene`` as a ``.ksplat`` (atomically; level 1 by default, see :func:`encode_ksplat`)."""
    path = Path(path)
    data = encode_ksplat(scene, level=level)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)
    return path


register_format(SceneFormat(
    name=NAME, suffixes=(".ksplat",), description="GaussianSplats3D .ksplat (levels 0-2, SH 0-2)",
    sniff=lambda path, head: False,  # no magic number: chosen by suffix, checked by the reader
    read=read_ksplat, write=write_ksplat,
))
