"""MindSet visual illusions: each generator's claimed property measured back from its own PNGs."""
import numpy as np
import pandas as pd
import pytest

from tasks.stimuli import ConfigError, write_dataset
from tasks.stimuli.mindset.common import read_png, schema_problems

ILLUSIONS = ("muller_lyer", "ponzo", "ebbinghaus", "jastrow", "tilt", "grayscale_shapes", "lightness_contrast",
             "adelson_checker_shadow", "thatcher_faces", "thatcher_words")


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    """Each illusion's ``lite`` preset, generated once for the module: name -> (folder, table)."""
    root = tmp_path_factory.mktemp("illusions")
    made = {}

    def get(name, **params):
        key = (name, tuple(sorted(params.items())))
        if key not in made:
            out = write_dataset(f"mindset/{name}", root / f"{name}_{len(made)}", {"preset": "lite", **params},
                                seed=3, progress=False)
            made[key] = (out, pd.read_parquet(out / "annotations.parquet"))
        return made[key]

    return get


def _img(out, row) -> np.ndarray:
    return read_png(out / row.file_name).astype(float)


# ---------------------------------------------------------------------------------------------- Müller-Lyer
def _fin_centroids(cov: np.ndarray, r, w: float = 2.0):
    """The coverage centroid (x, |y − line_y|) of each fin, over the whole pixel rows between the line's band
    and the fin's far end: a parallelogram cut from the fin's stroke, so its centroid lies on the fin's
    centreline. Returns {(side, sign): (x, d)}."""
    fy = r.fin_length * np.sin(np.radians(r.fin_angle))
    cx = (r.line_x0 + r.line_x1) / 2
    xs = np.arange(cov.shape[1]) + 0.5
    out = {}
    for sign in (-1, 1):
        lo, hi = r.line_y + sign * (w / 2 + 0.5), r.line_y + sign * (fy - w / 2 - 0.5)
        i0, i1 = (int(np.ceil(lo)), int(np.floor(hi))) if sign > 0 else (int(np.ceil(hi)), int(np.floor(lo)))
        assert i1 > i0, f"{r.item_id}: no whole row along the fins"
        band = cov[i0:i1]
        ys = np.arange(i0, i1)[:, None] + 0.5
        for side, sel in (("left", xs < cx), ("right", xs >= cx)):
            m = band * sel
            out[side, sign] = ((m * xs).sum() / m.sum(), abs((m * ys).sum() / m.sum() - r.line_y))
    return out


def test_muller_lyer_line_length_measured_from_pngs(lite):
    out, df = lite("muller_lyer")
    assert set(df.condition) == {"scrambled", "inward", "outward"} and (df.condition.value_counts() == 4).all()
    w = 2.0
    for r in df.itertuples():
        cov = _img(out, r).mean(axis=2) / 255.0
        if r.condition == "scrambled":
            # the line alone in its band (the detached fins keep >= 12 px away): area / width = length
            i0, i1 = int(np.floor(r.line_y - w / 2 - 1)), int(np.ceil(r.line_y + w / 2 + 1))
            j0, j1 = int(r.line_x0) - 3, int(np.ceil(r.line_x1)) + 3
            assert cov[i0:i1, j0:j1].sum() / w == pytest.approx(r.line_length, abs=0.3)
            continue
        # each fin's centreline runs from its vertex at slope 1/tan(angle) px per px of height: the measured
        # centroids give the vertices, i.e. the ends of the line
        cot = 1 / np.tan(np.radians(r.fin_angle))
        cen = _fin_centroids(cov, r)
        inward = r.condition == "inward"
        vx = {}
        for (side, sign), (x, d) in cen.items():
            toward_centre = 1 if side == "left" else -1
            step = toward_centre if inward else -toward_centre  # inward fins run back over the line
            vx.setdefault(side, []).append(x - step * d * cot)
            # the direction is the condition: the fin lies on the line's side of its vertex iff inward
            end = r.line_x0 if side == "left" else r.line_x1
            assert ((x - end) * toward_centre > 0) == inward, (r.item_id, side)
        xl, xr = np.mean(vx["left"]), np.mean(vx["right"])
        assert xr - xl == pytest.approx(r.line_length, abs=0.5), r.item_id
        assert np.ptp(vx["left"]) < 0.5 and np.ptp(vx["right"]) < 0.5  # upper and lower fins meet
        # and the line itself joins the vertices: its centre row is lit all the way between them
        row = cov[int(np.floor(r.line_y))]
        assert row[int(np.ceil(xl)) + 1:int(np.floor(xr)) - 1].min() > 0.45


