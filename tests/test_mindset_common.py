"""The shared MindSet module: drawing primitives against plain references, backgrounds, naming, and the one
annotation schema checked on every registered MindSet dataset (the illusion and shape groups included)."""
import json
import platform
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tasks.stimuli  # noqa: F401  (registers every generator)
from tasks.stimuli import ConfigError, write_dataset
from tasks.stimuli.mindset import MINDSET
from tasks.stimuli.mindset import common as C


def _reference_coverage(shape, size, k):
    """Plain twin of ``coverage``: every sub-sample of the whole image as one flat list of points (so
    ``inside`` takes its point-by-point path, and a union every part over every point), then averaged."""
    i, j, a, b = np.meshgrid(np.arange(size), np.arange(size), np.arange(k), np.arange(k), indexing="ij")
    x = (j + (b + 0.5) / k).ravel()
    y = (i + (a + 0.5) / k).ravel()
    inside = np.asarray(shape.inside(x, y), bool).reshape(size, size, k * k)
    return inside.mean(-1)


def _full(shape, size, antialias=True):
    img = np.zeros((size, size))
    cov, (r0, c0) = C.coverage(shape, size, antialias)
    img[r0:r0 + cov.shape[0], c0:c0 + cov.shape[1]] = cov
    return img


@pytest.mark.parametrize("shape", [
    C.disc(10.3, 12.7, 6.2),
    C.ring(16, 15, 9.5, 2.5),
    C.segment((3.2, 4.1), (27.5, 20.3), 3.0, "butt"),
    C.segment((5, 25), (26, 9), 2.0, "round"),
    C.polygon(C.regular_polygon(15, 16, 12, 5, 10)),
    C.difference(C.rect(4, 4, 26, 26), C.disc(26, 26, 9)),
    C.union(C.disc(8, 8, 5), C.translate(C.rect(0, 0, 8, 3), 15, 20)),
    C.polyline([(2, 2), (20, 5), (12, 28)], 2.5),
    C.disc(-3, 15, 8),  # partly outside the canvas: clipped, not wrapped
    C.polygon([(3, 3), (28, 9), (6, 27), (26, 26), (15, 2)]),  # self-intersecting: even-odd
    C.polygon(np.stack([16 + 12 * np.cos(np.linspace(0, 6.283, 200, endpoint=False)),
                        16 + 12 * np.sin(np.linspace(0, 6.283, 200, endpoint=False))], 1)),  # many edges
])
def test_coverage_equals_plain_reference(shape):
    """``coverage`` (grid: part boxes, polygon scanlines) against sampling ``inside`` one point at a time."""
    np.testing.assert_allclose(_full(shape, 32), _reference_coverage(shape, 32, C.SUPERSAMPLE), atol=1e-6)
    np.testing.assert_allclose(_full(shape, 32, antialias=False), _reference_coverage(shape, 32, 1), atol=1e-6)


def test_areas_are_the_geometry():
    # a disc's area and an axis-aligned butt segment's area, measured in pixels of coverage
    assert _full(C.disc(50.2, 49.7, 20.0), 100).sum() == pytest.approx(np.pi * 400, rel=0.005)
    assert _full(C.segment((10.5, 40.25), (47.5, 40.25), 2.0), 100).sum() == pytest.approx(37 * 2, abs=1e-4)
    sq = C.polygon([(10, 10), (40, 10), (40, 30), (10, 30)])
    assert _full(sq, 64).sum() == pytest.approx(600, abs=1e-4)
    assert set(np.unique(_full(C.disc(30, 30, 11.3), 64, antialias=False))) == {0.0, 1.0}
    assert len(np.unique(_full(C.disc(30, 30, 11.3), 64))) > 5  # grey edge levels


def test_paint_composites_and_rounds_exactly():
    img = C.new_canvas(16, (10, 20, 30))
    C.paint(img, C.rect(0, 0, 8, 16), (200, 100, 0))
    u = C.to_uint8(img)
    assert (u[:, :8] == (200, 100, 0)).all() and (u[:, 9:] == (10, 20, 30)).all()
    img = C.new_canvas((8, 12), 0)
    C.paint(img, C.rect(0, 0, 12, 8), (255, 255, 255), opacity=0.5)
    assert (C.to_uint8(img) == 128).all() and img.shape == (8, 12, 3)


