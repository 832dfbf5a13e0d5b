"""The figure every results folder supports: each model's accuracy per task with its across-seed CI, the
noise floor and, when there are human observers, the human mean with its CI (the 3D-PC paper's bar plots
of model accuracy against the human band, as a dot plot). Data in, Figure out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .style import FULL_IN, HUMAN, colour, new_figure, panel_grid, style


def accuracy_per_model(acc: pd.DataFrame, humans: pd.DataFrame | None = None, floors: pd.DataFrame | None = None,
                       ci: float = 0.95, max_labels: int = 40):
    """One panel per (task, method): models on the y axis sorted by accuracy, accuracy on the x axis with the
    across-seed CI as a horizontal bar, the noise floor dashed, humans as a red line with their CI as a band.
    With more than ``max_labels`` models the y axis is the rank (names would not be legible).

    ``acc``: ``task, method, observer, accuracy_mean, accuracy_ci_low, accuracy_ci_high`` (the ``seed_summary``
    table of ``eval stats``, one split). ``humans``: ``task, accuracy, ci_low, ci_high, observers``.
    ``floors``: ``task, noise_floor, kind``."""
    if acc.empty:
        raise ValueError("accuracy_per_model: no model accuracies")
    keys = sorted(acc.groupby(["task", "method"]).groups)
    rows, cols = panel_grid(len(keys), 3)
    n_max = int(acc.groupby(["task", "method"]).size().max())
    per_row = 0.25 + (0.09 * min(n_max, max_labels) if n_max <= max_labels else 1.9)
    with style():
        fig, axes = new_figure(min(FULL_IN, 2.5 * cols + 0.8), per_row * rows + 0.7, rows, cols)
        for k, (task, method) in enumerate(keys):
            ax = axes.flat[k]
            g = acc[(acc["task"] == task) & (acc["method"] == method)].sort_values("accuracy_mean").reset_index(drop=True)
            y = np.arange(len(g))
            lo = (g["accuracy_mean"] - g["accuracy_ci_low"]).clip(lower=0).fillna(0)
            hi = (g["accuracy_ci_high"] - g["accuracy_mean"]).clip(lower=0).fillna(0)
            ax.errorbar(g["accuracy_mean"], y, xerr=[lo.to_numpy(), hi.to_numpy()], fmt="o", color=colour(0),
                        ms=3 if len(g) <= max_labels else 1.5, elinewidth=0.6, capsize=0, gid="models",
                        label=f"models, {int(ci * 100)}% CI over seeds")
            if len(g) <= max_labels:
                ax.set_yticks(y, [str(o).split(":", 1)[-1][:30] for o in g["observer"]], fontsize=5)
            else:
                ax.set_ylabel(f"Models ranked by accuracy (n={len(g)})")
            h = humans[humans["task"] == task] if humans is not None and not humans.empty else None
            if h is not None and not h.empty:
                r = h.iloc[0]
                ax.axvspan(r["ci_low"], r["ci_high"], color=HUMAN, alpha=0.18, lw=0, gid="human_band")
                ax.axvline(r["accuracy"], color=HUMAN, lw=1.2, label=f"humans (n={int(r['observers'])})")
            f = floors[floors["task"] == task] if floors is not None and not floors.empty else None
            if f is not None and not f.empty:
                ax.axvline(float(f["noise_floor"].iloc[0]), color="black", ls="--", lw=0.8, gid="noise_floor",
                           label="noise floor (permutation p95)" if f["kind"].iloc[0] == "permutation_p95" else "chance")
            ax.set(xlim=(0, 1.02), xlabel="Accuracy", title=f"{task} ({method})")
        for ax in axes.flat[len(keys):]:
            ax.set_visible(False)
        handles = {}
        for ax in axes.flat[:len(keys)]:  # one legend for all panels, below them (never over the data)
            for hd, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab.split(" (n=")[0], hd)
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncols=3)
    return fig
