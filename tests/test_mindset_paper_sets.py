"""The `paper` designs issue 32 brought to the original's counts, each measured: the 36 library objects that
stand in for Baker et al.'s 36 drawings (and the datasets built on them), ETH-80's views with the original's
``inclination_lim = [30, 90]``, and the Adelson arrow grid of the original (44 × 44, the arrow cut by the top
edge in the first rows)."""
import collections

import numpy as np
import pandas as pd
import pytest

import tasks.stimuli  # noqa: F401  (registers every generator)
from tasks.stimuli import write_dataset
from tasks.stimuli.mindset import common as C
from tasks.stimuli.mindset._objects import BAKER36, BAKER36_ANIMALS, object_list
from tasks.stimuli.registry import get_generator, make_config

# Baker et al.'s (2018) 36 drawings (MindSet's assets/baker_2018_linedrawings): 19 animal and 17 object classes
BAKER_ANIMALS, BAKER_OBJECTS = 19, 17
LIBRARY_ANIMALS = {"bear", "bird", "bunny", "cat", "dog", "elephant", "frog", "lizard", "tiger", "turtle", "wolf"}


def test_baker36_is_19_animals_and_17_objects_each_of_an_imagenet_class_every_such_category_once():
    from scenes.objects import category_names, imagenet_table

    assert len(BAKER36) == 36 and len(set(BAKER36)) == 36
    animals, objects = BAKER36[:BAKER36_ANIMALS], BAKER36[BAKER36_ANIMALS:]
    assert (len(animals), len(objects)) == (BAKER_ANIMALS, BAKER_OBJECTS)
    assert {c for c, _ in animals} == LIBRARY_ANIMALS, "every library animal, and only animals, in the first 19"
    assert not {c for c, _ in objects} & LIBRARY_ANIMALS
    table = imagenet_table("all")
    assert all(table[c] for c, _ in BAKER36), "every object is of an ImageNet-1k class, as Baker's 36"
    with_class = {c for c in category_names() if table.get(c)}
    assert {c for c, _ in BAKER36} == with_class, "every library category with an ImageNet class is in the set"
    for c in {c for c, _ in BAKER36}:  # instances of one category are 1..n
        assert sorted(i for cc, i in BAKER36 if cc == c) == list(range(1, 1 + sum(cc == c for cc, _ in BAKER36)))


PAPER_36 = [("line_drawings", "paper"), ("silhouettes", "paper"), ("dotted_line_drawings", "paper"),
            ("segmented_line_drawings", "paper"), ("transformations_2d", "paper"), ("global_change", "paper"),
            ("texturized_line_drawings", "paper"), ("texturized_line_drawings", "lines")]


@pytest.mark.parametrize("name,preset", PAPER_36)
def test_paper_presets_draw_the_36_objects_and_keep_the_16_class_design_as_imagenet16(name, preset):
    gen = get_generator(f"mindset/{name}")
    cfg = make_config(gen, {"preset": preset})
    assert object_list(cfg) == list(BAKER36)
    if name == "transformations_2d":  # the original's 50 draws over 0-360° = 25 in each half-turn
        assert cfg.samples == 25 and (cfg.train_rotation, cfg.test_rotation) == ((0.0, 180.0), (180.0, 360.0))
        assert cfg.train_scale == cfg.test_scale == (0.5, 0.9)
        assert cfg.train_translation_x == cfg.test_translation_y == (-0.2, 0.2)
    if name == "texturized_line_drawings":
        assert cfg.samples == 500  # the original's num_samples per drawing
    c16 = make_config(gen, {"preset": "imagenet16"})  # the 16-class ImageNet (OOD) design
    assert len(object_list(c16)) == 80 and {c for c, _ in object_list(c16)} == set(c16.categories)
    assert len(c16.categories) == 16


@pytest.mark.slow
@pytest.mark.parametrize("name,per_object", [
    ("segmented_line_drawings", {"del": 1, "del_complement": 1}),
    ("transformations_2d", {"train": 25, "test": 25}),
    ("global_change", {"whole": 1, "fragmented": 1, "frankenstein": 1}),
    ("texturized_line_drawings", None),
])
def test_paper_counts_per_object_and_condition_are_the_originals(name, per_object):
    """Per object as the original per drawing: two halves, 50 transformations, three global-change
    conditions, 500 texturized samples (condition = the category there)."""
    gen = get_generator(f"mindset/{name}")
    items = list(gen.items(make_config(gen, {"preset": "paper"}), 0))
    by_object = collections.defaultdict(collections.Counter)
    for it in items:
        by_object[(it.params["class_name"], it.params["instance"])][it.condition] += 1
    assert list(by_object) == list(BAKER36)
    for (c, _), counts in by_object.items():
        assert counts == (per_object or {c: 500}), (name, c, counts)