def test_text_coverage_uses_bundled_dejavu():
    cov = C.text_coverage("Hg", 40)
    assert cov.max() == pytest.approx(1.0) and 25 < cov.shape[0] < 50  # ascender to descender of 40 px type
    rot = C.text_coverage("Hg", 40, rotation_deg=90)
    assert abs(rot.shape[0] - cov.shape[1]) <= 3 and abs(rot.shape[1] - cov.shape[0]) <= 3
    assert set(np.unique(C.text_coverage("Hg", 40, antialias=False))) == {0.0, 1.0}
    with pytest.raises(ValueError, match="font 'Arial' not found.*DejaVuSans"):
        C.font_path("Arial")


def test_item_rng_is_keyed_and_stable():
    a = C.item_rng(3, "proximity", 7).random(4)
    assert np.array_equal(a, C.item_rng(3, "proximity", 7).random(4))
    assert not np.array_equal(a, C.item_rng(3, "proximity", 8).random(4))
    assert not np.array_equal(a, C.item_rng(4, "proximity", 7).random(4))


def test_names_and_registration_rules():
    assert C.dataset_name("weber_law") == "mindset/weber_law"
    with pytest.raises(ValueError, match="lower-case"):
        C.dataset_name("Weber Law")
    for name, info in MINDSET.items():
        gen = tasks.stimuli.GENERATORS[name]
        assert name.startswith("mindset/") and {"paper", "lite"} <= set(gen.presets)
        assert info["reference"] and info["reference"] in gen.description


def test_background_modes_and_bad_colours(tmp_path):
    out = write_dataset("mindset/weber_law", tmp_path / "w", {"preset": "lite", "background": "random_uniform"},
                        seed=2, progress=False)
    df = pd.read_parquet(out / "annotations.parquet")
    assert str(df.background_r.dtype) == "int64"
    assert df[["background_r", "background_g", "background_b"]].drop_duplicates().shape[0] == len(df)
    for r in df.itertuples():
        px = C.read_png(out / r.file_name)[0, 0]
        assert tuple(px) == (r.background_r, r.background_g, r.background_b)
    for bad, msg in (([0, 0], r"background_color=\(0, 0\): must be three whole numbers"),
                     ([0, 0, 300], r"background_color=\(0, 0, 300\): 300 is out of range \[0, 255\]"),
                     ("grey", r"background_color='grey': must be three whole numbers")):
        with pytest.raises(ConfigError, match=msg):
            write_dataset("mindset/weber_law", tmp_path / "x", {"background_color": bad}, progress=False)
    with pytest.raises(ConfigError, match="background='noise' is not allowed; allowed values: fixed, random_uniform"):
        write_dataset("mindset/weber_law", tmp_path / "x", {"background": "noise"}, progress=False)
    assert not (tmp_path / "x").exists()  # nothing written before the check


def test_schema_check_finds_broken_outputs(tmp_path):
    out = write_dataset("mindset/weber_law", tmp_path / "w", {"preset": "lite"}, progress=False)
    assert C.schema_problems(out) == []
    df = pd.read_parquet(out / "annotations.parquet")
    (out / df.file_name.iloc[0]).unlink()
    (out / "grey_050" / "stray.png").write_bytes(b"")
    problems = C.schema_problems(out)
    assert any("file missing" in p for p in problems) and any("stray.png: no row" in p for p in problems)
    df["note"] = "(0, 0, 0)"
    df.to_parquet(out / "annotations.parquet")
    assert any("Python reprs" in p for p in C.schema_problems(out))


