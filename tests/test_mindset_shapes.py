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
    cfg = make_config(gen, {"preset": "paper"})
    items = list(gen.items(cfg, 0))
    assert len(items) == 8 * 10 * 41
    one = [it for it in items if it.set_id == "car_01"]
    assert len({(it.params["azimuth_deg"], it.params["inclination_deg"]) for it in one}) == 41
    out, df = _gen(tmp_path, "viewpoint_invariance", categories=["dog"], instances=1, drawing="silhouette",
                   min_inclination=22.5, max_inclination=22.5)
    assert len(df) == 10 and sorted(df.azimuth_deg) == [36.0 * k for k in range(10)]
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
    out, df = _gen(tmp_path, "same_different", samples=3)
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
    for params in ({"samples": 4}, {"samples": 3, "shape_size": 23.5, "line_width": 1.3, "canvas_size": 80},
                   {"samples": 2, "antialias": False}):
        cfg = make_config(gen, params)
        items = [it for it in gen.items(cfg, 5) if it.params["same"]]
        assert len(items) == 10 * params["samples"]
        for it in items:
            assert np.array_equal(_render(cfg, it)[0], _render(cfg, it, reuse=False)[0]), it.item_id


def test_embedded_figure_contains_its_polygon_and_more(tmp_path):
    out, df = _gen(tmp_path, "embedded_figures", samples=3)
    assert len(df) == 5 * 3 * 2 and sorted(df.polygon_id.unique()) == [0, 1, 2, 3, 4]
    for _, g in df.groupby("set_id"):
        alone = C.luminance(C.read_png(out / g[g.condition == "polygon"].file_name.iloc[0]))
        hidden = C.luminance(C.read_png(out / g[g.condition == "embedded_polygon"].file_name.iloc[0]))
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
