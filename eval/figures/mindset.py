"""MindSet: Vision figures (Biscione et al., 2024, Fig. 2): similarity-judgment distance per condition across
layer depth, and decoder predictions against the true value with each condition's bias (e.g. the
Ebbinghaus illusion: predicted vs true disc size, flanker conditions against the scrambled baseline).
Written against the trial tables issue 15 describes (columns in :mod:`eval.figures.data`:
``SIMILARITY_COLUMNS``, ``DECODER_COLUMNS``). Data in, :class:`matplotlib.figure.Figure` out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .style import FULL_IN, colour, new_figure, panel_grid, style


def similarity_by_layer(summary: pd.DataFrame, max_panels: int = 8):
    """One panel per model: mean distance (y) between the reference image and each comparison condition
    (one line per condition, CI band over pairs) against layer depth (x). ``summary``:
    :func:`eval.figures.data.similarity_summary`; at most ``max_panels`` models are drawn (alphabetically)."""
    if summary.empty:
        raise ValueError("similarity_by_layer: empty similarity summary")
    models = sorted(summary["observer"].unique())[:max_panels]
    conds = sorted(summary["condition"].astype(str).unique())
    rows, cols = panel_grid(len(models), 4)
    with style():
        fig, axes = new_figure(min(FULL_IN, 2.0 * cols), 1.8 * rows + 0.3, rows, cols)
        for k, m in enumerate(models):
            ax = axes.flat[k]
            g = summary[summary["observer"] == m]
            for i, c in enumerate(conds):
                s = g[g["condition"].astype(str) == c].sort_values("layer_depth")
                ax.fill_between(s["layer_depth"], s["ci_low"], s["ci_high"], color=colour(i), alpha=0.15, lw=0)
                ax.plot(s["layer_depth"], s["distance"], color=colour(i), marker="o", label=c if k == 0 else None,
                        gid="condition")
            ax.set(title=str(m).split(":")[-1], xlabel="Layer depth")
        for ax in axes.flat[len(models):]:
            ax.set_visible(False)
        for r in range(rows):
            axes[r, 0].set_ylabel("Distance to reference")
        fig.legend(loc="outside lower center", ncols=min(5, len(conds)), title="comparison condition")
    return fig


def decoder_predictions(pred: pd.DataFrame, max_points: int = 4000, seed: int = 0):
    """One panel per (model, layer) decoder: predicted (y) against true value (x) of each test image, one
    colour per condition, the identity line, and each condition's bias (mean of predicted − true) in the
    legend — an illusion shows as one condition's cloud shifted off the line. ``pred``: ``observer``,
    ``layer``, ``condition``, ``target``, ``prediction``; at most ``max_points`` points per panel (a seeded
    subsample; the bias uses all of them)."""
    from .data import _observer_column

    pred = _observer_column(pred)
    if pred.empty:
        raise ValueError("decoder_predictions: empty prediction table")
    keys = sorted(pred.groupby(["observer", "layer"]).groups)[:8]
    conds = sorted(pred["condition"].astype(str).unique())
    rows, cols = panel_grid(len(keys), 4)
    rng = np.random.default_rng(seed)
    with style():
        fig, axes = new_figure(min(FULL_IN, 2.0 * cols), 2.0 * rows + 0.2, rows, cols)
        lo = float(min(pred["target"].min(), pred["prediction"].min()))
        hi = float(max(pred["target"].max(), pred["prediction"].max()))
        for k, (m, layer) in enumerate(keys):
            ax = axes.flat[k]
            g = pred[(pred["observer"] == m) & (pred["layer"] == layer)]
            ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.7, ls=":")
            for i, c in enumerate(conds):
                s = g[g["condition"].astype(str) == c]
                if s.empty:
                    continue
                bias = float((s["prediction"] - s["target"]).mean())
                if len(s) > max_points:
                    s = s.iloc[np.sort(rng.choice(len(s), max_points, replace=False))]
                ax.scatter(s["target"], s["prediction"], s=4, color=colour(i), alpha=0.6, linewidths=0,
                           label=f"{c} (bias {bias:+.3g})", gid="condition")
            ax.set(title=f"{str(m).split(':')[-1]} · {layer}", xlabel="True value")
            ax.legend(loc="upper left", fontsize=5)
        for ax in axes.flat[len(keys):]:
            ax.set_visible(False)
        for r in range(rows):
            axes[r, 0].set_ylabel("Decoded value")
    return fig
