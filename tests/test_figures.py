"""Figure functions on small synthetic tables: each figure shows what its table holds (points, lines, panels,
labels, the human band), the tidy-table functions compute the stated statistic (checked against plain
hand computations), and nothing leaks into matplotlib's global state."""
import io
import math
import time

import matplotlib
import numpy as np
import pandas as pd
import pytest

from eval import stats
from eval.figures import data as D
from eval.figures import mindset as MS
from eval.figures import mvh as M
from eval.figures import psychophysics as P
from eval.figures import synthetic as S
from eval.figures import threedpc as T
from eval.figures.accuracy import accuracy_per_model
from eval.figures.style import HUMAN, render, save


def _gids(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _span(patch, axis=1):
    """(low, high) data extent of a band drawn by axhspan (axis 1) or axvspan (axis 0)."""
    if hasattr(patch, "get_height"):
        lo = patch.get_y() if axis == 1 else patch.get_x()
        return lo, lo + (patch.get_height() if axis == 1 else patch.get_width())
    xy = np.asarray(patch.get_xy())[:, axis]
    return xy.min(), xy.max()


@pytest.fixture(scope="module")
def threedpc():
    return S.threedpc_tables(n_models=8, n_test=60, n_human_items=20, n_scenes=6, n_steps=8, seeds=(0, 1),
                             n_humans=4, finetune_every=2, seed=1)


def test_pearson_ci_is_fisher_z():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    y = x + rng.normal(size=30)
    r = D.pearson_ci(x, y, 0.95)
    rr = np.corrcoef(x, y)[0, 1]
    half = 1.959963984540054 / math.sqrt(30 - 3)
    assert r["r"] == pytest.approx(rr)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((math.tanh(math.atanh(rr) - half),
                                                         math.tanh(math.atanh(rr) + half)))
    assert math.isnan(D.pearson_ci([1, 2], [3, 4])["r"])  # too few pairs: no value, no error


def test_bootstrap_mean_ci_seeded_and_brackets_mean():
    v = np.arange(10.0)
    a, b = D.bootstrap_mean_ci(v, 500, 0.9, seed=3), D.bootstrap_mean_ci(v, 500, 0.9, seed=3)
    assert a == b and a[1] < a[0] == 4.5 < a[2]


def test_accuracy_vs_imagenet_panels_points_band_and_r(threedpc):
    trials, summary, zoo = threedpc
    acc = D.model_accuracy(summary, "test", zoo)
    humans = D.human_accuracy(trials, seed=0)
    floors = D.noise_floor(None, summary)
    fig = T.accuracy_vs_imagenet(acc, humans, floors, method="probe")
    axes = [a for a in fig.axes if a.get_title()]
    assert [a.get_title() for a in axes] == ["VPT-basic", "Depth order", "VPT-Strategy"]
    for ax, task in zip(axes, D.THREEDPC_TASKS):
        g = acc[(acc["task"] == task) & (acc["method"] == "probe")]
        (pts,) = _gids(ax, "models")
        assert len(pts.get_offsets()) == len(g) == 8
        assert ax.get_xlabel() == "ImageNet top-1 (%)"
        h = humans[humans["task"] == task]
        assert len(_gids(ax, "human_band")) == (1 if len(h) else 0)  # strategy has human trials too
        if len(h):
            assert _span(_gids(ax, "human_band")[0]) == pytest.approx((h["ci_low"].iloc[0], h["ci_high"].iloc[0]))
        r = D.pearson_ci(g["imagenet_top1"], g["accuracy"])
        assert f"r = {r['r']:.2f} [{r['ci_low']:.2f}" in ax.get_legend().get_texts()[0].get_text()
    assert axes[0].get_ylabel() == "Accuracy"


def test_noise_floor_prefers_permutations_then_chance(threedpc):
    _, summary, _ = threedpc
    obs = pd.DataFrame({"task": ["3dpc/vpt", "3dpc/vpt", "3dpc/vpt"], "observer_type": ["model", "model", "human"],
                        "noise_floor_p95": [0.6, 0.7, 0.9]})
    f = D.noise_floor(obs, summary).set_index("task")
    assert f.loc["3dpc/vpt", "noise_floor"] == pytest.approx(0.65) and f.loc["3dpc/vpt", "kind"] == "permutation_p95"
    assert f.loc["3dpc/depth", "noise_floor"] == 0.5 and f.loc["3dpc/depth", "kind"] == "chance"


def test_model_accuracy_is_mean_over_seeds(threedpc):
    _, summary, zoo = threedpc
    acc = D.model_accuracy(summary, "test", zoo)
    s = summary[(summary["model_id"] == "timm:model_003") & (summary["task"] == "3dpc/vpt")
                & (summary["split"] == "test") & (summary["method"] == "probe")]
    row = acc[(acc["observer"] == "timm:model_003") & (acc["task"] == "3dpc/vpt") & (acc["method"] == "probe")]
    assert row["accuracy"].iloc[0] == pytest.approx(s["accuracy"].mean()) and row["seeds"].iloc[0] == 2
    assert set(acc["task"]) == set(D.THREEDPC_TASKS)  # VPT-Strategy comes from its own split


def test_probe_vs_finetune_points(threedpc):
    _, summary, zoo = threedpc
    acc = D.model_accuracy(summary, "test", zoo)
    fig = T.probe_vs_finetune(acc)
    n_ft = acc[acc["method"] == "finetune"]["observer"].nunique()
    assert n_ft == 4
    for ax in fig.axes:
        assert len(ax.collections[0].get_offsets()) == n_ft
    with pytest.raises(ValueError, match="finetune"):
        T.probe_vs_finetune(acc[acc["method"] == "probe"])


def test_strategy_steps_table_and_figure(threedpc):
    trials, _, _ = threedpc
    steps = D.strategy_steps(trials)
    # blocked fraction: the synthetic sequences block the middle half (steps 2..5 of 8)
    bf = steps.drop_duplicates("step").set_index("step")["blocked_fraction"].sort_index()
    assert list(bf) == [0, 0, 1, 1, 1, 1, 0, 0]
    # accuracy per step = plain mean of the correct column
    t = trials[(trials["task"] == "3dpc/vpt_strategy") & (trials["observer"] == "timm:model_000")]
    t = t[t["item_id"].str.contains("step03")]
    got = steps[(steps["observer"] == "timm:model_000") & (steps["step"] == 3)]["accuracy"].iloc[0]
    assert got == pytest.approx(t["correct"].mean())
    fig = T.strategy_steps(steps)
    ax = fig.axes[0] if fig.axes[0].get_ylabel() == "Accuracy" else fig.axes[1]
    assert len(_gids(ax, "model")) == 8  # one line per model
    assert len(_gids(ax, "human_band")) == 1
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert "humans (n=4)" in lines
    hum = steps[steps["observer_type"] == "human"].groupby("step")["accuracy"].mean()
    assert np.allclose(lines["humans (n=4)"].get_ydata(), hum.to_numpy())
    bars = [a for a in fig.axes if _gids(a, "blocked")]
    assert len(bars) == 1 and [p.get_height() for p in _gids(bars[0], "blocked")] == list(bf)


def test_consistency_vs_ceiling():
    ec = pd.DataFrame({"task": "3dpc/vpt", "method": "probe", "observer": ["a", "a", "b", "b", "c", "c"],
                       "human": ["h1", "h2"] * 3, "kappa": [0.1, 0.3, 0.0, 0.2, 0.5, 0.5]})
    k = D.consistency_by_model(ec)
    assert dict(zip(k["observer"], k["kappa"])) == pytest.approx({"a": 0.2, "b": 0.1, "c": 0.5})
    both = D.consistency_by_model(pd.concat([ec, ec.assign(method="finetune", kappa=0.9)]))
    assert len(both) == 6 and (both[both["method"] == "finetune"]["kappa"] == 0.9).all()  # methods never pooled
    ceil = pd.DataFrame({"task": ["3dpc/vpt"], "kappa_mean": [0.4], "kappa_std": [0.1], "pairs": [6]})
    fig = T.consistency_vs_ceiling(k, ceil)
    ax = fig.axes[0]
    assert list(_gids(ax, "models")[0].get_offsets()[:, 1]) == pytest.approx([0.1, 0.2, 0.5])  # sorted
    assert _span(_gids(ax, "human_band")[0]) == pytest.approx((0.3, 0.5))
    assert any(ln.get_color() == HUMAN and ln.get_ydata()[0] == 0.4 for ln in ax.get_lines())


@pytest.fixture(scope="module")
def mvh():
    return S.mvh_trials(n_humans=3, n_images=24, seed=2)


def test_accuracy_vs_level_panels_order_and_humans(mvh):
    acc = D.level_accuracy(mvh)
    fig = M.accuracy_vs_level(acc[acc["dataset"] == "contrast"])
    ax = fig.axes[0]
    assert ax.get_title() == "contrast"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c05", "c10", "c50", "c100"]  # natural order
    (hum,) = [ln for ln in ax.get_lines() if ln.get_gid() == "humans"]
    want = acc[(acc["dataset"] == "contrast") & (acc["observer_type"] == "human")].groupby("level")["accuracy"].mean()
    assert np.allclose(hum.get_ydata(), want.loc[["c05", "c10", "c50", "c100"]].to_numpy())
    assert hum.get_color() == HUMAN and len(_gids(ax, "human_band")) == 1
    assert len([ln for ln in ax.get_lines() if ln.get_gid() == "model"]) == 2


def test_level_consistency_matches_plain_kappa(mvh):
    k = D.level_consistency(mvh[mvh["task"] == "contrast"])
    t = mvh[(mvh["task"] == "contrast") & (mvh["condition"] == "c10")]
    a = t[t["observer"] == "timm:model_a"].set_index("item_id")["correct"]
    humans = sorted(t.loc[t["observer_type"] == "human", "observer"].unique())
    plain = np.mean([stats.error_consistency(a, t[t["observer"] == h].set_index("item_id")["correct"].loc[a.index])["kappa"]
                     for h in humans])
    got = k[(k["level"] == "c10") & (k["observer"] == "timm:model_a")]["kappa"].iloc[0]
    assert got == pytest.approx(plain)
    assert (k[k["observer"] == "humans"]["pairs"] == 3).all()
    fig = M.consistency_vs_level(k)
    assert fig.axes[0].get_ylabel() == "Error consistency κ"


def test_benchmark_bars_and_scatter(mvh):
    per, means = stats.benchmark_tables(mvh, "pooled")
    mine = D.benchmark_means(pd.concat([per, per.assign(task="3dpc/vpt", kappa=9.0)]))  # 3D-PC rows left out
    assert np.allclose(mine.set_index("observer").loc[means["observer"], ["kappa", "c_obs", "ood_accuracy"]],
                       means[["kappa", "c_obs", "ood_accuracy"]])
    fig = M.benchmark_bars(means)
    assert [a.get_title() for a in fig.axes] == list(M.METRICS.values())
    for ax in fig.axes:
        bars = _gids(ax, "bars")
        assert len(bars) == len(means) == 3
        assert sum(b.get_facecolor()[:3] == matplotlib.colors.to_rgb(HUMAN) for b in bars) == 1
    fig = M.benchmark_scatter(means)
    assert len(fig.axes) == 6 and all(len(_gids(a, "humans")[0].get_offsets()) == 1 for a in fig.axes)


def test_shape_bias_hand_count_and_figure():
    t = S._trials("m", "model", "cue-conflict", "test", ["cat1-dog2", "cat2-bird1", "dog1-cat3", "dog2-dog1", "cat3-car1"],
                  ["cat", "cat", "dog", "dog", "cat"], [True, False, True, True, False],
                  responses=["cat", "bird", "dog", "dog", "knife"])
    sb = D.shape_bias(stats_conform(t)).set_index("category")
    # cat: shape on 1st, texture on 2nd, neither on 5th (left out) -> 1/2; dog: shape (dog-dog left out) -> 1/1
    assert sb.loc["cat", "shape_bias"] == 0.5 and sb.loc["dog", "shape_bias"] == 1.0
    assert sb.loc["all", "shape_bias"] == pytest.approx(2 / 3) and sb.loc["all", "n"] == 3
    fig = M.shape_bias(D.shape_bias(S.mvh_trials(n_humans=2, n_images=40)))
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("Fraction of shape decisions")
    assert len(_gids(ax, "humans")) == 1


def stats_conform(t):
    from eval.results import conform

    return conform(t, "trials")


def test_degradation_and_interval():
    t = S.polygon_trials(models=("m1", "m2"), levels=(0.1, 0.5), n=40)
    acc = D.degradation_accuracy(t)
    assert set(acc["variant"]) == {"corners", "edges"}
    whole = acc[acc["level"] == 0.0]
    assert len(whole) == 4 and whole.groupby("observer")["accuracy"].nunique().eq(1).all()  # whole under both
    plain = t[(t["observer"] == "m1") & (t["condition"] == "edges_p0.50")]["correct"].mean()
    assert acc[(acc["observer"] == "m1") & (acc["variant"] == "edges") & (acc["level"] == 0.5)]["accuracy"].iloc[0] == plain
    fig = P.accuracy_vs_degradation(acc, chance=1 / 6)
    ax = fig.axes[0]
    assert len([ln for ln in ax.get_lines() if ln.get_gid() == "corners"]) == 2
    assert all(len(ln.get_xdata()) == 3 for ln in ax.get_lines() if ln.get_gid() in ("corners", "edges"))
    g = D.interval_accuracy(S.grating_trials(intervals=(2, 4, 8), directions=("horizontal", "vertical", "UL")))
    fig = P.accuracy_vs_interval(g)
    titled = [a for a in fig.axes if a.get_visible() and a.get_title()]
    assert sorted(a.get_title() for a in titled) == ["UL", "horizontal", "vertical"]
    assert all(list(a.get_lines()[0].get_xdata()) == [2, 4, 8] for a in titled)


def test_mindset_figures():
    sim = S.similarity_table(models=("a", "b"), n_layers=4, n_pairs=10)
    summ = D.similarity_summary(sim)
    g = sim[(sim["model_id"] == "a") & (sim["layer"] == "layer2") & (sim["condition"] == "relational")]
    row = summ[(summ["observer"] == "a") & (summ["layer"] == "layer2") & (summ["condition"] == "relational")]
    assert row["distance"].iloc[0] == pytest.approx(g["distance"].mean()) and row["n"].iloc[0] == 10
    fig = MS.similarity_by_layer(summ)
    assert sum(1 for a in fig.axes if a.get_visible() and a.get_xlabel() == "Layer depth") == 2
    assert all(len([ln for ln in a.get_lines() if ln.get_gid() == "condition"]) == 2 for a in fig.axes if a.get_visible())
    with pytest.raises(ValueError, match="layer_depth"):
        D.similarity_summary(sim.drop(columns="layer_depth"))
    pred = S.decoder_table(layers=("pooled",), n=200)
    bias = D.decoder_bias(pred).set_index("condition")["bias"]
    assert bias["small_flankers"] == pytest.approx(0.1, abs=0.01) and bias["big_flankers"] == pytest.approx(-0.1, abs=0.01)
    fig = MS.decoder_predictions(pred)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    (small,) = [t for t in texts if t.startswith("small_flankers (bias ")]
    assert float(small.split("bias ")[1].rstrip(")")) == pytest.approx(bias["small_flankers"], rel=1e-2)


def test_accuracy_per_model_and_no_global_state(tmp_path, threedpc):
    import matplotlib.pyplot as plt

    from eval.probe import seed_summary

    rc = dict(matplotlib.rcParams)
    _, summary, _ = threedpc
    seeds = seed_summary(summary[summary["split"].isin(["test", "strategy"])])
    humans = pd.DataFrame({"task": ["3dpc/vpt"], "accuracy": [0.8], "ci_low": [0.75], "ci_high": [0.85], "observers": [5]})
    fig = accuracy_per_model(seeds, humans, pd.DataFrame({"task": ["3dpc/vpt"], "noise_floor": [0.55],
                                                          "kind": ["permutation_p95"]}))
    panels = [a for a in fig.axes if a.get_visible()]
    assert len(panels) == seeds.groupby(["task", "method"]).ngroups == 6
    vpt = [a for a in panels if a.get_title() == "3dpc/vpt (probe)"][0]
    assert len(_gids(vpt, "human_band")) == 1 and len(_gids(vpt, "noise_floor")) == 1
    assert _span(_gids(vpt, "human_band")[0], axis=0) == pytest.approx((0.75, 0.85))
    files = save(fig, tmp_path, "acc")
    assert files["pdf"].read_bytes()[:5] == b"%PDF-" and files["png"].read_bytes() == files["png_bytes"]
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(files["png_bytes"])).convert("L"))
    assert img.shape[1] > 500 and (img < 128).mean() > 0.005  # drawn, not blank
    assert render(fig, "svg").startswith(b"<?xml")
    assert plt.get_fignums() == []  # no pyplot figure was created
    assert dict(matplotlib.rcParams) == rc  # the style did not leak


