"""What every MindSet: Vision generator shares (Biscione et al., 2024, ``papers/mindset-vision.txt``).

Stable API (additions only; the illusion and shape groups build on it):

* naming — every MindSet dataset is registered as ``mindset/<name>`` (:func:`dataset_name`); the slash is
  only part of the registry key (the CLI takes ``dataset=mindset/weber_law``; the writer never uses the
  name as a path, so the output folder is whatever ``out=`` says);
* :func:`register_mindset` — :func:`tasks.stimuli.registry.register` plus the MindSet contract: both
  presets ``paper`` (the original's counts and defaults) and ``lite`` (a few images per condition), the
  condition vocabulary (declared, checked by the schema test), the paper section and source figure;
* :class:`MindsetConfig` — the shared configuration fields (canvas 224, background mode and colour,
  antialiasing) that each dataset's ``Config`` inherits;
* backgrounds — :func:`background_params` (drawn in ``items``, so the actual colour is an annotation
  column) and :func:`new_canvas`;
* drawing — antialiased primitives as exact geometry sampled on a ``k × k`` sub-pixel grid (:class:`Shape`,
  :func:`disc`, :func:`segment`, :func:`polyline`, :func:`polygon`, :func:`ring`, :func:`rect`, the set
  operations :func:`union`, :func:`difference`, :func:`intersection`, :func:`translate`) painted with
  :func:`paint`; many long straight strokes at once with :func:`strokes_coverage`; text with the DejaVu fonts
  matplotlib ships (:func:`text_coverage`, :func:`paint_coverage`; many turned glyphs at once, PIL's
  rotate pixels bit for bit: :func:`stamp_glyphs`);
* :func:`item_rng` — a per-item generator seeded from (dataset seed, item coordinates);
* :func:`schema_problems` — the property every MindSet output must have (every row a file, every file a
  row, typed columns, the declared conditions), used by the tests of every MindSet group.

Annotation schema (one for all MindSet datasets): the writer's standard columns
``file_name`` (the image path relative to the dataset folder; the original's ``Path``), ``dataset``,
``condition`` (lower-case snake-case names, the dataset's declared vocabulary, one folder each),
``item_id`` (unique), ``set_id`` (links the images of one matched set — pair, triplet — that a similarity
judgment compares; empty where the design has none) and ``seed``, followed by typed parameter columns:
numbers as int64/float64, flags as boolean, names as strings; never a Python repr (a colour is three
integer columns ``<name>_r, <name>_g, <name>_b``; see :func:`rgb_columns`).

Coordinate convention (all drawing): continuous pixel coordinates, origin at the image's top-left corner,
x to the right, y down; pixel (row i, column j) is the unit square [j, j+1) × [i, i+1) with its centre at
(j + 0.5, i + 0.5). Colours are RGB in 0-255.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from infra.registry import Registry

from ..registry import ConfigError, field, register

PREFIX = "mindset/"
PRESETS = ("paper", "lite")
SUPERSAMPLE = 4  # sub-pixel samples per axis when antialiasing (16 per pixel: coverage in steps of 1/16)
CONDITION_PATTERN = re.compile(r"^[a-z0-9]+(?:_[a-z0-9.]+)*$")

# name -> what the schema test checks: the declared conditions, the paper section, the figure followed
MINDSET: Registry[dict[str, Any]] = Registry("MindSet dataset", key="dataset")


def dataset_name(short: str) -> str:
    """The registry name of MindSet dataset ``short`` (``"weber_law"`` -> ``"mindset/weber_law"``)."""
    if not re.fullmatch(r"[a-z0-9_]+", short):
        raise ValueError(f"MindSet dataset name {short!r}: use lower-case letters, digits and underscores")
    return PREFIX + short


def register_mindset(short: str, Config: type, description: str, reference: str, *, items, render,
                     conditions: Sequence[str] | str, paper: dict, lite: dict, random: bool = True,
                     test_params: dict | None = None, presets: dict | None = None, figure: str = ""):
    """Register MindSet dataset ``mindset/<short>``.

    ``reference`` names the paper section (e.g. ``"mindset-vision.txt C.1.1; Jacob et al. 2021"``);
    ``conditions`` is the dataset's full condition vocabulary (every item's ``condition`` must be one of
    them; names match :data:`CONDITION_PATTERN`), or for a parametric vocabulary one regular expression
    that every condition must match in full (e.g. ``r"grey_[0-9]{3}"``); ``paper`` and ``lite`` are the two
    required presets (further ``presets`` may be added); ``test_params`` defaults to ``lite``. ``--list`` shows the
    description, the reference and the conditions.
    """
    name = dataset_name(short)
    if isinstance(conditions, str):
        re.compile(conditions)
        listed = f"/{conditions}/"
    else:
        conditions = tuple(conditions)
        bad = [c for c in conditions if not CONDITION_PATTERN.match(c)]
        if bad or len(set(conditions)) != len(conditions):
            raise ValueError(f"{name}: conditions must be unique lower-case snake-case names; bad: {bad}")
        listed = ", ".join(conditions)
    if not issubclass(Config, MindsetConfig):
        raise TypeError(f"{name}: Config must inherit MindsetConfig (canvas, background, antialias)")
    known = {f.name for f in dataclasses.fields(Config)}
    for pname, p in (("paper", paper), ("lite", lite), *(presets or {}).items()):
        unknown = sorted(set(p) - known)
        if unknown:
            raise ValueError(f"{name}: preset {pname!r} sets unknown field(s) {unknown}")
    text = f"{description} [{reference}] conditions: {listed}"
    if figure:
        text += f"; follows {figure}"
    MINDSET.register(name, {"conditions": conditions, "reference": reference, "figure": figure},
                     origin=items.__module__)
    return register(name, Config, text, reference, items=items, render=render, random=random,
                    test_params=dict(lite if test_params is None else test_params),
                    presets={"paper": dict(paper), "lite": dict(lite), **(presets or {})})


# ---------------------------------------------------------------------------------------------- config
BACKGROUNDS = ("fixed", "random_uniform")


@dataclasses.dataclass(frozen=True)
class MindsetConfig:
    """Fields every MindSet dataset has (the original's ``add_general_args``). Subclasses add their own
    fields (all with defaults) and may override these defaults with a field of the same name."""

    canvas_size: int = field(224, "image width and height (pixels)", range=(32, 2048))
    background: str = field("fixed", "'fixed' = background_color on every image; 'random_uniform' = one "
                            "uniform colour per image, drawn from the seed (the original's 'rnd-uniform')",
                            choices=BACKGROUNDS)
    background_color: tuple = field((0, 0, 0), "RGB 0-255 of the fixed background", range=(0, 255))
    antialias: bool = field(True, f"antialiased edges ({SUPERSAMPLE}x{SUPERSAMPLE} sub-pixel coverage) "
                            "instead of binary pixels")

    def __post_init__(self):
        check_rgb("background_color", self.background_color)


def check_rgb(name: str, value) -> None:
    """A colour parameter is three whole numbers 0-255 (the message names the field, value and range)."""
    if (not isinstance(value, (tuple, list)) or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise ConfigError(f"{name}={value!r}: must be three whole numbers [r, g, b], each in [0, 255]")
    for v in value:
        if not 0 <= v <= 255:
            raise ConfigError(f"{name}={value!r}: {v} is out of range [0, 255]")


def check_order(cfg, low: str, high: str, strict: bool = True) -> None:
    """``cfg.<low>`` < ``cfg.<high>`` (or <= when not strict), else an error naming both fields."""
    a, b = getattr(cfg, low), getattr(cfg, high)
    if a > b or (strict and a == b):
        raise ConfigError(f"{low}={a!r} must be {'<' if strict else '<='} {high}={b!r}")


def rgb_columns(prefix: str, rgb) -> dict[str, int]:
    """Typed annotation columns for a colour: ``{prefix}_r``, ``{prefix}_g``, ``{prefix}_b`` (int)."""
    r, g, b = (int(v) for v in rgb)
    return {f"{prefix}_r": r, f"{prefix}_g": g, f"{prefix}_b": b}


def background_params(cfg: MindsetConfig, rng: np.random.Generator | None) -> dict[str, int]:
    """The background of one image as annotation columns ``background_r/g/b``: the fixed colour, or one
    uniform colour drawn from ``rng`` (each channel uniform on 0..255) for ``random_uniform``. Call it in
    ``items`` so the colour actually used is recorded."""
    if cfg.background == "fixed":
        return rgb_columns("background", cfg.background_color)
    if rng is None:
        raise ValueError("background='random_uniform' needs the item's rng")
    return rgb_columns("background", rng.integers(0, 256, 3))


def background_rgb(params: dict) -> tuple[int, int, int]:
    """The (r, g, b) stored by :func:`background_params` in an item's params."""
    return int(params["background_r"]), int(params["background_g"]), int(params["background_b"])


def new_canvas(size: int | tuple[int, int], rgb) -> np.ndarray:
    """float32 [H, W, 3] filled with ``rgb`` (0-255). ``size`` is an int (square) or (height, width)."""
    h, w = (size, size) if isinstance(size, (int, np.integer)) else size
    img = np.empty((h, w, 3), np.float32)
    # filled row by row from one tiled row: the same values as ``img[:] = rgb`` (new_canvas_reference),
    # without numpy's slow broadcast over a last axis of 3
    img.reshape(h, w * 3)[:] = np.tile(np.broadcast_to(np.asarray(rgb, np.float32), (3,)), w)
    return img


def new_canvas_reference(size: int | tuple[int, int], rgb) -> np.ndarray:
    """Plain twin of :func:`new_canvas` (tests compare them)."""
    h, w = (size, size) if isinstance(size, (int, np.integer)) else size
    img = np.empty((h, w, 3), np.float32)
    img[:] = np.asarray(rgb, np.float32)
    return img


def to_uint8(img: np.ndarray) -> np.ndarray:
    """A float canvas (0-255) as uint8, rounded half up (exact for integer colours)."""
    out = img + 0.5  # the reference's arithmetic, in one buffer instead of three
    np.floor(out, out=out)
    np.clip(out, 0, 255, out=out)
    return out.astype(np.uint8)


def to_uint8_reference(img: np.ndarray) -> np.ndarray:
    """Plain twin of :func:`to_uint8`."""
    return np.clip(np.floor(img + 0.5), 0, 255).astype(np.uint8)


def item_rng(seed: int, *key) -> np.random.Generator:
    """The generator for one item, from the dataset seed and the item's coordinates (ints or strings;
    strings by CRC-32, stable across processes and Python versions), so any subset of items renders
    identically in any process."""
    ints = [int(seed)]
    for k in key:
        ints.append(zlib.crc32(k.encode()) if isinstance(k, str) else int(k))
    return np.random.default_rng(np.random.SeedSequence([abs(x) for x in ints]))


# ---------------------------------------------------------------------------------------------- shapes
@dataclasses.dataclass(frozen=True)
class Shape:
    """A planar region: ``inside(x, y) -> bool`` over arrays of points (pixel coordinates, see the module
    docstring) and a bounding box ``(x0, y0, x1, y1)`` containing it (only pixels that meet the box are
    sampled). Exact geometry: a region is antialiased by sampling, never by drawing twice."""

    bbox: tuple[float, float, float, float]
    inside: Callable[[np.ndarray, np.ndarray], np.ndarray]
    parts: tuple = ()  # set by :func:`union`: sampled part by part over each part's own box (same result)


def disc(cx: float, cy: float, r: float) -> Shape:
    """Filled circle of radius ``r`` px centred at (cx, cy)."""
    return Shape((cx - r, cy - r, cx + r, cy + r), lambda x, y: (x - cx) ** 2 + (y - cy) ** 2 <= r * r)


def ring(cx: float, cy: float, r: float, width: float) -> Shape:
    """Circle outline of stroke ``width`` px centred on radius ``r`` (inner r - w/2, outer r + w/2)."""
    ro, ri = r + width / 2, max(r - width / 2, 0.0)

    def inside(x, y):
        d2 = (x - cx) ** 2 + (y - cy) ** 2
        return (d2 <= ro * ro) & (d2 >= ri * ri)

    return Shape((cx - ro, cy - ro, cx + ro, cy + ro), inside)


def rect(x0: float, y0: float, x1: float, y1: float) -> Shape:
    """Axis-aligned filled rectangle [x0, x1] × [y0, y1]."""
    return Shape((x0, y0, x1, y1), lambda x, y: (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))


def segment(p0, p1, width: float, cap: str = "butt") -> Shape:
    """Straight stroke of ``width`` px from p0 to p1 (centred on the segment). ``cap``: ``butt`` (ends
    exactly at p0 and p1), ``round`` (half discs) or ``square`` (extended by width/2)."""
    (ax, ay), (bx, by) = (float(v) for v in p0), (float(v) for v in p1)
    dx, dy = bx - ax, by - ay
    length = float(np.hypot(dx, dy))
    h = width / 2
    if cap not in ("butt", "round", "square"):
        raise ValueError(f"cap={cap!r}; one of butt, round, square")
    ext = h if cap in ("round", "square") else 0.0
    pad = h + ext

    ux, uy = (dx / length, dy / length) if length else (0.0, 0.0)
    lo, hi = (-ext, length + ext)

    def inside(x, y):
        if length == 0:
            if cap == "round":
                return (x - ax) ** 2 + (y - ay) ** 2 <= h * h
            return np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y)), bool)
        t = (x - ax) * ux + (y - ay) * uy  # along the segment, px from p0
        n = (x - ax) * -uy + (y - ay) * ux  # across
        if cap == "round":
            tc = np.clip(t, 0.0, length)
            return (t - tc) ** 2 + n * n <= h * h
        return (t >= lo) & (t <= hi) & (np.abs(n) <= h)

    return Shape((min(ax, bx) - pad, min(ay, by) - pad, max(ax, bx) + pad, max(ay, by) + pad), inside)


