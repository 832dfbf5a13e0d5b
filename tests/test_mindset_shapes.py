"""MindSet shape and object datasets (issue 14): the property each one claims, measured on its PNGs."""
import numpy as np
import pandas as pd
import pytest

import tasks.stimuli  # noqa: F401  (registers every generator)
from tasks.stimuli import ConfigError, write_dataset
from tasks.stimuli.mindset import common as C
from tasks.stimuli.registry import get_generator, make_config


def _ink(path) -> np.ndarray:
    """Ink coverage of a black-on-white PNG, float [H, W] in [0, 1]."""
    return 1 - C.luminance(C.read_png(path)) / 255


def _gen(tmp_path, name, sub="", **params):
    out = write_dataset(f"mindset/{name}", tmp_path / (name + sub), params, seed=3, progress=False)
    assert C.schema_problems(out) == []
    return out, pd.read_parquet(out / "annotations.parquet")


def test_line_drawings_and_silhouettes_labels_and_size(tmp_path):
    out, df = _gen(tmp_path, "silhouettes", categories=["bear", "knife"], instances=2, longest_side=150)
    assert list(df.class_name) == ["bear", "bear", "knife", "knife"] and list(df.condition) == list(df.class_name)
    assert list(df.imagenet_index) == [294, 294, 499, 499]
    assert df.imagenet_indices.iloc[0] == "294 295 296 297" and str(df.imagenet_index.dtype) == "int64"
    for f in df.file_name:
        rows, cols = np.nonzero(_ink(out / f) > 0.5)
        assert abs(max(np.ptp(rows), np.ptp(cols)) + 1 - 150) <= 1  # longest side in pixels
    assert "body_h=" in df.object_params.iloc[0]
    out2, df2 = _gen(tmp_path, "line_drawings", categories=["bear", "knife"], instances=2, longest_side=150)
    for f, g in zip(df.file_name, df2.file_name):
        sil, line = _ink(out / f) > 0.5, _ink(out2 / g)
        assert line[~sil].sum() < 0.6 * line.sum()  # lines sit on the object (outline half outside at most)
        assert line[sil].sum() > 0.5 * line.sum()


def test_dotted_drawings_dot_spacing(tmp_path):
    from scipy import ndimage

    out, df = _gen(tmp_path, "dotted_line_drawings", categories=["bicycle", "chair"], instances=1,
                   dot_distance=6.0, dot_radius=1.2)
    for f, n in zip(df.file_name, df.n_dots):
        ink = _ink(out / f)
        lab, k = ndimage.label(ink > 0.2)
        assert k == n, "every dot is its own blob"
        cy, cx = np.array(ndimage.center_of_mass(ink, lab, range(1, k + 1))).T
        d = np.hypot(cx[:, None] - cx[None], cy[:, None] - cy[None])
        np.fill_diagonal(d, np.inf)
        nn = d.min(1)
        assert nn.min() >= 6.0 - 0.5 and 5.5 <= np.median(nn) <= 7.5, (nn.min(), np.median(nn))


def test_segmented_halves_are_complementary_and_make_the_drawing(tmp_path):
    out, df = _gen(tmp_path, "segmented_line_drawings", categories=["cat", "oven"], instances=1)
    lines, dl = _gen(tmp_path, "line_drawings", categories=["cat", "oven"], instances=1)
    for sid, g in df.groupby("set_id"):
        a = _ink(out / g[g.condition == "del"].file_name.iloc[0])
        b = _ink(out / g[g.condition == "del_complement"].file_name.iloc[0])
        whole = _ink(lines / dl[dl.item_id == sid].file_name.iloc[0])
        assert (np.minimum(a, b) == 0).all(), "no pixel is in both halves"
        assert np.abs(a + b - whole).max() <= 1.5 / 255, "the union is the drawing"
        assert 0.2 < a.sum() / whole.sum() < 0.8  # both halves carry a real share


def test_global_change_keeps_pixel_mass(tmp_path):
    out, df = _gen(tmp_path, "global_change", categories=["elephant", "dog"], instances=2)
    for _, g in df.groupby("set_id"):
        ink = {c: _ink(out / f) for c, f in zip(g.condition, g.file_name)}
        mass = {c: v.sum() for c, v in ink.items()}
        assert set(mass) == {"whole", "fragmented", "frankenstein"}
        for c in ("fragmented", "frankenstein"):
            assert abs(mass[c] - mass["whole"]) <= 1e-3 * mass["whole"], (c, mass)
            assert np.abs(ink[c] - ink["whole"]).sum() > 0.05 * mass["whole"], f"{c} changes the shape"
    out2, df2 = _gen(tmp_path, "global_change", "_lines", categories=["bear"], instances=1, drawing="line", fragment_gap=20)
    m = {c: _ink(out2 / f).sum() for c, f in zip(df2.condition, df2.file_name)}
    assert abs(m["fragmented"] - m["whole"]) <= 1e-3 * m["whole"]


