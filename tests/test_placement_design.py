"""The matched placement design (issue 10): supports with contact, layout cues shared by the VPT classes,
VPT-Strategy patterns, validation held out by scene."""
import collections
import zlib

import numpy as np
import pytest

from scenes.props import Support, prop_bottom
from tasks.labels import LabelRules
from tasks.placement import (MatchedDesign, PropStyle, draw_candidate, layout_features, make_props,
                             sample_matched_settings, sample_placement, staged_scene, visible_fraction_with)

MM = 1e-3


def _contact_ok(pl):
    """Prop bottom == support top, support bottom on the ground (z = 0), both within 1 mm."""
    for prop, sup in ((pl.observer, pl.observer_support), (pl.target, pl.target_support)):
        if sup is None:
            assert abs(prop_bottom(prop)) <= MM  # resting on the ground
            continue
        lo, hi = sup.mesh().bounds
        assert abs(prop_bottom(prop) - hi[2]) <= MM, (prop, sup)
        assert abs(lo[2] - 0.0) <= MM and abs(sup.bottom) <= MM
        # the prop sits on the support, not beside it
        c = np.asarray(prop.position if hasattr(prop, "yaw_deg") else prop.center)[:2]
        assert np.linalg.norm(c - np.asarray(sup.xy)) <= MM


@pytest.mark.parametrize("shape", ["camera", "arrow"])
def test_supports_have_contact(shape):
    style = PropStyle(observer_shape=shape)
    for kind in ("pedestal", "box"):
        pl = make_props(style, (0, 0), 30.0, (1.0, 0.5), 0.37, 0.81, {"kind_observer": kind, "kind_target": kind})
        assert len(pl.supports) == 2
        _contact_ok(pl)
    ground = make_props(style, (0, 0), 30.0, (1.0, 0.5), 0.0, 0.0, {})
    assert ground.supports == ()
    _contact_ok(ground)


def test_sampled_candidates_stand_on_supports_and_are_labelled_with_them():
    from scenes.load import load_scene

    sc = load_scene("couch_01")
    rng = np.random.default_rng(0)
    counts = collections.Counter()
    cands = [c for _ in range(80) if (c := draw_candidate(sc, rng, PropStyle(), LabelRules(), MatchedDesign(), counts))]
    assert len(cands) > 30
    raised = [c for c in cands if c.placement.supports]
    assert len(raised) > 10 and any(not c.placement.supports for c in cands)
    for c in cands:
        _contact_ok(c.placement)
    # supports are occluders: the staged scene's ray cast equals the candidate's (scene + supports) and the
    # plain reference (one concatenated mesh) — CompositeOccluders is the fast path, concatenation its twin
    import trimesh

    from tasks.labels import aperture_label

    def centre_fraction(pl, occluders):  # as the candidate's: the lens centre to the ball's sight target
        return aperture_label(pl.observer, pl.target, occluders, LabelRules(),
                              support=pl.target_support)["visible_fraction_raycast"]

    for c in raised[:8]:
        st = staged_scene(sc, c.placement)
        f = centre_fraction(c.placement, st.occluders())
        assert f == pytest.approx(c.fraction, abs=1e-9)
        plain = trimesh.util.concatenate([sc.occluders()] + [s.mesh() for s in c.placement.supports])
        ref = centre_fraction(c.placement, plain)
        assert abs(f - ref) <= 2 / 256  # at most a grazing ray or two differ between intersectors
        assert len(st.gaussians) > len(sc.gaussians)
    # and they do block: a wall-like box between the props hides the ball
    pl = make_props(PropStyle(), (3.0, 0.0), 0.0, (4.2, 0.0), 0.0, 0.0, {})
    wall = Support("box", (3.6, 0.0), 0.0, 0.5, 0.4)
    assert visible_fraction_with(pl.observer.eye, pl.target, [sc.occluders()], 64) == 1.0
    assert visible_fraction_with(pl.observer.eye, pl.target, [sc.occluders(), wall.mesh()], 64) == 0.0


