"""The compiled support ray caster (tasks/raycast.py) against its numpy twin: bit-identical hits."""
import numpy as np
import pytest

from tasks.placement import CompositeOccluders, PropStyle, TriangleRays, make_props


@pytest.mark.parametrize("kinds", [("pedestal", "box"), ("box", "pedestal")])
def test_compiled_triangle_rays_equal_the_numpy_twin_bit_for_bit(kinds):
    """Same rays hit, same nearest t (so the same locations, to the last bit) and the same triangle, on both
    support kinds, rays from near and far (the labels hang on ``hit < dist - 1e-4`` ray by ray)."""
    pl = make_props(PropStyle(), (0, 0), 30.0, (1.0, 0.5), 0.45, 0.3,
                    {"kind_observer": kinds[0], "kind_target": kinds[1]})
    rng = np.random.default_rng(7)
    for sup in pl.supports:
        m = sup.mesh()
        tr = TriangleRays(m)
        c = m.bounds.mean(0)
        for spread in (0.2, 0.6, 2.0):
            origins = c + rng.normal(size=(1500, 3)) * spread
            directions = (c + rng.normal(size=(1500, 3)) * 0.1) - origins
            directions /= np.linalg.norm(directions, axis=1, keepdims=True)
            got = tr.intersects_location(origins, directions)
            ref = tr.intersects_location_reference(origins, directions)
            assert 100 < len(ref[1]) < 1500
            for a, b in zip(got, ref, strict=True):
                np.testing.assert_array_equal(a, b)


def test_composite_occluders_give_the_same_fractions_with_either_support_caster(monkeypatch):
    """Visible fractions from the aperture through CompositeOccluders (scene mesh + supports) are equal with
    the compiled and the numpy support caster."""
    from scenes.load import load_scene
    from tasks.labels import LabelRules, aperture_fractions

    scene = load_scene("hydrant_01")
    rules = LabelRules()
    rng = np.random.default_rng(1)
    lo, hi = scene.object_bounds
    c = (lo[:2] + hi[:2]) / 2
    res = {}
    for name in ("compiled", "reference"):
        if name == "reference":
            monkeypatch.setattr(TriangleRays, "intersects_location", TriangleRays.intersects_location_reference)
        rng = np.random.default_rng(1)
        out = []
        for _ in range(6):
            a = rng.uniform(0, 2 * np.pi)
            o_xy = c + 0.9 * np.array([np.cos(a), np.sin(a)])
            t_xy = c + rng.uniform(0.3, 1.2) * np.array([np.cos(a + 2.5), np.sin(a + 2.5)])
            yaw = np.degrees(np.arctan2(*(t_xy - o_xy)[::-1]))
            pl = make_props(PropStyle(), o_xy, yaw, t_xy, rng.uniform(0.1, 0.8), rng.uniform(0.1, 0.8),
                            {"kind_observer": "pedestal", "kind_target": "box"})
            occ = CompositeOccluders([scene.occluders()] + [s.mesh() for s in pl.supports])
            out.append(aperture_fractions(pl.observer, pl.target, occ, rules, support=pl.target_support))
        res[name] = np.array(out)
    np.testing.assert_array_equal(res["compiled"], res["reference"])