@pytest.mark.slow
def test_paper_line_drawings_are_the_36_objects_at_longest_side_200(tmp_path):
    out = write_dataset("mindset/line_drawings", tmp_path / "l", {"preset": "paper"}, seed=0, progress=False)
    df = pd.read_parquet(out / "annotations.parquet")
    assert C.schema_problems(out) == []
    assert list(zip(df.class_name, df.instance)) == list(BAKER36)
    assert collections.Counter(df.condition) == collections.Counter(c for c, _ in BAKER36)
    assert (df.background_r == 0).all() and (df.background_b == 0).all()
    inks = []
    for f in df.file_name:
        ink = C.luminance(C.read_png(out / f)) / 255  # white on black, as the original's defaults
        rows, cols = np.nonzero(ink > 0.5)
        assert abs(max(np.ptp(rows), np.ptp(cols)) + 1 - 200) <= 3, f  # longest side, 2 px strokes included
        inks.append(ink)
    # 36 different pictures (two instances of one category differ too)
    diffs = [np.abs(a - b).mean() for k, a in enumerate(inks) for b in inks[k + 1:]]
    assert min(diffs) > 0.002


# ---------------------------------------------------------------------------------------------- viewpoint
def test_viewpoint_views_are_eth80s_41_and_paper_keeps_the_originals_36():
    from tasks.stimuli.mindset.objects_viewpoint import eth80_views, views

    v = eth80_views()
    assert len(v) == len(set(v)) == 41
    rings = collections.Counter(round(90 - inc) for _, inc in v)  # ETH-80's inclination, 0 = from above
    assert rings == {0: 1, 22: 4, 35: 4, 45: 4, 66: 8, 68: 4, 90: 16}
    gen = get_generator("mindset/viewpoint_invariance")
    cfg = make_config(gen, {"preset": "paper"})
    kept = views(cfg)
    # the original: keep ETH-80 inclinations in [30, 90]
    assert kept == [(a, i) for a, i in v if 30 <= 90 - i <= 90] and len(kept) == 36
    assert len(views(make_config(gen, {"preset": "all_views"}))) == 41


@pytest.mark.slow
def test_viewpoint_paper_has_2880_images_36_per_object_with_eth80_columns():
    gen = get_generator("mindset/viewpoint_invariance")
    items = list(gen.items(make_config(gen, {"preset": "paper"}), 0))
    assert len(items) == 2880
    per_object = collections.Counter(it.set_id for it in items)
    assert len(per_object) == 80 and set(per_object.values()) == {36}
    assert collections.Counter(it.condition for it in items) == {c: 360 for c in (
        "car", "dog", "cat", "elephant", "bottle", "chair", "truck", "bird")}
    for it in items[:36]:
        p = it.params
        assert 30 <= p["eth80_inclination"] <= 90 and p["eth80_inclination"] == round(90 - p["inclination_deg"])
        assert p["eth80_azimuth"] == round(p["azimuth_deg"])


# ---------------------------------------------------------------------------------------------- Adelson
def test_adelson_paper_targets_are_the_originals_44_by_44_grid():
    gen = get_generator("mindset/adelson_checker_shadow")
    items = list(gen.items(make_config(gen, {"preset": "paper"}), 0))
    assert len(items) == 44 * 44 == 1936
    pos = [(it.params["target_y"], it.params["target_x"]) for it in items]
    grid = list(range(5, 224, 5))  # the original: range(steps_arrow, width, steps_arrow)
    assert sorted(pos) == [(y, x) for y in grid for x in grid]
    counts = collections.Counter(it.condition for it in items)
    assert counts["target_a"] > 10 and counts["target_b"] > 10, counts  # the grid finds both checks
    clean = list(gen.items(make_config(gen, {"preset": "clean"}), 0))
    assert len(clean) == 1850 and min(it.params["target_y"] for it in clean) >= 12


