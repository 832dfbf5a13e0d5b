"""Synthetic result tables of known shape, for the figure tests and the report benchmark (never for
results): trial tables in :data:`eval.results.TRIAL_DTYPES` whose accuracies follow stated rules, so a
test can check that a figure shows what the table holds.

Every function takes an explicit ``seed``; nothing is read from disk.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..results import conform

MVH_CATEGORIES = ("airplane", "bear", "bicycle", "bird", "boat", "bottle", "car", "cat", "chair", "clock", "dog",
                  "elephant", "keyboard", "knife", "oven", "truck")


def _rid(method: str, task: str, model: str, seed: int) -> str:
    from ..results import run_id

    return run_id(method, task, model, seed, "synthetic")


def _trials(observer, kind, task, split, items, labels, correct, seed=0, method="probe", conditions="",
            responses=None, cluster="") -> pd.DataFrame:
    n = len(items)
    labels = np.asarray(labels).astype(str)
    if responses is None:
        responses = np.where(correct, labels, np.where(labels == "0", "1", "0"))
    return pd.DataFrame({
        "observer": observer, "observer_type": kind, "model_id": observer if kind == "model" else "", "task": task,
        "split": split, "method": method if kind == "model" else "human", "seed": seed, "item_id": items,
        "condition": conditions, "label": labels, "response": np.asarray(responses).astype(str),
        "score": np.nan if kind == "human" else 0.9, "correct": np.asarray(correct, bool),
        "run_id": _rid(method, task, observer, seed) if kind == "model" else f"human__{observer}",
        "weights": "random:seed=0" if kind == "model" else "", "preprocess": "", "feature": "",
        "method_config": "", "cluster": cluster}, index=range(n))


def threedpc_tables(n_models: int = 6, n_test: int = 200, n_human_items: int = 94, n_scenes: int = 20,
                    n_steps: int = 10, seeds=(0, 1, 2), n_humans: int = 0, finetune_every: int = 0,
                    seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(trials, summary, zoo)`` of a probe sweep on a 3D-PC build: ``n_models`` models whose accuracy rises
    with their (synthetic) ImageNet top-1 on VPT and depth, ``n_test`` test and ``n_human_items`` human-split
    items per task, VPT-Strategy sequences of ``n_steps`` steps in ``n_scenes`` scenes (middle half blocked,
    label 0; models fail more on blocked steps), optional human observers on the human split and the
    Strategy images, and fine-tuning runs for every ``finetune_every``-th model (0: none)."""
    rng = np.random.default_rng(seed)
    top1 = np.sort(rng.uniform(60, 88, n_models))
    models = [f"timm:model_{i:03d}" for i in range(n_models)]
    zoo = pd.DataFrame({"model_id": models, "imagenet_top1": top1})
    steps = np.arange(n_steps)
    blocked_steps = (steps >= n_steps // 4) & (steps < n_steps // 4 + n_steps // 2)
    strat_items = [f"images/strategy/cat/scene_{s:02d}/step{k:02d}.png" for s in range(n_scenes) for k in steps]
    strat_labels = np.tile(np.where(blocked_steps, "0", "1"), n_scenes)
    frames, summ = [], []
    for i, m in enumerate(models):
        methods = ["probe"] + (["finetune"] if finetune_every and i % finetune_every == 0 else [])
        for method in methods:
            for task, slope in (("3dpc/vpt", 0.012), ("3dpc/depth", 0.008), ("3dpc/vpt_strategy", 0.006)):
                p = float(np.clip(0.5 + slope * (top1[i] - 60) + (0.05 if method == "finetune" else 0), 0.5, 0.98))
                for sd in seeds:
                    if task == "3dpc/vpt_strategy":
                        pk = np.where(np.tile(blocked_steps, n_scenes), p - 0.15, p)
                        parts = [("strategy", strat_items, strat_labels, rng.random(len(strat_items)) < pk)]
                    else:
                        parts = []
                        for split, n in (("test", n_test), ("human", n_human_items)):
                            # the human subset is drawn from the test frames (same files), as in a build
                            items = [f"images/test/{task[5:]}/f{k:05d}.png" for k in range(n)]
                            parts.append((split, items, rng.integers(0, 2, n).astype(str), rng.random(n) < p))
                    for split, items, labels, correct in parts:
                        frames.append(_trials(m, "model", task, split, items, labels, correct, sd, method))
                        acc = float(np.mean(correct))
                        summ.append({"model_id": m, "task": task, "method": method, "seed": sd, "split": split,
                                     "n": len(items), "accuracy": acc, "accuracy_ci_low": acc - 0.03,
                                     "accuracy_ci_high": acc + 0.03, "balanced_accuracy": acc,
                                     "balanced_accuracy_ci_low": acc - 0.03, "balanced_accuracy_ci_high": acc + 0.03,
                                     "chance": 0.5, "feature": "pooled", "best_epoch": 3, "epochs_run": 8,
                                     "val_accuracy": acc, "train_seconds": 1.0, "config_digest": "synthetic",
                                     "run_id": _rid(method, task, m, sd), "weights": "random:seed=0",
                                     "preprocess": "shorter_side:224", "method_config": "synthetic",
                                     "ci_unit": "items"})
    for h in range(n_humans):
        name = f"subject-{h + 1:02d}"
        for task in ("3dpc/vpt", "3dpc/depth"):
            items = [f"images/test/{task[5:]}/f{k:05d}.png" for k in range(n_human_items)]
            frames.append(_trials(name, "human", task, "human", items, rng.integers(0, 2, n_human_items).astype(str),
                                  rng.random(n_human_items) < 0.85))
        frames.append(_trials(name, "human", "3dpc/vpt_strategy", "strategy", strat_items, strat_labels,
                              rng.random(len(strat_items)) < np.where(np.tile(blocked_steps, n_scenes), 0.8, 0.9)))
    trials = conform(pd.concat(frames, ignore_index=True), "trials")
    return trials, conform(pd.DataFrame(summ), "summary"), zoo


def mvh_trials(models=("timm:model_a", "timm:model_b"), n_humans: int = 4, n_images: int = 32,
               seed: int = 0) -> pd.DataFrame:
    """Human and model trials on two model-vs-human datasets (``contrast`` with levels c100 ... c05, accuracy
    falling with contrast; ``cue-conflict`` with ids ``<shape>N-<texture>N``): humans answer cue-conflict by
    shape 90% of the time, model ``i`` by texture more often (shape 0.3 / (i + 1))."""
    rng = np.random.default_rng(seed)
    cats = np.array(MVH_CATEGORIES)
    frames = []
    levels = {"c100": 0.95, "c50": 0.9, "c10": 0.7, "c05": 0.45}
    obs = [(f"subject-{h + 1:02d}", "human", 0.0, 0.9) for h in range(n_humans)] + \
          [(m, "model", 0.1 * (i + 1), 0.3 / (i + 1)) for i, m in enumerate(models)]
    # the images are shared by every observer (error consistency aligns trials on them)
    lv_labels = {lvl: cats[rng.integers(0, 16, n_images)] for lvl in levels}
    shape = cats[rng.integers(0, 16, n_images)]
    texture = cats[(np.searchsorted(cats, shape) + rng.integers(1, 16, n_images)) % 16]
    cc_items = [f"{s}{k}-{t}{k}" for k, (s, t) in enumerate(zip(shape, texture))]
    for name, kind, drop, p_shape in obs:
        for lvl, p in levels.items():
            labels = lv_labels[lvl]
            correct = rng.random(n_images) < max(p - drop * (1 - p) * 3, 1 / 16)
            resp = np.where(correct, labels, cats[(np.searchsorted(cats, labels) + 1) % 16])
            items = [f"{k:04d}_{c}_n0{k:07d}" for k, c in enumerate(labels)]
            frames.append(_trials(name, kind, "contrast", "test", items, labels, correct, conditions=lvl,
                                  responses=resp))
        resp = np.where(rng.random(n_images) < p_shape, shape, texture)
        frames.append(_trials(name, kind, "cue-conflict", "test", cc_items, shape, resp == shape, conditions="0",
                              responses=resp))
    return conform(pd.concat(frames, ignore_index=True), "trials")


def polygon_trials(models=("timm:model_a",), levels=(0.1, 0.3, 0.5, 0.7), n: int = 60, seed: int = 0,
                   task: str = "degraded_polygons/shape_class") -> pd.DataFrame:
    """Degraded-polygon trials (conditions ``whole``, ``corners_pX``, ``edges_pX``): accuracy 1 − level for
    corners and 1 − 1.2 × level for edges (the models' pattern in Tang & Ley, 2023)."""
    rng = np.random.default_rng(seed)
    frames = []
    conds = [("whole", 0.95)] + [(f"{v}_p{lv:.2f}", max(0.05, 1 - lv * (1.0 if v == "corners" else 1.2)))
                                 for lv in levels for v in ("corners", "edges")]
    for m in models:
        for cond, p in conds:
            labels = rng.choice(["triangle", "square", "pentagon"], n)
            correct = rng.random(n) < p
            resp = np.where(correct, labels, "hexagon")
            frames.append(_trials(m, "model", task, "test", [f"images/{cond}/{k:05d}.png" for k in range(n)],
                                  labels, correct, conditions=cond, responses=resp))
    return conform(pd.concat(frames, ignore_index=True), "trials")


def grating_trials(models=("timm:model_a",), intervals=(2, 4, 6, 8), directions=("horizontal", "vertical"),
                   n: int = 50, seed: int = 0, task: str = "abutting_digits/label") -> pd.DataFrame:
    """Abutting-grating trials (``<direction>_iNN`` and ``original``): accuracy falls with the interval."""
    rng = np.random.default_rng(seed)
    frames = []
    conds = [("original", 0.98)] + [(f"{d}_i{i:02d}", max(0.1, 0.9 - 0.08 * i)) for d in directions for i in intervals]
    for m in models:
        for cond, p in conds:
            labels = rng.integers(0, 10, n).astype(str)
            correct = rng.random(n) < p
            resp = np.where(correct, labels, "x")
            frames.append(_trials(m, "model", task, "test", [f"images/{cond}/{k:05d}.png" for k in range(n)],
                                  labels, correct, conditions=cond, responses=resp))
    return conform(pd.concat(frames, ignore_index=True), "trials")


def similarity_table(models=("timm:model_a",), n_layers: int = 5, n_pairs: int = 20, seed: int = 0) -> pd.DataFrame:
    """A similarity-judgment trial table (issue 15's shape): ``relational`` pairs further apart than
    ``coordinate`` pairs, the gap shrinking with depth."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        for li in range(n_layers):
            for cond, base in (("coordinate", 0.2), ("relational", 0.4 - 0.03 * li)):
                for p in range(n_pairs):
                    rows.append({"model_id": m, "task": "mindset/relational", "layer": f"layer{li}",
                                 "layer_depth": li / max(1, n_layers - 1), "set_id": f"set{p:03d}",
                                 "reference_level": "base", "condition": cond,
                                 "distance": base + 0.05 * rng.standard_normal()})
    return pd.DataFrame(rows)


def decoder_table(models=("timm:model_a",), layers=("stage2", "pooled"), n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Decoder regression predictions (issue 15's shape): Ebbinghaus disc size, unbiased on ``scrambled``,
    over-estimated by +0.1 with ``small_flankers`` and under-estimated by 0.1 with ``big_flankers``."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        for layer in layers:
            for cond, bias in (("scrambled", 0.0), ("small_flankers", 0.1), ("big_flankers", -0.1)):
                t = rng.uniform(0.2, 0.8, n)
                rows.append(pd.DataFrame({"model_id": m, "layer": layer, "condition": cond, "target": t,
                                          "prediction": t + bias + 0.03 * rng.standard_normal(n)}))
    return pd.concat(rows, ignore_index=True)
