"""MindSet embedded figures (``mindset-vision.txt`` C.3; an L-POST-style camouflage test): a polygon outline
alone (``polygon``) and the same polygon, at the same place, hidden among lines (``embedded_polygon``).

Five polygons (``POLYGONS``; the original hard-codes five vertex lists in its source, these are our own),
scaled so their longest side is ``shape_size`` px, turned by a random angle and placed at random inside the
canvas. The context: ``n_extended`` lines that continue polygon edges beyond their corners (so the figure's
contour runs into the context, which is what makes it hard to find) and ``n_random`` random lines. Drawing
more lines in the same colour only adds ink, so the embedded image contains the polygon image pixel for
pixel (tested). ``polygon_id`` (0-4) is the decoder's label; ``set_id`` links a polygon image to its
embedded version. Original: 100 samples, shape size 45, 10 extended + 10 random lines.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, item_rng, new_canvas, paint,
                     polyline, register_mindset, rgb_columns, segment, to_uint8)

# unit-size vertex lists (x right, y down), one simple polygon each
POLYGONS = (
    ((0.0, 0.0), (1.0, 0.0), (1.0, 0.35), (0.35, 0.35), (0.35, 1.0), (0.0, 1.0)),     # L
    ((0.5, 0.0), (1.0, 0.45), (0.75, 1.0), (0.25, 1.0), (0.0, 0.45)),                  # pentagon
    ((0.0, 0.3), (0.6, 0.3), (0.6, 0.0), (1.0, 0.5), (0.6, 1.0), (0.6, 0.7), (0.0, 0.7)),  # arrow
    ((0.2, 0.0), (0.8, 0.0), (1.0, 1.0), (0.0, 1.0)),                                    # trapezoid
    ((0.0, 0.4), (0.5, 0.0), (1.0, 0.4), (1.0, 1.0), (0.0, 1.0)),                        # house
)
CONDITIONS = ("polygon", "embedded_polygon")


@dataclasses.dataclass(frozen=True)
class EmbeddedConfig(MindsetConfig):
    samples: int = field(100, "placements per polygon (each gives a polygon and an embedded image)",
                         range=(1, 100_000))
    shape_size: float = field(45.0, "polygon's longest side (px)", range=(10.0, 200.0))
    n_extended: int = field(10, "lines continuing polygon edges", range=(0, 100))
    n_random: int = field(10, "random lines", range=(0, 200))
    line_width: float = field(2.0, "stroke width (px)", range=(0.5, 10.0))
    line_color: tuple = field((255, 255, 255), "RGB 0-255 of all lines", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("line_color", self.line_color)
        if self.shape_size * 1.5 + 4 > self.canvas_size:
            raise ConfigError(f"shape_size={self.shape_size} is out of range [10, canvas_size / 1.5 = "
                              f"{(self.canvas_size - 4) / 1.5:.0f}]: the turned polygon must fit the canvas")


def polygon_points(pid: int, size: float, angle_deg: float, cx: float, cy: float) -> np.ndarray:
    """[N, 2] vertices of polygon ``pid``: longest side ``size`` px, turned by ``angle_deg`` about its centre,
    centred on (cx, cy)."""
    p = np.asarray(POLYGONS[pid], float)
    p = (p - (p.min(0) + p.max(0)) / 2) * size / np.ptp(p, axis=0).max()
    a = math.radians(angle_deg)
    R = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return p @ R.T + [cx, cy]


def context_lines(cfg: EmbeddedConfig, pts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """[n_extended + n_random, 2, 2] segments (x, y): edge continuations beyond a corner (random edge, random
    end, 15-80 px long) and random lines (20-160 px, anywhere)."""
    out = []
    n = len(pts)
    for _ in range(cfg.n_extended):
        e = int(rng.integers(n))
        a, b = pts[e], pts[(e + 1) % n]
        if rng.integers(2):
            a, b = b, a
        d = (b - a) / np.linalg.norm(b - a)
        out.append((b, b + d * rng.uniform(15, 80)))
    for _ in range(cfg.n_random):
        c = rng.uniform(0, cfg.canvas_size, 2)
        t = rng.uniform(0, np.pi)
        L = rng.uniform(20, 160)
        d = np.array([math.cos(t), math.sin(t)]) * L / 2
        out.append((c - d, c + d))
    return np.asarray(out, float).reshape(-1, 2, 2)


def _items(cfg: EmbeddedConfig, seed: int):
    for pid in range(len(POLYGONS)):
        for k in range(cfg.samples):
            rng = item_rng(seed, pid, k)
            r = cfg.shape_size * 0.75
            p = {"polygon_id": pid, "sample": k, "angle_deg": round(float(rng.uniform(0, 360)), 4),
                 "cx": round(float(rng.uniform(r + 2, cfg.canvas_size - r - 2)), 4),
                 "cy": round(float(rng.uniform(r + 2, cfg.canvas_size - r - 2)), 4),
                 "shape_size": float(cfg.shape_size), "n_extended": cfg.n_extended, "n_random": cfg.n_random,
                 **rgb_columns("line", cfg.line_color), **background_params(cfg, rng)}
            for cond in CONDITIONS:
                yield Item(cond, f"{cond}_{pid}_{k:05d}", {**p, "_seed": int(seed)}, set_id=f"p{pid}_{k:05d}")


def _render(cfg: EmbeddedConfig, item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    pts = polygon_points(p["polygon_id"], p["shape_size"], p["angle_deg"], p["cx"], p["cy"])
    rgb = (p["line_r"], p["line_g"], p["line_b"])
    paint(img, polyline(pts, cfg.line_width, closed=True), rgb, cfg.antialias)
    if item.condition == "embedded_polygon":
        for a, b in context_lines(cfg, pts, item_rng(p["_seed"], "context", p["polygon_id"], p["sample"])):
            paint(img, segment(a, b, cfg.line_width, "round"), rgb, cfg.antialias)
    return to_uint8(img), {}


register_mindset("embedded_figures", EmbeddedConfig, "a polygon alone or hidden among edge continuations and random "
                 "lines (label polygon_id)", "mindset-vision.txt C.3 (L-POST-style embedded figures)",
                 items=_items, render=_render, conditions=CONDITIONS,
                 paper={"samples": 100, "shape_size": 45.0, "n_extended": 10, "n_random": 10}, lite={"samples": 1})