def polyline(points, width: float, closed: bool = False, cap: str = "round") -> Shape:
    """Connected strokes through ``points`` ([N, 2] x, y). Joints are round (each segment has round caps
    where ``cap='round'``); ``closed`` joins the last point to the first."""
    pts = np.asarray(points, float)
    pairs = list(zip(pts[:-1], pts[1:]))
    if closed:
        pairs.append((pts[-1], pts[0]))
    return union(*(segment(a, b, width, cap) for a, b in pairs))


def polygon(points) -> Shape:
    """Filled polygon through ``points`` ([N, 2] x, y; even-odd rule, so self-intersections alternate)."""
    pts = np.asarray(points, float)
    xs, ys = pts[:, 0], pts[:, 1]
    xe, ye = np.roll(xs, -1), np.roll(ys, -1)

    def inside(x, y):
        x, y = np.asarray(x, float), np.asarray(y, float)
        if x.ndim == 2 and y.ndim == 2 and x.shape[0] == 1 and y.shape[1] == 1:
            return _polygon_grid(xs, ys, xe, ye, x[0], y[:, 0])
        out = np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y)), bool)
        for x0, y0, x1, y1 in zip(xs, ys, xe, ye):  # the plain rule, point by point: the reference
            if y0 == y1:
                continue
            cross = (y0 > y) != (y1 > y)
            xc = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
            out ^= cross & (x < xc)
        return out

    return Shape((xs.min(), ys.min(), xs.max(), ys.max()), inside)


