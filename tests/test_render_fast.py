"""The fast paths of the cpu kernel (issue 19) against their plain twins: parallel chunked binning vs one
global stable sort + appending (exact per-tile lists), and every switch of the kernel (parallel/serial,
row-span culling, depth slabs, one frame per thread) against the plain setting, bit for bit."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from render import _cpu, splat, splat_frames
from render.splat import FRAME_PARALLEL_MAX_PIXELS, frame_parallel
from scenes.camera import Camera
from tests.conftest import random_scene

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _all_numba_threads():
    """Every numba thread (NUMBA_NUM_THREADS) for these tests, as outside pytest-xdist: the xdist workers run
    kernels on one thread (tests/conftest.py: pytest_configure), but the parallel kernels and the one-frame-per-
    thread mode are checked here with real threads (splat_frames falls back to tiles on one thread)."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    yield
    numba.set_num_threads(before)


def _cams():
    return [Camera(72, 40, 45.0, 47.0, 30.0, 22.5).looking_at([0.5, -3.0, 0.8], [0, 0, 0]),
            Camera.from_fov(50, 35, 80.0).looking_at([0.2, -1.2, 0.1], [0, 0, 0]),  # Gaussians around the camera
            Camera.from_fov(64, 64, 60.0).looking_at([0, -3.5, 0.5], [0, 0, 0])]


@pytest.mark.parametrize("n_chunks", [1, 3, 16])
def test_parallel_binning_equals_global_sort_binning(n_chunks):
    scene = random_scene(2500, degree=1, seed=5)
    for cam in _cams():
        rec, radii = _cpu.project(scene, cam)
        order, tile_start, ids = _cpu.bin_tiles(rec, radii, cam.width, cam.height, True, n_chunks)
        ref_start, ref_ids = _cpu.bin_reference(rec, radii, cam.width, cam.height)
        assert len(ref_ids) > 1000  # many overlaps, many tiles per Gaussian
        assert np.array_equal(tile_start, ref_start)
        assert np.array_equal(order[ids], ref_ids)
        # serial twin gives the same lists
        o2, s2, i2 = _cpu.bin_tiles(rec, radii, cam.width, cam.height, False, n_chunks)
        assert np.array_equal(s2, ref_start) and np.array_equal(o2[i2], ref_ids)


def test_depth_ties_keep_input_order():
    scene = random_scene(400, degree=0, seed=2)
    scene.means[:, 1] = 0.0  # a plane facing the camera: many equal depths
    cam = Camera.from_fov(48, 48, 60.0).looking_at([0, -3.0, 0.0], [0, 0, 0])
    rec, radii = _cpu.project(scene, cam)
    rec[:, 9] = np.round(rec[:, 9], 1)  # force exact ties
    order, tile_start, ids = _cpu.bin_tiles(rec, radii, 48, 48)
    ref_start, ref_ids = _cpu.bin_reference(rec, radii, 48, 48)
    assert np.array_equal(tile_start, ref_start) and np.array_equal(order[ids], ref_ids)


@pytest.mark.parametrize("with_limit", [False, True])
def test_kernel_switches_are_bit_identical(monkeypatch, with_limit):
    monkeypatch.setattr(_cpu, "SLAB_MIN", 64)  # so the 3000 Gaussians are split into depth slabs
    scene = random_scene(3000, degree=3, seed=1)
    rng = np.random.default_rng(0)
    for cam in _cams():
        bg = rng.uniform(0, 1, (cam.height, cam.width, 3)).astype(np.float32)
        limit = rng.uniform(2.5, 4.5, (cam.height, cam.width)).astype(np.float32) if with_limit else None
        plain = _cpu.render_cpu(scene, cam, bg, limit, parallel=True, cull=False, slabs=False)
        assert plain[1].mean() > 0.2
        for parallel in (True, False):
            for cull in (True, False):
                for slabs in (True, False):
                    out = _cpu.render_cpu(scene, cam, bg, limit, parallel=parallel, cull=cull, slabs=slabs)
                    for a, b in zip(out, plain):
                        assert np.array_equal(a, b), (parallel, cull, slabs)