def _auc(x, y):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(y, x)


def test_matched_design_removes_the_layout_cues_that_the_legacy_design_has():
    """Per placement, the layout features the legacy design gives away (prop distance, azimuth separation)
    separate the VPT classes far less in the matched design.
    Ray-cast labels only (the render check is the build's), so this runs in seconds. The candidates are drawn
    with rule v3.1's ring (``ring_below=False``), which the thresholds below were set with: on 36 placements
    per design an AUC moves by ~0.1 between draws, so this test compares designs on fixed draws, and the
    default rule's cues are gated on the full build (its shortcut audit, with CIs over placements)."""
    from scenes.load import load_scene

    rules = LabelRules(n_rays=64, ring_below=False)
    feats = {"legacy": ([], []), "matched": ([], [])}
    # legacy puts props on the ground: behind a couch or bench (open under its seat) the lens's lower rim sees
    # the ball, so rule 2.0 has no legacy 'occluded' placement there; a closed-to-the-ground object instead
    for name in ("car_02", "car_01", "hydrant_01"):
        sc = load_scene(name)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        outcomes = ["visible", "occluded"] * 6 + ["visible", "out_of_view"] * 4
        for o in outcomes:
            pl, _ = sample_placement(sc, o, rng, PropStyle(), rules)
            feats["legacy"][0].append(layout_features(sc, pl))
            feats["legacy"][1].append(int(o == "visible"))

        def label_fn(pl, sc=sc):
            from tasks.labels import in_view, vpt_from_fraction

            f = visible_fraction_with(pl.observer.eye, pl.target, [sc.occluders()] + [s.mesh() for s in pl.supports], 64)
            lab, why = vpt_from_fraction(f, in_view(pl.observer, pl.target), rules)
            return {"vpt_label": lab, "vpt_reason": why}

        chosen, _ = sample_matched_settings(sc, outcomes, rng, lambda r: PropStyle(), label_fn, rules,
                                            MatchedDesign(pool=400))  # 6 occluded pairs per scene
        for pl, vpt, _ in chosen:
            feats["matched"][0].append(layout_features(sc, pl))
            feats["matched"][1].append(int(vpt["vpt_label"]))
    worst = {}
    for design, (x, y) in feats.items():
        x, y = np.array(x), np.array(y)
        assert y.mean() == 0.5
        worst[design] = max(abs(_auc(x[:, i], y) - 0.5) for i in (0, 1))
    # prop distance and azimuth separation. Legacy on these closed-to-the-ground scenes: worst AUC 0.16
    # (|0.5 - AUC| = 0.34; 0.14 on the 30-scene legacy build); matched 0.34 (|0.5 - AUC| = 0.16; 0.14 before
    # clear_margin). How close the props' ground line passes the object's centre (feature 4) is no longer
    # matched closely: since clear_margin a visible line keeps clear of the object's outline, so this 3D
    # relation is the line of sight itself (its image proxy, object-between-props, is gated by the build's audit)
    assert worst["legacy"] > 0.3, worst
    assert worst["matched"] < 0.2 and worst["legacy"] > worst["matched"] + 0.1, worst


def test_strategy_patterns_vary_and_are_balanced():
    from tasks.threedpc.build import strategy_pattern

    pats = set()
    for seed in range(30):
        b, k, a = strategy_pattern(10, np.random.default_rng(seed))
        pat = "1" * b + "0" * k + "1" * a
        assert len(pat) == 10 and pat.count("0") == 5 and pat[0] == pat[-1] == "1"
        pats.add(pat)
    assert len(pats) >= 3, pats
    assert strategy_pattern(10, np.random.default_rng(0), varied=False) == (3, 5, 2)  # legacy 1110000011


