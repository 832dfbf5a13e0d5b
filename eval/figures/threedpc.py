"""3D-PC figures (Linsley et al., 2024): model accuracy against ImageNet top-1 with the human band, linear
probe against fine-tuning, VPT-Strategy accuracy per step position, and error consistency against the
human-human ceiling. Each function takes the tidy tables of :mod:`eval.figures.data` and returns a
:class:`matplotlib.figure.Figure`; nothing is read or written here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import data as D
from .style import COLUMN_IN, FULL_IN, HUMAN, MODEL_GREY, colour, new_figure, style

TASK_TITLES = {"3dpc/vpt": "VPT-basic", "3dpc/depth": "Depth order", "3dpc/vpt_strategy": "VPT-Strategy"}


def task_title(task: str) -> str:
    return TASK_TITLES.get(task, task)


def _order_tasks(tasks) -> list[str]:
    known = [t for t in D.THREEDPC_TASKS if t in set(tasks)]
    return known + sorted(set(tasks) - set(known))


def accuracy_vs_imagenet(models: pd.DataFrame, humans: pd.DataFrame | None = None,
                         floors: pd.DataFrame | None = None, ci: float = 0.95, method: str | None = None):
    """One panel per task (VPT-basic, depth, VPT-Strategy, those present): each model's accuracy (y) against
    its ImageNet top-1 in % (x), the human mean as a line with its CI as a band, the noise floor as a dashed
    line, and Pearson r with its ``ci`` interval (Fisher z) in the legend — the 3D-PC paper's Fig. 3/4.

    ``models``: ``task, observer, accuracy, imagenet_top1`` (rows without a top-1 are left out; one
    ``method`` if given). ``humans``: ``task, accuracy, ci_low, ci_high, observers``. ``floors``: ``task,
    noise_floor, kind``."""
    m = models.dropna(subset=["imagenet_top1"])
    if method is not None and "method" in m:
        m = m[m["method"] == method]
    if m.empty:
        raise ValueError("accuracy_vs_imagenet: no model with an ImageNet top-1 (pass zoo=<list with imagenet_top1>)")
    tasks = _order_tasks(m["task"].unique())
    with style():
        fig, axes = new_figure(min(FULL_IN, 2.4 * len(tasks)), 2.3, 1, len(tasks), sharey=True)
        for ax, task in zip(axes[0], tasks):
            g = m[m["task"] == task]
            r = D.pearson_ci(g["imagenet_top1"], g["accuracy"], ci)
            lab = (f"models (n={r['n']}), r = {r['r']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
                   if np.isfinite(r["ci_low"]) else f"models (n={r['n']}), r = {r['r']:.2f}")
            ax.scatter(g["imagenet_top1"], g["accuracy"], s=9, color=colour(0), alpha=0.75, linewidths=0,
                       label=lab, gid="models")
            h = humans[humans["task"] == task] if humans is not None and not humans.empty else None
            if h is not None and not h.empty:
                row = h.iloc[0]
                ax.axhspan(row["ci_low"], row["ci_high"], color=HUMAN, alpha=0.18, lw=0, gid="human_band")
                ax.axhline(row["accuracy"], color=HUMAN, lw=1.2,
                           label=f"humans (n={int(row['observers'])}), {int(round(ci * 100))}% CI")
            f = floors[floors["task"] == task] if floors is not None and not floors.empty else None
            if f is not None and not f.empty:
                kind = f["kind"].iloc[0]
                ax.axhline(f["noise_floor"].iloc[0], color="black", ls="--", lw=0.8,
                           label="noise floor (permutation p95)" if kind == "permutation_p95" else "chance",
                           gid="noise_floor")
            ax.set_title(task_title(task))
            ax.set_xlabel("ImageNet top-1 (%)")
            ax.legend(loc="lower left", fontsize=5)
        axes[0, 0].set_ylabel("Accuracy")
        axes[0, 0].set_ylim(0, 1.02)
    return fig


def probe_vs_finetune(acc: pd.DataFrame):
    """Per task, each model's linear-probe accuracy (x) against its fine-tuned accuracy (y), with the
    identity line: points above it gained from fine-tuning (the 3D-PC paper's Fig. 4). ``acc``: ``task,
    method, observer, accuracy`` with methods ``probe`` and ``finetune``."""
    wide = acc.pivot_table(index=["task", "observer"], columns="method", values="accuracy").reset_index()
    if not {"probe", "finetune"} <= set(wide.columns):
        raise ValueError("probe_vs_finetune: needs both probe and finetune results")
    wide = wide.dropna(subset=["probe", "finetune"])
    if wide.empty:
        raise ValueError("probe_vs_finetune: no model has both probe and finetune results on one task")
    tasks = _order_tasks(wide["task"].unique())
    with style():
        fig, axes = new_figure(min(FULL_IN, 2.3 * len(tasks)), 2.3, 1, len(tasks))
        for i, (ax, task) in enumerate(zip(axes[0], tasks)):
            g = wide[wide["task"] == task]
            ax.plot([0, 1], [0, 1], color=MODEL_GREY, lw=0.7, ls=":")
            ax.scatter(g["probe"], g["finetune"], s=10, color=colour(0), linewidths=0, label=f"models (n={len(g)})")
            ax.set(xlim=(0, 1.02), ylim=(0, 1.02), aspect="equal", title=task_title(task),
                   xlabel="Linear probe accuracy")
            ax.legend(loc="lower right")
        axes[0, 0].set_ylabel("Fine-tuned accuracy")
    return fig


def strategy_steps(steps: pd.DataFrame, max_models: int = 6):
    """VPT-Strategy accuracy per step position: thin grey lines for every model, the model mean in blue
    (with the ``max_models`` first models coloured when there are few), humans in red (mean over observers,
    band = their range), and the share of images with the ball blocked at each step as grey bars (right
    axis), which shows the clear -> blocked -> clear path. ``steps``: from :func:`eval.figures.data.strategy_steps`."""
    if steps.empty:
        raise ValueError("strategy_steps: no VPT-Strategy trials")
    with style():
        fig, axes = new_figure(COLUMN_IN, 2.3)
        ax = axes[0, 0]
        blocked = steps.drop_duplicates("step").sort_values("step")
        twin = ax.twinx()
        twin.bar(blocked["step"], blocked["blocked_fraction"], color="0.88", width=0.8, zorder=0, gid="blocked")
        twin.set_ylim(0, 4)  # bars in the lower quarter, under the curves
        twin.set_yticks([])
        twin.spines["right"].set_visible(False)
        ax.set_zorder(twin.get_zorder() + 1)
        ax.patch.set_visible(False)
        models = steps[steps["observer_type"] == "model"]
        names = sorted(models["observer"].unique())
        few = len(names) <= max_models
        for i, name in enumerate(names):
            g = models[models["observer"] == name].sort_values("step")
            ax.plot(g["step"], g["accuracy"], color=colour(i) if few else MODEL_GREY, lw=0.8 if few else 0.4,
                    alpha=1 if few else 0.5, marker="o" if few else None, label=name if few else None, gid="model")
        if names and not few:
            mean = models.groupby("step")["accuracy"].mean()
            ax.plot(mean.index, mean.to_numpy(), color=colour(0), lw=1.5, label=f"model mean (n={len(names)})")
        hum = steps[steps["observer_type"] == "human"]
        if not hum.empty:
            agg = hum.groupby("step")["accuracy"].agg(["mean", "min", "max"])
            ax.fill_between(agg.index, agg["min"], agg["max"], color=HUMAN, alpha=0.18, lw=0, gid="human_band")
            ax.plot(agg.index, agg["mean"], color=HUMAN, lw=1.5, marker="D",
                    label=f"humans (n={hum['observer'].nunique()})")
        ax.axhline(0.5, color="black", ls="--", lw=0.7, label="chance")
        ax.set(ylim=(0, 1.02), xlabel="Step position along the path (grey: share of images with the ball blocked)",
               ylabel="Accuracy")
        ax.xaxis.label.set_size(6)
        ax.set_xticks(sorted(steps["step"].unique()))
        ax.legend(loc="lower left", ncols=2)
    return fig


def consistency_vs_ceiling(kappa: pd.DataFrame, ceiling: pd.DataFrame | None = None):
    """Per task, each model's mean error consistency κ with the human observers (sorted, one point per model)
    against the human-human ceiling (mean κ over human pairs, band ± 1 SD) — the 3D-PC paper's Fig. A.3; one
    colour per method (probe, fine-tuning). ``kappa``: ``task, [method,] observer, kappa`` (:func:`eval.figures.data.consistency_by_model`); ``ceiling``: the
    ``human_ceiling`` table of ``eval stats`` (``task, kappa_mean, kappa_std, pairs``)."""
    if kappa.empty:
        raise ValueError("consistency_vs_ceiling: no model-human error consistency")
    tasks = _order_tasks(kappa["task"].unique())
    with style():
        fig, axes = new_figure(min(FULL_IN, 2.4 * len(tasks)), 2.2, 1, len(tasks), sharey=True)
        for ax, task in zip(axes[0], tasks):
            g = kappa[kappa["task"] == task].sort_values("kappa").reset_index(drop=True)
            x = np.arange(len(g))
            methods = sorted(g["method"].unique()) if "method" in g else [""]
            for i, method in enumerate(methods):
                sel = (g["method"] == method).to_numpy() if "method" in g else np.ones(len(g), bool)
                ax.scatter(x[sel], g.loc[sel, "kappa"], s=10, color=colour(i), linewidths=0, gid="models",
                           label=f"{method or 'model'} vs humans (n={int(sel.sum())})")
            if len(g) <= 12:
                ax.set_xticks(x, [str(o).split(":")[-1][:18] for o in g["observer"]], rotation=60, ha="right",
                              fontsize=5)
            else:
                ax.set_xticks([])
                ax.set_xlabel("Models (sorted by κ)")
            c = ceiling[ceiling["task"] == task] if ceiling is not None and not ceiling.empty else None
            if c is not None and not c.empty:
                mu, sd = float(c["kappa_mean"].iloc[0]), float(c["kappa_std"].iloc[0])
                if np.isfinite(sd):
                    ax.axhspan(mu - sd, mu + sd, color=HUMAN, alpha=0.18, lw=0, gid="human_band")
                ax.axhline(mu, color=HUMAN, lw=1.2, label=f"human-human (pairs={int(c['pairs'].iloc[0])})")
            ax.axhline(0, color="black", lw=0.5, ls="--")
            ax.set_title(task_title(task))
            ax.legend(loc="upper left")
        axes[0, 0].set_ylabel("Error consistency (Cohen's κ)")
    return fig
