"""VPT rules v2.0 (line of sight over the observer's whole aperture) and v3.0 (... to the ball's clearance disc),
on hand-made scenes (trimesh boxes)."""
import math

import numpy as np
import pytest
import trimesh

from scenes.props import Observer, Target
from tasks.labels import (
    LABEL_RULE_VERSION, LabelRules, aperture_fractions, aperture_points, depth_order, labels_table,
    raycast_visible_fraction, raycast_visible_fractions, vpt_from_aperture, vpt_from_fraction,
)

RULES = LabelRules()
V2 = LabelRules(clearance=0.0, vpt_visible_min=0.8)  # rule v2.0: the aperture alone, the ball's own silhouette
# observer on the ground at the origin looking along +x; its eye (lens-front centre) is 0.7 sizes ahead
OBS = Observer((0.0, 0.0, 0.078), 0.0)
BALL = Target((2.0, 0.0, 0.1))  # resting just above the ground, 2 m ahead of the body


def _ground() -> trimesh.Trimesh:
    g = trimesh.creation.box(extents=[10, 10, 0.02])
    g.apply_translation([0, 0, -0.01])
    return g


def _post(x: float, width: float, height: float = 1.0, y: float = 0.0) -> trimesh.Trimesh:
    """A vertical post of square cross-section ``width`` (m) standing at (x, y)."""
    p = trimesh.creation.box(extents=[width, width, height])
    p.apply_translation([x, y, height / 2])
    return p


def _scene(*parts) -> trimesh.Trimesh:
    return trimesh.util.concatenate([_ground(), *parts])


def _label(occ, obs=OBS, ball=BALL, rules=V2):
    fr = aperture_fractions(obs, ball, occ, rules, support=None)
    return fr, vpt_from_aperture(fr, True, rules)


def test_aperture_points_lie_on_the_lens_ring_around_the_eye():
    pts = aperture_points(OBS, RULES)
    assert pts.shape == (1 + RULES.aperture_points, 3)
    np.testing.assert_allclose(pts[0], OBS.eye)
    off = pts[1:] - OBS.eye
    np.testing.assert_allclose(np.linalg.norm(off, axis=1), RULES.aperture_scale * OBS.size, rtol=1e-12)
    np.testing.assert_allclose(off @ OBS.forward, 0.0, atol=1e-12)  # in the lens plane
    # the radius scales with the observer's size, and scale 0 gives the single-eye-point (v1.0) rule
    big = Observer((0.0, 0.0, 0.16), 30.0, size=0.48)
    assert np.linalg.norm(aperture_points(big, RULES)[1] - big.eye) == pytest.approx(2 * RULES.aperture_scale * 0.24)
    assert aperture_points(OBS, LabelRules(aperture_scale=0.0)).shape == (1, 3)


def test_batched_fractions_match_the_one_eye_reference():
    occ = _scene(_post(1.0, 0.05, y=0.03), _post(1.4, 0.2, height=0.12, y=-0.15))
    eyes = aperture_points(OBS, RULES)
    fast = raycast_visible_fractions(eyes, BALL, occ, 128)
    ref = np.array([raycast_visible_fraction(e, BALL, occ, 128) for e in eyes])
    np.testing.assert_array_equal(fast, ref)
    assert 0 < fast.min() < fast.max() <= 1  # the case is a mixed one, so the comparison means something


def test_ball_in_open_view_is_visible():
    fr, lab = _label(_scene())
    assert fr.min() == 1.0 and lab == (1, "visible")


def test_ball_behind_a_wall_is_occluded_from_the_whole_aperture():
    wall = trimesh.creation.box(extents=[0.05, 2.0, 1.0])
    wall.apply_translation([1.0, 0.0, 0.5])
    fr, lab = _label(_scene(wall))
    assert fr.max() == 0.0 and lab == (0, "occluded")


def test_ball_behind_a_post_thinner_than_the_aperture_is_partial():
    # a 4 cm post 0.25 m in front of the eye hides the whole ball from the lens centre (the post subtends
    # 9°, the ball 5°), but from the lens ring (6 cm off-centre) most of the ball shows beside it
    x_post = OBS.eye[0] + 0.25
    post_w = 0.04
    assert post_w < 2 * V2.aperture_scale * OBS.size
    occ = _scene(_post(x_post, post_w))
    fr, lab = _label(occ)
    assert fr[0] <= V2.vpt_hidden_max  # the v1.0 rule called this occluded ...
    assert vpt_from_fraction(fr[0], True, V2) == (0, "occluded")
    assert fr.max() >= 0.5  # ... yet half the ball or more is in plain view from the lens rim
    assert lab == (None, "partial")
    # and the single-eye-point rule is recovered with aperture_scale 0
    single = LabelRules(aperture_scale=0.0, clearance=0.0)
    assert vpt_from_aperture(aperture_fractions(OBS, BALL, occ, single, support=None), True, single) == (0, "occluded")


