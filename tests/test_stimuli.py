"""2D generators: the properties each one claims, measured on its output; the shared writer; the CLI."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tasks.stimuli import ConfigError, write_dataset
from tasks.stimuli.gratings import DIRECTIONS, abutting_grating, bilinear_upsample
from tasks.stimuli.polygons import LEVELS, SIDES, disc_radius, draw, removed_fraction, sample_shape


# ---------------------------------------------------------------------- degraded polygons
def test_removed_perimeter_fraction_matches_level_on_many_shapes():
    rng = np.random.default_rng(0)
    geo_err, pix_err = [], []
    for cls in ("triangle", "square", "pentagon", "hexagon", "heptagon", "octagon"):
        for _ in range(12):
            s = sample_shape(cls, rng)
            whole = (draw(s, 224, 2) == 0).sum()
            for level in LEVELS:
                for variant in ("corners", "edges"):
                    f = removed_fraction(s, variant, level)
                    n = len(s.vertices)
                    # discs of radius ceil(p·P/2N) remove 2r per disc: p <= f <= p + 2N/P (the ceil)
                    assert level - 1e-3 <= f <= level + 2 * n / s.perimeter + 5e-3, (cls, level, variant, f)
                    geo_err.append(f - level)
                    left = (draw(s, 224, 2, variant, level) == 0).sum()
                    pix_err.append((1 - left / whole) - f)
    assert np.mean(geo_err) < 0.03
    # measured in pixels of the 2-px outline, the removed share agrees with the geometric one
    assert abs(np.mean(pix_err)) < 0.03 and np.percentile(np.abs(pix_err), 90) < 0.08


def test_sampling_follows_the_paper():
    rng = np.random.default_rng(1)
    for cls in SIDES:
        for _ in range(200):
            s = sample_shape(cls, rng)
            assert 46 <= s.cx <= 178 and 46 <= s.cy <= 178  # [44 + 1 + 1, 224 - 44 - 1)
            assert 44 <= s.radius < max(min(s.cx, s.cy, 224 - s.cx, 224 - s.cy), 45)
            assert 0 <= s.rotation_deg < 360 and isinstance(s.rotation_deg, int)
            assert len(s.vertices) == SIDES[cls]
    s = sample_shape("square", np.random.default_rng(2))
    img = draw(s, 224, 2, "corners", 0.3)
    assert set(np.unique(img)) <= {0, 255}, "binary, no antialiasing"
    aa = draw(s, 224, 2, "corners", 0.3, antialias=True)
    assert len(np.unique(aa)) > 2
    # discs: corners on the vertices, edges on the midpoints, radius ceil(p·P/(2N))
    assert disc_radius(s, 0.3) == int(np.ceil(0.3 * s.perimeter / 8))
    vx, vy = s.vertices[0]
    assert (img[vy - 1:vy + 2, vx - 1:vx + 2] == 255).all()  # the corner is gone


def test_polygon_dataset_pairs_and_table(tmp_path):
    out = write_dataset("degraded_polygons", tmp_path / "p", {"per_class": 3, "levels": [0.2, 0.5]},
                        seed=4, progress=False)
    df = pd.read_parquet(out / "annotations.parquet")
    assert list(df.columns[:6]) == ["file_name", "dataset", "condition", "item_id", "set_id", "seed"]
    assert str(df.file_name.dtype) == "string" and str(df.seed.dtype) == "int64" and str(df.level.dtype) == "float64"
    assert set(df.condition) == {"whole", "corners_p0.20", "edges_p0.20", "corners_p0.50", "edges_p0.50"}
    assert (df[df.condition == "whole"].shape_class.value_counts() == 3).all()
    assert "circle" not in set(df[df.variant != "whole"].shape_class)  # circles only whole
    deg = df[df.variant != "whole"]
    for _, g in deg.groupby("set_id"):  # corner/edge pairs share the base polygon
        assert len(g) == 2 and set(g.variant) == {"corners", "edges"}
        assert g.cx.nunique() == 1 and g.radius.nunique() == 1 and g.rotation_deg.nunique() == 1
    assert ((deg.removed_fraction >= deg.level - 1e-3) & (deg.removed_fraction < deg.level + 0.1)).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["images"] == len(df) and len(manifest["sha256"]) == len(df)
    from PIL import Image

    im = np.asarray(Image.open(out / df.file_name.iloc[0]))
    assert im.shape == (224, 224, 3)


# ---------------------------------------------------------------------- abutting gratings
def _blob(h=96, w=96):
    r, c = np.indices((h, w))
    return ((r - 48) ** 2 / 30**2 + (c - 44) ** 2 / 22**2) < 1


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("interval", [2, 4, 7, 8])
def test_grating_period_and_phase(direction, interval):
    fig = _blob()
    g = abutting_grating(fig, interval, direction) > 0
    d0, d1 = DIRECTIONS[direction]
    r, c = np.indices(fig.shape)
    s = np.mod(d0 * r + d1 * c, interval)
    # measured: every lit figure pixel has phase 0, every lit background pixel phase interval // 2 ...
    assert (s[g & fig] == 0).all() and (s[g & ~fig] == interval // 2).all()
    # ... and the lines are complete (every pixel of that phase is lit)
    assert g[fig & (s == 0)].all() and g[~fig & (s == interval // 2)].all()
    # period along a background column (horizontal) / row (vertical)
    if direction == "horizontal":
        lit_rows = np.flatnonzero(g[:, 0])
        assert (np.diff(lit_rows) == interval).all() and lit_rows[0] == interval // 2
    if direction == "vertical":
        lit_cols = np.flatnonzero(g[0, :])
        assert (np.diff(lit_cols) == interval).all()


@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_figure_boundary_has_no_luminance_edge(direction):
    """The illusion's definition: local mean luminance is the same on both sides of the contour."""
    from scipy.ndimage import distance_transform_edt, uniform_filter

    interval = 6
    fig = _blob(160, 160)
    lum = uniform_filter(abutting_grating(fig, interval, direction) / 255.0, size=2 * interval, mode="wrap")
    inside = distance_transform_edt(fig)
    outside = distance_transform_edt(~fig)
    band_in = (inside > interval) & (inside <= 2 * interval)
    band_out = (outside > interval) & (outside <= 2 * interval)
    a, b = lum[band_in].mean(), lum[band_out].mean()
    assert abs(a - b) < 0.01 * max(a, b) + 1e-3
    assert abs(a - 1 / interval) < 0.15 / interval  # one lit line per period


