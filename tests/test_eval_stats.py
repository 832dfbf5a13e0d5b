"""Statistics against hand-computed cases, reference twins of the resampling shortcuts, and the real
model-vs-human trial tables (skipped when ../shared/data is absent)."""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eval import stats
from eval.humans import load_model_vs_human, mvh_image_id
from eval.results import TRIAL_DTYPES, conform



from shared_data import shared_data as _shared_data  # noqa: E402


MVH = _shared_data() / "human-trials" / "model-vs-human"


def trials(observer, correct, items=None, kind="human", labels=None, responses=None):
    n = len(correct)
    items = items or [f"img{i}" for i in range(n)]
    labels = labels or ["a"] * n
    responses = responses or [lab if c else "b" for lab, c in zip(labels, correct)]
    return conform(pd.DataFrame({"observer": observer, "observer_type": kind, "task": "t", "split": "test",
                                 "method": "human", "seed": 0, "item_id": items, "label": labels,
                                 "response": responses, "score": np.nan, "correct": correct}), "trials")


def test_error_consistency_hand_cases():
    assert stats.error_consistency([1, 1, 0, 0], [1, 0, 1, 0])["kappa"] == pytest.approx(0.0)
    assert stats.error_consistency([1, 0, 1, 0], [1, 0, 1, 0])["kappa"] == pytest.approx(1.0)
    # p_a = p_b = 0.75, c_obs = 0.5, c_exp = 0.625 -> kappa = -1/3
    r = stats.error_consistency([1, 1, 1, 0], [1, 1, 0, 1])
    assert (r["c_obs"], r["c_exp"], r["kappa"]) == pytest.approx((0.5, 0.625, -1 / 3))
    # p_a = 1, p_b = 0.5: c_exp = 0.5, c_obs = 0.5 -> 0
    assert stats.error_consistency([1, 1, 1, 1], [1, 1, 0, 0])["kappa"] == pytest.approx(0.0)
    # model-vs-human's rule: kappa = 1 when observed consistency is 1 (c_exp = 1 included), never NaN
    assert stats.error_consistency([1, 1], [1, 1])["kappa"] == 1.0
    assert stats.error_consistency([0, 0, 0], [0, 0, 0])["kappa"] == 1.0
    assert stats.error_consistency([1, 0, 1], [1, 0, 1])["kappa"] == 1.0
    assert stats.error_consistency([1, 1, 1, 0], [1, 0, 1, 1])["acc_diff_sq"] == pytest.approx(0.0)
    assert stats.error_consistency([1, 1, 1, 1], [1, 1, 0, 0])["acc_diff_sq"] == pytest.approx(0.25)
    with pytest.raises(stats.StatsError):
        stats.error_consistency([1, 0], [1])


def test_error_consistency_aligns_on_images_not_order():
    a = trials("s1", [True, True, False, False], ["x", "y", "z", "w"])
    b = trials("s2", [False, True, True, False], ["w", "x", "y", "z"])  # same answers per image, shuffled
    assert stats.error_consistency_between(pd.concat([a, b]), "s1", "s2")["kappa"] == pytest.approx(1.0)
    c = trials("s3", [True], ["q"])
    with pytest.raises(stats.StatsError, match="share no images"):
        stats.error_consistency_between(pd.concat([a, c]), "s1", "s3")


def test_human_ceiling_and_model_vs_humans():
    t = pd.concat([trials("h1", [1, 1, 0, 0]), trials("h2", [1, 1, 0, 0]), trials("h3", [1, 0, 1, 0]),
                   trials("m", [1, 1, 0, 0], kind="model")])
    ceil = stats.human_ceiling(t)
    # pairs: (h1,h2) = 1, (h1,h3) = 0, (h2,h3) = 0
    assert ceil["pairs"] == 3 and ceil["kappa_mean"] == pytest.approx(1 / 3)
    mv = stats.model_vs_humans(t, "m").set_index("observer_b")["kappa"]
    assert mv.to_dict() == pytest.approx({"h1": 1.0, "h2": 1.0, "h3": 0.0})


def test_accuracy_and_balanced_accuracy_hand_cases():
    assert stats.accuracy([1, 0, 1, 1]) == 0.75
    assert stats.balanced_accuracy(["0", "0", "0", "1"], ["0", "0", "0", "0"]) == 0.5
    assert stats.balanced_accuracy(["a", "a", "b", "b", "c"], ["a", "b", "b", "b", "a"]) == pytest.approx((0.5 + 1 + 0) / 3)
    e = stats.accuracy_ci([1] * 10)
    assert (e.value, e.ci_low, e.ci_high, e.n) == (1.0, 1.0, 1.0, 10)