def test_row_span_holds_every_pixel_the_alpha_test_keeps():
    """The compositing's row span (per-Gaussian coefficients, no division per row) against the plain rule:
    on every row of every kept Gaussian's box, each pixel centre whose float32 α reaches 1/255 lies inside
    the span (thin, flat, huge and tiny Gaussians of a real projection, sub-pixel centres)."""
    scene = random_scene(1500, degree=0, seed=7)
    scene.log_scales[::3, 0] -= 4.0  # edge-on flat Gaussians: near-singular 2D covariances
    scene.log_scales[1::7] += 1.5
    cam = Camera(80, 60, 70.0, 71.0, 40.3, 29.7).looking_at([0.3, -2.5, 0.6], [0, 0, 0])
    rec, radii = _cpu.project(scene, cam)
    kept = np.flatnonzero(radii[:, 0] > 0)
    assert len(kept) > 1000
    n_kept_px = n_span_px = 0
    for g in kept:
        u, v, ca, cb, cc, op, cut, detq = rec[g, [0, 1, 2, 3, 4, 5, 10, 11]]
        cba, w2, q = _cpu._span_coefficients(ca, cb, cut, detq)
        j0, j1 = _cpu._pixel_range(u, float(radii[g, 0]), cam.width)
        i0, i1 = _cpu._pixel_range(v, float(radii[g, 1]), cam.height)
        for i in range(i0, i1 + 1):
            dy = v - (i + 0.5)
            ja, jb = _cpu._row_span(u - 0.5, dy, cba, w2, q, j0, j1)
            dx = u - (np.arange(j0, j1 + 1) + 0.5)
            sigma = 0.5 * (ca * dx * dx + cc * dy * dy) + cb * dx * dy
            alpha = np.minimum(_cpu.ALPHA_MAX, op * np.exp(-sigma)).astype(np.float32)
            keep = np.arange(j0, j1 + 1)[(sigma >= 0) & (alpha >= _cpu.ALPHA_MIN)]
            n_kept_px += len(keep)
            n_span_px += max(0, jb - ja + 1)
            assert np.all((keep >= ja) & (keep <= jb)), (g, i, keep, ja, jb)
    assert n_kept_px > 10_000 and n_span_px < 1.02 * n_kept_px  # tight: the spans hold almost only kept pixels

def test_slabs_stop_binning_behind_opaque_tiles(monkeypatch):
    monkeypatch.setattr(_cpu, "SLAB_MIN", 64)
    scene = random_scene(4000, degree=0, seed=3, spread=0.3)
    scene.opacity_logits[:] = 8.0  # opaque
    scene.log_scales[:] = np.log(0.08)
    cam = Camera.from_fov(64, 64, 8.0).looking_at([0, -3.0, 0.0], [0, 0, 0])  # the cloud fills the view
    binned = []
    real = _cpu.bin_range

    def spy(*a, **k):
        tile_start, ids = real(*a, **k)
        binned.append(len(ids))
        return tile_start, ids

    monkeypatch.setattr(_cpu, "bin_range", spy)
    bg = np.zeros((64, 64, 3), np.float32)
    sliced = _cpu.render_cpu(scene, cam, bg)
    with_slabs = sum(binned)
    binned.clear()
    whole = _cpu.render_cpu(scene, cam, bg, slabs=False)
    assert (sliced[1] > 0.99).mean() > 0.95  # opaque
    assert with_slabs < 0.5 * sum(binned)  # fewer than half the tile overlaps were binned
    assert all(np.array_equal(a, b) for a, b in zip(sliced, whole))


def test_frame_parallel_is_identical_to_tile_parallel():
    scene = random_scene(2000, degree=2, seed=4)
    cams = [Camera.from_fov(40, 30, 60.0).looking_at([3 * np.cos(a), 3 * np.sin(a), 0.5], [0, 0, 0])
            for a in np.linspace(0, 6, 7)]
    by_frames = list(splat_frames(scene, cams, background=(0.2, 0.3, 0.4), backend="cpu", mode="frames"))
    by_tiles = list(splat_frames(scene, cams, background=(0.2, 0.3, 0.4), backend="cpu", mode="tiles"))
    single = [splat(scene, c, background=(0.2, 0.3, 0.4), backend="cpu") for c in cams]
    assert len(by_frames) == len(cams)
    for a, b, c in zip(by_frames, by_tiles, single):
        for f in ("rgb", "alpha", "depth", "median_depth"):
            assert np.array_equal(getattr(a, f), getattr(b, f)) and np.array_equal(getattr(a, f), getattr(c, f))


