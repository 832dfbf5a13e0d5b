"""MindSet global change (``mindset-vision.txt`` C.3; after Baker & Elder, 2022): an object whole, fragmented
and "Frankenstein".

The object's drawing (``drawing=silhouette`` as Baker & Elder, or ``line``) is cut at its ink centroid row.
Two manipulations (``manipulation``):

* ``quarters`` (default; the same pixel mass in all three images, tested from the PNGs):
  ``frankenstein`` mirrors the part above the centroid row left-right about the centre of the object's
  bounding box, so every local feature survives and the global configuration is broken; ``fragmented``
  cuts the drawing at the centroid row and column into four pieces, each moved ``fragment_gap`` px away
  from the cuts (outwards along both axes) and turned by 180° within its own box when its seeded flag is
  set (``fragment_turns``, one 0/1 per piece, clockwise from top-left). Exact whole-pixel operations on the
  antialiased coverage.
* ``halves`` (Baker & Elder's, as their 1,080 images in MindSet's ``assets/baker_2022`` show them, measured
  on all 360 sets): ``fragmented`` moves the top half sideways (to the right) until its left end on the cut
  line meets the bottom half's right end there: two pieces, side by side, touching at one point;
  ``frankenstein`` mirrors the top half left-right and re-aligns it so the two halves' spans on the cut line
  share their centre (one joined figure). Like the original, which scales every image (whole or not) to
  ``object_longest_side``, the manipulated figure is then scaled to ``longest_side``, so the fragmented
  figure is smaller (it is about 1.5-2× as wide) and the ink is not equal across conditions. Deviation:
  Baker & Elder chose each cut by hand; here it is the ink centroid row (in their 360 sets the cut lies at
  a median 0.42 of the height from the top, on average 0.11 of the height from the centroid row).

Original: ``global_change`` draws Baker et al.'s (2018) line drawings at ``object_longest_side=120`` on 224
px; ``global_change_baker2022`` reads Baker & Elder's 9 animals × 40 silhouettes × 3 conditions = 1,080
images at longest side 200 without antialiasing. Preset ``baker2022`` makes the same design from the
library's models of those animals (bear, bunny, cat, elephant, frog, lizard, tiger, turtle, wolf; 40
instances each, side views facing right or left (canonical inclination), ``halves``, binary pixels, white on
black as the original's defaults): 1,080 images. ``paper`` (``global_change.0``'s design): the 36 objects of
``_objects.BAKER36`` standing in for Baker et al.'s 36 drawings × 3 conditions = 108 images: line drawings at
longest side 120, ``manipulation=mindset`` (MindSet's ``global_change``: :func:`mindset_halves`, the figure at
the drawing's scale, shrunk only when wider than the canvas), white on black;
``imagenet16``: 16 ImageNet-16 categories × 5 (240; the 16-class OOD use). Conditions
``whole`` (the original's folder ``original``) / ``fragmented`` / ``frankenstein``; ``set_id`` links the
three images of an object.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..registry import ConfigError, Item, field
from ._objects import (WHITE_ON_BLACK, ObjectsConfig, compose, library_categories, object_alpha, object_list,
                       object_params)
from .common import background_params, item_rng, register_mindset
from .objects_drawings import REFERENCE, object_items

CONDITIONS = ("whole", "fragmented", "frankenstein")
MANIPULATIONS = ("quarters", "halves", "mindset")


@dataclasses.dataclass(frozen=True)
class GlobalChangeConfig(ObjectsConfig):
    longest_side: int = field(120, "the object's longest projected side (px)", range=(16, 2048))
    drawing: str = field("silhouette", "what is cut: the filled silhouette or the line drawing",
                         choices=("silhouette", "line"))
    fragment_gap: int = field(12, "quarters: how far each fragment moves away from the cuts, along each axis (px)",
                              range=(0, 512))
    manipulation: str = field("quarters", "quarters: four pieces moved apart, the top mirrored in the object's "
                              "box, equal ink; halves: Baker & Elder's (top half beside the bottom one / mirrored "
                              "and re-aligned, each figure scaled to longest_side); mindset: MindSet's global_change (halves at "
                              "half the drawing's height, aligned by their end pixels on the cut, at the drawing's "
                              "scale)", choices=MANIPULATIONS)
    facing: str = field("canonical", "canonical: each category's canonical view; side: a side view (azimuth 0 "
                        "or 180, seeded: facing right or left; the category's canonical inclination), as Baker & "
                        "Elder's silhouettes",
                        choices=("canonical", "side"))

    def __post_init__(self):
        super().__post_init__()
        if self.manipulation == "quarters" and self.longest_side + 2 * self.fragment_gap > self.canvas_size:
            raise ConfigError(f"fragment_gap={self.fragment_gap} is out of range [0, (canvas_size - longest_side) / 2 "
                              f"= {(self.canvas_size - self.longest_side) // 2}]: fragments would leave the canvas")


def _bases(cfg: GlobalChangeConfig, seed: int):
    if cfg.facing == "canonical":
        yield from object_items(cfg, seed, condition="whole")
        return
    from scenes.objects import canonical_view

    for c, i in object_list(cfg):
        rng = item_rng(seed, c, i)
        az = 180.0 * int(rng.integers(0, 2))
        az += float(rng.uniform(-cfg.azimuth_jitter, cfg.azimuth_jitter)) if cfg.azimuth_jitter else 0.0
        inc = canonical_view(c)[1]  # a lizard or a turtle is seen from above its side, as the canonical view
        inc += float(rng.uniform(-cfg.inclination_jitter, cfg.inclination_jitter)) if cfg.inclination_jitter else 0.0
        p = {**object_params(cfg, c, i, seed, rng, azimuth=az, inclination=inc), **background_params(cfg, rng)}
        yield Item("whole", f"{c}_{i:02d}", p)


def _items(cfg: GlobalChangeConfig, seed: int):
    for base in _bases(cfg, seed):
        rng = item_rng(seed, "fragments", base.item_id)
        turns = "".join(str(int(b)) for b in rng.integers(0, 2, 4))
        p = {**base.params, "drawing": cfg.drawing, "manipulation": cfg.manipulation,
             "fragment_gap": int(cfg.fragment_gap), "fragment_turns": turns}
        for cond in CONDITIONS:
            yield Item(cond, f"{base.item_id}_{cond}", p, set_id=base.item_id)


def centroid_cut(alpha: np.ndarray) -> tuple[int, int, tuple[int, int, int, int]]:
    """(cut row, cut column, bounding box (r0, r1, c0, c1) inclusive) of a coverage map: the cuts are the
    pixel boundaries nearest the ink centroid."""
    rows, cols = np.nonzero(alpha > 0)
    w = alpha[rows, cols]
    cr = int(round(float((rows + 0.5) @ w / w.sum())))
    cc = int(round(float((cols + 0.5) @ w / w.sum())))
    return cr, cc, (int(rows.min()), int(rows.max()), int(cols.min()), int(cols.max()))


def frankenstein(alpha: np.ndarray) -> np.ndarray:
    """The part above the centroid row mirrored left-right within the object's bounding box columns."""
    cr, _, (r0, r1, c0, c1) = centroid_cut(alpha)
    out = alpha.copy()
    out[:cr, c0:c1 + 1] = alpha[:cr, c0:c1 + 1][:, ::-1]
    return out