def test_ball_just_visible_past_an_edge_is_partial_not_visible():
    # a wall edge 3 cm left of the line of sight, 0.3 m ahead: rays from the lens centre to the ball pass it
    # within 1.5 cm of the axis (all clear), rays from the left of the lens ring (6 cm) all run into it
    wall = trimesh.creation.box(extents=[0.05, 2.0, 1.0])
    wall.apply_translation([OBS.eye[0] + 0.3, 1.0 + 0.03, 0.5])
    fr, lab = _label(_scene(wall))
    assert fr[0] >= V2.vpt_visible_min and fr.min() < V2.vpt_visible_min and lab == (None, "partial")


def _side_wall(edge_y: float, x: float = 1.7, side: float = 1.0) -> trimesh.Trimesh:
    """A thin wall across the line of sight at ``x`` whose vertical edge is at ``edge_y``; it fills y > edge_y
    (``side`` 1) or y < edge_y (``side`` -1), 2 m wide and 1 m tall."""
    w = trimesh.creation.box(extents=[0.05, 2.0, 1.0])
    w.apply_translation([x, edge_y + side * 1.0, 0.5])
    return w


def test_ball_clearing_an_edge_by_less_than_the_clearance_is_partial_and_well_clear_is_visible():
    # a wall 0.3 m in front of the ball (r = 9 cm), its edge 8 cm beside the line of sight: the ball itself is
    # (almost) all in view from the whole lens, so rule v2.0 calls it visible, yet the gap between the ball and
    # the edge, seen from the observer, is under a tenth of the ball's radius (a knife edge no person can judge
    # from a 256-px image). Rule v3.x asks the ball's clearance disc (2 radii by default) to be in view: partial.
    near = _scene(_side_wall(0.08))
    fr2, lab2 = _label(near, rules=V2)
    assert lab2 == (1, "visible") and fr2.min() < 1.0  # the edge grazes the ball from some rim point
    fr3, lab3 = _label(near, rules=RULES)
    assert RULES.clearance > 0 and lab3 == (None, "partial")
    assert RULES.vpt_hidden_max < fr3.min() < RULES.vpt_visible_min  # the ring is cut, not the whole disc
    # the same wall with its edge 25 cm aside (ball and ring in plain view from every aperture point): visible
    far = _scene(_side_wall(0.25))
    fr, lab = _label(far, rules=RULES)
    assert fr.min() == 1.0 and lab == (1, "visible")


def test_ball_hidden_by_less_than_the_clearance_is_partial_and_well_hidden_is_occluded():
    # the mirror case: the wall covers the ball with its edge 8 cm past the line of sight (at the wall, the ball
    # subtends ±7.5 cm): hidden from the whole lens (v2.0 occluded) but only just. v3.0: partial. Edge 30 cm
    # past: the ball and its ring are hidden from every aperture point, occluded.
    near = _scene(_side_wall(-0.08, side=1.0))
    assert _label(near, rules=V2)[1] == (0, "occluded")
    assert _label(near, rules=RULES)[1] == (None, "partial")
    fr, lab = _label(_scene(_side_wall(-0.30, side=1.0)), rules=RULES)
    assert fr.max() == 0.0 and lab == (0, "occluded")


def test_clearance_disc_covers_the_ball_and_its_ring_but_not_below_the_ball():
    from tasks.labels import ClearanceDisc

    ball = Target((1.0, 2.0, 0.5), size=0.2)
    eye = np.array([4.0, 2.5, 1.2])
    pts = ClearanceDisc(ball, 0.5).facing_points(eye, 400)
    assert pts.shape == (400, 3)
    off = pts - ball.center
    view = (ball.center - eye) / np.linalg.norm(ball.center - eye)
    np.testing.assert_allclose(off @ view, 0.0, atol=1e-12)  # on the disc through the centre facing the eye
    rad = np.linalg.norm(off, axis=1)
    assert rad.max() <= 0.1 + 0.5 * 0.2 + 1e-12 and rad.max() > 0.19  # out to 2 radii
    assert pts[:, 2].min() >= 0.4 - 1e-9  # nothing below the ball's bottom (its support, the ground)
    inner = (rad < 0.1).mean()
    assert 0.2 < inner < 0.4  # uniform in area: (1/2)^2 = 0.25 of the full disc, a bit more once clipped
    # clearance 0 aims at the ball itself (rule v2.0)
    from tasks.labels import sight_target
    assert sight_target(ball, V2, support=None) is ball
    assert isinstance(sight_target(ball, RULES, support=None), ClearanceDisc)


