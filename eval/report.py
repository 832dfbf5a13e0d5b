"""``python -m eval stats``: statistics tables and a Markdown report over a results folder.

Reads every trial and summary part, optionally human trials (model-vs-human CSVs, a 3D-PC response file
or a table already in the trial schema) and a zoo list with ImageNet top-1, and writes to ``<out>``:

* ``seed_summary.csv`` — accuracy mean and t-interval across seeds per (model, task, method, split);
* ``observers.csv`` — per observer (models per seed, humans) on ``split``: accuracy and balanced accuracy
  with bootstrap CIs over items, label-permutation noise floor (mean and 95th percentile), response entropy;
* ``error_consistency.csv`` — κ, observed consistency and squared accuracy difference of every model run
  against every human on shared images, and ``human_ceiling.csv`` (all human pairs, per task), aggregated
  as ``aggregation`` says (``model-vs-human``: excluded conditions dropped, per condition, then the mean;
  ``pooled``: all trials at once) — the column ``aggregation`` records which;
* ``benchmark.csv`` / ``benchmark_mean.csv`` — model-vs-human's four metrics (κ, observed consistency,
  squared accuracy difference, OOD accuracy) per dataset and as the mean over datasets, for humans and
  every model with trials on those datasets; the mean table ranks the models per metric and by their mean
  rank (the human row is the ceiling); ``shape_bias.csv`` when there are cue-conflict trials;
* ``identities.csv`` — every (model id, weights, preprocessing, feature, method config) in the folder;
  one model id with several identities is reported as several observers, never pooled;
* ``task_differences.csv`` — paired sign-flip tests between tasks over the models both were run on;
* ``imagenet_correlation.csv`` — Pearson and Spearman correlation of task accuracy with ImageNet top-1;
* ``report.md`` — the tables above in readable form; ``report.html`` + ``figures/`` — the same with the
  papers' figures (:mod:`eval.html_report`).
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from . import stats
from .results import read_results


def _humans(c: dict) -> pd.DataFrame | None:
    if not c.get("humans"):
        return None
    from .humans import load_humans

    return load_humans(c["humans"], c.get("humans_format", "model-vs-human"), c)


def observer_table(trials: pd.DataFrame, n_boot: int, n_perm: int, ci: float, seed: int) -> pd.DataFrame:
    """Per observer (a model run's ``observer`` label distinguishes identities, see ``label_runs``)."""
    rows = []
    keys = ["task", "split", "method", "observer", "observer_type", "seed"]
    used = keys + [c for c in ("label", "response", "correct", "cluster") if c in trials]
    for key, g in trials[used].groupby(keys, sort=True):  # only the columns read: each group is a copy
        floor = stats.permutation_noise_floor(g["label"], g["response"], n_perm, seed)
        rows.append({**dict(zip(keys, key)), **stats.accuracy_summary(g, n_boot, ci, seed),
                     "noise_floor_mean": floor["mean"], "noise_floor_p95": floor["p95"],
                     "response_entropy_bits": stats.response_entropy(g["response"])})
    return pd.DataFrame(rows)


def consistency_tables(trials: pd.DataFrame, aggregation: str = "model-vs-human") -> tuple[pd.DataFrame, pd.DataFrame]:
    """κ, observed consistency and squared accuracy difference per (model run, human) on shared images,
    and the human-human ceiling (mean over pairs), per task, aggregated as ``aggregation`` says (see
    ``stats.AGGREGATIONS``). Model rows must already carry distinct ``observer`` labels per identity.
    All pairs of a task at once (``stats.pair_counts``); :func:`consistency_tables_reference` is the plain twin."""
    excl = stats.excluded_conditions(aggregation)
    ec, ceil = [], []
    metrics = stats.PAIR_METRICS
    used = ["task", "condition", "observer", "observer_type", "method", "seed", "model_id", "item_id", "correct"]
    for task, t, cond, is_h in stats.task_groups(trials, used, excl):
        is_m = (t["observer_type"] == "model").to_numpy(dtype=bool, na_value=False)
        # decision makers: the humans (by observer, sorted), then the model runs (by method, observer, seed)
        hcode, humans = pd.factorize(t.loc[is_h, "observer"], sort=True)
        humans = [str(h) for h in humans]
        runs = t.loc[is_m, ["method", "observer", "seed"]]
        rcode = runs.groupby(["method", "observer", "seed"], sort=True).ngroup().to_numpy()
        dm = np.full(len(t), -1, dtype=np.int64)
        dm[is_h] = hcode
        dm[is_m] = np.where(rcode >= 0, rcode + len(humans), -1)
        first = np.unique(rcode[rcode >= 0], return_index=True)[1]  # each run's first row: its key, model_id
        run_keys = runs.iloc[first]
        run_model = t.loc[is_m, "model_id"].iloc[first].tolist()
        names = humans + run_keys["observer"].tolist()
        ok = dm >= 0
        item = stats._item_codes(t["item_id"])
        stats.repeated_trials_check(dm[ok], names, cond[ok], item[ok])
        v = stats.pair_values(stats.pair_counts(dm, len(names), cond, item, stats._bool(t["correct"]),
                                                np.arange(len(humans))), aggregation)
        pairs = [(i, j) for i in range(len(humans)) for j in range(i + 1, len(humans)) if v["n"][i, j]]
        if pairs:
            ceil.append({"task": task, **{f"{m}_mean": float(pd.Series([float(v[m][i, j]) for i, j in pairs]).mean())
                                          for m in metrics},
                         "kappa_std": float(pd.Series([float(v["kappa"][i, j]) for i, j in pairs]).std(ddof=1))
                         if len(pairs) > 1 else float("nan"), "pairs": len(pairs), "aggregation": aggregation})
        for r, (method, model, seed) in enumerate(run_keys.itertuples(index=False, name=None)):
            i = r + len(humans)
            for j, h in enumerate(humans):
                if v["n"][i, j]:
                    ec.append({"task": task, "method": method, "observer": model, "model_id": run_model[r],
                               "seed": seed, "human": h, **{m: float(v[m][i, j]) for m in metrics},
                               "n": int(v["n"][i, j]), "conditions": int(v["conditions"][i, j]),
                               "aggregation": aggregation})
    return pd.DataFrame(ec), pd.DataFrame(ceil)


def consistency_tables_reference(trials: pd.DataFrame,
                                 aggregation: str = "model-vs-human") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The plain twin of :func:`consistency_tables`: one ``stats.pair_metrics`` per (model run, human) pair."""
    excl = stats.excluded_conditions(aggregation)
    ec, ceil = [], []
    metrics = ("kappa", "c_obs", "acc_diff_sq")
    for task, t in stats.one_condition(trials).groupby("task"):
        drop = excl.get(task, set())
        if drop:
            t = t[~t["condition"].map(stats.condition_code).isin(drop)]
        hum = t[t["observer_type"] == "human"]
        if hum.empty:
            continue
        hdm = stats._decision_makers(hum)
        humans = sorted(hdm)
        pairs = [stats.pair_metrics(hdm[a], hdm[b], aggregation) for i, a in enumerate(humans) for b in humans[i + 1:]]
        pairs = [p for p in pairs if p["n"]]
        if pairs:
            ceil.append({"task": task, **{f"{m}_mean": float(pd.Series([p[m] for p in pairs]).mean()) for m in metrics},
                         "kappa_std": float(pd.Series([p["kappa"] for p in pairs]).std(ddof=1)) if len(pairs) > 1
                         else float("nan"), "pairs": len(pairs), "aggregation": aggregation})
        for (method, model, seed), g in t[t["observer_type"] == "model"].groupby(["method", "observer", "seed"]):
            mdm = stats._decision_makers(g)[model]
            for h in humans:
                r = stats.pair_metrics(mdm, hdm[h], aggregation)
                if r["n"]:
                    ec.append({"task": task, "method": method, "observer": model, "model_id": g["model_id"].iloc[0],
                               "seed": seed, "human": h, **r, "aggregation": aggregation})
    return pd.DataFrame(ec), pd.DataFrame(ceil)


def _benchmark(trials: pd.DataFrame, aggregation: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``stats.benchmark_tables`` with each model run (observer × method × seed) as one decision maker."""
    return stats.benchmark_tables(_run_observers(trials), aggregation)


def _run_observers(trials: pd.DataFrame) -> pd.DataFrame:
    """The columns the benchmark reads, a model's ``observer`` followed by ``(method, seed N)`` when it has
    several runs."""
    t = trials[["task", "condition", "observer", "observer_type", "method", "seed", "item_id", "correct"]].copy()
    models = t["observer_type"] == "model"
    runs = t.loc[models, ["observer", "method", "seed"]].drop_duplicates().groupby("observer").size()
    multi = set(runs[runs > 1].index)
    relabel = models & t["observer"].isin(multi)
    keys = t.loc[relabel, ["observer", "method", "seed"]]
    code = keys.groupby(["observer", "method", "seed"], sort=False).ngroup().to_numpy()
    first = keys.iloc[np.unique(code, return_index=True)[1]]  # one row per run: label it once, not per trial
    labels = (first["observer"] + " (" + first["method"] + ", seed " + first["seed"].astype(str) + ")").to_numpy()
    t.loc[relabel, "observer"] = labels[code]
    return t


def task_differences(summary: pd.DataFrame, split: str, seed: int) -> pd.DataFrame:
    from .results import label_runs

    summary, _ = label_runs(summary)  # runs of one model id with different identities stay apart
    s = summary[summary["split"] == split].groupby(["method", "task", "observer"])["accuracy"].mean().reset_index()
    rows = []
    for method, g in s.groupby("method"):
        wide = g.pivot(index="observer", columns="task", values="accuracy")
        for a, b in itertools.combinations(sorted(wide.columns), 2):
            pair = wide[[a, b]].dropna()
            if len(pair) < 2:
                continue
            r = stats.sign_flip_test(pair[a], pair[b], seed=seed)
            rows.append({"method": method, "task_a": a, "task_b": b, "models": r["n"],
                         "mean_difference": r["mean_difference"], "p_value": r["p_value"], "exact": r["exact"]})
    return pd.DataFrame(rows)


MINDSET_SUMMARIES = ("similarity_summary", "decoder_summary")


def mindset_summaries(results: Path) -> dict[str, pd.DataFrame]:
    """The summary tables ``eval similarity`` and ``eval decoder`` append to ``results`` (those present):
    MindSet results that are not decisions (distances, regression read-outs) have no trial rows, but are
    results all the same — ``eval stats`` reports them and ``eval report`` draws their figures."""
    out = {}
    for kind in MINDSET_SUMMARIES:
        parts = sorted((Path(results) / kind).glob("*.parquet"))
        if parts:
            out[kind] = pd.concat([pd.read_parquet(q) for q in parts], ignore_index=True)
    return out


def _md(df: pd.DataFrame, floatfmt: str = "{:.3f}") -> str:
    if df is None or df.empty:
        return "_none_\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(floatfmt.format(v) if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(lines) + "\n"


def run_stats(c: dict) -> Path:
    from infra.files import write_table
    from infra.files import atomic_write_text

    from .probe import seed_summary
    from .zoo import zoo_table

    res = Path(c["results"])
    if not res.is_dir():
        raise FileNotFoundError(f"results={res}: no such folder")
    out = Path(c["out"]) if c.get("out") else res / "stats"  # created once the inputs are known to be usable
    from .results import label_runs

    aggregation = c.get("aggregation") or "model-vs-human"
    if aggregation not in stats.AGGREGATIONS:
        raise ValueError(f"aggregation={aggregation!r}: allowed {', '.join(stats.AGGREGATIONS)}")
    trials = read_results(res, "trials")
    summary = read_results(res, "summary")
    trials, identities = label_runs(trials)
    humans = _humans(c)
    if humans is not None:
        trials = pd.concat([trials, humans], ignore_index=True)
    mindset = mindset_summaries(res)
    if trials.empty and not mindset:
        raise ValueError(f"results={res}: no trials, and no similarity or decoder results (run python -m eval "
                         f"probe|ood|decoder|similarity ... out={res} first)")
    split = c.get("split") or "test"
    sel = trials[(trials["split"] == split) | (trials["observer_type"] == "human")]
    n_boot, n_perm, ci, seed = int(c["n_boot"]), int(c["n_perm"]), float(c["ci"]), int(c["seed"])
    tables = {
        "identities": identities,
        "seed_summary": seed_summary(summary, ci) if not summary.empty else pd.DataFrame(),
        "observers": observer_table(sel, n_boot, n_perm, ci, seed),
    }
    tables["error_consistency"], tables["human_ceiling"] = consistency_tables(sel, aggregation)
    tables.update(mindset)  # MindSet methods' own summaries (similarity, regression decoders: no trials)
    if humans is not None:
        tables["benchmark"], tables["benchmark_mean"] = _benchmark(sel, aggregation)
        if (sel["task"] == "cue-conflict").any():  # model-vs-human's shape bias (issue 15)
            tables["shape_bias"] = stats.shape_bias(sel[sel["task"] == "cue-conflict"])
    tables["task_differences"] = task_differences(summary, split, seed) if not summary.empty else pd.DataFrame()
    zoo = zoo_table(c["zoo"]) if c.get("zoo") else None
    if zoo is not None and "imagenet_top1" in zoo.columns:
        tables["imagenet_correlation"] = stats.correlate_with_imagenet(label_runs(summary)[0], zoo, split=split)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        write_table(df, out / name)
    # what the tables were computed on: eval report draws the same split or refuses (one split per report)
    atomic_write_text(out / "stats.json", json.dumps({"split": split, "aggregation": aggregation,
                                                      "results": str(res), "humans": c.get("humans")},
                                                     indent=1, default=str))
    parts = [f"# Statistics for `{res}`\n", f"Split: `{split}`; bootstrap {n_boot} resamples of n items; "
             f"noise floor from {n_perm} label permutations; CI level {ci}.\n"]
    mixed = identities[identities["mixed"]] if not identities.empty else identities
    if not mixed.empty:
        parts.append("\n**Mixed runs:** " + "; ".join(
            f"`{m}` has {len(g)} identities in this folder ({', '.join('`' + o + '`' for o in g['observer'])})"
            for m, g in mixed.groupby("model_id")) + ". They are reported as separate observers, never pooled.\n")
    parts.append(f"\nError consistency aggregation: `{aggregation}`"
                 + (" (model-vs-human: its excluded conditions dropped, κ per condition, then the mean over "
                    "conditions, pairs and datasets)" if aggregation == "model-vs-human" else
                    " (one κ per pair over all trials, nothing excluded)") + ".\n")
    titles = {"identities": "Run identities", "seed_summary": "Accuracy across seeds", "observers": "Observers",
              "error_consistency": "Error consistency (model vs each human)",
              "human_ceiling": "Human-human error consistency (ceiling)",
              "benchmark": "Model-vs-human metrics per dataset",
              "benchmark_mean": "Model-vs-human metrics, mean over datasets (models ranked per metric; humans = ceiling)",
              "shape_bias": "Shape bias on cue-conflict images",
              "task_differences": "Paired sign-flip tests between tasks", "imagenet_correlation":
              "Correlation with ImageNet top-1",
              "similarity_summary": "Similarity judgment: mean distance per comparison level and layer",
              "decoder_summary": "Decoders: accuracy or RMSE per decoder, condition and target"}
    bm = tables.get("benchmark_mean")
    if bm is not None and not bm.empty and (bm["missing"].astype(str) != "").any():
        parts.append("\n**Incomplete benchmark means** (each averages only the datasets it has all four metrics "
                     "for; not ranked): " + "; ".join(
                         f"`{r.observer}` over {r.datasets} dataset(s), missing {r.missing}"
                         for r in bm.itertuples() if str(r.missing)) + ".\n")
    for name, df in tables.items():
        shown = df
        if name == "seed_summary" and not df.empty:  # the report's split (VPT-Strategy: its own)
            shown = df[(df["split"] == split) | (df["split"] == "strategy")]
        if name == "error_consistency" and not df.empty:
            shown = df.groupby(["task", "method", "observer"], as_index=False).agg(
                kappa_mean=("kappa", "mean"), c_obs_mean=("c_obs", "mean"), acc_diff_sq_mean=("acc_diff_sq", "mean"),
                humans=("human", "nunique"), runs=("seed", "nunique"))
        parts.append(f"\n## {titles[name]}\n\n" + _md(shown))
    atomic_write_text(out / "report.md", "".join(parts))
    from .html_report import build_report  # the HTML report with figures, from the same tables

    build_report({**c, "out": str(out)}, tables=tables, trials=trials, summary=summary)
    return out