def test_bilinear_upsample_matches_align_corners_false():
    import torch

    img = np.random.default_rng(0).random((28, 28))
    ref = torch.nn.functional.interpolate(torch.tensor(img)[None, None], scale_factor=8, mode="bilinear",
                                          align_corners=False)[0, 0].numpy()
    np.testing.assert_allclose(bilinear_upsample(img, 8.0), ref, atol=1e-12)


def test_grating_datasets_and_skipped_inputs(tmp_path):
    out = write_dataset("abutting_digits", tmp_path / "d", {"n_images": 5, "intervals": [2, 4]}, progress=False)
    df = pd.read_parquet(out / "annotations.parquet")
    assert len(df) == 5 * (1 + 2 * 4) and set(df.label) <= set("0123456789")
    from PIL import Image

    assert np.asarray(Image.open(out / df.file_name.iloc[0])).shape == (28, 28, 3)
    hi = write_dataset("abutting_digits", tmp_path / "h", {"n_images": 2, "resolution": "high"}, progress=False)
    assert set(pd.read_parquet(hi / "annotations.parquet").interval) == {0, 4, 8, 16, 32}  # the paper's
    assert np.asarray(Image.open(hi / "horizontal_i08" / "00000_horizontal_i08.png")).shape == (224, 224, 3)
    # a user folder with one unreadable file: skipped with a reason, counted in the manifest
    src = tmp_path / "src" / "cat"
    src.mkdir(parents=True)
    Image.fromarray(np.where(_blob(64, 64), 0, 255).astype(np.uint8)).save(src / "a.png")
    (src / "notes.txt").write_text("not an image")
    s = write_dataset("abutting_silhouettes", tmp_path / "s", {"source": str(tmp_path / "src"), "size": 64,
                      "intervals": [4], "directions": ["vertical"]}, progress=False)
    manifest = json.loads((s / "manifest.json").read_text())
    assert manifest["images"] == 2 and len(manifest["skipped"]) == 2
    assert all("not a readable image" in v for v in manifest["skipped"].values())


# ---------------------------------------------------------------------- writer and CLI
def test_writer_deterministic_resumable_and_refuses_other_config(tmp_path):
    p = {"per_class": 4, "levels": [0.3], "classes": ["triangle", "square"]}
    a = write_dataset("degraded_polygons", tmp_path / "a", p, seed=1, workers=1, shard_size=5, progress=False)
    b = write_dataset("degraded_polygons", tmp_path / "b", p, seed=1, workers=2, shard_size=5, progress=False)
    ma, mb = (json.loads((x / "manifest.json").read_text()) for x in (a, b))
    assert ma["sha256"] == mb["sha256"]
    assert (a / "annotations.parquet").read_bytes() == (b / "annotations.parquet").read_bytes()
    (b / ".shards" / "00001.parquet").unlink()
    names = pd.read_parquet(a / "annotations.parquet").file_name
    (b / names.iloc[7]).unlink()  # shard 1 (items 5-9) was interrupted: one image missing,
    (b / names.iloc[8]).write_bytes((b / names.iloc[8]).read_bytes()[:40])  # one half written
    write_dataset("degraded_polygons", b, p, seed=1, workers=1, shard_size=5, progress=False)
    assert (b / names.iloc[8]).read_bytes() == (a / names.iloc[8]).read_bytes()
    assert json.loads((b / "manifest.json").read_text())["sha256"] == ma["sha256"]
    with pytest.raises(ConfigError, match="different configuration"):
        write_dataset("degraded_polygons", b, {**p, "per_class": 5}, seed=1, progress=False)
    c = write_dataset("degraded_polygons", tmp_path / "a", p, seed=2, overwrite=True, progress=False)
    assert json.loads((c / "config.json").read_text())["seed"] == 2


