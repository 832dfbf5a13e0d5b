"""MindSet low/mid-level datasets: each claimed property measured from the generator's own PNGs.
(The shared schema over every MindSet dataset is in tests/test_mindset_common.py.)"""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

import tasks.stimuli  # noqa: F401
from tasks.stimuli import ConfigError, GENERATORS, write_dataset
from tasks.stimuli.mindset.common import luminance, read_png, schema_problems
from tasks.stimuli.registry import make_config


def _gen(tmp_path, name, params, seed=0):
    out = write_dataset(f"mindset/{name}", tmp_path / name, params, seed=seed, progress=False)
    assert schema_problems(out) == []
    return out, pd.read_parquet(out / "annotations.parquet")


def _n_items(name, params):
    g = GENERATORS[f"mindset/{name}"]
    return len(list(g.items(make_config(g, params), 0)))


def test_geons_paper_counts_per_rendering():
    """The original's amir_geons folders hold 22 shaded, 9 outline and 20 silhouette items (x 3 roles). (Every
    paper preset's total against the original's: tests/test_mindset_paper.py, from docs/mindset.md's table.)"""
    g = GENERATORS["mindset/nap_vs_mp_geons"]
    per = pd.Series([it.params["rendering"] for it in g.items(make_config(g, {"preset": "paper"}), 0)]).value_counts()
    assert per.to_dict() == {"shaded": 66, "silhouette": 60, "outline": 27} and per.sum() == 153


# ------------------------------------------------------------------ Weber
def test_weber_line_length_and_grey_measured(tmp_path):
    """Preset ``clean`` (lines at random positions): length, width and grey measured back exactly."""
    out, df = _gen(tmp_path, "weber_law", {"preset": "clean", "length_step": 7, "grey_step": 40})
    assert sorted(df.grey.unique()) == [50, 90, 130, 170, 210, 250]
    for r in df.itertuples():
        lum = luminance(read_png(out / r.file_name))
        # black background: coverage = lum / grey. Along a fully covered row the coverage sums to the length
        # (4 × 4 sub-pixel samples place each end to 1/4 px; uint8 rounding of the two end pixels < 0.02 px)
        assert lum.max() == r.grey  # a 2-px stroke always covers one row of pixels fully
        row = np.flatnonzero((lum == r.grey).any(1))[0]
        assert lum[row].sum() / r.grey == pytest.approx(r.length, abs=0.27)
        mid = int(np.argmax(lum[row]))
        assert lum[:, mid].sum() / r.grey == pytest.approx(r.width, abs=0.27)  # and across it, the width
        cols = np.flatnonzero(lum.sum(0) > 0)
        assert r.length <= len(cols) <= r.length + 1 and r.condition == f"grey_{r.grey:03d}"
        rows = np.flatnonzero(lum.sum(1) > 0)
        assert rows.min() >= 10 and rows.max() < 224 - 10 and cols.min() >= 10 and cols.max() < 224 - 10
    with pytest.raises(ConfigError, match="min_length=60 must be < max_length=50"):
        write_dataset("mindset/weber_law", tmp_path / "x", {"min_length": 60}, progress=False)
    with pytest.raises(ConfigError, match="does not fit"):
        write_dataset("mindset/weber_law", tmp_path / "x", {"max_length": 220}, progress=False)


# The original's Weber images (MindSetVision/mindset-vision 75a7762, weber_law/generate_dataset.py, committed
# defaults), measured once on all 495 by running it (tests/mindset_original.py) and reading every PNG: each is a
# binary line of exactly its grey on black, on rows 112 and 113, over length + 1 columns (Pillow draws both end
# pixels), so its ink is 2 (length + 1) grey and its centre (continuous coordinates, pixel (i, j) = [j, j+1) x
# [i, i+1)) is x = 112.0 (odd lengths) or 112.5 (even), y = 113.0.
WEBER_ORIGINAL_ROWS = (112, 113)


def _weber_original_centre(length: int) -> tuple[float, float]:
    return (112.0 if length % 2 else 112.5), 113.0


def _ink_centre(lum: np.ndarray) -> tuple[float, float, float]:
    """(ink sum, centre x, centre y) of a grey image, continuous coordinates."""
    ys, xs = np.indices(lum.shape) + 0.5
    w = lum.sum()
    return float(w), float((lum * xs).sum() / w), float((lum * ys).sum() / w)