def test_strategy_clear_steps_keep_a_ball_diameter_from_the_blocked_run():
    from tasks.threedpc.build import strategy_steps

    grid = np.linspace(-1, 1, 121)
    blocked = np.abs(grid) < 0.3
    clear = np.abs(grid) > 0.34  # a partial band either side
    ts = strategy_steps(grid, blocked, clear, 2, 5, 3, clearance=0.2)
    assert ts is not None and len(ts) == 10
    t1, t2 = grid[blocked][0], grid[blocked][-1]
    assert np.all(ts[:2] <= t1 - 0.2 + 1e-12) and np.all(ts[7:] >= t2 + 0.2 - 1e-12)
    assert np.all((ts[2:7] > t1) & (ts[2:7] < t2))
    assert strategy_steps(grid, blocked, clear, 2, 5, 3, clearance=0.9) is None  # no room: refused


def test_validation_is_held_out_by_scene():
    from tasks.threedpc import config_from_dict

    names = [f"{c}_{i:02d}" for c in ("bench", "car", "chair") for i in (1, 2, 3)] + ["plant_01", "plant_03"]
    splits = {}
    for seed in range(6):
        cfg = config_from_dict({"scenes": names, "out": "/tmp/never", "seed": seed})
        val = cfg.val_scenes()
        assert sorted(v.split("_")[0] for v in val) == ["bench", "car", "chair"]  # one per category with 2 train
        assert cfg.split_of("plant_01") == "train"  # a category's only training scene stays in training
        for v in val:
            assert cfg.split_of(v) == "val" and all(cfg.part_of(v, k) == "val" for k in range(10))
        for n in names:
            if cfg.split_of(n) == "train":
                assert all(cfg.part_of(n, k) == "train" for k in range(10))
        splits[seed] = val
    assert len(set(splits.values())) > 1, "the held-out instance is chosen by the seed"
    legacy = config_from_dict({"scenes": names, "out": "/tmp/never", "val_holdout": "setting"})
    assert legacy.split_of("bench_01") == "train" and legacy.part_of("bench_01", 9) == "val"


def test_facing_away_negatives_face_the_viewer_as_their_positives_do():
    """Issue 10 (thin margin): facing-away negatives were turned at random, so their observers faced away from
    the viewer (mean cosine −0.18 against +0.25 for visible ones; build AUC 0.63 against the 0.65 gate). Each is
    now turned to its paired positive's angle with the viewer side; measured here with the design-time twin of
    the audit cue (``faces_viewer_cos``) on matched settings, ray-cast labels only (seconds)."""
    from scenes.load import load_scene
    from tasks.labels import in_view, vpt_from_fraction
    from tasks.placement import faces_viewer_cos

    rules = LabelRules(n_rays=32, aperture_scale=0.0)
    pos, neg = [], []
    for name in ("car_01", "plant_01"):
        sc = load_scene(name)
        lo, hi = sc.object_bounds
        centre = (lo[:2] + hi[:2]) / 2
        rng = np.random.default_rng(zlib.crc32(name.encode()))

        def label_fn(pl, sc=sc):
            f = visible_fraction_with(pl.observer.eye, pl.target, [sc.occluders()] + [s.mesh() for s in pl.supports], 32)
            lab, why = vpt_from_fraction(f, in_view(pl.observer, pl.target), rules)
            return {"vpt_label": lab, "vpt_reason": why}

        chosen, _ = sample_matched_settings(sc, ["visible", "out_of_view"] * 8, rng, lambda r: PropStyle(), label_fn,
                                            rules, MatchedDesign(pool=50))
        for (p, _, _), (n, vn, _) in zip(chosen[0::2], chosen[1::2], strict=True):
            assert vn["vpt_reason"] == "out_of_view" and not in_view(n.observer, n.target)
            pos.append(faces_viewer_cos(p, centre))
            neg.append(faces_viewer_cos(n, centre))
    pos, neg = np.array(pos), np.array(neg)
    matched = np.abs(pos - neg) < 1e-6
    # where the paired angle leaves the target outside the observer's view (most pairs) it is reproduced exactly
    assert matched.mean() > 0.6, matched.mean()
    auc = _auc(np.r_[pos, neg], np.r_[np.ones(len(pos)), np.zeros(len(neg))])
    assert 0.4 < auc < 0.6, auc


