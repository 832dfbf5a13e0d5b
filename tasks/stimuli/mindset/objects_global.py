"""MindSet global change (``mindset-vision.txt`` C.3; after Baker & Elder, 2022): an object whole, fragmented
and "Frankenstein", with the same pixel mass in all three.

The object's drawing (``drawing=silhouette`` as Baker & Elder, or ``line``) is cut at its centroid:

* ``frankenstein`` — the part above the centroid row is mirrored left-right about the centre of the
  object's bounding box, so every local feature survives and the global configuration is broken;
* ``fragmented`` — the drawing is cut at the centroid row and column into four pieces; each piece moves
  ``fragment_gap`` px away from the cuts (outwards along both axes) and is turned by 180° within its own
  box when its seeded flag is set (``fragment_turns``, one 0/1 per piece, clockwise from top-left).

Both are exact pixel operations on the antialiased coverage (whole-pixel shifts, mirror images), so the
three images of a set have the same ink (tested from the PNGs). Original: ``object_longest_side=120`` on
224 px; preset ``baker2022`` keeps the library's animals among Baker & Elder's nine (bear, cat, elephant).
Conditions ``whole``/``fragmented``/``frankenstein``; ``set_id`` links the three images of an object.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..registry import ConfigError, Item, field
from ._objects import ObjectsConfig, compose, object_alpha
from .common import item_rng, register_mindset
from .objects_drawings import REFERENCE, object_items

CONDITIONS = ("whole", "fragmented", "frankenstein")


@dataclasses.dataclass(frozen=True)
class GlobalChangeConfig(ObjectsConfig):
    longest_side: int = field(120, "the object's longest projected side (px)", range=(16, 2048))
    drawing: str = field("silhouette", "what is cut: the filled silhouette or the line drawing",
                         choices=("silhouette", "line"))
    fragment_gap: int = field(12, "how far each fragment moves away from the cuts, along each axis (px)",
                              range=(0, 512))

    def __post_init__(self):
        super().__post_init__()
        if self.longest_side + 2 * self.fragment_gap > self.canvas_size:
            raise ConfigError(f"fragment_gap={self.fragment_gap} is out of range [0, (canvas_size - longest_side) / 2 "
                              f"= {(self.canvas_size - self.longest_side) // 2}]: fragments would leave the canvas")


def _items(cfg: GlobalChangeConfig, seed: int):
    for base in object_items(cfg, seed, condition="whole"):
        rng = item_rng(seed, "fragments", base.item_id)
        turns = "".join(str(int(b)) for b in rng.integers(0, 2, 4))
        p = {**base.params, "drawing": cfg.drawing, "fragment_gap": int(cfg.fragment_gap), "fragment_turns": turns}
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


def _render(cfg: GlobalChangeConfig, item):
    p = item.params
    alpha = object_alpha(cfg, p, p["drawing"])
    if item.condition == "frankenstein":
        alpha = frankenstein(alpha)
    elif item.condition == "fragmented":
        alpha = fragmented(alpha, p["fragment_gap"], p["fragment_turns"])
    return compose(cfg, p, alpha), {"ink_pixels": round(float(alpha.sum()), 4)}


register_mindset("global_change", GlobalChangeConfig, "objects whole / fragmented / frankenstein with equal pixel mass",
                 REFERENCE + "; Baker & Elder 2022", items=_items, render=_render, conditions=CONDITIONS,
                 paper={"instances": 5, "longest_side": 120},
                 lite={"instances": 1, "categories": ("bear", "bicycle", "elephant")},
                 presets={"baker2022": {"instances": 10, "longest_side": 200, "categories": ("bear", "cat", "elephant")}})
