"""The 3D-PC shortcut audit (tasks/threedpc/shortcuts.py) on synthetic metadata: no rendering."""
import math
import re

import numpy as np
import pandas as pd
import pytest

from scenes.camera import Camera
from tasks.threedpc.shortcuts import (
    AuditConfig, IMAGE_CUES, ShortcutAuditFailed, audit_markdown, enforce, failed_gates, failure_message, image_features,
    shortcut_audit, shortcut_cues, weighted_auc,
)

BOX = {"object_lo_x": -0.4, "object_lo_y": -0.4, "object_lo_z": 0.0,
       "object_hi_x": 0.4, "object_hi_y": 0.4, "object_hi_z": 0.8}


def _row(eye, obs, ball, yaw=0.0, size=64, obs_size=0.24, ball_size=0.18):
    cam = Camera.from_fov(size, size, 60.0).looking_at(np.asarray(eye, float), np.array([0.0, 0.0, 0.3]))
    return {**cam.as_row(), **BOX,
            "observer_x": obs[0], "observer_y": obs[1], "observer_z": obs[2], "observer_yaw_deg": yaw,
            "observer_pitch_deg": 0.0, "observer_size": obs_size,
            "ball_x": ball[0], "ball_y": ball[1], "ball_z": ball[2], "ball_size": ball_size}


