"""The vectorised error-consistency and benchmark tables (``eval.stats.pair_counts`` / ``pair_values``,
``benchmark_tables``, ``eval.report.consistency_tables``) against their plain twins (one ``pair_metrics`` per
pair, conditions mapped row by row) on small synthetic sweeps with the awkward cases in them."""
import numpy as np
import pandas as pd
import pytest

from eval import report as R
from eval import stats
from eval.figures import synthetic as S
from eval.results import conform


def _noise_dataset(seed=0):
    """A model-vs-human-like dataset with many conditions (more than numpy's 8-term summation block), codes
    spelled two ways ("0.90" and "0.9": one condition, and one that model-vs-human excludes), a condition only
    models have, a model that skips a condition and some images, one that shares no image with the humans,
    and a condition everyone answers right (κ = 1 by rule)."""
    rng = np.random.default_rng(seed)
    levels = [f"{x:.2f}" for x in np.linspace(0.0, 0.9, 10)] + ["easy"]
    frames = []
    obs = [(f"subject-{h}", "human") for h in range(1, 5)] + [(f"timm:m{i}", "model") for i in range(5)]
    for k, (name, kind) in enumerate(obs):
        for lvl in levels + (["model-only"] if kind == "model" else []):
            n = 12
            items = np.array([f"{lvl}_{i:03d}" for i in range(n)])
            correct = np.ones(n, bool) if lvl == "easy" else rng.random(n) < 0.8 - 0.5 * (k % 3) / 3
            if name == "timm:m1":
                if lvl == "0.50":
                    continue
                items, correct = items[::2], correct[::2]
            if name == "timm:m2":
                items = np.array([f"other_{lvl}_{i}" for i in range(len(items))])
            code = lvl.rstrip("0") if (k % 2 and lvl[0].isdigit() and lvl != "0.00") else lvl  # "0.9" vs "0.90"
            labels = np.array(["a", "b"])[rng.integers(0, 2, len(items))]
            frames.append(S._trials(name, kind, "uniform-noise", "test", list(items), labels, correct,
                                    conditions=code))
    return conform(pd.concat(frames, ignore_index=True), "trials")


def _sweep():
    trials = S.threedpc_tables(n_models=4, n_test=40, n_human_items=16, n_scenes=3, n_steps=6, seeds=(0, 1),
                               n_humans=3, finetune_every=2, seed=1)[0]
    sel = trials[(trials["split"] != "human") | (trials["observer_type"] == "human")]
    both = pd.concat([sel, S.mvh_trials(models=("timm:a", "timm:b", "timm:c"), n_humans=4, n_images=24),
                      _noise_dataset()], ignore_index=True)
    return conform(both, "trials")


@pytest.mark.parametrize("aggregation", stats.AGGREGATIONS)
def test_fast_tables_equal_their_plain_twins(aggregation):
    t = _sweep()
    assert stats.excluded_conditions()["uniform-noise"] & set(stats.condition_codes(t["condition"]))
    ec, ceil = R.consistency_tables(t, aggregation)
    ec_ref, ceil_ref = R.consistency_tables_reference(t, aggregation)
    assert len(ec) == len(ec_ref) > 0 and set(ec["task"]) == {"3dpc/vpt", "3dpc/depth", "3dpc/vpt_strategy",
                                                                "contrast", "cue-conflict", "uniform-noise"}
    assert not (ec["observer"] == "timm:m2").any()  # shares no image with the humans
    assert (ec["conditions"] < ec["conditions"].max()).any()  # the partial model took the per-pair path
    pd.testing.assert_frame_equal(ec, ec_ref, check_exact=True)
    pd.testing.assert_frame_equal(ceil, ceil_ref, check_exact=True)
    # the benchmark with each model run as one decision maker, as eval stats computes it
    runs = R._run_observers(t)
    assert runs["observer"].str.contains(r"\(finetune, seed 1\)").any()
    for fast, ref in zip(stats.benchmark_tables(runs, aggregation),
                         stats.benchmark_tables_reference(runs, aggregation)):
        assert len(fast) > 10
        pd.testing.assert_frame_equal(fast, ref, check_exact=True)


def test_fast_values_are_bit_equal_to_pair_metrics():
    t = _noise_dataset(seed=3)
    t = t[~pd.Series(stats.condition_codes(t["condition"])).isin(stats.excluded_conditions()["uniform-noise"])
          .to_numpy()]
    dms = stats._decision_makers(t)
    names = sorted(dms)
    dm = pd.Series(t["observer"].astype(object)).map({n: k for k, n in enumerate(names)}).to_numpy()
    humans = np.array([k for k, n in enumerate(names) if n.startswith("subject")])
    counts = stats.pair_counts(dm, len(names), stats.condition_code_index(t["condition"])[0],
                               stats._item_codes(t["item_id"]), stats._bool(t["correct"]), humans)
    for agg in stats.AGGREGATIONS:
        v = stats.pair_values(counts, agg)
        for i, a in enumerate(names):
            for j, h in enumerate(humans):
                ref = stats.pair_metrics(dms[a], dms[names[h]], agg)
                assert (v["n"][i, j], v["conditions"][i, j]) == (ref["n"], ref["conditions"])
                for k in stats.PAIR_METRICS:
                    assert v[k][i, j] == ref[k] or (np.isnan(v[k][i, j]) and np.isnan(ref[k])), (a, names[h], k)