def _polygon_grid(xs, ys, xe, ye, gx, gy) -> np.ndarray:
    """Even-odd inside test on the grid gx (columns) × gy (rows) by scanlines: per row, the edges' crossing
    abscissae sorted once; a sample is inside when an odd number of them lie strictly to its right (the same
    rule and arithmetic as the point-by-point loop, O(rows × edges + samples) instead of O(samples × edges))."""
    flat = ys == ye
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (ys[None, :] > gy[:, None]) != (ye[None, :] > gy[:, None])
        cross &= ~flat[None, :]
        xc = xs[None, :] + (gy[:, None] - ys[None, :]) * (xe - xs)[None, :] / (ye - ys)[None, :]
    xc = np.where(cross, xc, np.inf)
    n_fin = cross.sum(1)
    m = int(n_fin.max()) if len(n_fin) else 0
    if m == 0:
        return np.zeros((len(gy), len(gx)), bool)
    # the finite crossings of each row first (few: a row meets few edges), the rest +inf
    xc = np.sort(xc, axis=1)[:, :m]
    out = np.empty((len(gy), len(gx)), bool)
    step = max(1, (1 << 22) // (m * len(gx)))
    for r in range(0, len(gy), step):  # crossings strictly right of each sample, rows in blocks
        right = (xc[r:r + step, :, None] > gx[None, None, :]).sum(1) - (m - n_fin[r:r + step])[:, None]
        out[r:r + step] = right % 2 == 1
    return out


def _polygon_grid_rowwise(xs, ys, xe, ye, gx, gy) -> np.ndarray:
    """Plain twin of :func:`_polygon_grid`'s counting step: one ``searchsorted`` per row (tests compare)."""
    flat = ys == ye
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (ys[None, :] > gy[:, None]) != (ye[None, :] > gy[:, None])
        cross &= ~flat[None, :]
        xc = xs[None, :] + (gy[:, None] - ys[None, :]) * (xe - xs)[None, :] / (ye - ys)[None, :]
    xc = np.sort(np.where(cross, xc, np.inf), axis=1)
    n_fin = cross.sum(1)
    out = np.empty((len(gy), len(gx)), bool)
    for r in range(len(gy)):
        right = n_fin[r] - np.searchsorted(xc[r, :n_fin[r]], gx, side="right")
        out[r] = right % 2 == 1
    return out


def regular_polygon(cx: float, cy: float, r: float, n: int, rotation_deg: float = 0.0) -> np.ndarray:
    """[n, 2] vertices of a regular n-gon of circumradius ``r``; the first vertex at angle ``rotation_deg``
    measured from straight up, clockwise on screen."""
    a = np.deg2rad(rotation_deg) + 2 * np.pi * np.arange(n) / n
    return np.stack([cx + r * np.sin(a), cy - r * np.cos(a)], axis=1)


def union(*shapes: Shape) -> Shape:
    shapes = tuple(shapes)
    if not shapes:
        raise ValueError("union of no shapes")

    def inside(x, y):
        out = np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y)), bool)
        for s in shapes:
            out |= s.inside(x, y)
        return out

    b = np.array([s.bbox for s in shapes])
    flat = tuple(p for s in shapes for p in (s.parts or (s,)))
    return Shape((b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()), inside, flat)