def synthetic_meta(seed=0, n_scenes=20, n_test=8, settings=12, frames=6, shortcut=None):
    """Random layouts around a box object; VPT label per setting, depth label per frame, both independent of
    the geometry unless ``shortcut`` = "prop_distance" (VPT 1 ⇔ props close together)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_scenes):
        split = "test" if s < n_test else "train"
        for k in range(settings):
            vpt = int(rng.integers(2))
            a_o, a_b = rng.uniform(0, 2 * math.pi, 2)
            r_o, r_b = rng.uniform(0.8, 1.6, 2)
            if shortcut == "prop_distance":  # visible: props on the same side; occluded: opposite sides
                a_b = a_o + (rng.uniform(-0.6, 0.6) if vpt else math.pi + rng.uniform(-0.6, 0.6))
            obs = (r_o * math.cos(a_o), r_o * math.sin(a_o), rng.uniform(0.05, 0.4))
            ball = (r_b * math.cos(a_b), r_b * math.sin(a_b), rng.uniform(0.05, 0.4))
            yaw = rng.uniform(-180, 180)
            so, sb = rng.uniform(0.18, 0.3), rng.uniform(0.12, 0.24)
            az0 = rng.uniform(0, 2 * math.pi)
            for f in range(frames):
                az = az0 + 0.15 * f
                eye = (3.5 * math.cos(az), 3.5 * math.sin(az), rng.uniform(1.0, 1.8))
                rows.append({**_row(eye, obs, ball, yaw, obs_size=so, ball_size=sb), "scene": f"sc{s:02d}",
                             "setting": k, "frame": f, "split": split, "vpt_label": vpt,
                             "depth_label": int(rng.integers(2)), "in_vpt": True, "in_depth": True,
                             "file_name": f"sc{s:02d}/s{k:02d}/f{f:03d}.png"})
    return pd.DataFrame(rows)


def test_weighted_auc_matches_sklearn_with_ties_and_weights():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    x = rng.integers(0, 6, 300).astype(float)  # many ties
    y = (rng.random(300) < 0.4).astype(int)
    w = rng.integers(0, 4, (5, 300)).astype(float)
    assert weighted_auc(x, y) == pytest.approx(roc_auc_score(y, x))
    got = weighted_auc(x, y, w)
    for b in range(5):
        assert got[b] == pytest.approx(roc_auc_score(y, x, sample_weight=w[b]))


def test_object_between_rule_on_hand_made_layouts():
    eye = (0.0, -5.0, 1.0)  # viewer in front of the box, props at ground level unless said otherwise
    cases = [((-1.5, 0.0, 0.1), (1.5, 0.0, 0.1), 1.0),    # either side of the object: the box lies between
             ((-1.5, 0.0, 0.1), (-2.5, 0.5, 0.1), 0.0),   # both on the left
             ((-1.5, 0.0, 2.5), (1.5, 0.0, 2.5), 0.0),    # either side but high above: the segment passes over
             ((-1.5, 0.0, 0.1), (0.0, 0.0, 0.4), 1.0)]    # ball inside the box's image
    df = pd.DataFrame([_row(eye, o, b) for o, b, _ in cases])
    cues = shortcut_cues(df)
    assert cues.object_between.tolist() == [c[2] for c in cases]
    # image coordinates: the left prop is left of centre, and a prop higher up is higher in the image
    assert cues.observer_u[0] < 0.5 < cues.ball_u[0]
    assert cues.observer_v[2] < cues.observer_v[0]


def test_orientation_and_height_cues_follow_their_definitions():
    eye = (0.0, -5.0, 1.0)
    df = pd.DataFrame([_row(eye, (0, 0, 0.1), (0, 2, 0.6), yaw=-90.0),   # observer faces the viewer (−y)
                       _row(eye, (0, 0, 0.1), (0, 2, 0.6), yaw=90.0)])   # faces away
    cues = shortcut_cues(df)
    assert cues.observer_faces_viewer[0] > 0.95 and cues.observer_faces_viewer[1] < -0.95
    assert (cues.height_diff > 0).all()  # the far, raised ball is higher in the image
    assert cues.projected_size_ratio[0] < 0.75  # 0.18/0.24 at equal distances; the ball is further


def test_injected_layout_shortcut_fails_the_gate_and_random_geometry_passes():
    cfg = AuditConfig(bootstrap=200)
    bad = shortcut_audit(synthetic_meta(shortcut="prop_distance"), None, cfg)
    fails = failed_gates(bad)
    row = bad[(bad.task == "vpt") & (bad.kind == "cue_auc") & (bad.name == "prop_distance")].iloc[0]
    assert row.value < 0.1 and not row.passed and row.enforced
    assert {"prop_distance", "screen_separation"} <= set(fails[fails.task == "vpt"].name)
    assert ((fails.task == "vpt") & (fails.kind == "rule")).any()
    assert ((fails.task == "vpt") & (fails.kind == "cue_logreg")).any()
    with pytest.raises(ShortcutAuditFailed, match="prop_distance"):
        enforce(bad, "/tmp/build", cfg)

    good = shortcut_audit(synthetic_meta(seed=3), None, cfg)
    assert len(good[good.kind == "cue_auc"]) >= 2 * 15  # every geometric cue is measured for both tasks
    assert good.enforced.all() or good.passed.isna()[~good.enforced].all()
    assert len(failed_gates(good)) == 0, good[good.passed == False]  # noqa: E712
    enforce(good, "/tmp/build", cfg)  # does not raise
    # the clustered CIs are real intervals around the estimates
    auc = good[good.kind == "cue_auc"]
    assert (auc.ci_low <= auc.value).all() and (auc.value <= auc.ci_high).all() and (auc.ci_high > auc.ci_low).all()


def test_gates_on_too_few_placements_are_reported_not_enforced():
    meta = synthetic_meta(shortcut="prop_distance", n_scenes=4, n_test=2, settings=4)
    table = shortcut_audit(meta, None, AuditConfig(bootstrap=50))
    assert (table.passed == False).any()  # noqa: E712  (the shortcut is there...)
    assert len(failed_gates(table)) == 0   # (...but on 16 placements it is not enforced)
    assert "too few placements" in audit_markdown(table, AuditConfig())


def test_summary_and_message_list_every_failed_gate():
    cfg = AuditConfig(bootstrap=100)
    table = shortcut_audit(synthetic_meta(shortcut="prop_distance"), None, cfg)
    bad = failed_gates(table)
    md = audit_markdown(table, cfg)
    section = md.split("Failed gates:")[1].split("|")[0]
    msg = failure_message(table, "/tmp/build")
    assert "FAILED" in md and len(bad) >= 3
    for r in bad.itertuples():
        assert f"{r.task} {r.kind} `{r.name}` = {r.value:.3f}" in section
        assert f"{r.task} {r.kind} {r.name} = {r.value:.3f}" in msg
    assert "audit.enforce=false" in msg and "/tmp/build" in msg


def test_pixel_regression_finds_an_injected_pixel_cue_and_the_shuffled_control_does_not(tmp_path):
    from PIL import Image

    meta = synthetic_meta(n_scenes=12, n_test=4, settings=10, frames=5, seed=5)
    rng = np.random.default_rng(0)
    for r in meta.itertuples():
        img = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
        if r.vpt_label == 1:
            img[:12, :12] = 255  # a bright corner in every visible image
        p = tmp_path / r.file_name
        p.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(p)
    feats = image_features(tmp_path, list(meta.file_name[:3]), 32)
    assert feats.shape == (3, 32 * 32 * 3) and feats.dtype == np.float32 and 0 <= feats.min() <= feats.max() <= 1
    table = shortcut_audit(meta, tmp_path, AuditConfig(bootstrap=200))
    pix = table[(table.task == "vpt") & (table.kind == "pixel_logreg")].iloc[0]
    ctrl = table[(table.task == "vpt") & (table.kind == "shuffled_control")].iloc[0]
    assert pix.value > 0.95 and not pix.passed
    assert abs(ctrl.value - 0.5) < 0.1
    # the same model in folds grouped by scene over every frame: reads the corner too, reported, never gated
    cv = table[(table.task == "vpt") & (table.kind == "pixel_cv")].iloc[0]
    assert cv.value > 0.95 and cv.scored_on == "all" and cv.n_test == len(meta[meta.in_vpt.fillna(False)])
    assert pd.isna(cv.passed) and not cv.enforced and np.isnan(cv.gate_low) and cv.ci_low <= cv.value <= cv.ci_high
    assert ctrl.ci_low < 0.5 < ctrl.ci_high
    # the bright corner also raises the mean colour of visible images: the colour cues see it too
    mean_r = table[(table.task == "vpt") & (table.name == "mean_r")].iloc[0]
    assert mean_r.value > 0.65
    # depth labels are independent of the images: chance
    dpix = table[(table.task == "depth") & (table.kind == "pixel_logreg")].iloc[0]
    assert abs(dpix.value - 0.5) < 0.1
    dcv = table[(table.task == "depth") & (table.kind == "pixel_cv")].iloc[0]
    assert abs(dcv.value - 0.5) < 0.1


def test_the_task_defining_cue_is_reported_but_not_gated():
    # VPT 1 ⇔ the observer faces the ball: that is perspective taking, not a shortcut
    meta = synthetic_meta(seed=2)
    vis = meta.vpt_label == 1
    to_ball = np.degrees(np.arctan2(meta.ball_y - meta.observer_y, meta.ball_x - meta.observer_x))
    meta.loc[vis, "observer_yaw_deg"] = to_ball[vis]
    meta.loc[~vis, "observer_yaw_deg"] = to_ball[~vis] + 180
    table = shortcut_audit(meta, None, AuditConfig(bootstrap=50))
    row = table[(table.task == "vpt") & (table.name == "observer_faces_ball")].iloc[0]
    assert row.value > 0.99 and pd.isna(row.passed) and not row.enforced
    assert "observer_faces_ball" not in table[(table.task == "vpt") & (table.kind == "cue_logreg")].description.iloc[0]


@pytest.mark.parametrize("side,size", [(256, 32), (96, 32), (100, 24), (64, 64)])
def test_thumbnails_from_memory_equal_the_files_read_back(tmp_path, side, size):
    """The build thumbnails each frame while it holds it (``infra.images.small_uint8``); the audit's features
    from those thumbnails are bit for bit the ones it gets by reading the written PNGs (the plain twin), and
    files without a thumbnail are still read."""
    from infra.images import png_bytes, read_image_small, small_uint8

    rng = np.random.default_rng(side + size)
    files, thumbs = [], {}
    for k in range(70):  # above the threshold where image_features starts its thread pool
        img = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
        img[: side // 3] = img[: side // 3] // 7  # smooth and noisy parts
        f = f"s{k:02d}.png"
        (tmp_path / f).write_bytes(png_bytes(img, 1, row_filter="sub"))
        files.append(f)
        thumbs[f] = small_uint8(img, size)
        assert thumbs[f].dtype == np.uint8 and thumbs[f].shape == (size, size, 3)
        np.testing.assert_array_equal(np.asarray(thumbs[f], np.float32) / 255.0, read_image_small(tmp_path / f, size))
    plain = image_features(tmp_path, files, size)
    assert np.array_equal(image_features(tmp_path, files, size, thumbs=thumbs), plain)
    some = {f: t for i, (f, t) in enumerate(thumbs.items()) if i % 3}
    assert np.array_equal(image_features(tmp_path, files, size, thumbs=some), plain)
    assert np.array_equal(image_features(tmp_path, files[:5], size, thumbs=thumbs), plain[:5])


@pytest.mark.parametrize("seed", range(6))
def test_bootstrap_auc_is_bit_for_bit_the_weighted_auc_of_the_expanded_weights(seed):
    """The audit's bootstrap AUCs per cluster (``bootstrap_auc``) against the plain twin, ``weighted_auc`` on
    the (B, n) row weights: equal bit for bit, with ties (rounded scores), clusters never drawn, clusters with
    one label only, and single-class resamples (NaN)."""
    from tasks.threedpc.shortcuts import bootstrap_auc, cluster_counts

    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(50, 3000)), int(rng.integers(2, 300))
    clusters = np.sort(rng.integers(0, k, n))
    y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(int)
    y[clusters == clusters[0]] = 1  # a cluster with positives only
    score = rng.normal(size=n) + 0.3 * y
    if seed % 2:
        score = np.round(score, 1)  # many ties
    counts = cluster_counts(clusters, 400, np.random.default_rng(seed))
    if seed == 5:
        counts[:3] = 0
        counts[:3, clusters[0]] = k  # resamples of one all-positive cluster: AUC undefined (NaN)
    got = bootstrap_auc(score, y, clusters, counts)
    want = weighted_auc(score, y, counts[:, clusters].astype(float))
    assert got.shape == want.shape == (400,)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isfinite(want).sum() >= 397
    if seed == 5:
        assert np.isnan(got[:3]).all()
    # a subset of rows (the audit drops a cue's non-finite rows) against the same draws
    ok = rng.random(n) < 0.7
    assert np.array_equal(bootstrap_auc(score[ok], y[ok], clusters[ok], counts),
                          weighted_auc(score[ok], y[ok], counts[:, clusters[ok]].astype(float)), equal_nan=True)


def test_props_midpoint_offset_on_hand_made_layouts():
    """Horizontal offset of the props' image midpoint from the object's image box centre, in box widths: 0 for
    props placed symmetrically about the object, about 2.5 box widths for both props far to the left."""
    eye = (0.0, -5.0, 0.3)  # level with the box centre, straight in front of it
    df = pd.DataFrame([_row(eye, (-1.5, 0.0, 0.3), (1.5, 0.0, 0.3)),
                       _row(eye, (-1.5, 0.0, 0.3), (-2.5, 0.0, 0.3)),
                       _row(eye, (-0.2, 0.0, 0.3), (0.6, 0.0, 0.3))])
    off = shortcut_cues(df).props_midpoint_offset.to_numpy()
    assert off[0] == pytest.approx(0.0, abs=1e-9)
    # by hand: the box spans x in [-0.4, 0.4] at depth 4.6-5.4 m; its image width is set by the near face
    # (x = ±0.4 at 4.6 m); the props' midpoint (x = -2, 5 m away) lies at f·(-2/5) from the centre
    k = df.fx[0]
    box_w = 2 * k * 0.4 / 4.6
    assert off[1] == pytest.approx(k * 2.0 / 5.0 / box_w, rel=1e-6)
    assert off[2] == pytest.approx(k * 0.2 / 5.0 / box_w, rel=1e-6)


def _with_two_kinds_of_negative(meta, seed=0):
    """VPT negatives of two kinds, each given away by its own cue with the pooled AUC near 0.5: ``occluded``
    settings get small ``size_ratio`` values (ball small), ``out_of_view`` ones large; visible ones lie between."""
    rng = np.random.default_rng(seed)
    meta = meta.copy()
    first = meta.groupby(["scene", "setting"]).ngroup().to_numpy()
    kinds = rng.choice(["occluded", "out_of_view"], first.max() + 1)
    neg = meta.vpt_label.to_numpy() == 0
    meta["vpt_reason"] = np.where(neg, kinds[first], "visible")
    ratio = np.where(~neg, rng.uniform(0.9, 1.1, first.max() + 1)[first],
                     np.where(kinds[first] == "occluded", rng.uniform(0.5, 0.7, first.max() + 1)[first],
                              rng.uniform(1.3, 1.5, first.max() + 1)[first]))
    meta["ball_size"] = ratio * meta["observer_size"]
    return meta


def test_contrast_rows_find_a_cue_the_pooled_auc_hides_and_the_tree_uses_it():
    cfg = AuditConfig(bootstrap=100)
    meta = _with_two_kinds_of_negative(synthetic_meta(seed=4))
    table = shortcut_audit(meta, None, cfg)
    vpt = table[table.task == "vpt"].set_index(["kind", "name"])
    pooled = vpt.loc[("cue_auc", "size_ratio")]
    assert 0.35 < pooled.value < 0.65 and pooled.passed  # mixed: half the negatives on each side
    occ, away = vpt.loc[("contrast_auc", "size_ratio:occluded")], vpt.loc[("contrast_auc", "size_ratio:out_of_view")]
    assert occ.value == 1.0 and away.value == 0.0  # each kind alone is given away completely
    assert np.isnan(occ.gate_low) and not occ.enforced  # reported, never gated
    assert occ.n_test == int((meta.vpt_label.eq(1) | meta.vpt_reason.eq("occluded")).sum())
    # a one-threshold rule cannot use the cue, a two-level tree can: both thresholds, every test frame right
    tree = vpt.loc[("tree", "two_level_tree")]
    assert tree.value == 1.0 and "size_ratio <=" in tree.description and np.isnan(tree.gate_low)
    # the physical size ratio is a scene parameter no image shows: the image-cue tree cannot use it
    image_tree = vpt.loc[("tree", "two_level_tree_image")]
    used = set(re.findall(r"([a-z_]+) <=", image_tree.description))
    assert used and used <= IMAGE_CUES and "size_ratio" not in used
    assert "image cues:" in image_tree.description and not image_tree.enforced
    md = audit_markdown(table, cfg)
    assert "- visible vs occluded" in md and "size_ratio 1.00" in md and "size_ratio 0.00" in md
    assert "contrast_auc" not in md.split("VPT contrasts")[0]  # not in the main table
    # without vpt_reason (an older build's table) there are no contrast rows, and the audit still runs
    old = shortcut_audit(meta.drop(columns="vpt_reason"), None, cfg)
    assert not (old.kind == "contrast_auc").any() and (old.kind == "tree").sum() == 4
