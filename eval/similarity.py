"""Similarity judgment: distances between a network's activations to matched images, layer by layer
(MindSet: Vision's similarity-judgment method; ``papers/mindset-vision.txt``, ``reference/mindset-catalogue.md``
section 4).

Pairs come from a generated dataset's annotation table (:func:`make_pairs`): for each level ``L`` of the
column ``factor`` other than ``reference`` (or the listed ``comparisons``), every reference row is paired
with every ``L`` row that agrees on all ``match`` columns (default ``set_id``: the images of one matched
set) — reference versus each comparison level, never comparison versus comparison, as the original.

Activations are recorded by forward hooks at ``layers`` (default: the zoo's taps, else every leaf module
that the forward pass calls, found by one traced pass on the first image — the original recorded every leaf
whose class name contained ``Conv2d`` or ``Linear``; a requested layer that is not called is an error before
any extraction) and flattened
(the whole map, not averaged). Each image passes through the network **once per repetition**, in
batches, under ``torch.inference_mode`` with the model in eval mode, with the model's own preprocessing
(the original recomputed the reference for every pair at batch size 1 and normalised with CIFAR-10
statistics). Pairs are processed a chunk of matched sets at a time, so memory holds the activations of
one chunk only; every image belongs to exactly one matched set (its ``match`` values), so no image is
computed twice. :func:`similarity_reference` is the plain twin (batch size 1, the reference recomputed
per pair), tested equal.

Repetitions: repetition 0 is the identity; repetition ``r`` > 0 applies one random affine transform
(translation up to ``translate`` × size, scale in ``scale``, rotation up to ``rotate`` degrees, nearest
interpolation, ``fill`` grey level) drawn from ``(seed, r)`` to every image — so both images of a pair get
the same transform (the 2025 fork's scheme: one transform per repetition, shared by all pairs).

Metrics: ``cosine`` (cosine *distance* 1 − cos, so that larger = more different for every metric; the
original reported the similarity), ``euclidean`` (‖a − b‖₂), or ``<module>:<function>`` taking two float
tensors ``[P, D]`` and returning ``[P]`` distances.

Outputs (``results/`` folder, one part per run id, append-only): ``similarity/<run_id>.parquet`` — one row
per pair × layer × repetition (``set``, ``pair``, the two items and levels, ``layer``, ``layer_index``,
``depth`` ∈ [0, 1] in module order, ``repetition``, ``distance``); ``similarity_summary/<run_id>.parquet``
— per comparison level × layer, the mean distance over items (pairs, averaged over repetitions first) with
a bootstrap CI; ``similarity_tests/<run_id>.parquet`` — per layer and pair of comparison levels, the
paired sign-flip test over matched sets (e.g. "the relational change is further than the coordinate
change"; ``eval.stats.sign_flip_test``).
"""
from __future__ import annotations

import importlib
import itertools
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from infra import schema as S

METRICS = ("cosine", "euclidean")


@dataclass(frozen=True)
class SimilarityConfig:
    """Settings of ``python -m eval similarity`` (``similarity.<field>=``), declared and checked with
    ``infra.schema``."""

    reference: str = S.field("", "the reference level of `factor`",
                             check=(lambda v: bool(str(v)), "the reference level of the factor, e.g. "
                                    "similarity.reference=original"))
    factor: str = S.field("condition", "the annotation column whose levels are compared")
    comparisons: tuple[str, ...] = S.field((), "comparison levels (empty = every other level)")
    match: tuple[str, ...] = S.field(("set_id",), "columns a pair agrees on", check=S.non_empty("at least one column"))
    metric: str = S.field("cosine", "cosine | euclidean | <module>:<function>",
                          check=(lambda v: v in METRICS or ":" in v, "cosine | euclidean | <module>:<function>"))
    layers: tuple[str, ...] = S.field((), "module names (empty = the zoo's taps, else every leaf module)")
    repetitions: int = S.field(1, "repetition 0 is untransformed", check=S.at_least(1))
    translate: float = S.field(0.0, "max |shift| as a fraction of the image size (repetitions > 0)",
                               check=S.between(0, 1, "[)"))
    scale: tuple[float, float] = S.field((1.0, 1.0), "scale range",
                                         check=(lambda v: 0 < v[0] <= v[1], "[low, high] with 0 < low <= high"))
    rotate: float = S.field(0.0, "max |rotation| in degrees", check=S.between(0, 180))
    fill: int = S.field(0, "grey level (0-255) of the area uncovered by the affine transform", check=S.between(0, 255))
    seed: int = S.field(0, "seed of the transforms")
    batch_size: int = S.field(32, "images per forward pass", check=S.at_least(1))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))
    n_perm: int = S.field(10_000, "sign-flip test permutations (exact when at most 16 sets)", check=S.at_least(100))

    def __post_init__(self):
        S.validate_section(self, "similarity")


