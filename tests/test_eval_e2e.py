"""End to end: a tiny 3D-PC build (the session's, tests/conftest.py) → `python -m eval probe` (single run
and a joblib sweep over two models) → trial and summary tables → `python -m eval stats` with human responses in the 3D-PC format."""
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from eval import results as R
from eval.humans import HumanDataError, load_3dpc_humans
from eval.tasks import TaskError, load_task

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_build(tiny_3dpc):
    """The session's TINY 3D-PC build (shared, read-only: results and caches go to tmp_path). The eval
    pipeline, not the build's size, is under test; the full preset=small build → probe → report runs in
    tests/test_report_html.py (slow) and `make demo`."""
    return tiny_3dpc


@pytest.fixture
def run(eval_cli):
    """``python -m eval <args>`` in a fresh process forked from a warm server (tests/conftest.py: eval_cli), or
    with ``fresh=True`` in a new interpreter (the first probe run below: a true end-to-end run in the default suite)."""
    def run(*args, env_extra=None, fresh=False):
        env = {**os.environ, "VANTAGE_CACHE": env_extra or os.environ.get("VANTAGE_CACHE", ""), "HF_HUB_OFFLINE": "1"}
        if fresh:
            return subprocess.run([sys.executable, "-m", "eval", *args], capture_output=True, text=True, cwd=ROOT,
                                  env=env, timeout=600)
        return eval_cli(*args, env=env, cwd=ROOT, timeout=600)

    return run


def test_task_views_of_the_build(small_build):
    vpt = load_task(small_build, "vpt")
    md = pd.read_parquet(small_build / "metadata.parquet")
    test = vpt.split("test")
    assert len(test) == int((md["in_vpt"] & (md["split"] == "test")).sum())
    human = md.set_index("file_name").loc[vpt.split("human")["item_id"]]
    assert (human["split"] == "test").all() and human["in_human"].all()  # test-split frames, both labels set
    assert not set(vpt.split("train")["group"]) & set(vpt.split("val")["group"])  # val held out by setting
    lab = md.set_index("file_name")["vpt_label"]
    assert (test["label"].to_numpy() == lab.loc[test["item_id"]].to_numpy()).all()
    strat = load_task(small_build, "vpt_strategy")
    assert strat.eval_splits == ("strategy",) and len(strat.split("strategy")) == int(md["in_strategy"].sum())
    with pytest.raises(TaskError, match="targets"):
        load_task(small_build, "colour")


def test_probe_cli_sweep_and_stats(small_build, tmp_path, run):
    res, cache = tmp_path / "results", tmp_path / "cache"
    common = [f"task={small_build}", "target=depth", f"out={res}", "pretrained=false", "progress=false",
              "probe.seeds=[0,1]", "probe.n_boot=500"]
    p = run("probe", "model=timm:test_resnet", *common, env_extra=str(cache), fresh=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "embeddings computed" in p.stdout
    trials = R.read_results(res, "trials")
    summary = R.read_results(res, "summary")
    task = load_task(small_build, "depth")
    n_eval = len(task.items[task.items["split"].isin(["test", "human"])])
    assert len(trials) == 2 * n_eval and set(trials["split"]) == {"test", "human"}
    assert set(summary["seed"]) == {0, 1} and len(summary) == 4
    assert {k: str(trials.dtypes[k]) for k in R.TRIAL_DTYPES} == R.TRIAL_DTYPES
    # the 3D-PC paper's preprocessing by default (resize the shorter side, no crop), recorded on every row
    assert trials["preprocess"].str.startswith("shorter_side:").all() and set(trials["weights"]) == {"random:seed=0"}
    assert (trials["cluster"] != "").all()  # CIs resample placements (scene, setting)

    # a sweep over two models with the joblib launcher; the first model's runs exist and are skipped
    p = run("probe", "--multirun", "model=timm:test_resnet,timm:test_vit", *common, "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2", env_extra=str(cache))
    assert p.returncode == 0, p.stderr[-2000:]
    summary = R.read_results(res, "summary")
    assert sorted(summary["model_id"].unique()) == ["timm:test_resnet", "timm:test_vit"]
    assert len(summary) == 8 and not summary.duplicated(["model_id", "seed", "split"]).any()
    assert "embeddings cached" in p.stdout  # test_resnet's embeddings were reused
    # another target on the same build reuses the same cache entry (embeddings cover the whole folder)
    p = run("probe", "model=timm:test_resnet", *[a.replace("target=depth", "target=vpt") for a in common],
            env_extra=str(cache))
    assert p.returncode == 0 and "embeddings cached" in p.stdout, p.stderr[-2000:]

    # human responses in the 3D-PC format: one perfect observer, one who inverts every answer
    human = task.split("human")
    rows = []
    for subject, flip in (("p1", False), ("p2", True), ("p3", False)):
        for _, r in human.iterrows():
            resp = int(r["label"]) if not flip else 1 - int(r["label"])
            # absolute paths for one observer: images are matched by path suffix
            stim = str(small_build / r["item_id"]) if subject == "p3" else r["item_id"]
            rows.append({"participant": subject, "stimulus": stim, "key": {0: "left", 1: "right"}[resp]})
    csv = tmp_path / "humans.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    ht = load_3dpc_humans(csv, task, subject_col="participant", image_col="stimulus", response_col="key",
                          response_map={"left": 0, "right": 1})
    acc = ht.groupby("observer")["correct"].mean()
    assert acc.to_dict() == {"p1": 1.0, "p2": 0.0, "p3": 1.0}
    with pytest.raises(HumanDataError, match="not in task"):
        bad = pd.DataFrame([{"participant": "x", "stimulus": "nope.png", "key": "left"}])
        bad.to_csv(tmp_path / "bad.csv", index=False)
        load_3dpc_humans(tmp_path / "bad.csv", task, subject_col="participant", image_col="stimulus",
                         response_col="key", response_map={"left": 0, "right": 1})

    p = run("stats", f"results={res}", f"humans={csv}", "humans_format=3dpc", f"task={small_build}", "target=depth",
            "humans_options.subject_col=participant", "humans_options.image_col=stimulus",
            "humans_options.response_col=key", "+humans_options.response_map={left:0,right:1}", "split=human",
            "n_boot=500", "n_perm=200")
    assert p.returncode == 0, p.stderr[-2000:]
    out = res / "stats"
    assert (out / "report.md").is_file()
    ceil = pd.read_csv(out / "human_ceiling.csv")
    # kappa(p1,p3) = 1 (both perfect: observed consistency 1, model-vs-human's rule); p1 vs p2 and p2 vs p3:
    # c_obs = 0, c_exp = 0 -> kappa 0
    assert ceil.loc[0, "pairs"] == 3 and ceil.loc[0, "kappa_mean"] == pytest.approx(1 / 3)
    ec = pd.read_csv(out / "error_consistency.csv")
    assert set(ec["human"]) == {"p1", "p2", "p3"} and set(ec["model_id"]) == {"timm:test_resnet", "timm:test_vit"}
    obs = pd.read_csv(out / "observers.csv")
    assert set(obs["observer_type"]) == {"human", "model"}