def test_bootstrap_resamples_n_items_matches_index_bootstrap():
    """The binomial shortcut against the plain index bootstrap (n items with replacement per iteration)."""
    rng = np.random.default_rng(3)
    correct = rng.random(60) < 0.7
    fast = stats.accuracy_ci(correct, n_boot=20000, seed=1)
    idx = np.random.default_rng(2).integers(0, 60, size=(20000, 60))
    ref = correct[idx].mean(axis=1)
    lo, hi = np.quantile(ref, [0.025, 0.975])
    assert fast.ci_low == pytest.approx(lo, abs=0.02) and fast.ci_high == pytest.approx(hi, abs=0.02)
    # width of a 95% interval for p=0.7, n=60 is about 2 * 1.96 * sqrt(.21/60) = 0.23 (not ~0, the old bug)
    assert 0.18 < fast.ci_high - fast.ci_low < 0.28
    bal = stats.balanced_accuracy_ci(np.where(correct, "1", "0"), np.array(["1"] * 60), n_boot=2000)
    assert bal.value == 0.5 and bal.ci_low == bal.ci_high == 0.5  # a constant responder is at chance
    # balanced accuracy: the multinomial shortcut against the index bootstrap (3 unbalanced classes)
    labels = rng.choice(["a", "b", "c"], size=80, p=[0.6, 0.3, 0.1])
    resp = np.where(rng.random(80) < 0.7, labels, "a")
    fast = stats.balanced_accuracy_ci(labels, resp, n_boot=20000, seed=4)
    ref = stats.balanced_accuracy_ci_indices(labels, resp, n_boot=20000, seed=5)
    assert fast.value == ref.value
    assert fast.ci_low == pytest.approx(ref.ci_low, abs=0.015) and fast.ci_high == pytest.approx(ref.ci_high, abs=0.015)


def test_noise_floor_sign_flip_entropy_correlation():
    floor = stats.permutation_noise_floor(["0", "1"] * 10, ["0"] * 20, n_perm=200)
    assert floor["mean"] == 0.5 and floor["p95"] == 0.5  # constant response: every permutation gives 0.5
    f2 = stats.permutation_noise_floor(list("0101010101" * 4), list("0101010101" * 4), n_perm=500, seed=1)
    assert 0.4 < f2["mean"] < 0.6 and f2["p95"] < 0.7
    # exact: three equal positive differences -> only all-plus and all-minus reach |mean| -> p = 2/8
    r = stats.sign_flip_test([1, 1, 1], [0, 0, 0])
    assert r["exact"] and r["p_value"] == pytest.approx(0.25) and r["mean_difference"] == 1.0
    assert stats.sign_flip_test([0.5, 0.2], [0.5, 0.2])["p_value"] == 1.0
    d = np.random.default_rng(0).normal(0.2, 1.0, 14)
    exact = stats.sign_flip_test(d, np.zeros(14))["p_value"]
    mc = stats.sign_flip_test(d, np.zeros(14), n_perm=40000, exact_max_n=0)["p_value"]
    assert mc == pytest.approx(exact, abs=0.01)
    assert stats.response_entropy(list("abcd") * 3) == pytest.approx(2.0)
    assert stats.response_entropy(["a"] * 5) == 0.0
    with pytest.raises(stats.StatsError):
        stats.response_entropy(["a", "z"], classes=["a", "b"])
    assert stats.correlation([1, 2, 3], [1, 2, 4])["r"] == pytest.approx(3 / math.sqrt(2 * 42 / 9))
    assert stats.correlation([1, 2, 3, 4], [1, 10, 100, 1000], "spearman")["r"] == pytest.approx(1.0)


def test_correlate_with_imagenet():
    summ = pd.DataFrame({"model_id": ["a", "a", "b", "c", "d"], "task": "t", "method": "probe", "split": "test",
                         "seed": [0, 1, 0, 0, 0], "accuracy": [0.5, 0.7, 0.7, 0.8, 0.9]})
    zoo = pd.DataFrame({"model_id": ["a", "b", "c", "d"], "imagenet_top1": [70.0, 75.0, 80.0, 85.0]})
    out = stats.correlate_with_imagenet(summ, zoo).set_index("correlation")
    assert out.loc["spearman", "r"] == pytest.approx(1.0)  # seed mean of a = 0.6
    assert out.loc["pearson", "n"] == 4


