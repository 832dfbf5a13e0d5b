"""MindSet shape datasets drawn from the procedural object library (``mindset-vision.txt`` C.3; the original
uses Baker et al.'s (2018) line drawings of ImageNet classes, obtained on request):

* ``mindset/line_drawings`` — outline + internal feature lines at a constant stroke width;
* ``mindset/silhouettes`` — the filled silhouette;
* ``mindset/dotted_line_drawings`` — the line drawing's lines replaced by dots ``dot_distance`` px apart
  (original: distance 5, size 1);
* ``mindset/segmented_line_drawings`` — Biederman's (1987) complementary images: a grid of stripes at
  ``grid_degree`` (cell ``grid_size``, thickness ``grid_thickness``; original 45°, 8, 4) deletes part of
  the drawing (``del``) and keeps exactly that part in the complement (``del_complement``): every pixel
  of the drawing goes wholly to one of the two, so the two are disjoint and their union is the drawing.

One folder per category (conditions = the library category names; segmented: ``del``/``del_complement``,
class in a column). Each row carries the object's labels and view (see ``_objects.py``). Presets: ``paper``
draws the 36 objects of ``_objects.BAKER36`` (19 animals, 17 objects, standing in for Baker et al.'s 36
drawings: 36 images, segmented 72, as the original) at longest side 200 px on 224 px, white on black as the
original's committed defaults draw them;
``imagenet16`` draws 5 instances of each ImageNet-16 category (80 images, segmented 160) for the 16-class
ImageNet (OOD) use, black on white (as the 16-class silhouettes and drawings of Geirhos et al.).
"""
from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

from ..registry import Item, field
from ._objects import (WHITE_ON_BLACK, ObjectsConfig, compose, library_categories, object_alpha, object_list,
                       object_params)
from .common import background_params, disc, item_rng, new_canvas, paint, register_mindset, to_uint8, background_rgb

REFERENCE = "mindset-vision.txt C.3; Baker et al. 2018 (line drawings of ImageNet classes)"


def object_items(cfg: ObjectsConfig, seed: int, condition=None):
    """One item per (category, instance) of :func:`object_list`: condition = the category (or ``condition``)."""
    for c, i in object_list(cfg):
        rng = item_rng(seed, c, i)
        p = {**object_params(cfg, c, i, seed, rng), **background_params(cfg, rng)}
        yield Item(c if condition is None else condition, f"{c}_{i:02d}", p)


def _items(cfg, seed):
    return object_items(cfg, seed)


def _render_lines(cfg, item):
    return compose(cfg, item.params, object_alpha(cfg, item.params, "line")), {}


def _render_silhouette(cfg, item):
    return compose(cfg, item.params, object_alpha(cfg, item.params, "silhouette")), {}


PAPER = {"object_set": "baker36", **WHITE_ON_BLACK}  # Baker et al.'s 36 drawings' design: 36 images (see _objects.BAKER36)
IMAGENET16 = {"object_set": "grid", "categories": library_categories("imagenet16"), "instances": 5}
LITE = {"instances": 1, "categories": ("airplane", "bicycle", "cat", "chair")}
CATS = library_categories(None)  # condition vocabulary: any library category

register_mindset("line_drawings", ObjectsConfig, "line drawings of procedural objects (paper: 36 standing in for Baker et al.'s "
                 "drawings; imagenet16: the 16 ImageNet-16 classes × 5)",
                 REFERENCE, items=_items, render=_render_lines, conditions=CATS, paper=PAPER, lite=LITE,
                 presets={"imagenet16": IMAGENET16})
register_mindset("silhouettes", ObjectsConfig, "filled silhouettes of procedural objects (paper: 36 standing in for Baker et al.'s "
                 "drawings; imagenet16: the 16 ImageNet-16 classes × 5)",
                 REFERENCE, items=_items, render=_render_silhouette, conditions=CATS, paper=PAPER, lite=LITE,
                 presets={"imagenet16": IMAGENET16})


# ---------------------------------------------------------------------------------------------- dotted
@dataclasses.dataclass(frozen=True)
class DottedConfig(ObjectsConfig):
    dot_distance: float = field(5.0, "distance between neighbouring dots along a line (px)", range=(2.0, 100.0))
    dot_radius: float = field(1.0, "dot radius (px)", range=(0.5, 20.0))


def skeleton_order(mask: np.ndarray) -> list[tuple[int, int]]:
    """Pixels (row, col) of the one-pixel skeleton of ``mask`` (bool [H, W]) in traversal order: each
    connected piece walked breadth-first from one of its end points, so consecutive pixels follow the line."""
    from skimage.morphology import skeletonize

    sk = skeletonize(mask)
    H, W = sk.shape
    nb = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]
    pts = np.argwhere(sk)
    count = np.zeros(sk.shape, int)
    for dr, dc in nb:
        count += np.roll(np.roll(sk, dr, 0), dc, 1)
    seen = np.zeros(sk.shape, bool)
    # end points first (one neighbour), then the rest (closed loops), each in raster order: deterministic
    starts = sorted(map(tuple, pts), key=lambda rc: (count[rc] != 1, rc))
    order = []
    for s in starts:
        if seen[s]:
            continue
        q = deque([s])
        seen[s] = True
        while q:
            r, c = q.popleft()
            order.append((r, c))
            for dr, dc in nb:
                rr, cc = r + dr, c + dc
                if 0 <= rr < H and 0 <= cc < W and sk[rr, cc] and not seen[rr, cc]:
                    seen[rr, cc] = True
                    q.append((rr, cc))
    return order


