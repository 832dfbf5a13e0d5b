"""Niantic ``.spz`` (format ``spz``): read versions 2 and 3 (gzip), write version 3 (or 2); SH 0-3.

Source: github.com/nianticlabs/spz (``README.md``: the file format; ``src/cc/load-spz.cc`` and
``splat-utils.h``: packing, quantisation and the coordinate conversion). Read for the layout; the code here
is our own.

Layout (v2/v3): the whole file is one gzip stream holding a 16-byte header — magic ``0x5053474e``
("NGSP"), version u32, count N u32, SH degree u8, fractional bits u8, flags u8 (``0x1``: trained with
antialiasing), reserved u8 — then, attribute by attribute for all Gaussians:

* positions: 3 × 24-bit signed fixed point (``fractional bits``, 12 in files from the reference library:
  steps of 1/4096, |x| < 2048), error ≤ half a step;
* alphas: u8, ``sigmoid(logit)·255``, error ≤ 0.5/255 after the sigmoid (0 and 255 decode with alpha
  clamped to [1e-6, 1 − 1e-6], finite logits);
* colours: 3 × u8, ``f_dc·0.15·255 + 127.5`` (spz's own colour scale, not C0), error ≤ 0.5/(0.15·255) in
  ``f_dc``;
* scales: 3 × u8, ``(log-scale + 10)·16``, error ≤ 1/32 in log-scale inside [−10, 5.94];
* rotations: v3 "smallest three" (u32: bits 31..30 the index of the largest |component| of the normalised
  xyzw quaternion, then three components in xyzw order, each a sign bit and 9-bit magnitude over
  [0, 1/√2]; error ≤ 0.5·(1/√2)/511 per stored component); v2: x y z as u8 (``q·127.5 + 127.5`` with w ≥ 0),
  w reconstructed;
* SH (degree ≥ 1): per Gaussian, coefficient-major and channel-minor (``sh1_r sh1_g sh1_b sh2_r ...``, the
  basis-major order of ``GaussianScene``), u8 ``round(c·128) + 128`` (the reference writer may drop low
  bits: 5 for degree 1 and 4 above by default; ours keeps all 8), error ≤ 1/256 inside [−1, 1).

**Axes.** spz stores its data in RUB axes (x right, y up, z back; OpenGL / three.js), the reference
library converting from the caller's frame when saving; PLY files (INRIA, COLMAP) use RDF (x right, y down,
z forward). The reader converts RUB → RDF, so a scene read from an ``.spz`` is in the frame the INRIA
``.ply`` of the same capture would have: a 180° rotation about x, i.e. position (x, −y, −z), quaternion
(w, x, −y, −z), and SH coefficients multiplied by the parity of their basis function under y → −y,
z → −z (computed from :func:`scenes.sh.sh_basis`). The writer applies the same (self-inverse) conversion.
Caveat: tools that save with the frame left "unspecified" (splat-transform, the library's own
``ply_to_spz`` with default options) store PLY axes unconverted; such a file reads here turned by 180°
about x (upside down); the canonical-frame step must not trust the file's up axis.

Version 4 (a plain "NGSP" header and ZSTD-compressed streams) is recognised but not read: Python 3.11 has
no ZSTD decoder and the project does not depend on one; the error says how to get a version-3 file. An
uncompressed v2/v3 payload (no gzip; some tools write it) is read as well.
"""
from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from infra.files import atomic_write_bytes
from ..gaussians import GaussianScene, SceneError
from ..sh import sh_basis
from .quantize import alpha_to_logit, sigmoid, smallest_three
from .registry import SceneFormat, register_format

NAME = "spz"
MAGIC = 0x5053474E  # "NGSP" little-endian
_HEADER = struct.Struct("<IIIBBBB")
_SQRT1_2 = math.sqrt(0.5)
_COLOR_SCALE = 0.15
_RUB_TO_RDF = np.array([1.0, -1.0, -1.0])  # axis flips (a 180° turn about x; its own inverse)


def _sh_flip(degree: int) -> np.ndarray:
    """±1 per SH coefficient 1..K−1: how each basis function changes under (x, y, z) → (x, −y, −z)."""
    d = np.array([[0.267, 0.534, 0.802]])  # generic direction, on no nodal plane of degrees 1-3
    ratio = sh_basis(d * _RUB_TO_RDF, degree)[0, 1:] / sh_basis(d, degree)[0, 1:]
    return np.sign(ratio)