# --------------------------------------------------------------------------------------------------
# pairs


def make_pairs(ann: pd.DataFrame, factor: str, reference: str, match=("set_id",), comparisons=()) -> pd.DataFrame:
    """Pairs (reference row, comparison row) agreeing on ``match``: columns ``set`` (the match values joined
    by ``|``), ``reference_item``, ``comparison_item`` (``file_name``), ``reference_level``,
    ``comparison_level``; sorted by set, comparison level, items. Errors name a missing column or level."""
    for col in (factor, *match, "file_name"):
        if col not in ann:
            raise ValueError(f"similarity: column {col!r} is not in the annotation table; columns: {list(ann)}")
    lv = ann[factor].astype(str)
    levels = sorted(set(lv))
    if str(reference) not in levels:
        raise ValueError(f"similarity.reference={reference!r}: not a level of {factor!r}; levels: {levels}")
    comps = [str(c) for c in comparisons] or [v for v in levels if v != str(reference)]
    bad = sorted(set(comps) - set(levels))
    if bad:
        raise ValueError(f"similarity.comparisons={bad}: not levels of {factor!r}; levels: {levels}")
    key = ann[list(match)].astype(str).agg("|".join, axis=1)
    base = pd.DataFrame({"set": key, "item": ann["file_name"].astype(str), "level": lv})
    ref = base[base["level"] == str(reference)]
    cmp_ = base[base["level"].isin(comps) & (base["level"] != str(reference))]
    pairs = ref.merge(cmp_, on="set", suffixes=("_r", "_c"))
    out = pd.DataFrame({"set": pairs["set"], "reference_item": pairs["item_r"], "comparison_item": pairs["item_c"],
                        "reference_level": pairs["level_r"], "comparison_level": pairs["level_c"]})
    return out.sort_values(["set", "comparison_level", "reference_item", "comparison_item"]).reset_index(drop=True)


def make_pairs_reference(ann: pd.DataFrame, factor: str, reference: str, match=("set_id",), comparisons=()) -> pd.DataFrame:
    """The plain twin of :func:`make_pairs`: the original's loop — per comparison level, the Cartesian
    product of reference rows × level rows, kept when every ``match`` column is equal."""
    rows = []
    levels = sorted(set(ann[factor].astype(str)))
    comps = [str(c) for c in comparisons] or [v for v in levels if v != str(reference)]
    refs = [r for _, r in ann.iterrows() if str(r[factor]) == str(reference)]
    for level in comps:
        if level == str(reference):
            continue
        for r in refs:
            for _, c in ann.iterrows():
                if str(c[factor]) == level and all(str(r[m]) == str(c[m]) for m in match):
                    rows.append(("|".join(str(r[m]) for m in match), str(r["file_name"]), str(c["file_name"]),
                                 str(reference), level))
    out = pd.DataFrame(rows, columns=["set", "reference_item", "comparison_item", "reference_level", "comparison_level"])
    return out.sort_values(["set", "comparison_level", "reference_item", "comparison_item"]).reset_index(drop=True)


# --------------------------------------------------------------------------------------------------
# layers, metrics, transforms


def default_layers(loaded, example=None) -> list[str]:
    """The zoo's taps if any, else every leaf module (no children) that the forward pass calls, in
    ``named_modules`` order (one traced pass on ``example``, see :func:`called_modules`): a model may hold
    leaves it never calls (EfficientNet's ``drop_path`` of a block without a skip connection), which have no
    activations to compare."""
    if loaded.taps:
        return list(loaded.taps)
    leaves = [n for n, m in loaded.module.named_modules() if n and not any(True for _ in m.children())]
    called = called_modules(loaded, leaves, example)
    return [n for n in leaves if n in called]


def called_modules(loaded, names: list[str], example=None) -> set[str]:
    """Which of the modules ``names`` one forward pass calls, traced with forward hooks on ``example`` (a
    batch [1, 3, H, W] as the model's transform gives it; default zeros of the model's input size)."""
    import torch

    mods = dict(loaded.module.named_modules())
    called: set[str] = set()
    handles = [mods[n].register_forward_hook(lambda _m, _i, _o, n=n: called.add(n)) for n in names]
    try:
        x = example if example is not None else torch.zeros(1, *loaded.data_config["input_size"])
        if loaded.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            (loaded.forward_fn or loaded.module)(x)
    finally:
        for h in handles:
            h.remove()
    return called