def test_triangle_rays_match_trimesh_nearest_hits():
    """TriangleRays (the supports' vectorised ray caster) against its plain reference, trimesh's
    RayMeshIntersector: same rays hit, same nearest points, on a pedestal and a box, rays from all sides."""
    import trimesh

    from tasks.placement import TriangleRays

    pl = make_props(PropStyle(), (0, 0), 30.0, (1.0, 0.5), 0.45, 0.3, {"kind_observer": "pedestal", "kind_target": "box"})
    rng = np.random.default_rng(3)
    for sup in pl.supports:
        m = sup.mesh()
        c = m.bounds.mean(0)
        origins = c + rng.normal(size=(600, 3)) * 0.6
        directions = (c + rng.normal(size=(600, 3)) * 0.08) - origins
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        ref = trimesh.ray.ray_triangle.RayMeshIntersector(m).intersects_location(origins, directions, multiple_hits=False)
        got = TriangleRays(m).intersects_location(origins, directions)
        assert 100 < len(ref[1]) < 600
        np.testing.assert_array_equal(np.sort(got[1]), np.sort(ref[1]))
        a = got[0][np.argsort(got[1])]
        b = ref[0][np.argsort(ref[1])]
        np.testing.assert_allclose(a, b, atol=1e-7)


def test_turned_to_viewer_reproduces_the_positive_cosine_out_of_view():
    """The build turns each facing-away negative to its positive's observer-faces-viewer cosine towards the
    actual viewer (tasks.threedpc.build._face_viewer_as_pair): the cosine is reproduced exactly (audit cue
    definition) and the target stays outside the observer's view."""
    from tasks.labels import in_view
    from tasks.placement import turned_to_viewer, viewer_facing_cos

    rng = np.random.default_rng(5)
    done = 0
    for _ in range(200):
        o, t = rng.uniform(-1.5, 1.5, 2), rng.uniform(-1.5, 1.5, 2)
        if np.linalg.norm(o - t) < 0.5:
            continue
        pl = make_props(PropStyle(), o, 0.0, t, rng.uniform(0, 0.8), 0.0, {})
        viewer = np.r_[rng.uniform(-4, 4, 2) * 1.5, rng.uniform(0.5, 2.5)]
        c = float(rng.uniform(-0.9, 0.9))
        turned = turned_to_viewer(pl, viewer, c, rng, MatchedDesign())
        if turned is None:
            continue
        done += 1
        el = viewer - np.asarray(pl.observer.position)
        reachable = np.linalg.norm(el[:2]) / np.linalg.norm(el)
        assert abs(viewer_facing_cos(turned, viewer) - np.clip(c, -reachable, reachable)) < 1e-9
        assert not in_view(turned.observer, turned.target)
        assert turned.observer.position == pl.observer.position
    assert done > 100


def test_support_mesh_moved_from_the_origin_equals_the_parts_built_in_place():
    """Support.mesh() builds a shape once at the origin and moves it (a VPT-Strategy scan places supports at
    121 positions per attempt); vertices and faces must be bit for bit those of the parts built in place."""
    from scenes.props import SUPPORT_KINDS, Support, support_mesh_reference

    from scenes.props import _pillar_mesh

    rng = np.random.default_rng(3)
    for k in range(400):
        kind = SUPPORT_KINDS[k % 2]
        bottom = float(rng.uniform(-0.2, 0.3))
        s = Support(kind, tuple(rng.uniform(-5, 5, 2)), bottom, bottom + float(rng.uniform(0.05, 1.5)),
                    float(rng.uniform(0.05, 0.6)), yaw_deg=float(rng.uniform(-180, 180)))
        if k % 50 == 7:  # also the sizes near 1 where trimesh's identity shortcut skips a transform
            s = Support(kind, (0.0, 0.0), 0.0, 1.0 + 1e-10, 2.0 + 1e-10)
        fast, ref = s.mesh(), support_mesh_reference(s)
        assert np.asarray(fast.vertices).tobytes() == np.asarray(ref.vertices).tobytes()
        assert np.array_equal(fast.faces, ref.faces)
        if kind != "box":  # the arrays-only pillar (built at xy, not moved there)
            bare = _pillar_mesh(s)
            assert np.asarray(bare.vertices).tobytes() == np.asarray(ref.vertices).tobytes()
            assert np.array_equal(bare.faces, ref.faces)