def test_bad_parameters_list_allowed_values(tmp_path):
    with pytest.raises(ConfigError, match="classes='dodecagon' is not allowed; allowed values: circle, triangle"):
        write_dataset("degraded_polygons", tmp_path / "x", {"classes": ["dodecagon"]}, progress=False)
    with pytest.raises(ConfigError, match=r"levels=1.5 is out of range \[0.0, 1.0\]"):
        write_dataset("degraded_polygons", tmp_path / "x", {"levels": [1.5]}, progress=False)
    with pytest.raises(ConfigError, match="unknown parameter\\(s\\) \\['level'\\]; did you mean 'levels'\\? known: classes"):
        write_dataset("degraded_polygons", tmp_path / "x", {"level": 0.2}, progress=False)
    with pytest.raises(ConfigError, match="unknown dataset 'mnist'"):
        write_dataset("mnist", tmp_path / "x", {}, progress=False)
    with pytest.raises(ConfigError, match="direction='diagonal'; one of horizontal"):
        abutting_grating(_blob(), 4, "diagonal")


def test_cli_list_generate_and_gallery(tmp_path, python_m):
    """``python -m tasks.generate``: the listing and the refusal forked from a warm server (tests/conftest.py:
    python_m), the generation in a new interpreter."""
    r = python_m("tasks.generate", "--list", timeout=120)
    assert r.returncode == 0 and "degraded_polygons" in r.stdout and "abutting_silhouettes" in r.stdout
    assert "per_class = 100" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tasks.generate", "dataset=degraded_polygons", f"out={tmp_path / 'p'}",
                        "per_class=2", "levels=[0.4]", "antialias=true"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = python_m("tasks.generate", "dataset=degraded_polygons", f"out={tmp_path / 'q'}", "levels=[2.0]", timeout=120)
    assert r.returncode == 2 and "out of range" in r.stderr
    from tasks.gallery import write_gallery

    page = write_gallery(tmp_path / "p", 2).read_text()
    assert page.count("<h3>") == 3 and page.count("<img") == 6


# ---------------------------------------------------------------------- 16-class ImageNet
def test_imagenet16_mapping_and_decision():
    from tasks.imagenet16 import categories, category_scores, decide, mapping

    table = mapping()["categories"]
    idx = [i for v in table.values() for i in v]
    assert len(idx) == 207 and len(set(idx)) == 207 and all(0 <= i < 1000 for i in idx)
    assert categories() == sorted(categories()) and len(categories()) == 16
    p = np.full(1000, 1e-4)
    p[294] = 0.5  # a bear class
    names, _ = decide(p[None])
    assert names[0] == "bear"
    q = np.zeros(1000)
    q[table["dog"]] = 0.6 / len(table["dog"])  # much mass spread over many dog classes
    q[499] = 0.05  # a little on the single knife class
    assert decide(q, "sum")[0] == "dog" and decide(q, "mean")[0] == "knife"
    np.testing.assert_allclose(category_scores(q, "max")[categories().index("knife")], 0.05)
    with pytest.raises(ValueError, match="aggregation='median'"):
        category_scores(q, "median")


def test_png_encoder_round_trips_through_pil():
    import io

    from PIL import Image

    from tasks.stimuli.writer import png_bytes

    rng = np.random.default_rng(0)
    for shape in [(7, 5), (31, 17, 3), (224, 224, 3), (1, 1, 3), (3, 1)]:
        a = rng.integers(0, 256, shape, dtype=np.uint8)
        for row_filter in ("none", "sub"):  # "sub": PNG filter 1, the 3D-PC frames' (PIL undoes it)
            for level in (0, 1, 6):
                for deflate in ("default", "rle"):
                    b = np.asarray(Image.open(io.BytesIO(png_bytes(a, level, row_filter=row_filter, deflate=deflate))))
                    np.testing.assert_array_equal(a, b)
    smooth = np.cumsum(rng.integers(0, 3, (64, 64, 3)), axis=1).astype(np.uint8)  # a textured gradient
    assert len(png_bytes(smooth, 1, row_filter="sub")) < len(png_bytes(smooth, 1))
    with pytest.raises(ValueError, match="row_filter='paeth'"):
        png_bytes(smooth, row_filter="paeth")
    with pytest.raises(ValueError, match="deflate='lzma'"):
        png_bytes(smooth, deflate="lzma")


