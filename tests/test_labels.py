"""Labels on known configurations in catalogue scenes, and the pieces behind them."""
import math

import numpy as np
import pytest

from scenes.camera import Camera
from scenes.catalogue import build
from scenes.props import Observer, Target
from tasks.labels import LabelRules, depth_order, label_frame, vpt_label
from tasks.placement import Placement, make_props
from tasks.placement import PropStyle as Style


def _around(scene, angle_deg: float, dist_beyond: float) -> np.ndarray:
    lo, hi = scene.object_bounds
    c = (lo[:2] + hi[:2]) / 2
    r = 0.5 * np.linalg.norm(hi[:2] - lo[:2]) + dist_beyond
    a = math.radians(angle_deg)
    return c + r * np.array([math.cos(a), math.sin(a)])


def _facing(a, b) -> float:
    return math.degrees(math.atan2(b[1] - a[1], b[0] - a[0]))


@pytest.fixture(scope="module")
def hydrant():
    return build("hydrant_02")


def test_ball_directly_behind_object_is_occluded(hydrant):
    obs_xy, ball_xy = _around(hydrant, 0, 0.4), _around(hydrant, 180, 0.15)
    pl = make_props(Style(), obs_xy, _facing(obs_xy, ball_xy), ball_xy)
    lab = vpt_label(hydrant, pl.observer, pl.target, support=pl.target_support)
    assert lab["vpt_label"] == 0 and lab["vpt_reason"] == "occluded"
    assert lab["visible_fraction_raycast"] == 0.0 and lab["visible_fraction_render"] < 0.05


def test_ball_in_open_facing_camera_is_visible(hydrant):
    obs_xy, ball_xy = _around(hydrant, 0, 0.4), _around(hydrant, 60, 0.6)
    pl = make_props(Style(), obs_xy, _facing(obs_xy, ball_xy), ball_xy)
    lab = vpt_label(hydrant, pl.observer, pl.target, support=pl.target_support)
    assert lab["vpt_label"] == 1 and lab["vpt_reason"] == "visible" and lab["in_view"]
    assert lab["visible_fraction_raycast"] == 1.0 and lab["visible_fraction_render"] > 0.95


def test_ball_behind_prop_camera_is_out_of_view(hydrant):
    obs_xy, ball_xy = _around(hydrant, 0, 0.4), _around(hydrant, 60, 0.6)
    pl = make_props(Style(), obs_xy, _facing(obs_xy, ball_xy) + 180, ball_xy)
    lab = vpt_label(hydrant, pl.observer, pl.target, support=pl.target_support)
    assert lab["vpt_label"] == 0 and lab["vpt_reason"] == "out_of_view" and not lab["in_view"]
    assert lab["visible_fraction_raycast"] == 1.0  # nothing in the way: it is the direction that fails


def test_partial_occlusion_is_dropped():
    obs = Observer((2.0, 0.0, 0.078), 180.0)
    ball = Target((0.0, 0.0, 0.09))
    rules = LabelRules()
    from tasks.labels import vpt_from_fraction

    assert vpt_from_fraction(0.5, True, rules) == (None, "partial")
    assert vpt_from_fraction(rules.vpt_visible_min, True, rules) == (1, "visible")
    assert vpt_from_fraction(0.05, True, rules) == (0, "occluded")
    assert vpt_from_fraction(1.0, False, rules) == (0, "out_of_view")
    del obs, ball


def test_depth_label_flips_when_viewer_passes_midpoint():
    obs = Observer((1.0, 0.0, 0.09), 180.0)
    ball = Target((-1.0, 0.0, 0.09))  # same height: the bisector plane is x = 0
    # A viewer path along +x → -x at y = -3: the perpendicular bisector of the props is x = 0.
    labels = []
    for x in np.linspace(3, -3, 61):
        d = depth_order([x, -3.0, 1.2], obs, ball)
        labels.append(d["depth_label"])
        if abs(x) < 0.05:
            assert abs(d["depth_gap"]) < 1e-6 and d["depth_label"] is None and d["depth_reason"] == "ambiguous"
    known = [v for v in labels if v is not None]
    assert labels[0] == 1 and labels[-1] == 0  # ball further at the start, nearer at the end
    assert known == sorted(known, reverse=True), "exactly one flip"
    assert labels.count(None) >= 3  # the ambiguous band around the midpoint