def test_weber_paper_matches_the_original(tmp_path):
    """``paper``: every line centred on the canvas, as the original's. Against its recorded figures always, and
    image by image against a fresh run of the original (lengths 5-11 x all greys) when it can run here. Known
    differences (docs/mindset.md): Vantage's line is exactly its length (the original's length + 1 px), centred
    on (112, 112) (the original's Pillow rows 112-113 put it 1 px lower)."""
    out, df = _gen(tmp_path, "weber_law", {"preset": "paper", "max_length": 12})
    assert len(df) == 7 * 11 and _n_items("weber_law", {"preset": "paper"}) == 495
    vantage = {}
    for r in df.itertuples():
        lum = luminance(read_png(out / r.file_name))
        ink, cx, cy = _ink_centre(lum)
        assert ink / r.grey == pytest.approx(2 * r.length, abs=0.02), r.item_id  # 2 px wide, exactly L long
        assert (cx, cy) == (pytest.approx(112.0, abs=0.01), pytest.approx(112.0, abs=0.01)), r.item_id
        assert list(np.flatnonzero(lum.max(1) > 0)) == [111, 112] and lum.max() == r.grey
        ox, oy = _weber_original_centre(r.length)
        assert abs(cx - ox) <= 0.5 and oy - cy == pytest.approx(1.0, abs=0.01)
        vantage[r.length, r.grey] = (ink, cx, cy)
    from mindset_original import original_available, run_original

    ok, why = original_available()
    if not ok:
        pytest.skip(why)
    o = run_original("weber_law", tmp_path / "original", max_line_length=12)
    files = sorted((o / "all_images").glob("*.png"))
    assert len(files) == 7 * 11
    for f in files:
        length, grey = (int(v) for v in f.name.split("_")[:2])
        lum = luminance(read_png(f))
        ink, cx, cy = _ink_centre(lum)
        assert tuple(np.flatnonzero(lum.max(1) > 0)) == WEBER_ORIGINAL_ROWS and set(np.unique(lum)) == {0, grey}
        assert ink == 2 * (length + 1) * grey and (cx, cy) == _weber_original_centre(length)
        v_ink, v_cx, v_cy = vantage[length, grey]
        assert ink - v_ink == pytest.approx(2 * grey, abs=0.05 * grey)  # the original's extra column
        assert abs(cx - v_cx) <= 0.5 and cy - v_cy == pytest.approx(1.0, abs=0.01)


# ------------------------------------------------------------------ emergent features
def _dots(path):
    lab, n = ndimage.label(luminance(read_png(path)) > 60)
    return np.array(ndimage.center_of_mass(np.ones_like(lab), lab, range(1, n + 1)))[:, ::-1]  # (x, y)


def _match(a, b):
    """Rows of a that also appear in b (within 0.2 px), and the rest."""
    d = np.linalg.norm(a[:, None] - b[None], axis=-1)
    common = d.min(1) < 0.2
    return a[common], a[~common]


def test_emergent_features_geometry_measured(tmp_path):
    out, df = _gen(tmp_path, "emergent_features", {"samples": 12})
    assert len(df) == 12 * 8
    for (k, feat), g in df.groupby(["sample", "feature"]):
        a = _dots(out / g[g.member == "a"].file_name.iloc[0])
        b = _dots(out / g[g.member == "b"].file_name.iloc[0])
        n = {"single": 1, "proximity": 2, "orientation": 2, "linearity": 3}[feat]
        assert len(a) == len(b) == n
        for pts in (a, b):  # the paper's constraints (the original generator passed 0 for both)
            assert (pts >= 40 - 0.3).all() and (pts <= 224 - 40 + 0.3).all()
            d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)[np.triu_indices(n, 1)]
            assert (d >= 20 - 0.3).all()
        ctx, (ta,) = _match(a, b)
        _, (tb,) = _match(b, a)
        assert len(ctx) == n - 1 and np.linalg.norm(ta - tb) > 5  # context identical, the target moved
        if feat in ("proximity", "orientation"):
            c = ctx[0]
            da, db = np.linalg.norm(ta - c), np.linalg.norm(tb - c)
            ang = [np.degrees(np.arctan2(*(t - c)[::-1])) % 180 for t in (ta, tb)]
            dang = min(abs(ang[0] - ang[1]), 180 - abs(ang[0] - ang[1]))
            if feat == "proximity":  # same orientation, different distance
                assert dang < 1.0 and abs(da - db) > 5
            else:  # same distance, different orientation
                assert abs(da - db) < 0.3 and dang > 5
        if feat == "linearity":
            def area(p):
                (x1, y1), (x2, y2), (x3, y3) = p
                return abs((x2 - x1) * (y3 - y1) - (x3 - x1) * (y2 - y1)) / 2
            assert area(a) < 1.5 * np.linalg.norm(a[0] - a[1]) * 0.1 + 1  # collinear (within 0.1 px of a line)
            assert area(b) > 50