def fragmented(alpha: np.ndarray, gap: int, turns: str) -> np.ndarray:
    """Four pieces cut at the centroid row and column, each moved ``gap`` px outwards along both axes and
    turned by 180° in its own box where ``turns[k] == "1"`` (pieces: top-left, top-right, bottom-right,
    bottom-left). Raises ValueError if a piece would leave the image."""
    cr, cc, (r0, r1, c0, c1) = centroid_cut(alpha)
    H, W = alpha.shape
    out = np.zeros_like(alpha)
    pieces = [((r0, cr), (c0, cc), -1, -1), ((r0, cr), (cc, c1 + 1), -1, 1), ((cr, r1 + 1), (cc, c1 + 1), 1, 1),
              ((cr, r1 + 1), (c0, cc), 1, -1)]
    for k, ((a, b), (c, d), sr, sc) in enumerate(pieces):
        if b <= a or d <= c:
            continue
        piece = alpha[a:b, c:d]
        if turns[k] == "1":
            piece = piece[::-1, ::-1]
        a2, c2 = a + sr * gap, c + sc * gap
        if a2 < 0 or c2 < 0 or a2 + (b - a) > H or c2 + (d - c) > W:
            raise ValueError(f"fragment {k} leaves the {H}x{W} image with gap={gap}")
        out[a2:a2 + (b - a), c2:c2 + (d - c)] += piece
    return out


