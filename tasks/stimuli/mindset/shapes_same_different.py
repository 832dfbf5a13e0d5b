"""MindSet same/different (``mindset-vision.txt`` C.3; SVRT problem 1 style, after Puebla & Bowers 2022): two
shapes per image, identical up to a translation (``same``) or not (``diff``), in 10 types.

Types (each a shape family; ``diff`` draws the second shape from the same family with its own random numbers,
constrained to differ visibly):

* ``regular`` — smooth closed curves (radius = 1 + three random Fourier harmonics), 2 px outline;
* ``irregular`` — closed polygons of 5-9 random vertices, 2 px outline;
* ``open`` — the same polygons left open (a polyline);
* ``wider_line`` — ``regular`` with a 4 px outline;
* ``rnd_color`` — ``regular`` in one random colour per image;
* ``filled`` — ``regular`` filled;
* ``open_squares`` — squares with one side missing (which side and the size vary);
* ``rectangles`` — rectangle outlines of random width and height;
* ``straight_lines`` — single segments of random length and orientation;
* ``closed_squares`` — square outlines of random size.

Exact sameness: each shape is defined around its own origin and placed at whole-pixel centres, so two
``same`` shapes have identical pixels (tested by cropping the PNG at the recorded centres). Positions are
drawn until the two shapes' boxes (``half`` px around each centre) do not overlap. Conditions are
``<type>_same`` / ``<type>_diff``; ``shape_size`` is the shape's extent (px). Original: 5000 per type and
condition (100,000 images), white shapes on black.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, coverage, item_rng, new_canvas,
                     paint, paint_coverage, polygon, polyline, register_mindset, rgb_columns, segment, to_uint8,
                     translate)

TYPES = ("regular", "irregular", "open", "wider_line", "rnd_color", "filled", "open_squares", "rectangles",
         "straight_lines", "closed_squares")
CONDITIONS = tuple(f"{t}_{s}" for t in TYPES for s in ("same", "diff"))


@dataclasses.dataclass(frozen=True)
class SameDiffConfig(MindsetConfig):
    types: tuple = field(TYPES, "shape families", choices=TYPES)
    samples: int = field(5000, "images per type and condition (same / diff)", range=(1, 1_000_000))
    shape_size: float = field(40.0, "shape extent (px)", range=(8.0, 100.0))
    line_width: float = field(2.0, "outline width (px; wider_line uses twice this)", range=(0.5, 10.0))
    shape_color: tuple = field((255, 255, 255), "RGB 0-255 of the shapes (rnd_color: random per image)",
                               range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("shape_color", self.shape_color)
        if 2 * (self.shape_size + 4 * self.line_width) + 8 > self.canvas_size:
            raise ConfigError(f"shape_size={self.shape_size} is out of range: two shapes of that size do not fit "
                              f"side by side on canvas_size={self.canvas_size}")


def _fourier_curve(rng, size):
    a = rng.uniform(0.08, 0.22, 3) * rng.choice([-1, 1], 3)
    ph = rng.uniform(0, 2 * np.pi, 3)
    # 32 vertices: segments of ~4 px at the default size, smooth at 224 px and half the drawing time of 64
    t = np.linspace(0, 2 * np.pi, 32, endpoint=False)
    r = 1 + sum(a[k] * np.cos((k + 2) * t + ph[k]) for k in range(3))
    r = r / r.max() * size / 2
    return np.stack([r * np.cos(t), r * np.sin(t)], 1)


def _polygon(rng, size):
    n = int(rng.integers(5, 10))
    ang = np.sort(rng.uniform(0, 2 * np.pi, n))
    r = rng.uniform(0.35, 1.0, n) * size / 2
    return np.stack([r * np.cos(ang), r * np.sin(ang)], 1)


def shape_spec(kind: str, rng: np.random.Generator, size: float, width: float) -> dict:
    """One shape of family ``kind`` around the origin: ``points`` [N, 2], ``style`` (outline / open / filled
    / segment) and stroke ``width`` (px), plus ``key`` numbers that tell two shapes of the family apart."""
    if kind in ("regular", "wider_line", "rnd_color", "filled"):
        pts = _fourier_curve(rng, size)
        style = "filled" if kind == "filled" else "outline"
        return {"points": pts, "style": style, "width": width * (2 if kind == "wider_line" else 1), "key": pts}
    if kind in ("irregular", "open"):
        pts = _polygon(rng, size)
        return {"points": pts, "style": "outline" if kind == "irregular" else "open", "width": width, "key": pts}
    if kind in ("closed_squares", "open_squares"):
        s = float(rng.uniform(0.4, 1.0)) * size
        sq = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], float) * s / 2
        if kind == "closed_squares":
            return {"points": sq, "style": "outline", "width": width, "key": np.array([s])}
        gap = int(rng.integers(4))  # the missing side
        return {"points": np.roll(sq, -gap - 1, axis=0), "style": "open", "width": width, "key": np.array([s, gap * size])}
    if kind == "rectangles":
        w, h = rng.uniform(0.3, 1.0, 2) * size
        return {"points": np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2, "style": "outline", "width": width,
                "key": np.array([w, h])}
    if kind == "straight_lines":
        L, a = float(rng.uniform(0.4, 1.0) * size), float(rng.uniform(0, np.pi))
        d = np.array([math.cos(a), math.sin(a)]) * L / 2
        return {"points": np.stack([-d, d]), "style": "segment", "width": width, "key": np.array([L, a * size / 2])}
    raise ValueError(f"type={kind!r}; one of {', '.join(TYPES)}")


def _differs(a: dict, b: dict, size: float) -> bool:
    ka, kb = np.asarray(a["key"], float), np.asarray(b["key"], float)
    if ka.shape != kb.shape:
        return True
    return float(np.abs(ka - kb).max()) > 0.1 * size


def _shapes(cfg: SameDiffConfig, p: dict) -> tuple[dict, dict]:
    rng = item_rng(p["_seed"], "shape", p["type"], p["sample"], p["same"])
    first = shape_spec(p["type"], rng, cfg.shape_size, cfg.line_width)
    if p["same"]:
        return first, first
    while True:
        second = shape_spec(p["type"], rng, cfg.shape_size, cfg.line_width)
        if _differs(first, second, cfg.shape_size):
            return first, second


def _shape(spec: dict):
    pts, w = spec["points"], spec["width"]
    if spec["style"] == "filled":
        return polygon(pts)
    if spec["style"] == "segment":
        return segment(pts[0], pts[1], w, "round")
    return polyline(pts, w, closed=spec["style"] == "outline")


def _draw(img, spec: dict, cx: int, cy: int, rgb, antialias: bool) -> None:
    paint(img, translate(_shape(spec), cx, cy), rgb, antialias)


def _items(cfg: SameDiffConfig, seed: int):
    half = int(math.ceil(cfg.shape_size / 2 + 2 * cfg.line_width)) + 1
    for t in cfg.types:
        for same in (True, False):
            for k in range(cfg.samples):
                rng = item_rng(seed, t, same, k)
                while True:  # two boxes of side 2·half inside the canvas, not overlapping (4 px apart)
                    c = rng.integers(half + 1, cfg.canvas_size - half - 1, 4)
                    if abs(c[0] - c[2]) > 2 * half + 4 or abs(c[1] - c[3]) > 2 * half + 4:
                        break
                colour = rng.integers(0, 256, 3) if t == "rnd_color" else cfg.shape_color
                cond = f"{t}_{'same' if same else 'diff'}"
                yield Item(cond, f"{cond}_{k:06d}",
                           {"type": t, "same": same, "sample": k, "x1": int(c[0]), "y1": int(c[1]), "x2": int(c[2]),
                            "y2": int(c[3]), "half": half, "shape_size": float(cfg.shape_size),
                            **rgb_columns("shape", colour), **background_params(cfg, rng), "_seed": int(seed)})


def _render(cfg: SameDiffConfig, item, reuse: bool = True):
    """The two shapes painted at their centres. A ``same`` pair is sampled once: moved by whole pixels, a shape
    meets the same sub-pixel samples (exact in binary) with the same arithmetic, so its coverage block is the
    same (``reuse=False`` samples both, the plain twin; tests compare)."""
    p = item.params
    a, b = _shapes(cfg, p)
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    rgb = (p["shape_r"], p["shape_g"], p["shape_b"])
    if reuse and p["same"]:
        size = cfg.canvas_size
        cov, (r0, c0) = coverage(translate(_shape(a), p["x1"], p["y1"]), size, cfg.antialias)
        r2, c2 = r0 + p["y2"] - p["y1"], c0 + p["x2"] - p["x1"]
        h, w = cov.shape
        # both blocks whole (not clipped by the canvas), so the second is the first moved by whole pixels
        if cov.size and min(r0, c0, r2, c2) > 0 and max(r0, r2) + h < size and max(c0, c2) + w < size:
            paint_coverage(img, cov, (r0, c0), rgb)
            paint_coverage(img, cov, (r2, c2), rgb)
            return to_uint8(img), {}
    _draw(img, a, p["x1"], p["y1"], rgb, cfg.antialias)
    _draw(img, b, p["x2"], p["y2"], rgb, cfg.antialias)
    return to_uint8(img), {}


register_mindset("same_different", SameDiffConfig, "two shapes, identical up to translation or not, in 10 SVRT-style "
                 "types", "mindset-vision.txt C.3; Puebla & Bowers 2022 (SVRT problem 1)", items=_items,
                 render=_render, conditions=CONDITIONS, paper={"samples": 5000, "shape_size": 40.0},
                 lite={"samples": 1})
