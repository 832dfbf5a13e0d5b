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

MVH = Path(__file__).resolve().parents[2] / "shared" / "data" / "human-trials" / "model-vs-human"


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
    assert math.isnan(stats.error_consistency([1, 1], [1, 1])["kappa"])  # c_exp = 1
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