def _span(row: np.ndarray) -> tuple[int, int]:
    cols = np.nonzero(row > 0)[0]
    return int(cols.min()), int(cols.max())


def halves_fragmented(alpha: np.ndarray) -> np.ndarray:
    """Baker & Elder's fragmented figure at the drawing's own scale: the part above the centroid row moved
    right until its leftmost ink on its last row is one column right of the bottom part's rightmost ink on
    its first row (the two touch at a corner of the cut line). float32 [H, W'] (wider than ``alpha``)."""
    cr, _, (r0, r1, c0, c1) = centroid_cut(alpha)
    top, bottom = alpha[:cr], alpha[cr:]
    shift = _span(bottom[0])[1] + 1 - _span(top[-1])[0]
    H, W = alpha.shape
    out = np.zeros((H, W + max(shift, 0)), np.float32)
    out[cr:, :W] = bottom
    out[:cr, max(shift, 0):max(shift, 0) + W] += top
    return out


def halves_frankenstein(alpha: np.ndarray) -> np.ndarray:
    """Baker & Elder's Frankenstein figure at the drawing's own scale: the part above the centroid row
    mirrored left-right, then shifted so that its span of ink on the cut line has the same centre as the
    bottom part's (whole-pixel shift, the nearer one when the centres differ by half a pixel). float32
    [H, W + 2W] with the original columns in the middle third (room for any shift)."""
    cr, _, _ = centroid_cut(alpha)
    top, bottom = alpha[:cr][:, ::-1], alpha[cr:]
    a, b = _span(top[-1])
    c, d = _span(bottom[0])
    shift = int(np.floor((c + d - a - b) / 2 + 0.5))
    H, W = alpha.shape
    out = np.zeros((H, 3 * W), np.float32)
    out[cr:, W:2 * W] = bottom
    out[:cr, W + shift:2 * W + shift] = top
    return out


def _end(rows: np.ndarray, step: int, last: bool) -> int:
    """Leftmost (or, ``last``, rightmost) ink column of ``rows[0]``, or of the first row with ink going
    ``step`` (+1 down, -1 up) from it."""
    order = range(len(rows)) if step > 0 else range(len(rows) - 1, -1, -1)
    for r in order:
        cols = np.nonzero(rows[r] > 0)[0]
        if len(cols):
            return int(cols.max() if last else cols.min())
    raise ValueError("a half of the drawing has no ink")