def test_viewpoint_sets_41_views_and_the_recorded_view_reproduces_the_image(tmp_path):
    gen = get_generator("mindset/viewpoint_invariance")
    cfg = make_config(gen, {"preset": "all_views"})
    items = list(gen.items(cfg, 0))
    assert len(items) == 8 * 10 * 41
    one = [it for it in items if it.set_id == "car_01"]
    assert len({(it.params["azimuth_deg"], it.params["inclination_deg"]) for it in one}) == 41
    out, df = _gen(tmp_path, "viewpoint_invariance", categories=["dog"], instances=1, drawing="silhouette",
                   min_inclination=0.0, max_inclination=0.0)  # ETH-80's horizontal ring: 16 views
    assert len(df) == 16 and sorted(df.azimuth_deg) == [0, 22, 45, 68, 90, 112, 135, 158, 180, 202, 225, 248, 270,
                                                        292, 315, 338]
    from render.drawing import View, buffers, silhouette
    from scenes.objects import build

    m = build("dog", 1, 3)
    for r in df.itertuples():
        ink = _ink(out / r.file_name)
        ref = silhouette(buffers(m.mesh, View(r.azimuth_deg, r.inclination_deg, 200, (224, 224)), 3))
        assert np.abs(ink - ref).max() <= 1 / 255 + 1e-6
    profiles = [(_ink(out / f) > 0.5) for f in df.file_name]
    assert min(np.mean(a != b) for a, b in zip(profiles, profiles[1:])) > 0.005  # views differ


@pytest.mark.parametrize("name,params,message", [
    ("line_drawings", {"longest_side": 300}, "longest_side=300 is out of range [16, canvas_size=224]"),
    ("silhouettes", {"categories": ["cat", "unicorn"]}, "categories='unicorn' is not allowed"),
    ("segmented_line_drawings", {"grid_thickness": 8}, "grid_thickness=8 is out of range [1, grid_size - 1 = 7]"),
    ("global_change", {"fragment_gap": 60}, "fragment_gap=60 is out of range [0,"),
    ("dotted_line_drawings", {"dot_distance": 1.0}, "dot_distance=1.0 is out of range [2.0, 100.0]"),
    ("viewpoint_invariance", {"min_inclination": 80.0, "max_inclination": 85.0}, "keep none of the view inclinations"),
    ("same_different", {"shape_size": 40.0}, "shape_size=40.0 is out of range [6, 32] for design='original'"),
    ("embedded_figures", {"shape_size": 200.0, "canvas_size": 150},
     "shape_size=200.0 is out of range [10, 146] for design='original' on canvas_size=150"),
])
def test_bad_input_fails_before_writing(tmp_path, name, params, message):
    with pytest.raises(ConfigError) as e:
        write_dataset(f"mindset/{name}", tmp_path / "x", params, progress=False)
    assert message in str(e.value)
    assert not (tmp_path / "x").exists()


def test_recorded_affine_reproduces_the_transformed_image(tmp_path):
    """Warp the untransformed drawing with the recorded forward matrix using scikit-image (not the
    generator's SciPy path): the PNG is reproduced; train and test rotations come from disjoint ranges."""
    from skimage.transform import AffineTransform, warp

    from tasks.stimuli.mindset._objects import object_alpha
    from tasks.stimuli.mindset.objects_transformations import recorded_matrix

    out, df = _gen(tmp_path, "transformations_2d", categories=["bicycle", "bird"], instances=1, samples=2,
                   train_shear=[-20.0, 20.0])
    cfg = make_config(get_generator("mindset/transformations_2d"), {})
    assert set(df.condition) == {"train", "test"}
    assert df[df.split == "train"].rotation.max() < 180 <= df[df.split == "test"].rotation.min()
    for r in df.itertuples():
        p = r._asdict()
        base = object_alpha(cfg, p, "line")
        M = recorded_matrix(p)
        # skimage: (x, y) = (col, row) with pixel centres at integers -> shift by 0.5 around the matrix
        shift = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]])
        fwd = shift @ M @ np.linalg.inv(shift)
        ref = warp(base.astype(np.float64), AffineTransform(matrix=fwd).inverse, order=1, mode="constant", cval=0)
        ink = _ink(out / r.file_name)
        assert np.abs(ink - ref).max() < 0.02 and abs(ink.sum() - ref.sum()) < 0.002 * ref.sum() + 1
        # the matrix is what the columns say: scale and rotation recovered from it
        s = np.sqrt(abs(np.linalg.det(M[:2, :2])))
        assert s == pytest.approx(r.scale, rel=1e-6)


def test_same_different_shapes_identical_iff_same(tmp_path):
    out, df = _gen(tmp_path, "same_different", preset="clean", samples=3)
    assert len(df) == 10 * 2 * 3 and set(df.type) == set(
        ["regular", "irregular", "open", "wider_line", "rnd_color", "filled", "open_squares", "rectangles",
         "straight_lines", "closed_squares"])
    for r in df.itertuples():
        img = C.read_png(out / r.file_name).astype(int)
        bg = np.array([r.background_r, r.background_g, r.background_b])
        h = r.half
        a = img[r.y1 - h:r.y1 + h, r.x1 - h:r.x1 + h]
        b = img[r.y2 - h:r.y2 + h, r.x2 - h:r.x2 + h]
        assert (a != bg).any() and (b != bg).any(), "both shapes are drawn inside their boxes"
        # everything drawn lies in the two boxes
        mask = np.zeros(img.shape[:2], bool)
        mask[r.y1 - h:r.y1 + h, r.x1 - h:r.x1 + h] = mask[r.y2 - h:r.y2 + h, r.x2 - h:r.x2 + h] = True
        assert (img[~mask] == bg).all()
        if r.same:
            assert np.array_equal(a, b), r.item_id
        else:
            assert np.abs(a - b).sum() > 255 * 20, r.item_id
    colours = df[df.type == "rnd_color"][["shape_r", "shape_g", "shape_b"]].drop_duplicates()
    assert len(colours) > 1