# ------------------------------------------------------------------ every MindSet dataset, present and future
@pytest.mark.parametrize("name", sorted(MINDSET))
def test_every_mindset_dataset_follows_the_schema(name, tmp_path):
    """lite preset: every row a file, every file a row, typed columns, declared conditions, 224 px RGB, a
    paper reference; byte-identical for one seed; an unknown key fails before anything is written."""
    a = write_dataset(name, tmp_path / "a", {"preset": "lite"}, seed=5, progress=False)
    assert C.schema_problems(a) == []
    df = pd.read_parquet(a / "annotations.parquet")
    assert len(df) > 0 and (df.skipped == "").all()
    img = C.read_png(a / df.file_name.iloc[0])
    assert img.shape == (224, 224, 3)
    b = write_dataset(name, tmp_path / "b", {"preset": "lite"}, seed=5, workers=2, shard_size=7, progress=False)
    sha = [json.loads((x / "manifest.json").read_text())["sha256"] for x in (a, b)]
    assert sha[0] == sha[1]
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['not_a_field'\]"):
        write_dataset(name, tmp_path / "c", {"not_a_field": 1}, progress=False)
    assert not (tmp_path / "c").exists()


def test_cli_lists_and_generates_mindset(tmp_path, python_m):
    """``python -m tasks.generate``: the listing and the refusal forked from a warm server (tests/conftest.py:
    python_m), the generation in a new interpreter."""
    r = python_m("tasks.generate", "--list", timeout=120)
    assert r.returncode == 0
    for name in MINDSET:
        assert f"{name}: " in r.stdout
    r = subprocess.run([sys.executable, "-m", "tasks.generate", "dataset=mindset/weber_law", f"out={tmp_path / 'w'}",
                        "preset=lite", "progress=false"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = python_m("tasks.generate", "dataset=mindset/weber_law", f"out={tmp_path / 'x'}", "canvas_size=5000", timeout=120)
    assert r.returncode == 2 and "canvas_size=5000 is out of range [32, 2048]" in r.stderr
    assert "Traceback" not in r.stderr


def test_fast_canvas_and_rounding_equal_their_plain_twins():
    for size, rgb in [(16, (10, 20, 30)), ((7, 13), 0), ((5, 3), (255, 0, 128)), (224, np.array([1, 2, 3]))]:
        a, b = C.new_canvas(size, rgb), C.new_canvas_reference(size, rgb)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    img = np.random.default_rng(0).uniform(-20, 280, (31, 17, 3)).astype(np.float32)
    img[0, :4, 0] = [0.5, 1.5, 254.5, 255.49]  # half-way cases
    assert np.array_equal(C.to_uint8(img), C.to_uint8_reference(img))
    assert np.array_equal(C.to_uint8(img.astype(np.float64)), C.to_uint8_reference(img.astype(np.float64)))


def test_translated_union_samples_part_by_part_like_the_moved_whole():
    """``translate`` keeps a union's parts (each sampled over its own box): the same coverage as sampling the
    moved whole over its whole box (a Shape without parts), bit for bit, also when moved twice."""
    rng = np.random.default_rng(1)
    for trial in range(12):
        pts = rng.uniform(-20, 20, (int(rng.integers(2, 12)), 2))
        width = float(rng.uniform(0.5, 5))
        s = C.union(C.polyline(pts, width, closed=bool(trial % 2)), C.disc(3, -4, 2.5),
                    C.segment((-9, 2), (9, 7), 1.5, "butt"))
        dx, dy = (int(v) for v in rng.integers(-5, 70, 2))
        moved = C.translate(s, dx, dy) if trial % 3 else C.translate(C.translate(s, 2.25, -1.5), dx, dy)
        assert moved.parts
        whole = C.Shape(moved.bbox, moved.inside)
        for aa in (True, False):
            a, oa = C.coverage(moved, 64, aa)
            b, ob = C.coverage(whole, 64, aa)
            assert oa == ob and np.array_equal(a, b)


def test_polygon_grid_equals_its_rowwise_twin():
    rng = np.random.default_rng(2)
    polys = [C.regular_polygon(15, 16, 12, 5, 10), np.array([(3, 3), (28, 9), (6, 27), (26, 26), (15, 2)], float),
             np.array([(2, 2), (30, 2), (30, 9), (2, 9)], float)]  # horizontal edges
    polys += [rng.uniform(0, 32, (int(rng.integers(3, 40)), 2)) for _ in range(8)]
    off = (np.arange(C.SUPERSAMPLE) + 0.5) / C.SUPERSAMPLE
    g = (np.arange(-2, 34)[:, None] + off).ravel()
    for p in polys:
        xs, ys = p[:, 0], p[:, 1]
        args = (xs, ys, np.roll(xs, -1), np.roll(ys, -1), g, g[::-1].copy())
        assert np.array_equal(C._polygon_grid(*args), C._polygon_grid_rowwise(*args))


# Pillow's x86-64 builds compute the rotate's sample positions without fused multiply-adds, as turn_glyph does;
# builds with them (arm64) differ in the last bits, so a few pixels by 1/255
PIL_WITHOUT_FMA = platform.machine().lower() in ("x86_64", "amd64")


def test_text_coverage_equals_the_plain_twin():
    """The compiled turn (``turn_glyph``) gives PIL's rotate bit for bit: every character the texturized sets
    draw at their sizes and random angles, small and large type, other fonts, blank text, and the angles PIL
    takes a shortcut for (multiples of 90°, as transposes) or nearly."""
    rng = np.random.default_rng(3)
    chars = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    cases = [("Hg", 40, "DejaVuSans", 0.0, True), (" ", 12, "DejaVuSans", 30.0, True),
             ("ab", 30, "DejaVuSerif", 0, False), ("W", 120, "DejaVuSans-Bold", 37.5, True)]
    cases += [(c, s, "DejaVuSans", a, True) for c in "Wg1" for s in (4, 17) for a in
              (90, 180, 270, -90, 360, 450, -360, 1e-12, -1e-20, 89.99999999, 180.00000001, -179.9999999)]
    cases += [(str(rng.choice(chars)), int(rng.integers(4, 41)), "DejaVuSans", float(rng.uniform(-180, 180)),
               bool(rng.integers(2))) for _ in range(300)]
    cases += [(c, s, "DejaVuSans", float(rng.uniform(-60, 60)), True) for c in chars for s in (15, 20)]
    for c in cases:
        for _ in range(2):  # the second call hits the cache
            a, b = C.text_coverage(*c), C.text_coverage_reference(*c)
            if PIL_WITHOUT_FMA:
                assert a.shape == b.shape and np.array_equal(a, b), c
            else:  # a few sample positions rounded otherwise: a faint pixel may come or go at the edge
                assert abs(a.shape[0] - b.shape[0]) <= 1 and abs(a.shape[1] - b.shape[1]) <= 1, c
                assert abs(a.sum() - b.sum()) <= 0.01 * b.sum() + 0.01, c


def test_stamped_glyphs_equal_the_plain_twin():
    """``stamp_glyphs`` (one compiled pass) = each glyph turned by PIL, cropped, placed and max-composited one
    by one: the same canvas bit for bit and the same count, glyphs falling off every edge included."""
    rng = np.random.default_rng(8)
    atlas = C.glyph_atlas(tuple("aWg7Q"), (6, 15, 20, 33))
    for size, n, spill in ((64, 80, 20), (40, 30, 20), (1, 6, 12)):  # glyphs up to `spill` px off the canvas
        g = rng.integers(0, len(atlas.off), n)
        turns = rng.uniform(-180, 180, n)
        turns[:4] = (0.0, 90.0, -180.0, 270.0)
        cx, cy = rng.uniform(-spill, size + spill, n), rng.uniform(-spill, size + spill, n)
        a, b = np.zeros((size, size), np.uint8), np.zeros((size, size), np.uint8)
        na, nb = C.stamp_glyphs(a, atlas, g, turns, cx, cy), C.stamp_glyphs_reference(b, atlas, g, turns, cx, cy)
        assert na == nb and np.array_equal(a, b)
        assert 0 < na < n and (size == 1 or a.max() == 255)  # some on, some off; ink at full coverage
    assert C.stamp_glyphs(np.zeros((8, 8), np.uint8), atlas, [], [], [], []) == 0