def resolve_layers(loaded, layers, example=None) -> list[str]:
    """The layers to record, in module order: ``layers``, else :func:`default_layers`. A requested layer (or
    zoo tap) that does not exist, or that one traced forward pass on ``example`` does not call, is an error
    here, before any image is extracted."""
    names = [n for n, _ in loaded.module.named_modules() if n]
    chosen = list(layers) or default_layers(loaded, example)
    bad = [x for x in chosen if x not in names]
    if bad:
        raise ValueError(f"similarity.layers={bad}: no such module in {loaded.model_id}; some names: {names[:20]}")
    if layers or loaded.taps:
        called = called_modules(loaded, chosen, example)
        idle = [x for x in chosen if x not in called]
        if idle:
            what = "similarity.layers" if layers else "the zoo's taps"
            raise ValueError(f"{what}: module(s) {idle} of {loaded.model_id} are not called in forward (traced on one "
                             "image), so they have no activations; leave similarity.layers empty for every called "
                             "leaf module, or name others")
    order = {n: i for i, n in enumerate(names)}
    return sorted(dict.fromkeys(chosen), key=order.__getitem__)


def get_metric(name: str) -> Callable:
    """``cosine`` / ``euclidean`` or a user function ``<module>:<function>`` ([P, D], [P, D]) -> [P]."""
    import torch
    import torch.nn.functional as F

    if name == "cosine":
        return lambda a, b: 1.0 - F.cosine_similarity(a, b, dim=1, eps=1e-12)
    if name == "euclidean":
        return lambda a, b: torch.linalg.vector_norm(a - b, dim=1)
    mod, _, fn = name.rpartition(":")
    try:
        f = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError, ValueError) as e:
        raise ValueError(f"similarity.metric={name!r}: cannot import {fn!r} from {mod!r} ({e}); give cosine, euclidean "
                         "or <module>:<function>") from None
    if not callable(f):
        raise ValueError(f"similarity.metric={name!r}: {fn!r} is not callable")
    return f


def affine_params(cfg: SimilarityConfig, repetition: int) -> dict:
    """The affine transform of ``repetition`` (0 = identity): angle (degrees), translate (fractions), scale."""
    if repetition == 0:
        return {"angle": 0.0, "translate": (0.0, 0.0), "scale": 1.0}
    rng = np.random.default_rng([cfg.seed, repetition])
    return {"angle": float(rng.uniform(-cfg.rotate, cfg.rotate)),
            "translate": tuple(float(v) for v in rng.uniform(-cfg.translate, cfg.translate, 2)),
            "scale": float(rng.uniform(*cfg.scale))}


def _prepare(loaded, path: str, params: dict, fill: int):
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as TF

    from .embeddings import load_image

    img = load_image(path)
    if params["angle"] or params["translate"] != (0.0, 0.0) or params["scale"] != 1.0:
        w, h = img.size
        img = TF.affine(img, angle=params["angle"], translate=[round(params["translate"][0] * w),
                        round(params["translate"][1] * h)], scale=params["scale"], shear=[0.0, 0.0],
                        interpolation=InterpolationMode.NEAREST, fill=[fill] * 3)
    return loaded.transform(img)


class Recorder:
    """Forward hooks that keep each layer's output of the last forward pass, flattened to ``[B, D]`` float32
    copies (a module called several times keeps its last call, as the original's hooks overwrote)."""

    def __init__(self, module, layers: list[str]):
        mods = dict(module.named_modules())
        self.out: dict = {}
        self.handles = [mods[n].register_forward_hook(self._hook(n)) for n in layers]

    def _hook(self, name):
        def hook(_m, _inp, output):
            if isinstance(output, (tuple, list)):
                output = output[0]
            self.out[name] = output.detach().float().reshape(output.shape[0], -1).clone()

        return hook

    def close(self):
        for h in self.handles:
            h.remove()