# ------------------------------------------------------------------ amodal completion
def _footprint(kind, x, y, size, grow=1.5):
    r, c = np.mgrid[0:224, 0:224] + 0.5
    if kind == "circle":
        return (c - x) ** 2 + (r - y) ** 2 <= (size / 2 + grow) ** 2
    return (np.abs(c - x) <= size / 2 + grow) & (np.abs(r - y) <= size / 2 + grow)


def test_amodal_matched_sets_differ_only_where_manipulated(tmp_path):
    out, df = _gen(tmp_path, "amodal_completion", {"samples": 6})
    for sid, g in df.groupby("set_id"):
        assert sorted(g.condition) == ["notched", "occlusion", "unoccluded"]
        im = {r.condition: read_png(out / r.file_name).astype(int) for r in g.itertuples()}
        r = g.iloc[0]
        top = r.top_shape
        size = r.circle_diameter if top == "circle" else r.square_side
        near = _footprint(top, r.occluding_x, r.occluding_y, size)
        far = _footprint(top, *g[g.condition == "notched"][["occluder_x", "occluder_y"]].iloc[0], size)
        # notched vs unoccluded: identical outside the occluder's occluding footprint, and a notch inside it
        diff = (im["notched"] != im["unoccluded"]).any(-1)
        assert not diff[~near].any() and diff[near].sum() > 50
        # occlusion vs notched: the occluded shape's visible part is the same (outside both occluder places)
        diff = (im["occlusion"] != im["notched"]).any(-1)
        assert not diff[~(near | far)].any()
        # the occluder is whole in all three images (same count of its colour, up to its antialiased rim)
        colour = np.array([r.circle_r, r.circle_g, r.circle_b] if top == "circle"
                          else [r.square_r, r.square_g, r.square_b])
        counts = [(im[c] == colour).all(-1).sum() for c in ("occlusion", "notched", "unoccluded")]
        assert max(counts) - min(counts) <= 0.03 * max(counts)
        assert 0.1 < r.hidden_fraction < 0.4


# ------------------------------------------------------------------ decomposition
def test_decomposition_splits_measured(tmp_path):
    out, df = _gen(tmp_path, "decomposition", {"n_blobs": 3})
    assert len(df) == (36 + 9) * 3
    d = 60
    for sid, g in df.groupby("set_id"):
        im = {r.split: luminance(read_png(out / r.file_name)) / 255 for r in g.itertuples()}
        cx = int(np.floor(g.contact_x.iloc[0]))
        # the left shape: identical in the three images
        assert np.array_equal(im["no_split"][:, :cx - 1], im["natural"][:, :cx - 1])
        assert np.array_equal(im["no_split"][:, :cx - 1], im["unnatural"][:, :cx - 1])
        # natural split: the right shape moved by exactly d px
        assert np.array_equal(im["no_split"][:, cx + 2:224 - d], im["natural"][:, cx + 2 + d:])
        # the same silhouette area in all three (pixels of coverage)
        areas = [im[s].sum() for s in ("no_split", "natural", "unnatural")]
        assert max(areas) - min(areas) < 2.0, (sid, areas)
        # the unnatural split moved part of the right shape only: ink beyond the unsplit pair's extent
        right_edge = np.flatnonzero(im["no_split"].sum(0) > 0).max()
        assert im["unnatural"][:, right_edge + 2:].sum() > 20 and im["unnatural"][:, cx + 2:right_edge].sum() > 20