def test_out_of_view_wins_and_the_rule_is_monotone():
    assert vpt_from_aperture([1.0] * 9, False, RULES) == (0, "out_of_view")
    assert vpt_from_aperture([0.0, 0.04, 0.05], True, RULES) == (0, "occluded")
    assert vpt_from_aperture([RULES.vpt_visible_min, 1.0], True, RULES) == (1, "visible")
    assert vpt_from_aperture([0.0, 0.06], True, RULES) == (None, "partial")
    for f in np.linspace(0, 1, 21):  # one eye point: the v1.0 rule exactly
        assert vpt_from_aperture([f], True, RULES) == vpt_from_fraction(f, True, RULES)


def test_vpt_label_records_min_and_max_in_the_labels_table():
    from scenes.catalogue import build
    from tasks.labels import vpt_label
    from tasks.placement import PropStyle, make_props

    scene = build("hydrant_02")
    lo, hi = scene.object_bounds
    c = (lo[:2] + hi[:2]) / 2
    r = 0.5 * float(np.linalg.norm(hi[:2] - lo[:2]))
    obs_xy, ball_xy = c + (r + 0.4) * np.array([1.0, 0]), c + (r + 0.6) * np.array([math.cos(1.0), math.sin(1.0)])
    yaw = math.degrees(math.atan2(ball_xy[1] - obs_xy[1], ball_xy[0] - obs_xy[0]))
    pl = make_props(PropStyle(), obs_xy, yaw, ball_xy)
    lab = vpt_label(scene, pl.observer, pl.target, support=pl.target_support)
    assert lab["vpt_label"] == 1
    assert lab["visible_fraction_min"] <= lab["visible_fraction_raycast"] <= lab["visible_fraction_max"]
    df = labels_table([{**lab, "label_rule_version": LABEL_RULE_VERSION}])
    assert {"visible_fraction_min", "visible_fraction_max"} <= set(df.columns)
    assert df.visible_fraction_min.dtype == "float64" and df.label_rule_version[0] == "3.2"


def test_depth_labels_unchanged_in_definition():
    # rules v2.0 and v3.0 change line of sight only: depth order is still the viewer's Euclidean distance to each prop
    # centre, ambiguous when the relative gap is below depth_gap_min
    obs, ball = Observer((1.0, 0.0, 0.078), 180.0), Target((-1.0, 0.5, 0.09))
    rng = np.random.default_rng(0)
    for eye in rng.uniform(-4, 4, (50, 3)):
        d = depth_order(eye, obs, ball, RULES)
        db = np.linalg.norm(ball.center - eye)
        do = np.linalg.norm(np.asarray(obs.position) - eye)
        gap = (db - do) / ((db + do) / 2)
        assert d["depth_gap"] == pytest.approx(gap)
        assert d["depth_label"] == (None if abs(gap) < 0.10 else int(gap > 0))


def test_early_exit_label_equals_the_full_aperture_rule():
    from tasks.labels import aperture_label

    wall = trimesh.creation.box(extents=[0.05, 2.0, 1.0])
    wall.apply_translation([1.0, 0.0, 0.5])
    edge = trimesh.creation.box(extents=[0.05, 2.0, 1.0])
    edge.apply_translation([OBS.eye[0] + 0.3, 1.03, 0.5])
    scenes = [_scene(), _scene(wall), _scene(_post(OBS.eye[0] + 0.25, 0.04)), _scene(edge),
              _scene(_post(1.2, 0.1, y=0.05))]
    seen = set()
    for occ in scenes:
        for view in (True, False):
            fast = aperture_label(OBS, BALL, occ, RULES, visible_in_view=view, support=None)
            fr = aperture_fractions(OBS, BALL, occ, RULES, support=None)
            assert (fast["vpt_label"], fast["vpt_reason"]) == vpt_from_aperture(fr, view, RULES)
            assert fast["visible_fraction_raycast"] == fr[0]
            if not np.isnan(fast["visible_fraction_min"]):
                assert (fast["visible_fraction_min"], fast["visible_fraction_max"]) == (fr.min(), fr.max())
            seen.add(fast["vpt_reason"])
    assert seen == {"visible", "occluded", "partial", "out_of_view"}


