"""Similarity judgment (issue 15, part 3): pair formation against the original's loop, identical images at
distance 0, the batched path against the plain batch-size-1 twin, each image computed once per repetition,
the expected order for a model that sees the manipulated feature (with its sign-flip test), user metrics
and the CLI."""
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from eval.similarity import (SimilarityConfig, affine_params, make_pairs, make_pairs_reference, pair_distances,
                             resolve_layers, run_similarity, similarity_reference)
from eval.zoo import load_model

ROOT = Path(__file__).resolve().parents[1]

BRIGHT = '''
import torch, torch.nn as nn

def bright():
    """Sees only mean brightness per channel (layer "pool"), then a fixed linear read-out ("head")."""
    class Bright(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flat = nn.Flatten()
            self.head = nn.Linear(3, 2)
            self.vantage_data_config = {"input_size": (3, 16, 16), "mean": (0.0, 0.0, 0.0), "std": (1.0, 1.0, 1.0),
                                        "interpolation": "nearest", "crop_pct": 1.0}
        def forward(self, x):
            return self.head(self.flat(self.pool(x)))
    return Bright()

def l1(a, b):
    return (a - b).abs().sum(1)
'''


@pytest.fixture
def bright(tmp_path, monkeypatch):
    (tmp_path / "sim_models.py").write_text(BRIGHT)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("sim_models", None)
    return load_model("module:sim_models:bright")