def _gunzip(path: str, data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except EOFError as e:
        raise SceneError(f"{path}: truncated .spz: the gzip stream ends early ({e})") from e
    except (OSError, zlib.error) as e:
        raise SceneError(f"{path}: corrupt .spz: the gzip stream cannot be decompressed ({e})") from e


def read_spz(path: str | os.PathLike) -> GaussianScene:
    """Read a Niantic ``.spz`` (v2/v3; see the module docstring) into a :class:`GaussianScene` in PLY axes."""
    path = str(path)
    if not os.path.exists(path):
        raise SceneError(f"{path}: no such file")
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        data = _gunzip(path, raw)
    elif raw[:4] == b"NGSP":
        data = raw  # version 4, or an uncompressed v2/v3 payload (which some tools write)
    else:
        raise SceneError(f"{path}: not a .spz file: bad magic (first bytes {raw[:4]!r}; expected a gzip stream "
                         "starting 1f 8b, or 'NGSP')")
    if len(data) < _HEADER.size:
        raise SceneError(f"{path}: truncated .spz: {len(data)} bytes after decompression, the header alone is 16")
    magic, version, n, degree, frac, flags, _ = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise SceneError(f"{path}: not a .spz file: bad magic 0x{magic:08x} inside the gzip stream (expected "
                         f"0x{MAGIC:08x}, 'NGSP')")
    if version >= 4 and data is raw:
        raise SceneError(f"{path}: unsupported .spz version {version}: version 4 stores ZSTD streams, which this "
                         "Python cannot decompress (no zstd module, not a Vantage dependency); save it as version 3 "
                         "(spz's saveSpz with PackOptions.version = 3, or another tool that writes v3)")
    if version not in (2, 3):
        raise SceneError(f"{path}: unsupported .spz version {version}; this reader knows versions 2 and 3")
    if degree > 3:
        raise SceneError(f"{path}: .spz SH degree {degree} is not supported (Vantage scenes hold degree 0-3)")
    k1 = (degree + 1) ** 2 - 1
    rot_bytes = 4 if version >= 3 else 3
    sizes = [9 * n, n, 3 * n, 3 * n, rot_bytes * n, 3 * k1 * n]
    need = _HEADER.size + sum(sizes)
    if len(data) < need:
        raise SceneError(f"{path}: truncated .spz: header declares {n} Gaussians (SH degree {degree}), which need "
                         f"{need} bytes after decompression; the file holds {len(data)}")
    buf = np.frombuffer(data, np.uint8, count=need - _HEADER.size, offset=_HEADER.size)
    parts, start = [], 0
    for size in sizes:
        parts.append(buf[start:start + size])
        start += size
    pos_b, alpha_b, col_b, scale_b, rot_b, sh_b = parts

    p = pos_b.reshape(n, 3, 3).astype(np.int32)
    fixed = p[..., 0] | (p[..., 1] << 8) | (p[..., 2] << 16)
    fixed = np.where(fixed & 0x800000, fixed - (1 << 24), fixed)
    means = fixed.astype(np.float64) / (1 << frac)

    if version >= 3:
        words = rot_b.view("<u4").astype(np.uint32)
        largest = (words >> np.uint32(30)).astype(np.int64)
        comps = []
        for shift in (20, 10, 0):  # the first stored component sits highest
            w = (words >> np.uint32(shift)) & np.uint32(0x3FF)
            mag = (w & np.uint32(511)).astype(np.float64) * _SQRT1_2 / 511.0
            comps.append(np.where(w & np.uint32(512), -mag, mag))
        rest = np.stack(comps, 1)
        xyzw = np.empty((n, 4))
        slots = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])[largest]
        rows = np.arange(n)
        xyzw[rows[:, None], slots] = rest
        xyzw[rows, largest] = np.sqrt(np.maximum(0.0, 1.0 - (rest**2).sum(1)))
    else:
        xyz = rot_b.reshape(n, 3).astype(np.float64) / 127.5 - 1.0
        xyzw = np.concatenate([xyz, np.sqrt(np.maximum(0.0, 1.0 - (xyz**2).sum(1)))[:, None]], 1)

    dc = (col_b.reshape(n, 3).astype(np.float64) / 255.0 - 0.5) / _COLOR_SCALE
    sh = dc[:, None, :]
    if k1:
        rest_sh = (sh_b.reshape(n, k1, 3).astype(np.float64) - 128.0) / 128.0
        sh = np.concatenate([sh, rest_sh * _sh_flip(degree)[None, :, None]], 1)
    quats = np.stack([xyzw[:, 3], xyzw[:, 0], xyzw[:, 1] * -1.0, xyzw[:, 2] * -1.0], 1)  # RUB → RDF, wxyz
    return GaussianScene(
        means=means * _RUB_TO_RDF, quats=quats, log_scales=scale_b.reshape(n, 3).astype(np.float64) / 16.0 - 10.0,
        opacity_logits=alpha_to_logit(alpha_b.astype(np.float64) / 255.0), sh=sh, source=path,
        metadata={"format": NAME, "format_version": int(version), "sh_degree": int(degree),
                  "antialiased": bool(flags & 1), "fractional_bits": int(frac)},
    )