def test_adelson_paper_arrow_cut_by_the_top_edge_target_pixel_untouched():
    """At row 5 the 11 px arrow starts above the canvas (as the original's 11.25 px arrow at y = 5): white
    ink from row 0 down to the target's top edge, the target pixel itself the scene's value."""
    from tasks.stimuli.mindset.illusions_lightness import _adelson_base

    gen = get_generator("mindset/adelson_checker_shadow")
    cfg = make_config(gen, {"preset": "paper"})
    items = {it.item_id: it for it in gen.items(cfg, 0)}
    _, base, _ = _adelson_base(cfg)
    for iid in ("y005_x005", "y005_x110", "y010_x220", "y220_x220"):
        it = items[iid]
        img, extra = gen.render(cfg, it)
        y, x = it.params["target_y"], it.params["target_x"]
        assert img[y, x, 0] == extra["target_value"] == C.to_uint8(base[y:y + 1, x:x + 1])[0, 0]
        assert img[max(y - 4, 0):y, x, 0].max() >= 200, iid  # the arrow head just above the target
        if y - 11 < 0:
            assert img[0, x, 0] >= 200, f"{iid}: the arrow runs off the top edge"
        changed = np.argwhere(img[..., 0] != C.to_uint8(base))
        assert changed[:, 0].max() < y and abs(changed[:, 1] - x).max() <= 3, iid  # only the arrow, above it


# ---------------------------------------------------------------------------------------------- global change
def test_global_change_paper_halves_at_the_drawings_scale(tmp_path):
    """paper = MindSet's global_change: line drawings at longest side 120, cut in two halves; the fragmented and
    Frankenstein figures keep the drawing's scale (the same stroke, the same height) unless wider than the canvas."""
    out = write_dataset("mindset/global_change", tmp_path / "g", {"preset": "paper", "object_set": "grid",
                                                                   "categories": ["bench", "wolf"], "instances": 1},
                        seed=0, progress=False)
    df = pd.read_parquet(out / "annotations.parquet")
    assert len(df) == 6 and (df.manipulation == "mindset").all() and (df.drawing == "line").all()
    for _, g in df.groupby("set_id"):
        box = {}
        for r in g.itertuples():
            ink = C.luminance(C.read_png(out / r.file_name)) > 128  # white on black
            rows, cols = np.nonzero(ink)
            box[r.condition] = (np.ptp(rows) + 1, np.ptp(cols) + 1)
        h, w = box["whole"]
        assert abs(max(h, w) - 120) <= 3  # the 2 px strokes stand out of the projected outline by ~1 px
        for c in ("fragmented", "frankenstein"):
            hc, wc = box[c]
            # not shrunk (a figure wider than the canvas is scaled to 224 px): the drawing's scale, so the two
            # halves stack to the whole's height
            if wc < 218:
                assert abs(hc - h) <= 2, (c, box)
        assert box["fragmented"][1] > w, "the halves side by side are wider than the whole"


def test_mindset_halves_cuts_at_half_height_mirrors_the_top_and_aligns_the_end_pixels():
    """MindSet's rule on a drawn L-shaped figure: cut at h // 2; Frankenstein's halves share the column of their
    leftmost ink on the cut, fragmented's top (mirrored) starts where the bottom's first row ends."""
    from tasks.stimuli.mindset.objects_global import mindset_halves

    a = np.zeros((40, 60), np.float32)
    a[5:15, 10:20] = 1  # top half: a block at the left of the box
    a[15:25, 10:40] = 1  # bottom half: a wider block
    box = a[5:25, 10:40]
    assert np.array_equal(mindset_halves(a, "whole"), box)
    for cond in ("frankenstein", "fragmented"):
        f = mindset_halves(a, cond)
        assert f.shape[0] == 20 and f.sum() == box.sum(), "the two halves, nothing lost"
        top_last, bottom_first = np.nonzero(f[9])[0], np.nonzero(f[10])[0]
        # the top half is mirrored: its block now at the right of its box
        assert np.array_equal(np.nonzero(f[:10].any(0))[0], np.arange(top_last.min(), top_last.min() + 10))
        if cond == "frankenstein":
            assert top_last.min() == bottom_first.min()
        else:
            assert top_last.min() == bottom_first.max()