def test_cli_errors_are_clear(small_build, tmp_path, run):
    p = run("probe", f"task={small_build}", f"out={tmp_path}")
    assert p.returncode == 2 and "missing required setting model" in p.stderr
    p = run("probe", "model=resnet18", f"task={small_build}", f"out={tmp_path}")
    assert p.returncode == 2 and "expected 'timm:<name>'" in p.stderr
    p = run("probe", "model=timm:resnet18.tv_in1k", f"task={small_build}", f"out={tmp_path}", "hub=offline")
    assert p.returncode == 2 and "weights=<file>" in p.stderr and "timm:resnet18.tv_in1k" in p.stderr
    p = run("probe", "model=timm:test_resnet", "pretrained=false", f"task={small_build}", f"out={tmp_path}",
            "probe.dropout=1.5")
    assert p.returncode == 2 and "probe.dropout=1.5 is not allowed (in [0, 1))" in p.stderr
    p = run("probe", "model=timm:test_resnet", "pretrained=false", f"task={tmp_path / 'none'}", f"out={tmp_path}")
    assert p.returncode == 2 and "no such folder" in p.stderr
    # the documented Slurm launcher composes (submitit; nothing is submitted with --cfg)
    p = run("probe", "model=timm:test_resnet", f"task={small_build}", f"out={tmp_path}",
            "hydra/launcher=vantage_slurm", "--cfg", "hydra")
    assert p.returncode == 0 and "SlurmLauncher" in p.stdout and "timeout_min: 120" in p.stdout
    p = run("zoo", "tests", "--ids")
    assert p.stdout.strip() == "timm:test_resnet,timm:test_vit,timm:test_efficientnet"


def test_finetune_cli_pauses_and_resumes(small_build, tmp_path, run):
    args = ["finetune", "model=timm:test_resnet", "pretrained=false", f"task={small_build}", "target=vpt",
            f"out={tmp_path}", "progress=false", "finetune.epochs=2", "finetune.n_boot=200"]
    p = run(*args, "epochs_per_invocation=1")
    assert p.returncode == 0 and "paused after 1 epoch" in p.stdout, p.stderr[-2000:]
    assert not (tmp_path / "summary").exists() and list((tmp_path / "checkpoints").glob("*/last.pt"))
    p = run(*args, "epochs_per_invocation=1")  # same configuration: resumes at epoch 2 and finishes
    assert p.returncode == 0 and "accuracy" in p.stdout, p.stderr[-2000:]
    s = R.read_results(tmp_path, "summary")
    assert set(s["method"]) == {"finetune"} and (s["epochs_run"] == 2).all()
    assert set(s["split"]) == {"test", "human"}
