"""Decoders (issue 15, part 2): a learnable target is learned, permuted labels stay at chance, the frozen
backbone's BatchNorm statistics never change, train-on-one-condition/test-on-others, early stopping, and
checkpoint/resume equal to an uninterrupted run."""
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from eval.decoders import (DecoderConfig, decoder_features, load_decoder_data, predict, rmse_ci, run_decoders,
                           train_decoders)
from eval.zoo import load_model

ROOT = Path(__file__).resolve().parents[1]


def disc_dataset(root: Path, n_sets: int = 60, seed: int = 0) -> pd.DataFrame:
    """Discs of random radius (3-12 px) on 32x32 black images, in two conditions of each set: ``plain`` and
    ``moved`` (the same disc at another random position). Columns: the standard ones, the
    ``radius`` (px), its class ``size`` (small < 7.5 <= big) and a ``shuffled`` size label (no relation)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    rows = []
    yy, xx = np.mgrid[:32, :32]
    for s in range(n_sets):
        r = rng.uniform(3, 12)
        for cond in ("plain", "moved"):
            cy, cx = rng.uniform(r, 32 - r, 2)
            img = ((yy - cy) ** 2 + (xx - cx) ** 2 <= r * r) * 0.9
            name = f"{cond}/{s:04d}.png"
            (root / cond).mkdir(parents=True, exist_ok=True)
            Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8)).convert("RGB").save(root / name)
            rows.append({"file_name": name, "dataset": "discs", "condition": cond, "item_id": f"{cond}_{s}",
                         "set_id": f"s{s:04d}", "seed": seed, "radius": r, "size": "big" if r >= 7.5 else "small"})
    ann = pd.DataFrame(rows)
    ann["shuffled"] = rng.permutation(ann["size"].to_numpy())
    ann.to_parquet(root / "annotations.parquet", index=False)
    return ann


@pytest.fixture(scope="module")
def discs(tmp_path_factory):
    root = tmp_path_factory.mktemp("discs")
    disc_dataset(root, n_sets=150)
    return root


def small_cnn():
    return load_model("module:eval.examples:small_cnn", taps=("features.2", "features.5"))


def test_decoders_learn_radius_across_conditions_and_bn_statistics_never_change(discs, tmp_path):
    loaded = small_cnn()
    before = {k: v.clone() for k, v in loaded.module.state_dict().items()}
    cfg = DecoderConfig(targets=("radius",), task_type="regression", train_conditions=("plain",),
                        test_conditions=("moved",), epochs=60, patience=10, n_boot=500, seeds=(0,))
    data = load_decoder_data(discs, cfg)
    assert set(data.rows.loc[data.rows["condition"] == "moved", "split"]) == {"test"}
    assert {"train", "val", "test"} <= set(data.rows.loc[data.rows["condition"] == "plain", "split"])
    X, key = decoder_features(loaded, data, cfg, tmp_path / "cache", progress=False)
    assert list(X) == ["pixels", "features.2", "features.5", "pooled"] and X["pixels"].shape[1] == 3 * 16 * 16
    summ = run_decoders(data, X, key, "module:eval.examples:small_cnn", cfg, tmp_path / "res", loaded.run_identity())
    # the frozen backbone: every parameter and BatchNorm buffer bit for bit as loaded, and still in eval mode
    after = loaded.module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not any(m.training for m in loaded.module.modules())
    # (the check can fail: a forward pass in training mode — what MindSet's decoder did — moves them)
    probe = small_cnn()
    probe.module.train()
    with torch.no_grad():
        probe.module(torch.rand(4, 3, 64, 64))
    assert not torch.equal(probe.module.state_dict()["features.1.running_mean"], before["features.1.running_mean"])
    s = summ.set_index(["feature", "condition"])
    sd = data.rows["radius"].std()
    # the radius is read out of the (spatially averaged) feature maps to a fraction of its spread, in the
    # trained condition and at new positions; the raw-pixel decoder (768 inputs, 100 training images) less well
    for feat in ("features.5", "pooled"):
        for cond in ("plain", "moved"):
            assert s.loc[(feat, cond), "value"] < 0.25 * sd, (feat, cond)
    assert s.loc[("pixels", "plain"), "value"] < 0.5 * sd and s.loc[("pixels", "moved"), "value"] < 0.5 * sd
    assert s.loc[("pixels", "plain"), "ci_low"] <= s.loc[("pixels", "plain"), "value"] <= s.loc[("pixels", "plain"), "ci_high"]
    assert (summ["metric"] == "rmse").all() and (summ["n"] > 0).all()
    preds = pd.read_parquet(next((tmp_path / "res" / "decoder").glob("*.parquet")))
    assert len(preds) == 4 * (data.rows["split"] == "test").sum()
    # resumable: the same call again is a no-op returning the stored summary
    again = run_decoders(data, X, key, "module:eval.examples:small_cnn", cfg, tmp_path / "res", loaded.run_identity())
    pd.testing.assert_frame_equal(again.reset_index(drop=True), summ.reset_index(drop=True))


def test_classification_is_learned_and_permuted_labels_are_at_chance(discs, tmp_path):
    loaded = small_cnn()
    res = {}
    for target in ("size", "shuffled"):
        cfg = DecoderConfig(targets=(target,), features=("pixels",), epochs=40, patience=8, n_boot=1000,
                            test_fraction=0.3)
        data = load_decoder_data(discs, cfg)
        X, key = decoder_features(loaded, data, cfg, tmp_path / "cache", progress=False)
        res[target] = run_decoders(data, X, key, "m", cfg, tmp_path / target, loaded.run_identity())
    learned = res["size"]
    assert (learned["value"] > 0.85).all(), learned
    chance = res["shuffled"]
    assert (chance["ci_low"] < 0.5).all() and chance["value"].mean() < 0.65, chance
    from eval.results import read_results

    trials = read_results(tmp_path / "size")
    assert set(trials["method"]) == {"decoder"} and set(trials["feature"]) == {"pixels"}
    assert set(trials["label"]) == {"big", "small"} and trials["correct"].mean() > 0.85


def test_early_stopping_and_checkpoint_resume_equal_an_uninterrupted_run(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    X = {"a": rng.normal(size=(n, 8)).astype(np.float32), "b": rng.normal(size=(n, 3)).astype(np.float32)}
    y = (X["a"][:, 0] > 0).astype(int)
    split = np.array(["train"] * 240 + ["val"] * 80 + ["test"] * 80)
    cfg = DecoderConfig(targets=("y",), epochs=7, patience=0, lr=1e-2)
    whole = train_decoders(X, y, split, "classification", 2, cfg, seed=3)
    ck = tmp_path / "ck" / "decoders.pt"
    for _ in range(3):  # 3 + 3 + 1 epochs over three invocations
        part = train_decoders(X, y, split, "classification", 2, cfg, seed=3, checkpoint=ck, epochs_per_invocation=3)
        if not part.paused:
            break
    assert not part.paused and ck.is_file()
    pw, pp = predict(whole, X, "classification"), predict(part, X, "classification")
    for k in X:
        assert np.array_equal(pw[k], pp[k]) and whole.best_epoch[k] == part.best_epoch[k]
    assert pw["a"][split == "test"].argmax(1).tolist() == pp["a"][split == "test"].argmax(1).tolist()
    assert ((pw["a"].argmax(1) == y)[split == "test"]).mean() > 0.9
    # decoder "b" sees only noise: its validation loss stops improving early and it stops on its own
    stop = train_decoders(X, y, split, "classification", 2, DecoderConfig(targets=("y",), epochs=300, patience=3,
                                                                          lr=5e-2), seed=0)
    assert stop.epochs_run["b"] == stop.best_epoch["b"] + 4 < 300


def test_rmse_ci_and_config_errors():
    e = np.array([3.0, -4.0, 0.0, 5.0])
    v, lo, hi = rmse_ci(e, 2000, 0.95, 0)
    assert v == pytest.approx(np.sqrt(50 / 4)) and lo <= v <= hi and lo >= 0 and hi <= 5.0
    with pytest.raises(ValueError, match="decoder.targets"):
        DecoderConfig(targets=("a", "b"))  # classification decodes one column
    with pytest.raises(ValueError, match="decoder.task_type='ordinal'"):
        DecoderConfig(targets=("a",), task_type="ordinal")


def test_decoder_cli(tmp_path, eval_cli):
    """``python -m eval decoder`` (forked from a warm server, tests/conftest.py: eval_cli; interpreter start-up
    dominated the two runs)."""
    disc_dataset(tmp_path / "d", n_sets=30)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VANTAGE_CACHE": str(tmp_path / "cache")}
    base = ["decoder", "model=module:eval.examples:small_cnn", "pretrained=false",
            f"task={tmp_path / 'd'}", "progress=false", "decoder.epochs=3", "decoder.n_boot=200"]
    (p, bad) = [eval_cli(*base, *args, env=env, timeout=300)
                for args in (["decoder.targets=[size]", f"out={tmp_path / 'r'}"],
                             ["decoder.targets=[colour]", f"out={tmp_path / 'r2'}"])]
    assert p.returncode == 0, p.stderr
    assert "pooled seed 0 plain size: accuracy" in p.stdout
    assert bad.returncode == 2 and "decoder.targets=['colour']: not columns" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "r2").exists()
