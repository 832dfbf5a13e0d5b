"""antimatter15 ``.splat`` (format ``splat``): read and write; degree-0 colour only.

Source: github.com/antimatter15/splat (``convert.py`` writes it, ``main.js`` reads it); the same layout is
read by most web viewers. Read for the layout; the code here is our own.

Layout: no header; 32 bytes per Gaussian, little-endian:
``x y z`` float32 (position), ``sx sy sz`` float32 (**linear** scale = exp(log-scale)), ``r g b a`` uint8
(colour ``0.5 + C0·f_dc`` and opacity ``sigmoid(logit)``, each ×255), ``qw qx qy qz`` uint8 (normalised
quaternion, byte = q·128 + 128, decoded as (byte − 128)/128). Higher SH bands are not stored (a written
scene keeps only its DC colour; colour outside [0, 1] is clamped).

Decode bounds: position and scale exact (float32; the log-scale is ``log`` of the stored float32); colour
and opacity within 0.5/255 of the written value before the sigmoid / after ``0.5 + C0·f_dc`` (our writer
rounds to nearest; antimatter15's ``convert.py`` truncates, so files from it are within 1/255); each
quaternion component of the normalised quaternion within 0.5/128 (decoded quaternions are not renormalised:
``GaussianScene`` stores them raw). An opacity byte of 0 or 255 decodes with alpha clamped to
[1e-6, 1 − 1e-6] (finite logits). Re-encoding a decoded file gives back its colour, opacity and position
bytes exactly.

Frame: the file's own (converted from a PLY, so usually COLMAP's; up ≈ −y). There is no magic number: the
format is chosen by the ``.splat`` suffix, and the reader checks the size (a positive multiple of 32 bytes).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from infra.files import atomic_write_bytes
from ..gaussians import GaussianScene, SceneError
from ..sh import C0
from .quantize import ALPHA_LOGITS, byte_table, sigmoid
from .registry import SceneFormat, register_format

NAME = "splat"
RECORD = np.dtype([("position", "<f4", 3), ("scale", "<f4", 3), ("rgba", "u1", 4), ("rot", "u1", 4)])
assert RECORD.itemsize == 32
_DC = byte_table(lambda b: (b / 255.0 - 0.5) / C0)  # colour byte → f_dc
_QUAT = byte_table(lambda b: (b - 128.0) / 128.0)  # quaternion byte → component


def read_splat(path: str | os.PathLike) -> GaussianScene:
    """Read an antimatter15 ``.splat`` (see the module docstring) into a :class:`GaussianScene`."""
    path = str(path)
    if not os.path.exists(path):
        raise SceneError(f"{path}: no such file")
    size = os.path.getsize(path)
    if size == 0:
        raise SceneError(f"{path}: empty file (0 bytes); a .splat holds 32 bytes per Gaussian")
    if size % RECORD.itemsize:
        raise SceneError(f"{path}: truncated or not a .splat file: {size} bytes is not a multiple of 32 (bytes per "
                         f"Gaussian); {size // 32} whole Gaussians and {size % 32} bytes left over")
    rec = np.fromfile(path, dtype=RECORD)
    scale = rec["scale"]
    if not ((scale > 0).all() and np.isfinite(scale).all() and np.isfinite(rec["position"]).all()):
        bad = ~(np.isfinite(scale).all(1) & (scale > 0).all(1) & np.isfinite(rec["position"]).all(1))
        i = int(np.flatnonzero(bad)[0])
        raise SceneError(f"{path}: {int(bad.sum())} of {len(rec)} Gaussians have a non-finite position or a scale "
                         f"that is not a positive number (first: Gaussian {i}, scale {rec['scale'][i].tolist()}); "
                         "a .splat stores linear scales > 0 — is this really a .splat file?")
    rgba = rec["rgba"]
    return GaussianScene(
        means=rec["position"], quats=_QUAT[rec["rot"]], log_scales=np.log(scale),
        opacity_logits=ALPHA_LOGITS[rgba[:, 3]], sh=_DC[rgba[:, :3]][:, None, :], source=path,
        metadata={"format": NAME, "sh_degree": 0},
    )


def encode_splat(scene: GaussianScene) -> np.ndarray:
    """``scene`` → the ``.splat`` records (in the scene's order; bytes rounded to nearest)."""
    rec = np.zeros(len(scene), RECORD)
    rec["position"] = scene.means
    rec["scale"] = np.exp(scene.log_scales.astype(np.float64))
    rgb = 0.5 + C0 * scene.sh[:, 0, :].astype(np.float64)
    a = sigmoid(scene.opacity_logits)[:, None]
    rec["rgba"] = np.clip(np.floor(np.concatenate([rgb, a], 1) * 255.0 + 0.5), 0, 255)
    q = scene.quats.astype(np.float64)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    rec["rot"] = np.clip(np.floor(q * 128.0 + 128.0 + 0.5), 0, 255)
    return rec


def write_splat(scene: GaussianScene, path: str | os.PathLike) -> Path:
    """Write ``scene`` as an antimatter15 ``.splat`` (atomically; DC colour only, see the module docstring)."""
    path = Path(path)
    if len(scene) == 0:
        raise SceneError(f"{scene.source}: no Gaussians to write (a .splat needs at least one)")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, encode_splat(scene).tobytes())
    return path


register_format(SceneFormat(
    name=NAME, suffixes=(".splat",), description="antimatter15 .splat (32 bytes per Gaussian, DC colour only)",
    sniff=lambda path, head: False,  # no magic number: chosen by suffix, checked by the reader
    read=read_splat, write=write_splat,
))