def _round(x: np.ndarray) -> np.ndarray:
    """``std::round`` as the reference writer uses it: half away from zero."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _to_u8(x: np.ndarray) -> np.ndarray:
    """spz's ``toUint8``: round half away from zero, clamp to [0, 255]."""
    return np.clip(_round(x), 0, 255).astype(np.uint8)


def encode_spz(scene: GaussianScene, *, version: int = 3, fractional_bits: int = 12) -> bytes:
    """``scene`` (PLY axes) → the uncompressed ``.spz`` payload (header + attributes, RUB axes)."""
    if version not in (2, 3):
        raise SceneError(f"version={version!r}: this writer writes .spz version 2 or 3")
    n, degree = len(scene), scene.sh_degree
    limit = (1 << 23) - 1
    fixed = _round(scene.means.astype(np.float64) * _RUB_TO_RDF * (1 << fractional_bits)).astype(np.int64)
    if n and np.abs(fixed).max() > limit:
        raise SceneError(f"{scene.source}: a coordinate of magnitude {np.abs(scene.means).max():.6g} does not fit "
                         f".spz's 24-bit fixed point with {fractional_bits} fractional bits (|x| < "
                         f"{limit / (1 << fractional_bits):.6g}); scale the scene down first")
    f = (fixed & 0xFFFFFF).astype(np.uint32)
    pos = np.stack([f & 255, (f >> 8) & 255, (f >> 16) & 255], -1).astype(np.uint8).reshape(n, 9)
    alpha = _to_u8(sigmoid(scene.opacity_logits) * 255.0)
    colours = _to_u8(scene.sh[:, 0, :].astype(np.float64) * (_COLOR_SCALE * 255.0) + 127.5)
    scales = _to_u8((scene.log_scales.astype(np.float64) + 10.0) * 16.0)
    q = scene.quats.astype(np.float64)
    xyzw = np.stack([q[:, 1], -q[:, 2], -q[:, 3], q[:, 0]], 1)  # wxyz, RDF → xyzw, RUB
    if version >= 3:
        def mags(v: np.ndarray) -> np.ndarray:
            return np.minimum(np.floor(511.0 * np.abs(v) / _SQRT1_2 + 0.5), 511)

        dropped, stored = smallest_three(xyzw, lambda v: np.sign(v) * mags(v) * _SQRT1_2 / 511.0)
        word = dropped.astype(np.uint32)
        for i in range(3):
            sign = (stored[:, i] < 0).astype(np.uint32) << np.uint32(9)
            word = (word << np.uint32(10)) | sign | mags(stored[:, i]).astype(np.uint32)
        rot = word.astype("<u4").view(np.uint8).reshape(n, 4)
    else:
        u = xyzw / np.linalg.norm(xyzw, axis=1, keepdims=True)
        u = u * np.where(u[:, 3] < 0, -1.0, 1.0)[:, None]
        rot = _to_u8(u[:, :3] * 127.5 + 127.5)
    parts = [pos, alpha, colours, scales, rot]
    if degree:
        rest = scene.sh[:, 1:, :].astype(np.float64) * _sh_flip(degree)[None, :, None]
        parts.append(np.clip(_round(rest * 128.0) + 128, 0, 255).astype(np.uint8))
    flags = 1 if scene.metadata.get("antialiased") else 0
    header = _HEADER.pack(MAGIC, version, n, degree, fractional_bits, flags, 0)
    return header + b"".join(np.ascontiguousarray(p).tobytes() for p in parts)


def write_spz(scene: GaussianScene, path: str | os.PathLike, *, version: int = 3) -> Path:
    """Write ``scene`` as a gzip ``.spz`` (v3 by default; atomically). See the module docstring for axes."""
    path = Path(path)
    if len(scene) == 0:
        raise SceneError(f"{scene.source}: no Gaussians to write (a .spz needs at least one)")
    payload = encode_spz(scene, version=version)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, gzip.compress(payload, compresslevel=6, mtime=0))
    return path


def _sniff(path: Path, head: bytes) -> bool:
    if head.startswith(b"NGSP"):
        return True
    if not head.startswith(b"\x1f\x8b"):
        return False
    try:
        start = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4)
    except zlib.error:
        return False
    return start == b"NGSP"


register_format(SceneFormat(
    name=NAME, suffixes=(".spz",), description="Niantic .spz (gzip, versions 2-3; RUB axes converted to PLY's RDF)",
    sniff=_sniff, read=read_spz, write=write_spz,
))