def test_cross3_is_numpy_cross_bit_for_bit():
    from scenes.props import cross3

    rng = np.random.default_rng(0)
    for _ in range(2000):
        u, v = rng.normal(size=3) * 10.0 ** rng.integers(-6, 6), rng.normal(size=3)
        assert cross3(u, v).tobytes() == np.cross(u, v).tobytes()


def test_clearance_disc_points_equal_the_per_call_spiral():
    """ClearanceDisc.facing_points reads a cached spiral; the points are bit for bit those of the spiral
    computed per call with numpy.cross (the code before the cache)."""
    import math

    from tasks.labels import ClearanceDisc
    from tasks.placement import Target

    def reference(disc, eye, n):
        c = disc.target.center
        view = c - eye
        view = view / np.linalg.norm(view)
        helper = np.array([0, 0, 1.0]) if abs(view[2]) < 0.9 else np.array([1.0, 0, 0])
        a = np.cross(view, helper)
        a /= np.linalg.norm(a)
        b = np.cross(view, a)
        m = 2 * n
        while True:
            k = np.arange(m) + 0.5
            r = disc.radius * np.sqrt(k / m)
            phi = k * math.pi * (3 - math.sqrt(5))
            pts = c + (r * np.cos(phi))[:, None] * a + (r * np.sin(phi))[:, None] * b
            keep = pts[pts[:, 2] >= disc.floor - 1e-9]
            if len(keep) >= n:
                return keep[np.linspace(0, len(keep) - 1, n).round().astype(int)]
            m *= 2

    rng = np.random.default_rng(1)
    for _ in range(50):
        disc = ClearanceDisc(Target(tuple(rng.uniform(-2, 2, 3)), size=float(rng.uniform(0.05, 0.4))),
                             float(rng.uniform(0, 1)))
        eye = rng.uniform(-4, 4, 3)
        eye[2] = rng.choice([rng.uniform(-4, 4), disc.target.center[2] + 5.0])  # incl. views from straight above
        for n in (64, 256):
            assert disc.facing_points(eye, n).tobytes() == reference(disc, eye, n).tobytes()


def test_sample_outcome_gives_each_outcome_from_the_matched_distribution():
    """``sample_outcome`` (render.trajectory's props=sample): a placement of the matched design whose full label —
    ray cast over the aperture and render check, on the scene with its stands — is the outcome asked for."""
    from scenes.load import load_scene
    from tasks.labels import vpt_label
    from tasks.placement import PlacementError, sample_outcome

    sc = load_scene("couch_01")
    want = {"visible": (1, "visible"), "occluded": (0, "occluded"), "out_of_view": (0, "out_of_view")}
    for i, outcome in enumerate(want):
        pl, ev = sample_outcome(sc, outcome, np.random.default_rng(i))
        _contact_ok(pl)
        lab = vpt_label(staged_scene(sc, pl), pl.observer, pl.target, support=pl.target_support)
        assert (lab["vpt_label"], lab["vpt_reason"]) == want[outcome]
        assert ev["in_view"] == (outcome != "out_of_view")
    # an ``accept`` that never holds ends in a PlacementError naming the scene, the outcome and the reasons
    with pytest.raises(PlacementError, match=r"couch_01: no 'visible' placement among 5 candidates .*not_accepted"):
        sample_outcome(sc, "visible", np.random.default_rng(0), accept=lambda pl: False, max_tries=5)
    with pytest.raises(ValueError, match="outcome='seen'"):
        sample_outcome(sc, "seen", np.random.default_rng(0))