def test_frame_dropped_when_ball_hidden_from_viewer(hydrant):
    lo, hi = hydrant.object_bounds
    c = (lo + hi) / 2
    obs_xy, ball_xy = _around(hydrant, 90, 0.5), _around(hydrant, 180, 0.12)
    pl = make_props(Style(), obs_xy, _facing(obs_xy, ball_xy), ball_xy)
    eye = np.array([*_around(hydrant, 0, 1.6), 0.6])  # the object stands between viewer and ball
    cam = Camera.from_fov(128, 128, 60.0).looking_at(eye, [c[0], c[1], 0.3])
    img, row = label_frame(hydrant, pl, cam, vpt={}, rules=LabelRules())
    assert img.shape == (128, 128, 3)
    assert row["ball_visible_fraction"] < 0.1 and not row["keep"] and "ball_hidden" in row["drop_reason"]
    assert row["observer_visible_fraction"] > 0.8


def test_props_shapes_and_geometry():
    o = Observer((0, 0, 0.078), yaw_deg=90.0)
    np.testing.assert_allclose(o.forward, [0, 1, 0], atol=1e-12)
    assert o.eye[1] > 0.1 and abs(o.eye[0]) < 1e-9  # lens front ahead of the body
    assert o.mesh().bounds[0, 2] == pytest.approx(0.0, abs=1e-9)  # rests on the ground
    arrow = Observer((0, 0, 0), 0.0, shape="arrow")
    assert arrow.mesh().bounds[1, 0] == pytest.approx(arrow.eye[0], abs=1e-6)  # the eye is the arrow tip
    ball = Target((1.0, 2.0, 0.1), size=0.2)
    pts = ball.facing_points([4.0, 2.0, 0.1], 100)
    np.testing.assert_allclose(np.linalg.norm(pts - ball.center, axis=1), 0.1, rtol=1e-9)
    assert (pts[:, 0] > 1.0).all()  # all on the side facing the eye
    cube = Target((0, 0, 0.1), size=0.2, shape="cube")
    cp = cube.facing_points([3.0, 0.2, 0.3], 64)
    assert len(cp) == 64 and np.abs(cp).max() <= 0.2 + 1e-9
    col = o.mesh().visual.vertex_colors[:, :3].astype(int)
    green = col[:, 1] > 2 * col[:, 0]  # body and hump
    # the rest is the lens barrel (near-black) and its front ring (light grey): colourless
    assert green.sum() >= 16 and (np.ptp(col[~green], axis=1) <= 0.05 * col[~green].max(axis=1) + 4).all()
    with pytest.raises(ValueError, match="observer shape='dog'"):
        Observer((0, 0, 0), 0.0, shape="dog")
    with pytest.raises(ValueError, match="vpt_hidden_max < vpt_visible_min"):
        LabelRules(vpt_visible_min=0.1, vpt_hidden_max=0.5)
    assert isinstance(Placement(o, ball).to_row()["ball_x"], float)


def test_skipping_alone_renders_is_exact(hydrant, monkeypatch):
    """When the props' view cones are disjoint, the per-prop masks from the combined pass are used;
    the rows must equal those computed with the two extra renders."""
    import tasks.labels as labels

    rng = np.random.default_rng(4)
    from tasks.placement import sample_placement

    pl, _ = sample_placement(hydrant, "visible", rng)
    cams = hydrant.trajectory.cameras(6, 96, 96)
    fast = [labels.label_frame(hydrant, pl, c, {}) for c in cams]
    assert not all(labels.props_may_overlap(c.center, pl) for c in cams), "the fast path is exercised"
    monkeypatch.setattr(labels, "props_may_overlap", lambda eye, placement: True)
    slow = [labels.label_frame(hydrant, pl, c, {}) for c in cams]
    for (ia, ra), (ib, rb) in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(ia, ib)
        assert ra == rb


