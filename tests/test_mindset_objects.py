"""MindSet global change in Baker & Elder's (2022) design (preset ``baker2022``, manipulation ``halves``):
the original's counts and conditions, and the two manipulations measured on arrays and PNGs."""
import collections

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

import tasks.stimuli  # noqa: F401  (registers every generator)
from tasks.stimuli import write_dataset
from tasks.stimuli.mindset import common as C
from tasks.stimuli.mindset.objects_global import centroid_cut, halves_fragmented, halves_frankenstein
from tasks.stimuli.registry import get_generator, make_config

# Baker & Elder's animals as the original's assets/baker_2022/{original,fragmented,frankenstein}/<animal>/
# hold them: 9 animals x 40 silhouettes x 3 conditions = 1,080 images (MindSet: Vision, global_change_baker2022)
BAKER_ANIMALS = ("bear", "bunny", "cat", "elephant", "frog", "lizard", "tiger", "turtle", "wolf")


@pytest.mark.slow
def test_baker2022_preset_has_the_originals_1080_images_40_per_animal_and_condition():
    gen = get_generator("mindset/global_change")
    cfg = make_config(gen, {"preset": "baker2022"})
    assert cfg.longest_side == 200 and not cfg.antialias and cfg.manipulation == "halves"
    items = list(gen.items(cfg, 0))
    assert len(items) == 1080
    counts = collections.Counter((it.condition, it.params["class_name"]) for it in items)
    assert set(counts) == {(c, a) for c in ("whole", "fragmented", "frankenstein") for a in BAKER_ANIMALS}
    assert set(counts.values()) == {40}
    assert len({it.set_id for it in items}) == 360 and all(len(it.set_id) for it in items)


def _figure() -> np.ndarray:
    """An asymmetric test figure: a wide body with a head on the upper right and two legs."""
    a = np.zeros((60, 80), np.float32)
    a[25:40, 10:60] = 1  # body
    a[12:28, 48:66] = 1  # head, upper right
    a[40:55, 14:20] = a[40:55, 50:56] = 1  # legs
    return a


def test_halves_fragmented_puts_the_top_half_beside_the_bottom_one_touching_at_the_cut():
    a = _figure()
    cr, _, _ = centroid_cut(a)
    out = halves_fragmented(a)
    assert out.sum() == a.sum()  # at the drawing's own scale nothing is lost or added
    top, bottom = out[:cr], out[cr:]
    assert np.array_equal(bottom[:, :a.shape[1]], a[cr:]) and not bottom[:, a.shape[1]:].any()
    # the top half is the original's, moved right as a whole
    cols = np.nonzero(top.any(0))[0]
    shift = cols.min() - np.nonzero(a[:cr].any(0))[0].min()
    assert shift > 0 and np.array_equal(top[:, shift:shift + a.shape[1]], a[:cr])
    # touching at one point: the top's last row starts one column right of where the bottom's first row ends
    assert np.nonzero(top[-1])[0].min() == np.nonzero(bottom[0])[0].max() + 1
    lab, n = ndimage.label(out > 0)  # 4-connected: two separate pieces
    assert n == 2


def test_halves_frankenstein_mirrors_the_top_half_and_rejoins_it_on_the_cut_line():
    a = _figure()
    cr, _, _ = centroid_cut(a)
    out = halves_frankenstein(a)
    W = a.shape[1]
    assert out.sum() == a.sum()
    assert np.array_equal(out[cr:, W:2 * W], a[cr:]) and not out[cr:, :W].any() and not out[cr:, 2 * W:].any()
    top = out[:cr]
    cols = np.nonzero(top.any(0))[0]
    mirrored = a[:cr][:, ::-1]
    m_cols = np.nonzero(mirrored.any(0))[0]
    shift = cols.min() - m_cols.min()
    assert np.array_equal(top[:, shift:shift + W], mirrored), "the top half is the mirror image of the original's"
    t, b = np.nonzero(top[-1])[0], np.nonzero(out[cr])[0]
    assert abs((t.min() + t.max()) / 2 - (b.min() + b.max()) / 2) <= 0.5, "the halves' spans on the cut share a centre"
    assert ndimage.label(out > 0)[1] == 1, "one joined figure"


def test_baker2022_images_are_binary_scaled_to_200_px_and_fragmented_in_two_pieces(tmp_path):
    out = write_dataset("mindset/global_change", tmp_path / "g", {"preset": "baker2022", "instances": 1,
                                                                   "categories": ["wolf", "bunny"]}, seed=1, progress=False)
    assert C.schema_problems(out) == []
    df = pd.read_parquet(out / "annotations.parquet")
    assert len(df) == 6 and set(df.condition) == {"whole", "fragmented", "frankenstein"}
    for _, row in df.iterrows():
        lum = C.luminance(C.read_png(out / row.file_name))
        assert set(np.unique(lum)) <= {0, 255}, "binary pixels, as the original (no antialiasing)"
        ink = lum > 128  # white on black, as the original's defaults
        rows, cols = np.nonzero(ink)
        assert abs(max(np.ptp(rows), np.ptp(cols)) + 1 - 200) <= 1, (row.file_name, "longest side 200 px")
        if row.condition == "fragmented":
            # the cut line (a row where scaling mixes both pieces' edges): the row above it starts where the
            # row below it ends (the pieces touch there), and the top piece lies to the right of the bottom one
            def meets(r):
                above, below = np.nonzero(ink[r - 1])[0], np.nonzero(ink[r + 1])[0]
                return len(above) and len(below) and above.min() >= below.max() - 2
            def split(r):  # the top piece to the right of the bottom one
                return cols[rows < r].mean() > cols[rows > r].mean() + 0.2 * np.ptp(cols)
            middle = range(rows.min() + int(0.2 * np.ptp(rows)), rows.min() + int(0.8 * np.ptp(rows)))
            assert [r for r in middle if meets(r) and split(r)], f"{row.file_name}: top half beside the bottom half"