def test_condition_codes_map_each_distinct_value_like_condition_code():
    vals = pd.array(["0.90", "0.9", "True", "true", "c100", None, "0.90", " 1 "], dtype="string")
    assert list(stats.condition_codes(vals)) == [stats.condition_code(v) for v in pd.Series(vals).astype(object)]
    assert stats.condition_codes(pd.array([], dtype="string")).size == 0


def test_repeated_trials_refused_by_the_fast_tables_too():
    t = _noise_dataset()
    twice = pd.concat([t, t[t["observer"] == "timm:m3"]], ignore_index=True)
    for fn in (stats.benchmark_tables, stats.benchmark_tables_reference, R.consistency_tables,
               R.consistency_tables_reference):
        with pytest.raises(stats.StatsError, match="'timm:m3' has repeated trials"):
            fn(twice)


def test_noise_floor_on_codes_equals_the_string_twin():
    rng = np.random.default_rng(4)
    labels = np.array(["cat", "dog", "bird", "0", "1"])[rng.integers(0, 5, 301)]
    responses = np.where(rng.random(301) < 0.6, labels, np.array(["cat", "fish", "0"])[rng.integers(0, 3, 301)])
    for seed in (0, 7):
        fast = stats.permutation_noise_floor(pd.array(labels, dtype="string"), list(responses), 40, seed)
        ref = stats.permutation_noise_floor_reference(labels, responses, 40, seed)
        assert np.array_equal(fast["samples"], ref["samples"]) and (fast["mean"], fast["p95"]) == (ref["mean"], ref["p95"])
    assert 0.1 < ref["mean"] < 0.5


def test_run_labels_only_for_models_with_several_runs():
    t = S.mvh_trials()  # one run per model: nothing relabelled
    assert (R._run_observers(t)["observer"] == t["observer"]).all()
    sweep = _sweep()
    runs = R._run_observers(sweep)
    humans = sweep["observer_type"] == "human"
    assert (runs.loc[humans, "observer"] == sweep.loc[humans, "observer"]).all()  # humans keep their labels
    labels = set(runs.loc[runs["task"] == "3dpc/vpt", "observer"])
    assert "timm:model_000 (probe, seed 0)" in labels and "timm:model_000 (finetune, seed 1)" in labels
    assert "timm:model_001 (probe, seed 1)" in labels and not any(o == "timm:model_001" for o in labels)


def test_label_runs_equals_its_row_by_row_twin():
    from eval.results import label_runs, label_runs_reference

    t = _sweep()
    m = t["model_id"] == "timm:model_001"
    t.loc[m & (t["seed"] == 1), "weights"] = "pretrained:other"  # one model id, two identities
    t.loc[m & (t["seed"] == 1) & (t["task"] == "3dpc/depth"), "feature"] = pd.NA  # and a missing field
    t.loc[(t["model_id"] == "timm:a"), "preprocess"] = "resize=224"
    fast, ident = label_runs(t)
    ref, ident_ref = label_runs_reference(t)
    pd.testing.assert_frame_equal(fast, ref, check_exact=True)
    pd.testing.assert_frame_equal(ident, ident_ref, check_exact=True)
    assert ident["mixed"].sum() >= 2 and fast["observer"].str.contains(r"timm:model_001 \[weights=").any()
    summary = t.drop(columns=["observer", "observer_type"]).drop_duplicates("run_id")  # no observer_type column
    for a, b in zip(label_runs(summary), label_runs_reference(summary)):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_a_missing_identity_value_keeps_the_row_and_a_missing_model_id_is_an_error():
    """A model row whose identity field is empty (<NA>) reads like an absent column (""): it keeps its
    observer label and its trials, where grouping on the missing key used to drop them silently out of every
    statistic. A model row without a model id cannot be attributed: a clear error."""
    from eval.results import ResultsError, label_runs, label_runs_reference

    t = _sweep()
    one = t.index[t["observer_type"] == "model"][:7]
    t.loc[one, "weights"] = pd.NA
    for fn in (label_runs, label_runs_reference):
        out, ident = fn(t)
        assert out["observer"].notna().all() and len(out) == len(t)
        assert (out.loc[one, "weights"] == "").all() and (ident["weights"] == "").any()
    t.loc[one[:2], "model_id"] = pd.NA
    for fn in (label_runs, label_runs_reference):
        with pytest.raises(ResultsError, match=r"2 model trial row\(s\) have no model_id"):
            fn(t)
