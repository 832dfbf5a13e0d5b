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


def accuracy_summary(trials: pd.DataFrame, n_boot: int, ci: float, seed: int) -> dict:
    """Count, accuracy and balanced accuracy with bootstrap CIs of one observer's trials (columns ``correct``,
    ``label``, ``response``): the columns the summary and observer tables share."""
    acc = accuracy_ci(trials["correct"], n_boot, ci, seed)
    bal = balanced_accuracy_ci(trials["label"], trials["response"], n_boot, ci, seed)
    return {"n": acc.n, "accuracy": acc.value, "accuracy_ci_low": acc.ci_low, "accuracy_ci_high": acc.ci_high,
            "balanced_accuracy": bal.value, "balanced_accuracy_ci_low": bal.ci_low,
            "balanced_accuracy_ci_high": bal.ci_high}


# --------------------------------------------------------------------------------------------------
# error consistency (Geirhos et al., 2020)


def error_consistency(correct_a, correct_b) -> dict:
    """Cohen's kappa on trial-by-trial correctness: ``(c_obs - c_exp) / (1 - c_exp)`` with
    ``c_exp = p_a p_b + (1-p_a)(1-p_b)``. NaN when ``c_exp == 1`` (both observers all right or all wrong)."""
    a, b = _bool(correct_a), _bool(correct_b)
    if a.shape != b.shape or a.size == 0:
        raise StatsError(f"error consistency needs two equal, non-empty trial vectors (got {a.size} and {b.size})")
    c_obs = float(np.mean(a == b))
    pa, pb = float(a.mean()), float(b.mean())
    c_exp = pa * pb + (1 - pa) * (1 - pb)
    kappa = float("nan") if math.isclose(c_exp, 1.0) else (c_obs - c_exp) / (1 - c_exp)
    return {"kappa": kappa, "c_obs": c_obs, "c_exp": c_exp, "n": int(a.size)}


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
# resampling tests


def permutation_noise_floor(labels, responses, n_perm: int = 1000, seed: int = 0) -> dict:
    """Accuracy of an observer's responses against randomly permuted labels (``n_perm`` times): the
    accuracy reachable by chance with this observer's response bias and this label balance."""
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
    s = summary[summary["split"] == split].groupby(["task", "method", "model_id"], as_index=False)[metric].mean()
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