def difference(a: Shape, *minus: Shape) -> Shape:
    """The part of ``a`` outside every shape in ``minus`` (e.g. a notched square)."""
    def inside(x, y):
        out = a.inside(x, y)
        for s in minus:
            out &= ~s.inside(x, y)
        return out

    return Shape(a.bbox, inside)


def intersection(a: Shape, b: Shape) -> Shape:
    box = (max(a.bbox[0], b.bbox[0]), max(a.bbox[1], b.bbox[1]), min(a.bbox[2], b.bbox[2]),
           min(a.bbox[3], b.bbox[3]))
    return Shape(box, lambda x, y: a.inside(x, y) & b.inside(x, y))


def translate(s: Shape, dx: float, dy: float) -> Shape:
    """``s`` moved by (dx, dy). A union stays a union of moved parts, so :func:`coverage` still samples each
    part over its own box only (the same samples and arithmetic as the moved whole)."""
    x0, y0, x1, y1 = s.bbox
    parts = tuple(translate(p, dx, dy) for p in s.parts)
    return Shape((x0 + dx, y0 + dy, x1 + dx, y1 + dy), lambda x, y: s.inside(x - dx, y - dy), parts)


def coverage_box(shape: Shape, size: int | tuple[int, int]) -> tuple[int, int, int, int]:
    """Rows [r0, r1) and columns [c0, c1) of the pixels :func:`coverage` samples for ``shape`` (those that
    meet its box, clipped to the image); empty when r1 <= r0 or c1 <= c0."""
    H, W = (size, size) if isinstance(size, (int, np.integer)) else size
    x0, y0, x1, y1 = shape.bbox
    c0, r0 = max(int(np.floor(x0)), 0), max(int(np.floor(y0)), 0)
    c1, r1 = min(int(np.floor(x1)) + 1, W), min(int(np.floor(y1)) + 1, H)
    return r0, r1, c0, c1


def coverage(shape: Shape, size: int | tuple[int, int], antialias: bool = True,
             k: int = SUPERSAMPLE) -> tuple[np.ndarray, tuple[int, int]]:
    """The fraction of each pixel inside ``shape``: float32 [h, w] in [0, 1] over the pixels that meet its
    bounding box (clipped to the image), and that block's (row, column) origin. ``antialias`` samples a
    k × k grid of sub-pixel centres; without it each pixel is in or out by its centre (binary)."""
    r0, r1, c0, c1 = coverage_box(shape, size)
    if c1 <= c0 or r1 <= r0:
        return np.zeros((0, 0), np.float32), (0, 0)
    k = k if antialias else 1
    off = (np.arange(k) + 0.5) / k
    xs = (np.arange(c0, c1)[:, None] + off[None, :]).ravel()
    ys = (np.arange(r0, r1)[:, None] + off[None, :]).ravel()
    if shape.parts:  # a union: each part only over its own box (a polyline of many segments is ~N× faster)
        inside = np.zeros((len(ys), len(xs)), bool)
        for part in shape.parts:
            px0, py0, px1, py1 = part.bbox
            a0, b0 = max(int(np.floor(px0)), c0), max(int(np.floor(py0)), r0)
            a1, b1 = min(int(np.floor(px1)) + 1, c1), min(int(np.floor(py1)) + 1, r1)
            if a1 <= a0 or b1 <= b0:
                continue
            sx, sy = slice((a0 - c0) * k, (a1 - c0) * k), slice((b0 - r0) * k, (b1 - r0) * k)
            inside[sy, sx] |= part.inside(xs[None, sx], ys[sy, None])
    else:
        inside = np.broadcast_to(shape.inside(xs[None, :], ys[:, None]), (len(ys), len(xs)))
    cov = inside.reshape(r1 - r0, k, c1 - c0, k).mean(axis=(1, 3), dtype=np.float32)
    return cov, (r0, c0)


def strokes_coverage(segments, width: float, size: int, cap: str = "butt", antialias: bool = True,
                     k: int = SUPERSAMPLE) -> np.ndarray:
    """Coverage (float32 [size, size]) of the union of straight strokes ``segments`` ([n, 2, 2]: (x, y) of both
    ends) of one ``width`` and ``cap``, with the very samples and arithmetic of :func:`coverage` of
    ``union(*(segment(a, b, width, cap) for a, b in segments))`` placed on the canvas (the plain twin; tests
    compare), but each stroke is sampled only in a band of pixels around it: per column (per row for a steep
    stroke) the rows within 0.5 + 2ρ of its centreline (ρ = the farthest a stroke point lies from the
    segment: width/2, × √2 for square caps). A line across a 224 px canvas meets ~1/30 of its box."""
    k = k if antialias else 1
    off = (np.arange(k) + 0.5) / k
    sub = np.arange(k)
    S = np.zeros((size * k, size * k), bool)
    rho = width / 2 * (2 ** 0.5 if cap == "square" else 1.0)
    m = int(np.ceil(1 + 4 * rho)) + 1  # candidate rows per column
    for (ax, ay), (bx, by) in np.asarray(segments, float).reshape(-1, 2, 2):
        shape = segment((ax, ay), (bx, by), width, cap)
        r0, r1, c0, c1 = coverage_box(shape, size)
        if r1 <= r0 or c1 <= c0:
            continue
        dx, dy = bx - ax, by - ay
        if dx == 0 and dy == 0:  # a dot (round cap) or nothing: its whole box
            rows, cols = (a.ravel() for a in np.meshgrid(np.arange(r0, r1), np.arange(c0, c1), indexing="ij"))
        else:
            steep = abs(dy) > abs(dx)
            lo, hi, (p0, q0, dp, dq) = (r0, r1, (ay, ax, dy, dx)) if steep else (c0, c1, (ax, ay, dx, dy))
            along = np.arange(lo, hi)  # columns (rows when steep)
            centre = q0 + (along + 0.5 - p0) * (dq / dp)  # the centreline across them
            across = np.floor(centre - 0.5 - 2 * rho).astype(int)[:, None] + np.arange(m)
            along = np.broadcast_to(along[:, None], across.shape)
            rows, cols = (along, across) if steep else (across, along)
            keep = (rows >= r0) & (rows < r1) & (cols >= c0) & (cols < c1)
            rows, cols = rows[keep], cols[keep]
        xs, ys = cols[:, None] + off, rows[:, None] + off  # [p, k] sample coordinates, as coverage() makes them
        inside = shape.inside(xs[:, None, :], ys[:, :, None])  # [p, k (y), k (x)]
        S[(rows[:, None] * k + sub)[:, :, None], (cols[:, None] * k + sub)[:, None, :]] |= inside
    return S.reshape(size, k, size, k).mean(axis=(1, 3), dtype=np.float32)