def grey_sets(root: Path, n_sets: int = 20, size: int = 16, seed: int = 0, steps=(("base", 0.0), ("near", 0.05),
                                                                                    ("far", 0.3), ("same", 0.0))):
    """Sets of noisy grey images: per set a base grey g and a texture; level ``near`` adds 0.05 to the
    grey, ``far`` 0.3, ``same`` is the base image itself (identical pixels)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sets):
        g = rng.uniform(0.1, 0.6)
        tex = rng.uniform(-0.05, 0.05, (size, size, 3))
        for level, step in steps:
            name = f"{level}/{s:03d}.png"
            (root / level).mkdir(parents=True, exist_ok=True)
            Image.fromarray((np.clip(g + step + tex, 0, 1) * 255).round().astype(np.uint8)).save(root / name)
            rows.append({"file_name": name, "dataset": "greys", "condition": level, "item_id": f"{level}_{s}",
                         "set_id": f"s{s:03d}", "seed": seed, "colour": "grey" if s % 2 else "warm"})
    ann = pd.DataFrame(rows)
    ann.to_parquet(root / "annotations.parquet", index=False)
    return ann


def test_pairs_match_the_original_loop():
    ann = pd.DataFrame({"file_name": [f"f{i}.png" for i in range(12)],
                        "condition": ["ref", "a", "b"] * 4, "set_id": ["s1"] * 3 + ["s2"] * 3 + ["s1"] * 3 + ["s3"] * 3,
                        "shape": ["x"] * 6 + ["y"] * 6})
    for match, comps in ((("set_id",), ()), (("set_id", "shape"), ()), (("set_id",), ("b",))):
        fast = make_pairs(ann, "condition", "ref", match, comps)
        ref = make_pairs_reference(ann, "condition", "ref", match, comps)
        pd.testing.assert_frame_equal(fast, ref)
    p = make_pairs(ann, "condition", "ref", ("set_id",))
    # set s1 has two reference rows and two rows per level: 2 x 2 pairs per level; s2 and s3 one each
    assert len(p) == 2 * (4 + 1 + 1) and set(p["reference_level"]) == {"ref"}
    assert len(make_pairs(ann, "condition", "ref", ("set_id", "shape"))) == 4 * 2  # s1|x, s2|x, s1|y, s3|y
    with pytest.raises(ValueError, match="similarity.reference='orig'"):
        make_pairs(ann, "condition", "orig")
    with pytest.raises(ValueError, match="column 'pair'"):
        make_pairs(ann, "condition", "ref", ("pair",))


def test_identical_images_are_at_distance_zero_and_the_model_sees_the_expected_order(tmp_path, bright):
    grey_sets(tmp_path / "d")
    for metric in ("euclidean", "cosine"):
        cfg = SimilarityConfig(reference="base", metric=metric, n_boot=500, n_perm=2000, batch_size=7)
        out = run_similarity(bright, tmp_path / "d", "module:sim_models:bright", cfg, tmp_path / f"r_{metric}")
        d = out["distances"]
        assert set(d["layer"]) == {"pool", "flat", "head"}  # every leaf module, in module order
        assert sorted(d["layer_index"].unique()) == [0, 1, 2] and d["depth"].max() == 1.0
        assert np.allclose(d.loc[d["comparison_level"] == "same", "distance"], 0.0, atol=1e-6)
        if metric == "euclidean":
            s = out["summary"].set_index(["layer", "comparison_level"])
            assert s.loc[("pool", "near"), "mean_distance"] == pytest.approx(np.sqrt(3) * 0.05, abs=0.01)
            assert s.loc[("pool", "same"), "mean_distance"] < s.loc[("pool", "near"), "mean_distance"] \
                < s.loc[("pool", "far"), "mean_distance"]
            per = d[d["layer"] == "pool"].pivot(index="set", columns="comparison_level", values="distance")
            assert (per["near"] < per["far"]).all()
            t = out["tests"].set_index(["layer", "level_a", "level_b"]).loc[("pool", "far", "near")]
            assert t["mean_difference"] > 0 and t["p_value"] < 0.01 and t["sets"] == 20
    # the run is resumable: the same call reads the stored tables back
    again = run_similarity(bright, tmp_path / "d", "module:sim_models:bright", cfg, tmp_path / "r_cosine")
    pd.testing.assert_frame_equal(again["summary"], out["summary"])


def test_batched_path_equals_plain_twin_and_computes_each_image_once_per_repetition(tmp_path):
    grey_sets(tmp_path / "d", n_sets=5, size=40)
    loaded = load_model("module:eval.examples:small_cnn", kwargs={"input_size": 32})
    cfg = SimilarityConfig(reference="base", metric="euclidean", repetitions=3, translate=0.2, rotate=20,
                           scale=(0.8, 1.2), batch_size=8)
    layers = resolve_layers(loaded, ())
    assert layers[0] == "features.0" and layers[-1] == "proj" and len(layers) == 11
    ann = pd.read_parquet(tmp_path / "d" / "annotations.parquet")
    pairs = make_pairs(ann, "condition", "base")
    seen = []
    h = loaded.module.register_forward_pre_hook(lambda m, inp: seen.append(inp[0].shape[0]))
    try:
        fast = pair_distances(loaded, tmp_path / "d", pairs, layers, cfg)
    finally:
        h.remove()
    n_images = ann["file_name"].nunique()
    assert sum(seen) == n_images * cfg.repetitions  # not once per pair (15 pairs, 20 images)
    assert max(seen) > 1  # batched
    assert affine_params(cfg, 0) == {"angle": 0.0, "translate": (0.0, 0.0), "scale": 1.0}
    assert affine_params(cfg, 1) != affine_params(cfg, 2)
    ref = similarity_reference(loaded, tmp_path / "d", pairs, layers, cfg)
    m = fast.merge(ref, on=["reference_item", "comparison_item", "layer", "repetition"], suffixes=("", "_ref"))
    assert len(m) == len(ref) == len(pairs) * len(layers) * 3
    assert np.allclose(m["distance"], m["distance_ref"], rtol=1e-4, atol=1e-5)
    # the augmentation changes the activations (repetitions differ) but both images of a pair share it
    by_rep = fast[fast["layer"] == "proj"].groupby("repetition")["distance"].mean()
    assert by_rep.nunique() == 3
    assert np.allclose(fast.loc[fast["comparison_level"] == "same", "distance"], 0.0, atol=1e-5)
    assert not any(mod.training for mod in loaded.module.modules())


def test_user_metric_by_import_path(tmp_path, bright):
    grey_sets(tmp_path / "d", n_sets=4)
    cfg = SimilarityConfig(reference="base", comparisons=("far",), metric="sim_models:l1", layers=("pool",), n_boot=200)
    d = run_similarity(bright, tmp_path / "d", "m", cfg, tmp_path / "r")["distances"]
    assert set(d["comparison_level"]) == {"far"} and set(d["layer"]) == {"pool"}
    assert np.allclose(d["distance"], 3 * 0.3, atol=0.02)  # |Δ mean| = 0.3 in each of 3 channels
    with pytest.raises(ValueError, match="similarity.metric='sim_models:nope'"):
        run_similarity(bright, tmp_path / "d", "m", SimilarityConfig(reference="base", metric="sim_models:nope"),
                       tmp_path / "r2")
    with pytest.raises(ValueError, match=r"similarity.layers=\['conv9'\]"):
        run_similarity(bright, tmp_path / "d", "m", SimilarityConfig(reference="base", layers=("conv9",)), tmp_path / "r3")


def test_similarity_cli(tmp_path, eval_cli):
    """``python -m eval similarity``, a good and a bad run, each forked from a warm server (tests/conftest.py)."""
    grey_sets(tmp_path / "d", n_sets=4)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = ["similarity", "model=timm:test_resnet", "pretrained=false", f"task={tmp_path / 'd'}",
            "similarity.n_boot=200", "similarity.n_perm=200"]
    p, bad = (eval_cli(*base, *args, env=env, cwd=tmp_path, timeout=300)
              for args in (["similarity.reference=base", f"out={tmp_path / 'r'}"],
                           ["similarity.reference=orig", f"out={tmp_path / 'r2'}"]))
    assert p.returncode == 0, p.stderr
    assert "same: mean cosine distance 0.0000" in p.stdout
    d = pd.read_parquet(next((tmp_path / "r" / "similarity").glob("*.parquet")))
    assert len(d) == 4 * 3 * d["layer"].nunique() and (d["weights"] == "random:seed=0").all()
    assert bad.returncode == 2 and "similarity.reference='orig': not a level" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "r2").exists()



@pytest.fixture(scope="module")
def efficientnet():
    from eval.zoo import WeightsSpec

    return load_model("timm:tf_efficientnet_lite0", WeightsSpec(pretrained=False))


def test_default_layers_are_the_leaves_forward_calls_and_an_idle_layer_fails_before_extraction(tmp_path, monkeypatch,
                                                                                              efficientnet):
    """Issue 34.11: on tf_efficientnet_lite0 (the one real pretrained model) the default layers included the
    drop_path leaves of blocks without a skip connection, never called in forward: the run failed after
    extracting every image (101 s). Defaults are now the leaves one traced forward pass calls; a requested
    layer that is not called is refused before any image is extracted, and nothing is written."""
    import timm

    import eval.similarity as SIM

    plain = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    leaves = {n for n, m in plain.named_modules() if n and not any(True for _ in m.children())}
    idle = {f"blocks.{s}.0.drop_path" for s in range(7)}  # first block of each stage: no skip, drop_path unused
    assert idle <= leaves
    layers = resolve_layers(efficientnet, ())
    assert set(layers) == leaves - idle  # (the loaded model's classifier is an Identity: still a called leaf)
    grey_sets(tmp_path / "d", n_sets=2, steps=(("base", 0.0), ("far", 0.3)))
    extracted = []
    real = SIM.activations
    monkeypatch.setattr(SIM, "activations", lambda *a, **k: extracted.append(1) or real(*a, **k))
    with pytest.raises(ValueError, match=r"\['blocks.0.0.drop_path'\] of timm:tf_efficientnet_lite0 are not called"):
        run_similarity(efficientnet, tmp_path / "d", "timm:tf_efficientnet_lite0",
                       SimilarityConfig(reference="base", layers=("conv_stem", "blocks.0.0.drop_path")), tmp_path / "r")
    assert not extracted and not (tmp_path / "r").exists()


@pytest.mark.slow  # ~25 s on a loaded 2-core machine: 190 layers of 224-px activations
def test_default_layers_run_on_tf_efficientnet_lite0(tmp_path, efficientnet):
    grey_sets(tmp_path / "d", n_sets=2, steps=(("base", 0.0), ("far", 0.3)))
    cfg = SimilarityConfig(reference="base", n_boot=200, n_perm=200)
    d = run_similarity(efficientnet, tmp_path / "d", "timm:tf_efficientnet_lite0", cfg, tmp_path / "r")["distances"]
    assert set(d["layer"]) == set(resolve_layers(efficientnet, ())) and len(d) == 2 * d["layer"].nunique()