def test_same_pairs_sampled_once_equal_the_plain_twin():
    from tasks.stimuli.mindset.shapes_same_different import _render

    gen = get_generator("mindset/same_different")
    for params in ({"samples": 4}, {"samples": 3, "shape_size": 17.0, "line_width": 1.3, "canvas_size": 160},
                   {"samples": 2, "antialias": False}, {"preset": "clean", "samples": 4},
                   {"preset": "clean", "samples": 3, "shape_size": 23.5, "line_width": 1.3, "canvas_size": 80},
                   {"preset": "clean", "samples": 2, "antialias": False}):
        cfg = make_config(gen, dict(params))
        items = [it for it in gen.items(cfg, 5) if it.params["same"]]
        assert len(items) == 10 * params["samples"]
        for it in items:
            assert np.array_equal(_render(cfg, it)[0], _render(cfg, it, reuse=False)[0]), it.item_id


@pytest.mark.parametrize("preset", ["paper", "clean"])
def test_embedded_figure_contains_its_polygon_and_more(tmp_path, preset):
    out, df = _gen(tmp_path, "embedded_figures", preset=preset, samples=3)
    n_alone = 5 if preset == "paper" else 15  # paper: the fixed polygon once, as the original
    assert len(df) == n_alone + 15 and sorted(df.polygon_id.unique()) == [0, 1, 2, 3, 4]
    assert (df.condition == "polygon").sum() == n_alone
    for _, g in df.groupby("set_id"):
        alone = C.luminance(C.read_png(out / g[g.condition == "polygon"].file_name.iloc[0]))
        for f in g[g.condition == "embedded_polygon"].file_name:
            hidden = C.luminance(C.read_png(out / f))
            assert (hidden >= alone).all(), "the embedded image contains the polygon pixel for pixel"
            assert (hidden > 127).sum() > 2.5 * (alone > 127).sum(), "and much more ink (the context)"
        on = alone > 127
        assert on.sum() > 0 and not on[:2].any() and not on[-2:].any()  # the polygon lies inside the canvas


@pytest.mark.parametrize("texture", ["characters", "lines"])
def test_texture_fills_the_shape_and_nothing_else(tmp_path, texture):
    from scipy import ndimage

    out, df = _gen(tmp_path, "texturized_line_drawings", categories=["elephant", "oven"], instances=1, samples=1,
                   texture=texture)
    sil_out, sdf = _gen(tmp_path, "silhouettes", categories=["elephant", "oven"], instances=1)
    for r, f in zip(df.itertuples(), sdf.file_name):
        ink, sil = _ink(out / r.file_name), _ink(sil_out / f)
        assert (ink <= sil + 1.5 / 255).all(), "no texture outside the shape"
        inside = ndimage.binary_erosion(sil > 0.99, iterations=3)
        # texture everywhere inside: every 12x12 block fully inside the shape holds ink
        blocks = [(i, j) for i in range(0, 224, 12) for j in range(0, 224, 12) if inside[i:i + 12, j:j + 12].all()]
        assert len(blocks) > 5
        assert np.mean([ink[i:i + 12, j:j + 12].max() > 0.5 for i, j in blocks]) > 0.95
        assert 0.1 < ink[inside].mean() < 0.7, "a texture, not a fill"


@pytest.mark.parametrize("texture", ["characters", "lines"])
def test_fast_texture_equals_its_plain_twin_inside_the_shape(texture):
    """``texture_alpha`` renders only the elements that meet the shape (lines: in array passes); the plain
    twin renders every counted element one by one. Equal wherever the shape is, and the same annotations."""
    from tasks.stimuli.mindset.objects_texturized import (TexturizedConfig, blob_points, texture_alpha,
                                                          texture_alpha_reference)

    cfg = TexturizedConfig(texture=texture, line_length=9.0, texture_width=2.5)
    size = 96
    for k, where in enumerate([C.coverage(C.polygon(blob_points(k, k, 60, 40)), size)[0] for k in range(3)]):
        full = np.zeros((size, size), np.float32)
        full[:where.shape[0], :where.shape[1]] = where  # a blob near the top-left corner (elements fall off)
        for w in (full, None):
            a, ea = texture_alpha(cfg, size, C.item_rng(k, "t"), w)
            b, eb = texture_alpha_reference(cfg, size, C.item_rng(k, "t"), w)
            assert ea == eb
            m = np.ones_like(full) if w is None else full
            assert np.array_equal(a * m, b * m) and (a * m).sum() > 10


def test_batched_butt_segments_equal_coverage_of_each_segment():
    from tasks.stimuli.mindset.objects_texturized import butt_segments_coverage

    rng = np.random.default_rng(4)
    p0 = rng.uniform(-8, 72, (60, 2))
    p1 = p0 + rng.uniform(-15, 15, (60, 2))
    p1[3] = p0[3]  # zero length
    for width in (0.7, 1.5, 4.0):
        covs, boxes = butt_segments_coverage(p0, p1, width, 64)
        for a, b, cov, box in zip(p0, p1, covs, boxes):
            ref, (r0, c0) = C.coverage(C.segment(a, b, width, "butt"), 64)
            if ref.size == 0:
                assert box[1] <= box[0] or box[3] <= box[2]
                continue
            assert box[0] == r0 and box[2] == c0 and np.array_equal(cov, ref)