# ---------------------------------------------------------------------------------------------- Ponzo
def _colour_length(img, y, colour: str, w=2.0) -> float:
    """Length of the red or blue horizontal stroke centred on row boundary ``y``: its alpha over any grey,
    (R − G) or (B − G) / 255, summed over its rows, divided by the stroke width."""
    band = img[int(y - w / 2 - 1):int(y + w / 2 + 1)]
    a = (band[..., 0] - band[..., 1]) if colour == "red" else (band[..., 2] - band[..., 1])
    return float(np.clip(a, 0, None).sum() / 255.0 / w)


def test_ponzo_target_lengths_measured_from_pngs(lite):
    out, df = lite("ponzo")
    assert set(df.condition) == {"scrambled", "same_length", "different_length"}
    for r in df.itertuples():
        img = _img(out, r)
        top, bottom = (r.top_color, "blue" if r.top_color == "red" else "red")
        got = {top: _colour_length(img, r.top_y, top), bottom: _colour_length(img, r.bottom_y, bottom)}
        assert got["red"] == pytest.approx(r.red_length, abs=0.3), r.item_id
        assert got["blue"] == pytest.approx(r.blue_length, abs=0.3), r.item_id
        if r.condition == "same_length":
            assert abs(got["red"] - got["blue"]) < 0.3
        else:
            assert abs(got["red"] - got["blue"]) >= 0.02 * 224 - 0.3
    # the railway: in the illusory conditions the white rails converge upward (track narrower at the top line)
    for r in df[df.condition != "scrambled"].itertuples():
        white = _img(out, r).min(axis=2) > 128
        width_at = [np.ptp(np.flatnonzero(white[int(y) + 4])) for y in (r.top_y, r.bottom_y)]
        assert width_at[0] < width_at[1]


# ---------------------------------------------------------------------------------------------- Ebbinghaus
def test_ebbinghaus_centre_diameter_and_flankers_measured(lite):
    from scipy import ndimage

    out, df = lite("ebbinghaus")
    for r in df.itertuples():
        img = _img(out, r)
        red = np.clip(img[..., 0] - img[..., 1], 0, None) / 255.0
        assert 2 * np.sqrt(red.sum() / np.pi) == pytest.approx(r.center_diameter, abs=0.3), r.item_id
        white = img.min(axis=2) / 255.0
        labels, n = ndimage.label(white > 0.5)
        assert n == r.num_flankers
        areas = ndimage.sum(white, labels, range(1, n + 1))
        if r.condition != "scrambled":
            d = 2 * np.sqrt(areas / np.pi)
            np.testing.assert_allclose(d, r.flanker_diameter, atol=0.3)
            big = r.condition == "big_flankers"
            assert (r.flanker_diameter > r.center_diameter) if big else (r.flanker_diameter < r.center_diameter)


# ---------------------------------------------------------------------------------------------- Jastrow
def test_jastrow_shape_sizes_measured(lite):
    out, df = lite("jastrow")
    assert len(set(df.condition)) == 6
    for r in df.itertuples():
        img = _img(out, r)
        red = np.clip(img[..., 0] - img[..., 1], 0, None) / 255.0
        blue = np.clip(img[..., 2] - img[..., 1], 0, None) / 255.0
        assert red.sum() == pytest.approx(r.red_area, rel=0.005)
        assert blue.sum() == pytest.approx(r.blue_area, rel=0.005)
        same = r.condition.startswith("illusory") or r.condition == "random_same_size"
        assert (abs(red.sum() - blue.sum()) < 0.005 * red.sum()) == same
        if r.on_top:  # stacked: the named colour is above (its centroid higher on the canvas)
            rows = np.arange(img.shape[0])[:, None]
            yr, yb = (rows * red).sum() / red.sum(), (rows * blue).sum() / blue.sum()
            assert (yr < yb) == (r.on_top == "red")