def test_footprint_rule_on_a_box():
    """``passes_over_footprint`` on a 1 x 1 x 0.8 m box: a line beside it farther than the margin or higher than
    its top by the margin passes; one threading its outline (beside it within the margin, over it below the top,
    over a corner) does not."""
    import trimesh

    from tasks.placement import object_footprint, passes_over_footprint

    box = trimesh.creation.box((1.0, 1.0, 0.8))
    box.apply_translation((0, 0, 0.4))
    fp = object_footprint(box)
    assert fp.top == pytest.approx(0.8)
    assert fp.signed_distance(np.array([[0.0, 0.0], [0.8, 0.0], [0.5, 0.5]])) == pytest.approx([-0.5, 0.3, 0.0])
    m = 0.2
    assert not passes_over_footprint((-2, 0.75, 0.5), (2, 0.75, 0.5), fp, m)      # 0.25 m beside
    assert passes_over_footprint((-2, 0.65, 0.5), (2, 0.65, 0.5), fp, m)          # 0.15 m beside
    assert not passes_over_footprint((-2, 0.0, 1.05), (2, 0.0, 1.05), fp, m)      # 0.25 m over the top
    assert passes_over_footprint((-2, 0.0, 0.95), (2, 0.0, 0.95), fp, m)          # 0.15 m over the top
    assert passes_over_footprint((-2, 0.0, 0.3), (2, 0.0, 0.3), fp, m)            # through it
    assert passes_over_footprint((0.0, 1.1, 0.3), (1.1, 0.0, 0.3), fp, m)         # 0.07 m past a corner (diagonal)
    assert not passes_over_footprint((-2, 0.0, 0.3), (-0.9, 0.5, 0.3), fp, m)     # ends 0.4 m short of it


def test_blocked_along_tube_on_a_box_a_post_and_a_table():
    """``blocked_along_tube``: a line through the middle of a 1 x 1 x 0.8 m box stays blocked when shifted
    0.2 m any way; one 0.35 m off its centre (0.15 m inside its side) or 0.65 m up (0.15 m under its top) is
    not robustly blocked, one ending 0.1 m short of it not at all; a 4 cm post blocks the centre line only, and a table top
    on legs does not block a line under it."""
    import trimesh

    from tasks.placement import blocked_along_tube

    box = trimesh.creation.box((1.0, 1.0, 0.8))
    box.apply_translation((0, 0, 0.4))
    assert blocked_along_tube((-2, 0, 0.4), (2, 0, 0.4), box, 0.2)
    assert blocked_along_tube((-2, 0.3, 0.4), (2, 0.3, 0.4), box, 0.05)
    assert not blocked_along_tube((-2, 0.35, 0.4), (2, 0.35, 0.4), box, 0.2)
    assert not blocked_along_tube((-2, 0, 0.65), (2, 0, 0.65), box, 0.2)
    assert not blocked_along_tube((-2, 0, 0.4), (-0.6, 0, 0.4), box, 0.0)  # ends 0.1 m short of it
    post = trimesh.creation.cylinder(radius=0.02, height=1.0)
    post.apply_translation((0, 0, 0.5))
    assert blocked_along_tube((-2, 0, 0.5), (2, 0, 0.5), post, 0.0)
    assert not blocked_along_tube((-2, 0, 0.5), (2, 0, 0.5), post, 0.1)
    top = trimesh.creation.box((1.0, 1.0, 0.05))
    top.apply_translation((0, 0, 0.75))
    legs = [trimesh.creation.box((0.05, 0.05, 0.75)) for _ in range(4)]
    for leg, (x, y) in zip(legs, [(-0.45, -0.45), (-0.45, 0.45), (0.45, -0.45), (0.45, 0.45)]):
        leg.apply_translation((x, y, 0.375))
    table = trimesh.util.concatenate([top, *legs])
    assert not blocked_along_tube((-2, 0, 0.3), (2, 0, 0.3), table, 0.1)
    assert blocked_along_tube((-2, 0, 0.76), (2, 0, 0.76), table, 0.0)


