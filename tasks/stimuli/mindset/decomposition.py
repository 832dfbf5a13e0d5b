"""MindSet decomposition (``mindset-vision.txt`` C.1.4, Fig. 6; a variant of Jacob et al., 2021): two
silhouettes touching at one point, split naturally (between the parts) or unnaturally (through a part).

Each pair of shapes (left, right) gives a matched triplet:

* ``no_split``  — the left shape's rightmost vertex touches the right shape's leftmost vertex (one point);
* ``natural``   — the right shape moved right by ``moving_distance`` px (the parts separated);
* ``unnatural`` — the right shape cut by a straight line through its centroid (tilted by ``cut_angle`` from
  vertical) and the far piece moved right by ``moving_distance`` px (a part split).

The left shape is identical in the three images, and both splits move the same amount of silhouette by the
same distance; all three have the same area (tested from the PNGs). Familiar shapes: circle, square,
rectangle, triangle, heptagon and a 50° arc (thick annulus sector), each turned so that its contact point is
a vertex (or the arc's mid point); unfamiliar: ``n_blobs`` smooth random blobs (star-shaped radial
polygons, one per (seed, blob id)). All ordered pairs within a familiarity (6 × 6 + 5 × 5 = 61 pairs, 183 images,
as the original). ``set_id`` = the pair.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, Shape, background_params, background_rgb, check_rgb, difference, item_rng,
                     new_canvas, paint, polygon, register_mindset, rgb_columns, to_uint8, translate, union)

FAMILIAR = ("circle", "square", "rectangle", "triangle", "heptagon", "arc")
SPLITS = ("no_split", "natural", "unnatural")


@dataclasses.dataclass(frozen=True)
class DecompositionConfig(MindsetConfig):
    familiarity: tuple = field(("familiar", "unfamiliar"), "which shape families", choices=("familiar", "unfamiliar"))
    moving_distance: int = field(60, "distance the split-off part moves (px, whole pixels: exact shifts)",
                                 range=(1, 1000))
    shape_size: float = field(56.0, "shape extent (px: circle diameter, square side …)", range=(4.0, 1000.0))
    n_blobs: int = field(5, "unfamiliar blob shapes (all ordered pairs are used)", range=(1, 100))
    max_cut_angle: float = field(20.0, "the unnatural cut is tilted by a random angle in ±this (deg)",
                                 range=(0.0, 60.0))
    shape_color: tuple = field((255, 255, 255), "RGB 0-255 of the silhouettes", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("shape_color", self.shape_color)
        if 2.2 * self.shape_size + self.moving_distance + 8 > self.canvas_size:
            raise ConfigError(f"shape_size={self.shape_size} and moving_distance={self.moving_distance} need "
                              f"2.2 × shape_size + moving_distance + 8 <= canvas_size={self.canvas_size}")


def _turned(pts: np.ndarray, facing: str) -> np.ndarray:
    """Rotate a polygon (about the origin) so that its vertex furthest along +x (``facing='right'``) or -x
    is the one whose direction from the origin is closest to that axis, i.e. the contact is a vertex."""
    ang = np.arctan2(pts[:, 1], pts[:, 0])
    target = 0.0 if facing == "right" else np.pi
    far = np.argmax(np.hypot(pts[:, 0], pts[:, 1]) * np.cos(ang - target))
    d = target - ang[far]
    c, s = np.cos(d), np.sin(d)
    return pts @ np.array([[c, s], [-s, c]])


def outline(kind: str, size: float, facing: str, blob_seed: int = 0) -> np.ndarray:
    """[N, 2] polygon (px, centred near 0) of shape ``kind`` whose extreme vertex faces ``facing``."""
    r = size / 2
    if kind == "circle":
        a = np.linspace(0, 2 * np.pi, 256, endpoint=False)
        return np.stack([r * np.cos(a), r * np.sin(a)], 1) * (1 if facing == "right" else -1)
    if kind == "square":
        pts = np.array([[r, 0], [0, r], [-r, 0], [0, -r]])  # a square on its corner (side size/√2·√2 = size)
    elif kind == "rectangle":
        w, h = r, r / 2
        pts = np.array([[w, h], [-w, h], [-w, -h], [w, -h]])
        pts = pts @ np.array([[np.cos(np.pi / 4), np.sin(np.pi / 4)], [-np.sin(np.pi / 4), np.cos(np.pi / 4)]])
    elif kind == "triangle":
        a = np.deg2rad([0, 120, 240])
        pts = np.stack([r * np.cos(a), r * np.sin(a)], 1)
    elif kind == "heptagon":
        a = 2 * np.pi * np.arange(7) / 7
        pts = np.stack([r * np.cos(a), r * np.sin(a)], 1)
    elif kind == "arc":  # 50° of an annulus, thickness size/4; its outer mid point is the contact
        R, t = size * 0.9, size / 4
        a = np.deg2rad(np.linspace(-25, 25, 40))
        outer = np.stack([R * np.cos(a), R * np.sin(a)], 1)
        inner = np.stack([(R - t) * np.cos(a[::-1]), (R - t) * np.sin(a[::-1])], 1)
        pts = np.concatenate([outer, inner]) - [R - t / 2, 0]
        return pts if facing == "right" else -pts
    elif kind.startswith("blob"):
        rng = np.random.default_rng([blob_seed, int(kind[4:])])
        a = np.linspace(0, 2 * np.pi, 128, endpoint=False)
        rad = np.ones_like(a)
        for k in (2, 3, 4):
            rad += rng.uniform(0.05, 0.18) * np.cos(k * a + rng.uniform(0, 2 * np.pi))
        pts = np.stack([r * 0.85 * rad * np.cos(a), r * 0.85 * rad * np.sin(a)], 1)
    else:
        raise ValueError(f"shape {kind!r}; one of {', '.join(FAMILIAR)} or blob<N>")
    return _turned(pts, facing)


def halfplane(p, normal) -> Shape:
    """Points x with (x - p) · normal >= 0 (bounding box: a large square around p)."""
    px, py = float(p[0]), float(p[1])
    nx, ny = float(normal[0]), float(normal[1])
    return Shape((px - 1e4, py - 1e4, px + 1e4, py + 1e4), lambda x, y: (x - px) * nx + (y - py) * ny >= 0)


def scene(cfg: DecompositionConfig, left: str, right: str, split: str, cut_deg: float, blob_seed: int):
    """The silhouette of one image (a :class:`Shape`), the contact point, and the moved part's area bbox."""
    L = outline(left, cfg.shape_size, "right", blob_seed)
    R = outline(right, cfg.shape_size, "left", blob_seed)
    R = R + (L[:, 0].max() - R[:, 0].min(), L[np.argmax(L[:, 0]), 1] - R[np.argmin(R[:, 0]), 1])
    # centre the widest (split) configuration: x from L's min to R's max + moving distance
    x0, x1 = L[:, 0].min(), R[:, 0].max() + cfg.moving_distance
    ys = np.concatenate([L[:, 1], R[:, 1]])
    dx = round(cfg.canvas_size / 2 - (x0 + x1) / 2)  # whole pixels: every image shares one sub-pixel phase
    dy = round(cfg.canvas_size / 2 - (ys.min() + ys.max()) / 2)
    L, R = L + (dx, dy), R + (dx, dy)
    left_s, right_s = polygon(L), polygon(R)
    d = cfg.moving_distance
    if split == "no_split":
        return union(left_s, right_s)
    if split == "natural":
        return union(left_s, translate(right_s, d, 0))
    c = R.mean(0)
    t = np.deg2rad(cut_deg)
    n = np.array([np.cos(t), np.sin(t)])  # the cut's normal: +x tilted by cut_deg (the far side moves)
    far = halfplane(c, n)
    near_part = difference(right_s, far)
    far_part = Shape(right_s.bbox, lambda x, y: right_s.inside(x, y) & far.inside(x, y))
    return union(left_s, near_part, translate(far_part, d, 0))