def test_mvh_image_id():
    assert mvh_image_id("0001_cl_s01_cr_oven_40_n04111531_14126.png") == "n04111531_14126"
    assert mvh_image_id("0001_s5n_s01_0_bird_00_bird3-bird2.png") == "bird3-bird2"


@pytest.mark.skipif(not MVH.is_dir(), reason="../shared/data/human-trials is not present")
def test_real_model_vs_human_tables():
    t = load_model_vs_human(MVH)
    assert len(t) == 85_120 and t["task"].nunique() == 17
    assert {k: str(t.dtypes[k]) for k in TRIAL_DTYPES} == TRIAL_DTYPES  # the model schema (+ trial, rt)
    colour = t[t["task"] == "colour"]
    pw = stats.pairwise_error_consistency(colour)
    per_subject = colour.groupby("observer").size()
    assert len(pw) == 6 and (pw["n"] == per_subject.iloc[0]).all()  # every trial aligns across observers
    assert (pw["kappa"] > 0.1).all() and (pw["kappa"] < 0.9).all()
    ab = stats.error_consistency_between(colour, "subject-01", "subject-02")["kappa"]
    ba = stats.error_consistency_between(colour, "subject-02", "subject-01")["kappa"]
    assert ab == pytest.approx(ba)
    # colour images are easy for people, eidolon III hard
    acc = t.groupby("task")["correct"].mean()
    assert acc["colour"] > 0.85 and acc["eidolonIII"] < 0.5


def cond_trials(observer, correct, conditions, kind="human"):
    t = trials(observer, list(correct), items=[f"img{i}" for i in range(len(correct))], kind=kind)
    t["condition"] = pd.array(conditions, dtype="string")
    t["model_id"] = pd.array([observer if kind == "model" else ""] * len(t), dtype="string")
    return t


def test_condition_codes_match_model_vs_human_spelling():
    # the raw CSVs say 0.00 / 0.60 / true; model-vs-human's list (pandas-read) says 0.0 / 0.6 / True
    assert stats.condition_code("0.00") == stats.condition_code("0.0")
    assert stats.condition_code("0.60") == stats.condition_code("0.6") != stats.condition_code("0.06")
    assert stats.condition_code("true") == stats.condition_code("True")
    assert stats.condition_code("1") == stats.condition_code("1.0")
    assert stats.condition_code("c100") == "c100" and stats.condition_code("1-10-10") == "1-10-10"
    ex = stats.excluded_conditions("model-vs-human")
    assert len(ex) == 12 and ex["colour"] == {"cr"} and stats.condition_code("0.90") in ex["uniform-noise"]
    assert stats.excluded_conditions("pooled") == {}
    with pytest.raises(stats.StatsError, match="aggregation"):
        stats.excluded_conditions("mean")


def test_per_condition_kappa_differs_from_pooled_and_matches_reference():
    # condition A: easy (both right on most), condition B: hard. Pooling across conditions makes the
    # difficulty difference look like consistency; per condition it does not.
    a = [1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0]
    b = [1, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0]
    cond = ["A"] * 6 + ["B"] * 6
    t = pd.concat([cond_trials("h1", a, cond), cond_trials("h2", b, cond)])
    dms = stats._decision_makers(t)
    for agg in stats.AGGREGATIONS:
        fast = stats.pair_metrics(dms["h1"], dms["h2"], agg)
        ref = stats.pair_metrics_reference(t, "h1", "h2", agg)
        for k in ("kappa", "c_obs", "acc_diff_sq"):
            assert fast[k] == pytest.approx(ref[k])
    # by hand: A: pa = 4/6, pb = 4/6, c_obs = 4/6 -> c_exp = 5/9, kappa = (2/3 - 5/9) / (4/9) = 1/4
    #          B: pa = 2/6, pb = 2/6, c_obs = 4/6 -> the same, 1/4
    per = stats.pair_metrics(dms["h1"], dms["h2"], "model-vs-human")
    assert per["kappa"] == pytest.approx(0.25) and per["conditions"] == 2
    pooled = stats.pair_metrics(dms["h1"], dms["h2"], "pooled")
    assert pooled["kappa"] == pytest.approx((8 / 12 - 0.5) / 0.5)  # pa = pb = 1/2 overall: 1/3
    # a condition where both are right everywhere counts as kappa 1 (not NaN, not dropped)
    t2 = pd.concat([cond_trials("h1", [1, 1, 1, 0], ["X", "X", "Y", "Y"]),
                    cond_trials("h2", [1, 1, 0, 1], ["X", "X", "Y", "Y"])])
    d2 = stats._decision_makers(t2)
    assert stats.pair_metrics(d2["h1"], d2["h2"])["kappa"] == pytest.approx((1.0 + -1.0) / 2)