def paint_coverage(img: np.ndarray, cov: np.ndarray, origin: tuple[int, int], rgb, opacity: float = 1.0) -> None:
    """Composite colour ``rgb`` over ``img`` (float [H, W, 3], in place) with per-pixel alpha
    ``opacity × cov`` on the block at ``origin`` (row, column); the block is clipped to the image."""
    r0, c0 = origin
    h, w = cov.shape
    H, W = img.shape[:2]
    if h == 0 or w == 0:
        return
    rs, cs = max(r0, 0), max(c0, 0)
    re_, ce = min(r0 + h, H), min(c0 + w, W)
    if re_ <= rs or ce <= cs:
        return
    a = (opacity * cov[rs - r0:re_ - r0, cs - c0:ce - c0])[:, :, None]
    block = img[rs:re_, cs:ce]
    block += a * (np.asarray(rgb, np.float32) - block)


def paint(img: np.ndarray, shape: Shape, rgb, antialias: bool = True, opacity: float = 1.0) -> None:
    """Draw ``shape`` filled with ``rgb`` onto ``img`` (float [H, W, 3], 0-255, in place)."""
    cov, origin = coverage(shape, img.shape[:2], antialias)
    paint_coverage(img, cov, origin, rgb, opacity)


# ---------------------------------------------------------------------------------------------- text
@functools.lru_cache(maxsize=8)
def font_path(name: str = "DejaVuSans") -> str:
    """Path of a TrueType font matplotlib ships (DejaVu: a free licence, see matplotlib's LICENSE_DEJAVU),
    e.g. ``DejaVuSans``, ``DejaVuSans-Bold``, ``DejaVuSerif``, ``DejaVuSansMono``."""
    from pathlib import Path

    import matplotlib

    p = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / f"{name}.ttf"
    if not p.is_file():
        avail = sorted(f.stem for f in p.parent.glob("*.ttf"))
        raise ValueError(f"font {name!r} not found in matplotlib's fonts; available: {', '.join(avail)}")
    return str(p)


@functools.lru_cache(maxsize=64)
def _font(name: str, size_px: int):
    from PIL import ImageFont

    return ImageFont.truetype(font_path(name), size_px)