def _pairs(cfg: DecompositionConfig):
    for fam in cfg.familiarity:
        kinds = FAMILIAR if fam == "familiar" else tuple(f"blob{i}" for i in range(cfg.n_blobs))
        for a in kinds:
            for b in kinds:
                yield fam, a, b


def items(cfg: DecompositionConfig, seed: int):
    for fam, a, b in _pairs(cfg):
        rng = item_rng(seed, fam, a, b)
        cut = float(rng.uniform(-cfg.max_cut_angle, cfg.max_cut_angle))
        bg = background_params(cfg, rng)
        for split in SPLITS:
            yield Item(f"{fam}_{split}", f"{fam}_{split}_{a}_{b}",
                       {"familiarity": fam, "split": split, "left_shape": a, "right_shape": b, "cut_angle_deg": cut,
                        "moving_distance": cfg.moving_distance, "shape_size": cfg.shape_size, "blob_seed": seed,
                        **rgb_columns("shape", cfg.shape_color), **bg},
                       f"{fam}_{a}_{b}")


def render(cfg: DecompositionConfig, item: Item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    # a blob depends on (dataset seed, blob id) only: the same blob in every pair and split
    paint(img, scene(cfg, p["left_shape"], p["right_shape"], p["split"], p["cut_angle_deg"], p["blob_seed"]),
          cfg.shape_color, cfg.antialias)
    return to_uint8(img), {}


register_mindset("decomposition", DecompositionConfig,
                 "Decomposition: familiar / unfamiliar shape pairs × no split / natural split / unnatural split",
                 "mindset-vision.txt C.1.4 Fig. 6; Jacob et al. 2021", items=items, render=render,
                 conditions=[f"{f}_{s}" for f in ("familiar", "unfamiliar") for s in SPLITS],
                 paper={"n_blobs": 5, "moving_distance": 60}, lite={"n_blobs": 2},
                 test_params={"n_blobs": 2, "familiarity": ["unfamiliar"]}, figure="MindSet Fig. 6")