def test_props_may_overlap_geometry():
    from tasks.labels import props_may_overlap

    pl = Placement(Observer((1.0, 0.0, 0.08), 180.0), Target((-1.0, 0.0, 0.09)))
    assert props_may_overlap([5.0, 0.0, 0.1], pl)       # looking along the props' axis: one behind the other
    assert not props_may_overlap([0.0, -4.0, 1.0], pl)   # from the side: far apart in the image


def test_too_small_frames_skip_the_splat_and_kept_frames_are_unchanged(hydrant, monkeypatch):
    """label_frame(render_dropped=False, too_small=…) against its plain twin (every frame rendered, the
    too-small rule applied to the row afterwards): kept frames' images and rows are identical; a frame the
    rule drops is not splatted (image None, visible fractions NaN) and keeps every other column, its drop
    reason the rule's (or, when the meshes alone hide a prop, the rendered frame's)."""
    import render.compose as compose
    import tasks.labels as labels
    from tasks.placement import sample_placement

    rng = np.random.default_rng(7)
    pl, _ = sample_placement(hydrant, "visible", rng)
    cams = hydrant.trajectory.cameras(10, 96, 96)
    ref = [label_frame(hydrant, pl, c, {"vpt_label": 1}) for c in cams]
    limit = int(np.median([r["ball_height_px"] for _, r in ref]))  # about half the frames too small

    def small(row):
        return ["ball_too_small"] if row["ball_height_px"] < limit else []

    splats = []
    real = compose.splat
    monkeypatch.setattr(compose, "splat", lambda *a, **k: splats.append(1) or real(*a, **k))
    fast = [label_frame(hydrant, pl, c, {"vpt_label": 1}, render_dropped=False, too_small=small) for c in cams]
    n_small = 0
    for (ia, ra), (ib, rb) in zip(ref, fast, strict=True):
        if ra["keep"] and not small(ra):
            np.testing.assert_array_equal(ia, ib)
            assert list(ra) == list(rb) and ra == rb
            continue
        assert not rb["keep"] and list(ra) == list(rb)
        if "outside_image" in ra["drop_reason"]:  # not rendered with render_dropped=False either
            assert ib is None and rb["drop_reason"] == ra["drop_reason"]
            continue
        if ib is None:
            n_small += 1
            assert small(ra) and rb["drop_reason"] == "ball_too_small"
            assert math.isnan(rb["ball_visible_fraction"]) and math.isnan(rb["observer_visible_fraction"])
            same = {k: v for k, v in ra.items() if k not in ("ball_visible_fraction", "observer_visible_fraction",
                                                             "keep", "drop_reason")}
            assert same == {k: rb[k] for k in same}
            assert ra["drop_reason"] in ("ball_too_small", "") or "hidden" in ra["drop_reason"]
        else:  # rendered: dropped exactly as the twin drops it
            np.testing.assert_array_equal(ia, ib)
            assert ra == rb
    n_out = sum("outside_image" in r["drop_reason"] for _, r in ref)
    assert 0 < n_small < len(cams) - n_out and len(splats) == len(cams) - n_small - n_out


def test_mesh_pass_visible_bound_is_an_upper_bound(hydrant):
    """FrameMeshes.visible_bound (the meshes alone) is never below the rendered visible fraction, so a prop
    below prop_visible_min there is hidden in the rendered frame too."""
    from tasks.labels import frame_meshes, splat_frame
    from tasks.placement import sample_placement

    rng = np.random.default_rng(3)
    for outcome in ("visible", "occluded"):
        pl, _ = sample_placement(hydrant, outcome, rng)
        for cam in hydrant.trajectory.cameras(4, 64, 64):
            fm = frame_meshes(pl, cam)
            _, row = splat_frame(hydrant, pl, cam, fm, {})
            bound = fm.visible_bound()
            assert row["observer_visible_fraction"] <= bound[0] + 1e-12
            assert row["ball_visible_fraction"] <= bound[1] + 1e-12
            assert [row["observer_height_px"], row["ball_height_px"]] == fm.heights