# ---------------------------------------------------------------------------------------------- tilt
def _fit_grating(grey: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(orientation in degrees by the module's convention, cycles per canvas width) of the sinusoid in the
    masked pixels: the 2D FFT's peak, refined by a least-squares fit of a·cos + b·sin + c over the pixels."""
    from scipy.optimize import least_squares

    S = grey.shape[0]
    g = np.where(mask, grey - grey[mask].mean(), 0.0)
    spec = np.abs(np.fft.fft2(g))
    spec[0, 0] = 0
    i, j = np.unravel_index(np.argmax(spec), spec.shape)
    ky0 = 2 * np.pi * (i if i < S / 2 else i - S) / S
    kx0 = 2 * np.pi * (j if j < S / 2 else j - S) / S
    yy, xx = np.nonzero(mask)
    yy, xx = yy[::7], xx[::7]  # every 7th pixel: enough for the fit, 7x faster
    x, y, v = xx + 0.5 - S / 2, yy + 0.5 - S / 2, grey[yy, xx]

    def resid(p):
        ph = p[0] * x + p[1] * y
        A = np.stack([np.cos(ph), np.sin(ph), np.ones_like(ph)], 1)
        coef, *_ = np.linalg.lstsq(A, v, rcond=None)
        return A @ coef - v

    kx, ky = least_squares(resid, [kx0, ky0], x_scale=0.01).x
    theta = np.degrees(np.arctan2(ky, kx))
    theta = (theta + 90) % 180 - 90
    return float(theta), float(np.hypot(kx, ky) * S / (2 * np.pi))


def _angle_diff(a, b):
    return abs((a - b + 90) % 180 - 90)


def test_tilt_centre_and_context_orientation_measured(lite):
    out, df = lite("tilt")
    S = 224
    yy, xx = np.indices((S, S)) + 0.5
    for r in df.itertuples():
        img = _img(out, r)
        grey = img.mean(axis=2)
        d = np.hypot(xx - S / 2, yy - S / 2)
        inner, outer = d < r.radius_px - 2, d > r.radius_px + 2
        bg = np.array([r.background_r, r.background_g, r.background_b], float)
        if r.condition != "only_context":
            th, f = _fit_grating(grey, inner)
            assert _angle_diff(th, r.theta_center) < 0.3 and f == pytest.approx(r.frequency, rel=0.01), r.item_id
        else:
            assert (img[inner] == bg).all()  # the disc left at the background colour
        if r.condition != "only_center":
            th, f = _fit_grating(grey, outer)
            assert _angle_diff(th, r.theta_context) < 0.3 and f == pytest.approx(r.frequency, rel=0.01), r.item_id
        else:
            assert (img[outer] == bg).all()
    cc = df[df.condition == "center_context"]
    assert (cc.theta_center == 0).all() and cc.theta_context.nunique() == len(cc)


# ---------------------------------------------------------------------------------------------- fast raster
def test_fast_coverage_equals_the_supersampled_reference():
    """The edge-only supersampling equals common.coverage bit for bit on the shapes the illusions draw."""
    from tasks.stimuli.mindset.common import coverage, disc, segment
    from tasks.stimuli.mindset.illusions_raster import fast_coverage
    from tasks.stimuli.mindset.illusions_size import annular_sector

    rng = np.random.default_rng(0)
    shapes = []
    for _ in range(150):
        p, q = rng.uniform(-20, 244, 2), rng.uniform(-20, 244, 2)
        shapes.append(segment(p, q, rng.uniform(1.0, 6.0), ("butt", "round", "square")[rng.integers(3)]))
        shapes.append(disc(*rng.uniform(-10, 234, 2), rng.uniform(0.8, 80)))
        R = rng.uniform(10, 100)
        shapes.append(annular_sector(*rng.uniform(0, 224, 2), R, R * rng.uniform(0.05, 0.95), rng.uniform(10, 180),
                                     rng.uniform(0, 360)))
    for s in shapes:
        for size in (224, (150, 260)):
            a, oa = coverage(s, size)
            b, ob = fast_coverage(s, size)
            assert oa == ob and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_distance_banded_coverage_equals_the_reference():
    """Strokes and discs supersampled only within 0.6 px of their outline: the same pixels as common.coverage,
    for every cap, thin and thick, short and long, partly off the canvas."""
    from tasks.stimuli.mindset.common import coverage, disc, segment
    from tasks.stimuli.mindset.illusions_raster import disc_coverage, segment_coverage

    rng = np.random.default_rng(1)
    for _ in range(300):
        p, q = rng.uniform(-20, 244, 2), rng.uniform(-20, 244, 2)
        if rng.uniform() < 0.3:
            q = p + rng.uniform(-3, 3, 2)  # short ones too
        w = rng.uniform(0.3, 8.0)
        for cap in ("butt", "round", "square"):
            a, oa = coverage(segment(p, q, w, cap), 224)
            b, ob = segment_coverage(p, q, w, cap, 224)
            assert oa == ob
            np.testing.assert_array_equal(a, b)
        c, r = rng.uniform(-10, 234, 2), rng.uniform(0.2, 90)
        a, oa = coverage(disc(*c, r), (200, 224))
        b, ob = disc_coverage(*c, r, (200, 224))
        assert oa == ob
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------- lightness
def _arrow_ok(img, r):
    """The marker is drawn just above the target pixel: white pixels in the 5 rows above it."""
    above = img[max(r.target_y - 5, 0):r.target_y, r.target_x]
    assert above.max() >= 200, r.item_id


def test_grayscale_shapes_target_pixel_value(lite):
    out, df = lite("grayscale_shapes")
    assert len(df) == 6 and df.target_value.between(0, 255).all()
    for r in df.itertuples():
        img = _img(out, r)
        y, x = r.target_y, r.target_x
        assert (img[y, x] == r.target_value).all(), r.item_id
        # a clean label: the target's 3 x 3 neighbourhood (below the arrow tip) is one grey
        assert (img[y:y + 2, x - 1:x + 2] == r.target_value).all()
        _arrow_ok(img, r)
    assert df.target_value.nunique() > 1


def test_lightness_contrast_target_values_and_matched_sets(lite):
    out, df = lite("lightness_contrast")
    assert sorted(set(df.condition)) == ["background_000", "background_120", "background_240"]
    for r in df.itertuples():
        img = _img(out, r)
        want = r.square_grey if r.target_on_square else r.background_grey
        assert r.target_value == want and (img[r.target_y, r.target_x] == want).all()
        _arrow_ok(img, r)
    assert df.target_on_square.any() and (~df.target_on_square).any()
    # one background, the arrow moved: the images are identical outside the two arrows' boxes
    g = df[df.condition == "background_120"]
    a, b = (_img(out, r) for r in list(g.itertuples())[:2])
    ra, rb = list(g.itertuples())[:2]
    mask = np.ones(a.shape[:2], bool)
    for r in (ra, rb):
        mask[r.target_y - 13:r.target_y + 1, r.target_x - 4:r.target_x + 5] = False
    assert (a[mask] == b[mask]).all() and (a[~mask] != b[~mask]).any()


def test_adelson_targets_equal_and_scene_consistent(lite):
    from tasks.stimuli.mindset.illusions_lightness import AdelsonScene, check_index_map, render_adelson, target_checks

    out, df = lite("adelson_checker_shadow")
    assert {"target_a", "target_b"} <= set(df.condition)
    r0 = df.iloc[0]
    assert r0.patch_a_value == r0.patch_b_value  # recorded equal ...
    for r in df.itertuples():
        img = _img(out, r)
        assert (img[r.target_y, r.target_x] == r.target_value).all()
        if r.condition in ("target_a", "target_b"):
            assert r.target_value == r.patch_a_value  # ... and measured equal at the arrow
        _arrow_ok(img, r)
    # the whole interior of both checks (away from antialiased edges): one value, the same for A and B, while
    # the lit light checks are brighter and the shadowed dark checks darker
    sc = AdelsonScene()
    a, b = target_checks(sc)
    ck = check_index_map(sc, 224)
    base = _img(out, df[df.condition == "background"].iloc[0])[..., 0]
    from scipy import ndimage

    def interior(q):
        return ndimage.binary_erosion(ck == q[0] * sc.n + q[1], iterations=2)

    va, vb = base[interior(a)], base[interior(b)]
    assert len(va) > 30 and len(vb) > 30
    assert va.min() == va.max() == vb.min() == vb.max() == r0.patch_a_value
    img, lab = render_adelson(sc, 224, 0, 3)
    lit_light = base[ndimage.binary_erosion(lab == 1, iterations=2)]
    dark_shadow = base[ndimage.binary_erosion(lab == 4, iterations=2)]
    assert lit_light.min() > va[0] > dark_shadow.max()
    # the targets are what their names say: B a light check in the cylinder's shadow, A a dark check in light
    assert (a[0] + a[1]) % 2 == 1 and (b[0] + b[1]) % 2 == 0


# ---------------------------------------------------------------------------------------------- Thatcher
def _sets(out, df):
    for sid, g in df.groupby("set_id"):
        assert len(g) == 4 and set(g.condition) == {"upright", "inverted", "thatcherized_upright",
                                                    "thatcherized_inverted"}
        yield g, {r.condition: _img(out, r) for r in g.itertuples()}


def test_thatcher_faces_regions_rotated_exactly(lite):
    out, df = lite("thatcher_faces")
    blend = 5
    for g, im in _sets(out, df):
        r = g.iloc[0]
        up, th = im["upright"], im["thatcherized_upright"]
        np.testing.assert_array_equal(im["inverted"], up[::-1, ::-1])  # inversion: the whole canvas, exactly
        np.testing.assert_array_equal(im["thatcherized_inverted"], th[::-1, ::-1])
        outside = np.ones(up.shape[:2], bool)
        for name in ("left_eye", "right_eye", "mouth"):
            x0, y0, x1, y1 = (int(r[f"{name}_{c}"]) for c in ("x0", "y0", "x1", "y1"))
            outside[y0:y1, x0:x1] = False
            # the region's interior is the upright region turned by 180 degrees, pixel for pixel ...
            turned = up[y0:y1, x0:x1][::-1, ::-1]
            inner = (slice(blend, -blend), slice(blend, -blend))
            np.testing.assert_array_equal(th[y0:y1, x0:x1][inner], turned[inner])
            # ... and the feature is not symmetric, so that is a real change
            assert np.abs(th[y0:y1, x0:x1] - up[y0:y1, x0:x1]).mean() > 5
        np.testing.assert_array_equal(th[outside], up[outside])  # identical outside the regions


def test_thatcher_words_letters_rotated_exactly(lite):
    out, df = lite("thatcher_words")
    for g, im in _sets(out, df):
        r = g[g.condition == "thatcherized_upright"].iloc[0]
        up, th = im["upright"], im["thatcherized_upright"]
        np.testing.assert_array_equal(im["inverted"], up[::-1, ::-1])
        np.testing.assert_array_equal(im["thatcherized_inverted"], th[::-1, ::-1])
        assert len(r.rotated_letters) == 2 and not set(r.rotated_letters) & set("HINOSXZ")
        outside = np.ones(up.shape[:2], bool)
        for n in range(2):
            x0, y0, x1, y1 = (int(r[f"rotated{n}_{c}"]) for c in ("x0", "y0", "x1", "y1"))
            outside[y0:y1, x0:x1] = False
            np.testing.assert_array_equal(th[y0:y1, x0:x1], up[y0:y1, x0:x1][::-1, ::-1])
            assert (th[y0:y1, x0:x1] != up[y0:y1, x0:x1]).any()
        np.testing.assert_array_equal(th[outside], up[outside])
        assert up.max() == 255 and up[outside].max() == 255  # the other letters are there
    assert df.font.nunique() >= 2


# ---------------------------------------------------------------------------------------------- contract
@pytest.mark.parametrize("name", ILLUSIONS)
def test_schema_and_paper_counts(name, lite):
    """Every illusion: the shared schema holds for its lite preset and its paper preset has the original's
    counts. (Byte-identity across worker counts and the unknown-key error: test_mindset_common.py, for every
    MindSet dataset.)"""
    from tasks.stimuli import GENERATORS
    from tasks.stimuli.registry import make_config

    out, df = lite(name)
    assert schema_problems(out, f"mindset/{name}") == []
    gen = GENERATORS[f"mindset/{name}"]
    n_paper = sum(1 for _ in gen.items(make_config(gen, {"preset": "paper"}), 0))
    assert n_paper == PAPER_COUNTS[name], (name, n_paper)


# the original's image counts (mindset-catalogue.md); Adelson: the 5-px arrow grid where the whole arrow fits
# (42 rows x 44 columns; the original's 44 x 44 = 1,936 let the arrow leave the canvas) plus the two targets' centres
PAPER_COUNTS = {"muller_lyer": 6000, "ponzo": 6000, "ebbinghaus": 5100, "jastrow": 2300, "tilt": 3000,
                "grayscale_shapes": 5000, "lightness_contrast": 637, "adelson_checker_shadow": 42 * 44 + 2,
                "thatcher_faces": 400, "thatcher_words": 2000}


@pytest.mark.parametrize("name, params, message", [
    ("muller_lyer", {"line_length": [0.5, 0.2]}, r"line_length=\[0.5, 0.2\]: must be \[min, max\]"),
    ("muller_lyer", {"fin_angle": [10.0, 95.0]}, r"fin_angle=95.0 is out of range \[5.0, 85.0\]"),
    ("muller_lyer", {"line_length": [0.3, 0.9], "fin_length": [0.1, 0.4]}, "does not fit"),
    ("ponzo", {"num_rail_lines": -1}, r"num_rail_lines=-1 is out of range \[0, 50\]"),
    ("ebbinghaus", {"big_flanker_size": [0.2, 0.45]}, "leaves the canvas"),
    ("jastrow", {"arc_span": [10.0, 200.0]}, r"arc_span=200.0 is out of range \[10.0, 180.0\]"),
    ("tilt", {"frequency": [5.0, 80.0]}, "aliases"),
    ("lightness_contrast", {"background": "random_uniform"}, "sweeps the background grey"),
    ("adelson_checker_shadow", {"rays_per_pixel_side": 2}, "rays_per_pixel_side=2 is not allowed; allowed"),
    ("adelson_checker_shadow", {"light_elevation": 60.0}, "light_elevation=60.0: .*no light check wholly in shadow"),
    ("thatcher_words", {"fonts": ["Arial"]}, "fonts='Arial' is not allowed"),
    ("thatcher_words", {"num_words": 5000}, "the word list has only"),
    ("thatcher_faces", {"colour": 3}, r"unknown parameter\(s\) \['colour'\]"),
    ("thatcher_words", {"words_file": "/nonexistent/words.txt"}, "words_file='/nonexistent/words.txt': cannot read"),
])
def test_bad_input_fails_before_writing(name, params, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        write_dataset(f"mindset/{name}", tmp_path / "x", params, progress=False)
    assert not (tmp_path / "x").exists()


def test_thatcher_words_from_a_user_word_list(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("# my words\nplanet\nrocket\ngarden\n")
    out = write_dataset("mindset/thatcher_words", tmp_path / "w", {"preset": "lite", "words_file": str(f)},
                        progress=False)
    assert set(pd.read_parquet(out / "annotations.parquet").word) == {"PLANET", "ROCKET", "GARDEN"}
    f.write_text("planet\nnaïve\n")
    from tasks.stimuli.mindset.illusions_thatcher import word_list

    word_list.cache_clear()
    with pytest.raises(ConfigError, match="not plain letters A-Z, e.g. 'NAÏVE'"):
        write_dataset("mindset/thatcher_words", tmp_path / "v", {"preset": "lite", "words_file": str(f)},
                      progress=False)


def test_cli_generates_an_illusion_and_reports_bad_input(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "tasks.generate", "dataset=mindset/ebbinghaus", f"out={tmp_path / 'e'}",
                        "preset=lite", "n_scrambled=1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(pd.read_parquet(tmp_path / "e" / "annotations.parquet")) == 1 + 2 * 4
    r = subprocess.run([sys.executable, "-m", "tasks.generate", "dataset=mindset/tilt", f"out={tmp_path / 't'}",
                        "radius=[0.5,0.1]"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "radius=[0.5, 0.1]" in r.stderr and "Traceback" not in r.stderr