def test_repeated_trials_are_refused_with_a_clear_message():
    t = pd.concat([cond_trials("m", [1, 0], ["A", "A"], kind="model")] * 2)
    with pytest.raises(stats.StatsError, match="repeated trials"):
        stats._decision_makers(t)


@pytest.mark.skipif(not MVH.is_dir(), reason="../shared/data/human-trials is not present")
def test_model_vs_human_figures_on_real_data():
    t = load_model_vs_human(MVH)
    per, means = stats.benchmark_tables(t, "model-vs-human")
    h = means.set_index("observer").loc["humans"]
    # model-vs-human's own figures for its human observers (17 datasets)
    assert h["datasets"] == 17
    assert h["kappa"] == pytest.approx(0.431, abs=0.002)
    assert h["c_obs"] == pytest.approx(0.809, abs=0.002)
    assert h["ood_accuracy"] == pytest.approx(0.723, abs=0.002)
    eid = per.set_index("task").loc["eidolonI"]
    assert eid["kappa"] == pytest.approx(0.386, abs=0.002)
    # the pooled variant (one kappa per pair over all conditions, nothing excluded) is kept by name
    _, pooled = stats.benchmark_tables(t, "pooled")
    assert pooled["kappa"].iloc[0] == pytest.approx(0.518, abs=0.002)
    assert set(per["aggregation"]) == {"model-vs-human"} and set(pooled["aggregation"]) == {"pooled"}


@pytest.mark.skipif(not MVH.is_dir(), reason="../shared/data/human-trials is not present")
def test_a_model_made_of_one_humans_answers_scores_that_human():
    t = load_model_vs_human(MVH, dataset="eidolonII")
    subject = "subject-01"
    fake = t[t["observer"] == subject].copy()
    fake["observer"], fake["observer_type"], fake["model_id"] = "fake-model", "model", "fake-model"
    others = t[t["observer"] != subject]
    per, _ = stats.benchmark_tables(pd.concat([others, fake], ignore_index=True))
    row = per.set_index("observer").loc["fake-model"]
    excl = stats.excluded_conditions()["eidolonII"]
    kept = t[(t["observer"] == subject) & ~t["condition"].map(stats.condition_code).isin(excl)]
    assert row["ood_accuracy"] == pytest.approx(kept["correct"].mean())
    # its kappa with the other humans is that human's own (per condition, mean over conditions, over humans)
    dms = stats._decision_makers(t[~t["condition"].map(stats.condition_code).isin(excl)])
    own = [stats.pair_metrics(dms[subject], dms[o]) for o in sorted(dms) if o != subject]
    assert row["kappa"] == pytest.approx(np.mean([r["kappa"] for r in own]))
    assert row["c_obs"] == pytest.approx(np.mean([r["c_obs"] for r in own]))
    assert row["pairs"] == len(own) == 3


def test_cluster_bootstrap_matches_index_twin_and_is_wider_for_clustered_items():
    rng = np.random.default_rng(0)
    n_cl, per = 40, 10
    clusters = np.repeat([f"s{i}" for i in range(n_cl)], per)
    labels = np.repeat(rng.integers(0, 2, n_cl), per).astype(str)  # frames of a placement share the label
    p_right = np.repeat(rng.uniform(0.2, 1.0, n_cl), per)  # and their difficulty
    responses = np.where(rng.random(n_cl * per) < p_right, labels, np.where(labels == "0", "1", "0"))
    acc_f, bal_f = stats.cluster_bootstrap_ci(labels, responses, clusters, n_boot=4000, seed=1)
    acc_r, bal_r = stats.cluster_bootstrap_ci_indices(labels, responses, clusters, n_boot=4000, seed=2)
    assert acc_f.value == pytest.approx(acc_r.value) and bal_f.value == pytest.approx(bal_r.value)
    for f, r in ((acc_f, acc_r), (bal_f, bal_r)):
        assert f.ci_low == pytest.approx(r.ci_low, abs=0.012) and f.ci_high == pytest.approx(r.ci_high, abs=0.012)
    items = stats.accuracy_ci(responses == labels, n_boot=4000, seed=1)
    assert (acc_f.ci_high - acc_f.ci_low) > 1.5 * (items.ci_high - items.ci_low)  # clustering widens the CI
    t = pd.DataFrame({"label": labels, "response": responses, "correct": responses == labels, "cluster": clusters})
    s = stats.accuracy_summary(t, 2000, 0.95, 0)
    assert s["ci_unit"] == "clusters (40)" and s["accuracy_ci_low"] < s["accuracy"] < s["accuracy_ci_high"]
    assert stats.accuracy_summary(t.assign(cluster=""), 2000, 0.95, 0)["ci_unit"] == "items"