def test_generator_png_deflate_is_checked_used_and_recorded(tmp_path):
    """A generator's PNG deflate mode is checked at registration, used for its images and named in the manifest."""
    import io

    from PIL import Image

    from infra.images import DEFLATE_MODES, png_bytes
    from tasks.stimuli.registry import GENERATORS, make_config, register

    with pytest.raises(ValueError, match="png_deflate='zip'"):
        register("test_bad_deflate", object, "", items=lambda c, s: iter(()), render=lambda c, i: None, png_deflate="zip")
    assert "test_bad_deflate" not in GENERATORS
    gen = GENERATORS["degraded_polygons"]
    assert gen.png_deflate == "rle"
    out = write_dataset("degraded_polygons", tmp_path / "p", gen.test_params, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["png_deflate"] == DEFLATE_MODES["rle"] != DEFLATE_MODES["default"]
    cfg = make_config(gen, dict(gen.test_params))
    item = next(iter(gen.items(cfg, 0)))
    img, _ = gen.render(cfg, item)
    f = out / f"{item.condition}/{item.item_id}.png"
    assert f.read_bytes() == png_bytes(img, 6, deflate="rle") != png_bytes(img, 6)
    # run-length deflate on the released drawing (binary, 3 channels): smaller than level 2, the same pixels
    cfg = make_config(gen, {"preset": "paper", "per_class": 4, "classes": ["triangle", "hexagon"]})
    imgs = [gen.render(cfg, it)[0] for it in gen.items(cfg, 0)]
    assert sum(map(len, (png_bytes(a, 6, deflate="rle") for a in imgs))) < 0.9 * sum(map(len, map(png_bytes, imgs)))
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_bytes(imgs[-1], 6, deflate="rle")))), imgs[-1])


_PNG_DETERMINISM_SCRIPT = """
import hashlib, sys
import numpy as np
from infra.images import png_bytes
order = [int(x) for x in sys.argv[1].split(",")]
rng = np.random.default_rng(int(sys.argv[2]))
imgs = []
for k in range(6):
    g = np.random.default_rng(k)
    flat = np.full((96, 128, 3), 255, np.uint8)
    flat[20 + 5 * k:70, 10:100 - 7 * k] = 40 * k
    textured = np.cumsum(g.integers(0, 4, (96, 128, 3)), axis=1).astype(np.uint8)
    imgs += [flat, textured]
out = {}
for i in order:
    png_bytes(rng.integers(0, 256, (int(rng.integers(8, 300)), 97, 3), dtype=np.uint8), 1, row_filter="sub")
    out[i] = hashlib.sha256(png_bytes(imgs[i], 1, row_filter="sub" if i % 2 else "none")).hexdigest()
print(",".join(out[i] for i in range(len(imgs))))
"""


def test_png_bytes_are_deterministic_whatever_ran_before(tmp_path):
    """The same image gives the same PNG bytes in any process, in any order, after any other compression:
    sharded and repaired builds are compared with the unsharded one by file hash. (ISA-L, the deflate
    before zlib-ng, once gave a MindSet image written by a worker different bytes than written serially, and
    a 3D-PC frame different bytes for identical filtered rows; not reproduced on demand.)"""
    from pathlib import Path

    from infra.images import DEFLATE

    root = Path(__file__).resolve().parents[1]
    assert DEFLATE.startswith("zlib-ng ")
    runs = []
    for order, seed in (("0,1,2,3,4,5,6,7,8,9,10,11", 0), ("11,9,7,5,3,1,10,8,6,4,2,0", 1),
                        ("5,0,11,2,8,1,7,3,10,4,9,6", 2)):
        r = subprocess.run([sys.executable, "-c", _PNG_DETERMINISM_SCRIPT, order, str(seed)], capture_output=True,
                           text=True, cwd=str(root))
        assert r.returncode == 0, r.stderr
        runs.append(r.stdout.strip())
    assert runs[0] == runs[1] == runs[2]

def test_png_chunks_fast_path_equal_the_plain_chunk():
    """The IDAT chunk with its CRC continued from the tag's, and the cached signature + IHDR, are the bytes
    of the plain chunk builder (the reference): the chunk layout and CRC-32 over tag + data."""
    import struct
    import zlib

    from infra.images import _chunk, _idat, _IEND, _png_head, png_bytes

    for data in (b"", b"x", bytes(range(256)) * 9):
        got = _idat(data)
        assert got == _chunk(b"IDAT", data)
        assert got[:8] == struct.pack(">I", len(data)) + b"IDAT" and got[8:-4] == data
        assert got[-4:] == struct.pack(">I", zlib.crc32(b"IDAT" + data))
    assert _IEND == b"\x00\x00\x00\x00IEND\xaeB`\x82"                 # the fixed IEND chunk of every PNG
    for w, h, colour in ((224, 224, 2), (7, 5, 0)):
        head = _png_head(w, h, colour)
        assert head == b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0))
        img = np.zeros((h, w, 3) if colour == 2 else (h, w), np.uint8)
        assert png_bytes(img).startswith(head) and png_bytes(img).endswith(_IEND)


