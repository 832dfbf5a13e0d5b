"""Reading a results folder: the one-scan reader against its per-part reference twin."""
import numpy as np
import pandas as pd
import pytest

from eval import results as R


def _trials(run, task, n, seed=0, **extra):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"observer": "m", "observer_type": "model", "model_id": "m", "task": task, "split": "test",
                         "method": "probe", "seed": seed, "item_id": [f"i{k}" for k in range(n)],
                         "condition": "", "label": "a", "response": rng.choice(["a", "b"], n),
                         "score": rng.random(n), "correct": rng.random(n) > 0.5, "run_id": run, **extra})


@pytest.fixture
def folder(tmp_path):
    R.write_part(tmp_path, "trials", "r1", _trials("r1", "3dpc/vpt", 5))
    R.write_part(tmp_path, "trials", "r2", _trials("r2", "3dpc/vpt_strategy", 4, seed=1, extra_note="x"))
    # a part from an older writer: no cluster column, scores all missing
    old = R.conform(_trials("r3", "mvh/edge", 3, seed=2), "trials").drop(columns=["cluster"])
    old["score"] = np.nan
    (tmp_path / "trials").mkdir(exist_ok=True)
    old.to_parquet(tmp_path / "trials" / "r3.parquet", index=False)
    return tmp_path


def test_scan_equals_the_per_part_reference(folder):
    assert R._scan(R._parts(folder, "trials"), None, ()).num_rows == 12  # the fast path ran, no fallback
    fast, ref = R.read_results(folder, "trials"), R.read_results_parts(folder, "trials")
    pd.testing.assert_frame_equal(fast, ref)
    assert len(fast) == 12 and list(fast.columns[-1:]) == ["extra_note"]  # extra columns kept, as pd.concat does
    assert fast.loc[fast["run_id"] == "r3", "cluster"].isna().all()
    cols = ["observer", "task", "correct", "cluster"]
    fast = R.read_results(folder, "trials", columns=cols, exclude_tasks=("3dpc/vpt",))
    pd.testing.assert_frame_equal(fast, R.read_results_parts(folder, "trials", columns=cols,
                                                             exclude_tasks=("3dpc/vpt",)))
    assert list(fast.columns) == cols and set(fast["task"]) == {"3dpc/vpt_strategy", "mvh/edge"}
    assert str(fast["correct"].dtype) == "boolean"


def test_unreadable_part_is_named_and_empty_folder_has_the_schema(folder, tmp_path_factory):
    (folder / "trials" / "r4.parquet").write_bytes(b"not parquet")
    with pytest.raises(R.ResultsError, match="r4.parquet"):
        R.read_results(folder, "trials")
    empty = R.read_results(tmp_path_factory.mktemp("none"), "summary")
    assert empty.empty and list(empty.columns) == list(R.SUMMARY_DTYPES)
    with pytest.raises(R.ResultsError, match="columns=.*nope"):  # checked before any part is read
        R.read_results(folder, "trials", columns=["nope"], exclude_tasks=("x",))


def test_seed_summary_equals_the_group_by_group_reference():
    from eval.probe import seed_summary, seed_summary_loop

    rng = np.random.default_rng(0)
    rows = []
    for m in range(6):
        for task in ("3dpc/vpt", "3dpc/depth"):
            for seed in range(1 if m == 0 else 3):  # model 0: one seed -> the interval [0, 1]
                rows.append({"model_id": f"m{m}", "task": task, "method": "probe", "seed": seed, "split": "test",
                             "accuracy": (0.999, 0.95, 0.99)[seed] if m == 1 else rng.random(), "balanced_accuracy": rng.random(),
                             "run_id": f"r{m}{task}{seed}", "weights": "random:seed=1" if (m == 2 and seed) else "",
                             "preprocess": "", "method_config": ""})
    summary = pd.DataFrame(rows)
    summary.loc[(summary["model_id"] == "m4") & (summary["seed"] == 1), "accuracy"] = np.nan  # NaN mean, as numpy
    fast, ref = seed_summary(summary), seed_summary_loop(summary)
    pd.testing.assert_frame_equal(fast, ref, rtol=1e-12)
    assert len(fast) == 14 and (fast["seeds"] == 1).sum() == 4  # m0 x 2 tasks, m2's two identities on 2 tasks
    one = fast[fast["observer"] == "m0"]
    assert (one["accuracy_ci_low"] == 0.0).all() and (one["accuracy_ci_high"] == 1.0).all()
    assert (fast.loc[fast["observer"] == "m1", "accuracy_ci_high"] == 1.0).all()  # clipped at 1
