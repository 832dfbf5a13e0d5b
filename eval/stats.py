"""Statistics over trial tables (pure functions; every one tested against hand-computed cases).

Conventions: ``correct`` is a boolean per trial; CIs are percentile intervals at level ``ci``; every
resampling function takes an explicit ``seed``. Bootstrap CIs resample **n items with replacement** per
iteration (the released 3D-PC analysis drew a single index per iteration, which is a bug).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


class StatsError(ValueError):
    pass


def _bool(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == object:
        a = a.astype(bool)
    return a.astype(bool)


# --------------------------------------------------------------------------------------------------
# accuracy


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n: int


def accuracy(correct) -> float:
    c = _bool(correct)
    if c.size == 0:
        raise StatsError("accuracy of zero trials")
    return float(c.mean())


def _percentiles(samples: np.ndarray, ci: float) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(lo), float(hi)


def bootstrap_indices(n: int, n_boot: int, rng: np.random.Generator, chunk: int = 256):
    """Yield index arrays [b, n]: each row is one bootstrap sample of n items drawn with replacement."""
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        yield rng.integers(0, n, size=(b, n))


def accuracy_ci(correct, n_boot: int = 10_000, ci: float = 0.95, seed: int = 0) -> Estimate:
    """Accuracy with a bootstrap CI over items. The number of correct items in a resample of n items is
    Binomial(n, k/n) exactly, so the bootstrap is drawn that way (identical distribution, no n×B array)."""
    c = _bool(correct)
    n = c.size
    acc = accuracy(c)
    rng = np.random.default_rng(seed)
    samples = rng.binomial(n, acc, size=n_boot) / n
    return Estimate(acc, *_percentiles(samples, ci), n)


def balanced_accuracy(labels, responses) -> float:
    """Mean over the classes present in ``labels`` of the fraction of that class answered correctly."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    if labels.size == 0:
        raise StatsError("balanced accuracy of zero trials")
    classes = np.unique(labels)
    return float(np.mean([np.mean(responses[labels == k] == k) for k in classes]))


def balanced_accuracy_ci(labels, responses, n_boot: int = 10_000, ci: float = 0.95, seed: int = 0) -> Estimate:
    """Balanced accuracy with a bootstrap CI over items. Balanced accuracy depends only on the counts of
    (class, correct) cells, and resampling n items with replacement gives those counts a multinomial
    distribution with the observed cell frequencies, so the bootstrap draws the counts directly
    (``balanced_accuracy_ci_indices`` is the plain twin the tests compare against)."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    n = labels.size
    value = balanced_accuracy(labels, responses)
    classes, lab_idx = np.unique(labels, return_inverse=True)
    k = len(classes)
    cell = lab_idx * 2 + (responses == labels)  # 2c = wrong in class c, 2c+1 = right
    p = np.bincount(cell, minlength=2 * k) / n
    counts = np.random.default_rng(seed).multinomial(n, p, size=n_boot).reshape(n_boot, k, 2)
    tot = counts.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(tot > 0, counts[:, :, 1] / tot, np.nan)
    samples = np.nanmean(recall, axis=1)
    return Estimate(value, *_percentiles(samples, ci), n)


def balanced_accuracy_ci_indices(labels, responses, n_boot: int = 10_000, ci: float = 0.95,
                                 seed: int = 0) -> Estimate:
    """The plain bootstrap: draw n item indices with replacement per iteration, recompute."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    n = labels.size
    value = balanced_accuracy(labels, responses)
    classes, lab_idx = np.unique(labels, return_inverse=True)
    hit = (responses == labels).astype(np.float64)
    rng = np.random.default_rng(seed)
    out = []
    for idx in bootstrap_indices(n, n_boot, rng):
        li = lab_idx[idx]
        hi = hit[idx]
        recalls = []
        for k in range(len(classes)):
            m = li == k
            cnt = m.sum(axis=1)
            recalls.append(np.where(cnt > 0, (hi * m).sum(axis=1) / np.maximum(cnt, 1), np.nan))
        out.append(np.nanmean(np.stack(recalls, axis=1), axis=1))
    return Estimate(value, *_percentiles(np.concatenate(out), ci), n)


def _cluster_cells(labels, responses, clusters):
    """Per-cluster counts of (class, correct) cells: ``[C, 2k]`` (column 2c = wrong in class c, 2c+1 = right)."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    _, lab_idx = np.unique(labels, return_inverse=True)
    _, cl_idx = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    k, c = int(lab_idx.max()) + 1, int(cl_idx.max()) + 1
    cell = lab_idx * 2 + (responses == labels)
    return np.bincount(cl_idx * 2 * k + cell, minlength=c * 2 * k).reshape(c, 2 * k).astype(np.float64)


def _acc_bal_from_cells(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and balanced accuracy of cell counts ``[..., 2k]``."""
    right, wrong = cells[..., 1::2], cells[..., 0::2]
    tot = right + wrong
    acc = right.sum(-1) / tot.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(tot > 0, right / tot, np.nan)
    return acc, np.nanmean(recall, axis=-1)