def test_rule_v32_ring_below_a_raised_ball_and_its_own_stand_ignored():
    """Rule v3.2: a ball on a stand seen just over a wall's top edge — its bottom clears the edge from every
    aperture point, the ring below it does not — is visible under v3.1 (disc cut at the ball's bottom) and
    partial under v3.2; raised by the ring's width more it is visible under both. The ball's own stand
    never blocks its ring (with nothing else around: fraction 1 from every aperture point), while the same
    disc with the stand counted as an occluder would lose the strip under the ball."""
    from scenes.props import Support
    from tasks.labels import ClearanceDisc, raycast_visible_fractions

    v31 = LabelRules(ring_below=False)
    assert RULES.ring_below and LABEL_RULE_VERSION == "3.2"
    size = 0.18
    eyes = aperture_points(OBS, RULES)
    wall_x = 1.0

    def ball_on_stand(bottom):
        return Target((2.0, 0.0, bottom + size / 2), size=size), Support("pedestal", (2.0, 0.0), 0.0, bottom, 0.12)

    def wall(height):
        w = trimesh.creation.box(extents=[0.02, 3.0, height])
        w.apply_translation([wall_x, 0.0, height / 2])
        return w

    bottom = 0.45
    ball, stand = ball_on_stand(bottom)
    # the wall's top 5 mm under the lowest line from an aperture point to the ball's bottom
    s = (wall_x - eyes[:, 0]) / (2.0 - eyes[:, 0])
    top = float(np.min(eyes[:, 2] + s * (bottom - eyes[:, 2]))) - 0.005
    occ = _scene(wall(top), stand.mesh())
    fr31 = aperture_fractions(OBS, ball, occ, v31, support=stand)
    fr32 = aperture_fractions(OBS, ball, occ, RULES, support=stand)
    assert vpt_from_aperture(fr31, True, v31) == (1, "visible")
    assert vpt_from_aperture(fr32, True, RULES) == (None, "partial")
    assert 0.6 < fr32.min() < RULES.vpt_visible_min  # the ring's lower part (~1/5 of the disc) is behind the wall
    # without a stand (ball on the ground) the cut stays at the ball's bottom, as in v3.1
    np.testing.assert_array_equal(aperture_fractions(OBS, ball, occ, RULES, support=None), fr31)
    # raised by one more ball diameter: the whole ring clears the wall, visible under both rules
    high, high_stand = ball_on_stand(bottom + 1.5 * size)
    occ = _scene(wall(top), high_stand.mesh())
    for rules in (v31, RULES):
        assert vpt_from_aperture(aperture_fractions(OBS, high, occ, rules, support=high_stand), True, rules) == \
            (1, "visible")
    # the ball's own stand is not an occluder of its ring
    occ = _scene(stand.mesh())
    np.testing.assert_array_equal(aperture_fractions(OBS, ball, occ, RULES, support=stand), 1.0)
    disc = ClearanceDisc(ball, RULES.clearance, stand, below=True)
    assert disc.floor == 0.0 and disc.facing_points(eyes[0], 256)[:, 2].min() < bottom - 0.5 * size / 2
    disc.ignore_box = None  # the same disc with the stand counted
    assert raycast_visible_fractions(eyes, disc, occ, 256).min() < 0.97


def test_label_calls_must_say_where_the_ball_rests():
    """Since rule v3.2 a raised ball's label depends on its stand: every label entry point takes ``support`` as a
    required keyword, so a call site that forgets it fails instead of labelling a raised ball as on the ground."""
    from tasks.labels import aperture_label, sight_target, vpt_label

    occ = _scene(trimesh.creation.box(extents=[0.02, 3.0, 0.2]))
    for call in (lambda: sight_target(BALL, RULES), lambda: aperture_fractions(OBS, BALL, occ, RULES),
                 lambda: aperture_label(OBS, BALL, occ, RULES), lambda: vpt_label(None, OBS, BALL, RULES)):
        with pytest.raises(TypeError, match="support"):
            call()