# ------------------------------------------------------------------ (un)crowding
def test_uncrowding_offset_direction_and_placement(tmp_path):
    out, df = _gen(tmp_path, "uncrowding", {"pattern_ids": [0, 3, 9, 30, 62, 68, 77, 90], "samples": 2})
    assert set(df.condition) == {"outside_left", "outside_right", "inside_left", "inside_right"}
    for r in df.itertuples():
        lum = luminance(read_png(out / r.file_name))
        h, off = r.bar_height, r.offset_px
        x0, y0 = int(np.floor(r.vernier_x - (2 + off) / 2)), int(np.floor(r.vernier_y - (2 * h + 1) / 2))
        box = lum[y0:y0 + 2 * h + 1, x0:x0 + 2 + off] > 0
        top, bottom = np.argwhere(box[:h]), np.argwhere(box[h + 1:])
        assert len(top) == h and len(bottom) == h  # two 1-px bars of height h (binary, as the original)
        shift = bottom[:, 1].mean() - top[:, 1].mean()  # > 0: the top bar is left of the bottom one
        assert shift == (off + 1 if r.offset_direction == "left" else -(off + 1))
        patch = (r.patch_x, r.patch_y, r.patch_x + r.patch_w, r.patch_y + r.patch_h)
        inside_patch = patch[0] <= r.vernier_x <= patch[2] and patch[1] <= r.vernier_y <= patch[3]
        if r.shape_code != "none":
            assert inside_patch == (r.vernier_position == "inside")
        assert set(np.unique(lum)) <= {0.0, 255.0}
    data = json.loads(open(tasks.stimuli.mindset.uncrowding.DATA).read())
    assert len(data["patterns"]) == 102 and data["patterns"][0] == [] and data["patterns"][26] == []
    assert max(len(p) for p in data["patterns"]) == 3 and max(len(r) for p in data["patterns"] for r in p) == 7


# ------------------------------------------------------------------ line figures
def test_depth_drawings_add_the_same_context_to_both(tmp_path):
    out, df = _gen(tmp_path, "depth_drawings", {})
    im = {(r.condition, r.member): luminance(read_png(out / r.file_name)) for r in df.itertuples()}
    for v in ("variation1", "variation2"):
        for m in "ab":
            assert (im[(v, m)] >= im[("basis", m)] - 1e-9).all()  # the base drawing is kept
        both_bg = (im[("basis", "a")] == 0) & (im[("basis", "b")] == 0)
        added_a = im[(v, "a")] - im[("basis", "a")]
        added_b = im[(v, "b")] - im[("basis", "b")]
        assert added_a.sum() > 1000 and np.array_equal(added_a[both_bg], added_b[both_bg])
    # variation 2 closes the junction's ends into a cube outline, variation 1 does not touch them
    lab2, n2 = ndimage.label(im[("variation2", "a")] > 0, np.ones((3, 3)))
    lab1, n1 = ndimage.label(im[("variation1", "a")] > 0, np.ones((3, 3)))
    assert n2 == 1 and n1 == 2


def test_relational_and_coordinate_changes_measured(tmp_path):
    out, df = _gen(tmp_path, "relational_vs_coordinate", {})
    for k, g in df.groupby("object"):
        im = {r.condition: luminance(read_png(out / r.file_name)) / 255 for r in g.itertuples()}
        dy = g.delta_y_px.iloc[0]
        diff = im["relation_change"] - im["basis"]
        cols = np.argwhere(np.abs(diff) > 0.02)[:, 1]
        assert np.ptp(cols) < 8  # only one vertical part changed
        col = np.bincount(cols).argmax()
        extent = {c: np.flatnonzero(im[c][:, col] > 0.5)[[0, -1]] for c in ("basis", "relation_change")}
        # the part (with the bar it meets) moved by delta: both ends of the column's ink move by delta
        assert (extent["relation_change"] - extent["basis"]) == pytest.approx([dy, dy], abs=1.0)
        # the bar (the longest horizontal run of ink) moves by delta in the coordinate change only
        bar_row = {c: np.argmax((im[c] > 0.5).sum(1)) for c in im}
        assert bar_row["relation_change"] == bar_row["basis"]
        assert bar_row["coordinate_change"] - bar_row["basis"] == pytest.approx(dy, abs=1.0)
        # the moved part ends where the relation change put it: identical pixels around its new place
        rel_new = np.abs(im["relation_change"] - im["basis"]) > 0.02
        assert np.abs(im["relation_change"][rel_new] - im["coordinate_change"][rel_new]).max() < 0.02 or \
            np.mean(np.abs(im["relation_change"][rel_new] - im["coordinate_change"][rel_new]) < 0.02) > 0.6


def _components(img):
    lab, n = ndimage.label(img > 0.25, np.ones((3, 3)))
    return [np.argwhere(lab == i + 1)[:, ::-1].astype(float) for i in range(n)]


def _axis(pts):
    c = pts.mean(0)
    w, v = np.linalg.eigh(np.cov((pts - c).T))
    return c, v[:, 1]