def test_texturized_blobs_share_their_blob(tmp_path):
    out, df = _gen(tmp_path, "texturized_blobs", n_blobs=3, samples=2)
    assert len(df) == 3 * 3
    for _, g in df.groupby("set_id"):
        blob = C.luminance(C.read_png(out / g[g.condition == "blob"].file_name.iloc[0])) / 255
        for f in g[g.condition == "texturized_blob"].file_name:
            tex = C.luminance(C.read_png(out / f)) / 255
            assert (tex <= blob + 1.5 / 255).all() and tex.sum() > 0.1 * blob.sum()
    blobs = [C.luminance(C.read_png(out / f)) > 127 for f in df[df.condition == "blob"].file_name]
    assert np.mean(blobs[0] != blobs[1]) > 0.01, "different blob ids are different shapes"


def test_leuven_context_contains_its_shape(tmp_path):
    out, df = _gen(tmp_path, "leuven_embedded_figures", n_shapes=4, contexts=2)
    assert len(df) == 4 * 3
    shapes = {}
    for _, g in df.groupby("set_id"):
        alone = C.luminance(C.read_png(out / g[g.condition == "shape"].file_name.iloc[0]))
        shapes[g.shape_id.iloc[0]] = alone > 127
        for f in g[g.condition == "context"].file_name:
            ctx = C.luminance(C.read_png(out / f))
            assert (ctx >= alone).all() and (ctx > 127).sum() > 1.5 * (alone > 127).sum()
    masks = list(shapes.values())
    assert all(np.mean(a != b) > 0.002 for i, a in enumerate(masks) for b in masks[i + 1:]), "distinct shapes"


# ---------------------------------------------------------------------------------------------------------------
# issue 32: the `paper` presets of embedded figures and same/different against the original generators
# (MindSetVision/mindset-vision, MIT; the scripts in ../shared/reference/mindset-original/). RECORDED figures were
# measured once by running the original's own `generate_all` at its committed defaults (embedded figures: all
# 505 images; same/different: 200 images per type and condition) in a throwaway environment outside the
# repository (the original's code unchanged; its `sty` and `toml` replaced by no-op stand-ins), measuring the
# PNGs with numpy: ink = sum of the brightest channel / 255.
RECORDED_EMBEDDED = {
    "embedded_ink": 0.1915,  # mean intensity / 255 of the 500 embedded images (per-image sd 0.011)
    "polygon_ink": (300.9, 283.1, 245.3, 265.2, 266.2),  # ink (px) of each polygon image, ids 0-4
    # the polygons' pixel vertices after the original's center_and_scale + np.round (PIL coordinates)
    "vertices": (((117, 112), (122, 125), (105, 134), (104, 121), (108, 108), (90, 90), (134, 90)),
                 ((126, 126), (107, 134), (90, 128), (110, 102), (114, 113), (128, 90), (134, 90)),
                 ((108, 110), (95, 134), (103, 108), (97, 107), (90, 96), (126, 90), (134, 103)),
                 ((124, 114), (120, 115), (134, 131), (132, 134), (90, 104), (100, 103), (101, 90)),
                 ((134, 131), (90, 134), (107, 115), (102, 114), (95, 90), (113, 113), (125, 114))),
}
RECORDED_SAME_DIFFERENT_INK = {  # mean ink (px) per image and type, 400 images each
    "closed_squares": 316.8, "filled": 1729.0, "irregular": 214.7, "open": 164.9, "open_squares": 241.1,
    "rectangles": 159.5, "regular": 197.4, "rnd_color": 159.6, "straight_lines": 36.1, "wider_line": 699.0}
# px between the two shapes' cores (pixels > 40): the smallest of 4,000 images, and the share of images below 6 px
RECORDED_SAME_DIFFERENT_GAP = {"min": 3.6, "below_6": 0.016}  # (> 40 there; here > 0.3 × the brightest pixel)


def _original_root():
    from tests.shared_data import shared_data

    root = shared_data().parent / "reference" / "mindset-original"
    if not (root / "src" / "utils" / "drawing_utils.py").is_file():
        pytest.skip(f"the original MindSet scripts are not at {root} (shared/reference): oracle part skipped")
    return root