def cluster_bootstrap_ci(labels, responses, clusters, n_boot: int = 10_000, ci: float = 0.95,
                         seed: int = 0) -> tuple[Estimate, Estimate]:
    """Accuracy and balanced accuracy with a cluster bootstrap CI: each resample draws as many clusters as
    there are, with replacement, and keeps all items of each drawn cluster (for items that share their
    label source, e.g. the frames of one 3D-PC placement (scene, setting), which are not independent).
    Both statistics depend only on per-cluster (class, correct) counts, and the multiplicities of C clusters
    drawn with replacement are Multinomial(C, 1/C), so the resampled counts are ``weights @ cells``
    (:func:`cluster_bootstrap_ci_indices` is the plain twin). ``n`` of the estimates is the item count."""
    cells = _cluster_cells(labels, responses, clusters)
    n_cl = cells.shape[0]
    acc0, bal0 = _acc_bal_from_cells(cells.sum(0))
    rng = np.random.default_rng(seed)
    accs, bals = [], []
    for start in range(0, n_boot, 512):
        w = rng.multinomial(n_cl, np.full(n_cl, 1.0 / n_cl), size=min(512, n_boot - start)).astype(np.float64)
        a, b = _acc_bal_from_cells(w @ cells)
        accs.append(a)
        bals.append(b)
    n = int(cells.sum())
    return (Estimate(float(acc0), *_percentiles(np.concatenate(accs), ci), n),
            Estimate(float(bal0), *_percentiles(np.concatenate(bals), ci), n))


