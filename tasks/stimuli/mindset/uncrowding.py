"""MindSet (un)crowding (``mindset-vision.txt`` C.1.2, Fig. 4; Doerig et al., 2019 and Doerig, Bornet, Choung &
Herzog, 2020): a vernier outside or inside a configuration of outline flankers.

Geometry read off the original generator (Doerig & Choung's ``batch_maker``, adapted by MindSet):

* flanker cell size s: random whole number in [0.1·W, W // 7] (W = canvas) or fixed 0.08·W, then reduced by
  int(s / 6) — 19-27 px at 224; cells tile a rows × columns patch with no spacing;
* shapes (ids of the 102 patterns, 1-px outlines): 1 square (side s / 1.2), 2 circle (radius s / 2.02 - 1),
  3 hexagon and 4 octagon (circumradius s / 2 - 1; octagon turned by π/8), 5 diamond (corners at the cell's
  edge mid points), 6 seven-pointed star (outer radius s / 1.6, inner / 1.7, clipped to its cell); 0 empty;
* the vernier: two vertical bars of ``bar_width`` px (1) and height int(s / 4 - bar_width / 4), one above the
  other with a 1-px vertical gap, horizontally offset by a random whole 1 .. height / 2 px; ``left`` = the
  top bar is left of the bottom one (the original's type 0), ``right`` = mirrored (type 1);
* ``inside``: the vernier at the centre of the patch's middle cell; ``outside``: the patch somewhere on the
  canvas (int(s / 6) px from the border) and the vernier in a cell-sized box that does not touch the patch.

The 102 flanker patterns are the original's list in its order (``tasks/data/mindset/uncrowding_patterns.json``:
7-shape rows, 1-3 rows, 1-7 columns, same and alternating shapes, Manassi's and Lynn's configurations, ten
fixed random patterns; pattern 0 and 26 are the vernier alone; Lynn's group appears twice, as in the
original). The paper preset makes one image per pattern × position × offset direction (408, antialiasing off
as the original); ``samples`` repeats each with fresh random size, offset and placement.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, Shape, background_params, background_rgb, check_rgb, difference, intersection,
                     item_rng, new_canvas, paint, polygon, polyline, rect, register_mindset, rgb_columns, ring,
                     to_uint8, union)

DATA = Path(__file__).resolve().parents[2] / "data" / "mindset" / "uncrowding_patterns.json"
SHAPES = {0: "empty", 1: "square", 2: "circle", 3: "hexagon", 4: "octagon", 5: "diamond", 6: "star"}


@functools.lru_cache(maxsize=1)
def patterns() -> list[list[list[int]]]:
    """The 102 flanker patterns: each a list of rows of shape ids (an empty list = the vernier alone)."""
    return json.loads(DATA.read_text())["patterns"]


def pattern_code(pattern) -> str:
    """A pattern as text: rows of shape ids joined by ``-`` (``none`` for the vernier alone)."""
    return "-".join("".join(str(i) for i in row) for row in pattern) or "none"


@dataclasses.dataclass(frozen=True)
class UncrowdingConfig(MindsetConfig):
    samples: int = field(1, "images per pattern × position × offset direction", range=(1, 100_000))
    positions: tuple = field(("outside", "inside"), "vernier outside (training) or inside (test) the flankers",
                             choices=("outside", "inside"))
    pattern_ids: tuple = field((), "indices (0-101) of the flanker patterns to use; empty = all 102",
                               range=(0, 101))
    random_size: bool = field(True, "flanker cell size random in [0.1 W, W // 7] (else fixed 0.08 W)")
    bar_width: int = field(1, "vernier bar and outline width (px)", range=(1, 10))
    shape_color: tuple = field((255, 255, 255), "RGB 0-255 of the vernier and the flankers", range=(0, 255))
    antialias: bool = field(False, "antialiased edges (the original: off)")

    def __post_init__(self):
        super().__post_init__()
        check_rgb("shape_color", self.shape_color)
        if self.canvas_size < 120:
            raise ConfigError(f"canvas_size={self.canvas_size}: 7 columns of flankers need at least 120 px")


def cell_shape(shape_id: int, x0: float, y0: float, s: float, w: float) -> Shape | None:
    """The outline of flanker ``shape_id`` in the s × s cell with top-left corner (x0, y0), stroke ``w`` px."""
    cx, cy = x0 + s / 2, y0 + s / 2
    if shape_id == 0:
        return None
    if shape_id == 1:
        side = s / 1.2
        a = x0 + (s - side) / 2
        b = y0 + (s - side) / 2
        return difference(rect(a, b, a + side + w, b + side + w), rect(a + w, b + w, a + side, b + side))
    if shape_id == 2:
        return ring(cx, cy, s / 2.02 - 1, w)
    if shape_id in (3, 4):
        n, phi = (6, 0.0) if shape_id == 3 else (8, np.pi / 8)
        r = s / 2 - 1
        a = 2 * np.pi * np.arange(n) / n + phi
        return polyline(np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1), w, closed=True)
    if shape_id == 5:
        return polyline([(cx, y0), (x0 + s, cy), (cx, y0 + s), (x0, cy)], w, closed=True)
    if shape_id == 6:
        n, ratio, phi = 7, 1.7, -np.pi / 14
        R = s / 1.6
        k = np.arange(2 * n)
        rad = np.where(k % 2 == 0, R / ratio, R)
        a = 2 * np.pi * k / (2 * n) + phi
        outer = np.stack([cx + rad * np.cos(a), cy + rad * np.sin(a)], 1)
        inner = np.stack([cx + (rad - w) * np.cos(a), cy + (rad - w) * np.sin(a)], 1)
        return intersection(difference(polygon(outer), polygon(inner)), rect(x0, y0, x0 + s, y0 + s))
    raise ValueError(f"flanker shape id {shape_id}; known: {SHAPES}")


def vernier(cx: float, cy: float, s: float, w: int, offset: int, direction: str) -> tuple[Shape, Shape]:
    """(top bar, bottom bar) of a vernier centred in the cell at (cx, cy) (whole-pixel box, as the original)."""
    h = int(s / 4 - w / 4)
    bw, bh = 2 * w + offset, 2 * h + 1
    x0, y0 = np.floor(cx - bw / 2), np.floor(cy - bh / 2)
    left, right = (x0, x0 + w + offset)
    top_x, bottom_x = (left, right) if direction == "left" else (right, left)
    return rect(top_x, y0, top_x + w, y0 + h), rect(bottom_x, y0 + h + 1, bottom_x + w, y0 + bh)


def layout(cfg: UncrowdingConfig, pattern, position: str, rng: np.random.Generator) -> dict:
    W = cfg.canvas_size
    s = float(rng.integers(int(W * 0.1), W // 7 + 1)) if cfg.random_size else W * 0.08
    s -= int(s / 6)
    rows, cols = (len(pattern), len(pattern[0])) if pattern else (1, 1)
    ph, pw = rows * s + 1, cols * s + 1
    pad = int(s / 6)
    h = int(s / 4 - cfg.bar_width / 4)
    offset = int(rng.integers(1, max(int(h / 2), 1) + 1))
    px = float(rng.integers(pad, int(W - pw - pad) + 1))
    py = float(rng.integers(pad, int(W - ph - pad) + 1))
    if position == "inside" or not pattern:
        vx, vy = px + int((pw - s) / 2) + s / 2, py + int((ph - s) / 2) + s / 2
    else:
        for _ in range(10_000):
            bx = float(rng.integers(pad, int(W - s - pad) + 1))
            by = float(rng.integers(pad, int(W - s - pad) + 1))
            if bx + s < px or bx > px + pw or by + s < py or by > py + ph:
                break
        else:
            raise ConfigError(f"no room for the vernier outside a {rows}x{cols} patch on canvas_size={W}")
        vx, vy = bx + s / 2, by + s / 2
    return {"cell_size": s, "patch_x": px, "patch_y": py, "patch_w": pw, "patch_h": ph, "rows": rows,
            "cols": cols if pattern else 0, "vernier_x": vx, "vernier_y": vy, "offset_px": offset,
            "bar_height": h}


def items(cfg: UncrowdingConfig, seed: int):
    ids = cfg.pattern_ids or tuple(range(len(patterns())))
    for position in cfg.positions:
        for direction in ("left", "right"):
            for pid in ids:
                pat = patterns()[pid]
                for k in range(cfg.samples):
                    rng = item_rng(seed, position, direction, pid, k)
                    lay = layout(cfg, pat, position, rng)
                    yield Item(f"{position}_{direction}", f"{position}_{direction}_p{pid:03d}_{k:04d}",
                               {"vernier_position": position, "offset_direction": direction,
                                "vernier_type": 0 if direction == "left" else 1, "pattern_id": pid,
                                "shape_code": pattern_code(pat), "sample": k, **lay,
                                **rgb_columns("shape", cfg.shape_color), **background_params(cfg, rng)})


def render(cfg: UncrowdingConfig, item: Item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    s, w = p["cell_size"], cfg.bar_width
    parts = []
    for r, row in enumerate(patterns()[p["pattern_id"]]):
        for c, sid in enumerate(row):
            sh = cell_shape(sid, p["patch_x"] + c * s, p["patch_y"] + r * s, s, w)
            if sh is not None:
                parts.append(sh)
    parts += vernier(p["vernier_x"], p["vernier_y"], s, w, p["offset_px"], p["offset_direction"])
    paint(img, union(*parts), cfg.shape_color, cfg.antialias)
    return to_uint8(img), {}


register_mindset("uncrowding", UncrowdingConfig,
                 "(Un)crowding: a vernier (left/right offset) outside or inside the 102 flanker patterns",
                 "mindset-vision.txt C.1.2 Fig. 4; Doerig et al. 2019, 2020", items=items, render=render,
                 conditions=[f"{p}_{d}" for p in ("outside", "inside") for d in ("left", "right")],
                 paper={"samples": 1, "random_size": True, "antialias": False},
                 lite={"samples": 1, "pattern_ids": [0, 3, 40, 52, 70, 80]},
                 figure="the original generator's 102 flanker patterns (Doerig et al. 2020), tasks/data/mindset/uncrowding_patterns.json")
