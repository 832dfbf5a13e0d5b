"""``report.html``: one self-contained page per results folder — provenance, sortable summary tables, every
figure the available results support, and plain statements of what is missing.

    python -m eval report results=<dir> [task=<dataset dir>] [zoo=<list>] [humans=<path> humans_format=...]

(also written at the end of ``python -m eval stats``). The page needs no network: CSS and the few lines of
JavaScript that sort tables are inline, figures are embedded as PNG data URIs, and each figure's vector PDF
(and PNG) lies beside it in ``<stats>/figures/`` for papers. Nothing is fetched from a CDN; the only links
leave to the files of the results and dataset folders (relative paths, so the folder can be moved).

What is drawn (:mod:`eval.figures`), when the tables hold what the figure needs:

* 3D-PC (tasks ``3dpc/*``): accuracy vs ImageNet top-1 per method (needs a zoo list with ``imagenet_top1``;
  human band from the human observers of ``eval stats``; noise floor from its permutation test), probe vs
  fine-tuning (needs both), VPT-Strategy accuracy per step (``target=vpt_strategy`` runs), error consistency
  vs the human-human ceiling (needs human trials);
* model-vs-human datasets (any other task whose trials carry conditions, incl. ``image_distortions``):
  accuracy and κ vs level, the four benchmark metrics (bars, pairwise scatter), shape bias on cue-conflict;
* degraded polygons / abutting gratings (conditions ``corners_pX``/``edges_pX``, ``<direction>_iNN``; for a
  generated dataset given as ``task=`` the conditions come from its ``annotations.parquet``);
* MindSet (issue 15's tables, read from ``<results>/similarity/*.parquet`` and ``<results>/decoder/*.parquet``
  when present): distance per condition vs layer depth, decoder predictions vs truth.

Inputs are read only; outputs are written atomically.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .figures import data as D

STATS_TABLES = ("identities", "seed_summary", "observers", "error_consistency", "human_ceiling", "benchmark",
                "benchmark_mean", "task_differences", "imagenet_correlation", "similarity_summary", "decoder_summary")
VERSIONED = ("numpy", "pandas", "scipy", "matplotlib", "pyarrow", "torch", "torchvision", "timm", "open_clip_torch",
             "scikit-learn", "hydra-core")


@dataclass
class Fig:
    stem: str
    caption: str
    figure: object  # matplotlib Figure


@dataclass
class Section:
    title: str
    items: list = field(default_factory=list)  # Fig | str (a plain statement) | ("table", title, DataFrame)

    def note(self, text: str) -> None:
        self.items.append(text)

    def add(self, stem: str, caption: str, make) -> None:
        """Draw ``make()`` as figure ``stem``; a ValueError (the figure's data are missing) becomes a note."""
        try:
            self.items.append(Fig(stem, caption, make()))
        except ValueError as e:
            self.items.append(f"{caption.split('.')[0]}: not drawn ({e}).")


# ---------------------------------------------------------------------------------------------- inputs


def read_stats_tables(stats_dir: Path) -> dict[str, pd.DataFrame]:
    """The tables ``eval stats`` wrote to ``stats_dir`` (those present)."""
    out = {}
    for name in STATS_TABLES:
        p = stats_dir / f"{name}.parquet"
        if p.is_file():
            out[name] = pd.read_parquet(p)
    return out


def read_trials(results: Path, exclude_tasks=("3dpc/vpt", "3dpc/depth")) -> pd.DataFrame:
    """Trial rows of every task except ``exclude_tasks`` (the figures draw those two from the summary and
    statistics tables; skipping them keeps a 143-model sweep's report fast), relabelled by run identity."""
    from .results import TRIAL_DTYPES, label_runs, read_results

    trials, _ = label_runs(read_results(results, "trials", columns=list(TRIAL_DTYPES), exclude_tasks=exclude_tasks))
    return trials


def _task_info(task: Path | None) -> dict:
    """Dataset provenance of ``task``: its kind, manifest digest (the digest the runs' configuration covers)
    and what its manifest or annotation table records."""
    if task is None:
        return {}
    from .tasks import manifest_digest

    info: dict = {"folder": str(task)}
    man = task / "manifest.json"
    m = json.loads(man.read_text()) if man.is_file() else None
    if m is not None and (task / "metadata.parquet").is_file():  # a 3D-PC build (as eval.tasks detects it)
        images = m.get("images")
        info.update(kind="3D-PC build", manifest_digest=manifest_digest(m), seed=m.get("seed"),
                    vantage_version=m.get("vantage_version"), label_rule_version=m.get("label_rule_version"),
                    images=len(images) if isinstance(images, (dict, list)) else images, counts=m.get("counts"))
    elif (task / "annotations.parquet").is_file():  # a generated 2D dataset (its manifest counts images)
        ann = pd.read_parquet(task / "annotations.parquet")
        info.update(kind="generated 2D dataset", images=len(ann),
                    dataset=sorted(map(str, ann["dataset"].unique())) if "dataset" in ann else None,
                    conditions=int(ann["condition"].nunique()) if "condition" in ann else None)
        if m is not None:
            info.update(manifest_digest=manifest_digest(m), seed=m.get("seed"))
        cfg = task / "config.json"
        if cfg.is_file():
            info["config"] = json.loads(cfg.read_text())
    else:
        info["kind"] = "folder"
    return info


def stats_split(out: Path, tables: dict) -> str | None:
    """The split the statistics tables in ``out`` were computed on: ``stats.json`` (written by ``eval stats``),
    else the one split of the model rows of its ``observers`` table; ``None`` when there are none."""
    f = out / "stats.json"
    if f.is_file():
        try:
            return json.loads(f.read_text()).get("split")
        except ValueError:
            pass
    obs = tables.get("observers")
    if obs is not None and not obs.empty and "split" in obs:
        splits = set(obs.loc[obs["observer_type"] == "model", "split"].astype(str))
        if len(splits) == 1:
            return splits.pop()
    return None


def report_split(split: str | None, out: Path, tables: dict) -> str:
    """One split per report: ``split`` (``None``: the statistics' split, else ``test``). A split other than
    the one the statistics tables in ``out`` were computed on is refused: the page would draw one split's
    model accuracies against another split's noise floor and human band (issue 34)."""
    have = stats_split(out, tables)
    if split and have and split != have:
        raise ValueError(f"split={split}: the statistics in {out} were computed on split={have} (python -m eval "
                         f"stats ... split={have}); one split per report: run python -m eval report ... "
                         f"split={have}, or python -m eval stats ... split={split} first")
    return split or have or "test"


def _versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("vantage", *VERSIONED):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _mindset_tables(results: Path) -> dict[str, pd.DataFrame]:
    """The similarity distances and decoder predictions of a results folder, in the figure tables' columns
    (:data:`eval.figures.data.SIMILARITY_COLUMNS`, ``DECODER_COLUMNS``) via :func:`mindset_figure_tables`."""
    raw = {}
    for kind in ("similarity", "decoder"):
        parts = sorted((results / kind).glob("*.parquet")) if (results / kind).is_dir() else []
        if parts:
            raw[kind] = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    return mindset_figure_tables(raw)


def mindset_figure_tables(raw: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Map the tables ``eval similarity`` and ``eval decoder`` write onto the figures' columns.

    similarity (``eval/similarity.py``: model_id, layer, depth, comparison_level, distance, ...) ->
    observer, layer, layer_depth, condition, distance; decoder predictions (``eval/decoders.py``: model_id,
    feature, condition, target_value, prediction, correct, ...) -> observer, layer, condition, target,
    prediction — regression rows only (a classification decoder's predictions are class names: its
    accuracy is in the trial tables). Tables already in the figures' columns pass unchanged."""
    out = {}
    sim = raw.get("similarity")
    if sim is not None and len(sim):
        if "layer_depth" not in sim:
            sim = sim.rename(columns={"depth": "layer_depth", "comparison_level": "condition"})
        if "observer" not in sim and "model_id" in sim:
            sim = sim.assign(observer=sim["model_id"].astype(str))
        out["similarity"] = sim
    dec = raw.get("decoder")
    if dec is not None and len(dec):
        if "target_value" in dec:
            if "correct" in dec:
                dec = dec[dec["correct"].isna()]
            dec = dec.assign(observer=dec["model_id"].astype(str), layer=dec["feature"].astype(str),
                             target=pd.to_numeric(dec["target_value"], errors="coerce"),
                             prediction=pd.to_numeric(dec["prediction"], errors="coerce"))
            dec = dec.dropna(subset=["target", "prediction"])
        if len(dec):
            out["decoder"] = dec
    return out


# -------------------------------------------------------------------------------------------- sections


def human_table(trials: pd.DataFrame, observers: pd.DataFrame | None, ci: float, seed: int) -> pd.DataFrame:
    """Per task the human mean accuracy with a bootstrap CI over observers: from the ``observers`` table of
    ``eval stats`` (one accuracy per human observer) when it has humans, else from the human trials."""
    if observers is not None and not observers.empty and (observers["observer_type"] == "human").any():
        rows = []
        for task, g in observers[observers["observer_type"] == "human"].groupby("task"):
            m, lo, hi = D.bootstrap_mean_ci(g["accuracy"], 2000, ci, seed)
            rows.append({"task": task, "accuracy": m, "ci_low": lo, "ci_high": hi, "observers": g["observer"].nunique()})
        return pd.DataFrame(rows)
    return D.human_accuracy(trials, ci, 2000, seed)


def _accuracy_section(summary, tables, humans, split, ci) -> Section | None:
    from .figures.accuracy import accuracy_per_model
    from .probe import seed_summary

    if summary.empty:
        return None
    seeds = tables.get("seed_summary")
    if seeds is None or seeds.empty:
        seeds = seed_summary(summary, ci)
    seeds = seeds[(seeds["split"] == split) | (seeds["split"] == "strategy")]
    sec = Section("Accuracy per model")
    sec.add("accuracy_per_model", f"Accuracy per model (split {split}; VPT-Strategy: its sequences), mean over "
            f"seeds with the {int(ci * 100)}% t-interval across seeds; dashed: noise floor; red: human mean and "
            "CI over observers.",
            lambda: accuracy_per_model(seeds, humans, D.noise_floor(tables.get("observers"), summary), ci))
    if humans.empty:
        sec.note("No human data for these tasks.")
    return sec


def _threedpc_section(summary, trials, tables, zoo, humans, split, ci, seed) -> Section | None:
    from .figures import threedpc as T

    s = summary[summary["task"].astype(str).str.startswith("3dpc/")]
    if s.empty:
        return None
    sec = Section("3D-PC (visual perspective taking and depth order)")
    acc = D.model_accuracy(s, split, zoo)
    obs = tables.get("observers")
    humans = humans[humans["task"].astype(str).str.startswith("3dpc/")]
    if humans.empty:
        sec.note("No human data for these 3D-PC tasks (run python -m eval stats humans=<responses> "
                 "humans_format=3dpc task=<build>): no human band or error consistency.")
    floors = D.noise_floor(obs, s)
    if zoo is None or "imagenet_top1" not in acc or acc["imagenet_top1"].notna().sum() < 3:
        sec.note("Accuracy vs ImageNet top-1 not drawn: fewer than 3 models with an ImageNet top-1 "
                 "(pass zoo=<a zoo list with imagenet_top1>, e.g. zoo=3dpc_timm).")
    else:
        for method in sorted(acc["method"].unique()):
            sec.add(f"3dpc_accuracy_vs_imagenet_{method}",
                    f"Accuracy ({method}, split {split}; VPT-Strategy: its strategy sequences) against ImageNet "
                    f"top-1; human mean with its {int(ci * 100)}% bootstrap CI over observers (band), noise floor "
                    "(dashed), Pearson r with its CI.",
                    lambda m=method: T.accuracy_vs_imagenet(acc, humans, floors, ci, method=m))
    if {"probe", "finetune"} <= set(acc["method"]):
        sec.add("3dpc_probe_vs_finetune", "Linear probe against fine-tuned accuracy per model (identity line dotted).",
                lambda: T.probe_vs_finetune(acc))
    else:
        sec.note(f"Probe vs fine-tuning not drawn: these results hold only {', '.join(sorted(acc['method'].unique()))} runs.")
    steps = D.strategy_steps(trials)
    if steps.empty:
        sec.note("No VPT-Strategy results (run python -m eval probe ... target=vpt_strategy).")
    else:
        if not (steps["observer_type"] == "human").any():
            sec.note("No human data for VPT-Strategy: the step figure shows models only.")
        sec.add("3dpc_strategy_steps", "VPT-Strategy accuracy per step position along the props' path; grey bars: "
                "share of images with the ball blocked from the observer.", lambda: T.strategy_steps(steps))
    ec = tables.get("error_consistency")
    ec = ec[ec["task"].astype(str).str.startswith("3dpc/")] if ec is not None and not ec.empty else None
    if ec is not None and not ec.empty:
        ceil = tables.get("human_ceiling")
        sec.add("3dpc_error_consistency", "Error consistency (Cohen's κ) of each model with the human observers "
                "(mean over observers) against the human-human ceiling (mean ± SD over pairs).",
                lambda: T.consistency_vs_ceiling(D.consistency_by_model(ec), ceil))
    elif not humans.empty:
        sec.note("Error consistency not drawn: models and humans share no images on the compared split.")
    return sec


def _mvh_section(trials, tables, summary=None) -> Section | None:
    from .figures import mvh as M

    t = trials[~trials["task"].astype(str).str.startswith("3dpc/")]
    cond = t["condition"].fillna("").astype(str)
    t = t[(cond != "") & ~cond.str.match(D.DEGRADED.pattern) & ~cond.str.match(D.GRATING.pattern)
          & (cond != "whole") & (cond != "original")]
    bm = D.benchmark_means(tables.get("benchmark"))
    if t.empty and bm.empty:
        return None
    sec = Section("model-vs-human: out-of-distribution generalisation")
    if not t.empty:
        acc = D.level_accuracy(t, D.task_chance(t, summary))
        sec.add("mvh_accuracy_vs_level", "Accuracy at each distortion level, one panel per dataset; humans in red "
                "(mean, band = range over observers); dashed: chance (1 / the number of classes).",
                lambda: M.accuracy_vs_level(acc))
        if (t["observer_type"] == "human").any():
            k = D.level_consistency(t)
            sec.add("mvh_consistency_vs_level", "Error consistency κ with humans at each level; red: human-human "
                    "mean over pairs.", lambda: M.consistency_vs_level(k))
            sb = D.shape_bias(t)
            if not sb.empty:
                sec.add("mvh_shape_bias", "Shape bias per category on cue-conflict images (fraction of shape "
                        "decisions among shape or texture decisions); dashed: each observer's mean.",
                        lambda: M.shape_bias(sb))
        else:
            sec.note("No human data for these datasets: no error consistency, shape bias shown for models only.")
            sb = D.shape_bias(t)
            if not sb.empty:
                sec.add("mvh_shape_bias", "Shape bias per category on cue-conflict images.", lambda: M.shape_bias(sb))
    if not bm.empty:
        partial = bm[bm["missing"].astype(str) != ""]
        if not partial.empty:
            sec.note("Means over fewer datasets (not ranked; their bars say how many): " + "; ".join(
                f"{r.observer}: {r.datasets} dataset(s), missing {r.missing}" for r in partial.itertuples()) + ".")
        sec.add("mvh_benchmark_bars", "The four model-vs-human metrics, mean over datasets (humans in red).",
                lambda: M.benchmark_bars(bm))
        sec.add("mvh_benchmark_scatter", "The four metrics against each other (one point per observer).",
                lambda: M.benchmark_scatter(bm))
    else:
        sec.note("No benchmark table (it needs human trials: python -m eval stats humans=<model-vs-human data>).")
    return sec


def _psychophysics_section(trials) -> Section | None:
    from .figures import psychophysics as P

    poly = D.degradation_accuracy(trials)
    grat = D.interval_accuracy(trials)
    if poly.empty and grat.empty:
        return None
    sec = Section("Degraded polygons and abutting gratings")
    if not poly.empty:
        sec.add("polygons_accuracy_vs_degradation", "Accuracy against the share of the perimeter removed, "
                "corner- (solid) vs edge-degraded (dashed); band: CI.", lambda: P.accuracy_vs_degradation(poly))
    if not grat.empty:
        sec.add("gratings_accuracy_vs_interval", "Accuracy against the grating interval per direction (dotted: the "
                "ungrated originals).", lambda: P.accuracy_vs_interval(grat))
    if not (trials["observer_type"] == "human").any():
        sec.note("No human data for these tasks.")
    return sec


def _mindset_section(mind: dict, ci: float, seed: int) -> Section | None:
    from .figures import mindset as MS

    if not mind:
        return None
    sec = Section("MindSet: Vision")
    if "similarity" in mind:
        sec.add("mindset_similarity_by_layer", "Distance between the reference and each comparison condition "
                "against layer depth (band: CI over pairs).",
                lambda: MS.similarity_by_layer(D.similarity_summary(mind["similarity"], ci, seed)))
    else:
        sec.note("No similarity-judgment results.")
    if "decoder" in mind:
        sec.add("mindset_decoder_predictions", "Decoder predictions against the true value per condition (legend: "
                "mean signed error).", lambda: MS.decoder_predictions(mind["decoder"]))
    else:
        sec.note("No decoder predictions.")
    return sec


# ----------------------------------------------------------------------------------------------- HTML

CSS = """body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:2em}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f3f3f3;cursor:pointer;user-select:none}th.asc:after{content:" ▲"}th.desc:after{content:" ▼"}
figure{margin:16px 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:13px;color:#444}
.note{background:#fff8e1;border-left:4px solid #e6a700;padding:4px 8px;margin:6px 0}
.scroll{max-height:420px;overflow:auto}pre{background:#f7f7f7;padding:8px;font-size:11px;overflow:auto}
details{margin:6px 0}"""

SORT_JS = """document.querySelectorAll('table.sortable th').forEach(function(th){
 th.addEventListener('click',function(){var col=th.cellIndex,tb=th.closest('table').tBodies[0],rows=[].slice.call(tb.rows),
 asc=!th.classList.contains('asc');th.parentNode.querySelectorAll('th').forEach(function(h){h.className='';});
 th.className=asc?'asc':'desc';rows.sort(function(a,b){var x=a.cells[col].textContent,y=b.cells[col].textContent,
 p=parseFloat(x),q=parseFloat(y),r=(isNaN(p)||isNaN(q))?x.localeCompare(y):p-q;return asc?r:-r;});
 rows.forEach(function(r){tb.appendChild(r);});});});"""


def _table_html(df: pd.DataFrame, max_rows: int = 2000) -> str:
    if df is None or df.empty:
        return "<p class='note'>empty table</p>"
    shown = df.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    body = []
    for row in shown.itertuples(index=False):
        cells = "".join(f"<td>{v:.4g}</td>" if isinstance(v, float) else f"<td>{html.escape(str(v))}</td>"
                        for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = f"<p>first {max_rows} of {len(df)} rows</p>" if len(df) > max_rows else ""
    return (f"<div class='scroll'><table class='sortable'><thead><tr>{head}</tr></thead><tbody>"
            + "".join(body) + f"</tbody></table></div>{more}")


def _rel(target: Path, start: Path) -> str:
    import os

    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def build_report(c: dict, tables: dict | None = None, trials: pd.DataFrame | None = None,
                 summary: pd.DataFrame | None = None, figure_workers: int | None = None) -> Path:
    """Write ``<stats>/report.html`` and ``<stats>/figures/*.png|pdf`` for the results folder ``c["results"]``
    (``c["out"]``: the statistics folder, default ``<results>/stats``) and return the page's path.

    ``c`` keys (those of ``eval stats``; all optional but ``results``): ``task`` (dataset folder: provenance,
    gallery link, conditions of generated datasets), ``zoo`` (list name or mapping with ``imagenet_top1``),
    ``humans``/``humans_format`` (human trials, as in ``eval stats``), ``split``, ``ci``, ``seed``.
    ``tables`` (the statistics tables), ``trials`` (with human trials) and ``summary`` are taken as given
    when the caller already has them (``eval stats``), else read from the folders. ``figure_workers``: helper
    processes that save figures beside this one (:class:`eval.figures.style.FigureSaver`; default 1 on a
    machine with two or more cores, 0 = all here); they start before the results are read."""
    from .figures.style import FigureSaver

    res = Path(c["results"])
    if not res.is_dir():
        raise FileNotFoundError(f"results={res}: no such folder")
    out = Path(c["out"]) if c.get("out") else res / "stats"  # created once there is something to report
    split, ci, seed = c.get("split") or None, float(c.get("ci") or 0.95), int(c.get("seed") or 0)
    task = Path(c["task"]) if c.get("task") else None
    if task is not None and not task.is_dir():
        raise FileNotFoundError(f"task={task}: no such folder (the dataset the results were computed on)")
    with FigureSaver(figure_workers) as saver:
        return _write_report(c, res, out, task, split, ci, seed, tables, trials, summary, saver)


def _write_report(c, res: Path, out: Path, task, split, ci, seed, tables, trials, summary, saver) -> Path:
    from infra.files import atomic_write_text

    from .results import read_results

    tables = dict(tables) if tables is not None else read_stats_tables(out)
    split = report_split(split, out, tables)
    summary = read_results(res, "summary") if summary is None else summary
    if trials is None:
        trials = read_trials(res)
        if c.get("humans"):
            from .humans import load_humans

            humans = load_humans(c["humans"], c.get("humans_format", "model-vs-human"), c)
            trials = pd.concat([trials, humans], ignore_index=True)
    if task is not None and (task / "annotations.parquet").is_file() and not trials.empty:
        trials = D.attach_conditions(trials, pd.read_parquet(task / "annotations.parquet", columns=None))
    zoo = None
    if c.get("zoo"):
        from .zoo import zoo_table

        zoo = zoo_table(c["zoo"])
    mind = _mindset_tables(res)
    if trials.empty and summary.empty and not mind:
        raise ValueError(f"results={res}: no trials or summaries, and no similarity or decoder results (run "
                         f"python -m eval probe|ood|decoder|similarity ... out={res} first)")

    if (tables.get("seed_summary") is None or tables["seed_summary"].empty) and not summary.empty:
        from .probe import seed_summary

        tables["seed_summary"] = seed_summary(summary, ci)  # once: the accuracy figure and the tables show it
    humans = human_table(trials, tables.get("observers"), ci, seed)
    sections = [s for s in (
        _accuracy_section(summary, tables, humans, split, ci),
        _threedpc_section(summary, trials, tables, zoo, humans, split, ci, seed),
        _mvh_section(trials, tables, summary),
        _psychophysics_section(trials),
        _mindset_section(mind, ci, seed),
    ) if s is not None]

    out.mkdir(parents=True, exist_ok=True)
    fig_dir = out / "figures"
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
             f"<title>Vantage results: {html.escape(res.name)}</title><style>{CSS}</style></head><body>",
             f"<h1>Results: <code>{html.escape(str(res))}</code></h1>",
             f"<p>Generated {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; split "
             f"<code>{html.escape(split)}</code>; CI level {ci}. Figures as PDF and PNG in "
             f"<a href='figures/'>figures/</a>; tables as CSV/Parquet beside this page.</p>"]
    toc = "".join(f"<li><a href='#s{i}'>{html.escape(s.title)}</a></li>" for i, s in enumerate(sections))
    parts.append(f"<ul><li><a href='#prov'>Provenance</a></li><li><a href='#tables'>Summary tables</a></li>{toc}</ul>")
    parts.append(_provenance_html(res, summary, trials, tables, task, c, out))
    parts.append(_tables_html(summary, tables, ci, split))
    if not sections:
        parts.append("<p class='note'>No figure: these results hold no task the figures cover.</p>")
    figs = [item for sec in sections for item in sec.items if isinstance(item, Fig)]
    saved = iter(saver.save_all([(f.figure, f.stem) for f in figs], fig_dir))  # in the order of the loop below
    for i, sec in enumerate(sections):
        parts.append(f"<h2 id='s{i}'>{html.escape(sec.title)}</h2>")
        for item in sec.items:
            if isinstance(item, str):
                parts.append(f"<p class='note'>{html.escape(item)}</p>")
                continue
            files = next(saved)
            uri = "data:image/png;base64," + base64.b64encode(files["png_bytes"]).decode()
            parts.append(f"<figure id='{item.stem}'><img src='{uri}' alt='{html.escape(item.caption)}'>"
                         f"<figcaption>{html.escape(item.caption)} <a href='figures/{item.stem}.pdf'>PDF</a> · "
                         f"<a href='figures/{item.stem}.png'>PNG</a></figcaption></figure>")
    absent = [name for name, sec in (("3D-PC", "3D-PC"), ("model-vs-human", "model-vs-human"),
                                     ("degraded polygons / abutting gratings", "Degraded"), ("MindSet", "MindSet"))
              if not any(s.title.startswith(sec) for s in sections)]
    if absent:
        parts.append(f"<p>Not in these results: {html.escape(', '.join(absent))}.</p>")
    parts.append(f"<script>{SORT_JS}</script></body></html>")
    page = out / "report.html"
    atomic_write_text(page, "\n".join(parts))
    return page


def _provenance_html(res: Path, summary, trials, tables, task, c, out: Path) -> str:
    from .results import label_runs

    p = ["<h2 id='prov'>Provenance</h2>"]
    ident = tables.get("identities")
    if ident is None or ident.empty:
        src = summary if not summary.empty else trials[trials["observer_type"] == "model"]
        ident = label_runs(src.assign(observer_type="model"))[1] if not src.empty else pd.DataFrame()
    p.append("<h3>Models and weights</h3>" + _table_html(ident))
    if not summary.empty:
        runs = summary.groupby(["task", "method"], as_index=False).agg(
            models=("model_id", "nunique"), runs=("run_id", "nunique"), seeds=("seed", "nunique"),
            config_digests=("config_digest", lambda s: ", ".join(sorted(set(map(str, s)))[:5])))
        p.append("<h3>Runs</h3>" + _table_html(runs))
    hum = trials[trials["observer_type"] == "human"] if not trials.empty else trials
    obs = tables.get("observers")
    n_h = hum["observer"].nunique() if not hum.empty else (
        obs.loc[obs["observer_type"] == "human", "observer"].nunique() if obs is not None and not obs.empty else 0)
    p.append(f"<p>Human observers: {n_h}" + (f" (from <code>{html.escape(str(c.get('humans')))}</code>)"
                                              if c.get("humans") else "") + ".</p>")
    info = _task_info(task)
    p.append("<h3>Dataset</h3>")
    if info:
        p.append(f"<pre>{html.escape(json.dumps(info, indent=1, default=str))}</pre>")
        gallery = task / "gallery.html"
        if gallery.is_file():
            p.append(f"<p>Dataset gallery: <a href='{html.escape(_rel(gallery, out))}'>{html.escape(str(gallery))}</a></p>")
        else:
            p.append(f"<p class='note'>No dataset gallery yet: python -m tasks.gallery {html.escape(str(task))}</p>")
    else:
        p.append("<p class='note'>No dataset folder given (task=&lt;dir&gt;): no manifest digest or gallery link. "
                 "The runs' configuration digests above cover the dataset's manifest.</p>")
    shown = {k: v for k, v in c.items() if v not in (None, "", {}, []) and k != "zoo"}
    if c.get("zoo"):
        shown["zoo"] = c["zoo"] if isinstance(c["zoo"], str) else (c["zoo"].get("name") or "zoo")
    p.append("<h3>Configuration</h3><pre>" + html.escape(json.dumps(shown, indent=1, default=str)) + "</pre>")
    p.append("<h3>Versions</h3><pre>" + html.escape(json.dumps(_versions(), indent=1)) + "</pre>")
    return "\n".join(p)


def _tables_html(summary, tables, ci, split: str) -> str:
    from .probe import seed_summary

    p = ["<h2 id='tables'>Summary tables</h2><p>Click a column header to sort.</p>"]
    seeds = tables.get("seed_summary")
    if (seeds is None or seeds.empty) and not summary.empty:
        seeds = seed_summary(summary, ci)
    if seeds is not None and not seeds.empty:  # the report's split (VPT-Strategy: its own), as the figures
        seeds = seeds[(seeds["split"] == split) | (seeds["split"] == "strategy")]
    shown = [("Accuracy across seeds", seeds, ["observer", "task", "method", "split", "seeds", "accuracy_mean",
                                               "accuracy_ci_low", "accuracy_ci_high", "balanced_accuracy_mean"]),
             ("Observers (accuracy, noise floor)", tables.get("observers"),
              ["task", "split", "method", "observer", "observer_type", "seed", "n", "accuracy", "accuracy_ci_low",
               "accuracy_ci_high", "noise_floor_p95", "response_entropy_bits"]),
             ("Model-vs-human metrics, mean over datasets", tables.get("benchmark_mean"), None),
             ("Human-human error consistency (ceiling)", tables.get("human_ceiling"), None),
             ("Correlation with ImageNet top-1", tables.get("imagenet_correlation"), None),
             ("Paired sign-flip tests between tasks", tables.get("task_differences"), None),
             ("Similarity judgment (MindSet): mean distance per level and layer", tables.get("similarity_summary"),
              ["model_id", "task", "layer", "comparison_level", "mean_distance", "ci_low", "ci_high", "n"]),
             ("Decoders (MindSet): accuracy or RMSE", tables.get("decoder_summary"),
              ["model_id", "task", "feature", "condition", "target", "metric", "value", "ci_low", "ci_high", "n"])]
    for title, df, cols in shown:
        if df is None or df.empty:
            continue
        if cols:
            df = df[[c for c in cols if c in df.columns]]
        p.append(f"<h3>{html.escape(title)}</h3>" + _table_html(df))
    if tables.get("observers") is None:
        p.append("<p class='note'>No statistics tables yet (python -m eval stats results=…): accuracies are from "
                 "the runs' summaries; no noise floor, human comparison or error consistency.</p>")
    return "\n".join(p)