# ---------------------------------------------------------------------------------------------------
# issue 34 item 3: model-vs-human's single-condition datasets; benchmark means name what they average

MODELS_MVH = _shared_data() / "model-trials" / "model-vs-human"


def _mvh_csv(path: Path, subj: str, rows: list[tuple]) -> None:
    """A model-vs-human CSV: ``rows`` of (response, category, condition, imagename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["subj,session,trial,rt,object_response,category,condition,imagename"]
    lines += [f"{subj},1,{i + 1},NaN,{r},{c},{cond},{img}" for i, (r, c, cond, img) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def test_single_condition_datasets_pair_models_with_humans_and_means_name_their_datasets(tmp_path):
    """Released model files say condition NaN on cue-conflict (humans: 0): the model got no κ there, and the
    mean over datasets averaged 1 dataset while saying 2. Now cue-conflict is one condition (as
    model-vs-human's analysis has it) and each mean says what it covers."""
    rng = np.random.default_rng(0)
    imgs = [f"{c}{k}-{t}{k}.png" for k in range(1, 9) for c, t in (("cat", "dog"), ("dog", "cat"))]
    truth = [i.split("-")[0].rstrip("0123456789") for i in imgs]
    folder = tmp_path / "raw"
    answers = {}
    for subj, cond in (("subject-01", "0"), ("subject-02", "0"), ("resnet50", "NaN")):
        right = rng.random(len(imgs)) < 0.6
        answers[subj] = right
        rows = [(t if ok else "car", t, cond, f"{k + 1:04d}_s5n_s01_0_{t}_00_{img}" if cond == "0" else img)
                for k, (img, t, ok) in enumerate(zip(imgs, truth, right))]
        name = f"cue-conflict_{subj}_session_1.csv" if cond == "0" else f"cue-conflict_{subj}_session-1.csv"
        _mvh_csv(folder / "cue-conflict" / name, subj, rows)
        # colour: two conditions, the model only has trials in "bw" (its "cr" trials are excluded anyway)
        col = [(t if ok else "car", t, cd, f"{k + 1:04d}_cl_s01_{cd}_{t}_40_n0{k}_{k}.png")
               for k, (t, ok, cd) in enumerate(zip(truth, right, ["cr", "bw"] * 8))]
        name = f"colour_{subj}_session_1.csv" if cond == "0" else f"colour_{subj}_session-1.csv"
        _mvh_csv(folder / "colour" / name, subj, col)
    t = load_model_vs_human(folder)
    assert set(t.loc[t["observer"] == "resnet50", "observer_type"]) == {"model"}
    assert set(t.loc[t["task"] == "cue-conflict", "condition"]) == {"0"}  # NaN (model) and 0 (humans) read alike
    per, means = stats.benchmark_tables(t)
    ref_per, ref_means = stats.benchmark_tables_reference(t)
    pd.testing.assert_frame_equal(per, ref_per)
    pd.testing.assert_frame_equal(means, ref_means)
    cc = per.set_index(["task", "observer"]).loc[("cue-conflict", "resnet50")]
    want = np.mean([stats.error_consistency(answers["resnet50"], answers[h])["kappa"]
                    for h in ("subject-01", "subject-02")])
    assert cc["pairs"] == 2 and cc["kappa"] == pytest.approx(want)
    m = means.set_index("observer")
    assert m.loc["resnet50", "datasets"] == 2 and m.loc["resnet50", "missing"] == ""
    assert m.loc["resnet50", "kappa"] == pytest.approx(per[per["observer"] == "resnet50"]["kappa"].mean())
    # a model with trials on one of the two datasets: its mean says 1 dataset and names the other; unranked
    other = t[(t["observer"] == "resnet50") & (t["task"] == "colour")].assign(observer="half", model_id="half")
    _, means2 = stats.benchmark_tables(pd.concat([t, other], ignore_index=True))
    h = means2.set_index("observer").loc["half"]
    assert h["datasets"] == 1 and h["missing"] == "cue-conflict" and np.isnan(h["mean_rank"])
    assert means2.set_index("observer").loc["resnet50", "mean_rank"] == 1.0


def test_single_condition_dataset_ignores_the_condition_column():
    """The trial tables as released (model rows NaN, human rows 0 on cue-conflict), without the loader: every
    statistic pairs the trials by image, under both aggregations, fast paths equal to their twins."""
    from eval.report import consistency_tables, consistency_tables_reference

    a, b, m = [1, 1, 0, 1, 0, 0], [1, 0, 0, 1, 1, 0], [1, 1, 0, 0, 0, 1]
    t = pd.concat([cond_trials("subject-01", a, ["0"] * 6), cond_trials("subject-02", b, ["0"] * 6),
                   cond_trials("resnet50", m, ["NaN"] * 6, kind="model")], ignore_index=True)
    t["task"] = pd.array(["cue-conflict"] * len(t), dtype="string")
    want = np.mean([stats.error_consistency(m, h)["kappa"] for h in (a, b)])
    for agg in stats.AGGREGATIONS:
        per, _ = stats.benchmark_tables(t, agg)
        row = per.set_index("observer").loc["resnet50"]
        assert row["pairs"] == 2 and row["kappa"] == pytest.approx(want)
        pd.testing.assert_frame_equal(per, stats.benchmark_tables_reference(t, agg)[0])
        ec, _ = consistency_tables(t, agg)
        ref, _ = consistency_tables_reference(t, agg)
        assert len(ec) == 2 and ec["kappa"].mean() == pytest.approx(want)
        pd.testing.assert_frame_equal(ec, ref, check_dtype=False)
    # a dataset with real conditions keeps joining on them
    t2 = t.assign(task=pd.array(["colour"] * len(t), dtype="string"))
    assert stats.benchmark_tables(t2, "pooled")[0].set_index("observer").loc["resnet50", "pairs"] == 0


def test_released_model_file_names_and_mixed_files(tmp_path):
    _mvh_csv(tmp_path / "edge" / "edge_BiTM_resnetv2_50x1_session-1.csv", "BiTM_resnetv2_50x1",
             [("cat", "cat", "NaN", "cat1.png")])
    t = load_model_vs_human(tmp_path)
    r = t.iloc[0]
    assert (r["task"], r["observer"], r["observer_type"], r["model_id"], r["method"], r["condition"]) == (
        "edge", "BiTM_resnetv2_50x1", "model", "BiTM_resnetv2_50x1", "released", "0")
    _mvh_csv(tmp_path / "bad" / "edge_subject-01_session_1.csv", "subject-01", [("cat", "cat", "0", "a_cat1.png")])
    (tmp_path / "bad" / "edge_subject-01_session_1.csv").write_text(
        (tmp_path / "bad" / "edge_subject-01_session_1.csv").read_text() + "resnet50,1,2,NaN,cat,cat,0,cat2.png\n")
    with pytest.raises(Exception, match="both human .* and model observers"):
        load_model_vs_human(tmp_path / "bad")


@pytest.mark.skipif(not (MVH.is_dir() and MODELS_MVH.is_dir()), reason="../shared/data is not present")
def test_resnet50_released_trials_reproduce_model_vs_human_published_figures():
    """model-vs-human's leaderboard for ResNet-50 (README in ../shared/data): accuracy difference 0.087,
    observed consistency 0.665, error consistency 0.208, OOD accuracy 0.559, over all 17 datasets."""
    t = load_model_vs_human([MVH, MODELS_MVH])
    per, means = stats.benchmark_tables(t, "model-vs-human")
    r = means.set_index("observer").loc["resnet50"]
    assert r["datasets"] == 17 and r["missing"] == ""
    assert round(r["acc_diff_sq"], 3) == 0.087
    assert round(r["c_obs"], 3) == 0.665
    assert round(r["kappa"], 3) == 0.208
    assert round(r["ood_accuracy"], 3) == 0.559
    assert per[per["observer"] == "resnet50"][["kappa", "c_obs", "acc_diff_sq"]].notna().all().all()
    h = means.set_index("observer").loc["humans"]
    assert round(h["kappa"], 3) == 0.431 and h["datasets"] == 17  # the human ceiling is unchanged