def text_coverage(text: str, size_px: int, font: str = "DejaVuSans", rotation_deg: float = 0.0,
                  antialias: bool = True) -> np.ndarray:
    """Coverage (float32 [h, w] in [0, 1]) of ``text`` set at ``size_px`` pixels (the font's em size),
    tightly cropped; rotated counter-clockwise by ``rotation_deg`` about its centre (bilinear: the pixels of
    PIL's ``Image.rotate(rotation_deg, BILINEAR, expand=True)``, computed by :func:`turn_glyph`). Place it
    with :func:`paint_coverage`. Glyph coverage is FreeType's (PIL); ``antialias=False`` thresholds at 0.5."""
    im = _text_array(text, font, int(size_px))  # cached: a texture sets the same glyphs hundreds of times
    if rotation_deg:
        im = turn_glyph(im, rotation_deg)
    rows, cols = np.flatnonzero(im.any(1)), np.flatnonzero(im.any(0))
    if len(rows):  # crop to the non-zero pixels' bounding box (none when blank)
        im = im[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    cov = im.astype(np.float32) / 255.0
    return cov if antialias else (cov >= 0.5).astype(np.float32)


@functools.lru_cache(maxsize=4096)
def _text_image(text: str, font: str, size_px: int):
    """``text`` set at ``size_px`` on a black "L" image with a 2 px margin (never modified by callers)."""
    from PIL import Image, ImageDraw

    f = _font(font, size_px)
    x0, y0, x1, y1 = f.getbbox(text)
    im = Image.new("L", (max(x1 - x0, 1) + 4, max(y1 - y0, 1) + 4), 0)
    ImageDraw.Draw(im).text((2 - x0, 2 - y0), text, fill=255, font=f)
    return im


@functools.lru_cache(maxsize=4096)
def _text_array(text: str, font: str, size_px: int) -> np.ndarray:
    """:func:`_text_image` as a read-only uint8 [h, w] array."""
    a = np.array(_text_image(text, font, size_px), np.uint8)
    a.flags.writeable = False
    return a


def text_image_size(text: str, size_px: int, font: str = "DejaVuSans") -> tuple[int, int]:
    """(width, height) of the unturned image :func:`text_coverage` sets ``text`` in (before cropping); turned
    by any angle and cropped, the coverage fits in a square of side width + height + 2 about its centre."""
    return _text_image(text, font, int(size_px)).size


def text_coverage_reference(text: str, size_px: int, font: str = "DejaVuSans", rotation_deg: float = 0.0,
                            antialias: bool = True) -> np.ndarray:
    """Plain twin of :func:`text_coverage`: PIL sets, turns (``Image.rotate``) and the crop is by
    ``argwhere``; no cache. Tests compare them bit for bit."""
    from PIL import Image, ImageDraw

    f = _font(font, int(size_px))
    x0, y0, x1, y1 = f.getbbox(text)
    im = Image.new("L", (max(x1 - x0, 1) + 4, max(y1 - y0, 1) + 4), 0)
    ImageDraw.Draw(im).text((2 - x0, 2 - y0), text, fill=255, font=f)
    if rotation_deg:
        im = im.rotate(rotation_deg, resample=Image.Resampling.BILINEAR, expand=True)
    cov = np.asarray(im, np.float32) / 255.0
    nz = np.argwhere(cov > 0)
    if len(nz):
        (a, b), (c, d) = nz.min(0), nz.max(0) + 1
        cov = cov[a:c, b:d]
    return cov if antialias else (cov >= 0.5).astype(np.float32)


# Turning glyphs without PIL's per-call overhead (~100 µs of Python per rotate, 2/3 of a texturized image).
# The arithmetic is PIL 10-13's for a bilinear rotate of an "L" image with expand=True (read for the facts:
# Image.rotate builds the output-to-input affine below; libImaging/Geometry.c samples each output pixel
# centre through it in double precision, zero outside the input, bilinear between the clamped neighbours,
# truncated to uint8), so the pixels are PIL's bit for bit where PIL's C is compiled without fused
# multiply-adds (x86-64 wheels; tests: text_coverage vs text_coverage_reference). A Pillow built with them
# (e.g. arm64) rounds a few sample positions otherwise; this turn is the same on every machine.
QUARTER_TURN, AFFINE_TURN = 0, 1  # modes of one turn: a multiple of 90° (exact transposes), or general


def rotation_affine(width: int, height: int, angle_deg: float) -> tuple[int, int, int, tuple[float, ...]]:
    """How an image of ``width`` × ``height`` pixels turned counter-clockwise by ``angle_deg`` about its centre
    and grown to hold all of it (PIL's ``rotate(expand=True)``) is made: (mode, new width, new height, data).
    ``mode`` QUARTER_TURN: the angle is a multiple of 90° and data = (k,), the number of counter-clockwise
    quarter turns (``np.rot90(img, k)``; k = 0 is the image itself). ``mode`` AFFINE_TURN: data = (a0..a5),
    the map from an output pixel centre (x, y) to input coordinates (a0 x + a1 y + a2, a3 x + a4 y + a5),
    its coefficients rounded to 15 decimals and the size from the turned corners, as PIL computes them."""
    import math

    angle = angle_deg % 360.0
    if angle in (0.0, 90.0, 180.0, 270.0):
        k = int(angle // 90)
        return QUARTER_TURN, (height if k % 2 else width), (width if k % 2 else height), (k,)
    t = -math.radians(angle)
    c, s, s_ = round(math.cos(t), 15), round(math.sin(t), 15), round(-math.sin(t), 15)
    cx, cy = width / 2, height / 2
    # the map about the centre: (x, y) -> R (x - cx, y - cy) + (cx, cy), evaluated in PIL's order of operations
    ox = c * -cx + s * -cy + 0.0 + cx
    oy = s_ * -cx + c * -cy + 0.0 + cy
    xs = [c * x + s * y + ox for x, y in ((0, 0), (width, 0), (width, height), (0, height))]
    ys = [s_ * x + c * y + oy for x, y in ((0, 0), (width, 0), (width, height), (0, height))]
    nw = math.ceil(max(xs)) - math.floor(min(xs))
    nh = math.ceil(max(ys)) - math.floor(min(ys))
    dx, dy = -(nw - width) / 2.0, -(nh - height) / 2.0  # the grown canvas shifts the input by half its growth
    return AFFINE_TURN, nw, nh, (c, s, c * dx + s * dy + ox, s_, c, s_ * dx + c * dy + oy)


@functools.cache
def _glyph_kernels():
    import math

    import numba

    @numba.njit(cache=True, nogil=True)
    def turn(src, mode, a, out):
        """``src`` (uint8 [h, w]) turned into ``out`` (uint8 [nh, nw]) as :func:`rotation_affine` says."""
        h, w = src.shape
        nh, nw = out.shape
        if mode == 0:  # k quarter turns counter-clockwise (np.rot90's index maps)
            k = int(a[0])
            for i in range(nh):
                for j in range(nw):
                    if k == 0:
                        out[i, j] = src[i, j]
                    elif k == 1:
                        out[i, j] = src[j, w - 1 - i]
                    elif k == 2:
                        out[i, j] = src[h - 1 - i, w - 1 - j]
                    else:
                        out[i, j] = src[h - 1 - j, i]
            return
        a0, a1, a2, a3, a4, a5 = a[0], a[1], a[2], a[3], a[4], a[5]
        for i in range(nh):
            yo = i + 0.5
            for j in range(nw):
                xo = j + 0.5
                xi = a0 * xo + a1 * yo + a2
                yi = a3 * xo + a4 * yo + a5
                if xi < 0.0 or xi >= w or yi < 0.0 or yi >= h:
                    out[i, j] = 0
                    continue
                xi -= 0.5
                yi -= 0.5
                x = int(math.floor(xi))
                y = int(math.floor(yi))
                fx, fy = xi - x, yi - y
                x0, x1 = min(max(x, 0), w - 1), min(max(x + 1, 0), w - 1)
                # below the last row PIL repeats the upper row's value: the clamped row gives the same
                y0, y1 = min(max(y, 0), h - 1), min(max(y + 1, 0), h - 1)
                p, q = float(src[y0, x0]), float(src[y0, x1])
                v1 = p + (q - p) * fx
                p, q = float(src[y1, x0]), float(src[y1, x1])
                v2 = p + (q - p) * fx
                out[i, j] = int(v1 + (v2 - v1) * fy)  # truncated, as PIL's cast to UINT8

    @numba.njit(cache=True, nogil=True)
    def stamp(tex, buf, off, gw, gh, modes, data, nws, nhs, cxs, cys, scratch):
        H, W = tex.shape
        count = 0
        for g in range(off.shape[0]):
            h, w, nh, nw = gh[g], gw[g], nhs[g], nws[g]
            img = scratch[:nh * nw].reshape((nh, nw))
            turn(buf[off[g]:off[g] + h * w].reshape((h, w)), modes[g], data[g], img)
            top, bottom, left, right = nh, -1, nw, -1
            for i in range(nh):
                for j in range(nw):
                    if img[i, j]:
                        top, bottom = min(top, i), max(bottom, i)
                        left, right = min(left, j), max(right, j)
            if bottom < 0:  # blank: not cropped
                top, bottom, left, right = 0, nh - 1, 0, nw - 1
            ch, cw = bottom - top + 1, right - left + 1
            r0 = int(np.rint(cys[g] - ch / 2))  # round half to even, as Python's round
            c0 = int(np.rint(cxs[g] - cw / 2))
            rs, cs, re, ce = max(r0, 0), max(c0, 0), min(r0 + ch, H), min(c0 + cw, W)
            if re <= rs or ce <= cs:
                continue
            count += 1
            for r in range(rs, re):
                for c in range(cs, ce):
                    v = img[top + r - r0, left + c - c0]
                    if v > tex[r, c]:
                        tex[r, c] = v
        return count

    return turn, stamp


def turn_glyph(img: np.ndarray, angle_deg: float) -> np.ndarray:
    """uint8 [h, w] image ``img`` turned counter-clockwise by ``angle_deg`` about its centre, bilinear, on a
    canvas grown to hold it: PIL's ``Image.rotate(angle_deg, BILINEAR, expand=True)`` bit for bit."""
    mode, nw, nh, data = rotation_affine(img.shape[1], img.shape[0], angle_deg)
    if mode == QUARTER_TURN:
        return np.rot90(img, data[0]).copy()
    out = np.empty((nh, nw), np.uint8)
    _glyph_kernels()[0](np.ascontiguousarray(img, np.uint8), mode, np.asarray(data, np.float64), out)
    return out


@dataclasses.dataclass(frozen=True)
class GlyphAtlas:
    """The unturned glyph images of ``texts`` × ``sizes`` in one font (:func:`_text_array`, 2 px margin), packed
    in one buffer for :func:`stamp_glyphs`: glyph ``texts.index(t) * len(sizes) + sizes.index(s)`` is
    ``buf[off[g]:off[g] + h[g] * w[g]]`` as [h[g], w[g]]."""
    texts: tuple[str, ...]
    sizes: tuple[int, ...]
    font: str
    buf: np.ndarray
    off: np.ndarray
    w: np.ndarray
    h: np.ndarray


@functools.lru_cache(maxsize=16)
def glyph_atlas(texts: tuple[str, ...], sizes: tuple[int, ...], font: str = "DejaVuSans") -> GlyphAtlas:
    """The :class:`GlyphAtlas` of ``texts`` × ``sizes`` (cached per process)."""
    imgs = [_text_array(t, font, int(s)) for t in texts for s in sizes]
    n = np.array([a.size for a in imgs], np.int64)
    off = np.concatenate([[0], np.cumsum(n)[:-1]]).astype(np.int64)
    buf = np.concatenate([a.ravel() for a in imgs]) if imgs else np.zeros(0, np.uint8)
    return GlyphAtlas(tuple(texts), tuple(int(s) for s in sizes), font, buf, off,
                      np.array([a.shape[1] for a in imgs], np.int64), np.array([a.shape[0] for a in imgs], np.int64))


def stamp_glyphs(tex: np.ndarray, atlas: GlyphAtlas, glyphs, turns, cx, cy) -> int:
    """Max-composite glyphs into ``tex`` (uint8 [H, W], coverage × 255, in place): glyph ``glyphs[i]`` of
    ``atlas`` turned by ``turns[i]`` degrees counter-clockwise and cropped (:func:`text_coverage`), its block
    placed with its top-left corner at (round(cy[i] - h / 2), round(cx[i] - w / 2)) (rounding half to even;
    h × w the cropped block) and clipped to ``tex``. Returns how many blocks meet ``tex``. One compiled pass
    for all; :func:`stamp_glyphs_reference` is the plain twin (tests compare them)."""
    glyphs = np.asarray(glyphs, np.int64)
    m = len(glyphs)
    modes = np.empty(m, np.int64)
    data = np.zeros((m, 6), np.float64)
    nws, nhs = np.empty(m, np.int64), np.empty(m, np.int64)
    gw, gh = atlas.w[glyphs].tolist(), atlas.h[glyphs].tolist()
    for i, t in enumerate(turns):
        if t:
            mode, nws[i], nhs[i], d = rotation_affine(gw[i], gh[i], float(t))
        else:  # not turned at all (text_coverage turns only when asked to)
            mode, nws[i], nhs[i], d = QUARTER_TURN, gw[i], gh[i], (0,)
        modes[i] = mode
        data[i, :len(d)] = d
    scratch = np.empty(int((nws * nhs).max()) if m else 0, np.uint8)
    return int(_glyph_kernels()[1](tex, atlas.buf, atlas.off[glyphs], atlas.w[glyphs], atlas.h[glyphs], modes, data,
                                   nws, nhs, np.asarray(cx, np.float64), np.asarray(cy, np.float64), scratch))


def stamp_glyphs_reference(tex: np.ndarray, atlas: GlyphAtlas, glyphs, turns, cx, cy) -> int:
    """Plain twin of :func:`stamp_glyphs`: each glyph by :func:`text_coverage`, placed one by one with NumPy
    (the turn itself is :func:`turn_glyph`'s, which tests compare with PIL's)."""
    n = 0
    k = len(atlas.sizes)
    for g, t, x, y in zip(glyphs, turns, cx, cy):
        cov = text_coverage(atlas.texts[g // k], atlas.sizes[g % k], atlas.font, float(t))
        u8 = np.round(cov * 255).astype(np.uint8)
        h, w = cov.shape
        r0, c0 = int(round(y - h / 2)), int(round(x - w / 2))
        rs, cs, re_, ce = max(r0, 0), max(c0, 0), min(r0 + h, tex.shape[0]), min(c0 + w, tex.shape[1])
        if re_ <= rs or ce <= cs:
            continue
        n += 1
        block = tex[rs:re_, cs:ce]
        np.maximum(block, u8[rs - r0:re_ - r0, cs - c0:ce - c0], out=block)
    return n


# ---------------------------------------------------------------------------------------------- schema
def schema_problems(out, name: str | None = None) -> list[str]:
    """Why the generated MindSet dataset in folder ``out`` breaks the shared schema ([] when it does not):
    standard columns first and typed (strings; seed int64), unique item ids and file names, every row's
    file present, every PNG in the folder listed, conditions from the dataset's declared vocabulary and each
    image in its condition's folder, no object columns, no Python reprs (``(…)``, ``[…]``, ``{…}``) in
    string cells, set ids shared by at least two images."""
    from pathlib import Path

    import pandas as pd

    from ..writer import STANDARD_COLUMNS

    out = Path(out)
    problems: list[str] = []
    df = pd.read_parquet(out / "annotations.parquet")
    if list(df.columns[:6]) != STANDARD_COLUMNS:
        problems.append(f"first columns {list(df.columns[:6])} != {STANDARD_COLUMNS}")
        return problems
    name = name or (str(df.dataset.iloc[0]) if len(df) else "")
    if len(df) == 0:
        return ["no rows"]
    for c in STANDARD_COLUMNS:
        want = "int64" if c == "seed" else "string"
        if str(df[c].dtype) != want:
            problems.append(f"column {c} has dtype {df[c].dtype}, not {want}")
    if (df.dataset != name).any():
        problems.append(f"dataset column differs from {name!r}")
    for c in df.columns:
        if df[c].dtype == object:
            problems.append(f"column {c} has dtype object (untyped)")
        if pd.api.types.is_string_dtype(df[c].dtype) and c not in ("file_name", "sha256", "skipped"):
            cells = df[c].dropna().astype(str)
            reprs = cells[cells.str.match(r"^\s*[\(\[\{].*[\)\]\}]\s*$")]
            if len(reprs):
                problems.append(f"column {c} holds Python reprs, e.g. {reprs.iloc[0]!r}")
    for c in ("item_id", "file_name"):
        dup = df[c][df[c].duplicated()]
        if len(dup):
            problems.append(f"{c} not unique, e.g. {dup.iloc[0]!r}")
    declared = MINDSET.get(name, {}).get("conditions")
    if declared is None:
        problems.append(f"{name!r} is not a registered MindSet dataset")
    else:
        extra = sorted(c for c in set(df.condition) if not condition_declared(name, c))
        if extra:
            problems.append(f"conditions {extra} not in the declared vocabulary {declared}")
    bad = sorted(c for c in set(df.condition) if not CONDITION_PATTERN.match(str(c)))
    if bad:
        problems.append(f"condition names {bad} are not lower-case snake-case")
    made = df[df.file_name != ""]
    for f, cond in zip(made.file_name, made.condition):
        if not (out / f).is_file():
            problems.append(f"row {f}: file missing")
        if not str(f).startswith(f"{cond}/"):
            problems.append(f"row {f}: not in its condition folder {cond}/")
    listed = set(made.file_name)
    for p in out.rglob("*.png"):
        rel = p.relative_to(out).as_posix()
        if rel not in listed and not rel.startswith("."):
            problems.append(f"file {rel}: no row")
    sets = made[made.set_id != ""].set_id.value_counts()
    if (sets < 2).any():
        problems.append(f"set ids with a single image, e.g. {sets[sets < 2].index[0]!r}")
    return problems


def condition_declared(name: str, condition: str) -> bool:
    """Whether ``condition`` belongs to MindSet dataset ``name``'s declared vocabulary."""
    declared = MINDSET[name]["conditions"]
    if isinstance(declared, str):
        return re.fullmatch(declared, condition) is not None
    return condition in declared


def read_png(path) -> np.ndarray:
    """A generated image as uint8 [H, W, 3] (tests measure properties from the PNGs themselves), read by
    Vantage's one loader (``infra.images.read_image_array``)."""
    from infra.images import read_image_array

    return read_image_array(path, "RGB")


def luminance(img: np.ndarray) -> np.ndarray:
    """Mean of R, G, B as float [H, W] (the stimuli are grey; a plain mean keeps values exact)."""
    return np.asarray(img, float).mean(axis=-1) if img.ndim == 3 else np.asarray(img, float)



# ---------------------------------------------------------------------------------------------- source folders
def source_images(folder: str, conditions: Sequence[str], field_name: str = "source") -> list[tuple[str, str, str]]:
    """(condition, stem, path) for every file of ``<folder>/<condition>/`` — the original's asset layout for a
    user who has its images (e.g. ``kubilius_2017/pngs/{reference,NAP,MP}``). Subfolders match the
    conditions case-insensitively; files are matched across conditions by name (the stem becomes the
    ``set_id``). An unreadable or empty folder, or a subfolder that is no condition, is a ConfigError naming
    the field, the value and what is expected (raised in ``items``, before anything is written)."""
    from infra.images import class_folder_images

    try:
        files = class_folder_images(folder)
    except (ValueError, OSError) as e:
        raise ConfigError(f"{field_name}={folder!r}: {e}") from None
    by_lower = {c.lower(): c for c in conditions}
    out, unknown = [], set()
    for path, sub in files:
        cond = by_lower.get(sub.lower())
        if cond is None:
            unknown.add(sub)
            continue
        from pathlib import Path

        out.append((cond, Path(path).stem, path))
    if unknown:
        raise ConfigError(f"{field_name}={folder!r}: subfolder(s) {sorted(unknown)} are not conditions of this "
                          f"dataset; expected {', '.join(conditions)}")
    if not out:
        raise ConfigError(f"{field_name}={folder!r}: no image files in <folder>/<condition>/ "
                          f"(conditions: {', '.join(conditions)})")
    return sorted(out)


def place_image(path: str, canvas_size: int, longest_side: float, bg) -> np.ndarray:
    """The image at ``path`` (RGB) resized (bicubic, aspect kept) so its longest side is ``longest_side``
    px and centred on a ``canvas_size`` canvas of colour ``bg`` (the original's ``object_longest_side``
    handling); raises the writer's ``SkipItem`` for a file that is not a readable image."""
    from PIL import Image

    from infra.images import read_image, UnreadableImage

    from ..writer import SkipItem

    try:
        im = read_image(path, "RGB")
    except UnreadableImage as e:
        raise SkipItem(str(e)) from None
    s = longest_side / max(im.size)
    im = im.resize((max(1, round(im.size[0] * s)), max(1, round(im.size[1] * s))), Image.Resampling.BICUBIC)
    canvas = Image.new("RGB", (canvas_size, canvas_size), tuple(int(v) for v in bg))
    canvas.paste(im, ((canvas_size - im.size[0]) // 2, (canvas_size - im.size[1]) // 2))
    return np.asarray(canvas)