def test_nap_vs_mp_lines_measured(tmp_path):
    out, df = _gen(tmp_path, "nap_vs_mp_lines", {})
    assert (df[df.condition == "nap"].value == 0).all()
    for k, g in df.groupby("item"):
        ch = dict(zip(g.condition, g.change))
        assert ch["nap"] == ch["mp"] > 0 and ch["reference"] == 0
        im = {r.condition: luminance(read_png(out / r.file_name)) / 255 for r in g.itertuples()}
        fam, scale = g.family.iloc[0], g.scale_px_per_unit.iloc[0]
        ref = g[g.condition == "reference"].value.iloc[0]
        m = {}
        for c in ("nap", "reference", "mp"):
            comps = _components(im[c])
            if fam == "touch":
                m[c] = 0.0 if len(comps) == 1 else np.min(np.linalg.norm(comps[0][:, None] - comps[1][None], axis=-1))
            elif fam == "parallel":
                (_, u), (_, v) = (_axis(p) for p in comps)
                m[c] = np.degrees(np.arccos(min(abs(u @ v), 1.0)))
            elif fam == "collinear":
                (c0, u), (c1, _) = (_axis(p) for p in comps)
                m[c] = abs(u[0] * (c1 - c0)[1] - u[1] * (c1 - c0)[0])
            elif fam == "curvature":  # the ink's widest spread across its own axis, over both lines
                m[c] = max(np.ptp((p - _axis(p)[0]) @ np.array([-_axis(p)[1][1], _axis(p)[1][0]])) for p in comps)
            else:  # cross: the extension through line 1 adds its length × stroke width of ink
                m[c] = im[c].sum()
        if fam == "touch":
            assert m["nap"] == 0 and m["mp"] - m["reference"] == pytest.approx(ref * scale, abs=1.5)
        elif fam == "parallel":
            assert m["nap"] < 1.0 and m["reference"] == pytest.approx(ref, abs=1.0)
            assert m["mp"] == pytest.approx(2 * ref, abs=1.0)
        elif fam == "collinear":
            assert m["nap"] < 0.3 and m["reference"] == pytest.approx(ref * scale, abs=0.5)
            assert m["mp"] == pytest.approx(2 * ref * scale, abs=0.5)
        elif fam == "curvature":
            assert m["reference"] - m["nap"] == pytest.approx(ref * scale, abs=1.5)
            assert m["mp"] - m["nap"] == pytest.approx(2 * ref * scale, abs=2.0)
        else:
            assert m["reference"] - m["nap"] == pytest.approx(ref * scale * 3.0, rel=0.05)
            assert m["mp"] - m["nap"] == pytest.approx(2 * ref * scale * 3.0, rel=0.05)


def test_cross_field_errors_name_fields_and_write_nothing(tmp_path):
    cases = [("amodal_completion", {"min_size": 80.0, "max_size": 50.0}, "min_size=80.0 must be <= max_size=50.0"),
             ("amodal_completion", {"hidden": [0.5, 0.2]}, r"hidden=\(0.5, 0.2\): must be \[min, max\]"),
             ("decomposition", {"moving_distance": 150}, "shape_size=56.0 and moving_distance=150 need"),
             ("emergent_features", {"border": 100.0}, "border=100.0 and min_dot_distance=20.0 leave no room"),
             ("uncrowding", {"pattern_ids": [102]}, r"pattern_ids=102 is out of range \[0, 101\]"),
             ("nap_vs_mp_lines", {"object_longest_side": 230.0}, "exceeds canvas_size=224"),
             ("depth_drawings", {"stroke_color": [255, 255]}, "stroke_color=.*three whole numbers")]
    for name, params, msg in cases:
        with pytest.raises(ConfigError, match=msg):
            write_dataset(f"mindset/{name}", tmp_path / name, params, progress=False)
        assert not (tmp_path / name).exists()


