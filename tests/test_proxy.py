"""Proxy collision meshes for scenes loaded from .ply: agreement with exact geometry, and caching."""
import os

import numpy as np
import pytest

from scenes.catalogue import build
from scenes.export import export_scene
from scenes.load import load_scene
from tasks.labels import LabelRules, in_view, raycast_visible_fraction, vpt_from_fraction
from tasks.placement import sample_placement


# chairs and benches have no occluded placement under the aperture rule (the lens rim sees under them)
@pytest.mark.parametrize("name", ["car_02", "motorcycle_01"])
def test_proxy_agrees_with_exact_mesh_on_line_of_sight(tmp_path, name):
    path = export_scene(name, tmp_path / f"{name}.ply")
    from_file = load_scene(str(path))
    assert not from_file.meshes
    proxy = from_file.occluders()
    exact = build(name)
    # sampled with rule v3.0's clearance ring (0.25): under v3.1's (0.5) an occluded placement with both props on
    # the ground behind motorcycle_01 is rare enough that one of the 20 draws exhausts its 500 tries; what this
    # test compares is the line of sight through the proxy, not the sampler
    rules = LabelRules(clearance=0.25)
    rng = np.random.default_rng(3)
    same = n = 0
    for i in range(60):
        pl, _ = sample_placement(exact, ("visible", "occluded", "out_of_view")[i % 3], rng, rules=rules)
        view = in_view(pl.observer, pl.target)
        le, _ = vpt_from_fraction(raycast_visible_fraction(pl.observer.eye, pl.target, exact.occluders()), view, rules)
        lp, _ = vpt_from_fraction(raycast_visible_fraction(pl.observer.eye, pl.target, proxy), view, rules)
        if le is not None:
            n += 1
            same += int(lp == le)  # an ambiguous proxy label counts as a disagreement
    print(f"\n{name}: proxy agrees on {same}/{n} line-of-sight labels")
    assert n == 60 and same / n >= 0.95


def test_proxy_is_cached_and_rebuilt_when_stale(tmp_path):
    path = export_scene("plant_01", tmp_path / "p.ply")
    load_scene(str(path)).occluders()
    cache = tmp_path / "p.ply.proxy.ply"
    assert cache.exists() and (tmp_path / "p.ply.proxy.json").exists()
    t0 = cache.stat().st_mtime_ns
    load_scene(str(path)).occluders()
    assert cache.stat().st_mtime_ns == t0, "second load reads the cache"
    os.utime(path, ns=(t0 + 10**9, t0 + 10**9))  # the scene file changed
    load_scene(str(path)).occluders()
    assert cache.stat().st_mtime_ns != t0, "a stale cache is rebuilt"
