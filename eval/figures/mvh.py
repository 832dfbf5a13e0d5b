"""model-vs-human figures (Geirhos et al., 2018; 2021): accuracy and error consistency against the
distortion level (one panel per dataset, humans in red), the four benchmark metrics as bars and as a
pairwise scatter, and shape bias per category on cue-conflict images. Data in (tables of
:mod:`eval.figures.data` or ``eval stats``), :class:`matplotlib.figure.Figure` out.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from .style import FULL_IN, HUMAN, MODEL_GREY, colour, new_figure, panel_grid, style

METRICS = {"ood_accuracy": "OOD accuracy ↑", "acc_diff_sq": "Accuracy difference ↓",
           "c_obs": "Observed consistency ↑", "kappa": "Error consistency κ ↑"}


def _levels(levels) -> list[str]:
    from tasks.gallery import condition_key

    return sorted({str(x) for x in levels}, key=condition_key)


def _by_level(acc: pd.DataFrame, value: str, ylabel: str, chance: float | None, max_models: int):
    datasets = sorted(acc["dataset"].unique())
    rows, cols = panel_grid(len(datasets), 4)
    with style():
        fig, axes = new_figure(min(FULL_IN, 1.9 * cols + 0.3), 1.55 * rows + 0.45, rows, cols, sharey=True)
        models = sorted(acc.loc[acc["observer_type"] == "model", "observer"].unique())
        few = len(models) <= max_models
        for k, ds in enumerate(datasets):
            ax = axes.flat[k]
            g = acc[acc["dataset"] == ds]
            levels = _levels(g["level"])
            pos = {lv: i for i, lv in enumerate(levels)}
            for i, name in enumerate(models):
                mg = g[g["observer"] == name].assign(x=lambda d: d["level"].astype(str).map(pos)).sort_values("x")
                ax.plot(mg["x"], mg[value], color=colour(i) if few else MODEL_GREY, lw=0.8 if few else 0.4,
                        marker="o" if few else None, alpha=1 if few else 0.5, label=name if (few and k == 0) else None,
                        gid="model")
            hum = g[g["observer_type"] == "human"]
            if not hum.empty:
                agg = hum.assign(x=hum["level"].astype(str).map(pos)).groupby("x")[value].agg(["mean", "min", "max"])
                if hum["observer"].nunique() > 1:
                    ax.fill_between(agg.index, agg["min"], agg["max"], color=HUMAN, alpha=0.15, lw=0, gid="human_band")
                ax.plot(agg.index, agg["mean"], color=HUMAN, marker="D", lw=1.2, gid="humans",
                        label="humans" if k == 0 else None)
            line = g["chance"].iloc[0] if "chance" in g and g["chance"].notna().any() else chance
            if line is not None:
                ax.axhline(line, color="black", ls="--", lw=0.6, gid="chance")
            ax.set_title(ds)
            ax.set_xticks(range(len(levels)), levels, rotation=45 if len(levels) > 4 else 0, fontsize=5)
        for ax in axes.flat[len(datasets):]:
            ax.set_visible(False)
        for r in range(rows):
            axes[r, 0].set_ylabel(ylabel)
        fig.legend(loc="outside lower center", ncols=min(6, len(models) + 1) if few else 1)
    return fig


def accuracy_vs_level(acc: pd.DataFrame, chance: float | None = 1 / 16, max_models: int = 6):
    """One panel per dataset: accuracy (y) at each distortion level (x, natural order), models as lines
    (grey when more than ``max_models``), humans in red (mean over observers; band = their range, as the
    paper's "full range across participants"). ``acc``: ``dataset, level, observer, observer_type, accuracy``
    and optionally ``chance`` (:func:`eval.figures.data.level_accuracy`: 1 / the dataset's number of
    classes), drawn dashed per panel; without that column, ``chance`` (16-class: 1/16) for every panel."""
    if acc.empty:
        raise ValueError("accuracy_vs_level: no trials with a condition")
    fig = _by_level(acc, "accuracy", "Accuracy", chance, max_models)
    for ax in fig.axes:
        ax.set_ylim(0, 1.02)
    return fig


def consistency_vs_level(kappa: pd.DataFrame, max_models: int = 6):
    """One panel per dataset: error consistency κ with humans at each level; the human-human mean over pairs
    in red. ``kappa``: :func:`eval.figures.data.level_consistency`."""
    if kappa.empty:
        raise ValueError("consistency_vs_level: no level with both human and model trials")
    return _by_level(kappa, "kappa", "Error consistency κ", 0.0, max_models)


def benchmark_bars(means: pd.DataFrame, max_bars: int = 40):
    """The four model-vs-human metrics (mean over datasets) as horizontal bars, one panel per metric, the
    observers sorted best-first and humans in red; with more than ``max_bars`` models the best ones are shown
    (the title says how many). ``means``: the ``benchmark_mean`` table of ``eval stats``."""
    if means.empty:
        raise ValueError("benchmark_bars: empty benchmark table")
    with style():
        n = min(len(means), max_bars + 1)
        fig, axes = new_figure(FULL_IN, 0.8 + 0.11 * n, 1, 4)
        for ax, (metric, title) in zip(axes[0], METRICS.items()):
            asc = metric == "acc_diff_sq"
            d = means.sort_values(metric, ascending=asc)
            hum = d[d["observer_type"] == "human"]
            mod = d[d["observer_type"] != "human"].head(max_bars)
            d = pd.concat([hum, mod]).sort_values(metric, ascending=not asc)
            colours = [HUMAN if t == "human" else colour(0) for t in d["observer_type"]]
            ax.barh(np.arange(len(d)), d[metric], color=colours, height=0.75, gid="bars")
            # a mean over fewer datasets than the others' says so in its label (``missing``: benchmark_means)
            short = [str(o).split(":")[-1][:28] + (f" ({n} datasets)" if str(miss or "") else "")
                     for o, n, miss in zip(d["observer"], d.get("datasets", [0] * len(d)),
                                           d.get("missing", [""] * len(d)))]
            ax.set_yticks(np.arange(len(d)), short, fontsize=4.5)
            ax.set_title(title + (f" (best {max_bars} models)" if len(means) - len(hum) > max_bars else ""))
            ax.tick_params(axis="y", length=0)
    return fig


def benchmark_scatter(means: pd.DataFrame):
    """Every pair of the four metrics as a scatter (one point per observer, humans in red), with Pearson r
    over the models in each panel's title. ``means``: the ``benchmark_mean`` table."""
    if means.empty:
        raise ValueError("benchmark_scatter: empty benchmark table")
    from .data import pearson_ci

    pairs = list(itertools.combinations(METRICS, 2))
    with style():
        fig, axes = new_figure(FULL_IN, 2.6, 2, 3)
        for ax, (a, b) in zip(axes.flat, pairs):
            mod = means[means["observer_type"] != "human"]
            hum = means[means["observer_type"] == "human"]
            ax.scatter(mod[a], mod[b], s=8, color=colour(0), linewidths=0, gid="models")
            ax.scatter(hum[a], hum[b], s=18, color=HUMAN, marker="D", gid="humans")
            r = pearson_ci(mod[a], mod[b])
            ax.set_title(f"r = {r['r']:.2f} (n={r['n']})" if np.isfinite(r["r"]) else f"n={r['n']}")
            ax.set_xlabel(METRICS[a])
            ax.set_ylabel(METRICS[b])
    return fig


def shape_bias(sb: pd.DataFrame, max_models: int = 6):
    """Shape bias per category on cue-conflict images (Geirhos et al., 2019, Fig. 4 layout): categories on
    the y axis, the fraction of shape decisions on the x axis (1 = shape, 0 = texture), the per-observer
    average over categories as a vertical line; humans in red (mean over observers). ``sb``:
    :func:`eval.figures.data.shape_bias`."""
    if sb.empty:
        raise ValueError("shape_bias: no cue-conflict trials answered with the shape or the texture category")
    cats = sorted(c for c in sb["category"].unique() if c != "all")
    y = {c: i for i, c in enumerate(cats)}
    with style():
        fig, axes = new_figure(3.5, 0.9 + 0.15 * len(cats))
        ax = axes[0, 0]
        models = sorted(sb.loc[sb["observer_type"] == "model", "observer"].unique())
        few = len(models) <= max_models
        for i, name in enumerate(models):
            g = sb[(sb["observer"] == name) & (sb["category"] != "all")]
            col = colour(i) if few else MODEL_GREY
            ax.scatter(g["shape_bias"], g["category"].map(y), color=col, s=10, marker="o", alpha=1 if few else 0.4,
                       label=name if few else None, gid="model")
            if few:
                allv = sb[(sb["observer"] == name) & (sb["category"] == "all")]["shape_bias"]
                if len(allv):
                    ax.axvline(float(allv.iloc[0]), color=col, lw=0.7, ls="--")
        hum = sb[sb["observer_type"] == "human"]
        if not hum.empty:
            g = hum[hum["category"] != "all"].groupby("category")["shape_bias"].mean()
            ax.scatter(g.to_numpy(), g.index.map(y), color=HUMAN, marker="D", s=14,
                       label=f"humans (n={hum['observer'].nunique()})", gid="humans")
            ax.axvline(float(hum[hum["category"] == "all"]["shape_bias"].mean()), color=HUMAN, lw=0.9, ls="--")
        ax.set_yticks(range(len(cats)), cats)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel("Fraction of shape decisions (0 = texture, 1 = shape)")
        fig.legend(loc="outside lower center", ncols=3, fontsize=5)
    return fig