def test_removed_fraction_exact_against_dense_sampling():
    rng = np.random.default_rng(5)
    for cls in ("triangle", "square", "heptagon", "octagon"):
        s = sample_shape(cls, rng)
        v = np.asarray(s.vertices, float)
        seg = np.roll(v, -1, axis=0) - v
        t = (np.arange(20000) + 0.5) / 20000
        for variant in ("corners", "edges"):
            for level in (0.1, 0.4, 0.7):
                c, r = (np.asarray(x) for x in (__import__("tasks.stimuli.polygons", fromlist=["x"]).disc_centres(s, variant),
                                                disc_radius(s, level)))
                pts = (v[:, None, :] + t[None, :, None] * seg[:, None, :])  # [edge, t, 2]
                inside = (np.linalg.norm(pts[:, :, None, :] - c[None, None], axis=-1) <= r).any(-1)
                dense = (inside.mean(1) * np.linalg.norm(seg, axis=1)).sum() / np.linalg.norm(seg, axis=1).sum()
                assert removed_fraction(s, variant, level) == pytest.approx(dense, abs=2e-4)


def test_removed_fraction_fast_path_matches_reference():
    """The vectorised removed fraction gives the bits of its plain loop twin (the dataset's table is
    byte-identical whichever computes it), and both the NumPy specification to rounding."""
    from tasks.stimuli.polygons import CLASSES, removed_fraction_loop, removed_fraction_reference

    rng = np.random.default_rng(11)
    for cls in CLASSES[1:]:
        for _ in range(60):
            s = sample_shape(cls, rng)
            for variant in ("corners", "edges"):
                for level in LEVELS + (0.0, 0.95, 1.0):
                    fast = removed_fraction(s, variant, level)
                    assert fast == removed_fraction_loop(s, variant, level)  # exactly: same operations, same order
                    assert fast == pytest.approx(removed_fraction_reference(s, variant, level), abs=1e-12)


def test_release_stroke_runs_equal_the_per_pixel_test():
    """The fast path's stroke as runs per row (whole-number vertices) has exactly the pixels of the per-pixel
    test, for random polygons at every line width and for axis-parallel and image-border edges."""
    from tasks.stimuli.polygons import CLASSES, _run_pixels, _stroke_pixels, _stroke_rows, release_reach, \
        release_stroke_reference

    rng = np.random.default_rng(2)
    widths = (1, 2, 2, 2, 3, 4, 7, 16)
    cases = [(np.stack([np.asarray(sample_shape(cls, rng, 224, w).vertices, float) for _ in range(6)]), w)
             for cls in CLASSES[1:] for w in widths]
    hand = [[(50, 50), (150, 50), (150, 150), (50, 150)], [(10, 0), (223, 0), (223, 223)], [(0, 100), (223, 100), (100, 223)],
            [(100, 10), (100, 200), (30, 120)]]
    cases += [(np.asarray(v, float)[None], w) for v in hand for w in (1, 2, 5)]
    for v, w in cases:
        n = len(v) * 224 * 224
        runs, per_pixel = np.zeros(n, bool), np.zeros(n, bool)
        runs[_run_pixels(*_stroke_rows(v, 224, release_reach(w))[:3], 224)] = True
        per_pixel[_stroke_pixels(v, 224, release_reach(w))] = True
        np.testing.assert_array_equal(runs, per_pixel)
        np.testing.assert_array_equal(per_pixel[:224 * 224].reshape(224, 224), release_stroke_reference(v[0], 224, w) == 0)


def test_batched_sampling_equals_sample_shape():
    """The fast path samples a batch of shapes with one generator each and computes their vertices together:
    the same shapes as one at a time."""
    from tasks.stimuli.polygons import CLASSES, _sample_shapes

    for cls in CLASSES[1:]:
        seeds = [[1, 2, k, 7] for k in range(200)]
        shapes, v = _sample_shapes(cls, seeds, 224, 2)
        for s, vs, seed in zip(shapes, v, seeds, strict=True):
            assert s == sample_shape(cls, np.random.default_rng(seed), 224, 2)
            np.testing.assert_array_equal(vs, np.asarray(s.vertices, float))


def test_paper_fast_path_equals_the_per_item_drawing():
    """preset=paper draws several base shapes' images in one batch (runs minus discs); every image and every
    extra column equals the per-item drawing and removed fraction (whatever the batch boundaries: per_class
    not a multiple of the batch), and the whole shapes too."""
    from tasks.stimuli import GENERATORS
    from tasks.stimuli.polygons import GROUP, _base
    from tasks.stimuli.registry import make_config

    g = GENERATORS["degraded_polygons"]
    cfg = make_config(g, {"preset": "paper", "per_class": GROUP + 2, "levels": [0.1, 0.3, 0.7],
                          "classes": ["triangle", "square", "octagon"]})
    n = 0
    for it in g.items(cfg, 5):
        img, extra = g.render(cfg, it)
        shape = _base(it.params["shape_class"], tuple(it.params["_rng"]), 224, 2, False, "release", 3)[0]
        variant, level = it.params["variant"], it.params["level"]
        grey = draw(shape, 224, 2, variant, level, stroke="release")
        np.testing.assert_array_equal(img, np.repeat(grey[:, :, None], 3, axis=2))
        want = {"cx": shape.cx, "cy": shape.cy, "radius": shape.radius, "rotation_deg": shape.rotation_deg,
                "perimeter": shape.perimeter}
        if variant != "whole":
            want |= {"disc_radius": disc_radius(shape, level), "removed_fraction": removed_fraction(shape, variant, level)}
        assert extra == want and list(extra) == list(want)
        n += 1
    assert n == 3 * (GROUP + 2) * (1 + 3 * 2)


