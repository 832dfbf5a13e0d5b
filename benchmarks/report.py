"""Speed of the HTML report (issue 17 goal: <= 30 s for a 143-model zoo sweep on the default 3D-PC build).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/report.py [--models 143] [--out /tmp/bench_report]

Also the goal's context: ``python -m eval stats`` on that sweep ends by writing the report, so a user waits for
both; their wall and CPU time (and CPU by step of the statistics) are printed first.

Writes a synthetic results folder of that size in the real schema (``eval.figures.synthetic``): every model
of the sweep probed with 3 seeds on VPT, depth (test 3,750 + human 94 items each: the default build's VPT
test split and human subset) and VPT-Strategy (10 scenes × 10 steps), every 10th model also fine-tuned,
5 human observers on the human subset and the Strategy images, and a zoo list with ImageNet top-1. Then runs
``eval stats`` on it once (n_boot 200, n_perm 50; this also writes the report) and times

* ``build_report`` in-process, reading everything from the folder as ``python -m eval report`` does;
* ``python -m eval report`` end to end (a fresh process: imports and Hydra included);

against two baselines of the same run (same machine load): ``eval stats`` without its report (stats time
minus the report's) and one plain read of the sweep's whole trial table (``read_results_parts``: part by part). CPU times are
printed too (this process's and the figure-saving helper's): on a shared machine they say more than wall time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
ROOT = Path(_here).parent


def make_folder(out: Path, n_models: int, seed: int = 0):
    import pandas as pd

    from eval import results as R
    from eval.figures import synthetic as S

    trials, summary, zoo = S.threedpc_tables(n_models=n_models, n_test=3750, n_human_items=94, n_scenes=10,
                                             n_steps=10, seeds=(0, 1, 2), n_humans=5, finetune_every=10, seed=seed)
    res = out / "results"
    models = trials[trials["observer_type"] == "model"]
    for rid, g in models.groupby("run_id", sort=False):
        R.write_part(res, "trials", rid, g)
    for rid, g in summary.groupby("run_id", sort=False):
        R.write_part(res, "summary", rid, g)
    trials[trials["observer_type"] == "human"].to_parquet(out / "humans.parquet")
    zoo_cfg = {"name": "bench", "models": [{"id": m, "imagenet_top1": float(t)}
                                           for m, t in zip(zoo["model_id"], zoo["imagenet_top1"])]}
    return res, zoo_cfg, len(trials), pd.Series(models["run_id"]).nunique()


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def main() -> None:  # noqa: C901 - a linear script
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=143)
    ap.add_argument("--out", default="/tmp/bench_report")
    ap.add_argument("--no-stats", action="store_true",
                    help="skip eval stats (slow under load): time the report from the runs and human trials alone")
    a = ap.parse_args()
    out = Path(a.out)
    res = out / "results"
    reuse = (res / "summary").is_dir() and (out / "humans.parquet").is_file()
    if not reuse:
        if out.exists():
            import shutil

            shutil.rmtree(out)
        out.mkdir(parents=True)
    from eval import html_report
    from eval.report import run_stats

    t = time.perf_counter()
    if reuse:  # the folder of an earlier run (same seed, same size): only the zoo list is rebuilt
        from eval.figures import synthetic as S

        zoo = S.threedpc_tables(n_models=a.models, n_test=1, n_human_items=1, n_scenes=1, n_steps=2, seeds=(0,))[2]
        zoo_cfg = {"name": "bench", "models": [{"id": m, "imagenet_top1": float(v)}
                                               for m, v in zip(zoo["model_id"], zoo["imagenet_top1"])]}
        print(f"reusing the synthetic sweep in {res}", flush=True)
    else:
        res, zoo_cfg, n_rows, n_runs = make_folder(out, a.models)
        print(f"synthetic sweep: {a.models} models, {n_runs} runs, {n_rows:,} trial rows "
              f"(written in {time.perf_counter() - t:.1f} s)", flush=True)
    from eval.results import read_results_parts

    # the baseline stays the plain per-part read (what read_results did before its one-scan fast path), so
    # ratios compare across versions
    t, cpu = time.perf_counter(), time.process_time()
    read_results_parts(res, "trials")
    read_all, read_cpu = time.perf_counter() - t, time.process_time() - cpu
    c = {"results": str(res), "humans": str(out / "humans.parquet"), "humans_format": "trials", "zoo": zoo_cfg,
         "split": "test", "aggregation": "model-vs-human", "n_boot": 200, "n_perm": 50, "ci": 0.95, "seed": 0}
    spent = {}
    real = html_report.build_report

    def timed(*args, **kw):
        t0 = time.perf_counter()
        try:
            return real(*args, **kw)
        finally:
            spent["report_in_stats"] = time.perf_counter() - t0

    stats_only = float("nan")
    if not a.no_stats:
        from eval import probe as EP
        from eval import report as ER
        from eval import results as ERS

        steps = {}  # CPU seconds of eval stats' steps (this process)

        def step(name, fn):
            def wrapped(*args, **kw):
                c0 = time.process_time()
                try:
                    return fn(*args, **kw)
                finally:
                    steps[name] = steps.get(name, 0.0) + time.process_time() - c0
            return wrapped

        # run_stats looks these up on their modules at call time (label_runs and seed_summary are imported
        # inside it), so wrapping the module attributes times each step
        where = [(ER, "read_results"), (ERS, "label_runs"), (EP, "seed_summary"), (ER, "observer_table"),
                 (ER, "consistency_tables"), (ER, "_benchmark"), (ER, "task_differences")]
        saved = {(m, n): getattr(m, n) for m, n in where}
        for (m, n), fn in saved.items():
            setattr(m, n, step(n, fn))
        html_report.build_report = timed
        t, cpu, kids = time.perf_counter(), time.process_time(), _children_cpu()
        try:
            run_stats(c)
        finally:
            html_report.build_report = real
            for (m, n), fn in saved.items():
                setattr(m, n, fn)
        stats_total, stats_cpu, stats_kids = time.perf_counter() - t, time.process_time() - cpu, _children_cpu() - kids
        stats_only = stats_total - spent["report_in_stats"]
        print(f"eval stats + its report (what a user of the sweep waits for): {stats_total:.1f} s wall; CPU "
              f"{stats_cpu:.1f} s in this process + {stats_kids:.1f} s in the figure-saving helper", flush=True)
        print("  CPU by step: " + ", ".join(f"{n.strip('_')} {v:.1f} s" for n, v in steps.items()))
        print(f"eval stats without its report (baseline): {stats_only:.1f} s; the report inside it: "
              f"{spent['report_in_stats']:.1f} s ({spent['report_in_stats'] / stats_only:.2f}x the baseline)")

    t, cpu, kids = time.perf_counter(), time.process_time(), _children_cpu()
    page = real({k: v for k, v in c.items() if k not in ("n_boot", "n_perm", "aggregation")})
    in_process, report_cpu, helper_cpu = time.perf_counter() - t, time.process_time() - cpu, _children_cpu() - kids
    n_fig = page.read_text().count("<figure")
    zoo_arg = []  # the CLI takes a zoo list by name; the synthetic zoo is passed in-process only
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "eval", "report", f"results={res}", *zoo_arg], cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    cli = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(p.stderr[-2000:])
    load = os.getloadavg()
    vs_stats = "" if a.no_stats else f"{in_process / stats_only:.2f}x eval stats, "
    print(f"build_report from the folder ({n_fig} figures, PNG + PDF each): {in_process:.1f} s (goal 30 s), "
          f"{vs_stats}{in_process / read_all:.2f}x one read of the trial table ({read_all:.1f} s)", flush=True)
    print(f"CPU time: build_report {report_cpu:.1f} s in this process (all its threads) + {helper_cpu:.1f} s in the "
          f"figure-saving helper; one read of the trial table {read_cpu:.1f} s "
          f"(CPU ratio {(report_cpu + helper_cpu) / read_cpu:.2f}x)")
    print(f"python -m eval report (fresh process, no zoo: {p.stdout.strip()}): {cli:.1f} s")
    print(f"load average during the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min) on "
          f"{os.cpu_count()} cores; page {page} ({page.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