def mindset_halves(alpha: np.ndarray, condition: str) -> np.ndarray:
    """MindSet's ``global_change`` figure (its code, re-implemented): the drawing's box cut at row h // 2; for
    ``frankenstein`` and ``fragmented`` the top half is mirrored left-right in the box; Frankenstein shifts the
    halves so the leftmost ink of the top's last row and of the bottom's first row share a column, fragmented so
    the top's leftmost meets the bottom's rightmost (the halves side by side, touching there); ``whole`` is the
    box unchanged. A cut row without ink uses the nearest row of its half that has some (the original would
    fail). float32 [h, w'] at the drawing's scale."""
    rows, cols = np.nonzero(alpha > 0)
    box = alpha[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    if condition == "whole":
        return box.astype(np.float32)
    H, W = box.shape
    cut = H // 2
    top, bottom = box[:cut][:, ::-1], box[cut:]
    t = _end(top, -1, last=False)
    b = _end(bottom, +1, last=condition == "fragmented")
    top_off, bottom_off = max(0, b - t), max(0, t - b)
    out = np.zeros((H, W + max(top_off, bottom_off)), np.float32)
    out[:cut, top_off:top_off + W] = top
    out[cut:, bottom_off:bottom_off + W] = bottom
    return out


def fit_longest_side(figure: np.ndarray, longest: float, canvas: int, binary: bool) -> np.ndarray:
    """The figure's ink cropped, scaled (area-averaged) so its longest side is ``longest`` px, centred on a
    ``canvas`` square; thresholded at 0.5 when ``binary`` (the original resizes, then thresholds)."""
    from PIL import Image

    rows, cols = np.nonzero(figure > 0)
    crop = figure[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    h, w = crop.shape
    s = longest / max(h, w)
    nh, nw = max(1, int(round(h * s))), max(1, int(round(w * s)))
    small = np.asarray(Image.fromarray(np.ascontiguousarray(crop, np.float32)).resize((nw, nh), Image.BOX), np.float32)
    small = np.clip(small, 0, 1)
    if binary:
        small = (small >= 0.5).astype(np.float32)
    out = np.zeros((canvas, canvas), np.float32)
    r, c = (canvas - nh) // 2, (canvas - nw) // 2
    out[r:r + nh, c:c + nw] = small
    return out


def _render(cfg: GlobalChangeConfig, item):
    p = item.params
    alpha = object_alpha(cfg, p, p["drawing"])
    if p["manipulation"] == "mindset":  # at the drawing's scale, shrunk only when wider than the canvas
        fig = mindset_halves(alpha, item.condition)
        rows, cols = np.nonzero(fig > 0)  # the ink's extent (the array can be wider: the halves' offsets)
        longest = min(float(max(np.ptp(rows), np.ptp(cols)) + 1), float(cfg.canvas_size))
        alpha = fit_longest_side(fig, longest, cfg.canvas_size, binary=not cfg.antialias)
    elif p["manipulation"] == "halves" and item.condition != "whole":
        fig = halves_frankenstein(alpha) if item.condition == "frankenstein" else halves_fragmented(alpha)
        alpha = fit_longest_side(fig, float(p["longest_side"]), cfg.canvas_size, binary=not cfg.antialias)
    elif item.condition == "frankenstein":
        alpha = frankenstein(alpha)
    elif item.condition == "fragmented":
        alpha = fragmented(alpha, p["fragment_gap"], p["fragment_turns"])
    return compose(cfg, p, alpha), {"ink_pixels": round(float(alpha.sum()), 4)}


register_mindset("global_change", GlobalChangeConfig, "objects whole / fragmented / frankenstein with equal pixel mass",
                 REFERENCE + "; Baker & Elder 2022", items=_items, render=_render, conditions=CONDITIONS,
                 paper={"object_set": "baker36", "longest_side": 120, "drawing": "line", "manipulation": "mindset",
                        **WHITE_ON_BLACK},
                 lite={"instances": 1, "categories": ("bear", "bicycle", "elephant")},
                 presets={"imagenet16": {"object_set": "grid", "categories": library_categories("imagenet16"),
                                         "instances": 5, "longest_side": 120},
                          "baker2022": {"instances": 40, "longest_side": 200, "categories": library_categories("baker2022"),
                                        "manipulation": "halves", "facing": "side", "antialias": False,
                                        **WHITE_ON_BLACK}})