def test_png_encoder_broadcast_grey_to_rgb():
    import io

    from PIL import Image

    from tasks.stimuli.writer import png_bytes

    g = np.random.default_rng(1).integers(0, 256, (13, 9), dtype=np.uint8)
    view = np.broadcast_to(g[:, :, None], (13, 9, 3))
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_bytes(view)))), np.repeat(g[:, :, None], 3, 2))
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_bytes(view, row_filter="sub")))),
                                  np.repeat(g[:, :, None], 3, 2))


# ---------------------------------------------------------------------- issue 12: seeds, stroke
@pytest.mark.parametrize("name", sorted(__import__("tasks.stimuli", fromlist=["GENERATORS"]).GENERATORS))
def test_every_generator_draws_from_the_seed_and_records_it(name, tmp_path):
    """Every registered generator (future ones included): a different seed gives different random draws
    (or, for a generator declared deterministic, identical images), and every output records the seed used."""
    from tasks.stimuli import GENERATORS

    gen = GENERATORS[name]
    made = {}
    for seed in (0, 7):
        out = write_dataset(name, tmp_path / f"s{seed}", gen.test_params, seed=seed, progress=False)
        df = pd.read_parquet(out / "annotations.parquet")
        assert len(df) > 0 and (df.seed == seed).all()
        assert json.loads((out / "config.json").read_text())["seed"] == seed
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["seed"] == seed
        made[seed] = manifest["sha256"]
    assert made[0].keys() == made[7].keys()
    differ = sum(made[0][k] != made[7][k] for k in made[0]) / len(made[0])
    if gen.random:
        assert differ >= 0.5, f"{name}: only {differ:.0%} of the images change with the seed"
    else:
        assert differ == 0, f"{name} is declared deterministic but {differ:.0%} of its images change with the seed"
    again = write_dataset(name, tmp_path / "again", gen.test_params, seed=7, progress=False)
    assert json.loads((again / "manifest.json").read_text())["sha256"] == made[7]  # and the seed reproduces


def test_release_stroke_width_and_overlap():
    """The released PNGs' stroke: 3 px centred on the edge (~2.95 black pixels per pixel of outline; the
    'inside' stroke of the paper's wording gives ~1.7); the fast drawing equals its plain reference,
    and overlaps OpenCV's own drawing (the original's library) when it is installed."""
    from tasks.stimuli.polygons import release_stroke_reference

    rng = np.random.default_rng(3)
    width, inside, iou = [], [], []
    try:
        import cv2
    except ImportError:
        cv2 = None
    for k in range(60):
        s = sample_shape(("triangle", "square", "pentagon", "hexagon", "heptagon", "octagon")[k % 6], rng)
        img = draw(s, 224, 2, stroke="release")
        np.testing.assert_array_equal(img, release_stroke_reference(s.vertices, 224, 2))
        width.append((img == 0).sum() / s.perimeter)
        inside.append((draw(s, 224, 2) == 0).sum() / s.perimeter)
        # every black pixel is near the edge (centred), and the ideal outline is covered
        d = np.asarray(s.vertices, float)
        mid = ((d + np.roll(d, -1, 0)) / 2).round().astype(int)
        assert (img[mid[:, 1], mid[:, 0]] == 0).all()
        if cv2 is not None:
            ref = np.full((224, 224), 255, np.uint8)
            cv2.polylines(ref, [np.asarray(s.vertices, np.int32)], True, 0, thickness=2)
            a, b = img == 0, ref == 0
            iou.append((a & b).sum() / (a | b).sum())
    assert 2.85 < np.mean(width) < 3.05, np.mean(width)
    assert 1.6 < np.mean(inside) < 1.8
    if iou:
        assert np.mean(iou) > 0.9 and min(iou) > 0.8, (np.mean(iou), min(iou))
    circle = sample_shape("circle", rng)
    ring = draw(circle, 224, 2, stroke="release") == 0
    assert ring.sum() / (2 * np.pi * circle.radius) == pytest.approx(2.9, abs=0.1)


