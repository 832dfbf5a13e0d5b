"""INRIA 3D Gaussian Splatting ``.ply`` (format ``inria-3dgs-ply``): read and write, any SH degree 0-3.

Layout (INRIA's ``gaussian-splatting`` trainer, also written by gsplat's exporter, nerfstudio and most
tools): one ``vertex`` element of float properties ``x y z [nx ny nz] f_dc_0..2 f_rest_0..(3(K-1)-1)
opacity scale_0..2 rot_0..3``. Values are stored raw, without quantisation: log-scales, opacity logits,
unnormalised wxyz quaternions. ``f_rest`` is **channel-major** (all red higher-order coefficients, then
green, then blue); :class:`~scenes.gaussians.GaussianScene` holds SH basis-major ``[N, K, 3]``.
Frame: whatever the trainer used, usually COLMAP's (OpenCV camera axes; for most captures up is about -y).

Properties are read by name, in any order; suffixed names are ordered numerically (``f_rest_10`` after
``f_rest_9``). Parsing is :mod:`scenes.formats.ply` (the one PLY parser). Source: the INRIA repository
(graphdeco-inria/gaussian-splatting, ``scene/gaussian_model.py``, ``save_ply``/``load_ply``) and
``docs`` of gsplat; see also the project's reference notes on splatting.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..gaussians import GaussianScene, SceneError, sh_degree_from_count
from .ply import numbered, read_vertices
from .registry import SceneFormat, register_format

NAME = "inria-3dgs-ply"
_REQUIRED = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity",
             "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"]


def read_ply(path: str | os.PathLike) -> GaussianScene:
    """Read an INRIA 3DGS ``.ply`` into a :class:`GaussianScene` (SH degree inferred from ``f_rest``)."""
    path = str(path)
    names, cols, count = read_vertices(path, _REQUIRED, needs="x y z f_dc_0..2 opacity scale_0..2 rot_0..3")

    def stack(keys: list[str]) -> np.ndarray:
        return np.stack([np.asarray(cols[k], np.float32) for k in keys], axis=1) if keys else np.zeros((count, 0), np.float32)

    rest_names = numbered(names, "f_rest_")
    if len(rest_names) % 3:
        raise SceneError(f"{path}: {len(rest_names)} f_rest properties is not a multiple of 3 (channel-major RGB)")
    k_minus_1 = len(rest_names) // 3
    degree = sh_degree_from_count(k_minus_1 + 1, where=f"{path}: f_rest ({len(rest_names)} properties)")
    dc = stack(["f_dc_0", "f_dc_1", "f_dc_2"])
    rest = stack(rest_names).reshape(count, 3, k_minus_1).transpose(0, 2, 1)
    sh = np.concatenate([dc[:, None, :], rest], axis=1)
    return GaussianScene(
        means=stack(["x", "y", "z"]),
        quats=stack(numbered(names, "rot_")),
        log_scales=stack(numbered(names, "scale_")),
        opacity_logits=np.asarray(cols["opacity"], np.float32),
        sh=sh,
        source=path,
        metadata={"format": NAME, "sh_degree": degree},
    )


def write_ply(scene: GaussianScene, path: str | os.PathLike, *, normals: bool = True) -> Path:
    """Write ``scene`` as an INRIA 3DGS binary little-endian ``.ply`` (atomically: temp file + rename).

    ``normals=True`` writes zero ``nx ny nz`` like the INRIA trainer; readers ignore them.
    The world transform is not part of the format: it is the caller's to keep (see scenes.export).
    """
    path = Path(path)
    n, k = len(scene), scene.sh.shape[1]
    names = ["x", "y", "z"] + (["nx", "ny", "nz"] if normals else [])
    names += [f"f_dc_{i}" for i in range(3)] + [f"f_rest_{i}" for i in range(3 * (k - 1))]
    names += ["opacity"] + [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)]
    cols = [scene.means, np.zeros((n, 3 if normals else 0), np.float32), scene.sh[:, 0, :],
            scene.sh[:, 1:, :].transpose(0, 2, 1).reshape(n, -1), scene.opacity_logits[:, None],
            scene.log_scales, scene.quats]
    body = np.ascontiguousarray(np.concatenate(cols, axis=1).astype("<f4"))
    header = "ply\nformat binary_little_endian 1.0\n"
    header += "comment written by vantage\n"
    header += f"element vertex {n}\n" + "".join(f"property float {p}\n" for p in names) + "end_header\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(header.encode("ascii"))
            f.write(body.tobytes())
        os.replace(tmp, path)
    except BaseException:  # a full disk or Ctrl-C leaves no temporary file behind
        tmp.unlink(missing_ok=True)
        raise
    return path


def ply_header_text(head: bytes) -> bytes | None:
    """The header of a PLY file from its first bytes (up to ``end_header``, or all of ``head``), else None."""
    if not head.startswith(b"ply") or head[3:4] not in (b"\n", b"\r"):
        return None
    end = head.find(b"end_header")
    return head if end < 0 else head[:end]


def _sniff(path: Path, head: bytes) -> bool:
    text = ply_header_text(head)
    return text is not None and b"element chunk " not in text  # a chunk element makes it a compressed PLY


register_format(SceneFormat(
    name=NAME, suffixes=(".ply",), description="INRIA 3D Gaussian Splatting .ply (float properties, SH 0-3)",
    sniff=_sniff, read=read_ply, write=write_ply,
))

