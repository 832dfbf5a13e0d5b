"""Tidy tables for the figures, computed from the results tables (pure functions; no file access).

Inputs are the project's tables: the trial table and summary table of :mod:`eval.results` (humans and models
in one schema), the statistics tables of ``python -m eval stats`` (``observers``, ``error_consistency``,
``human_ceiling``, ``benchmark_mean``) and a zoo table (``model_id``, ``imagenet_top1``). Every function
returns a small DataFrame whose columns the figure functions document; nothing here draws.

Condition codes are parsed from the generators' names: 3D-PC Strategy images ``.../stepNN.png`` (step
position along the props' path, label 0 = ball blocked from the observer); degraded polygons
``corners_p0.30`` / ``edges_p0.30`` / ``whole`` (Tang & Ley, 2023); abutting gratings ``<direction>_iNN`` /
``original`` (Fan & Zeng, 2022); model-vs-human datasets as ``task`` = dataset and ``condition`` = level
(Geirhos et al., 2021), or Vantage's ``image_distortions`` datasets with ``condition`` = ``<distortion>_<level>``.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

STEP = re.compile(r"step(\d+)")
DEGRADED = re.compile(r"^(corners|edges)_p(\d+(?:\.\d+)?)$")
GRATING = re.compile(r"^(.+)_i(\d+)$")
THREEDPC_TASKS = ("3dpc/vpt", "3dpc/depth", "3dpc/vpt_strategy")


def pearson_ci(x, y, ci: float = 0.95) -> dict:
    """Pearson r of finite pairs with its confidence interval (Fisher z transform, scipy's
    ``PearsonRResult.confidence_interval``); NaN interval for fewer than 4 pairs."""
    from scipy import stats as st

    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"r": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": int(x.size)}
    res = st.pearsonr(x, y)
    lo, hi = (res.confidence_interval(ci) if x.size > 3 else (float("nan"), float("nan")))
    return {"r": float(res.statistic), "ci_low": float(lo), "ci_high": float(hi), "n": int(x.size)}


def bootstrap_mean_ci(values, n_boot: int = 2000, ci: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``values`` and its percentile bootstrap CI (resampling the values with replacement);
    a single value has a degenerate interval."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(v.mean()), float(lo), float(hi)


# ------------------------------------------------------------------------------------------------- 3D-PC


def model_accuracy(summary: pd.DataFrame, split: str, zoo: pd.DataFrame | None = None) -> pd.DataFrame:
    """Accuracy per (task, method, observer) on ``split`` (VPT-Strategy: its ``strategy`` split), the mean
    over seeds; with ``zoo``, the model's
    ImageNet top-1 (%) as ``imagenet_top1`` (NaN when the zoo does not list it). Columns ``task, method,
    observer, model_id, accuracy, seeds[, imagenet_top1]``. Runs of one model id with different identities
    stay apart (``eval.results.label_runs``)."""
    from ..results import label_runs

    if summary.empty:
        return pd.DataFrame(columns=["task", "method", "observer", "model_id", "accuracy", "seeds"])
    s, _ = label_runs(summary.assign(observer_type="model"))
    s = s[(s["split"] == split) | (s["split"] == "strategy")]  # VPT-Strategy is evaluated on its own split
    out = s.groupby(["task", "method", "observer", "model_id"], as_index=False).agg(
        accuracy=("accuracy", "mean"), seeds=("seed", "nunique"))
    if zoo is not None and "imagenet_top1" in zoo:
        out = out.merge(zoo[["model_id", "imagenet_top1"]].drop_duplicates("model_id"), on="model_id", how="left")
    return out


def human_accuracy(trials: pd.DataFrame, ci: float = 0.95, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per task: the mean over human observers of each one's accuracy, with a bootstrap CI over observers.
    Columns ``task, accuracy, ci_low, ci_high, observers``; empty without human trials."""
    h = trials[trials["observer_type"] == "human"]
    rows = []
    for task, g in h.groupby("task", sort=True):
        per = g.groupby("observer")["correct"].mean().astype(float)
        m, lo, hi = bootstrap_mean_ci(per, n_boot, ci, seed)
        rows.append({"task": task, "accuracy": m, "ci_low": lo, "ci_high": hi, "observers": len(per)})
    return pd.DataFrame(rows, columns=["task", "accuracy", "ci_low", "ci_high", "observers"])