def test_frame_parallel_choice():
    assert frame_parallel(50, 256, 256, 2)
    assert not frame_parallel(3, 256, 256, 2)  # too few frames to keep both threads busy
    assert not frame_parallel(50, 1024, 1024, 2)  # big frames: enough tiles per frame
    assert not frame_parallel(50, 256, 256, 1)
    assert FRAME_PARALLEL_MAX_PIXELS >= 256 * 256
    with pytest.raises(ValueError, match="mode="):
        list(splat_frames(random_scene(10), [Camera.from_fov(8, 8, 60.0)], mode="fast"))


def test_trained_like_scene_statistics():
    spec = importlib.util.spec_from_file_location("trained_scenes", ROOT / "benchmarks" / "trained_scenes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g = mod.trained_like(40_000, seed=1)
    st = mod.scene_statistics(g)
    assert len(g) == 40_000 and g.sh.shape[1] == 16 and np.abs(g.sh[:, 9:]).mean() > 0.01
    assert abs(st["opacity_median"] - 0.65) < 0.07 and 0.09 < st["opacity_below_0.1"] < 0.15
    assert 0.05 < st["opacity_p10"] < 0.09 and 0.96 < st["opacity_p90"] < 0.99
    assert 0.011 < st["size_median"] < 0.016 and 0.04 < st["size_p90"] < 0.056 and 0.07 < st["size_p99"] < 0.11
    assert 13 < st["aniso_median"] < 19 and 42 < st["aniso_p90"] < 56


def test_radix_depth_order_equals_the_stable_argsort():
    """The compiled radix depth sort against numpy's stable argsort (the plain twin): random depths, many exact
    ties (rounded depths, equal high digits), culled Gaussians, a real projection; NaN falls back. The radix
    passes cover the high bits only, so keys equal there and different below (runs ordered afterwards, by
    insertion or merge sort) are drawn too: short runs, runs of thousands, ties inside them."""
    rng = np.random.default_rng(0)
    for trial in range(24):
        n = int(rng.integers(2, 120000))
        rec = np.zeros((n, _cpu.REC))
        radii = rng.integers(0, 3, (n, 2)).astype(np.int32)
        z = rng.uniform(0.01, 50, n)
        z = [z, np.round(z, 1), np.round(z * 1000) / 1000 + 1.0, np.full(n, 2.5),
             np.exp(rng.uniform(-4.0, 14.0, n)),  # every digit of the bit patterns varies
             5.0 + rng.uniform(0, 1e-9, n),  # one run of equal high bits, all low bits different
             5.0 + rng.integers(0, 40, n) * 1e-12,  # one run, many exact ties within it
             np.round(rng.uniform(1, 2, n), 4) + rng.integers(0, 3, n) * 1e-13,  # many short runs with ties
             ][trial % 8]
        rec[:, 9] = z
        np.testing.assert_array_equal(_cpu.depth_order(rec, radii), _cpu.depth_order(rec, radii, radix=False))
    rec[0, 9], radii[0] = np.nan, (1, 1)
    np.testing.assert_array_equal(_cpu.depth_order(rec, radii), _cpu.depth_order(rec, radii, radix=False))
    scene = random_scene(3000, degree=0, seed=3)
    for cam in _cams():
        rec, radii = _cpu.project(scene, cam)
        np.testing.assert_array_equal(_cpu.depth_order(rec, radii), _cpu.depth_order(rec, radii, radix=False))


def _assert_cached_equals_plain(scene, cams, parallel=True):
    """Records and images with the activation cache equal the plain projection's bit for bit."""
    rng = np.random.default_rng(3)
    if _cpu.cached_activation(scene, parallel) is None:  # first sighting: only remembered
        assert _cpu.cached_activation(scene, parallel) is not None
    for cam in cams:
        rec0, radii0 = _cpu.project(scene, cam, parallel=parallel, cache=False)
        rec1, radii1 = _cpu.project(scene, cam, parallel=parallel, cache=True)
        kept = (radii0 != 0).any(1)
        assert kept.sum() > 0.1 * len(scene)
        assert np.array_equal(radii0, radii1)
        assert np.array_equal(rec0[kept].view(np.int64), rec1[kept].view(np.int64))  # bits, signed zeros too
        bg = rng.uniform(0, 1, (cam.height, cam.width, 3)).astype(np.float32)
        plain = _cpu.render_cpu(scene, cam, bg, parallel=parallel, cache=False)
        cached = _cpu.render_cpu(scene, cam, bg, parallel=parallel, cache=True)
        assert plain[1].mean() > 0.05
        for a, b in zip(plain, cached):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("parallel", [True, False])
def test_cached_activation_is_bit_identical_random_sh3(parallel):
    scene = random_scene(3000, degree=3, seed=7)
    scene.log_scales[:50] = 12.0  # huge Gaussians (clamped radii) and a few below the opacity cull
    scene.opacity_logits[50:100] = -8.0
    _assert_cached_equals_plain(scene, _cams(), parallel)
    assert _cpu._act_key(scene) in _cpu._ACT_CACHE


def test_cached_activation_is_bit_identical_catalogue_scene():
    from scenes.load import load_scene

    scene = load_scene("couch_02", seed=0).gaussians.in_world()
    c = scene.means.mean(0)
    cams = [Camera.from_fov(96, 80, 60.0).looking_at(c + np.array(off), c) for off in
            ([0.0, -2.5, 0.8], [1.8, 1.2, 0.6], [0.1, -0.6, 0.2])]
    _assert_cached_equals_plain(scene, cams)


def test_cached_activation_follows_in_place_changes():
    """The cache is keyed on the arrays' identity but checks their contents per Gaussian: changing the
    scene in place between frames changes the image exactly as the plain projection does."""
    scene = random_scene(2000, degree=1, seed=4)
    cam = _cams()[0]
    _cpu.project(scene, cam)  # fills the cache
    act_before = _cpu.cached_activation(scene)[0]
    scene.opacity_logits[::3] = -scene.opacity_logits[::3]
    scene.quats[::5] = scene.quats[::5, [1, 0, 3, 2]]
    scene.log_scales[::7] -= 0.5
    scene.log_scales[1] = -0.0  # same value, other bits: still recomputed
    rec0, radii0 = _cpu.project(scene, cam, cache=False)
    rec1, radii1 = _cpu.project(scene, cam)
    kept = (radii0 != 0).any(1)
    assert np.array_equal(radii0, radii1) and np.array_equal(rec0[kept].view(np.int64), rec1[kept].view(np.int64))
    act_after = _cpu.cached_activation(scene)[0]
    assert act_after is not act_before  # rebuilt after the misses
    assert np.array_equal(act_after, _cpu.activate(scene)[0])
    # a new scene whose arrays reuse freed memory addresses never reads a dead entry
    del scene
    assert all(e[0][0]() is not None for e in _cpu._ACT_CACHE.values())


def test_activation_cache_is_made_on_the_second_sighting():
    """A Gaussian set projected once (e.g. one made per frame) gets no cache; the second projection makes it."""
    scene = random_scene(500, degree=0, seed=9)
    cam = _cams()[2]
    rec0, radii0 = _cpu.project(scene, cam, cache=False)
    for i in range(3):
        rec, radii = _cpu.project(scene, cam)
        entry = _cpu._ACT_CACHE[_cpu._act_key(scene)]
        assert (entry[1] is None) == (i == 0)
        kept = (radii0 != 0).any(1)
        assert np.array_equal(radii, radii0) and np.array_equal(rec[kept].view(np.int64), rec0[kept].view(np.int64))
    assert np.array_equal(entry[1], _cpu.activate(scene)[0])


def test_thread_count_does_not_change_a_frame():
    """A 3D-PC build worker renders with one numba thread, and with all of them when its scene is the last
    one running (``tasks.threedpc.build.use_idle_cores``): the images must not depend on it."""
    import numba

    from scenes.load import load_scene

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    scene = load_scene("couch_02", seed=0).gaussians.in_world()
    c = scene.means.mean(0)
    rng = np.random.default_rng(3)
    before = numba.get_num_threads()
    try:
        for off in ([0.0, -2.5, 0.8], [1.8, 1.2, 0.6]):
            cam = Camera.from_fov(256, 256, 40.0).looking_at(c + np.array(off), c)
            bg = rng.uniform(0, 1, (256, 256, 3)).astype(np.float32)
            limit = np.full((256, 256), np.inf, np.float32)
            limit[100:160, 90:150] = 1.5
            outs = []
            for threads in (1, numba.config.NUMBA_NUM_THREADS):
                numba.set_num_threads(threads)
                outs.append(_cpu.render_cpu(scene, cam, bg, limit, parallel=True))
            assert outs[0][1].mean() > 0.2
            for a, b in zip(*outs):
                assert np.array_equal(a, b)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("parallel", [True, False])
def test_early_frustum_cull_is_bit_identical(monkeypatch, parallel):
    """``EARLY_CULL`` (a widened box tested before the covariance) against the plain order of operations:
    the same records and radii for every Gaussian, on random scenes (Gaussians around and behind the camera,
    large and flat ones) and on a catalogue scene seen through zoomed-in 3D-PC-like cameras, where many
    Gaussians lie just outside the image; and the same images."""
    from scenes.load import load_scene

    couch = load_scene("couch_02", seed=0).gaussians.in_world()
    c = couch.means.mean(0)
    cases = [(random_scene(4000, degree=3, seed=s), _cams()) for s in (1, 7)]
    zoomed = []
    for off, zoom in (([0.0, -2.5, 0.8], 1.0), ([1.8, 1.2, 0.6], 2.5), ([0.1, -0.6, 0.2], 1.6), ([-3.0, 0.5, 1.5], 3.0)):
        cam = Camera.from_fov(256, 256, 60.0).looking_at(c + np.array(off), c + np.array([0.3, 0.0, 0.0]))
        zoomed.append(Camera(cam.width, cam.height, cam.fx * zoom, cam.fy * zoom, cam.cx, cam.cy, cam.w2c))
    cases.append((couch, zoomed))
    culled = 0
    for scene, cams in cases:
        for cam in cams:
            outs = {}
            for early in (False, True):
                monkeypatch.setattr(_cpu, "EARLY_CULL", early)
                rec, radii = _cpu.project(scene, cam, parallel=parallel, cache=False)
                rec2, radii2 = _cpu.project(scene, cam, parallel=parallel, cache=True)
                assert np.array_equal(rec, rec2) and np.array_equal(radii, radii2)
                outs[early] = (rec, radii, _cpu.render_cpu(scene, cam, np.zeros((cam.height, cam.width, 3), np.float32),
                                                           parallel=parallel))
            assert np.array_equal(outs[True][0], outs[False][0])
            assert np.array_equal(outs[True][1], outs[False][1])
            for a, b in zip(outs[True][2], outs[False][2]):
                assert np.array_equal(a, b)
            kept = (outs[False][1] > 0).any(1)
            culled += int((~kept).sum())
    assert culled > 100_000  # the zoomed views leave most of the scene outside


def test_compositing_exp_against_libm():
    """``_exp_neg`` (the vectorisable exp(−σ) of the compositing step) against its plain twin ``math.exp``:
    within 4 float64 ulp over [0, SIGMA_MAX] (random σ, the ends and the range reduction's n·ln 2 /2 boundaries),
    and the float32 α it gives equal to the libm one on (practically) every pixel; ``_alpha`` is 0 for σ < 0
    or NaN and clamps σ beyond SIGMA_MAX only where α < 1/255 either way."""
    import math

    import numba

    @numba.njit
    def many(s, op):
        e = np.empty_like(s)
        a = np.empty(s.shape, np.float32)
        for k in range(s.shape[0]):
            e[k] = _cpu._exp_neg(min(s[k], _cpu.SIGMA_MAX))
            a[k] = _cpu._alpha(op[k], s[k])
        return e, a

    rng = np.random.default_rng(11)
    half = np.arange(0, 45) * math.log(2.0) + 0.5 * math.log(2.0)
    s = np.concatenate([rng.uniform(0, 6, 400_000), rng.uniform(0, _cpu.SIGMA_MAX, 100_000), [0.0, 1e-300, 5e-324,
                        _cpu.SIGMA_MAX], half[half <= _cpu.SIGMA_MAX], np.nextafter(half, 0)[half <= _cpu.SIGMA_MAX]])
    op = rng.uniform(0.0, 1.0, s.size)
    e, a = many(s, op)
    ref = np.array([math.exp(-x) for x in s])
    assert np.all(np.abs(e - ref) <= 4 * np.spacing(ref)), np.max(np.abs(e - ref) / np.spacing(ref))
    ref_a = np.minimum(_cpu.ALPHA_MAX, op * ref).astype(np.float32)
    assert np.sum(a != ref_a) <= 2  # a float32 rounding boundary within 4 float64 ulp: ~1e-8 per value
    e2, a2 = many(np.array([-1e-9, -3.0, np.nan, 31.0, 1e3, np.inf]), np.ones(6))
    assert np.all(a2[:3] == 0) and np.all(a2[3:] < _cpu.ALPHA_MIN)