def activations(loaded, paths: list[str], layers: list[str], params: dict, fill: int, batch_size: int) -> dict:
    """``{layer: float32 tensor [len(paths), D]}`` for the images (transformed by ``params``), batched."""
    import torch

    rec = Recorder(loaded.module, layers)
    parts: dict[str, list] = {n: [] for n in layers}
    try:
        for s in range(0, len(paths), batch_size):
            x = torch.stack([_prepare(loaded, p, params, fill) for p in paths[s:s + batch_size]])
            if loaded.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.inference_mode():
                (loaded.forward_fn or loaded.module)(x)
            for n in layers:
                if n not in rec.out:
                    raise ValueError(f"similarity.layers: module {n!r} of {loaded.model_id} is not called in forward")
                parts[n].append(rec.out[n])
            rec.out.clear()
    finally:
        rec.close()
    return {n: torch.cat(v) for n, v in parts.items()}


# --------------------------------------------------------------------------------------------------
# distances


def pair_distances(loaded, root: Path, pairs: pd.DataFrame, layers: list[str], cfg: SimilarityConfig) -> pd.DataFrame:
    """Distances of every pair at every layer and repetition (tidy, module docstring); each image passes
    through the network once per repetition."""
    import torch

    metric = get_metric(cfg.metric)
    index = {n: i for i, n in enumerate(layers)}
    depth = {n: (i / (len(layers) - 1) if len(layers) > 1 else 0.0) for i, n in enumerate(layers)}
    sets = list(dict.fromkeys(pairs["set"]))
    by_set = {s: g for s, g in pairs.groupby("set", sort=False)}
    frames = []
    for rep in range(cfg.repetitions):
        params = affine_params(cfg, rep)
        chunk: list[str] = []

        def flush(chunk_sets):
            g = pd.concat([by_set[s] for s in chunk_sets], ignore_index=True)
            items = list(dict.fromkeys(list(g["reference_item"]) + list(g["comparison_item"])))
            pos = {it: i for i, it in enumerate(items)}
            acts = activations(loaded, [str(root / it) for it in items], layers, params, cfg.fill, cfg.batch_size)
            ri = torch.tensor([pos[x] for x in g["reference_item"]])
            ci = torch.tensor([pos[x] for x in g["comparison_item"]])
            for n in layers:
                d = metric(acts[n][ri], acts[n][ci])
                d = np.asarray(d.detach().cpu().numpy() if hasattr(d, "detach") else d, np.float64).reshape(-1)
                if d.shape[0] != len(g):
                    raise ValueError(f"similarity.metric={cfg.metric!r} returned {d.shape[0]} values for {len(g)} pairs")
                frames.append(g.assign(pair=g["reference_item"] + " ~ " + g["comparison_item"], layer=n,
                                       layer_index=index[n], depth=depth[n], repetition=rep, distance=d))

        n_img = 0
        for s in sets:
            chunk.append(s)
            n_img += len(set(by_set[s]["reference_item"]) | set(by_set[s]["comparison_item"]))
            if n_img >= cfg.batch_size:
                flush(chunk)
                chunk, n_img = [], 0
        if chunk:
            flush(chunk)
    return pd.concat(frames, ignore_index=True)


def similarity_reference(loaded, root: Path, pairs: pd.DataFrame, layers: list[str], cfg: SimilarityConfig) -> pd.DataFrame:
    """The plain twin of :func:`pair_distances`: pair by pair, both images at batch size 1 (the reference
    recomputed for every pair, as the original did)."""
    metric = get_metric(cfg.metric)
    rows = []
    for rep in range(cfg.repetitions):
        params = affine_params(cfg, rep)
        for _, p in pairs.iterrows():
            a = activations(loaded, [str(root / p["reference_item"])], layers, params, cfg.fill, 1)
            b = activations(loaded, [str(root / p["comparison_item"])], layers, params, cfg.fill, 1)
            for n in layers:
                rows.append({"reference_item": p["reference_item"], "comparison_item": p["comparison_item"],
                             "layer": n, "repetition": rep, "distance": float(metric(a[n], b[n]).reshape(-1)[0])})
    return pd.DataFrame(rows)


def summarise(dist: pd.DataFrame, n_boot: int, ci: float, seed: int) -> pd.DataFrame:
    """Per comparison level × layer: mean distance over items (each pair's mean over repetitions) with a
    percentile bootstrap CI over items."""
    from .stats import _percentiles

    per_pair = dist.groupby(["comparison_level", "layer", "layer_index", "depth", "set", "pair"], as_index=False,
                            sort=False)["distance"].mean()
    rng = np.random.default_rng(seed)
    rows = []
    for (level, layer, li, dp), g in per_pair.groupby(["comparison_level", "layer", "layer_index", "depth"], sort=True):
        d = g["distance"].to_numpy(float)
        boots = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(1)
        lo, hi = _percentiles(boots, ci)
        rows.append({"comparison_level": level, "layer": layer, "layer_index": li, "depth": dp, "n": len(d),
                     "mean_distance": float(d.mean()), "ci_low": lo, "ci_high": hi, "sd": float(d.std(ddof=1)) if len(d) > 1 else float("nan")})
    return pd.DataFrame(rows).sort_values(["layer_index", "comparison_level"]).reset_index(drop=True)


