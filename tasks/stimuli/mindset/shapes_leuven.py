"""MindSet Leuven embedded figures (``mindset-vision.txt`` C.3; procedural stand-ins for the L-EFT of de-Wit
et al., 2017): simple line figures (``shape``) and larger figures that contain them (``context``).

A figure is a set of edges on a ``grid``×``grid`` lattice of points ``spacing`` px apart (horizontal,
vertical and diagonal neighbours), drawn as strokes of ``line_width`` px — the L-EFT's style of
straight-line figures. Shape ``k`` (one of ``n_shapes``, drawn from the seed): a connected path of 4-6
edges. Each of its ``contexts`` contexts adds ``extra_edges`` edges, each joined to the figure drawn so far,
so the shape's lines run into the context's and the shape is hidden as a part of one connected figure. The
context keeps the shape at the same place on the lattice, so its ink contains the shape's pixel for pixel
(tested). ``shape_id`` is the label (the original's ``Class``; it used 16 of L-EFT's 64 shapes and only the
"a" contexts); ``set_id`` links a shape to its contexts.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, item_rng, new_canvas, paint,
                     register_mindset, rgb_columns, segment, to_uint8)

STEPS = ((1, 0), (0, 1), (1, 1), (1, -1), (-1, 0), (0, -1), (-1, -1), (-1, 1))


@dataclasses.dataclass(frozen=True)
class LeuvenConfig(MindsetConfig):
    n_shapes: int = field(16, "target shapes", range=(1, 1000))
    contexts: int = field(4, "contexts per shape", range=(1, 1000))
    grid: int = field(5, "lattice points per side", range=(3, 20))
    spacing: float = field(36.0, "lattice spacing (px)", range=(4.0, 500.0))
    extra_edges: int = field(8, "edges a context adds to its shape", range=(1, 100))
    line_width: float = field(3.0, "stroke width (px)", range=(0.5, 20.0))
    line_color: tuple = field((255, 255, 255), "RGB 0-255 of the lines", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("line_color", self.line_color)
        if (self.grid - 1) * self.spacing + self.line_width + 4 > self.canvas_size:
            raise ConfigError(f"spacing={self.spacing} is out of range [4, {(self.canvas_size - 4 - self.line_width) / (self.grid - 1):.1f}]: "
                              f"a {self.grid}-point lattice must fit canvas_size={self.canvas_size}")


def _edge(a, b):
    return (a, b) if a <= b else (b, a)


def _grow(edges: list, n: int, grid: int, rng: np.random.Generator, path: bool) -> list:
    """Add ``n`` new lattice edges, each touching the figure (``path``: only at the last point)."""
    edges = list(edges)
    have = set(edges)
    points = [p for e in edges for p in e]
    tip = edges[-1][1] if edges else None
    tries = 0
    while n > 0 and tries < 1000:
        tries += 1
        a = tip if path else points[int(rng.integers(len(points)))]
        dx, dy = STEPS[int(rng.integers(len(STEPS)))]
        b = (a[0] + dx, a[1] + dy)
        if not (0 <= b[0] < grid and 0 <= b[1] < grid) or _edge(a, b) in have:
            continue
        if path and b in points:  # a path does not cross itself at a lattice point
            continue
        have.add(_edge(a, b))
        edges.append((a, b))
        points += [a, b]
        tip = b
        n -= 1
    return edges


def shape_edges(cfg: LeuvenConfig, seed: int, shape_id: int) -> list:
    rng = item_rng(seed, "leuven_shape", shape_id)
    start = (int(rng.integers(1, cfg.grid - 1)), int(rng.integers(1, cfg.grid - 1)))
    # a path from ``start``: seed it with one edge, then extend from its tip
    for _ in range(100):
        dx, dy = STEPS[int(rng.integers(len(STEPS)))]
        b = (start[0] + dx, start[1] + dy)
        if 0 <= b[0] < cfg.grid and 0 <= b[1] < cfg.grid:
            break
    return _grow([(start, b)], int(rng.integers(3, 6)), cfg.grid, rng, True)


def context_edges(cfg: LeuvenConfig, seed: int, shape_id: int, context: int) -> list:
    return _grow(shape_edges(cfg, seed, shape_id), cfg.extra_edges, cfg.grid,
                 item_rng(seed, "leuven_context", shape_id, context), False)


def _items(cfg: LeuvenConfig, seed: int):
    for s in range(cfg.n_shapes):
        rng = item_rng(seed, "bg", s)
        p = {"shape_id": s, "grid": cfg.grid, "spacing": float(cfg.spacing), "n_edges": len(shape_edges(cfg, seed, s)),
             **rgb_columns("line", cfg.line_color), **background_params(cfg, rng), "_seed": int(seed)}
        yield Item("shape", f"shape_{s:03d}", {**p, "context": -1}, set_id=f"shape_{s:03d}")
        for c in range(cfg.contexts):
            yield Item("context", f"context_{s:03d}_{c:03d}", {**p, "context": c}, set_id=f"shape_{s:03d}")


def _render(cfg: LeuvenConfig, item):
    p = item.params
    edges = (shape_edges(cfg, p["_seed"], p["shape_id"]) if item.condition == "shape"
             else context_edges(cfg, p["_seed"], p["shape_id"], p["context"]))
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    o = (cfg.canvas_size - (cfg.grid - 1) * cfg.spacing) / 2
    rgb = (p["line_r"], p["line_g"], p["line_b"])
    for a, b in edges:
        paint(img, segment((o + a[0] * cfg.spacing, o + a[1] * cfg.spacing), (o + b[0] * cfg.spacing, o + b[1] * cfg.spacing),
                           cfg.line_width, "round"), rgb, cfg.antialias)
    return to_uint8(img), {"n_drawn_edges": len(edges)}


register_mindset("leuven_embedded_figures", LeuvenConfig, "lattice line figures alone and hidden in larger figures "
                 "that contain them (L-EFT-like)", "mindset-vision.txt C.3; de-Wit et al. 2017 (L-EFT)",
                 items=_items, render=_render, conditions=("shape", "context"),
                 paper={"n_shapes": 16, "contexts": 4}, lite={"n_shapes": 2, "contexts": 1})