def test_clear_margin_scales_with_view_distance_capped_by_object_size():
    """``clear_margin_m``: ``clear_margin`` × the reference orbit radius, capped at ``clear_margin_object`` ×
    the object's radius (half its ground bounding-box diagonal) — the cap binds on small objects (hydrant_02:
    0.35 × 0.52 m < 0.10 × 1.91 m), not on a bench; without it the orbit term alone."""
    from scenes.load import load_scene
    from tasks.placement import clear_margin_m

    d = MatchedDesign()
    for name, capped in (("hydrant_02", True), ("bench_02", False)):
        sc = load_scene(name)
        lo, hi = sc.object_bounds
        by_view = d.clear_margin * sc.trajectory.radius
        by_object = d.clear_margin_object * 0.5 * float(np.linalg.norm(np.asarray(hi[:2]) - lo[:2]))
        assert (by_object < by_view) == capped
        assert clear_margin_m(sc, d) == pytest.approx(min(by_view, by_object))
        assert clear_margin_m(sc, MatchedDesign(clear_margin_object=None)) == pytest.approx(by_view)
        assert clear_margin_m(sc, MatchedDesign(clear_margin=None)) == 0.0


def test_visible_candidates_clear_the_object_outline():
    """The matched design's visible candidates pass clearly beside or over the object (``clear_margin`` × the
    reference orbit radius, at most ``clear_margin_object`` × the object's radius: 0.24 m on chair_01), and the
    rule is what removes the others: the same draws without it (the rule consumes no random numbers) keep
    exactly those it rejected as well."""
    from scenes.load import load_scene
    from tasks.placement import clear_margin_m, object_footprint, passes_over_footprint

    sc = load_scene("chair_01")
    fp = object_footprint(sc.meshes["object"])
    m = clear_margin_m(sc, MatchedDesign())
    assert 0.2 < m < 0.3
    seen, counts = {}, {}
    for margin in (MatchedDesign().clear_margin, None):
        rng, counts[margin] = np.random.default_rng(3), collections.Counter()
        design = MatchedDesign(clear_margin=margin)
        cands = [c for _ in range(200)
                 if (c := draw_candidate(sc, rng, PropStyle(), LabelRules(n_rays=64), design, counts[margin]))]
        vis = [c for c in cands if c.outcome == "visible"]
        seen[margin] = (sum(passes_over_footprint(c.placement.observer.eye, c.placement.target.center, fp, m)
                            for c in vis), len(vis))
    kept, rejected = seen[MatchedDesign().clear_margin], counts[MatchedDesign().clear_margin]["pool_visible_through_outline"]
    assert kept[0] == 0 and kept[1] >= 20 and rejected >= 10, (seen, counts)
    assert seen[None] == (rejected, kept[1] + rejected), (seen, counts)


def test_camera_lens_is_dark_with_a_light_ring():
    """The observer camera's parts ahead of its body (lens barrel and front ring) are not green: a near-black
    barrel and a light ring, so its facing reads at 20 px; the body and hump keep the observer's colour."""
    from scenes.props import GREEN, LENS_COLOR, LENS_LENGTH, LENS_RING_COLOR, Observer

    obs = Observer((0.0, 0.0, 0.0), yaw_deg=0.0, size=0.24)
    m = obs.mesh()
    col = m.visual.vertex_colors[:, :3].astype(float) / 255
    x = m.vertices[:, 0]
    ahead, body = x > 0.3 * obs.size + 1e-6, x < 0.3 * obs.size - 1e-6
    assert ahead.sum() > 50 and body.sum() >= 8  # body and hump boxes: 8 + 8 corners, 4 of them on the front face
    green = np.asarray(GREEN) / max(GREEN)
    # shading scales a colour: compare chromaticity (colour / its max channel) and brightness
    chroma = col / np.maximum(col.max(axis=1, keepdims=True), 1e-6)
    assert np.all(np.abs(chroma[body] - green).max(axis=1) < 0.05)
    dark = col[ahead].max(axis=1) <= max(LENS_COLOR) + 1e-6
    light = np.abs(chroma[ahead] - np.asarray(LENS_RING_COLOR) / max(LENS_RING_COLOR)).max(axis=1) < 0.05
    assert np.all(dark | light) and dark.sum() > 20 and light.sum() > 20
    assert np.allclose(obs.eye, ((0.3 + LENS_LENGTH) * obs.size, 0, 0))  # the eye (line of sight): the lens front
    assert m.vertices[:, 0].max() == pytest.approx(obs.eye[0])


