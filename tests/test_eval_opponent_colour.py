"""Issue 34 item 5: opponent-colour condition codes mean what they mean in model-vs-human and the original
analysis — ``true`` = the colours unchanged, ``false`` = opponent colours. Vantage wrote the opponent image
as ``true``, so joins with human trials paired opposite images and the default aggregation (which drops
model-vs-human's unmanipulated control, ``True``) dropped the opponent half instead."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from eval import stats
from shared_data import shared_data

MVH = shared_data() / "human-trials" / "model-vs-human" / "false-colour"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from tasks.stimuli import write_dataset

    out = tmp_path_factory.mktemp("opp") / "d"
    write_dataset("image_distortions", out, {"distortions": ["colour", "opponent_colour"], "size": 32,
                                             "mode": "clean"}, progress=False)
    return out, pd.read_parquet(out / "annotations.parquet")


def _image(root, ann, source, distortion, code) -> np.ndarray:
    row = ann[(ann["source_image"] == source) & (ann["distortion"] == distortion) & (ann["code"] == code)]
    assert len(row) == 1
    return np.asarray(Image.open(root / row["file_name"].iloc[0]).convert("RGB"), np.float64)


def test_true_is_the_unchanged_image_and_false_the_opponent_one(generated):
    from tasks.stimuli.distortions import CONDITIONS, opponent_colour

    root, ann = generated
    assert set(CONDITIONS["opponent_colour"]) == {"true", "false"}
    sources = sorted(ann["source_image"].unique())
    assert len(sources) >= 3
    for src in sources:
        original = _image(root, ann, src, "colour", "cr")  # the colour experiment's unmanipulated image
        true = _image(root, ann, src, "opponent_colour", "true")
        false = _image(root, ann, src, "opponent_colour", "false")
        np.testing.assert_array_equal(true, original)
        want = np.clip(opponent_colour(original / 255.0, True, mode="clean"), 0, 1) * 255
        assert np.abs(false - want).max() <= 1.0  # the opponent image (within 8-bit rounding of the input)
        if original.std(axis=2).mean() > 5:  # a colourful photo: its opponent image differs visibly
            assert np.abs(false - original).mean() > 5


def test_model_vs_human_exclusion_drops_the_unchanged_images(generated):
    """The default aggregation leaves out false-colour's ``True`` (the control); on a generated dataset that
    must be the unchanged images, so the kept trials are the opponent ones."""
    root, ann = generated
    excl = stats.excluded_conditions("model-vs-human")["false-colour"]
    fc = ann[ann["experiment"] == "false-colour"]
    dropped = fc[fc["code"].map(stats.condition_code).isin(excl)]
    kept = fc[~fc["code"].map(stats.condition_code).isin(excl)]
    assert set(dropped["code"]) == {"true"} and set(kept["code"]) == {"false"}
    for _, r in dropped.iterrows():  # every dropped image is its source unchanged
        np.testing.assert_array_equal(_image(root, ann, r["source_image"], "opponent_colour", r["code"]),
                                      _image(root, ann, r["source_image"], "colour", "cr"))


@pytest.mark.skipif(not MVH.is_dir(), reason="../shared/data/human-trials is not present")
def test_human_trials_agree_true_is_the_easier_unchanged_condition():
    from eval.humans import load_model_vs_human

    t = load_model_vs_human(MVH)
    acc = t.groupby("condition")["correct"].mean()
    assert set(acc.index) == {"true", "false"}
    assert acc["true"] > acc["false"]  # 0.903 vs 0.874: people are better with the true colours
