"""The 3D-PC results experiment (issue 35) end to end on a fixture build: `python -m eval.results_3dpc run`
(probes, per-layer probes, fine-tuning, VPT-Strategy transfer) with a tiny timm model, resumed, then `page`;
every accuracy on the page is traced back through its key to result rows and recomputed from the trials."""
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eval import results as R
from eval import stats
from eval.results_3dpc import ExperimentConfig, ExperimentError, Observer, read_cost, record_build_time
from eval.results_3dpc_page import accuracy_table

MODEL = "module:eval.examples:small_cnn"  # 64 px input, 3 tapped blocks


def _fixture_build(root: Path, size: int = 32) -> Path:
    """A minimal 3D-PC build in the builder's layout: 2 train, 1 val, 2 test and 1 strategy scenes, 4 settings
    of 3 frames each (strategy: one sequence of 6 steps, 3 blocked). The VPT label is a red square's side
    (left = visible), the depth label its height, so a model can learn both; the human subset is 4 test frames."""
    from infra.images import save_png

    rng = np.random.default_rng(0)
    rows = []
    scenes = [("train", "a_01"), ("train", "a_02"), ("val", "b_01"), ("test", "a_03"), ("test", "b_03")]
    for split, scene in scenes:
        for setting in range(4):
            vpt = setting % 2
            for frame in range(3):
                depth = (setting // 2 + frame) % 2
                img = rng.integers(0, 80, (size, size, 3), dtype=np.uint8)
                x = 2 if vpt else size // 2 + 2
                y = 2 if depth else size // 2 + 2
                img[y:y + size // 3, x:x + size // 3] = (220, 30, 30)
                f = f"images/{split}/{scene}/s{setting:02d}/f{frame:03d}.png"
                (root / f).parent.mkdir(parents=True, exist_ok=True)
                save_png(root / f, img)
                rows.append(dict(file_name=f, split=split, vpt_label=vpt, depth_label=depth, in_vpt=True,
                                 in_depth=True, in_human=split == "test" and frame == 0 and scene == "a_03",
                                 in_strategy=False, scene=scene, setting=setting,
                                 vpt_reason="visible" if vpt else ("occluded" if setting == 0 else "out_of_view")))
    for step in range(6):
        vpt = int(step in (0, 1, 5))
        img = rng.integers(0, 80, (size, size, 3), dtype=np.uint8)
        img[4:12, 4 + 3 * step:12 + 3 * step] = (220, 30, 30)
        f = f"images/strategy/c_04/step{step:02d}.png"
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        save_png(root / f, img)
        rows.append(dict(file_name=f, split="strategy", vpt_label=vpt, depth_label=step % 2, in_vpt=False,
                         in_depth=False, in_human=False, in_strategy=True, scene="c_04", setting=step,
                         vpt_reason="visible" if vpt else "occluded"))
    pd.DataFrame(rows).to_parquet(root / "metadata.parquet")
    (root / "manifest.json").write_text(json.dumps({"fixture": "tests/test_results_3dpc.py", "size": size}))
    (root / "config.json").write_text(json.dumps({"size": size}))
    return root


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("results3dpc")
    build, res = _fixture_build(tmp / "build"), tmp / "results"
    args = ["run", f"build={build}", f"results={res}", f"observers=[{MODEL}@random,{MODEL}@random1]",
            f"finetune_models={MODEL}@random", "probe_seeds=0", "finetune_seeds=[0]", "finetune_epochs=2",
            "finetune_frames=1", "epochs_per_invocation=1", "n_boot=200", f"cache_dir={tmp / 'cache'}",
            "progress=false"]
    # one fine-tuning epoch per invocation: probes, VPT epoch 1 | VPT epoch 2, VPT-Strategy, stage probes, depth
    # epoch 1 | depth epoch 2 | nothing left: every run is skipped
    runs = [_main(*args) for _ in range(4)]
    return {"build": build, "res": res, "tmp": tmp, "runs": runs, "args": args}


def _main(*args):
    """The command (``python -m eval.results_3dpc``) in this process: a new interpreter's imports of torch and
    timm would cost more than the tiny experiment."""
    import contextlib
    import io
    import types

    from eval.results_3dpc import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(list(args))
    return types.SimpleNamespace(returncode=0, stdout=out.getvalue(), stderr="")


def test_run_is_resumable_and_records_identity_and_cost(experiment):
    for p in experiment["runs"]:
        assert p.returncode == 0, p.stderr[-3000:]
    assert ["paused" in p.stdout for p in experiment["runs"]] == [True, True, False, False]
    res = experiment["res"]
    summary = R.read_results(res, "summary")
    runs = summary.drop_duplicates("run_id")
    n_taps = 3  # small_cnn has 3 blocks
    # 2 observers x 1 seed x (3 pooled targets + 3 stages x 2 targets) + the spatial read-out of the first random
    # observer (no pretrained one here) on depth and VPT-basic; fine-tuning: vpt, depth, transfer
    assert (runs["method"] == "probe").sum() == 2 * (3 + 2 * n_taps) + 2
    ft = runs[runs["method"] == "finetune"]
    assert sorted(ft["task"]) == ["3dpc/depth", "3dpc/vpt", "3dpc/vpt_strategy"]
    assert (ft.loc[ft["task"] != "3dpc/vpt_strategy", "epochs_run"] == 2).all()
    vpt_ft = ft[ft["task"] == "3dpc/vpt"].iloc[0]
    transfer = ft[ft["task"] == "3dpc/vpt_strategy"].iloc[0]
    assert transfer["best_epoch"] == vpt_ft["best_epoch"] and transfer["split"] == "strategy"
    # run identity on every row: model, weights, preprocessing, feature, method config, seed, run id
    trials = R.read_results(res, "trials")
    assert set(trials["weights"]) == {"random:seed=0", "random:seed=1"}
    assert trials["preprocess"].str.startswith("shorter_side:").all() and (trials["method_config"] != "").all()
    assert (trials["cluster"] != "").all()
    assert set(trials["feature"]) == {"pooled", "finetuned", *(f"features.{3 * i + 2}" for i in range(n_taps)),
                                      "features.8@grid3"}
    # the cost ledger: one embeddings row per observer and one for the spatial read-out (a cache entry of its
    # own), a probe row per run, fine-tuning epochs summing to 2
    cost = read_cost(res)
    assert (cost["step"] == "embeddings").sum() == 3 and (cost["step"] == "probe").sum() == (runs["method"] == "probe").sum()
    for task in ("3dpc/vpt", "3dpc/depth"):  # paused after 1 epoch, resumed for the 2nd
        fcost = cost[(cost["step"] == "finetune") & (cost["task"] == task)]
        assert fcost["epochs"].tolist() == [1, 1] and set(fcost["run_id"]) == set(ft.loc[ft["task"] == task, "run_id"])
    assert (cost["step"] == "transfer").sum() == 1
    assert (cost["build"] == cost["build"].iloc[0]).all() and cost["build"].iloc[0] != ""
    assert (cost["cpu_s"] >= 0).all()
    # the last invocation found everything done: no ledger row
    assert len(cost) == 3 + (runs["method"] == "probe").sum() + 2 + 1 + 2


def test_page_rows_trace_to_result_rows(experiment):
    res, tmp = experiment["res"], experiment["tmp"]
    out = tmp / "docs" / "results.md"
    p = _main("page", f"results={res}", f"out={out}", "n_boot=200")
    text = out.read_text()
    for stem in ("results_probe", "results_finetune", "results_strategy", "results_layers", "results_strategy_steps"):
        assert (out.parent / "img" / f"{stem}.png").stat().st_size > 5000, stem
        assert f"](img/{stem}.png)" in text
    # the provenance table: key -> run ids; the accuracy table: key -> accuracy [CI]
    prov = {}
    for line in text.split("## Provenance")[1].splitlines():
        m = re.match(r"\| (R\d+) \| (\S+) \| (\w+) \| (\S+) \| (\w+) \|.*\| (`.*`) \|$", line)
        if m:
            prov[m[1]] = dict(task=m[2], method=m[3], feature=m[4], split=m[5], runs=re.findall(r"`([^`]+)`", m[6]))
    table = text.split("## Accuracy: task × model × method")[1].split("## Figures")[0]
    rows = re.findall(r"^\| (R\d+) \| [^|]+ \| [^|]+ \| [^|]+ \| (\w+) \| ([\d.]+) \[([\d.]+), ([\d.]+)\] \|", table,
                      flags=re.M)
    assert len(rows) == 2 * (2 * 2 + 1) + (2 * 2 + 1)  # probes of 2 observers, fine-tuning: {test, human} x 2 + strategy
    assert "not run" not in table  # every planned cell ran
    summary, trials = R.read_results(res, "summary"), R.read_results(res, "trials")
    for key, split, acc, lo, hi in rows:
        src = prov[key]
        assert src["split"] == split and src["runs"]
        assert set(src["runs"]) <= set(summary["run_id"])  # every run id is a summary row ...
        t = trials[trials["run_id"].isin(src["runs"]) & (trials["split"] == split)]
        assert set(t["run_id"]) == set(src["runs"])  # ... with its trials
        assert set(t["task"]) == {src["task"]} and set(t["method"]) == {src["method"]}
        assert float(acc) == pytest.approx(t["correct"].mean(), abs=5e-4)  # recomputed from the trial rows
        units = t["cluster"] if split != "strategy" else t["item_id"].str.rpartition("/")[0]  # strategy: by scene
        e, _ = stats.cluster_bootstrap_ci(t["label"], t["response"], units, 200, 0.95, seed=0)
        assert (float(lo), float(hi)) == pytest.approx((e.ci_low, e.ci_high), abs=5e-4)
    # accuracy by VPT reason: the key's trials split by the build's vpt_reason
    items = pd.read_parquet(res / "items.parquet")
    assert set(items["item_id"]) == set(trials.loc[trials["split"].isin(["test", "human", "strategy"]), "item_id"])
    section = text.split("## Accuracy by VPT reason")[1]
    by_reason = re.findall(r"^\| (R\d+) \| (?:VPT-basic|Depth order) \| [^|]+ \| [^|]+ \| facing away \(out of view\) "
                           r"\| ([\d.]+) \[", section, flags=re.M)
    assert by_reason and "| Depth order |" in section.split("\n\n")[1]  # depth rows too (where the observer looks)
    for key, value in by_reason:
        t = trials[trials["run_id"].isin(prov[key]["runs"]) & (trials["split"] == "test")]
        away = set(items.loc[items["vpt_reason"] == "out_of_view", "item_id"])
        assert float(value) == pytest.approx(t[t["item_id"].isin(away)]["correct"].mean(), abs=5e-4)
    # the spatial read-out: its own section, each cell the accuracy row of its key; not a per-layer column
    spatial = text.split("## Spatial read-out")[1].split("\n## ")[0]
    cells = re.findall(r"^\| [^|]+ \| (Depth order|VPT-basic) \| [^|]+\((R\d+)\) \| ([\d.]+) \[[^|]+\((R\d+)\) \| "
                       r"([-+][\d.]+), p [^|]+ \((\d+) placements\) \| `features\.8@grid3` \|$", spatial, flags=re.M)
    assert len(cells) == 2, spatial
    for _, pooled_key, grid_acc, grid_key, diff, n in cells:
        per = [trials[trials["run_id"].isin(prov[k]["runs"]) & (trials["split"] == "test")]
               .groupby("cluster")["correct"].mean() for k in (grid_key, pooled_key)]
        assert float(diff) == pytest.approx((per[0] - per[1]).mean(), abs=5e-4) and int(n) == len(per[0])
        assert prov[grid_key]["feature"] == "features.8@grid3" and prov[pooled_key]["feature"] == "pooled"
        t = trials[trials["run_id"].isin(prov[grid_key]["runs"]) & (trials["split"] == "test")]
        assert float(grid_acc) == pytest.approx(t["correct"].mean(), abs=5e-4)
    assert "@grid" not in text.split("## Per-layer probes")[1].split("\n## ")[0]
    # verdicts name the random controls; the cost table lists the fine-tuning epochs
    assert "random-weight control at chance" in text and "| finetune |" in text
    # regenerating gives the same page
    _main("page", f"results={res}", f"out={out}", "n_boot=200")
    assert out.read_text() == text


def test_page_marks_planned_cells_not_run_and_includes_the_validity_sweep(experiment, tmp_path):
    """A plan asking for more than the folder holds (another observer, with its stages): its cells are on the
    page as 'not run (cost)', the verdicts say so; the validity sweep's first table is copied in when present."""
    import shutil

    from eval.results_3dpc import write_plan

    res = tmp_path / "results"
    shutil.copytree(experiment["res"], res)
    plan = write_plan(res, ExperimentConfig(observers=(f"{MODEL}@random7",), steps=("probe", "layers")),
                      {f"{MODEL}@random7": ("features.2", "features.5")})
    assert plan["observers"] == [f"{MODEL}@random", f"{MODEL}@random1", f"{MODEL}@random7"]  # merged
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "validity_sweep.md").write_text("# Sweep\n\nintro\n\n| configuration | pass |\n|---|---|\n| seed 1 | yes |\n\n"
                                            "| second | table |\n|---|---|\n")
    _main("page", f"results={res}", f"out={docs / 'results.md'}", "n_boot=200")
    text = (docs / "results.md").read_text()
    table = text.split("## Accuracy: task × model × method")[1].split("## Figures")[0]
    todo = re.findall(r"^\|  \| ([^|]+) \| small_cnn \(random seed 7\) \| linear probe \| (\w+) \| not run \(cost\) \|",
                      table, flags=re.M)
    assert sorted(todo) == sorted([("Depth order", "test"), ("Depth order", "human"), ("VPT-basic", "test"),
                                   ("VPT-basic", "human"), ("VPT-Strategy", "strategy")])
    layers = text.split("## Per-layer probes")[1].split("##")[0]
    assert re.search(r"small_cnn \(random seed 7\) \| Depth order \| not run \(cost\) \| not run \(cost\)", layers)
    assert "| random-weight control at chance | small_cnn (random seed 7) | not run (cost) |" in text
    sweep = text.split("## Validity across build configurations")[1].split("##")[0]
    assert "| seed 1 | yes |" in sweep and "second" not in sweep and "(validity_sweep.md)" in sweep


def test_accuracy_table_pools_seeds_and_clusters_by_placement():
    """Two seeds of one run group, 4 placements: accuracy = mean of the pooled trials; CI from the cluster
    bootstrap of all trials of a placement (both seeds)."""
    rng = np.random.default_rng(3)
    rows = []
    for seed in (0, 1):
        for i in range(40):
            lab = str(i % 2)
            correct = bool(rng.random() < 0.7)
            rows.append(dict(run_id=f"r{seed}", split="test", item_id=f"i{i}", label=lab,
                             response=lab if correct else str(1 - int(lab)), correct=correct, cluster=f"p{i // 10}",
                             seed=seed))
    trials = pd.DataFrame(rows)
    summary = pd.DataFrame([dict(task="3dpc/vpt", method="probe", feature="pooled", model_id="timm:x", weights="random:seed=0",
                                 preprocess="p", method_config="m", run_id=f"r{s}", split="test") for s in (0, 1)])
    acc = accuracy_table(trials, summary, n_boot=500)
    r = acc.iloc[0]
    assert r["accuracy"] == pytest.approx(trials["correct"].mean()) and r["seeds"] == 2 and r["n_items"] == 40
    assert r["n_placements"] == 4 and r["observer"] == "x (random)" and r["run_ids"] == "r0,r1"
    e, _ = stats.cluster_bootstrap_ci(trials["label"], trials["response"], trials["cluster"], 500, 0.95, seed=0)
    assert (r["ci_low"], r["ci_high"]) == (e.ci_low, e.ci_high)


def test_cue_table_finds_the_cue_the_answers_follow():
    """Answers copied from a cue that carries no label information: that cue tops the table with answer AUC 1
    and label AUC ~0.5; a cue equal to the label has no excess."""
    from eval.results_3dpc_page import cue_table

    rng = np.random.default_rng(0)
    n = 200
    label = rng.integers(0, 2, n)
    shortcut = rng.random(n)
    answer = (shortcut > 0.5).astype(int)
    items = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "cue_shortcut": shortcut,
                          "cue_honest": label + 0.1 * rng.random(n), "cue_noise": rng.random(n)})
    trials = pd.DataFrame({"run_id": "r", "split": "test", "item_id": items["item_id"], "label": label.astype(str),
                           "response": answer.astype(str), "seed": 0})
    acc = pd.DataFrame([dict(key="R1", task="3dpc/vpt", method="probe", feature="pooled", split="test",
                             observer="m", run_ids="r")])
    t = cue_table(trials, acc, items, top=3)
    assert t.iloc[0]["cue"] == "shortcut" and t.iloc[0]["auc_answer"] == 1.0
    assert abs(t.iloc[0]["auc_label"] - 0.5) < 0.1
    honest = t[t["cue"] == "honest"].iloc[0]
    assert honest["auc_label"] == 1.0 and honest["excess"] < 0