def noise_floor(observers: pd.DataFrame | None, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per task the level a model reaches by chance: the mean over model observers of the 95th percentile of
    their label-permutation accuracy (``observers.noise_floor_p95``, from ``eval stats``), or, without it,
    the summary's ``chance`` (1 / classes). Columns ``task, noise_floor, kind`` (``permutation_p95`` or
    ``chance``)."""
    parts = []
    if observers is not None and not observers.empty and "noise_floor_p95" in observers:
        m = observers[observers["observer_type"] == "model"]
        if not m.empty:
            g = m.groupby("task", as_index=False)["noise_floor_p95"].mean()
            parts.append(g.rename(columns={"noise_floor_p95": "noise_floor"}).assign(kind="permutation_p95"))
    if summary is not None and not summary.empty:  # tasks the statistics did not cover (e.g. another split)
        g = summary.groupby("task", as_index=False)["chance"].mean()
        parts.append(g.rename(columns={"chance": "noise_floor"}).assign(kind="chance"))
    if not parts:
        return pd.DataFrame(columns=["task", "noise_floor", "kind"])
    return pd.concat(parts, ignore_index=True).drop_duplicates("task", keep="first").reset_index(drop=True)


def strategy_steps(trials: pd.DataFrame, task: str = "3dpc/vpt_strategy", ci: float = 0.95,
                   seed: int = 0) -> pd.DataFrame:
    """VPT-Strategy accuracy per step position (the ``stepNN`` of the image name), per observer (models: mean
    over scenes and seeds; humans: each observer) plus ``blocked_fraction``, the share of that step's images
    whose label is 0 (ball hidden from the observer), which traces the clear -> blocked -> clear pattern.
    Columns ``observer, observer_type, step, accuracy, n, blocked_fraction``."""
    t = trials[trials["task"] == task]
    cols = ["observer", "observer_type", "step", "accuracy", "n", "blocked_fraction"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    step = t["item_id"].astype(str).str.extract(STEP, expand=False)
    t = t.assign(step=pd.to_numeric(step, errors="coerce")).dropna(subset=["step"])
    t = t.assign(step=t["step"].astype(int), blocked=(t["label"].astype(str) == "0"),
                 correct=t["correct"].astype(bool))
    blocked = t.drop_duplicates(["item_id"]).groupby("step")["blocked"].mean()
    out = t.groupby(["observer", "observer_type", "step"], as_index=False).agg(
        accuracy=("correct", "mean"), n=("correct", "size"))
    out["blocked_fraction"] = out["step"].map(blocked).astype(float)
    return out[cols]


def consistency_by_model(ec: pd.DataFrame | None) -> pd.DataFrame:
    """Mean κ of each model observer with the human observers, per task and method (over humans and seeds):
    ``task, method, observer, kappa, humans`` (``method`` = ``""`` when the table has none)."""
    if ec is None or ec.empty:
        return pd.DataFrame(columns=["task", "method", "observer", "kappa", "humans"])
    ec = ec if "method" in ec else ec.assign(method="")
    return ec.groupby(["task", "method", "observer"], as_index=False).agg(kappa=("kappa", "mean"),
                                                                          humans=("human", "nunique"))


# ----------------------------------------------------------------------------------------- model-vs-human


def distortion_levels(trials: pd.DataFrame) -> pd.DataFrame:
    """``trials`` with ``dataset`` and ``level``: Vantage's ``image_distortions/<target>`` trials split
    their condition ``<distortion>_<level>``; any other task is its own dataset (the part before ``/``) with
    the condition as level."""
    ds = trials["task"].astype(str).str.split("/").str[0]
    cond = trials["condition"].fillna("").astype(str)
    ours = (ds == "image_distortions") & cond.str.contains("_")
    parts = cond.str.split("_", n=1)
    dataset = ds.where(~ours, parts.str[0])
    level = cond.where(~ours, parts.str[1])
    return trials.assign(dataset=dataset.to_numpy(), level=level.to_numpy())


def task_chance(trials: pd.DataFrame, summary: pd.DataFrame | None = None) -> dict[str, float]:
    """Chance accuracy per task, 1 / number of classes: the runs' own ``chance`` from ``summary`` (the class
    count each run decided among, e.g. 1/2 for a two-class decoder), else 1/16 when every label is one of
    the 16 model-vs-human categories (its 16-way decision), else 1 / the number of distinct labels."""
    from tasks.imagenet16 import categories

    out = {}
    if summary is not None and not summary.empty and "chance" in summary:
        ch = summary.groupby("task")["chance"].mean()
        out = {str(k): float(v) for k, v in ch.items() if np.isfinite(v)}
    sixteen = set(categories())
    for task, labels in trials.groupby("task")["label"]:
        if str(task) in out:
            continue
        names = set(labels.dropna().astype(str))
        if names:
            out[str(task)] = 1 / 16 if names <= sixteen else 1 / len(names)
    return out


def level_accuracy(trials: pd.DataFrame, chance: dict[str, float] | None = None) -> pd.DataFrame:
    """Accuracy per (dataset, level, observer) for trials that carry a condition: models pooled over seeds,
    each human separately. Columns ``dataset, level, observer, observer_type, accuracy, n, chance`` (per
    dataset: the mean of its tasks' ``chance``, default :func:`task_chance` of ``trials``)."""
    cols = ["dataset", "level", "observer", "observer_type", "accuracy", "n", "chance"]
    t = distortion_levels(trials[trials["condition"].fillna("").astype(str) != ""])
    if t.empty:
        return pd.DataFrame(columns=cols)
    chance = task_chance(t) if chance is None else chance
    per_dataset = t[["task", "dataset"]].drop_duplicates().assign(
        chance=lambda d: d["task"].astype(str).map(chance)).groupby("dataset")["chance"].mean()
    t = t.assign(correct=t["correct"].astype(bool))
    out = t.groupby(["dataset", "level", "observer", "observer_type"], as_index=False).agg(
        accuracy=("correct", "mean"), n=("correct", "size"))
    return out.assign(chance=out["dataset"].map(per_dataset).astype(float))[cols]


def level_consistency(trials: pd.DataFrame) -> pd.DataFrame:
    """Error consistency κ per (dataset, level): each model observer's mean κ with every human, and the
    human-human mean over pairs (``observer = "humans"``), on the images both saw (Geirhos et al., 2020;
    ``eval.stats.error_consistency``). A model run per seed is one decision maker; its κ values are averaged
    over seeds. Columns ``dataset, level, observer, observer_type, kappa, pairs``."""
    from ..stats import error_consistency

    cols = ["dataset", "level", "observer", "observer_type", "kappa", "pairs"]
    t = distortion_levels(trials[trials["condition"].fillna("").astype(str) != ""])
    rows = []
    for (dataset, level), g in t.groupby(["dataset", "level"], sort=True):
        hum = g[g["observer_type"] == "human"]
        if hum.empty:
            continue
        g = g.assign(dm=np.where(g["observer_type"] == "human", g["observer"],
                                 g["observer"].astype(str) + "\x1f" + g["seed"].astype(str)))
        wide = g.pivot_table(index="item_id", columns="dm", values="correct", aggfunc="first")
        humans = sorted(hum["observer"].unique())

        def kappa(a, b):
            m = wide[[a, b]].dropna()
            return error_consistency(m[a].astype(bool), m[b].astype(bool))["kappa"] if len(m) else np.nan

        hh = [kappa(a, b) for i, a in enumerate(humans) for b in humans[i + 1:]]
        hh = [k for k in hh if np.isfinite(k)]
        if hh:
            rows.append({"dataset": dataset, "level": level, "observer": "humans", "observer_type": "human",
                         "kappa": float(np.mean(hh)), "pairs": len(hh)})
        models = g[g["observer_type"] == "model"]
        for obs, mg in models.groupby("observer"):
            ks = [kappa(dm, h) for dm in mg["dm"].unique() for h in humans]
            ks = [k for k in ks if np.isfinite(k)]
            if ks:
                rows.append({"dataset": dataset, "level": level, "observer": obs, "observer_type": "model",
                             "kappa": float(np.mean(ks)), "pairs": len(ks)})
    return pd.DataFrame(rows, columns=cols)


def benchmark_means(per_dataset: pd.DataFrame | None) -> pd.DataFrame:
    """The model-vs-human metrics averaged over the model-vs-human datasets only: the ``benchmark`` table of
    ``eval stats`` (one row per dataset × observer) without 3D-PC tasks (``eval stats`` with 3D-PC human data
    computes the same metrics there, but they are not OOD generalisation), averaged as
    ``eval.stats.benchmark_means`` does: ``datasets`` counts the datasets a mean covers, ``missing`` names
    the benchmark datasets it lacks."""
    from ..stats import benchmark_means as means_over_datasets

    cols = ["observer", "observer_type", "kappa", "c_obs", "acc_diff_sq", "ood_accuracy", "datasets", "missing"]
    if per_dataset is None or per_dataset.empty:
        return pd.DataFrame(columns=cols)
    t = per_dataset[~per_dataset["task"].astype(str).str.startswith("3dpc/")]
    if t.empty:
        return pd.DataFrame(columns=cols)
    return means_over_datasets(t if "aggregation" in t else t.assign(aggregation=""))[cols]


def _cue_conflict_cues(item_id: str) -> tuple[str, str]:
    """(shape, texture) categories of a cue-conflict image: its id ends in ``<shape><n>-<texture><n>``
    (e.g. ``bird3-clock2``, or a file name ``..._bird3-clock2.png``)."""
    stem = str(item_id).rsplit("/", 1)[-1].rsplit(".", 1)[0].rsplit("_", 1)[-1]
    if "-" not in stem:
        return "", ""
    shape, texture = stem.split("-", 1)
    return shape.rstrip("0123456789"), texture.rstrip("0123456789")


def shape_bias(trials: pd.DataFrame, dataset: str = "cue-conflict") -> pd.DataFrame:
    """Shape bias per (observer, shape category) on the cue-conflict images (Geirhos et al., 2019): among
    the trials answered with either the shape's or the texture's category, the fraction answered with the
    shape's; images whose shape and texture share a category are left out. Also one row per observer with
    ``category = "all"``. Columns ``observer, observer_type, category, shape_bias, n``."""
    cols = ["observer", "observer_type", "category", "shape_bias", "n"]
    t = distortion_levels(trials)
    t = t[t["dataset"] == dataset]
    if t.empty:
        return pd.DataFrame(columns=cols)
    cues = [_cue_conflict_cues(i) for i in t["item_id"]]
    t = t.assign(shape=[c[0] for c in cues], texture=[c[1] for c in cues])
    t = t[(t["shape"] != "") & (t["shape"] != t["texture"])]
    resp = t["response"].astype(str)
    t = t.assign(is_shape=resp == t["shape"], is_texture=resp == t["texture"])
    t = t[t["is_shape"] | t["is_texture"]]
    if t.empty:
        return pd.DataFrame(columns=cols)
    per = t.groupby(["observer", "observer_type", "shape"], as_index=False).agg(
        shape_bias=("is_shape", "mean"), n=("is_shape", "size")).rename(columns={"shape": "category"})
    allc = t.groupby(["observer", "observer_type"], as_index=False).agg(
        shape_bias=("is_shape", "mean"), n=("is_shape", "size")).assign(category="all")
    return pd.concat([per, allc], ignore_index=True)[cols]


# -------------------------------------------------------------------------------- polygons and gratings


def attach_conditions(trials: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """Fill empty ``condition`` cells from a generated dataset's annotation table (``file_name`` =
    the trial's ``item_id``): probe runs on generated datasets predict a column such as ``shape_class``
    and do not carry the condition themselves."""
    if "file_name" not in annotations or "condition" not in annotations:
        return trials
    cond = dict(zip(annotations["file_name"].astype(str), annotations["condition"].astype(str)))
    cur = trials["condition"].fillna("").astype(str)
    filled = trials["item_id"].astype(str).map(cond).fillna("")
    return trials.assign(condition=cur.where(cur != "", filled).astype("string"))


def degradation_accuracy(trials: pd.DataFrame, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Accuracy of degraded-polygon trials per (observer, variant, level): ``variant`` ``corners`` or
    ``edges``, ``level`` the removed perimeter proportion p_d; whole shapes appear at level 0 under both
    variants. CI: bootstrap over runs (seeds) when there are several, else over items.
    Columns ``observer, observer_type, variant, level, accuracy, ci_low, ci_high, n``."""
    cols = ["observer", "observer_type", "variant", "level", "accuracy", "ci_low", "ci_high", "n"]
    cond = trials["condition"].fillna("").astype(str)
    m = cond.str.extract(DEGRADED)
    whole = cond == "whole"
    keep = m[0].notna() | whole
    if not keep.any() or not m[0].notna().any():
        return pd.DataFrame(columns=cols)
    t = trials[keep].assign(variant=m[0][keep], level=pd.to_numeric(m[1][keep]).fillna(0.0),
                            correct=trials.loc[keep, "correct"].astype(bool))
    w = t[t["variant"].isna()]
    t = pd.concat([t[t["variant"].notna()], w.assign(variant="corners"), w.assign(variant="edges")])
    rows = []
    for (obs, kind, var, lvl), g in t.groupby(["observer", "observer_type", "variant", "level"], sort=True):
        unit = g.groupby("seed")["correct"].mean() if g["seed"].nunique() > 1 else g["correct"].astype(float)
        acc, lo, hi = bootstrap_mean_ci(unit, 1000, ci, seed)
        rows.append({"observer": obs, "observer_type": kind, "variant": var, "level": float(lvl),
                     "accuracy": float(g["correct"].mean()), "ci_low": lo, "ci_high": hi, "n": len(g)})
    return pd.DataFrame(rows, columns=cols)


def interval_accuracy(trials: pd.DataFrame) -> pd.DataFrame:
    """Accuracy of abutting-grating trials per (observer, direction, interval) (conditions
    ``<direction>_iNN``); the ungrated originals, when present, as ``direction = "original"``, interval 0.
    Columns ``observer, observer_type, direction, interval, accuracy, n``."""
    cols = ["observer", "observer_type", "direction", "interval", "accuracy", "n"]
    cond = trials["condition"].fillna("").astype(str)
    m = cond.str.extract(GRATING)
    orig = cond == "original"
    keep = m[0].notna() | orig
    if not m[0].notna().any():
        return pd.DataFrame(columns=cols)
    t = trials[keep].assign(direction=m[0][keep].fillna("original"),
                            interval=pd.to_numeric(m[1][keep]).fillna(0).astype(int),
                            correct=trials.loc[keep, "correct"].astype(bool))
    return t.groupby(["observer", "observer_type", "direction", "interval"], as_index=False).agg(
        accuracy=("correct", "mean"), n=("correct", "size"))[cols]


# ------------------------------------------------------------------------------------------------ MindSet

SIMILARITY_COLUMNS = ("observer", "layer", "layer_depth", "condition", "distance")
DECODER_COLUMNS = ("observer", "layer", "condition", "target", "prediction")


def similarity_summary(sim: pd.DataFrame, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Mean distance per (observer, condition, layer) with a bootstrap CI over the pairs (items) of a
    similarity-judgment trial table (issue 15: one row per pair × layer with ``observer`` (or ``model_id``),
    ``layer``, ``layer_depth`` (0 = input side, 1 = output side, or the layer's index), ``condition`` (the
    comparison level of the pair) and ``distance``). Columns ``observer, condition, layer, layer_depth,
    distance, ci_low, ci_high, n``."""
    sim = _observer_column(sim)
    missing = [c for c in SIMILARITY_COLUMNS if c not in sim]
    if missing:
        raise ValueError(f"similarity table: missing columns {missing}; it needs {list(SIMILARITY_COLUMNS)}")
    rows = []
    for (obs, cond, layer, depth), g in sim.groupby(["observer", "condition", "layer", "layer_depth"], sort=True):
        m, lo, hi = bootstrap_mean_ci(g["distance"], 1000, ci, seed)
        rows.append({"observer": obs, "condition": cond, "layer": layer, "layer_depth": float(depth),
                     "distance": m, "ci_low": lo, "ci_high": hi, "n": len(g)})
    return pd.DataFrame(rows, columns=["observer", "condition", "layer", "layer_depth", "distance", "ci_low",
                                       "ci_high", "n"])


def decoder_bias(pred: pd.DataFrame) -> pd.DataFrame:
    """Mean signed error (prediction − target) and RMSE per (observer, layer, condition) of a decoder's
    regression predictions (issue 15: ``observer``/``model_id``, ``layer``, ``condition``, ``target``,
    ``prediction``): the illusion's bias is the signed error of the illusory conditions. Columns
    ``observer, layer, condition, bias, rmse, n``."""
    pred = _observer_column(pred)
    missing = [c for c in DECODER_COLUMNS if c not in pred]
    if missing:
        raise ValueError(f"decoder prediction table: missing columns {missing}; it needs {list(DECODER_COLUMNS)}")
    e = pred.assign(err=pred["prediction"].astype(float) - pred["target"].astype(float))
    return e.groupby(["observer", "layer", "condition"], as_index=False).agg(
        bias=("err", "mean"), rmse=("err", lambda x: float(np.sqrt(np.mean(np.square(x))))), n=("err", "size"))


def _observer_column(df: pd.DataFrame) -> pd.DataFrame:
    if "observer" not in df and "model_id" in df:
        return df.assign(observer=df["model_id"])
    return df
