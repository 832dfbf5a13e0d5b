"""MindSet same/different (``mindset-vision.txt`` C.3.6; SVRT problem 1 after Puebla & Bowers 2022): two
shapes per image, identical up to a translation (``same``) or not (``diff``), in 10 types; conditions
``<type>_same`` / ``<type>_diff``. Two designs (field ``design``):

``original`` (preset ``paper``; MindSet: Vision's ``same_different_task`` generator at its committed
defaults, ``size_shapes=20``, read for its geometry, not copied). ``s`` = ``shape_size`` (20 px):

* ``regular`` — regular polygons of 3-7 sides and radius ``s``, turned by a whole number of degrees
  (0-360); vertex offsets ``(int(s·sin(2πi/n + rot)), int(s·cos(2πi/n + rot)))`` (truncated);
* ``irregular`` — those polygons with each vertex moved by d ∈ [-s/2, s/2] whole px **along the image
  diagonal** (the original adds one noise value to both coordinates), vertices re-ordered by angle about
  their mean; ``open`` — the same, last edge left out; ``wider_line`` — the same with 3 px strokes (the
  original asks OpenCV for thickness 2, which draws 3 px: measured); ``rnd_color`` — the same in one random
  colour per image (each channel 1-255); ``filled`` — the same filled;
* in these six types ``diff`` draws the second polygon with a **different number of sides** (the original
  samples the two counts without replacement from 3-7) and its own rotation and noise;
* ``straight_lines`` — a line of length ``s`` (ends at ``int(s/2·cos a)``, ``int(s/2·sin a)`` about its
  centre) at 0, 45, 90 or 135°; ``diff`` = two different orientations;
* ``rectangles`` — the first an ``s × s`` square outline, the second the same (``same``) or with one side,
  x or y at 1:1, changed to ``s ± s//2`` (``diff``: 10 or 30 px);
* ``open_squares`` — a 7-point path of two connected squares of side ``s``, (0, s) (0, 0) (s, 0) (s, s)
  (s, 2s) (2s, 2s) (2s, s); ``diff`` = its mirror image (y → 2s - y); ``closed_squares`` — the same path
  closed (two squares meeting at a corner, with the closing line through it);
* positions as the original draws them (whole pixels: polygon centres in [1.5 s, W - 1.5 s), line centres
  in [s/2 + 2, W - s/2 - 2), rectangle corners in [2, W - side - 2), squares' corners in [1, W - 2s)); a pair
  is redrawn until the two shapes stand apart: their centrelines at least ``GAP`` = 5 px + the half widths
  apart and neither inside the other's outline (the original redraws until its blurred image has two separate
  blobs above 2/255; every Vantage image passes that test of the original's, tested);
* strokes 1 px as the original's aliased OpenCV lines: a stroke carries one pixel of ink per step along its
  major axis, so its perpendicular width is ``line_width × max(|cos θ|, |sin θ|)`` (0.71 px at 45°); white on
  black; 5,000 images per type and condition (100,000).

Knowing deviations (also in ``docs/mindset.md``): antialiasing is exact 4 × 4 coverage instead of
aliased strokes blurred by a Gaussian of σ = 0.00334 × W (lines are crisper at the same ink); the overlap test
is geometric (above) instead of counting blobs in the blurred image: the original's blob test lets two corners
come as close as 3.6 px but joins parallel strokes 5 px apart, and one distance that never joins them keeps
the 1.6 % of the original's pairs whose strokes come closer than 6 px out (measured on 4,000 of its images);
the irregular polygons' vertices are ordered once, about the shape's own
mean (the original sorts the placed and the centred copy separately, which can differ on a tie).

``clean`` (preset ``clean``; Vantage's earlier design): smooth closed curves (``regular``; radius = 1 +
three random Fourier harmonics), polygons of 5-9 random vertices (``irregular``, ``open``), curves with
wider strokes, random colour or filled, single squares with one side missing (``open_squares``), rectangles
of random width and height, segments of random length and orientation, square outlines of random size;
2 px strokes (``wider_line`` 4 px); ``diff`` draws the second shape from the same family, constrained to
differ visibly; positions drawn until the two shapes' boxes (``half`` px around each centre) do not overlap.

Exact sameness (both designs): each shape is defined around its own origin and placed at whole pixels, so
two ``same`` shapes have identical pixels (tested by cropping the PNG). Columns ``x1, y1, x2, y2`` are the
two shapes' anchors (clean: centres; original: the polygon or line centre, the rectangle's or squares' top-
left corner, the original's coordinates, whose pixel (x, y) has its centre at (x + 0.5, y + 0.5) here).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, coverage, item_rng, new_canvas,
                     paint, paint_coverage, polygon, polyline, register_mindset, rgb_columns, segment, to_uint8,
                     translate, union)

TYPES = ("regular", "irregular", "open", "wider_line", "rnd_color", "filled", "open_squares", "rectangles",
         "straight_lines", "closed_squares")
CONDITIONS = tuple(f"{t}_{s}" for t in TYPES for s in ("same", "diff"))
DESIGNS = ("original", "clean")
POLYGON_TYPES = ("regular", "irregular", "open", "wider_line", "rnd_color", "filled")
IRREGULARITY = 0.5  # the original's largest vertex move, as a fraction of the radius
LINE_ORIENTATIONS = (0, 45, 90, 135)  # degrees, y down (45 = towards the lower right)
GAP = 5.0  # px between two shapes' strokes (beyond their half widths): the original's blur never joins them


@dataclasses.dataclass(frozen=True)
class SameDiffConfig(MindsetConfig):
    design: str = field("original", "'original' = MindSet's SVRT-1 shapes (regular and perturbed 3-7-gons, "
                        "connected squares, ...); 'clean' = Vantage's smooth curves and random polygons (see "
                        "the module docstring)", choices=DESIGNS)
    types: tuple = field(TYPES, "shape families", choices=TYPES)
    samples: int = field(5000, "images per type and condition (same / diff)", range=(1, 1_000_000))
    shape_size: float = field(20.0, "original: polygon radius, line length, square and rectangle side (px); "
                              "clean: shape extent (px)", range=(6.0, 100.0))
    line_width: float = field(1.0, "stroke width (px; original: per step along the stroke's major axis)",
                              range=(0.5, 10.0))
    wider_line_width: float = field(3.0, "stroke width of the wider_line type (px)", range=(0.5, 10.0))
    shape_color: tuple = field((255, 255, 255), "RGB 0-255 of the shapes (rnd_color: random per image)",
                               range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("shape_color", self.shape_color)
        if self.design == "original":
            w = max(self.line_width, self.wider_line_width)
            if not _fits_apart(self.shape_size, w, self.canvas_size):
                top = max((v for v in range(6, 101) if _fits_apart(v, w, self.canvas_size)), default=None)
                raise ConfigError(f"shape_size={self.shape_size} is out of range [6, {top}] for design='original' "
                                  f"on canvas_size={self.canvas_size}: two perturbed polygons (radius 1.5 × "
                                  f"shape_size) must fit apart in the range of their centres")
        elif 2 * (self.shape_size + 4 * self.line_width) + 8 > self.canvas_size:
            raise ConfigError(f"shape_size={self.shape_size} is out of range: two shapes of that size do not fit "
                              f"side by side on canvas_size={self.canvas_size}")


# ---------------------------------------------------------------------------------------------- original
def _fits_apart(size: float, width: float, canvas: int) -> bool:
    """Whether two ``original`` shapes of ``size`` can stand apart with room to spare: a perturbed polygon
    reaches R = size + int(size / 2) from its centre, centres lie in [R, canvas - R), so the centres' range
    must hold two such shapes, the gap and 16 px (the widest of the types: squares span 2 size < 2 R)."""
    R = int(size + int(size * IRREGULARITY))
    return canvas - 2 * R >= 2 * R + 2 * (GAP + width) + 16


def regular_offsets(n: int, rotation_deg: int, radius: float) -> np.ndarray:
    """int [n, 2] vertex offsets (x, y) of the original's regular polygon: ``x = int(r sin(2πi/n + rot))``,
    ``y = int(r cos(…))``, truncated towards zero (Python floats, as the original computes them)."""
    rot = math.radians(rotation_deg)
    seg = 2 * math.pi / n
    return np.array([(int(math.sin(seg * i + rot) * radius), int(math.cos(seg * i + rot) * radius))
                     for i in range(n)], int)


def angle_order(points: np.ndarray) -> np.ndarray:
    """``points`` re-ordered by ``atan2(dx, dy)`` about their mean (the original's ``ccw_sort``): a star-shaped,
    simple polygon through them."""
    d = points - points.mean(0)
    return points[np.argsort(np.arctan2(d[:, 0], d[:, 1]), kind="stable")]


def line_offsets(length: float, orientation_deg: int) -> np.ndarray:
    """int [2, 2] ends of the original's straight line about its centre: ``int(length/2 · cos a)``,
    ``int(length/2 · sin a)`` for a and a + 180°."""
    r = length / 2
    return np.array([(int(r * math.cos(math.radians(a))), int(r * math.sin(math.radians(a))))
                     for a in (orientation_deg, orientation_deg + 180)], int)


def squares_path(side: int, mirrored: bool) -> np.ndarray:
    """int [7, 2] the original's two connected squares (x right, y down); ``mirrored``: y -> 2 side - y."""
    s = side
    p = np.array([(0, s), (0, 0), (s, 0), (s, s), (s, 2 * s), (2 * s, 2 * s), (2 * s, s)], int)
    if mirrored:
        p[:, 1] = 2 * s - p[:, 1]
    return p


def _spec(points, closed: bool, filled: bool, width: float, cap: str, rotation: int = 0, raster: bool = True) -> dict:
    pts = np.asarray(points, int)
    lo, hi = pts.min(0).tolist(), pts.max(0).tolist()  # the box, kept for the quick tests of ``apart``
    return {"points": pts, "closed": closed, "filled": filled, "width": width, "cap": cap, "rotation": int(rotation),
            "raster": raster, "lo": lo, "hi": hi}


def _two_of(rng: np.random.Generator, values) -> tuple:
    """Two different values of ``values``, uniformly (the original's ``random.sample(values, 2)``)."""
    i, j = int(rng.integers(len(values))), int(rng.integers(len(values) - 1))
    return values[i], values[j + (j >= i)]


def original_pair(kind: str, same: bool, cfg: SameDiffConfig, rng: np.random.Generator):
    """One draw of the original's geometry for type ``kind``: (shape a, shape b, anchor a, anchor b). A shape
    is a dict: int ``points`` [N, 2] about its anchor (the original's pixel coordinates), ``closed``,
    ``filled``, stroke ``width`` and ``cap``, ``rotation`` (deg), ``raster`` (the width counts per step along
    the major axis: every type's strokes but wider_line's). Anchors are whole pixels."""
    W, s = cfg.canvas_size, cfg.shape_size
    if kind in POLYGON_TYPES:
        r = s
        max_dev = int(r * IRREGULARITY)
        margin = int(r + max_dev)
        sides = _two_of(rng, (3, 4, 5, 6, 7))
        rots = rng.integers(0, 361, 2)
        anchors = rng.integers(margin, W - margin, 4)
        width = cfg.wider_line_width if kind == "wider_line" else cfg.line_width

        def one(n, rot):
            p = regular_offsets(int(n), int(rot), r)
            if kind != "regular":
                d = rng.integers(-max_dev, max_dev + 1, len(p))
                p = angle_order(p + d[:, None])
            return _spec(p, kind != "open", kind == "filled", width, "round", rot, raster=kind != "wider_line")

        a = one(sides[0], rots[0])
        b = a if same else one(sides[1], rots[1])
        return a, b, anchors[:2], anchors[2:]
    if kind == "straight_lines":
        o = _two_of(rng, LINE_ORIENTATIONS)
        lo, hi = int(s / 2) + 2, W - int(s / 2 + 2)
        anchors = rng.integers(lo, hi, 4)
        a = _spec(line_offsets(s, int(o[0])), False, False, cfg.line_width, "square", o[0])
        b = a if same else _spec(line_offsets(s, int(o[1])), False, False, cfg.line_width, "square", o[1])
        return a, b, anchors[:2], anchors[2:]
    side = int(s)
    if kind == "rectangles":
        wb, hb = side, side
        if not same:
            changed = side + (side // 2) * (1 if rng.integers(2) else -1)
            if rng.uniform() < 0.5:
                wb = changed
            else:
                hb = changed
        # the second's position is drawn after the first's (each side's range from its own size)
        ax, ay = rng.integers(2, W - (side + 2), 2)
        bx, by = rng.integers(2, W - (wb + 2)), rng.integers(2, W - (hb + 2))
        box = lambda w, h: _spec([(0, 0), (w, 0), (w, h), (0, h)], True, False, cfg.line_width, "square")  # noqa: E731
        a = box(side, side)
        return a, (a if same else box(wb, hb)), (ax, ay), (bx, by)
    if kind in ("open_squares", "closed_squares"):
        closed = kind == "closed_squares"
        anchors = rng.integers(1, W - 2 * side, 4)
        a = _spec(squares_path(side, False), closed, False, cfg.line_width, "square")
        b = a if same else _spec(squares_path(side, True), closed, False, cfg.line_width, "square")
        return a, b, anchors[:2], anchors[2:]
    raise ValueError(f"type={kind!r}; one of {', '.join(TYPES)}")


def stroke_pieces(spec: dict) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(p, q, width) of each stroke of an ``original`` shape about its anchor, in this package's pixel
    coordinates (the original's pixel (x, y) -> its centre (x + 0.5, y + 0.5)); a ``raster`` stroke's
    perpendicular width is ``width × max(|dx|, |dy|) / length`` (the original's aliased 1 px lines: one pixel
    per step along the major axis), a wider_line stroke's is plain (OpenCV's thick lines are not aliased that
    way)."""
    pts = spec["points"] + 0.5
    ends = list(zip(pts[:-1], pts[1:])) + ([(pts[-1], pts[0])] if spec["closed"] else [])
    out = []
    for p, q in ends:
        d = np.abs(q - p)
        L = math.hypot(d[0], d[1])
        w = spec["width"]
        if spec["raster"] and L > 0:
            w = w * float(d.max()) / L
        out.append((p, q, w))
    return out


def _segments_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest distance between segment sets ``a`` [m, 2, 2] and ``b`` [n, 2, 2] (0 where two cross)."""
    p, q = a[:, None, 0], a[:, None, 1]
    r, s = b[None, :, 0], b[None, :, 1]

    def point_seg(x, u, v):  # distance from points x to segments u-v (broadcast)
        d = v - u
        dd = (d * d).sum(-1)
        t = np.clip(((x - u) * d).sum(-1) / np.where(dd > 0, dd, 1), 0, 1)
        return np.hypot(*np.moveaxis(u + t[..., None] * d - x, -1, 0))

    dist = np.minimum(np.minimum(point_seg(p, r, s), point_seg(q, r, s)),
                      np.minimum(point_seg(r, p, q), point_seg(s, p, q)))

    def cross(o, u, v):
        return (u[..., 0] - o[..., 0]) * (v[..., 1] - o[..., 1]) - (u[..., 1] - o[..., 1]) * (v[..., 0] - o[..., 0])

    d1, d2 = cross(r, s, p), cross(r, s, q)
    d3, d4 = cross(p, q, r), cross(p, q, s)
    crossing = (d1 * d2 < 0) & (d3 * d4 < 0)
    return float(np.where(crossing, 0.0, dist).min())


def _inside(points: np.ndarray, poly: np.ndarray) -> bool:
    """Whether any of ``points`` [k, 2] lies inside closed polygon ``poly`` [n, 2] (even-odd rule)."""
    x, y = points[:, None, 0], points[:, None, 1]
    x0, y0 = poly[None, :, 0], poly[None, :, 1]
    x1, y1 = np.roll(poly[:, 0], -1)[None], np.roll(poly[:, 1], -1)[None]
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
    crosses = ((y0 > y) != (y1 > y)) & (x < xc)
    return bool((crosses.sum(1) % 2 == 1).any())


def _segments(points: np.ndarray, closed: bool) -> np.ndarray:
    """[n, 2, 2] the strokes' centrelines of a path through ``points``."""
    ends = np.concatenate([points, points[:1]]) if closed else points
    return np.stack([ends[:-1], ends[1:]], 1).astype(float)


def apart(a: dict, b: dict, anchor_a, anchor_b) -> bool:
    """Whether shapes ``a`` and ``b`` at their anchors stand apart: every stroke centreline of one at least
    ``GAP`` px + both (nominal) half widths from every stroke of the other, and neither inside the other's
    closed outline. Shapes whose boxes are that far apart are accepted without the pairwise test."""
    (xa, ya), (xb, yb) = (int(v) for v in anchor_a), (int(v) for v in anchor_b)
    need = GAP + (a["width"] + b["width"]) / 2
    if (a["lo"][0] + xa - b["hi"][0] - xb >= need or b["lo"][0] + xb - a["hi"][0] - xa >= need
            or a["lo"][1] + ya - b["hi"][1] - yb >= need or b["lo"][1] + yb - a["hi"][1] - ya >= need):
        return True
    pa, pb = a["points"] + (xa, ya), b["points"] + (xb, yb)
    if _segments_distance(_segments(pa, a["closed"]), _segments(pb, b["closed"])) < need:
        return False
    return not ((a["closed"] and _inside(pb, pa)) or (b["closed"] and _inside(pa, pb)))


def _original_shape(spec: dict):
    strokes = union(*(segment(p, q, w, spec["cap"]) for p, q, w in stroke_pieces(spec)))
    return union(polygon(spec["points"] + 0.5), strokes) if spec["filled"] else strokes


def original_geometry(cfg: SameDiffConfig, p: dict):
    """The ``original`` pair of the image with params ``p``: (shape a, shape b, anchor a, anchor b, colour),
    drawn from the item's generator until the shapes stand apart (:func:`apart`). Done when the image is
    rendered (in the writer's workers, not in the serial items pass); the render returns the columns."""
    rng = item_rng(p["_seed"], p["type"], p["same"], p["sample"])
    while True:
        a, b, pa, pb = original_pair(p["type"], p["same"], cfg, rng)
        if apart(a, b, pa, pb):
            break
    colour = rng.integers(1, 256, 3) if p["type"] == "rnd_color" else cfg.shape_color
    return a, b, (int(pa[0]), int(pa[1])), (int(pb[0]), int(pb[1])), colour


def original_columns(a: dict, b: dict, pa, pb, colour) -> dict:
    """The annotation columns of an ``original`` pair: anchors, vertex counts, rotations (deg), each shape's
    box (px, between extreme vertices), the stroke width asked for, the colour."""
    return {"x1": pa[0], "y1": pa[1], "x2": pb[0], "y2": pb[1],
            "n_vertices_1": len(a["points"]), "n_vertices_2": len(b["points"]),
            "rotation_1": a["rotation"], "rotation_2": b["rotation"],
            "box_w_1": a["hi"][0] - a["lo"][0], "box_h_1": a["hi"][1] - a["lo"][1],
            "box_w_2": b["hi"][0] - b["lo"][0], "box_h_2": b["hi"][1] - b["lo"][1],
            "line_width": float(a["width"]), **rgb_columns("shape", colour)}


def _original_items(cfg: SameDiffConfig, seed: int):
    fixed = background_params(cfg, None) if cfg.background == "fixed" else None
    for t in cfg.types:
        for same in (True, False):
            for k in range(cfg.samples):
                cond = f"{t}_{'same' if same else 'diff'}"
                bg = fixed or background_params(cfg, item_rng(seed, "background", t, same, k))
                yield Item(cond, f"{cond}_{k:06d}",
                           {"design": "original", "type": t, "same": same, "sample": k,
                            "shape_size": float(cfg.shape_size), **bg, "_seed": int(seed)})


# ---------------------------------------------------------------------------------------------- clean
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


def shape_spec(kind: str, rng: np.random.Generator, size: float, width: float, wider: float | None = None) -> dict:
    """``clean``: one shape of family ``kind`` around the origin: ``points`` [N, 2], ``style`` (outline / open /
    filled / segment) and stroke ``width`` (px; ``wider`` for wider_line, default 2 × width), plus ``key``
    numbers that tell two shapes of the family apart."""
    if kind in ("regular", "wider_line", "rnd_color", "filled"):
        pts = _fourier_curve(rng, size)
        style = "filled" if kind == "filled" else "outline"
        return {"points": pts, "style": style, "width": (wider or 2 * width) if kind == "wider_line" else width,
                "key": pts}
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


def _clean_shapes(cfg: SameDiffConfig, p: dict) -> tuple[dict, dict]:
    rng = item_rng(p["_seed"], "shape", p["type"], p["sample"], p["same"])
    first = shape_spec(p["type"], rng, cfg.shape_size, cfg.line_width, cfg.wider_line_width)
    if p["same"]:
        return first, first
    while True:
        second = shape_spec(p["type"], rng, cfg.shape_size, cfg.line_width, cfg.wider_line_width)
        if _differs(first, second, cfg.shape_size):
            return first, second


def _clean_shape(spec: dict):
    pts, w = spec["points"], spec["width"]
    if spec["style"] == "filled":
        return polygon(pts)
    if spec["style"] == "segment":
        return segment(pts[0], pts[1], w, "round")
    return polyline(pts, w, closed=spec["style"] == "outline")


def _clean_items(cfg: SameDiffConfig, seed: int):
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
                           {"design": "clean", "type": t, "same": same, "sample": k, "x1": int(c[0]),
                            "y1": int(c[1]), "x2": int(c[2]), "y2": int(c[3]), "half": half,
                            "shape_size": float(cfg.shape_size), **rgb_columns("shape", colour),
                            **background_params(cfg, rng), "_seed": int(seed)})


# ---------------------------------------------------------------------------------------------- both
def _items(cfg: SameDiffConfig, seed: int):
    yield from (_original_items if cfg.design == "original" else _clean_items)(cfg, seed)


def _render(cfg: SameDiffConfig, item, reuse: bool = True):
    """The two shapes painted at their anchors (``original``: the pair is drawn here, its columns returned). A
    ``same`` pair is sampled once: moved by whole pixels, a shape meets the same sub-pixel samples (exact in
    binary) with the same arithmetic, so its coverage block is the same (``reuse=False`` samples both, the
    plain twin; tests compare)."""
    p = item.params
    if cfg.design == "original":
        sa, sb, (x1, y1), (x2, y2), colour = original_geometry(cfg, p)
        a, b = _original_shape(sa), (None if sb is sa else _original_shape(sb))
        extra = original_columns(sa, sb, (x1, y1), (x2, y2), colour)
        rgb = tuple(int(v) for v in colour)
    else:
        sa, sb = _clean_shapes(cfg, p)
        a, b = _clean_shape(sa), (None if sb is sa else _clean_shape(sb))
        (x1, y1, x2, y2), extra = (p["x1"], p["y1"], p["x2"], p["y2"]), {}
        rgb = (p["shape_r"], p["shape_g"], p["shape_b"])
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    if reuse and b is None:
        size = cfg.canvas_size
        cov, (r0, c0) = coverage(translate(a, x1, y1), size, cfg.antialias)
        r2, c2 = r0 + y2 - y1, c0 + x2 - x1
        h, w = cov.shape
        # both blocks whole (not clipped by the canvas), so the second is the first moved by whole pixels
        if cov.size and min(r0, c0, r2, c2) > 0 and max(r0, r2) + h < size and max(c0, c2) + w < size:
            paint_coverage(img, cov, (r0, c0), rgb)
            paint_coverage(img, cov, (r2, c2), rgb)
            return to_uint8(img), extra
    paint(img, translate(a, x1, y1), rgb, cfg.antialias)
    paint(img, translate(a if b is None else b, x2, y2), rgb, cfg.antialias)
    return to_uint8(img), extra


register_mindset("same_different", SameDiffConfig, "two shapes, identical up to translation or not, in 10 SVRT-1 "
                 "types", "mindset-vision.txt C.3.6; Puebla & Bowers 2022 (SVRT problem 1)", items=_items,
                 render=_render, conditions=CONDITIONS,
                 paper={"design": "original", "samples": 5000, "shape_size": 20.0, "line_width": 1.0,
                        "wider_line_width": 3.0},
                 lite={"samples": 1},
                 presets={"clean": {"design": "clean", "samples": 5000, "shape_size": 40.0, "line_width": 2.0,
                                    "wider_line_width": 4.0}})