@pytest.mark.parametrize("scene_name", ["couch_01", "hydrant_02"])
def test_batched_candidates_are_the_loops_candidates(scene_name):
    """draw_candidates (a batch of proposals, one batched line-of-sight cast) returns what n calls of
    draw_candidate return: the same placements and evidence, the same rejection counts in the same key order,
    and leaves the random stream where the loop leaves it (what follows a batch is unchanged)."""
    from scenes.load import load_scene
    from tasks.placement import design_footprint, draw_candidates

    sc = load_scene(scene_name)
    design, rules = MatchedDesign(), LabelRules(n_rays=64)
    fp = design_footprint(sc, design)

    def style_fn(rng):  # sizes drawn from the stream too, as the build's style_for does
        return PropStyle(observer_size=0.24 * float(rng.uniform(0.8, 1.6)), target_size=0.15 * float(rng.uniform(0.6, 2.0)))

    r1, r2 = np.random.default_rng(11), np.random.default_rng(11)
    c1, c2 = collections.Counter(), collections.Counter()
    loop = [draw_candidate(sc, r1, style_fn(r1), rules, design, c1, fp) for _ in range(120)]
    batch = draw_candidates(sc, r2, style_fn, 120, rules, design, c2, fp)
    assert list(c1.items()) == list(c2.items())
    assert r1.bit_generator.state == r2.bit_generator.state
    for a, b in zip(loop, batch, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.placement == b.placement and a.outcome == b.outcome and a.fraction == b.fraction
            np.testing.assert_array_equal(a.features, b.features)
    kept = [c.outcome for c in loop if c is not None]
    assert {"visible", "occluded"} <= set(kept) and sum(c is None for c in loop) > 10, c1


def test_collision_check_prefilter_keeps_every_verdict():
    """The object-collision check asks the exact closest-point query only for points near the object's
    bounding box: over props scattered in and around the object (colliding and not) its verdict equals the
    query on every point."""
    import trimesh

    from tasks.placement import geometry_rejection

    from scenes.load import load_scene

    sc = load_scene("bench_01")
    obj = sc.object_mesh()
    lo, hi = obj.bounds
    rng = np.random.default_rng(5)
    verdicts = collections.Counter()
    for _ in range(200):
        o, t = rng.uniform(lo[:2] - 0.6, hi[:2] + 0.6, size=(2, 2))
        yaw = float(np.degrees(np.arctan2(*(t - o)[::-1])))
        pl = make_props(PropStyle(), o, yaw, t, float(rng.uniform(0, 0.8)), float(rng.uniform(0, 0.8)),
                        {"kind_observer": "pedestal", "kind_target": "box"})
        why = geometry_rejection(sc, pl)
        if why in ("pool_props_too_close", "pool_outside_frustum_vertically"):
            continue
        pts, rad = [np.asarray(pl.observer.position, float), pl.target.center], [pl.observer.bounding_radius(),
                                                                                  pl.target.bounding_radius]
        for s in pl.supports:
            for z in (s.bottom + 0.05, (s.bottom + s.top) / 2):
                pts.append(np.array([s.xy[0], s.xy[1], z]))
                rad.append(0.75 * s.width)
        _, dist, _ = trimesh.proximity.closest_point(obj, np.array(pts))
        plain = "pool_collides_with_object" if np.any(dist <= np.array(rad) + 0.03) else None
        assert why == plain
        verdicts[why] += 1
    assert verdicts["pool_collides_with_object"] >= 10 and verdicts[None] >= 10, verdicts