def test_saver_with_a_helper_process_writes_what_saving_here_writes(tmp_path, threedpc, monkeypatch):
    from eval.figures import style

    trials, summary, zoo = threedpc
    acc = D.model_accuracy(summary, "test", zoo)

    def figures():
        return [(T.probe_vs_finetune(acc), "pvf"), (T.strategy_steps(D.strategy_steps(trials)), "steps")]

    here = style.FigureSaver(0).save_all(figures(), tmp_path / "ref")
    in_process = []
    real_save = style.save
    monkeypatch.setattr(style, "save", lambda *a: in_process.append(a[2]) or real_save(*a))
    with style.FigureSaver(1, patience=600) as saver:  # patient: a loaded machine must not make the test flaky
        both = saver.save_all(figures(), tmp_path / "pool")
    assert in_process == ["steps"]  # the helper took the first figure, this process the last
    for ref, got in zip(here, both):
        assert got["png"].parent == tmp_path / "pool" and got["png"].name == ref["png"].name
        assert got["png_bytes"] == ref["png_bytes"] == got["png"].read_bytes()
        assert got["pdf"].read_bytes()[:5] == b"%PDF-" and got["pdf"].stat().st_size == ref["pdf"].stat().st_size

    # a helper that never answers: this process saves everything itself and close() stops the helper
    monkeypatch.setattr(style, "_BOOT", "import sys, time; sys.stdin.buffer.read(8); time.sleep(600)")
    in_process.clear()
    t0 = time.perf_counter()
    with style.FigureSaver(1, patience=0.5) as saver:
        late = saver.save_all(figures(), tmp_path / "late")
        proc = saver._procs[0]
    assert sorted(in_process) == ["pvf", "steps"] and [r["png_bytes"] for r in late] == [r["png_bytes"] for r in here]
    assert proc.poll() is not None and time.perf_counter() - t0 < 120
    assert sorted(p.name for p in (tmp_path / "late").iterdir()) == ["pvf.pdf", "pvf.png", "steps.pdf", "steps.png"]