def dot_centres(ink: np.ndarray, distance: float) -> np.ndarray:
    """Dot centres [N, 2] (x, y; pixel centres) along the lines of a drawing (``ink`` coverage [H, W]):
    greedy along the skeleton in traversal order, a dot wherever no earlier dot is closer than ``distance``
    px. Neighbouring dots are therefore >= ``distance`` apart, and every skeleton pixel is within
    ``distance`` of a dot."""
    order = skeleton_order(ink >= 0.5)
    H, W = ink.shape
    blocked = np.zeros((H, W), bool)
    R = int(np.ceil(distance))
    dr, dc = np.mgrid[-R:R + 1, -R:R + 1]
    near = dr ** 2 + dc ** 2 < distance ** 2
    dr, dc = dr[near], dc[near]
    out = []
    for r, c in order:
        if blocked[r, c]:
            continue
        out.append((c + 0.5, r + 0.5))
        rr, cc = r + dr, c + dc
        ok = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)
        blocked[rr[ok], cc[ok]] = True
    return np.asarray(out, float).reshape(-1, 2)


def _render_dotted(cfg: DottedConfig, item):
    p = item.params
    centres = dot_centres(object_alpha(cfg, p, "line"), cfg.dot_distance)
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    for x, y in centres:
        paint(img, disc(x, y, cfg.dot_radius), cfg.ink_color, cfg.antialias)
    return to_uint8(img), {"n_dots": int(len(centres)), "dot_distance": float(cfg.dot_distance),
                           "dot_radius": float(cfg.dot_radius)}


register_mindset("dotted_line_drawings", DottedConfig, "line drawings of procedural objects drawn as dots "
                 "dot_distance px apart", REFERENCE, items=_items, render=_render_dotted, conditions=CATS,
                 paper={**PAPER, "dot_distance": 5.0, "dot_radius": 1.0}, lite=LITE,
                 presets={"imagenet16": {**IMAGENET16, "dot_distance": 5.0, "dot_radius": 1.0}})


# ---------------------------------------------------------------------------------------------- segmented
@dataclasses.dataclass(frozen=True)
class SegmentedConfig(ObjectsConfig):
    grid_degree: float = field(45.0, "orientation of the grid's stripes (deg; the second set is at +90)",
                               range=(0.0, 180.0))
    grid_size: int = field(8, "grid period (px)", range=(2, 512))
    grid_thickness: int = field(4, "stripe thickness (px); must be < grid_size", range=(1, 511))

    def __post_init__(self):
        super().__post_init__()
        from ..registry import ConfigError

        if self.grid_thickness >= self.grid_size:
            raise ConfigError(f"grid_thickness={self.grid_thickness} is out of range [1, grid_size - 1 = "
                              f"{self.grid_size - 1}]: stripes as wide as the period delete everything")


def grid_mask(size: int, degree: float, period: int, thickness: int, shift: tuple[float, float]) -> np.ndarray:
    """bool [size, size]: pixels whose centre lies on a stripe of either set (at ``degree`` and ``degree`` +
    90), stripes ``thickness`` px wide every ``period`` px, offset by ``shift`` (px along each set's normal)."""
    y, x = np.mgrid[0:size, 0:size] + 0.5
    out = np.zeros((size, size), bool)
    for k, a in enumerate((degree, degree + 90.0)):
        t = np.radians(a)
        s = x * np.cos(t) + y * np.sin(t) + shift[k]
        out |= np.mod(s, period) < thickness
    return out


def _segmented_items(cfg: SegmentedConfig, seed: int):
    for base in object_items(cfg, seed, condition="del"):
        rng = item_rng(seed, "grid", base.item_id)
        shift = rng.uniform(0, cfg.grid_size, 2)
        p = {**base.params, "grid_shift_a": round(float(shift[0]), 4), "grid_shift_b": round(float(shift[1]), 4),
             "grid_degree": float(cfg.grid_degree), "grid_size": int(cfg.grid_size),
             "grid_thickness": int(cfg.grid_thickness)}
        for cond in ("del", "del_complement"):
            yield Item(cond, f"{base.item_id}_{cond}", {**p, "is_complement": cond == "del_complement"},
                       set_id=base.item_id)


def segment_pair(cfg: SegmentedConfig, p: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(drawing, deleted, complement) coverage [H, W]: the grid removes its pixels from the drawing; the
    complement is exactly those pixels (deleted + complement == drawing, deleted × complement == 0)."""
    ink = object_alpha(cfg, p, "line")
    on_grid = grid_mask(cfg.canvas_size, p["grid_degree"], p["grid_size"], p["grid_thickness"],
                        (p["grid_shift_a"], p["grid_shift_b"]))
    return ink, np.where(on_grid, 0.0, ink).astype(np.float32), np.where(on_grid, ink, 0.0).astype(np.float32)


def _render_segmented(cfg: SegmentedConfig, item):
    _, deleted, complement = segment_pair(cfg, item.params)
    alpha = complement if item.params["is_complement"] else deleted
    return compose(cfg, item.params, alpha), {"ink_fraction": round(float(alpha.sum()), 4)}


register_mindset("segmented_line_drawings", SegmentedConfig, "complementary halves of line drawings (Biederman): "
                 "a stripe grid deletes part of the drawing, the complement keeps exactly that part",
                 REFERENCE + "; Biederman 1987", items=_segmented_items, render=_render_segmented,
                 conditions=("del", "del_complement"), paper={**PAPER, "grid_degree": 45.0, "grid_size": 8,
                                                              "grid_thickness": 4}, lite=LITE,
                 presets={"imagenet16": {**IMAGENET16, "grid_degree": 45.0, "grid_size": 8, "grid_thickness": 4}})
