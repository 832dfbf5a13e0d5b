"""Depth items matched on single image cues (tasks/threedpc/select.py): the property it claims (every cue's AUC
in the band, labels still balanced per split), checked with sklearn's AUC; and the build's use of it."""
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from tasks.threedpc import build, config_from_dict
from tasks.threedpc.select import SelectionError, cue_matched_keep

from tests.conftest import TINY_3DPC as TINY


def _balanced(n_per_cell=400, seed=0):
    """Two strata, each with n_per_cell positives and negatives; cues of several kinds."""
    rng = np.random.default_rng(seed)
    y = np.tile(np.r_[np.ones(n_per_cell, int), np.zeros(n_per_cell, int)], 2)
    strata = np.repeat(["train", "test"], 2 * n_per_cell)
    n = len(y)
    cues = pd.DataFrame({
        "image_height": 1.6 * y + rng.normal(size=n),           # AUC ~0.87: decides too many items
        "apparent_size": -2.2 * y + rng.normal(size=n),         # AUC ~0.06 the other way
        "weak": 0.3 * y + rng.normal(size=n),                    # inside the band
        "binary": (rng.random(n) < 0.3 + 0.2 * y).astype(float),  # ties
    })
    cues.loc[rng.random(n) < 0.1, "weak"] = np.nan             # unavailable for some rows
    return cues, y, strata


def _auc(x, y):
    ok = np.isfinite(x)
    return roc_auc_score(y[ok], x[ok])


def test_every_cue_ends_inside_the_band_with_labels_balanced_per_split():
    cues, y, strata = _balanced()
    band = (0.15, 0.85)
    before = {c: _auc(cues[c].to_numpy(), y) for c in cues}
    assert before["image_height"] > 0.85 and before["apparent_size"] < 0.15  # the case the selection is for
    keep, report = cue_matched_keep(cues, y, strata, band)
    for c in cues:
        a = _auc(cues[c].to_numpy()[keep], y[keep])  # sklearn, not the module's own AUC
        assert band[0] <= a <= band[1], (c, a)
    for s in ("train", "test"):
        k = keep & (strata == s)
        assert (y[k] == 1).sum() == (y[k] == 0).sum() > 200, s
        assert report["dropped"][s] == int((~keep & (strata == s)).sum())
    assert set(report["cues"]) == {"image_height", "apparent_size"}
    assert report["cues"]["image_height"]["before"] == pytest.approx(before["image_height"], abs=1e-4)
    again, _ = cue_matched_keep(cues, y, strata, band)
    assert (again == keep).all()  # deterministic


def test_the_dropped_items_are_the_ones_the_cue_decides_most_surely():
    """One cue outside the band: every dropped positive ranks above every kept positive on it (and the
    dropped negatives below the kept ones), per stratum."""
    cues, y, strata = _balanced()
    cues = cues[["image_height"]]
    keep, report = cue_matched_keep(cues, y, strata, (0.15, 0.85))
    assert report["rounds"] > 1
    x = cues["image_height"].to_numpy()
    for s in ("train", "test"):
        st = strata == s
        assert x[st & ~keep & (y == 1)].min() >= x[st & keep & (y == 1)].max()
        assert x[st & ~keep & (y == 0)].max() <= x[st & keep & (y == 0)].min()


def test_a_set_inside_the_band_is_kept_whole():
    cues, y, strata = _balanced()
    keep, report = cue_matched_keep(cues[["weak", "binary"]], y, strata, (0.15, 0.85))
    assert keep.all() and report["rounds"] == 0 and report["cues"] == {} and sum(report["dropped"].values()) == 0


def test_a_band_that_cannot_be_met_is_a_clear_error():
    y = np.r_[np.ones(20, int), np.zeros(20, int)]
    cues = pd.DataFrame({"perfect": y.astype(float)})  # separates exactly: no subset brings it inside
    with pytest.raises(SelectionError, match=r"perfect \(AUC 1.000\) into band \[0.15, 0.85\] would empty a label"):
        cue_matched_keep(cues, y, np.array(["test"] * 40), (0.15, 0.85))
    with pytest.raises(SelectionError, match="need 0 <= low < 0.5 < high <= 1"):
        cue_matched_keep(cues, y, np.array(["test"] * 40), (0.6, 0.9))