# ------------------------------------------------------------------ NAP vs MP geons
def test_geons_equal_pixel_change_and_renderings(tmp_path):
    from tasks.stimuli.mindset.geons import DIMENSIONS

    out, df = _gen(tmp_path, "nap_vs_mp_geons", {"items": [1, 9]})
    assert len(df) == 2 * 3 * 3
    for idx, g in df.groupby("item"):
        dim = g.dimension.iloc[0]
        v = {r.role: r.value for r in g[g.rendering == "silhouette"].itertuples()}
        d = DIMENSIONS[dim]
        assert v["nap"] == d["nap"] and v["reference"] == d["reference"]
        # the MP value lies beyond the reference, on the side away from the singular value
        assert (v["mp"] - v["reference"]) * (v["reference"] - v["nap"]) > 0
        im = {(r.rendering, r.role): luminance(read_png(out / r.file_name)) / 255 for r in g.itertuples()}
        sil = {role: im[("silhouette", role)] for role in ("reference", "nap", "mp")}
        nap_change = np.abs(sil["nap"] - sil["reference"]).sum()
        mp_change = np.abs(sil["mp"] - sil["reference"]).sum()
        # measured from the PNGs: equal pixel magnitude (and as recorded)
        assert mp_change == pytest.approx(nap_change, rel=0.02) and nap_change > 300
        rec = dict(zip(g[g.rendering == "silhouette"].role, g[g.rendering == "silhouette"].pixel_change))
        assert rec["nap"] == pytest.approx(nap_change, rel=0.01) and rec["mp"] == pytest.approx(mp_change, rel=0.01)
        for role in ("reference", "nap", "mp"):
            s, sh, ol = sil[role], im[("shaded", role)], im[("outline", role)]
            assert np.array_equal(s > 0, sh > 0)  # shading fills exactly the silhouette
            inner = ndimage.binary_erosion(s > 0.99, iterations=3)
            assert len(np.unique(np.round(sh[inner] * 255))) >= 8  # shaded, not flat
            assert ((ol > 0) <= ndimage.binary_dilation(s > 0, iterations=2)).all()  # lines on the object
            assert 0.03 < (ol > 0.5).sum() / (s > 0.5).sum() < 0.25  # lines, not fills
            if g.cross_section.iloc[0] == "square":
                assert (ol[inner] > 0.5).sum() > 100  # the cuboid's inner edges are drawn
    # the straight-axis (NAP) silhouette is convex; the bent reference is not
    from skimage.morphology import convex_hull_image

    bent = df[(df.item == 1) & (df.rendering == "silhouette")]
    sol = {r.role: (m := luminance(read_png(out / r.file_name)) > 127).sum() / convex_hull_image(m).sum()
           for r in bent.itertuples()}
    # (a pixel mask's hull adds ~1 % at its boundary)
    assert sol["nap"] > 0.98 and sol["reference"] < sol["nap"] - 0.02 and sol["mp"] < sol["reference"]


def test_source_folder_of_original_images(tmp_path):
    """A user's copy of the original assets: <folder>/<condition>/<name>.png, matched by name, placed at the
    longest side; an unreadable file is a skipped row; a bad folder fails before anything is written."""
    from PIL import Image

    src = tmp_path / "src"
    for cond in ("reference", "NAP", "MP"):
        (src / cond).mkdir(parents=True)
        for k in range(2):
            a = np.zeros((40, 100, 3), np.uint8)
            a[5:35, 10:90] = 255
            Image.fromarray(a).save(src / cond / f"item{k}.png")
    (src / "MP" / "broken.png").write_bytes(b"not a png")
    out = write_dataset("mindset/nap_vs_mp_lines", tmp_path / "o", {"source": str(src)}, progress=False)
    assert schema_problems(out) == []
    df = pd.read_parquet(out / "annotations.parquet")
    made = df[df.file_name != ""]
    assert len(made) == 6 and set(made.set_id) == {"item0", "item1"} and (df.file_name == "").sum() == 1
    lum = luminance(read_png(out / made.file_name.iloc[0]))
    cols, rows = np.flatnonzero(lum.max(0) > 127), np.flatnonzero(lum.max(1) > 127)
    assert len(cols) == pytest.approx(200 * 80 / 100, abs=2) and len(rows) == pytest.approx(200 * 30 / 100, abs=2)
    g = write_dataset("mindset/nap_vs_mp_geons", tmp_path / "g", {"source": str(src), "renderings": ["silhouette"]},
                      progress=False)
    assert set(pd.read_parquet(g / "annotations.parquet").condition) == {"silhouette_reference", "silhouette_nap",
                                                                         "silhouette_mp"}
    (src / "extra").mkdir()
    (src / "extra" / "x.png").write_bytes((src / "NAP" / "item0.png").read_bytes())
    for params, msg in (({"source": str(tmp_path / "missing")}, "is not a folder"),
                        ({"source": str(src)}, r"subfolder\(s\) \['extra'\] are not conditions")):
        with pytest.raises(ConfigError, match=msg):
            write_dataset("mindset/nap_vs_mp_lines", tmp_path / "bad", params, progress=False)
        assert not (tmp_path / "bad").exists()