def test_build_time_report_and_bad_input(experiment, tmp_path, capsys):
    report = tmp_path / "time.txt"
    report.write_text("\tCommand being timed: \"python -m tasks.threedpc out=x\"\n\tUser time (seconds): 100.50\n"
                      "\tSystem time (seconds): 20.00\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03\n"
                      "\tMaximum resident set size (kbytes): 204800\n")
    res = tmp_path / "res"
    os.utime(report, (1_800_000_000, 1_800_000_000))  # GNU time writes its report as the build ends
    row = record_build_time(res, experiment["build"], report)
    assert row["cpu_s"] == pytest.approx(120.5) and row["wall_s"] == pytest.approx(3723)
    assert row["started"] == "2027-01-15T06:57:57+00:00"  # 1,800,000,000 s (08:00:00 UTC) less 1:02:03
    assert read_cost(res).iloc[0]["step"] == "build"
    (tmp_path / "bad.txt").write_text("nothing\n")
    with pytest.raises(ExperimentError, match="GNU time"):
        record_build_time(res, experiment["build"], tmp_path / "bad.txt")
    assert Observer.parse("timm:a@random2") == Observer("timm:a", False, 2)
    with pytest.raises(ExperimentError, match="@random"):
        Observer.parse("timm:a@imagenet")
    with pytest.raises(Exception, match="steps"):
        ExperimentConfig(steps=("probe", "dance"))
    from eval.results_3dpc import main

    for argv, message in ((["run", f"build={tmp_path / 'none'}", f"results={res}"], "no such folder"),
                          (["page", f"results={tmp_path / 'none'}"], "no summary/ folder"),
                          (["run", f"build={experiment['build']}", f"results={res}", "steps=probe,dance"],
                           "steps='dance' is not allowed"),
                          (["cost", f"build={experiment['build']}", f"results={res}", "max_batches=0"],
                           "max_batches=0 is not allowed"),
                          (["page", f"results={res}", "n_boot=ten"], "n_boot='ten' must be a whole number"),
                          (["run", f"build={experiment['build']}", f"results={res}", "obsevers=[x]"],
                           "did you mean 'observers'?"),
                          (["rnu"], "did you mean 'run'?")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_run_trained_by_another_process_is_left_to_it(experiment, tmp_path):
    """Two invocations on one results folder (probes in one, ``steps=finetune`` in another): a fine-tuning
    run whose lock another process holds is skipped, and so is its VPT-Strategy test; the rest goes on."""
    from eval.results_3dpc import run_lock

    res = tmp_path / "results"
    with run_lock(res, "x") as a:
        with run_lock(res, "x") as b:
            assert a and not b  # flock: a second open file description cannot take it, even in this process
    ft = R.read_results(experiment["res"], "summary").drop_duplicates("run_id")
    ft = ft[ft["method"] == "finetune"].set_index("task")["run_id"]
    args = [a for a in experiment["args"] if not a.startswith(("results=", "epochs_per_invocation="))]
    with run_lock(res, ft["3dpc/vpt"]):
        out = _main(*args, f"results={res}", "steps=finetune")
    assert "1 fine-tuning runs" in out.stdout and "2 fine-tuning step(s) left to another process" in out.stdout
    done = set(R.read_results(res, "summary")["run_id"])
    assert done == {ft["3dpc/depth"]}  # the same run id as in the experiment's folder; VPT and its test left


# ------------------------------------------------------------------------------------------------ run identity
# Issue 33: the command moved from argparse (--build ... --steps probe,layers) to infra.cli (build=...
# steps=probe,layers); the run ids it writes must not change, or a results folder written by the first
# release (an experiment was running with it) would be run again. The ids below were recorded from the
# argparse CLI at commit 9b0f831 (before the move) with the same settings: the fixture experiment's
# command above spelled as `run --build=<b> --results=<r> --observers=<M>@random,<M>@random1
# --finetune-models=<M>@random --probe-seeds=0 --finetune-seeds=0 --finetune-epochs=2 --finetune-frames=1
# --epochs-per-invocation=1 --n-boot=200 --cache-dir=<c> --no-progress`, run 4 times, its summary's run ids;
# identical in two runs in different folders. A deliberate change of the run identity (eval.runner.run_digest,
# the fixture build) changes them too: record them again and say so, since old results folders then rerun.
OLD_FIXTURE_RUN_IDS = {f"{m}__3dpc_{t}__module_eval.examples_small_cnn__seed0__{d}" for m, t, ds in (
    ("finetune", "depth", ["36a9ece2d4b6"]), ("finetune", "vpt", ["6e4f35d8f52c"]),
    ("finetune", "vpt_strategy", ["4cbd77788ecb"]),
    ("probe", "depth", ["2da93bedfe87", "3a44c06fc907", "41643b5171e5", "59b1c13697aa", "5f80233381a6",
                        "ba5c9dc01282", "ece99b0261f8", "fd0600495c74"]),
    ("probe", "vpt", ["2e61467d816c", "33216656d60f", "4a423cd88b76", "65829390547a", "7fd10a2d53a1",
                      "aeb02c02fb98", "d1a731ea8d8a", "e81a7642393f"]),
    ("probe", "vpt_strategy", ["b51886d9a89d", "e0e1920e6e74"])) for d in ds}
OLD_FIXTURE_PLAN = {"observers": [f"{MODEL}@random", f"{MODEL}@random1"], "finetune_models": [f"{MODEL}@random"],
                    "steps": ["probe", "layers", "finetune"], "probe_seeds": [0], "finetune_seeds": [0],
                    "taps": {f"{MODEL}@random": ["features.2", "features.5", "features.8"],
                             f"{MODEL}@random1": ["features.2", "features.5", "features.8"]}}
# The plan of the default settings (n_boot 10000, 30 epochs, patience 3, 8 frames, 3 probe seeds ...) with one
# observer, `run --build=<b> --results=<r> --observers=<M>@random --finetune-models=<M>@random --cache-dir=<c>`
# at 9b0f831: (job, digest of its run id) in plan order (eval.results_3dpc.run_keys' computation, done there
# with the same private steps).
OLD_DEFAULT_KEYS = [
    ("probe depth pooled 0", "2c58a9175d45"), ("probe vpt pooled 0", "81dce6d94998"),
    ("probe vpt_strategy pooled 0", "0488dbd84752"), ("probe depth pooled 1", "bb18f3a0905d"),
    ("probe vpt pooled 1", "b70d41b044b8"), ("probe vpt_strategy pooled 1", "b0b771c3d338"),
    ("probe depth pooled 2", "21e44ba4c98e"), ("probe vpt pooled 2", "b10ae1788058"),
    ("probe vpt_strategy pooled 2", "664000995491"), ("finetune vpt finetuned 0", "aacb46a51593"),
    ("probe depth features.2 0", "f189e66f45aa"), ("probe vpt features.2 0", "e4d2ad0eabf1"),
    ("probe depth features.5 0", "c8e6c4c00364"), ("probe vpt features.5 0", "20832fe0645c"),
    ("probe depth features.8 0", "3b0b79f73505"), ("probe vpt features.8 0", "8e1ae15e3cec"),
    ("probe depth features.2 1", "27e3418fdf93"), ("probe vpt features.2 1", "05092d64886a"),
    ("probe depth features.5 1", "fccab552b13e"), ("probe vpt features.5 1", "fb3d83b0659a"),
    ("probe depth features.8 1", "dd0d4d5e8bc7"), ("probe vpt features.8 1", "a8b5716ccb14"),
    ("probe depth features.2 2", "4d77b1af1a8e"), ("probe vpt features.2 2", "50e81bfaf90c"),
    ("probe depth features.5 2", "3a7213e561cf"), ("probe vpt features.5 2", "5f7b3a0918b4"),
    ("probe depth features.8 2", "2f53bf333084"), ("probe vpt features.8 2", "f7590100fd58"),
    ("finetune depth finetuned 0", "e72ec1131ab3")]


def test_the_new_cli_writes_the_run_ids_of_the_old_one(experiment):
    """The fixture experiment, run through the key=value CLI, holds the runs the argparse CLI wrote for the same
    settings with the same ids, and the same plan.json, plus what the spatial step (a default step since 29 Nov,
    sixth session) adds: its two runs and its plan entry; its last invocation found them all finished."""
    summary = R.read_results(experiment["res"], "summary")
    assert OLD_FIXTURE_RUN_IDS <= set(summary["run_id"])
    new = summary[~summary["run_id"].isin(OLD_FIXTURE_RUN_IDS)]
    assert set(new["feature"]) == {"features.8@grid3"} and sorted(set(new["task"])) == ["3dpc/depth", "3dpc/vpt"]
    assert new["run_id"].nunique() == 2
    plan = json.loads((experiment["res"] / "plan.json").read_text())
    assert plan.pop("spatial") == {f"{MODEL}@random": "features.8@grid3"}
    assert plan == {**OLD_FIXTURE_PLAN, "steps": ["probe", "layers", "spatial", "finetune"]}
    assert "20 probe runs, 3 fine-tuning runs" in experiment["runs"][-1].stdout


def _options(monkeypatch, argv: list[str]):
    """The settings ``python -m eval.results_3dpc <argv>`` hands its job (the command's own parsing)."""
    import eval.results_3dpc as X

    got = []
    cls, _, what, line = X.COMMANDS[argv[0]]
    monkeypatch.setitem(X.COMMANDS, argv[0], (cls, got.append, what, line))
    assert X.main(argv) == 0
    return got[0]


def test_default_settings_keep_their_run_keys(experiment, monkeypatch, tmp_path):
    """The default plan's run ids (every default value enters a digest: n_boot, epochs, patience, workers,
    frames, seeds) through the new CLI are those the argparse CLI computed. The fine-tuning seeds' default
    went from one to three on 29 Nov (the issue's 3 seeds), and the spatial step joined the default steps later that day:
    the old defaults are passed, so the keys stay pinned (the new step's jobs are new runs; the old ones keep
    their ids)."""
    from eval.results_3dpc import run_keys

    o = _options(monkeypatch, ["run", f"build={experiment['build']}", f"results={tmp_path}",
                               f"observers={MODEL}@random", f"finetune_models=[{MODEL}@random]",
                               f"cache_dir={experiment['tmp'] / 'cache'}", "finetune_seeds=[0]",
                               "steps=[probe,layers,finetune]"])
    keys = run_keys(o.build, o.results, o.experiment())
    got = [(f"{j.kind} {j.target} {j.feature} {j.seed}", rid.rsplit("__", 1)[1]) for j, rid in keys]
    assert got == OLD_DEFAULT_KEYS
    assert all(rid.startswith(f"{j.kind}__3dpc_{j.target}__module_eval.examples_small_cnn__seed{j.seed}__")
               for j, rid in keys)


# (argparse-era command line, the ExperimentConfig its parser made at 9b0f831): the running experiment's three
# command lines and one with every kind of value. The same settings spelled key=value, and the old spelling
# itself (deprecated, kept for one release), must give the same config: same values of the same types (repr).
LITE0, LITE2 = "timm:tf_efficientnet_lite0", "timm:tf_efficientnet_lite2"
_DEFAULTS = dict(observers=(LITE0, f"{LITE0}@random", LITE2, f"{LITE2}@random"), finetune_models=(LITE0, LITE2),
                 steps=("probe", "layers", "spatial", "finetune"), probe_seeds=(0, 1, 2), finetune_seeds=(0, 1, 2), finetune_epochs=30,
                 finetune_patience=3, finetune_workers=1, finetune_frames=8, epochs_per_invocation=None, n_boot=10000,
                 batch_size=64, cache_dir=None)
SPELLINGS = [
    ("", "", _DEFAULTS),
    ("--steps finetune --finetune-models timm:tf_efficientnet_lite0 --no-progress",
     f"steps=finetune finetune_models={LITE0} progress=false",
     {**_DEFAULTS, "finetune_models": (LITE0,), "steps": ("finetune",)}),
    ("--observers timm:tf_efficientnet_lite0@random --steps probe,layers --no-progress",
     f"observers=[{LITE0}@random] steps=probe,layers progress=false",
     {**_DEFAULTS, "observers": (f"{LITE0}@random",), "steps": ("probe", "layers")}),
    ("--finetune-frames all --probe-seeds 0,1 --n-boot 500 --epochs-per-invocation 2",
     "finetune_frames=null probe_seeds=[0,1] n_boot=500 epochs_per_invocation=2",
     {**_DEFAULTS, "finetune_frames": None, "probe_seeds": (0, 1), "epochs_per_invocation": 2, "n_boot": 500}),
]


@pytest.mark.parametrize("old, new, config", SPELLINGS, ids=["defaults", "finetune", "probe-layers", "values"])
def test_old_and_new_spellings_make_the_config_the_old_parser_made(old, new, config, monkeypatch, capsys):
    from eval.results_3dpc import ExperimentConfig

    want = repr(ExperimentConfig(**config))
    made_new = _options(monkeypatch, ["run", "build=b", "results=r", *new.split()])
    assert repr(made_new.experiment()) == want and made_new.progress == ("progress=false" not in new)
    assert not capsys.readouterr().err
    made_old = _options(monkeypatch, ["run", "--build", "b", "--results", "r", *old.split()])
    assert repr(made_old.experiment()) == want
    warning = capsys.readouterr().err
    assert warning.startswith("warning: --build --results") and warning.count("\n") == 1
    assert "deprecated spelling" in warning and "write python -m eval.results_3dpc run build=b results=r" in warning


def test_page_shows_an_unfinished_fine_tuning_by_its_validation_curve(experiment, tmp_path):
    """A fine-tuning run with a resume checkpoint and no result rows yet (paused or still running) is listed
    with its epochs and validation accuracy per epoch, read from the checkpoint; no accuracy row is made of it."""
    import shutil

    from eval.finetune import load_checkpoint

    res = tmp_path / "results"
    shutil.copytree(experiment["res"], res)
    ft = R.read_results(res, "summary").drop_duplicates("run_id")
    rid = ft[(ft["method"] == "finetune") & (ft["task"] == "3dpc/vpt")]["run_id"].iloc[0]
    assert (res / "checkpoints" / rid / "last.pt").is_file()
    for sub in ("summary", "trials"):  # as before its last epoch: a checkpoint, no rows
        for f in (res / sub).glob(f"{rid}*"):
            f.unlink()
    state = load_checkpoint(res / "checkpoints" / rid / "last.pt")["state"]
    _main("page", f"results={res}", f"out={tmp_path / 'results.md'}", "n_boot=200")
    text = (tmp_path / "results.md").read_text()
    part = text.split("### Fine-tuning in progress")[1].split("##")[0]
    curve = ", ".join(f"{h['val_accuracy']:.3f}" for h in state["history"])
    assert re.search(rf"^\| {re.escape(rid)} \| {int(state['epoch']) + 1} \| {re.escape(curve)} \|", part, flags=re.M)
    train = ", ".join(f"{h['train_accuracy']:.3f}" for h in state["history"])  # recorded per epoch since then
    assert all(0 <= h["train_accuracy"] <= 1 and h["train_loss"] > 0 for h in state["history"])
    assert f"| {train} |" in part
    assert "### Fine-tuning curves" not in text or rid not in text.split("### Fine-tuning curves")[1].split("##")[0]
    assert rid not in text.split("## Provenance")[1], "no accuracy row is made of an unfinished run"


def test_page_sets_probes_beside_the_builds_no_network_baselines(experiment, tmp_path):
    """With ``build=``, the page sets each test-split probe beside the build's shortcut-audit baselines (raw-pixel
    regression, best one-line rule) and says whether the probe's CI lies above, below or around the pixel
    figure; a build other than the runs' one is refused by its manifest digest."""
    import shutil

    build = tmp_path / "build"
    shutil.copytree(experiment["build"], build)
    rows = [{"task": t, "kind": k, "name": n, "value": v, "ci_low": v - 0.05, "ci_high": v + 0.05}
            for t, k, n, v in (("depth", "pixel_logreg", "pixels", 0.91), ("depth", "rule", "r1", 0.6),
                               ("depth", "rule", "r2", 0.7), ("vpt", "pixel_logreg", "pixels", 0.12),
                               ("vpt", "rule", "r3", 0.52))]
    pd.DataFrame(rows).to_parquet(build / "shortcut_audit.parquet")
    _main("page", f"results={experiment['res']}", f"out={tmp_path / 'r.md'}", "n_boot=200", f"build={build}")
    text = (tmp_path / "r.md").read_text()
    part = text.split("## Probes beside what needs no network")[1].split("## Statistical tests")[0]
    assert re.search(r"^\| Depth order \| 0\.910 \[0\.860, 0\.960\] \| 0\.700 \(r2\) \|", part, flags=re.M)
    assert re.search(r"^\| VPT-basic \| 0\.120 \[0\.070, 0\.170\] \| 0\.520 \(r3\) \|", part, flags=re.M)
    acc = {m.group(1): (float(m.group(2)), float(m.group(3)), m.group(4))
           for m in re.finditer(r"^- (Depth order|VPT-basic), small_cnn \(random\): probe [\d.]+ \[([\d.]+), ([\d.]+)\] "
                                r"is (above|below|not distinguishable from) the raw-pixel", part, flags=re.M)}
    assert set(acc) == {"Depth order", "VPT-basic"}
    for task, pix in (("Depth order", 0.91), ("VPT-basic", 0.12)):
        lo, hi, rel = acc[task]
        assert rel == ("above" if lo > pix else "below" if hi < pix else "not distinguishable from")
    assert "### What a two-level rule can do" not in text  # an audit from before the trees: no such paragraph
    # with the audit's two-level trees (29 Nov): their own column and the paragraph quoting each fitted tree
    rows += [{"task": "depth", "kind": "tree", "name": "two_level_tree", "value": 0.99, "ci_low": 0.98, "ci_high": 1.0,
              "description": "two-level decision tree on 25 cues: a <= 1 ? 0 : 1"},
             {"task": "vpt", "kind": "tree", "name": "two_level_tree", "value": 0.66, "ci_low": 0.55, "ci_high": 0.75,
              "description": "two-level decision tree on 24 cues: b <= 2 ? (c <= 3 ? 1 : 0) : 0"}]
    pd.DataFrame(rows).to_parquet(build / "shortcut_audit.parquet")
    _main("page", f"results={experiment['res']}", f"out={tmp_path / 'r.md'}", "n_boot=200", f"build={build}")
    part = (tmp_path / "r.md").read_text().split("## Probes beside what needs no network")[1].split("## Statistical")[0]
    assert re.search(r"^\| Depth order \| 0\.910 \[0\.860, 0\.960\] \| 0\.700 \(r2\) \| 0\.990 \[0\.980, 1\.000\] \|",
                     part, flags=re.M)
    assert "- Depth order: 0.990 [0.980, 1.000]: `a <= 1 ? 0 : 1`" in part
    assert "- VPT-basic: 0.660 [0.550, 0.750]: `b <= 2 ? (c <= 3 ? 1 : 0) : 0`" in part
    # what the paragraph and the deviations say follows the build: depth on the VPT images (config.json without
    # depth_settings, as this fixture and builds before 29 Nov) or on settings of its own (the default since)
    text = (tmp_path / "r.md").read_text()
    assert "gaze-following inference" in part and "settings of their own whose observer" not in part
    assert "| depth-order images |" not in text
    (build / "config.json").write_text(json.dumps({"size": 16, "depth_settings": 10}))
    _main("page", f"results={experiment['res']}", f"out={tmp_path / 'r.md'}", "n_boot=200", f"build={build}")
    text = (tmp_path / "r.md").read_text()
    part = text.split("## Probes beside what needs no network")[1].split("## Statistical")[0]
    assert "settings of their own whose observer" in part and "gaze-following inference" not in part
    assert "| depth-order images | the VPT-basic images" in text.split("## Deviations from the paper's protocol")[1]
    (build / "manifest.json").write_text((build / "manifest.json").read_text().replace("{", '{"x": 1, ', 1))
    with pytest.raises(SystemExit) as e:
        _main("page", f"results={experiment['res']}", f"out={tmp_path / 'r2.md'}", "n_boot=200", f"build={build}")
    assert e.value.code == 2 and not (tmp_path / "r2.md").exists()


def test_why_not_reads_the_curves_and_the_pixel_baseline():
    """A claim that does not hold gets its measured reason: a fine-tuning run whose training accuracy ends far
    above validation is called overfitting, one whose training accuracy stays near validation is called not
    learning, one without a recorded training curve says so; an above-chance random control is set against the
    build's raw-pixel regression; a claim that holds gets no bullet."""
    from eval.results_3dpc_page import why_not

    def row(task, method, obs, a, lo, hi, key, rids=""):
        return {"task": task, "method": method, "observer": obs, "accuracy": a, "ci_low": lo, "ci_high": hi,
                "key": key, "run_ids": rids, "feature": "finetuned" if method == "finetune" else "pooled",
                "split": "test", "model_id": obs.split(" (")[0], "pretrained": "(random" not in obs}

    acc = pd.DataFrame([row("3dpc/vpt", "finetune", "A", 0.51, 0.44, 0.58, "R1", "ft_a"),
                        row("3dpc/vpt", "finetune", "B", 0.50, 0.43, 0.57, "R2", "ft_b"),
                        row("3dpc/vpt", "finetune", "C", 0.52, 0.45, 0.59, "R3", "ft_c"),
                        row("3dpc/depth", "probe", "A (random)", 0.62, 0.58, 0.66, "R4"),
                        row("3dpc/vpt", "probe", "A (random)", 0.50, 0.45, 0.55, "R5"),
                        row("3dpc/depth", "probe", "D", 0.53, 0.50, 0.56, "R6"),
                        {**row("3dpc/depth", "probe", "D", 0.61, 0.57, 0.65, "R7"), "feature": "blocks.5"},
                        {**row("3dpc/depth", "probe", "D", 0.58, 0.54, 0.62, "R8"), "feature": "blocks.3"}])
    verdict = pd.DataFrame([{"claim": "fine-tuning lifts VPT-basic", "observer": o, "holds": "no"} for o in "ABC"]
                           + [{"claim": "random-weight control at chance", "observer": "A (random)", "holds": "no"},
                              {"claim": "probe: depth ≫ VPT-basic", "observer": "A", "holds": "yes"},
                              {"claim": "probe: depth ≫ VPT-basic", "observer": "D", "holds": "no"}])
    curves = pd.DataFrame([
        {"run_id": "ft_a", "val_accuracy": [0.5, 0.52], "train_accuracy": [0.6, 0.8]},
        {"run_id": "ft_b", "val_accuracy": [0.5, 0.51], "train_accuracy": [0.5, 0.53]},
        {"run_id": "ft_c", "val_accuracy": [0.5, 0.51], "train_accuracy": [None, None]}])
    base = pd.DataFrame([{"task": "3dpc/depth", "pixels": 0.75, "pixels_ci": "[0.70, 0.80]"},
                         {"task": "3dpc/vpt", "pixels": 0.55, "pixels_ci": "[0.49, 0.61]"}])
    out = why_not(verdict, acc, curves, base)
    assert len(out) == 5, out
    # a depth probe below the pixel baseline: set beside it and beside the best stage (a stage, not the pooled)
    assert out[4].startswith("- **probe: depth ≫ VPT-basic, D:** the depth probe of the pooled features is 0.530")
    assert "raw-pixel regression reaches 0.750 [0.70, 0.80]" in out[4] and "`blocks.5` 0.610 [0.570, 0.650] (R7)" in out[4]
    base_img = base.assign(tree_image=[0.69, np.nan], tree_image_ci=["[0.64, 0.74]", ""])
    assert "two-level rule on image cues 0.690 [0.64, 0.74]" in why_not(verdict, acc, curves, base_img)[4]
    assert "fine-tuning lifts VPT-basic, A:" in out[0] and "overfitting" in out[0] and "0.600, 0.800" in out[0]
    assert "fine-tuning lifts VPT-basic, B:" in out[1] and "did not learn" in out[1]
    assert "fine-tuning lifts VPT-basic, C:" in out[2] and "not recorded" in out[2]
    assert "A (random), Depth order" in out[3] and "below the build's raw-pixel regression 0.750" in out[3]
    without = why_not(verdict, acc, curves, None)
    assert len(without) == 4 and "raw-pixel" not in without[3], "without the build no pixel comparison is made"
    # the spatial read-out: the grid beside the pooled probe (above, overlapping or below) and its random control;
    # never taken for the best stage
    # (another model's random control first, whose label starts with this one's name: the control is matched
    # on the model id, not on the label)
    grid = pd.DataFrame([{**row("3dpc/depth", "probe", "D", 0.70, 0.66, 0.74, "R9"), "feature": "bn2@grid3"},
                         {**row("3dpc/depth", "probe", "D2 (random)", 0.45, 0.41, 0.49, "R12"), "feature": "bn2@grid3"},
                         {**row("3dpc/depth", "probe", "D (random)", 0.55, 0.51, 0.59, "R10"), "feature": "bn2@grid3"}])
    text = why_not(verdict, pd.concat([acc, grid], ignore_index=True), curves, base)[4]
    assert "the best per-layer probe is `blocks.5`" in text
    assert ("same network's final map reaches 0.700 [0.660, 0.740] (R9), above its pooled probe; with random "
            "weights the grid read-out gives 0.550 [0.510, 0.590] (R10)") in text
    # a fine-tuned depth order below the humans: its curves, as for VPT-basic
    dft = pd.DataFrame([row("3dpc/depth", "finetune", "A", 0.59, 0.55, 0.63, "R11", "ft_d")])
    dverdict = pd.DataFrame([{"claim": "fine-tuned depth order above humans", "observer": "A", "holds": "no"}])
    dcurves = pd.DataFrame([{"run_id": "ft_d", "val_accuracy": [0.54, 0.6], "train_accuracy": [0.6, 0.9]}])
    got = why_not(dverdict, pd.concat([acc, dft], ignore_index=True), dcurves, base)
    assert len(got) == 1 and got[0].startswith("- **fine-tuned depth order above humans, A:** training accuracy")
    assert "overfitting" in got[0] and "`ft_d`" in got[0]
    # validation accuracy still rising at the stop (best in the last two of >= 4 epochs): not called overfitting
    rising = dcurves.assign(val_accuracy=[[0.54, 0.57, 0.60, 0.63, 0.62]],
                            train_accuracy=[[0.6, 0.7, 0.8, 0.9, 0.95]])
    got = why_not(dverdict, pd.concat([acc, dft], ignore_index=True), rising, base)
    assert "still rising" in got[0] and "best 0.630 in epoch 4 of 5" in got[0] and "overfitting" not in got[0]
    paired = pd.DataFrame([{"observer": "D", "task": "Depth order", "task_id": "3dpc/depth",
                            "diff": "+0.170, p 0.001 (40 placements)"}])
    assert ("above its pooled probe (paired over the same test placements, grid − pooled +0.170, p 0.001 (40 "
            "placements))") in why_not(verdict, pd.concat([acc, grid], ignore_index=True), curves, base, paired)[4]
    low = grid.assign(accuracy=[0.45, 0.4, 0.5], ci_low=[0.42, 0.4, 0.46], ci_high=[0.48, 0.4, 0.54]).iloc[:1]
    assert "(R9), below its pooled probe" in why_not(verdict, pd.concat([acc, low], ignore_index=True), curves, base)[4]


def test_validity_section_counts_passing_configurations(tmp_path):
    """The page's validity section copies the sweep's first table and says how many configurations pass and
    which fail, with their smallest margin, counted from that table."""
    from eval.results_3dpc_page import validity_section

    md = tmp_path / "validity_sweep.md"
    md.write_text("# sweep\n\ntext\n\n| config | result | smallest margin (figure) |\n|---|---|---|\n"
                  "| a | PASS | +0.03 (vpt pixels) |\n| b | **FAIL** (1) | -0.05 (depth ball_v) |\n"
                  "| c | PASS (1 outside but not enforced) | -0.01 (vpt pixels) |\n\n## next\n\n| x |\n|---|\n")
    out = validity_section(md, tmp_path)
    assert ("**2 of 3 configurations pass.** In 1 of them (c) a figure lies outside its gate with a 95% CI that "
            "still includes chance, so it is not enforced (`audit.beyond_chance`). Failing: b (-0.05 (depth ball_v)).") in out
    assert "| b | **FAIL** (1) |" in out and "| x |" not in out
    assert "not in" in validity_section(tmp_path / "absent.md", tmp_path)
    # with the builder's validated range (issue 35.4): the counts are over the configurations inside it, and the
    # ones outside are named with their result
    md.write_text("| config | validated range | result | smallest margin (figure) |\n|---|---|---|---|\n"
                  "| a | inside | PASS | +0.03 (vpt pixels) |\n| b | outside: frames=2 | **FAIL** (1) | -0.05 (vpt x) |\n"
                  "| d | outside: frames=2 | PASS | +0.01 (vpt x) |\n| c | inside | PASS | +0.02 (vpt y) |\n")
    out = validity_section(md, tmp_path)
    assert "**2 of 2 configurations inside the validated range pass.**" in out and "Failing" not in out
    assert "2 sweep configurations lie outside it, 1 of which fails: b" in out and "| d | outside: frames=2 |" in out
    assert out.index("**2 of 2 configurations inside") < out.index("The builder refuses")
    # the sweep page as benchmarks/validity_sweep.py writes it: the configurations outside in a second table
    md.write_text("| config | validated range | result | smallest margin (figure) |\n|---|---|---|---|\n"
                  "| a | inside | PASS | +0.03 (vpt pixels) |\n\n### Outside the validated range\n\ntext\n\n"
                  "| config | validated range | result | smallest margin (figure) |\n|---|---|---|---|\n"
                  "| b | outside: frames=2 | **FAIL** (1) | -0.05 (vpt x) |\n\n## Every gated figure\n\n| x |\n|---|\n")
    out = validity_section(md, tmp_path)
    assert "**1 of 1 configurations inside the validated range pass.**" in out and "1 of which fails: b" in out
    assert out.index("| a | inside |") < out.index("### Outside the validated range") < out.index("| b | outside")
    assert "| x |" not in out


def test_verdict_on_fine_tuned_depth_order_against_humans():
    """The paper's depth fine-tuning finding (97% of models above humans' 74.7%) holds for a model whose
    fine-tuned depth CI lies above 0.747, not for one whose CI reaches it; without the run it is 'not run'."""
    from eval.results_3dpc_page import NOT_RUN, verdicts

    def acc_row(obs, lo, key):
        return {"task": "3dpc/depth", "method": "finetune", "observer": obs, "feature": "finetuned", "split": "test",
                "pretrained": True, "accuracy": lo + 0.04, "ci_low": lo, "ci_high": lo + 0.08, "key": key}

    acc = pd.DataFrame([acc_row("A", 0.80, "R1"), acc_row("B", 0.74, "R2")])
    v = verdicts(acc, pd.DataFrame(), planned=("C",))
    v = v[v["claim"] == "fine-tuned depth order above humans"].set_index("observer")
    assert v.loc["A", "holds"] == "yes" and "0.840 [0.800, 0.880] (R1)" in v.loc["A", "evidence"]
    assert v.loc["B", "holds"] == "no" and v.loc["C", "holds"] == NOT_RUN


def test_refresh_validity_rewrites_only_the_validity_section(tmp_path, capsys):
    """``python -m eval.results_3dpc validity``: the sweep is rebuilt without the model runs, so the page's
    validity section is rewritten from validity_sweep.md beside it and every other byte is kept; a page without
    the section is refused with its name, and the file is left as it was."""
    from eval.results_3dpc import main
    from eval.results_3dpc_page import VALIDITY_HEADING, validity_section

    page, sweep = tmp_path / "results.md", tmp_path / "validity_sweep.md"
    sweep.write_text("| config | result | smallest margin (figure) |\n|---|---|---|\n| a | PASS | +0.03 (vpt pixels) |\n")
    before, after = "# Results\n\n## Tests\n\nrow R1\n\n", "## Why our setting differs\n\ntext R2\n"
    page.write_text(before + VALIDITY_HEADING + "old table\n\n" + after)
    assert main(["validity", f"page={page}"]) == 0
    assert page.read_text() == before + VALIDITY_HEADING + validity_section(sweep, tmp_path) + after
    assert "**1 of 1 configurations pass.**" in page.read_text()
    bare = tmp_path / "bare.md"
    bare.write_text("# Results\n")
    with pytest.raises(SystemExit) as stop:
        main(["validity", f"page={bare}"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: page=") and "bare.md: no section '## Validity across build configurations'" in err
    assert len(err.splitlines()) == 1 and bare.read_text() == "# Results\n"


def test_depth_against_vpt_pairs_by_scene_when_no_placement_is_shared():
    """Depth items on settings of their own share no placement with the VPT items: the depth-vs-VPT test pairs
    per-scene accuracies (sign-flip over the scenes both tasks have) and says so; a shared-placement pair keeps
    the placement unit."""
    from eval.results_3dpc_page import scene_accuracy, tests_table, verdicts

    rows = []
    for i, scene in enumerate(["bench_03", "car_03", "chair_03", "couch_03", "plant_03"]):
        for k in range(4):  # depth: settings 10-11, right in every scene; VPT: settings 0-1, right in 1 of 4
            rows.append({"run_id": "d", "split": "test", "cluster": f"{scene}/s{10 + k % 2}", "item_id": f"{i}{k}",
                         "correct": True})
            rows.append({"run_id": "v", "split": "test", "cluster": f"{scene}/s{k % 2}", "item_id": f"{i}{k}",
                         "correct": k == 0})
    trials = pd.DataFrame(rows)
    assert scene_accuracy(trials, ["v"], "test").to_dict() == {s: 0.25 for s in
                                                               ["bench_03", "car_03", "chair_03", "couch_03", "plant_03"]}

    def acc_row(task, rid, a, key):
        return {"task": task, "method": "probe", "observer": "M", "feature": "pooled", "split": "test",
                "run_ids": rid, "accuracy": a, "ci_low": a - 0.05, "ci_high": a + 0.05, "key": key, "pretrained": True}

    acc = pd.DataFrame([acc_row("3dpc/depth", "d", 1.0, "R1"), acc_row("3dpc/vpt", "v", 0.25, "R2")])
    tests = tests_table(trials, acc)
    t = tests[tests["test"] == "depth vs VPT-basic (linear probe)"].iloc[0]
    assert t["unit"] == "scenes" and t["placements"] == "5 scenes" and t["mean_difference"] == pytest.approx(0.75)
    assert t["p_value"] == pytest.approx(2 / 32)  # 5 scenes, all the same sign: exact 2 of 32 sign patterns
    chance = tests[tests["test"] == "vs chance"]
    assert set(chance["unit"]) == {"placements"} and set(chance["placements"]) == {10}
    v = verdicts(acc, tests)
    text = v[v["claim"] == "probe: depth ≫ VPT-basic"].iloc[0]["evidence"]
    assert "per-scene difference +0.750" in text and "over 5 scenes (the two tasks' items come from different" in text


def test_spatial_step_reads_the_final_map_of_a_model_and_its_control():
    """Step ``spatial``: by default the first pretrained and the first random-weight observer, each on its final
    map (timm EfficientNet: ``bn2``, what the pooled features average; a module model: its last stage), depth
    and VPT-basic, every probe seed; placed after the per-layer probes and before fine-tuning on depth."""
    from eval.results_3dpc import ExperimentConfig, ExperimentError, plan, spatial_tap

    cfg = ExperimentConfig()
    assert cfg.spatial() == (LITE0, f"{LITE0}@random")
    assert ExperimentConfig(observers=(f"{LITE2}@random", LITE2, LITE0)).spatial() == (LITE2, f"{LITE2}@random")
    assert ExperimentConfig(spatial_observers=(LITE2,)).spatial() == (LITE2,)
    assert spatial_tap(LITE0, 3) == "bn2@grid3" and spatial_tap(MODEL, 2) == "features.8@grid2"
    with pytest.raises(ExperimentError, match="observer 'x@y'"):
        ExperimentConfig(spatial_observers=("x@y",))
    jobs = plan(cfg, {o: ("blocks.0",) for o in cfg.observers})
    kinds = [(j.kind, j.feature, j.target) for j in jobs]
    grid = [i for i, j in enumerate(jobs) if j.feature == "bn2@grid3"]
    assert len(grid) == 2 * 3 * 2  # 2 observers x 3 seeds x {depth, vpt}
    assert max(i for i, k in enumerate(kinds) if k[1] == "blocks.0") < min(grid)
    assert max(grid) < kinds.index(("finetune", "finetuned", "depth"))
    assert not [j for j in plan(ExperimentConfig(steps=("probe", "layers", "finetune"))) if "@grid" in j.feature]


def test_ledger_started_is_when_the_work_began():
    """A cost row's ``started`` is when its block began (it was once the time the row was written, i.e. the end)."""
    import datetime as dt
    import time

    from eval.results_3dpc import Clock

    t0 = time.time()
    with Clock() as c:
        time.sleep(1.2)
    began = dt.datetime.fromisoformat(c.started).timestamp()
    assert int(t0) <= began <= t0 + 0.5 and c.wall >= 1.2