def cluster_bootstrap_ci_indices(labels, responses, clusters, n_boot: int = 10_000, ci: float = 0.95,
                                 seed: int = 0) -> tuple[Estimate, Estimate]:
    """The plain cluster bootstrap: draw cluster indices with replacement, gather their items, recompute."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    names, cl_idx = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    members = [np.flatnonzero(cl_idx == i) for i in range(len(names))]
    rng = np.random.default_rng(seed)
    accs, bals = [], []
    for _ in range(n_boot):
        idx = np.concatenate([members[i] for i in rng.integers(0, len(names), len(names))])
        accs.append(np.mean(responses[idx] == labels[idx]))
        bals.append(balanced_accuracy(labels[idx], responses[idx]))
    n = labels.size
    return (Estimate(accuracy(responses == labels), *_percentiles(np.array(accs), ci), n),
            Estimate(balanced_accuracy(labels, responses), *_percentiles(np.array(bals), ci), n))


def accuracy_summary(trials: pd.DataFrame, n_boot: int, ci: float, seed: int) -> dict:
    """Count, accuracy and balanced accuracy with bootstrap CIs of one observer's trials (columns ``correct``,
    ``label``, ``response``; optional ``cluster``): the columns the summary and observer tables share. When
    every trial has a ``cluster``, the CIs resample clusters (:func:`cluster_bootstrap_ci`), else items;
    ``ci_unit`` says which."""
    clusters = trials["cluster"].fillna("").astype(str) if "cluster" in trials else None
    if clusters is not None and len(clusters) and (clusters != "").all():
        acc, bal = cluster_bootstrap_ci(trials["label"], trials["response"], clusters, n_boot, ci, seed)
        unit = f"clusters ({clusters.nunique()})"
    else:
        acc = accuracy_ci(trials["correct"], n_boot, ci, seed)
        bal = balanced_accuracy_ci(trials["label"], trials["response"], n_boot, ci, seed)
        unit = "items"
    return {"n": acc.n, "accuracy": acc.value, "accuracy_ci_low": acc.ci_low, "accuracy_ci_high": acc.ci_high,
            "balanced_accuracy": bal.value, "balanced_accuracy_ci_low": bal.ci_low,
            "balanced_accuracy_ci_high": bal.ci_high, "ci_unit": unit}


# --------------------------------------------------------------------------------------------------
# error consistency (Geirhos et al., 2020)


def error_consistency(correct_a, correct_b) -> dict:
    """Cohen's kappa on trial-by-trial correctness: ``(c_obs - c_exp) / (1 - c_exp)`` with
    ``c_exp = p_a p_b + (1-p_a)(1-p_b)``. κ = 1 when ``c_obs == 1`` (model-vs-human's rule, Geirhos et al.,
    2020/2021; this also covers ``c_exp == 1``, which implies ``c_obs == 1``). Also returns the squared
    accuracy difference ``acc_diff_sq = (p_a - p_b)^2`` (model-vs-human's "accuracy difference")."""
    a, b = _bool(correct_a), _bool(correct_b)
    if a.shape != b.shape or a.size == 0:
        raise StatsError(f"error consistency needs two equal, non-empty trial vectors (got {a.size} and {b.size})")
    c_obs = float(np.mean(a == b))
    pa, pb = float(a.mean()), float(b.mean())
    c_exp = pa * pb + (1 - pa) * (1 - pb)
    kappa = 1.0 if c_obs == 1.0 else (c_obs - c_exp) / (1 - c_exp)
    return {"kappa": kappa, "c_obs": c_obs, "c_exp": c_exp, "acc_diff_sq": (pa - pb) ** 2, "n": int(a.size)}


def align(trials: pd.DataFrame, observer_a: str, observer_b: str, keys=("item_id", "condition"),
          allow_empty: bool = False) -> pd.DataFrame:
    """Trials of two observers joined on the image (and condition): columns ``correct_a``, ``correct_b``."""
    keys = [k for k in keys if k in trials.columns]
    a = trials[trials["observer"] == observer_a]
    b = trials[trials["observer"] == observer_b]
    for name, t in ((observer_a, a), (observer_b, b)):
        if t.empty:
            raise StatsError(f"observer {name!r} has no trials")
        if t.duplicated(keys).any():
            raise StatsError(f"observer {name!r} has repeated trials for the same {keys}; filter to one run first")
    m = a[keys + ["correct"]].merge(b[keys + ["correct"]], on=keys, suffixes=("_a", "_b"))
    if m.empty and not allow_empty:
        raise StatsError(f"observers {observer_a!r} and {observer_b!r} share no images")
    return m


def error_consistency_between(trials: pd.DataFrame, observer_a: str, observer_b: str) -> dict:
    m = align(trials, observer_a, observer_b)
    return error_consistency(m["correct_a"], m["correct_b"])


def pairwise_error_consistency(trials: pd.DataFrame, observers_a=None, observers_b=None,
                               skip_disjoint: bool = False) -> pd.DataFrame:
    """κ for every pair (a in ``observers_a``, b in ``observers_b``; default all pairs of observers).
    ``skip_disjoint`` leaves out pairs that share no images instead of raising."""
    obs = sorted(trials["observer"].unique())
    if observers_a is None and observers_b is None:
        pairs = list(itertools.combinations(obs, 2))
    else:
        pairs = [(a, b) for a in (observers_a or obs) for b in (observers_b or obs) if a != b]
    rows = []
    for a, b in pairs:
        m = align(trials, a, b, allow_empty=skip_disjoint)
        if m.empty:
            continue
        r = error_consistency(m["correct_a"], m["correct_b"])
        rows.append({"observer_a": a, "observer_b": b, **r})
    return pd.DataFrame(rows, columns=["observer_a", "observer_b", "kappa", "c_obs", "c_exp", "n"])


def human_ceiling(trials: pd.DataFrame) -> dict:
    """Mean κ over all pairs of human observers (the human–human consistency ceiling)."""
    humans = sorted(trials.loc[trials["observer_type"] == "human", "observer"].unique())
    if len(humans) < 2:
        raise StatsError("the human-human ceiling needs at least two human observers")
    pw = pairwise_error_consistency(trials[trials["observer"].isin(humans)])
    return {"kappa_mean": float(pw["kappa"].mean()), "kappa_std": float(pw["kappa"].std(ddof=1)) if len(pw) > 1
            else float("nan"), "pairs": len(pw)}


def model_vs_humans(trials: pd.DataFrame, model: str, skip_disjoint: bool = False) -> pd.DataFrame:
    """κ between ``model`` and each human observer."""
    humans = sorted(trials.loc[trials["observer_type"] == "human", "observer"].unique())
    if not humans:
        raise StatsError("no human observers in the trial table")
    return pairwise_error_consistency(trials, [model], humans, skip_disjoint)


# --------------------------------------------------------------------------------------------------
# model-vs-human's aggregation (Geirhos et al., 2021, "Partial success in closing the gap")

AGGREGATIONS = ("model-vs-human", "pooled")
"""``model-vs-human``: drop the dataset's excluded conditions (``eval/data/mvh_excluded_conditions.yaml``),
compute each metric per condition for a pair of observers, average over conditions, then over pairs, then
over datasets — model-vs-human's ``get_raw_benchmark_df`` + ``format_benchmark_df``. ``pooled``: one value
per pair over all of a dataset's trials, nothing excluded (this project's earlier aggregation; kept by name
for comparison — it inflates κ, e.g. 0.518 instead of 0.431 for the human-human mean)."""


def condition_code(code) -> str:
    """One canonical form for a condition code, so model-vs-human's codes (read by pandas: ``"0.0"``,
    ``"True"``) match the raw CSV strings (``"0.00"``, ``"true"``): numbers as Python floats, text lower-case."""
    text = str(code).strip()
    try:
        return repr(float(text))
    except ValueError:
        return text.lower()


def condition_code_index(values) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, canon)``: ``canon`` the sorted distinct :func:`condition_code` forms (object array of str),
    ``codes`` each element's index into it. Computed once per distinct value: a sweep's trial table has
    millions of rows and a handful of conditions."""
    raw, uniques = pd.factorize(pd.Series(values, copy=False))
    mapped = np.empty(len(uniques) + 1, dtype=object)
    mapped[:] = [condition_code(u) for u in uniques] + [condition_code(pd.NA)]  # code -1 (missing): the last
    canon, inverse = np.unique(mapped, return_inverse=True)
    return inverse.reshape(-1)[raw], canon


def condition_codes(values) -> np.ndarray:
    """:func:`condition_code` of every element (an object array of str), computed once per distinct value."""
    codes, canon = condition_code_index(values)
    return canon[codes]


def _item_codes(values) -> np.ndarray:
    """Integer codes of ``item_id`` values (equal ids, equal codes; a missing id is one more code)."""
    codes = pd.factorize(pd.Series(values, copy=False))[0].astype(np.int64)
    return np.where(codes < 0, codes.max(initial=-1) + 1, codes)


def _mvh_conditions_data() -> dict:
    from importlib.resources import files

    import yaml

    return yaml.safe_load(files("eval").joinpath("data", "mvh_excluded_conditions.yaml").read_text())


def excluded_conditions(aggregation: str = "model-vs-human") -> dict[str, set[str]]:
    """``{dataset: {canonical condition code, ...}}`` excluded under ``aggregation`` (empty for pooled)."""
    if aggregation not in AGGREGATIONS:
        raise StatsError(f"aggregation={aggregation!r}: allowed {', '.join(AGGREGATIONS)}")
    if aggregation == "pooled":
        return {}
    return {k: {condition_code(c) for c in v} for k, v in _mvh_conditions_data()["excluded"].items()}


SINGLE_CONDITION_CODE = "0"  # the code the human files of those datasets carry


def single_condition_datasets() -> frozenset[str]:
    """model-vs-human's datasets without an experiment (cue-conflict, edge, silhouette, sketch, stylized;
    ``eval/data/mvh_excluded_conditions.yaml``): its analysis ignores their ``condition`` column and pairs
    trials by image alone, so every statistic here treats each of them as one condition
    (:data:`SINGLE_CONDITION_CODE`), under either aggregation. (Its released CSVs carry ``NaN`` for models
    and ``0`` for humans there: joined on the column, no model trial found its human partner.)"""
    return frozenset(_mvh_conditions_data()["single_condition"])


def one_condition(trials: pd.DataFrame) -> pd.DataFrame:
    """``trials`` with the condition of every :func:`single_condition_datasets` row set to
    :data:`SINGLE_CONDITION_CODE` (the plain form of what :func:`task_groups` does with codes)."""
    single = trials["task"].isin(single_condition_datasets())
    if not single.any():
        return trials
    cond = trials["condition"].astype("string").where(~single, SINGLE_CONDITION_CODE)
    return trials.assign(condition=cond)


def _decision_makers(trials: pd.DataFrame) -> dict[str, pd.Series]:
    """``{observer: correct indexed by (canonical condition, item_id)}``; repeated trials are an error."""
    out = {}
    for obs, g in trials.groupby("observer", sort=True):
        idx = pd.MultiIndex.from_arrays([condition_codes(g["condition"]), g["item_id"].to_numpy()])
        s = pd.Series(_bool(g["correct"]), index=idx)
        if idx.has_duplicates:
            raise StatsError(f"observer {obs!r} has repeated trials for the same (condition, item_id); results "
                             "of different runs (seeds, weights, methods) must be told apart before comparing")
        out[obs] = s
    return out


def pair_metrics(a: pd.Series, b: pd.Series, aggregation: str = "model-vs-human") -> dict:
    """κ, observed consistency and squared accuracy difference of two observers (``correct`` Series indexed
    by (condition, item_id), conditions already filtered), on their shared trials. ``model-vs-human``: per
    condition, then the mean over conditions; ``pooled``: over all shared trials at once."""
    common = a.index.intersection(b.index)
    if len(common) == 0:
        return {"kappa": float("nan"), "c_obs": float("nan"), "acc_diff_sq": float("nan"), "n": 0, "conditions": 0}
    x, y = a.loc[common].to_numpy(), b.loc[common].to_numpy()
    if aggregation == "pooled":
        r = error_consistency(x, y)
        return {"kappa": r["kappa"], "c_obs": r["c_obs"], "acc_diff_sq": r["acc_diff_sq"], "n": r["n"],
                "conditions": int(common.get_level_values(0).nunique())}
    _, cond = np.unique(common.get_level_values(0).to_numpy(), return_inverse=True)
    n = np.bincount(cond).astype(float)
    pa = np.bincount(cond, weights=x) / n
    pb = np.bincount(cond, weights=y) / n
    c_obs = np.bincount(cond, weights=(x == y)) / n
    c_exp = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(c_obs == 1.0, 1.0, (c_obs - c_exp) / (1 - c_exp))
    return {"kappa": float(kappa.mean()), "c_obs": float(c_obs.mean()), "acc_diff_sq": float(((pa - pb) ** 2).mean()),
            "n": int(n.sum()), "conditions": int(n.size)}


def pair_metrics_reference(trials: pd.DataFrame, a: str, b: str, aggregation: str = "model-vs-human") -> dict:
    """The plain twin of :func:`pair_metrics` (one ``align`` + ``error_consistency`` per condition)."""
    m = align(trials, a, b, allow_empty=True)
    if aggregation == "pooled":
        return error_consistency(m["correct_a"], m["correct_b"])
    rows = [error_consistency(g["correct_a"], g["correct_b"]) for _, g in m.groupby("condition")]
    return {k: float(np.mean([r[k] for r in rows])) for k in ("kappa", "c_obs", "acc_diff_sq")}


PAIR_METRICS = ("kappa", "c_obs", "acc_diff_sq")


def repeated_trials_check(dm: np.ndarray, names, cond: np.ndarray, item: np.ndarray) -> None:
    """Raise :class:`StatsError` naming the first decision maker (lowest code in ``dm``) with two trials of
    the same (condition, item_id) — the check :func:`_decision_makers` makes, over all rows at once.
    ``cond`` and ``item`` are integer codes (:func:`condition_code_index`, :func:`_item_codes`)."""
    ci, ii = np.asarray(cond, dtype=np.int64), np.asarray(item, dtype=np.int64)
    key = (dm.astype(np.int64) * (ci.max(initial=0) + 1) + ci) * (ii.max(initial=0) + 1) + ii
    dup = pd.Series(key).duplicated().to_numpy()
    if dup.any():
        obs = names[int(dm[dup].min())]
        raise StatsError(f"observer {obs!r} has repeated trials for the same (condition, item_id); results "
                         "of different runs (seeds, weights, methods) must be told apart before comparing")


def pair_counts(dm: np.ndarray, n_dm: int, cond: np.ndarray, item: np.ndarray, correct: np.ndarray,
                b: np.ndarray) -> dict:
    """Trial counts of every decision maker (rows ``dm`` = 0..n_dm-1; -1 = none) against each decision maker
    in ``b`` on their shared (condition, item_id) trials, per condition ``b`` has (sorted): ``n`` (shared
    trials), ``right_a``, ``right_b`` (right answers of each side on them) and ``agree`` (both right or both
    wrong), arrays ``[n_dm, len(b), conditions]`` of exact integer counts (float64; sums of 0/1 products).
    Only the items some ``b`` has can be shared, so the observer × trial matrices keep only those columns.
    ``cond`` are integer codes in the sorted order of the canonical condition codes
    (:func:`condition_code_index`), ``item`` integer codes of the item ids (:func:`_item_codes`)."""
    cc, ii = np.asarray(cond, dtype=np.int64), np.asarray(item, dtype=np.int64)
    n_items = int(ii.max(initial=0)) + 1
    key = cc * n_items + ii
    in_b = np.isin(dm, b)
    cols = np.unique(key[in_b])
    pos = np.minimum(np.searchsorted(cols, key), max(len(cols) - 1, 0))
    use = (dm >= 0) & (len(cols) > 0)
    if len(cols):
        use &= cols[pos] == key
    present = np.zeros((n_dm, len(cols)), dtype=bool)
    right = np.zeros((n_dm, len(cols)), dtype=bool)
    present[dm[use], pos[use]] = True
    right[dm[use], pos[use]] = correct[use]
    col_cond = cols // n_items
    kept = np.unique(col_cond)  # the conditions some b has, in sorted order
    out = {k: np.zeros((n_dm, len(b), len(kept))) for k in ("n", "right_a", "right_b", "agree")}
    for c, code in enumerate(kept):
        sel = col_cond == code
        p = present[:, sel].astype(np.float64)
        r = (present[:, sel] & right[:, sel]).astype(np.float64)
        w = p - r
        pb, rb, wb = p[b].T, r[b].T, w[b].T
        out["n"][:, :, c] = p @ pb
        out["right_a"][:, :, c] = r @ pb
        out["right_b"][:, :, c] = p @ rb
        out["agree"][:, :, c] = r @ rb + w @ wb
    return out


def pair_values(counts: dict, aggregation: str = "model-vs-human") -> dict:
    """:func:`pair_metrics` of every pair of :func:`pair_counts`: ``kappa``, ``c_obs``, ``acc_diff_sq`` (NaN
    where a pair shares no trial), ``n`` and ``conditions``, arrays ``[n_dm, len(b)]``. The same arithmetic
    in the same order as :func:`pair_metrics`, so the values are equal to the last bit."""
    n, ra, rb, ag = counts["n"], counts["right_a"], counts["right_b"], counts["agree"]
    present = n > 0
    out = {"n": n.sum(-1).astype(np.int64), "conditions": present.sum(-1).astype(np.int64)}
    with np.errstate(divide="ignore", invalid="ignore"):
        if aggregation == "pooled":
            n, ra, rb, ag = n.sum(-1), ra.sum(-1), rb.sum(-1), ag.sum(-1)
        pa, pb, c_obs = ra / n, rb / n, ag / n
        c_exp = pa * pb + (1 - pa) * (1 - pb)
        kappa = np.where(c_obs == 1.0, 1.0, (c_obs - c_exp) / (1 - c_exp))
    vals = {"kappa": kappa, "c_obs": c_obs, "acc_diff_sq": (pa - pb) ** 2}
    if aggregation == "pooled":
        return {**{k: np.where(out["n"] > 0, v, np.nan) for k, v in vals.items()}, **out}
    full = present.all(-1)
    for k, v in vals.items():
        m = np.full(full.shape, np.nan)
        m[full] = v[full].mean(-1)  # a row per pair: the 1-D mean pair_metrics takes
        for i, j in zip(*np.nonzero(~full & (out["n"] > 0))):
            m[i, j] = v[i, j][present[i, j]].mean()
        out[k] = m
    return out


def task_groups(trials: pd.DataFrame, used: list[str], excl: dict):
    """Per task (sorted), the trials with human observers: ``(task, rows, condition codes, is_human)`` after
    dropping the conditions ``excl[task]`` lists; ``rows`` holds only the columns ``used`` (each group is a
    copy); tasks without any human trial are skipped. The common first step of the all-pairs tables. The
    trials of a :func:`single_condition_datasets` dataset are all one condition, whatever the column says."""
    single = single_condition_datasets()
    for task, t in trials[used].groupby("task", sort=True):
        if task in single:
            cond, canon = np.zeros(len(t), dtype=np.int64), np.array([SINGLE_CONDITION_CODE], dtype=object)
        else:
            cond, canon = condition_code_index(t["condition"])
        drop = excl.get(task, set())
        if drop:
            keep = ~np.isin(canon, list(drop))[cond]
            t, cond = t[keep], cond[keep]
        is_h = (t["observer_type"] == "human").to_numpy(dtype=bool, na_value=False)
        if is_h.any():
            yield task, t, cond, is_h


def benchmark_tables(trials: pd.DataFrame, aggregation: str = "model-vs-human",
                     exclusions: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Model-vs-human's benchmark metrics per dataset (``task``) and their mean over datasets.

    For every dataset with at least one human: the human row (``observer = "humans"``: mean over all pairs of
    human observers) and one row per model observer (mean over that model's pairs with every human) of
    ``kappa``, ``c_obs``, ``acc_diff_sq`` (squared accuracy difference), plus ``ood_accuracy`` (accuracy
    of all the decision maker's trials in the kept conditions; humans pooled) and ``pairs``. Excluded
    conditions (``exclusions``; default: model-vs-human's list when ``aggregation="model-vs-human"``) are
    dropped before anything is computed; a :func:`single_condition_datasets` dataset is one condition.
    Returns ``(per_dataset, means)``; ``means`` (:func:`benchmark_means`) averages each metric over the
    datasets of the benchmark, as model-vs-human does over its 17: ``datasets`` says how many an observer's
    mean covers and ``missing`` names the benchmark datasets it lacks (no trials, or no metric: e.g. no image
    shared with a human), so a mean is never labelled with more datasets than it averages.

    Every pair of one dataset at once (:func:`pair_counts`: matrix products of observers × shared trials);
    :func:`benchmark_tables_reference` is the plain twin (one :func:`pair_metrics` per pair)."""
    if aggregation not in AGGREGATIONS:
        raise StatsError(f"aggregation={aggregation!r}: allowed {', '.join(AGGREGATIONS)}")
    excl = excluded_conditions(aggregation) if exclusions is None else exclusions
    rows = []
    used = ["task", "condition", "observer", "observer_type", "item_id", "correct"]
    for task, t, cond, is_h in task_groups(trials, used, excl):
        dm, names = pd.factorize(t["observer"], sort=True)  # -1: no observer (groupby would leave it out)
        names = [str(o) for o in names]
        ok = dm >= 0
        code = {o: k for k, o in enumerate(names)}
        correct = _bool(t["correct"])
        item = _item_codes(t["item_id"])
        repeated_trials_check(dm[ok], names, cond[ok], item[ok])
        humans = sorted(names[k] for k in np.unique(dm[is_h & ok]))
        h_idx = np.array([code[h] for h in humans])
        hpos = {h: k for k, h in enumerate(humans)}
        models = sorted(set(names) - set(humans))
        v = pair_values(pair_counts(dm, len(names), cond, item, correct, h_idx), aggregation)
        n_own = np.bincount(dm[ok], minlength=len(names))
        right_own = np.bincount(dm[ok], weights=correct[ok], minlength=len(names))
        groups = [("humans", "human", [(code[a], hpos[b]) for i, a in enumerate(humans) for b in humans[i + 1:]],
                   None)]
        groups += [(m, "model", [(code[m], hpos[h]) for h in humans], code[m]) for m in models]
        for name, kind, prs, own in groups:
            prs = [(i, j) for i, j in prs if v["n"][i, j]]
            mean = {k: float(np.mean([float(v[k][i, j]) for i, j in prs])) if prs else float("nan")
                    for k in PAIR_METRICS}
            if own is None:
                n_tr, acc = int(is_h.sum()), accuracy(correct[is_h])
            else:
                n_tr, acc = int(n_own[own]), float(right_own[own] / n_own[own])
            rows.append({"task": task, "observer": name, "observer_type": kind, **mean,
                         "ood_accuracy": acc, "pairs": len(prs), "trials": n_tr, "aggregation": aggregation})
    return _benchmark_frames(rows)