def level_tests(dist: pd.DataFrame, n_perm: int, seed: int) -> pd.DataFrame:
    """Per layer and pair of comparison levels (a, b): the sign-flip test over matched sets of the
    difference of their mean distances to the reference (positive = ``a`` further than ``b``)."""
    from .stats import sign_flip_test

    per_set = dist.groupby(["layer", "layer_index", "set", "comparison_level"], as_index=False)["distance"].mean()
    rows = []
    for (layer, li), g in per_set.groupby(["layer", "layer_index"], sort=True):
        wide = g.pivot(index="set", columns="comparison_level", values="distance")
        for a, b in itertools.combinations(sorted(wide.columns), 2):
            both = wide[[a, b]].dropna()
            if len(both) < 2:
                continue
            r = sign_flip_test(both[a].to_numpy(), both[b].to_numpy(), n_perm=n_perm, seed=seed)
            rows.append({"layer": layer, "layer_index": li, "level_a": a, "level_b": b, "sets": r["n"],
                         "mean_difference": r["mean_difference"], "p_value": r["p_value"], "exact": r["exact"]})
    return pd.DataFrame(rows, columns=["layer", "layer_index", "level_a", "level_b", "sets", "mean_difference",
                                       "p_value", "exact"])


# --------------------------------------------------------------------------------------------------
# a run


def load_annotations(root) -> tuple[Path, pd.DataFrame, str]:
    from .tasks import read_annotations

    root = Path(root)
    ann = read_annotations(root, "similarity judgments")
    name = str(ann["dataset"].iloc[0]) if "dataset" in ann and len(ann) else root.name
    return root, ann, name


def run_similarity(loaded, task_dir, model_id: str, cfg: SimilarityConfig, results_dir,
                   config_extra: dict | None = None) -> dict[str, pd.DataFrame]:
    """Pairs from ``task_dir``'s annotations, distances, summary and tests appended to ``results_dir``
    (module docstring). A run whose summary exists is read back instead of recomputed. Returns the three
    tables (``distances``, ``summary``, ``tests``)."""
    from . import results as R
    from .runner import method_digest

    root, ann, name = load_annotations(task_dir)
    pairs = make_pairs(ann, cfg.factor, cfg.reference, cfg.match, cfg.comparisons)
    if pairs.empty:
        raise ValueError(f"similarity: no pairs in {root} (reference {cfg.reference!r} of {cfg.factor!r}, matched on "
                         f"{list(cfg.match)})")
    first = str(root / pairs["reference_item"].iloc[0])
    layers = resolve_layers(loaded, cfg.layers, _prepare(loaded, first, affine_params(cfg, 0), cfg.fill).unsqueeze(0))
    digest = R.config_digest({"similarity": asdict(cfg), "model": loaded.identity(), "task": name,
                              "images": R.config_digest(pairs.to_dict("list")), **(config_extra or {})})
    rid = R.run_id("similarity", name, model_id, cfg.seed, digest)
    results_dir = Path(results_dir)
    kinds = ("similarity", "similarity_tests", "similarity_summary")  # summary last: it marks the run finished
    if (results_dir / "similarity_summary" / f"{rid}.parquet").is_file():
        return dict(zip(("distances", "tests", "summary"),
                        (pd.read_parquet(results_dir / k / f"{rid}.parquet") for k in kinds)))
    t0 = time.perf_counter()
    dist = pair_distances(loaded, root, pairs, layers, cfg)
    ident = {**loaded.run_identity(), "method_config": method_digest(cfg), "model_id": model_id, "task": name,
             "method": "similarity", "seed": cfg.seed, "run_id": rid, "metric": cfg.metric, "factor": cfg.factor}
    dist = dist.assign(**ident)
    summary = summarise(dist, cfg.n_boot, cfg.ci, cfg.seed).assign(**ident, seconds=time.perf_counter() - t0)
    tests = level_tests(dist, cfg.n_perm, cfg.seed).assign(**ident)
    for kind, df in zip(kinds, (dist, tests, summary)):
        R.write_part(results_dir, kind, rid, df)
    return {"distances": dist, "summary": summary, "tests": tests}