def test_build_reassembles_with_another_band_without_rendering(tiny_3dpc, tmp_path, monkeypatch):
    """``depth_cue_band`` is an item selection over the same images: changing it re-assembles the build (no
    scene is rendered again), the manifest and summary record what it dropped, the audit's single-cue depth
    AUCs lie in the band, and the default band gives back the original build's manifest."""
    import importlib

    B = importlib.import_module("tasks.threedpc.build")  # the module (the package exports a function of its name)

    out = tmp_path / "b"
    shutil.copytree(tiny_3dpc, out)
    (out / ".lock").unlink(missing_ok=True)
    original = json.loads((out / "manifest.json").read_text())
    before = pd.read_parquet(out / "metadata.parquet")
    monkeypatch.setattr(B, "basic_scene_rows", lambda *a, **k: pytest.fail("a scene was rendered again"))
    band = (0.2, 0.8)  # TINY's 32 depth items: image height 0.15, pixel ratio 0.19 lie outside
    build(config_from_dict({**TINY, "out": str(out), "depth_cue_band": list(band)}), progress=False)
    md = pd.read_parquet(out / "metadata.parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    sel = manifest["depth_item_selection"]
    assert sel["band"] == list(band) and sum(sel["dropped"].values()) == int(md.cue_dropped_depth.sum()) > 0
    # only dropped: the new depth set is the balanced candidates (the old set and what its band dropped) minus
    # the flagged frames; VPT untouched
    candidates = before.in_depth | before.cue_dropped_depth
    assert not (md.in_depth & ~candidates).any()
    assert ((candidates & ~md.in_depth) == md.cue_dropped_depth).all()
    assert (md.in_vpt == before.in_vpt).all()
    for sp, g in md[md.in_depth].groupby("split"):
        assert (g.depth_label == 0).sum() == (g.depth_label == 1).sum() > 0, sp
    audit = pd.read_parquet(out / "shortcut_audit.parquet")
    depth = audit[(audit.task == "depth") & (audit.kind == "cue_auc") & ~audit.name.isin(["mean_r", "mean_g", "mean_b"])]
    assert len(depth) > 10 and depth.value.between(*band).all(), depth[["name", "value"]].to_string()
    assert "depth items matched on single image cues" in (out / "summary.md").read_text()
    assert len(list((out / "depth").rglob("*.png"))) == int(md.in_depth.sum())  # the views follow
    build(config_from_dict({**TINY, "out": str(out)}), progress=False)
    assert json.loads((out / "manifest.json").read_text()) == original


def test_stamps_of_older_code_resume(tiny_3dpc, tmp_path):
    """A stamp written while the identity still recorded an empty ``scene_frames`` and ``away_facing: viewer``
    is the same build: it resumes instead of being refused."""
    out = tmp_path / "b"
    shutil.copytree(tiny_3dpc, out)
    (out / ".lock").unlink(missing_ok=True)
    stamp = json.loads((out / "config.json").read_text())
    stamp["scene_frames"] = []
    stamp["design"]["matched_design"]["away_facing"] = "viewer"
    (out / "config.json").write_text(json.dumps(stamp))
    build(config_from_dict({**TINY, "out": str(out)}), progress=False)
    assert "scene_frames" not in json.loads((out / "config.json").read_text())


def test_removal_effects_equal_recomputing_the_auc_without_each_row():
    """The exact one-row update the selection scores removals with, against sklearn with the row left out
    (ties, a missing cue and a row already dropped included)."""
    from tasks.threedpc.select import removal_effects

    rng = np.random.default_rng(1)
    x = np.round(rng.normal(size=60), 1)  # rounded: ties
    y = rng.integers(0, 2, 60)
    x[3] = np.nan
    keep = np.ones(60, bool)
    keep[5] = False
    auc, after = removal_effects(x, y, keep)
    ok = keep & np.isfinite(x)
    assert auc == pytest.approx(roc_auc_score(y[ok], x[ok]), abs=1e-12)
    for i in np.flatnonzero(ok):
        rest = ok.copy()
        rest[i] = False
        assert after[i] == pytest.approx(roc_auc_score(y[rest], x[rest]), abs=1e-12), i
    assert after[3] == after[5] == auc



def test_too_few_items_keep_every_candidate_and_say_why(monkeypatch):
    """A build too small to meet the band (a few frames: a cue orders every pair) is not refused: nothing is
    dropped, the report says why, and the summary line says the items are not cue-matched (the audit then
    judges the build as it is)."""
    import tasks.threedpc.shortcuts as SC
    from tasks.threedpc.assemble import selection_lines
    from tasks.threedpc.select import depth_selection

    y = np.array([0, 1, 1, 0, 1, 0, 1, 0])
    df = pd.DataFrame({"in_depth": True, "depth_label": y, "split": ["train"] * 4 + ["test"] * 4})
    monkeypatch.setattr(SC, "shortcut_cues", lambda d: pd.DataFrame({"observer_v": d["depth_label"].astype(float)}))
    drop, report = depth_selection(df, (0.15, 0.85))
    assert len(drop) == 0 and sum(report["dropped"].values()) == 0
    assert "would empty a label" in report["unmet"] and report["cues"]["observer_v"]["before"] == 1.0
    line = selection_lines(report)[0]
    assert "**not cue-matched**" in line and "observer_v 1.000" in line
