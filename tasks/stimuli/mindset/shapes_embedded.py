"""MindSet embedded figures (``mindset-vision.txt`` C.3.3; an L-POST-style camouflage test): a polygon outline
alone (``polygon``) and the same polygon, at the same place, hidden among lines (``embedded_polygon``).
``polygon_id`` (0-4) is the decoder's label (train on polygons, test on embedded ones); ``set_id`` links a
polygon image to its embedded versions. Two designs (field ``design``):

``original`` (preset ``paper``; MindSet: Vision's ``embedded_figures`` generator at its committed defaults,
read for its geometry, not copied):

* the five irregular heptagons of the original's source (:data:`ORIGINAL_POLYGONS`, vertex lists in its
  0-100 units), each scaled **per axis** so that its x extent and its y extent are both ``shape_size`` px
  (45; the original's ``center_and_scale``, which stretches the polygons), its box centred on the canvas,
  vertices rounded to whole pixels (``np.round``) — always the same place and pose;
* ``polygon``: the seven edges; **one image per polygon** (the original draws the fixed polygon once);
* ``embedded_polygon`` (``samples`` per polygon, 100): every edge extended across the whole canvas (a line
  through its two vertices), plus ``n_extended`` (10) shifted copies — a random edge moved by
  (U(-W/2, W/2), U(-W/2, W/2)) px, each end clamped into [0, W] (which turns a copy whose end left the
  canvas: the original's "slightly different slope"), then extended across the canvas — plus ``n_random``
  (10) random lines from edge to edge (top to bottom or left to right, 1:1, ends uniform along the edges);
* strokes white on black, round joins, ``line_width`` 1.75 px: the original asks PIL for
  ``int(round(0.00893 × 224))`` = 2 px, and PIL's width-2 lines carry 1.0-2.25 px of ink per unit length
  depending on their slope, 1.72 on average over orientations and 1.80 on the five polygons' edges
  (measured), so 1.75 px gives the same ink per length and the same context ink;
* 505 images at the defaults. The figure's own lines run through the whole context, so the polygon is
  camouflaged: the embedded images' ink (mean intensity / 255) is 0.19 of the image, as the original's
  (tested; recorded from the original's 500 embedded images: 0.1915).

Coordinates of ``original`` are the original's PIL coordinates: a point ``c`` is drawn at the pixel centre
``c + 0.5`` of this package's convention (see ``common.py``), and a line of even width half a pixel off to the
side where PIL puts its extra pixel row (:func:`pil_offsets`), so the polygons fall on the original's pixels.
Knowing deviations (also in ``docs/mindset.md``): antialiasing is exact 4 × 4 coverage instead of the
original's aliased PIL lines blurred by a Gaussian of σ = 0.00334 × W (lines are crisper at the same ink); one
stroke width for all slopes (PIL's varies with the slope, above); a shifted copy whose both ends clamp to one
corner (length 0) draws nothing (PIL draws a dot). The polygon images are one per polygon as in the original,
linked by ``set_id`` to all their embedded versions.

``clean`` (preset ``clean``; Vantage's earlier design): five simple polygons of our own (:data:`POLYGONS`,
longest side ``shape_size``), turned by a random angle and placed at random; the context is ``n_extended``
stubs (15-80 px) continuing polygon edges beyond a corner and ``n_random`` random lines (20-160 px); one
polygon image per embedded image (``samples`` pairs per polygon).

In both designs more lines in the same colour only add ink, so the embedded image contains its polygon image
pixel for pixel (tested).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, item_rng, new_canvas, paint,
                     paint_coverage, polyline, register_mindset, rgb_columns, segment, strokes_coverage, to_uint8)

# The original generator's five polygons (its ``polys``: vertex lists in 0-100 units, x right, y down; the
# closing repeat of the first vertex left out). Facts, re-entered as data.
ORIGINAL_POLYGONS = (
    ((57.24191632273875, 56.91324204660534), (67.83138439623637, 82.164285681352),
     (32.38511628951794, 100.0), (30.804578657842352, 73.57800097038611),
     (39.790659001314935, 49.086636164923235), (0.0, 13.7323319073141),
     (94.72413166442718, 12.682935522851094)),
    ((81.48562751057788, 66.09981880428393), (37.92965499595768, 77.0744200152708),
     (0.0, 68.97209639097005), (44.9389941502286, 34.540151429883004),
     (53.987122366845064, 49.564278276404), (84.56537465354238, 18.919456992657267),
     (100.0, 18.699487501673413)),
    ((35.97327747005214, 45.791246316377155), (11.785178465160033, 100.0),
     (27.099520693118553, 42.4229653007916), (14.996849174804217, 38.15001140882252),
     (0.0, 14.776880790143396), (72.18476581016824, 0.4054647678679052),
     (88.90514143051871, 30.360919479254665)),
    ((71.10439849304493, 58.11478725863726), (61.9937434893466, 60.73142522572432),
     (92.85669179071442, 92.82864165606136), (88.72099545300055, 99.99999999999999),
     (0.0, 39.73040200323956), (21.971533124959556, 37.83178086979938),
     (24.413419434667112, 10.00396765284736)),
    ((99.99999999999999, 68.62298822991318), (1.0462848992740792, 74.25606525894862),
     (39.38222527207329, 41.822553930272285), (28.55589809787002, 40.16660427664721),
     (13.075399744528019, 0.0), (52.12530258921337, 38.638493749406464),
     (79.2845572364489, 40.26425593476456)),
)

# ``clean``: unit-size vertex lists (x right, y down), one simple polygon each (our own)
POLYGONS = (
    ((0.0, 0.0), (1.0, 0.0), (1.0, 0.35), (0.35, 0.35), (0.35, 1.0), (0.0, 1.0)),     # L
    ((0.5, 0.0), (1.0, 0.45), (0.75, 1.0), (0.25, 1.0), (0.0, 0.45)),                  # pentagon
    ((0.0, 0.3), (0.6, 0.3), (0.6, 0.0), (1.0, 0.5), (0.6, 1.0), (0.6, 0.7), (0.0, 0.7)),  # arrow
    ((0.2, 0.0), (0.8, 0.0), (1.0, 1.0), (0.0, 1.0)),                                    # trapezoid
    ((0.0, 0.4), (0.5, 0.0), (1.0, 0.4), (1.0, 1.0), (0.0, 1.0)),                        # house
)
CONDITIONS = ("polygon", "embedded_polygon")
DESIGNS = ("original", "clean")
SHIFTED_EXTENSION = 100  # the original extends a shifted copy 100-fold (its own edges by W-fold: across the canvas)


@dataclasses.dataclass(frozen=True)
class EmbeddedConfig(MindsetConfig):
    design: str = field("original", "'original' = MindSet's five fixed polygons at the centre, edges extended "
                        "across the canvas; 'clean' = own polygons at a random pose with short edge stubs "
                        "(see the module docstring)", choices=DESIGNS)
    samples: int = field(100, "embedded images per polygon (clean: polygon/embedded pairs per polygon)",
                         range=(1, 100_000))
    shape_size: float = field(45.0, "original: the polygon's x and y extents (px); clean: its longest side (px)",
                              range=(10.0, 200.0))
    n_extended: int = field(10, "context lines along polygon edges (original: shifted copies of an edge across "
                            "the canvas; clean: stubs continuing an edge)", range=(0, 100))
    n_random: int = field(10, "random lines (original: edge to edge of the canvas)", range=(0, 200))
    line_width: float = field(1.75, "stroke width (px; see the module docstring)", range=(0.5, 10.0))
    line_color: tuple = field((255, 255, 255), "RGB 0-255 of all lines", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("line_color", self.line_color)
        limit = self.canvas_size - 4 if self.design == "original" else (self.canvas_size - 4) / 1.5
        if self.shape_size > limit:
            what = "the polygon" if self.design == "original" else "the turned polygon"
            raise ConfigError(f"shape_size={self.shape_size} is out of range [10, {limit:.0f}] for "
                              f"design={self.design!r} on canvas_size={self.canvas_size}: {what} must fit the canvas")


# ---------------------------------------------------------------------------------------------- original
def original_vertices(pid: int, shape_size: float, canvas_size: int) -> np.ndarray:
    """int [7, 2] pixel vertices (x, y; the original's PIL coordinates) of original polygon ``pid``: each axis
    scaled so its extent is ``shape_size`` px, the box centred on the canvas, rounded half to even."""
    p = np.asarray(ORIGINAL_POLYGONS[pid], float)
    s = p * shape_size / np.ptp(p, axis=0)
    s = s + canvas_size / 2 - (s.min(0) + s.max(0)) / 2
    return np.round(s).astype(int)


def _extend(a, b, factor: float):
    """The line a-b stretched as the original does: ``a - (factor - 1)(b - a)`` to ``a + factor (b - a)``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = b - a
    return a - d * (factor - 1), a + d * factor


def original_lines(cfg: EmbeddedConfig, verts: np.ndarray, embedded: bool,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """float [n, 2, 2] segments (PIL coordinates) of an ``original`` image: the polygon's 7 edges, and when
    ``embedded`` the same edges extended across the canvas, the ``n_extended`` shifted copies and ``n_random``
    random lines (drawn from ``rng``)."""
    W = cfg.canvas_size
    edges = [(verts[i], verts[(i + 1) % len(verts)]) for i in range(len(verts))]
    if not embedded:
        return np.asarray(edges, float)
    # the edges themselves too: inside their extended lines, but drawn exactly as in the polygon image, so
    # samples on a stroke's boundary cannot round differently on the long line (containment is exact)
    out = edges + [_extend(a, b, W) for a, b in edges]
    half = W // 2
    for _ in range(cfg.n_extended):
        a, b = edges[int(rng.integers(len(edges)))]
        shift = rng.uniform(-half, half, 2)
        a, b = np.clip(a + shift, 0, W), np.clip(b + shift, 0, W)
        out.append(_extend(a, b, SHIFTED_EXTENSION))
    for _ in range(cfg.n_random):
        u, v = rng.uniform(0, W, 2)
        out.append(((u, 0.0), (v, W)) if rng.uniform() < 0.5 else ((0.0, u), (W, v)))
    return np.asarray(out, float).reshape(-1, 2, 2)


def pil_offsets(lines: np.ndarray, width: float) -> np.ndarray:
    """float [n, 1, 2]: where PIL draws each line of ``lines`` [n, 2, 2] (its coordinates) in this package's pixel
    coordinates — the pixel centre (+0.5) and, for an even width, the half pixel PIL adds on one side (measured
    on Pillow's ``ImageDraw.line``: a line of |slope| < 1 lies 0.5 px lower when drawn rightwards and higher when
    drawn leftwards; a steep one 0.5 px to the right when drawn downwards, to the left upwards; at 45° centred)."""
    d = lines[:, 1] - lines[:, 0]
    off = np.full((len(lines), 1, 2), 0.5)
    if round(width) % 2 == 0:
        shallow, steep = np.abs(d[:, 0]) > np.abs(d[:, 1]), np.abs(d[:, 1]) > np.abs(d[:, 0])
        off[shallow, 0, 1] += 0.5 * np.sign(d[shallow, 0])
        off[steep, 0, 0] += 0.5 * np.sign(d[steep, 1])
    return off


# ---------------------------------------------------------------------------------------------- clean
def polygon_points(pid: int, size: float, angle_deg: float, cx: float, cy: float) -> np.ndarray:
    """``clean``: [N, 2] vertices of polygon ``pid``: longest side ``size`` px, turned by ``angle_deg`` about
    its centre, centred on (cx, cy)."""
    p = np.asarray(POLYGONS[pid], float)
    p = (p - (p.min(0) + p.max(0)) / 2) * size / np.ptp(p, axis=0).max()
    a = math.radians(angle_deg)
    R = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return p @ R.T + [cx, cy]


def context_lines(cfg: EmbeddedConfig, pts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``clean``: [n_extended + n_random, 2, 2] segments (x, y): edge continuations beyond a corner (random
    edge, random end, 15-80 px long) and random lines (20-160 px, anywhere)."""
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


# ---------------------------------------------------------------------------------------------- items, render
def _common(cfg: EmbeddedConfig, pid: int, k: int) -> dict:
    return {"design": cfg.design, "polygon_id": pid, "sample": k, "shape_size": float(cfg.shape_size),
            "n_extended": cfg.n_extended, "n_random": cfg.n_random, "line_width": float(cfg.line_width),
            **rgb_columns("line", cfg.line_color)}


def _items(cfg: EmbeddedConfig, seed: int):
    if cfg.design == "original":
        c = cfg.canvas_size / 2
        for pid in range(len(ORIGINAL_POLYGONS)):
            # the polygon alone, once (its own generator), then the embedded samples
            p = {**_common(cfg, pid, 0), "angle_deg": 0.0, "cx": c, "cy": c,
                 **background_params(cfg, item_rng(seed, "polygon", pid)), "_seed": int(seed)}
            yield Item("polygon", f"polygon_{pid}", p, set_id=f"p{pid}")
            for k in range(cfg.samples):
                p = {**_common(cfg, pid, k), "angle_deg": 0.0, "cx": c, "cy": c,
                     **background_params(cfg, item_rng(seed, pid, k)), "_seed": int(seed)}
                yield Item("embedded_polygon", f"embedded_polygon_{pid}_{k:05d}", p, set_id=f"p{pid}")
        return
    for pid in range(len(POLYGONS)):
        for k in range(cfg.samples):
            rng = item_rng(seed, pid, k)
            r = cfg.shape_size * 0.75
            p = {**_common(cfg, pid, k), "angle_deg": round(float(rng.uniform(0, 360)), 4),
                 "cx": round(float(rng.uniform(r + 2, cfg.canvas_size - r - 2)), 4),
                 "cy": round(float(rng.uniform(r + 2, cfg.canvas_size - r - 2)), 4),
                 **background_params(cfg, rng), "_seed": int(seed)}
            for cond in CONDITIONS:
                yield Item(cond, f"{cond}_{pid}_{k:05d}", p, set_id=f"p{pid}_{k:05d}")


def image_lines(cfg: EmbeddedConfig, p: dict, embedded: bool) -> np.ndarray:
    """float [n, 2, 2] segments of the image with params ``p`` in this package's pixel coordinates (the
    polygon's edges first)."""
    if cfg.design == "original":
        verts = original_vertices(p["polygon_id"], p["shape_size"], cfg.canvas_size)
        rng = item_rng(p["_seed"], "context", p["polygon_id"], p["sample"]) if embedded else None
        lines = original_lines(cfg, verts, embedded, rng)
        return lines + pil_offsets(lines, cfg.line_width)
    pts = polygon_points(p["polygon_id"], p["shape_size"], p["angle_deg"], p["cx"], p["cy"])
    edges = np.stack([pts, np.roll(pts, -1, axis=0)], 1)
    if not embedded:
        return edges
    ctx = context_lines(cfg, pts, item_rng(p["_seed"], "context", p["polygon_id"], p["sample"]))
    return np.concatenate([edges, ctx])


def _render(cfg: EmbeddedConfig, item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    rgb = (p["line_r"], p["line_g"], p["line_b"])
    lines = image_lines(cfg, p, item.condition == "embedded_polygon")
    if cfg.design == "original":
        cov = strokes_coverage(lines, cfg.line_width, cfg.canvas_size, "round", cfg.antialias)
        paint_coverage(img, cov, (0, 0), rgb)
        return to_uint8(img), {}
    n = len(POLYGONS[p["polygon_id"]])
    paint(img, polyline(lines[:n, 0], cfg.line_width, closed=True), rgb, cfg.antialias)
    for a, b in lines[n:]:
        paint(img, segment(a, b, cfg.line_width, "round"), rgb, cfg.antialias)
    return to_uint8(img), {}


register_mindset("embedded_figures", EmbeddedConfig, "a polygon alone or hidden among lines that extend its edges "
                 "(label polygon_id)", "mindset-vision.txt C.3.3 (L-POST-style embedded figures)",
                 items=_items, render=_render, conditions=CONDITIONS,
                 paper={"design": "original", "samples": 100, "shape_size": 45.0, "n_extended": 10, "n_random": 10,
                        "line_width": 1.75},
                 lite={"samples": 1},
                 presets={"clean": {"design": "clean", "samples": 100, "shape_size": 45.0, "n_extended": 10,
                                    "n_random": 10, "line_width": 2.0}},
                 figure="the original generator's five polygons (ORIGINAL_POLYGONS)")
