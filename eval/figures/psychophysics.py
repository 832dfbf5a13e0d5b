"""Figures of the 2D psychophysics sets: degraded polygons (Tang & Ley, 2023, Fig. 3: accuracy against the
removed perimeter proportion, corner- vs edge-degraded) and abutting gratings (Fan & Zeng, 2022, Fig. 3/4:
accuracy against the grating interval per direction). Data in, :class:`matplotlib.figure.Figure` out.
"""
from __future__ import annotations

import pandas as pd

from .style import COLUMN_IN, FULL_IN, HUMAN, colour, new_figure, panel_grid, style

VARIANT_STYLE = {"corners": ("-", "o", "corners removed"), "edges": ("--", "s", "edges removed")}


def accuracy_vs_degradation(acc: pd.DataFrame, chance: float | None = None):
    """Accuracy (y) against the degradation proportion p_d (x) per observer: corner-degraded solid with
    circles, edge-degraded dashed with squares, the CI as a band; one colour per observer, humans red.
    ``acc``: :func:`eval.figures.data.degradation_accuracy`. ``chance``: dashed grey line (e.g. 1/6)."""
    if acc.empty:
        raise ValueError("accuracy_vs_degradation: no corner/edge-degraded trials")
    with style():
        fig, axes = new_figure(COLUMN_IN, 2.4)
        ax = axes[0, 0]
        names = sorted(acc["observer"].unique(), key=lambda o: (acc.loc[acc["observer"] == o, "observer_type"]
                                                               .iloc[0] == "human", o))
        for i, name in enumerate(names):
            g = acc[acc["observer"] == name]
            col = HUMAN if g["observer_type"].iloc[0] == "human" else colour(i)
            for var, (ls, mk, what) in VARIANT_STYLE.items():
                v = g[g["variant"] == var].sort_values("level")
                if v.empty:
                    continue
                ax.fill_between(v["level"], v["ci_low"], v["ci_high"], color=col, alpha=0.12, lw=0)
                ax.plot(v["level"], v["accuracy"], ls=ls, marker=mk, color=col, label=f"{name}, {what}",
                        gid=f"{var}")
        if chance is not None:
            ax.axhline(chance, color="0.5", ls=":", lw=0.8, label="chance")
        ax.set(xlabel="Degradation proportion $p_d$ (share of the perimeter removed)", ylabel="Top-1 accuracy",
               ylim=(0, 1.02))
        ax.legend(loc="lower left", fontsize=5)
    return fig


def accuracy_vs_interval(acc: pd.DataFrame, chance: float | None = None):
    """Accuracy (y) against the grating interval in pixels (x), one panel per grating direction, one line per
    observer (humans red); the accuracy on the ungrated originals, when present, as a dotted line of the
    observer's colour. ``acc``: :func:`eval.figures.data.interval_accuracy`."""
    g_all = acc[acc["direction"] != "original"]
    if g_all.empty:
        raise ValueError("accuracy_vs_interval: no abutting-grating trials")
    dirs = sorted(g_all["direction"].unique())
    rows, cols = panel_grid(len(dirs), 4)
    with style():
        fig, axes = new_figure(min(FULL_IN, 1.9 * cols), 1.7 * rows + 0.3, rows, cols, sharey=True)
        names = sorted(acc["observer"].unique())
        for k, d in enumerate(dirs):
            ax = axes.flat[k]
            for i, name in enumerate(names):
                g = g_all[(g_all["observer"] == name) & (g_all["direction"] == d)].sort_values("interval")
                if g.empty:
                    continue
                col = HUMAN if g["observer_type"].iloc[0] == "human" else colour(i)
                ax.plot(g["interval"], g["accuracy"], marker="o", color=col, label=name if k == 0 else None,
                        gid="observer")
                o = acc[(acc["observer"] == name) & (acc["direction"] == "original")]
                if not o.empty:
                    ax.axhline(float(o["accuracy"].mean()), color=col, ls=":", lw=0.7)
            if chance is not None:
                ax.axhline(chance, color="0.5", ls="--", lw=0.6)
            ax.set(title=d, xlabel="Grating interval (px)", ylim=(0, 1.02))
            ax.set_xticks(sorted(g_all["interval"].unique()))
        for ax in axes.flat[len(dirs):]:
            ax.set_visible(False)
        for r in range(rows):
            axes[r, 0].set_ylabel("Accuracy")
        fig.legend(loc="outside lower center", ncols=min(4, len(names)))
    return fig