def _benchmark_frames(rows: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = ["task", "observer", "observer_type", "kappa", "c_obs", "acc_diff_sq", "ood_accuracy", "pairs",
            "trials", "aggregation"]
    per = pd.DataFrame(rows, columns=cols)
    return per, benchmark_ranks(benchmark_means(per))


def benchmark_means(per: pd.DataFrame) -> pd.DataFrame:
    """One row per (observer, observer type, aggregation) of the per-dataset benchmark table ``per``: each
    metric averaged over the *benchmark datasets* the observer has all four metrics for; ``datasets`` = how
    many that is, ``missing`` = the benchmark datasets left out (comma-separated; empty when none). The
    benchmark datasets are those with model rows (all datasets of ``per`` when it has none), so the human row
    averages the datasets the models were compared on. Nothing is averaged silently over fewer datasets
    than reported: an observer without a metric on a dataset (no trials there, or no image shared with a
    human) has it listed in ``missing`` (:func:`benchmark_ranks` ranks only models with none missing)."""
    metrics = list(BENCHMARK_METRICS)
    keys = ["observer", "observer_type", "aggregation"]
    cols = keys + metrics + ["datasets", "missing"]
    if per.empty:
        return pd.DataFrame(columns=cols)
    model_tasks = per.loc[per["observer_type"] == "model", "task"]
    scope = set(model_tasks) if len(model_tasks) else set(per["task"])
    rows = []
    for key, g in per.groupby(keys, sort=False):
        g = g[g["task"].isin(scope)]
        ok = g[g[metrics].notna().all(axis=1)]
        rows.append({**dict(zip(keys, key)), **{m: float(ok[m].mean()) if len(ok) else float("nan") for m in metrics},
                     "datasets": int(ok["task"].nunique()),
                     "missing": ", ".join(sorted(scope - set(ok["task"].astype(str))))})
    return pd.DataFrame(rows, columns=cols)


def benchmark_tables_reference(trials: pd.DataFrame, aggregation: str = "model-vs-human",
                               exclusions: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The plain twin of :func:`benchmark_tables`: :func:`_decision_makers` and one :func:`pair_metrics` per
    pair (conditions mapped row by row)."""
    if aggregation not in AGGREGATIONS:
        raise StatsError(f"aggregation={aggregation!r}: allowed {', '.join(AGGREGATIONS)}")
    excl = excluded_conditions(aggregation) if exclusions is None else exclusions
    rows = []
    for task, t in one_condition(trials).groupby("task", sort=True):
        drop = excl.get(task, set())
        if drop:
            t = t[~t["condition"].map(condition_code).isin(drop)]
        hum_t = t[t["observer_type"] == "human"]
        if hum_t.empty:
            continue
        dms = _decision_makers(t)
        humans = sorted(hum_t["observer"].unique())
        models = sorted(set(dms) - set(humans))
        pairs = [(a, b) for i, a in enumerate(humans) for b in humans[i + 1:]]
        groups = [("humans", "human", pairs, hum_t)] + [
            (m, "model", [(m, h) for h in humans], t[t["observer"] == m]) for m in models]
        for name, kind, prs, own in groups:
            vals = [pair_metrics(dms[a], dms[b], aggregation) for a, b in prs]
            vals = [v for v in vals if v["n"]]
            mean = {k: float(np.mean([v[k] for v in vals])) if vals else float("nan")
                    for k in ("kappa", "c_obs", "acc_diff_sq")}
            rows.append({"task": task, "observer": name, "observer_type": kind, **mean,
                         "ood_accuracy": accuracy(own["correct"]), "pairs": len(vals), "trials": len(own),
                         "aggregation": aggregation})
    return _benchmark_frames(rows)


# model-vs-human's benchmark metrics and whether a higher value is better
BENCHMARK_METRICS = {"kappa": True, "c_obs": True, "acc_diff_sq": False, "ood_accuracy": True}


def benchmark_ranks(means: pd.DataFrame) -> pd.DataFrame:
    """``means`` (one row per observer, mean over datasets) with ``rank_<metric>`` per model-vs-human metric
    among the *models* (1 = best: highest κ, observed consistency and OOD accuracy, lowest squared accuracy
    difference; ties share the lower rank) and ``mean_rank``, their mean — the benchmark table of
    model-vs-human (Geirhos et al., 2021). The human row (the ceiling) is not ranked (NaN), nor is a model
    whose ``missing`` datasets (:func:`benchmark_means`) make its means incomparable."""
    out = means.copy()
    models = out["observer_type"] == "model"
    if "missing" in out:
        models &= out["missing"].fillna("").astype(str) == ""
    for metric, higher in BENCHMARK_METRICS.items():
        out[f"rank_{metric}"] = float("nan")
        out.loc[models, f"rank_{metric}"] = out.loc[models, metric].rank(ascending=not higher, method="min")
    out["mean_rank"] = out[[f"rank_{m}" for m in BENCHMARK_METRICS]].mean(axis=1, skipna=False)
    return out.sort_values(["observer_type", "mean_rank"], ascending=[True, True], kind="stable",
                           na_position="first").reset_index(drop=True)


def cue_conflict_texture(item_id: str) -> str:
    """The texture category of a cue-conflict image id ``<shape><n>-<texture><n>`` (``bird3-clock2`` → ``clock``)."""
    parts = str(item_id).split("-")
    if len(parts) != 2:
        raise StatsError(f"cue-conflict image id {item_id!r}: expected <shape><n>-<texture><n>")
    return parts[1].rstrip("0123456789")


def shape_bias(trials: pd.DataFrame) -> pd.DataFrame:
    """Shape bias per observer on cue-conflict trials (Geirhos et al., 2019; model-vs-human's rule): images
    whose shape and texture categories are the same are left out; of the remaining trials answered with
    the shape category (``label``) or the texture category (from ``item_id``), the fraction answered with
    the shape. Columns ``observer``, ``observer_type``, ``shape_bias``, ``shape_hits``, ``texture_hits``,
    ``trials`` (kept trials)."""
    t = trials.copy()
    t["texture"] = t["item_id"].map(cue_conflict_texture)
    t = t[t["texture"] != t["label"].astype(str)]
    rows = []
    for (obs, kind), g in t.groupby(["observer", "observer_type"], sort=True):
        shape = int((g["response"] == g["label"]).sum())
        texture = int((g["response"] == g["texture"]).sum())
        rows.append({"observer": obs, "observer_type": kind,
                     "shape_bias": shape / (shape + texture) if shape + texture else float("nan"),
                     "shape_hits": shape, "texture_hits": texture, "trials": len(g)})
    return pd.DataFrame(rows, columns=["observer", "observer_type", "shape_bias", "shape_hits", "texture_hits",
                                       "trials"])


# --------------------------------------------------------------------------------------------------
# resampling tests


def permutation_noise_floor(labels, responses, n_perm: int = 1000, seed: int = 0) -> dict:
    """Accuracy of an observer's responses against randomly permuted labels (``n_perm`` times): the
    accuracy reachable by chance with this observer's response bias and this label balance. Labels and
    responses are compared as integer codes of their text (the same permutations of the same random stream
    as :func:`permutation_noise_floor_reference`, which compares the strings: equal samples)."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    codes = pd.factorize(np.concatenate([labels, responses]).astype(object))[0]
    lab, resp = codes[:labels.size], codes[labels.size:]
    rng = np.random.default_rng(seed)
    accs = np.array([np.mean(resp == rng.permutation(lab)) for _ in range(n_perm)])
    return {"mean": float(accs.mean()), "p95": float(np.quantile(accs, 0.95)), "samples": accs}


def permutation_noise_floor_reference(labels, responses, n_perm: int = 1000, seed: int = 0) -> dict:
    """The plain twin of :func:`permutation_noise_floor`: permute the label strings."""
    labels = np.asarray(labels).astype(str)
    responses = np.asarray(responses).astype(str)
    rng = np.random.default_rng(seed)
    accs = np.array([np.mean(responses == rng.permutation(labels)) for _ in range(n_perm)])
    return {"mean": float(accs.mean()), "p95": float(np.quantile(accs, 0.95)), "samples": accs}


def sign_flip_test(a, b, n_perm: int = 10_000, seed: int = 0, exact_max_n: int = 16) -> dict:
    """Paired randomisation test of mean(a - b) = 0 by flipping the sign of each paired difference.
    Exact (all 2^n sign patterns) when n <= ``exact_max_n``; otherwise ``n_perm`` random patterns, with
    p = (1 + #{|null| >= |observed|}) / (1 + n_perm). Two-sided."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise StatsError("sign_flip_test needs two equal-length, non-empty vectors")
    obs = float(d.mean())
    tol = 1e-12 * max(1.0, abs(obs))
    if d.size <= exact_max_n:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        null = signs @ d / d.size
        p = float(np.mean(np.abs(null) >= abs(obs) - tol))
        return {"mean_difference": obs, "p_value": p, "n": int(d.size), "exact": True}
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_perm, 1000):
        b_ = min(1000, n_perm - start)
        signs = rng.choice((-1.0, 1.0), size=(b_, d.size))
        count += int(np.sum(np.abs(signs @ d / d.size) >= abs(obs) - tol))
    return {"mean_difference": obs, "p_value": (1 + count) / (1 + n_perm), "n": int(d.size), "exact": False}


# --------------------------------------------------------------------------------------------------
# correlation, entropy


def correlation(x, y, method: str = "pearson") -> dict:
    from scipy import stats as st

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3:
        raise StatsError(f"correlation needs at least 3 complete pairs, got {x.size}")
    if method == "pearson":
        r, p = st.pearsonr(x, y)
    elif method == "spearman":
        r, p = st.spearmanr(x, y)
    else:
        raise StatsError(f"method={method!r}: allowed pearson, spearman")
    return {"correlation": method, "r": float(r), "p_value": float(p), "n": int(x.size)}


def correlate_with_imagenet(summary: pd.DataFrame, zoo: pd.DataFrame, metric: str = "accuracy",
                            split: str = "test") -> pd.DataFrame:
    """Pearson and Spearman correlation between a task metric (mean over seeds) and ImageNet top-1, per
    (task, method). ``zoo`` has ``model_id`` and ``imagenet_top1``."""
    keys = ["task", "method", "model_id"] + (["observer"] if "observer" in summary else [])  # one row per identity
    s = summary[summary["split"] == split].groupby(keys, as_index=False)[metric].mean()
    m = s.merge(zoo[["model_id", "imagenet_top1"]], on="model_id", how="inner")
    rows = []
    for (task, method), g in m.groupby(["task", "method"]):
        for how in ("pearson", "spearman"):
            if len(g) < 3:
                continue
            r = correlation(g["imagenet_top1"], g[metric], how)
            rows.append({"task": task, "method": method, "metric": metric, "correlation": how,
                         "r": r["r"], "p_value": r["p_value"], "n": r["n"]})
    return pd.DataFrame(rows, columns=["task", "method", "metric", "correlation", "r", "p_value", "n"])


def response_entropy(responses, classes=None, base: float = 2.0) -> float:
    """Shannon entropy of the response distribution (bits by default); ``classes`` adds zero-count classes
    (no effect on the value, kept for clarity) and rejects unknown responses."""
    r = pd.Series(np.asarray(responses).astype(str))
    if classes is not None:
        unknown = set(r) - {str(c) for c in classes}
        if unknown:
            raise StatsError(f"responses {sorted(unknown)[:5]} are not among the classes")
    p = r.value_counts(normalize=True).to_numpy()
    return float(-(p * (np.log(p) / np.log(base))).sum()) + 0.0  # + 0.0 turns -0.0 into 0.0
