"""gsplat trainer checkpoints (format ``gsplat-checkpoint``): ``ckpt_*.pt`` files holding a ``splats`` dict.

Layout (gsplat's ``examples/simple_trainer.py``: ``torch.save({"step": ..., "splats": splats.state_dict()})``):
``means [N,3]``, ``quats [N,4]`` (wxyz, unnormalised), ``scales [N,3]`` (log), ``opacities [N]`` (logit),
``sh0 [N,1,3]``, ``shN [N,K-1,3]`` (basis-major, as :class:`~scenes.gaussians.GaussianScene`). Float
tensors, no quantisation. A scene trained with ``normalize_world_space=True`` lives in a normalised frame:
pass the transform back to the data frame as ``world_transform``.

Recognised by content: a torch checkpoint is a zip whose members sit in one folder with a ``data.pkl``
(``archive/data.pkl``); the legacy (pre-1.6) format is a pickle starting with torch's magic number. It is
read with ``weights_only=True`` (no code runs from the file). Writing is not offered: use INRIA ``.ply``.
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from infra.safe_load import CheckpointError, load_tensors

from ..gaussians import GaussianScene, SceneError
from .registry import SceneFormat, register_format

NAME = "gsplat-checkpoint"
# torch's legacy serialisation: pickle protocol 2, then the long 0x1950a86a20f9469cfc6c (torch/serialization.py)
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
# key -> (expected shape with N for the Gaussian count and K for SH coefficients, what it holds)
_KEYS = {"means": (("N", 3), "positions"), "quats": (("N", 4), "wxyz quaternions"),
         "scales": (("N", 3), "log scales"), "opacities": (("N",), "opacity logits"),
         "sh0": (("N", 1, 3), "DC SH coefficients"), "shN": (("N", "K", 3), "higher SH coefficients")}


def is_torch_zip(path: Path) -> bool:
    """Is ``path`` a zip written by ``torch.save`` (one top folder holding ``data.pkl``)?"""
    try:
        with zipfile.ZipFile(path) as z:
            return any(n == "data.pkl" or n.endswith("/data.pkl") and n.count("/") == 1 for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def read_gsplat_checkpoint(path: str | os.PathLike, world_transform: np.ndarray | None = None) -> GaussianScene:
    """Read a gsplat trainer checkpoint into a :class:`GaussianScene` (see the module docstring for keys)."""
    import torch  # heavy: imported where used

    path = str(path)
    if not os.path.exists(path):
        raise SceneError(f"{path}: no such file")
    try:
        ckpt = load_tensors(path, what="gsplat checkpoint")
    except CheckpointError as e:  # refused pickles, truncated or foreign files
        raise SceneError(str(e)) from None
    splats = ckpt.get("splats") if isinstance(ckpt, dict) else None
    if not isinstance(splats, dict):
        keys = list(ckpt.keys()) if isinstance(ckpt, dict) else type(ckpt).__name__
        raise SceneError(f"{path}: no 'splats' dict in checkpoint (found {keys}); is this a gsplat trainer checkpoint?")
    need = ["means", "quats", "scales", "opacities", "sh0"]
    missing = [k for k in need if k not in splats]
    if missing:
        raise SceneError(f"{path}: splats lacks {missing}; found: {', '.join(map(str, splats))}")
    arrays = {}
    for key in need + (["shN"] if "shN" in splats else []):
        value = splats[key]
        shape, what = _KEYS[key]
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            kind = f"a {value.dtype} tensor" if isinstance(value, torch.Tensor) else f"a {type(value).__name__}"
            raise SceneError(f"{path}: splats['{key}'] is {kind}; expected a float tensor of {what} "
                             f"[{', '.join(map(str, shape))}]")
        arrays[key] = value.detach().cpu().float().numpy()
    n = arrays["means"].shape[0] if arrays["means"].ndim else -1
    if arrays["opacities"].ndim == 2 and arrays["opacities"].shape[1:] == (1,):
        arrays["opacities"] = arrays["opacities"][:, 0]
    if "shN" in arrays and arrays["shN"].size == 0:
        del arrays["shN"]
    for key, arr in arrays.items():
        shape, what = _KEYS[key]
        ok = arr.ndim == len(shape) and all(want in ("K",) or got == (n if want == "N" else want)
                                            for got, want in zip(arr.shape, shape))
        if not ok:
            raise SceneError(f"{path}: splats['{key}'] has shape {list(arr.shape)}; expected "
                             f"[{', '.join(str(n) if s == 'N' else str(s) for s in shape)}] ({what}, N from 'means')")
    sh = arrays["sh0"]
    if "shN" in arrays:
        sh = np.concatenate([sh, arrays["shN"]], axis=1)
    return GaussianScene(
        means=arrays["means"], quats=arrays["quats"], log_scales=arrays["scales"],
        opacity_logits=arrays["opacities"], sh=sh, world_transform=world_transform,
        source=path, metadata={"format": NAME, "sh_degree": int(round(sh.shape[1] ** 0.5)) - 1},
    )


def _sniff(path: Path, head: bytes) -> bool:
    if head.startswith(_LEGACY_MAGIC):
        return True
    return head.startswith(b"PK\x03\x04") and is_torch_zip(path)


register_format(SceneFormat(
    name=NAME, suffixes=(".pt", ".pth", ".ckpt"), description="gsplat trainer checkpoint (torch, 'splats' dict)",
    sniff=_sniff, read=read_gsplat_checkpoint,
))