def test_paper_preset_draws_rgb_directly_equal_to_the_grey_reference():
    """preset=paper draws the stroke and the discs in all three channels at once (no grey-to-RGB copy per
    image); every channel equals the grey drawing, which equals the plain references."""
    from tasks.stimuli import GENERATORS
    from tasks.stimuli.polygons import disc_centres, release_discs_reference, release_stroke_reference
    from tasks.stimuli.registry import make_config

    g = GENERATORS["degraded_polygons"]
    cfg = make_config(g, {"preset": "paper", "per_class": 2, "levels": [0.1, 0.7],
                          "classes": ["circle", "triangle", "octagon"]})
    for it in g.items(cfg, 3):
        img, extra = g.render(cfg, it)
        assert img.shape == (224, 224, 3) and img.dtype == np.uint8 and img.flags.c_contiguous
        from tasks.stimuli.polygons import _base

        shape = _base(it.params["shape_class"], tuple(it.params["_rng"]), 224, 2, False, "release", 3)[0]
        grey = draw(shape, 224, 2, it.params["variant"], it.params["level"], stroke="release")
        for c in range(3):
            np.testing.assert_array_equal(img[:, :, c], grey)
        if shape.vertices:
            ref = release_stroke_reference(shape.vertices, 224, 2)
            if it.params["variant"] != "whole":
                ref = release_discs_reference(ref, disc_centres(shape, it.params["variant"]), extra["disc_radius"])
            np.testing.assert_array_equal(grey, ref)