@pytest.fixture
def original(monkeypatch):
    """The original generators' modules, imported from shared/reference with the parts of their environment
    that are absent here stood in for: ``sty``/``toml``/``tqdm`` when not installed, and ``src.utils.misc``
    (not in the reference folder) with what the two scripts use — their antialiasing is, as in the original,
    a PIL Gaussian blur of radius 0.00334 × the image's smaller side. Needs OpenCV and Pillow (skips without)."""
    import importlib
    import sys
    import types

    pytest.importorskip("cv2", reason="OpenCV (the original's drawing library; extra 'bench') is not installed")
    root = _original_root()
    from PIL import ImageFilter

    for name in ("sty", "toml", "tqdm"):
        try:
            importlib.import_module(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.__getattr__ = lambda attr: (lambda *a, **k: a[0] if a else None)
            monkeypatch.setitem(sys.modules, name, stub)
    misc = types.ModuleType("src.utils.misc")
    misc.DEFAULTS = {"canvas_size": [224, 224], "background_color": [0, 0, 0], "antialiasing": True,
                     "behaviour_if_present": "overwrite"}
    misc.apply_antialiasing = lambda img, amount=None: img.filter(
        ImageFilter.GaussianBlur(radius=min(img.size) * 0.00334 if amount is None else amount))
    misc.add_general_args = misc.delete_and_recreate_path = lambda *a, **k: None
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setitem(sys.modules, "src.utils.misc", misc)
    base = "src.generate_datasets.shape_and_object_recognition"
    mods = types.SimpleNamespace(root=root,
                                 embedded=importlib.import_module(f"{base}.embedded_figures.utils"),
                                 sd=importlib.import_module(f"{base}.same_different_task.generate_dataset"),
                                 sd_utils=importlib.import_module(f"{base}.same_different_task.utils"))
    yield mods
    for name in set(sys.modules) - before:
        if name == "src" or name.startswith("src."):
            del sys.modules[name]


@pytest.fixture
def seeded_globals():
    """Seed the global ``random`` and ``np.random`` the original draws from; restore them afterwards."""
    import random

    state, np_state = random.getstate(), np.random.get_state()
    random.seed(0)
    np.random.seed(0)
    yield
    random.setstate(state)
    np.random.set_state(np_state)


def _original_polys(root):
    """The ``polys`` list of the original's embedded-figures script, read from its source (importing the script
    would import torchvision)."""
    import ast

    src = (root / "src/generate_datasets/shape_and_object_recognition/embedded_figures/generate_dataset.py")
    for node in ast.parse(src.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "polys":
            return ast.literal_eval(node.value)
    raise AssertionError("polys not found in the original script")


def _edge_lines_reach_the_border(img, verts, size=224):
    """Fraction of points along each polygon edge's whole line inside the canvas (2 px from the border) that
    carry ink (> 1/2)."""
    from tasks.stimuli.mindset.shapes_embedded import pil_offsets

    ink = C.luminance(img) / 255
    hits = []
    for a, b in zip(verts, np.roll(verts, -1, axis=0)):
        a, b = np.array([a, b]) + pil_offsets(np.array([[a, b]]), 1.75)[0]
        d = (b - a) / np.linalg.norm(b - a)
        t = np.arange(-400, 400, 0.5)
        pts = a + t[:, None] * d
        pts = pts[((pts > 2) & (pts < size - 2)).all(1)]
        hits.append(ink[pts[:, 1].astype(int), pts[:, 0].astype(int)] > 0.5)
    return [h.mean() for h in hits]


def test_embedded_paper_is_the_originals_design(tmp_path):
    """Counts 5 + 500 (one polygon image each), the original's five polygons at its pixel vertices (recorded),
    every polygon edge running across the whole canvas in the embedded images, the embedded images' ink and the
    polygons' stroke ink as recorded from the original."""
    from tasks.stimuli.mindset.shapes_embedded import original_vertices

    gen = get_generator("mindset/embedded_figures")
    cfg = make_config(gen, {"preset": "paper"})
    items = list(gen.items(cfg, 0))
    counts = pd.Series([(it.condition, it.params["polygon_id"]) for it in items]).value_counts()
    assert len(items) == 505 and all(counts[("polygon", k)] == 1 and counts[("embedded_polygon", k)] == 100
                                     for k in range(5))
    for pid, want in enumerate(RECORDED_EMBEDDED["vertices"]):
        assert original_vertices(pid, 45.0, 224).tolist() == [list(v) for v in want]

    out, df = _gen(tmp_path, "embedded_figures", preset="paper", samples=12)
    ink = {(r.condition, r.polygon_id, r.sample): C.luminance(C.read_png(out / r.file_name)) / 255
           for r in df.itertuples()}
    embedded = np.mean([v.mean() for (c, *_), v in ink.items() if c == "embedded_polygon"])
    assert embedded == pytest.approx(RECORDED_EMBEDDED["embedded_ink"], rel=0.05), embedded
    for pid, want in enumerate(RECORDED_EMBEDDED["polygon_ink"]):
        alone = ink[("polygon", pid, 0)]
        assert alone.sum() == pytest.approx(want, rel=0.12), (pid, alone.sum())  # stroke ink per length
        rows, cols = np.nonzero(alone > 0.5)
        assert abs((rows.min() + rows.max()) / 2 - 111.5) <= 1.5 and abs((cols.min() + cols.max()) / 2 - 111.5) <= 1.5
        assert 44 <= np.ptp(rows) <= 48 and 44 <= np.ptp(cols) <= 48  # 45 px per axis (+ stroke)
        verts = original_vertices(pid, 45.0, 224).astype(float)
        for k in range(3):  # each of the 7 edges is a line across the canvas (camouflage by continuation)
            assert min(_edge_lines_reach_the_border(ink[("embedded_polygon", pid, k)] * 255, verts)) > 0.97
    clean, dfc = _gen(tmp_path, "embedded_figures", "_clean", preset="clean", samples=4)
    clean_ink = np.mean([C.luminance(C.read_png(clean / f)).mean() / 255
                         for f in dfc[dfc.condition == "embedded_polygon"].file_name])
    assert clean_ink < 0.5 * embedded  # the clean design is the easy one (~0.05)


def test_embedded_paper_against_the_original_generator(original, seeded_globals):
    """The oracle: the original's polygons (read from its source) are Vantage's; its center_and_scale gives
    Vantage's vertices; the ink of its own embedded images (drawn here by its DrawEmbeddedFigures) and of its
    polygon images equals Vantage's within the stroke's slope dependence."""
    from tasks.stimuli.mindset.shapes_embedded import ORIGINAL_POLYGONS, original_vertices

    polys = _original_polys(original.root)
    assert len(polys) == 5
    for pid, p in enumerate(polys):
        assert p[-1] == p[0] and np.allclose(p[:-1], ORIGINAL_POLYGONS[pid], rtol=0, atol=1e-12)
        scaled = original.embedded.center_and_scale(p, (224, 224), 45)
        assert np.round(np.array(scaled)).astype(int)[:-1].tolist() == original_vertices(pid, 45.0, 224).tolist()
    ds = original.embedded.DrawEmbeddedFigures(shape_size=45, canvas_size=[224, 224], background=[0, 0, 0],
                                               antialiasing=True)
    theirs = np.mean([np.asarray(ds.draw_shape(polys[k % 5], extend_lines=True, num_shift_lines=10,
                                               num_rnd_lines=10).convert("L"), float).mean() / 255
                      for k in range(30)])
    gen = get_generator("mindset/embedded_figures")
    cfg = make_config(gen, {"preset": "paper", "samples": 6})
    items = list(gen.items(cfg, 0))
    ours = np.mean([gen.render(cfg, it)[0].max(-1).mean() / 255 for it in items if it.condition != "polygon"])
    assert ours == pytest.approx(theirs, rel=0.08), (ours, theirs)
    for it in (it for it in items if it.condition == "polygon"):
        mine = gen.render(cfg, it)[0].max(-1) > 127
        their = np.asarray(ds.draw_shape(polys[it.params["polygon_id"]], extend_lines=False, num_shift_lines=0,
                                         num_rnd_lines=0).convert("L")) > 127
        from scipy import ndimage

        # the same outline, to a pixel: each one's ink lies within 1 px of the other's
        assert (mine & ~ndimage.binary_dilation(their)).sum() <= 0.02 * mine.sum()
        assert (their & ~ndimage.binary_dilation(mine)).sum() <= 0.02 * their.sum()


def _two_parts(img, threshold=0.0):
    """(number of 8-connected blobs of the brightest channel > ``threshold``, and the two blobs as crops of
    the brightest channel (float), in reading order of their top-left corners)."""
    from scipy import ndimage

    g = img.max(-1).astype(float)
    lab, n = ndimage.label(g > threshold, structure=np.ones((3, 3)))
    boxes = ndimage.find_objects(lab)
    crops = [np.where(lab[b] == i + 1, g[b], 0.0) for i, b in enumerate(boxes)]
    return n, crops, lab


def _core_gap(lab, g):
    """Smallest distance (px) between the cores (> 0.3 × the brightest pixel) of blobs 1 and 2."""
    from scipy import ndimage

    core = g > 0.3 * g.max()
    a, b = core & (lab == 1), core & (lab == 2)
    return float(ndimage.distance_transform_edt(~a)[b].min())


def _strong(crop):
    """The crop cut to its strong part's box (> half its maximum): blur halos and the canvas edge aside."""
    r, c = np.nonzero(crop > crop.max() / 2)
    return crop[r.min():r.max() + 1, c.min():c.max() + 1]


def _box(crop):
    """(height, width) of the crop's strong part (> half its maximum)."""
    r, c = np.nonzero(crop > crop.max() / 2)
    return int(np.ptp(r)) + 1, int(np.ptp(c)) + 1


def _orientation(crop):
    """Principal-axis angle of the crop's ink, degrees in [0, 180) (y down: 45 = to the lower right)."""
    r, c = np.nonzero(crop > 0)
    w = crop[r, c]
    cov = np.cov(np.stack([c, r]), aweights=w)
    v = np.linalg.eigh(cov)[1][:, -1]
    return float(np.degrees(np.arctan2(v[1], v[0])) % 180)


def _pair_relation(kind, same, img, threshold):
    """What a person checks in one same/different image, measured from pixels: two separate shapes; a
    ``same`` pair identical; per type, the relation a ``diff`` pair has. Returns the measurements. Vantage's
    images (``threshold`` 0) are compared pixel for pixel; the original's blurred ones (its own blob threshold,
    2) by their strong pixels (> half the maximum), as the canvas edge changes the blur of a shape touching it."""
    n, parts, lab = _two_parts(img, threshold)
    assert n == 2, (kind, n)
    a, b = (_strong(x) for x in parts)
    g = img.max(-1).astype(float)
    m = {"gap": _core_gap(lab, g), "ink": g.sum() / 255}

    def equal(x, y):
        if x.shape != y.shape:
            return False
        if threshold == 0:
            return bool(np.array_equal(x, y))
        return bool(np.mean((x > x.max() / 2) != (y > y.max() / 2)) < 0.01)

    if same:
        assert equal(a, b), kind
    if kind in ("open_squares", "closed_squares"):
        assert _box(a) == _box(b) == (41, 41)  # two squares of side 20, 1 px strokes
        assert equal(np.flipud(a), b) != same, "diff = the mirror image (and not the same)"
        assert same or not equal(a, b)
    if kind == "rectangles":
        boxes = sorted([_box(a), _box(b)], key=lambda hw: hw != (21, 21))
        assert boxes[0] == (21, 21)  # the first is always the 20 x 20 square
        m["second"] = boxes[1]
    if kind == "straight_lines":
        m["orientations"] = tuple(sorted(round(_orientation(x) / 45) % 4 * 45 for x in (a, b)))
        assert (m["orientations"][0] == m["orientations"][1]) == same
    return m


def _check_families(kind, ms, same_flags):
    if kind == "rectangles":
        seconds = {m["second"] for m, s in zip(ms, same_flags) if not s}
        assert seconds <= {(21, 11), (21, 31), (11, 21), (31, 21)} and len(seconds) >= 3, seconds
    if kind == "straight_lines":
        assert {o for m in ms for o in m["orientations"]} == {0, 45, 90, 135}


def test_same_different_paper_shape_families():
    """The original's shape family per type, from the recorded geometry of 100 pairs per type and condition:
    3-7-gons (a diff pair never has the same count), regular vertices on the radius, irregular ones moved
    along the diagonal only, the 4 line orientations, the rectangles' ±50 % side, 1 px strokes (3 wider)."""
    from tasks.stimuli.mindset.shapes_same_different import (POLYGON_TYPES, original_columns, original_geometry,
                                                             regular_offsets)

    gen = get_generator("mindset/same_different")
    cfg = make_config(gen, {"preset": "paper", "samples": 100})
    items = list(gen.items(cfg, 1))
    pairs = [original_geometry(cfg, it.params) for it in items]
    df = pd.DataFrame([{**it.params, **original_columns(*pair), "condition": it.condition}
                       for it, pair in zip(items, pairs)])
    assert (df.condition.value_counts() == 100).all() and len(df) == 2000
    assert make_config(gen, {"preset": "paper"}).samples * 20 == 100_000  # the original's count
    for t in POLYGON_TYPES:
        g = df[df.type == t]
        assert set(g.n_vertices_1) == {3, 4, 5, 6, 7}
        assert (g[g.same].n_vertices_1 == g[g.same].n_vertices_2).all()
        assert (g[~g.same].n_vertices_1 != g[~g.same].n_vertices_2).all(), "diff = another vertex count"
        assert set(g.line_width) == {3.0 if t == "wider_line" else 1.0}
        assert g.x1.between(30, 193).all() and g.y2.between(30, 193).all()
    for it, (a, b, *_) in zip(items, pairs):
        t = it.params["type"]
        if it.params["same"]:
            assert a is b or np.array_equal(a["points"], b["points"])
        if t == "regular":
            want = regular_offsets(len(a["points"]), a["rotation"], 20.0)
            assert np.array_equal(a["points"], want)
            assert np.all(np.hypot(*want.T) <= 20) and np.all(np.hypot(*want.T) > 20 - 1.5)
        if t in ("irregular", "open", "filled", "rnd_color", "wider_line"):
            base = regular_offsets(len(a["points"]), a["rotation"], 20.0)
            # moved along the diagonal only: x - y is the regular polygon's, x + y within ±2·10
            assert sorted(np.diff(a["points"], axis=1).ravel()) == sorted(np.diff(base, axis=1).ravel())
            assert np.abs(a["points"].sum(1)).max() <= np.abs(base.sum(1)).max() + 20
        if t == "straight_lines":
            assert {a["rotation"], b["rotation"]} <= {0, 45, 90, 135}
        if t in ("open_squares", "closed_squares"):
            assert a["points"].tolist() == [[0, 20], [0, 0], [20, 0], [20, 20], [20, 40], [40, 40], [40, 20]]
            if not it.params["same"]:
                assert b["points"].tolist() == [[x, 40 - y] for x, y in a["points"].tolist()]
    g = df[df.type == "rectangles"]
    assert ((g.box_w_1 == 20) & (g.box_h_1 == 20)).all()
    sides = set(zip(g[~g.same].box_w_2, g[~g.same].box_h_2))
    assert sides == {(10, 20), (30, 20), (20, 10), (20, 30)}
    assert set(df[df.type == "straight_lines"].rotation_1) == {0, 45, 90, 135}


def test_same_different_paper_pixels_as_recorded():
    """Measured from rendered images (50 per type): two separate shapes, identical iff same, the squares'
    mirror, the rectangles' changed side, line orientations, stroke width 1 px (a 20 x 20 outline carries 80
    px of ink), the gap between the shapes and the ink per type as recorded from the original."""
    gen = get_generator("mindset/same_different")
    cfg = make_config(gen, {"preset": "paper", "samples": 25})
    by_type = {}
    for it in gen.items(cfg, 2):
        img = gen.render(cfg, it)[0]
        m = _pair_relation(it.params["type"], it.params["same"], img, 0.0)
        by_type.setdefault(it.params["type"], []).append((m, it.params["same"]))
        if it.params["type"] == "rectangles" and it.params["same"]:
            assert m["ink"] == pytest.approx(160, abs=0.5)  # two 1 px outlines of 21 x 21 pixels, 80 px each
    gaps = []
    for t, rows in by_type.items():
        ms, flags = zip(*rows)
        _check_families(t, ms, flags)
        ink = np.mean([m["ink"] for m in ms])
        assert ink == pytest.approx(RECORDED_SAME_DIFFERENT_INK[t], rel=0.08), (t, ink)
        gaps += [m["gap"] for m in ms]
    # Vantage keeps every pair >= 6 px apart (GAP), where the original lets 1.6 % come closer (down to 3.6 px):
    # the one knowing deviation here; the closest pairs are as close as that rule allows
    assert RECORDED_SAME_DIFFERENT_GAP["below_6"] < 0.02 and 5.5 <= min(gaps) <= 7


def test_same_different_paper_against_the_original_generator(original, seeded_globals):
    """The oracle: the original's own point generators equal Vantage's (regular polygons for every side count
    and rotation, the 4 lines); its images (drawn here by its DrawSameDifferentStimuli, redrawn while its
    is_overlapping says so) show the same relations as Vantage's test checks, and the ink per type recorded
    from it; and every Vantage image, blurred as the original antialiases, passes the original's own overlap
    test."""
    import math

    from PIL import Image

    from tasks.stimuli.mindset.shapes_same_different import TYPES, line_offsets, regular_offsets

    u = original.sd_utils
    for n in range(3, 8):
        for rot in range(0, 361, 7):
            want = np.array(u.regular_polygon(n, 20, math.radians(rot))[1])
            assert np.array_equal(regular_offsets(n, rot, 20.0), want), (n, rot)
    for o in (0, 45, 90, 135):
        assert line_offsets(20.0, o).tolist() == [list(p) for p in u.get_line_points(20, o, (0, 0))]
    sd = original.sd
    ds = sd.DrawSameDifferentStimuli(background=[0, 0, 0], canvas_size=[224, 224], antialiasing=True)
    funs = {"regular": sd.get_regular, "irregular": sd.get_irregular_polygon, "open": sd.get_open,
            "wider_line": sd.get_wider_line, "rnd_color": sd.get_rnd_color, "filled": sd.get_filled,
            "open_squares": sd.get_open_squares, "rectangles": sd.get_rectangles,
            "straight_lines": sd.get_straight_lines, "closed_squares": sd.get_closed_squares}
    assert tuple(funs) == TYPES
    gen = get_generator("mindset/same_different")
    cfg = make_config(gen, {"preset": "paper", "samples": 10})
    for it in gen.items(cfg, 3):
        img = gen.render(cfg, it)[0]
        blurred = np.asarray(original.embedded.apply_antialiasing(Image.fromarray(img)))
        assert not sd.is_overlapping(blurred, (0, 0, 0)), it.item_id
    for t, fun in funs.items():
        rows = []
        for k in range(15):
            for same in (True, False):
                args = {"label": int(same), "size1": 20}
                if t not in ("open_squares", "closed_squares", "rectangles"):
                    args["size2"] = 20
                while True:
                    img = np.asarray(fun(ds, **args))
                    if not sd.is_overlapping(img, ds.background):
                        break
                rows.append((_pair_relation(t, same, img, 2.0), same))
        ms, flags = zip(*rows)
        _check_families(t, ms, flags)
        theirs = np.mean([m["ink"] for m in ms])  # the recorded figures are the live original's
        assert theirs == pytest.approx(RECORDED_SAME_DIFFERENT_INK[t], rel=0.12), (t, theirs)


def test_strokes_coverage_equals_the_union_of_segments():
    """The band-sampled coverage of many strokes equals plain coverage of their union, for every cap, thin and
    wide strokes, dots, axis-parallel, steep and shallow lines, lines far beyond the canvas, binary sampling."""
    rng = np.random.default_rng(1)
    for cap in ("butt", "round", "square"):
        for w in (0.7, 1.0, 1.75, 3.3):
            for aa in (True, False):
                segs = rng.uniform(-60, 120, (12, 2, 2))
                segs[0, 1] = segs[0, 0]  # a dot
                segs[1, 1, 0] = segs[1, 0, 0]  # vertical
                segs[2, 1, 1] = segs[2, 0, 1]  # horizontal
                segs[3] = [[-5000, 10.3], [6000, 70.9]]  # far beyond the canvas
                fast = C.strokes_coverage(segs, w, 64, cap, aa)
                ref = np.zeros((64, 64), np.float32)
                cov, (r0, c0) = C.coverage(C.union(*(C.segment(a, b, w, cap) for a, b in segs)), 64, aa)
                ref[r0:r0 + cov.shape[0], c0:c0 + cov.shape[1]] = cov
                assert np.array_equal(fast, ref) and fast.sum() > 50, (cap, w, aa)


def test_same_different_apart_is_the_geometry():
    """``apart``'s segment distance against dense sampling of the segments, and the containment rule."""
    from tasks.stimuli.mindset.shapes_same_different import _segments_distance, _spec, apart

    rng = np.random.default_rng(2)
    for _ in range(60):
        a, b = rng.uniform(0, 30, (3, 2, 2)), rng.uniform(0, 30, (2, 2, 2))
        t = np.linspace(0, 1, 200)[:, None]
        pa = np.concatenate([s[0] + t * (s[1] - s[0]) for s in a])
        pb = np.concatenate([s[0] + t * (s[1] - s[0]) for s in b])
        dense = np.sqrt(((pa[:, None] - pb[None]) ** 2).sum(-1)).min()
        assert _segments_distance(a, b) == pytest.approx(dense, abs=0.15)
    big = _spec([(0, 0), (60, 0), (60, 60), (0, 60)], True, False, 1.0, "square")
    small = _spec([(0, 0), (10, 0), (10, 10), (0, 10)], True, False, 1.0, "square")
    assert not apart(big, small, (0, 0), (20, 20)), "inside the other's outline"
    assert apart(big, small, (0, 0), (66, 20)) and not apart(big, small, (0, 0), (62, 20))