def _same_label(a: dict, b: dict) -> bool:
    """Dicts equal key for key and in key order, NaN equal to NaN."""
    return list(a) == list(b) and all(
        (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a)


def test_batched_aperture_labels_are_the_single_labels_bit_for_bit():
    """aperture_labels (one ray cast per shared mesh over many placements, each placement's own supports on
    its rays) gives the dicts aperture_label gives one by one: every reason, with and without supports (the
    ball's own stand ignored, rule v3.2), the scene shared as a plain mesh and inside CompositeOccluders."""
    from scenes.props import Support
    from tasks.labels import aperture_label, aperture_labels
    from tasks.placement import CompositeOccluders

    rng = np.random.default_rng(3)
    wall = trimesh.creation.box(extents=[0.05, 1.2, 0.5])
    wall.apply_translation([1.0, 0.0, 0.25])
    scene = _scene(wall, _post(0.7, 0.04, y=0.4), _post(1.3, 0.1, height=0.3, y=-0.5))
    jobs = []
    for k in range(160):
        yaw = float(rng.uniform(-40, 40)) if k % 5 else 180.0  # one in five turned away
        obs = Observer((float(rng.uniform(-0.5, 0.2)), float(rng.uniform(-0.8, 0.8)), 0.078), yaw)
        bottom = float(rng.choice([0.0, rng.uniform(0.1, 0.6)]))
        size = float(rng.uniform(0.12, 0.22))
        xy = (float(rng.uniform(1.4, 2.4)), float(rng.uniform(-0.8, 0.8)))
        ball = Target((xy[0], xy[1], bottom + size / 2), size=size)
        stand = Support("pedestal", xy, 0.0, bottom, 0.9 * size) if bottom > 0 else None
        own = [stand.mesh()] if stand is not None else []
        occ = CompositeOccluders([scene] + own) if (own or k % 2) else scene
        view = None if k % 3 == 0 else bool(k % 7)
        jobs.append((obs, ball, occ, view, stand))
    for rules in (RULES, LabelRules(n_rays=64), LabelRules(aperture_scale=0.0)):
        fast = aperture_labels(jobs, rules)
        ref = [aperture_label(o, t, occ, rules, visible_in_view=v, support=s) for o, t, occ, v, s in jobs]
        assert all(_same_label(a, b) for a, b in zip(fast, ref, strict=True))
    reasons = {r["vpt_reason"] for r in ref}
    assert reasons == {"visible", "occluded", "partial", "out_of_view"}, reasons
    assert any(s is not None and r["vpt_reason"] == "visible" for (_, _, _, _, s), r in zip(jobs, ref))
    assert aperture_labels([], RULES) == []


def test_disc_points_of_many_eyes_are_each_eyes_points():
    """ClearanceDisc.facing_points_many stacks facing_points of each eye bit for bit, including eyes that see
    less than half the disc above its floor (the per-eye path with a larger spiral)."""
    from scenes.props import Support
    from tasks.labels import ClearanceDisc, _spiral

    ball = Target((2.0, 0.0, 0.6), size=0.2)
    eyes = np.array([[0.0, 0.0, 0.1], [0.3, 0.5, 2.5], [1.9, 0.0, 3.0], [2.0, 0.05, -1.0], [-1.0, -2.0, 0.6]])
    for disc in (ClearanceDisc(ball, 0.5), ClearanceDisc(ball, 0.5, Support("pedestal", (2.0, 0.0), 0.0, 0.5, 0.2), True)):
        for n in (1, 7, 64, 256):
            many = disc.facing_points_many(eyes, n)
            np.testing.assert_array_equal(many, np.concatenate([disc.facing_points(e, n) for e in eyes]))
    # a floor above the centre (not made by the builder, which cuts at or below the ball) keeps less than half
    # of the first spiral from a level eye: the per-eye path with a larger spiral, for that eye only
    cut = ClearanceDisc(ball, 0.5)
    cut.floor = float(ball.center[2]) + 0.05
    level = eyes[[0, 4]]  # (from a steep eye a disc wholly under such a floor has no point to give)
    many = cut.facing_points_many(level, 64)
    np.testing.assert_array_equal(many, np.concatenate([cut.facing_points(e, 64) for e in level]))
    a, b = cut._frame(eyes[0])  # the level eye: its first spiral of 2n points keeps fewer than n
    sq, c, s = _spiral(128)
    kept = ((ball.center + (cut.radius * sq * c)[:, None] * a + (cut.radius * sq * s)[:, None] * b)[:, 2] >= cut.floor).sum()
    assert kept < 64 and many[:64, 2].min() >= cut.floor
    # a disc wholly under its floor (seen from straight above) is a clear error, not an endless search
    with pytest.raises(ValueError, match="above its floor"):
        cut.facing_points(np.array([2.0, 0.0, 3.0]), 64)


def test_observer_rotation_is_a_fresh_array_each_time():
    """Observer.rotation is computed once per angle pair (cached) but handed out as a copy: a caller that
    changes the array it got changes nobody else's."""
    obs = Observer((0.0, 0.0, 0.1), 37.0, -12.0)
    r = obs.rotation
    r[:] = 0.0
    again = Observer((0.0, 0.0, 0.1), 37.0, -12.0).rotation
    assert np.allclose(again @ again.T, np.eye(3)) and again is not obs.rotation
    np.testing.assert_array_equal(obs.forward, again[:, 0])