def test_paper_preset_selects_the_release_stroke(tmp_path):
    out = write_dataset("degraded_polygons", tmp_path / "p", {"preset": "paper", "per_class": 1, "levels": [0.2],
                        "classes": ["square"]}, progress=False)
    cfg = json.loads((out / "config.json").read_text())["config"]
    assert cfg["stroke"] == "release" and cfg["line_width"] == 2 and cfg["channels"] == 3
    df = pd.read_parquet(out / "annotations.parquet")
    from PIL import Image

    whole = np.asarray(Image.open(out / df[df.variant == "whole"].file_name.iloc[0]))[..., 0]
    assert (whole == 0).sum() / df[df.variant == "whole"].perimeter.iloc[0] > 2.8
    with pytest.raises(ConfigError, match="preset='nope' unknown; available: paper"):
        write_dataset("degraded_polygons", tmp_path / "q", {"preset": "nope"}, progress=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked from the writer on Linux only")
def test_worker_start_methods_give_the_same_dataset(tmp_path):
    """Workers are forked from the writer when it runs no other thread (they inherit its loaded kernels),
    else from the fork server; both give the bytes of a one-process run."""
    import threading

    from tasks.stimuli.writer import _pool_context

    p = {"preset": "paper", "per_class": 2, "levels": [0.3, 0.6], "classes": ["square", "hexagon"]}
    one = write_dataset("degraded_polygons", tmp_path / "one", p, workers=1, shard_size=3, progress=False)
    code = ("import json, sys\n"
            "from tasks.stimuli import write_dataset\n"
            "from tasks.stimuli.writer import _pool_context\n"
            "print(_pool_context('tasks.stimuli.polygons').get_start_method())\n"
            f"write_dataset('degraded_polygons', {str(tmp_path / 'fork')!r}, json.loads(sys.argv[1]), workers=2, "
            "shard_size=3, progress=False)\n")
    r = subprocess.run([sys.executable, "-c", code, json.dumps(p)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["fork"]
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert _pool_context("tasks.stimuli.polygons").get_start_method() == "forkserver"
        server = write_dataset("degraded_polygons", tmp_path / "server", p, workers=2, shard_size=3, progress=False)
    finally:
        stop.set()
        t.join()
    made = [json.loads((d / "manifest.json").read_text())["sha256"] for d in (one, tmp_path / "fork", server)]
    assert made[0] == made[1] == made[2] and len(made[0]) == 20  # 16 degraded + 4 whole


def test_workers_do_not_import_pandas(tmp_path):
    """The per-run fixed cost: a worker imports what rendering needs (NumPy, the generator), not pandas
    (~1 s per process on this kind of machine); the parent writes the shard's rows file."""
    code = ("import sys\n"
            "from tasks.stimuli import GENERATORS\n"
            "from tasks.stimuli.registry import make_config\n"
            "from tasks.stimuli.writer import _render_items\n"
            "g = GENERATORS['degraded_polygons']\n"
            "cfg = make_config(g, {'preset': 'paper', 'per_class': 1, 'levels': [0.3], 'classes': ['square']})\n"
            "items = list(g.items(cfg, 0))\n"
            f"index, rows = _render_items(('degraded_polygons', cfg, 0, 0, items, {str(tmp_path)!r}, 6))\n"
            "print(sorted(m for m in ('pandas', 'torch') if m in sys.modules), len(rows))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] 3", r.stdout
    assert len(list(tmp_path.rglob("*.png"))) == 3



def test_registry_imports_only_the_requested_generator():
    """A lookup imports the generator's own module (a run's start-up: not every generator, MindSet's ~30
    modules included); a listing imports them all; the table of homes matches where each name is registered."""
    code = ("import sys\n"
            "from tasks.stimuli import GENERATORS\n"
            "from tasks.stimuli.registry import get_generator\n"
            "g = get_generator('degraded_polygons')\n"
            "print(g.module, sorted(m for m in ('tasks.stimuli.mindset', 'tasks.stimuli.gratings',\n"
            "      'tasks.stimuli.distortions', 'pandas') if m in sys.modules))\n"
            "names = sorted(GENERATORS)\n"
            "print(len(names) == len(GENERATORS) > 30, 'tasks.stimuli.mindset' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["tasks.stimuli.polygons []", "True True"], r.stdout

    from tasks.stimuli import GENERATORS
    from tasks.stimuli.registry import _modules, home

    listed = dict(GENERATORS.items())
    assert {g.module.split(".")[2] for g in listed.values()} == {m.split(".")[2] for m in _modules()}
    for name, gen in listed.items():  # every name in the table, pointing at the module that registers it
        assert home(name) is not None, f"{name}: add it to tasks.stimuli.registry.HOMES"
        assert gen.module == home(name) or gen.module.startswith(home(name) + "."), (name, gen.module)
    assert "shapes" not in GENERATORS and GENERATORS.get("shapes") is None and 3 not in GENERATORS

def test_gallery_natural_size_and_numeric_order(tmp_path):
    from tasks.gallery import condition_key, write_gallery

    out = write_dataset("image_distortions", tmp_path / "d", {"size": 32, "distortions": ["contrast", "high_pass"]},
                        progress=False)
    page = write_gallery(out, 1).read_text()
    shown = [line.split("<h3>")[1].split(" <small>")[0] for line in page.splitlines() if line.startswith("<h3>")]
    assert shown[:8] == ["contrast_c01", "contrast_c03", "contrast_c05", "contrast_c10", "contrast_c15",
                         "contrast_c30", "contrast_c50", "contrast_c100"]
    assert shown[8:] == ["high_pass_0.4", "high_pass_0.45", "high_pass_0.55", "high_pass_0.7", "high_pass_1",
                         "high_pass_1.5", "high_pass_3", "high_pass_inf"]
    assert "width" not in page  # natural size: neither CSS nor attributes scale the images
    assert sorted(["corners_p0.70", "corners_p0.10", "whole"], key=condition_key)[:2] == ["corners_p0.10", "corners_p0.70"]


def test_export_release_layout(tmp_path):
    from tasks.stimuli.polygons import export_release_layout

    out = write_dataset("degraded_polygons", tmp_path / "p", {"preset": "paper", "per_class": 2, "levels": [0.3],
                        "classes": ["circle", "square", "hexagon"]}, progress=False)
    folders = export_release_layout(out, tmp_path / "release")
    assert sorted(f.name for f in folders) == ["p0.30", "whole"]
    rel = tmp_path / "release"
    assert sorted(p.name for p in (rel / "whole" / "pngs").iterdir()) == [
        "1_0_whole.png", "1_1_whole.png", "4_0_whole.png", "4_1_whole.png", "6_0_whole.png", "6_1_whole.png"]
    deg = pd.read_csv(rel / "p0.30" / "metadata_nocorners.csv")
    assert sorted(deg.filename) == ["4_0_nocorners.png", "4_1_nocorners.png", "6_0_nocorners.png", "6_1_nocorners.png"]
    assert set(deg.label) == {4, 6}
    df = pd.read_parquet(out / "annotations.parquet")
    # one pair shares k: nocorners and noedges of "4_0" come from the same base polygon
    pair = df[(df.shape_class == "square") & (df.variant != "whole")].sort_values("set_id").head(2)
    for r in pair.itertuples():
        name = f"4_0_{'nocorners' if r.variant == 'corners' else 'noedges'}.png"
        assert (rel / "p0.30" / "pngs" / name).read_bytes() == (out / r.file_name).read_bytes()
    assert json.loads((rel / "p0.30" / "generator_args.txt").read_text())["level"] == 0.3


def test_two_disc_spans_equal_the_sorted_spans():
    """The two-disc fast path of the pieces left between disc spans (compare-and-swap) equals the general
    stable sort and running maximum, on random runs and spans with ties, misses, overlaps and spans outside
    the run."""
    from tasks.stimuli.polygons import _sorted_spans, _two_spans

    rng = np.random.default_rng(12)
    big = np.int64(1) << 40
    n = 20000
    first = rng.integers(0, 200, n)
    last = first + rng.integers(-1, 30, n)
    a = first[:, None] + rng.integers(-10, 40, (n, 2))
    b = a + rng.integers(0, 12, (n, 2))
    a[:500, 1] = a[:500, 0]                                       # ties: the stable order is kept
    miss = rng.random((n, 2)) < 0.2
    a, b = np.where(miss, big, a), np.where(miss, -big, b)
    got, ref = _two_spans(first, last, a, b, big), _sorted_spans(first, last, a, b, big)
    for g, r in zip(got, ref, strict=True):
        assert g.dtype == r.dtype and g.shape == r.shape == (n, 3)
        np.testing.assert_array_equal(g, r)
    assert (got[0] <= got[1]).any() and (got[0] > got[1]).any()   # both kept and empty pieces occur
