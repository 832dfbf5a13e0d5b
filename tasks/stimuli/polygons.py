"""Degraded polygons: the Automated Shape Recoverability Test (Tang & Ley, 2023).

Each base shape is a regular polygon (or a circle) drawn as a black outline on a white 224×224 canvas,
no antialiasing. Two strokes (``stroke=``):

* ``inside`` — the paper's words, "a 2-pixel line": PIL draws ``line_width`` pixels inside the outline
  (≈ 1.7 black pixels per pixel of outline at width 2);
* ``release`` — the released dataset's pixels: the original drawing call (OpenCV ``polylines`` with
  thickness 2) draws 3-pixel lines centred on the edge (2.95 black pixels per pixel of outline, confirmed
  on the released PNGs). Vantage draws every pixel whose centre lies within ``line_width/2 + 0.45`` px of
  the outline (1.45 px at width 2): 2.91 pixels per pixel of outline, intersection-over-union 0.93 with
  OpenCV's own rasterisation (which differs in its fixed-point polygon fill, not in width or position).
  The ``paper`` preset (``preset=paper``) selects it.
 Sampling, as in the paper: minimum radius ⌊224/5⌋ = 44; centre x, y
uniform integers in [44 + ⌈t/2⌉ + 1, 224 − 44 − ⌈t/2⌉); radius uniform integer in [44, min(x, y, 224 − x,
224 − y)); rotation a whole number of degrees in [0, 360) applied to the first vertex; vertices
(x + r cos(θ + 2πi/N), y + r sin(θ + 2πi/N)) rounded to integers.

Degradation at proportion p_d removes N_s white discs of radius ⌈p_d·P / (2·N_s)⌉ (P = perimeter through the
rounded vertices): centred on the vertices ("corners", not recoverable) or on the edge midpoints ("edges",
recoverable). Each disc removes 2r of outline, so the removed fraction is p_d rounded up. Corner and edge
images at one level come from the same base polygon (same ``set_id``). Circles exist only whole.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
from pathlib import Path

import numpy as np

from .registry import Item, field, register

CLASSES = ("circle", "triangle", "square", "pentagon", "hexagon", "heptagon", "octagon")
SIDES = {"circle": 0, "triangle": 3, "square": 4, "pentagon": 5, "hexagon": 6, "heptagon": 7, "octagon": 8}
LEVELS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7)


@dataclasses.dataclass(frozen=True)
class PolygonConfig:
    classes: tuple = field(CLASSES, "shape classes", choices=CLASSES)
    per_class: int = field(100, "base shapes per class and level", range=(1, 10_000_000))
    levels: tuple = field(LEVELS, "degradation proportions p_d of the perimeter", range=(0.0, 1.0))
    variants: tuple = field(("whole", "corners", "edges"), "which images to make",
                            choices=("whole", "corners", "edges"))
    size: int = field(224, "canvas size (pixels)", range=(32, 4096))
    line_width: int = field(2, "outline width (pixels): drawn inside the outline (stroke=inside) or as the "
                                "original's line thickness, centred (stroke=release: width + 1 pixels)", range=(1, 16))
    stroke: str = field("inside", "'inside' (the paper's wording: line_width px inside the outline) or 'release' "
                                  "(the released PNGs: centred, line_width + 1 px, as OpenCV draws)",
                        choices=("inside", "release"))
    antialias: bool = field(False, "draw at 4x and downsample (grey edges) instead of binary pixels")
    channels: int = field(3, "PNG channels (3 as the release, 1 for greyscale)", choices=(1, 3))


@dataclasses.dataclass(frozen=True)
class BaseShape:
    cls: str
    cx: int
    cy: int
    radius: int
    rotation_deg: int
    vertices: tuple  # ((x, y), ...) rounded; empty for circles

    @functools.cached_property
    def perimeter(self) -> float:
        if not self.vertices:
            return 2 * math.pi * self.radius
        v = self.vertices
        return float(sum(math.dist(v[i], v[(i + 1) % len(v)]) for i in range(len(v))))

    @functools.cached_property
    def _centres(self) -> dict:
        """float64 [n, 2] arrays: the vertices and the disc centres per variant (computed once per shape:
        each pair's two images and their removed fractions read them)."""
        v = np.asarray(self.vertices, np.float64)
        out = {"vertices": v, "corners": v, "edges": (v + np.concatenate([v[1:], v[:1]])) / 2}
        for a in out.values():
            a.setflags(write=False)  # shared by every caller
        return out


def sample_shape(cls: str, rng: np.random.Generator, size: int = 224, line_width: int = 2) -> BaseShape:
    """One base shape, sampled exactly as described in the module docstring."""
    min_r = int(size / 5)
    pad = math.ceil(line_width / 2)
    cx, cy = (int(v) for v in rng.integers(min_r + pad + 1, size - min_r - pad, size=2))
    max_r = min(cx, cy, size - cx, size - cy)
    r = int(rng.integers(min_r, max_r)) if max_r > min_r else min_r
    rot = int(rng.integers(0, 360))
    n = SIDES[cls]
    verts = ()
    if n:
        a = math.radians(rot) + 2 * math.pi * np.arange(n) / n
        verts = tuple(zip(np.rint(cx + r * np.cos(a)).astype(int).tolist(), np.rint(cy + r * np.sin(a)).astype(int).tolist(),
                          strict=True))
    return BaseShape(cls, cx, cy, r, rot, verts)


def disc_centres(shape: BaseShape, variant: str) -> np.ndarray:
    """float64 [n, 2] (x, y): the vertices (``corners``) or the edge midpoints (``edges``); read-only."""
    return shape._centres["corners" if variant == "corners" else "edges"]


def disc_radius(shape: BaseShape, level: float) -> int:
    return int(math.ceil(level * shape.perimeter / (2 * len(shape.vertices))))


def removed_fraction(shape: BaseShape, variant: str, level: float) -> float:
    """Exact fraction of the (ideal, zero-width) outline inside the discs (fast path: a compiled loop; the
    plain NumPy twin ``removed_fraction_reference`` is the specification it is tested against)."""
    return float(_kernel()(shape._centres["vertices"], disc_centres(shape, variant), float(disc_radius(shape, level))))


@functools.cache
def _kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(v, c, r):
        n, m = v.shape[0], c.shape[0]
        t0 = np.empty(m)
        t1 = np.empty(m)
        removed = 0.0
        total = 0.0
        for e in range(n):
            ax, ay = v[e, 0], v[e, 1]
            dx, dy = v[(e + 1) % n, 0] - ax, v[(e + 1) % n, 1] - ay
            qa = dx * dx + dy * dy
            k = 0
            for j in range(m):
                fx, fy = ax - c[j, 0], ay - c[j, 1]
                qb = 2.0 * (fx * dx + fy * dy)
                qc = fx * fx + fy * fy - r * r
                disc = qb * qb - 4.0 * qa * qc
                if disc <= 0.0:
                    continue
                root = np.sqrt(disc)
                lo = min(max((-qb - root) / (2.0 * qa), 0.0), 1.0)
                hi = min(max((-qb + root) / (2.0 * qa), 0.0), 1.0)
                # insertion by start
                i = k
                while i > 0 and t0[i - 1] > lo:
                    t0[i] = t0[i - 1]
                    t1[i] = t1[i - 1]
                    i -= 1
                t0[i] = lo
                t1[i] = hi
                k += 1
            covered = 0.0
            end = 0.0
            for i in range(k):
                if t1[i] > end:
                    covered += t1[i] - max(t0[i], end)
                    end = t1[i]
            length = np.sqrt(qa)
            removed += covered * length
            total += length
        return removed / total

    return kernel


def removed_fraction_reference(shape: BaseShape, variant: str, level: float) -> float:
    """Exact fraction of the (ideal, zero-width) outline inside the discs: per edge, the parameter
    intervals where the segment lies within each disc (a quadratic), merged, summed over edges."""
    v = np.asarray(shape.vertices, float)
    a, d = v, np.roll(v, -1, axis=0) - v                     # edges a + t·d, t ∈ [0, 1]
    c, r = disc_centres(shape, variant), disc_radius(shape, level)
    f = a[:, None, :] - c[None, :, :]                         # [edge, disc, 2]
    qa = (d * d).sum(-1)[:, None]
    qb = 2 * (f * d[:, None, :]).sum(-1)
    qc = (f * f).sum(-1) - r * r
    disc = qb * qb - 4 * qa * qc
    root = np.sqrt(np.clip(disc, 0, None))
    t0 = np.clip((-qb - root) / (2 * qa), 0, 1)
    t1 = np.clip((-qb + root) / (2 * qa), 0, 1)
    t1 = np.where(disc > 0, t1, t0)
    lengths = np.sqrt(qa[:, 0])
    # union of each edge's intervals: sort by start; each adds what lies beyond the furthest end so far
    order = np.argsort(t0, axis=1)
    s0, s1 = np.take_along_axis(t0, order, 1), np.take_along_axis(t1, order, 1)
    prev_end = np.concatenate([np.zeros((len(v), 1)), np.maximum.accumulate(s1, axis=1)[:, :-1]], axis=1)
    covered = np.clip(s1 - np.maximum(s0, prev_end), 0, None).sum(axis=1)
    return float((covered * lengths).sum() / lengths.sum())


def release_reach(line_width: int) -> float:
    """Pixel centres within this distance (px) of the outline are black in the ``release`` stroke."""
    return line_width / 2 + 0.45


@functools.cache
def _stroke_kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(img, v, reach):
        """Set to 0 every pixel of ``img`` [S, S·C] (C interleaved channels per pixel: grey or RGB drawn
        alike) whose centre lies within ``reach`` of the closed polyline ``v`` [n, 2] (x, y): per edge, per
        row, only the columns near the edge's centre line are tested."""
        S = img.shape[0]
        C = img.shape[1] // S
        n = v.shape[0]
        r2 = reach * reach
        for e in range(n):
            ax, ay = v[e, 0], v[e, 1]
            dx, dy = v[(e + 1) % n, 0] - ax, v[(e + 1) % n, 1] - ay
            q = dx * dx + dy * dy
            y0 = max(int(np.floor(min(ay, ay + dy) - reach)), 0)
            y1 = min(int(np.ceil(max(ay, ay + dy) + reach)), S - 1)
            bx0 = max(int(np.floor(min(ax, ax + dx) - reach)), 0)
            bx1 = min(int(np.ceil(max(ax, ax + dx) + reach)), S - 1)
            for y in range(y0, y1 + 1):
                x0, x1 = bx0, bx1
                if dy != 0.0:  # the band's columns on this row: centre line ± reach·length/|dy|, plus a margin
                    xc = ax + (y - ay) * dx / dy
                    hw = reach * np.sqrt(q) / abs(dy) + 1.0
                    x0 = max(x0, int(np.floor(xc - hw)))
                    x1 = min(x1, int(np.ceil(xc + hw)))
                for x in range(x0, x1 + 1):
                    px, py = x - ax, y - ay
                    t = (px * dx + py * dy) / q
                    t = min(max(t, 0.0), 1.0)
                    ex, ey = px - t * dx, py - t * dy
                    if ex * ex + ey * ey <= r2:
                        for ch in range(C):
                            img[y, x * C + ch] = 0

    return kernel


def release_stroke_reference(vertices, size: int, line_width: int, scale: int = 1) -> np.ndarray:
    """uint8 [size·scale]²: the ``release`` stroke, plainly — each pixel centre's distance to every edge
    (the specification the compiled kernel is tested against, pixel for pixel)."""
    n = size * scale
    y, x = np.mgrid[0:n, 0:n].astype(np.float64)
    v = np.asarray(vertices, np.float64) * scale
    black = np.zeros((n, n), bool)
    r = release_reach(line_width) * scale
    for e in range(len(v)):
        ax, ay = v[e]
        dx, dy = v[(e + 1) % len(v)] - v[e]
        px, py = x - ax, y - ay
        t = np.clip((px * dx + py * dy) / (dx * dx + dy * dy), 0.0, 1.0)
        ex, ey = px - t * dx, py - t * dy
        black |= ex * ex + ey * ey <= r * r
    return np.where(black, 0, 255).astype(np.uint8)


def _release_outline(shape: BaseShape, size: int, line_width: int, k: int, channels: int = 1) -> np.ndarray:
    """uint8 [size·k]² (``channels`` 1) or [size·k, size·k, 3], drawn in all three channels at once (the
    images are binary: no grey-to-RGB copy per image); at k > 1 (antialiasing) a point x maps to
    k·x + (k − 1)/2, the centre of its block."""
    n = size * k
    reach = release_reach(line_width) * k
    off = (k - 1) / 2
    if not shape.vertices:  # circle: the ring of pixel centres within reach of the circumference
        y, x = np.mgrid[0:n, 0:n].astype(np.float64)
        rho = np.hypot(x - (shape.cx * k + off), y - (shape.cy * k + off))
        ring = np.where(np.abs(rho - shape.radius * k) <= reach, 0, 255).astype(np.uint8)
        return ring if channels == 1 else np.repeat(ring[:, :, None], channels, axis=2)
    img = np.full((n, n * channels), 255, np.uint8)
    _stroke_kernel()(img, np.asarray(shape.vertices, np.float64) * k + off, reach)
    return img if channels == 1 else img.reshape(n, n, channels)


@functools.cache
def _disc_kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(img, centres, r):
        """Set to 255 every pixel of ``img`` [S, S·C] (C interleaved channels) whose centre lies within ``r``
        of a centre [m, 2] (x, y)."""
        S = img.shape[0]
        C = img.shape[1] // S
        for j in range(centres.shape[0]):
            cx, cy = centres[j, 0], centres[j, 1]
            for y in range(max(int(np.floor(cy - r)), 0), min(int(np.ceil(cy + r)), S - 1) + 1):
                for x in range(max(int(np.floor(cx - r)), 0), min(int(np.ceil(cx + r)), S - 1) + 1):
                    if (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r:
                        for ch in range(C):
                            img[y, x * C + ch] = 255

    return kernel


def release_discs_reference(img: np.ndarray, centres, r: float) -> np.ndarray:
    """The discs of the ``release`` drawing, plainly: pixel centres within ``r`` of any centre turn white."""
    y, x = np.indices(img.shape, dtype=np.float64)
    out = img.copy()
    for cx, cy in np.asarray(centres, np.float64):
        out[(x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r] = 255
    return out


def _outline(shape: BaseShape, size: int, line_width: int, antialias: bool, stroke: str = "inside"):
    """The whole outline: a PIL image (``inside``) or a uint8 array (``release``), at 4x for antialiasing."""
    from PIL import Image, ImageDraw

    k = 4 if antialias else 1
    if stroke == "release":
        return _release_outline(shape, size, line_width, k)
    img = Image.new("L", (size * k, size * k), 255)
    d = ImageDraw.Draw(img)
    if not shape.vertices:
        r = shape.radius * k
        d.ellipse([shape.cx * k - r, shape.cy * k - r, shape.cx * k + r, shape.cy * k + r], outline=0, width=line_width * k)
    else:
        d.polygon([(x * k, y * k) for x, y in shape.vertices], outline=0, width=line_width * k)
    return img


def _degrade(outline, shape: BaseShape, size: int, variant: str, level: float, antialias: bool) -> np.ndarray:
    k = 4 if antialias else 1
    degrade = bool(shape.vertices) and variant in ("corners", "edges")
    if isinstance(outline, np.ndarray):  # release: discs on the array (pixel centres within the radius)
        img = outline
        if degrade:  # [S, S] or [S, S, 3] (RGB: drawn in every channel, as the stroke)
            img = outline.copy()
            centres = disc_centres(shape, variant)
            _disc_kernel()(img.reshape(img.shape[0], -1), centres if k == 1 else centres * k + (k - 1) / 2,
                           float(disc_radius(shape, level) * k))
        if antialias:  # box filter: the mean of each k×k block
            img = (img.reshape(size, k, size, k).mean(axis=(1, 3)) + 0.5).astype(np.uint8)
        return img
    from PIL import Image, ImageDraw

    img = outline
    if degrade:
        img = outline.copy()
        d = ImageDraw.Draw(img)
        r = disc_radius(shape, level) * k
        for x, y in disc_centres(shape, variant) * k:
            d.ellipse([x - r, y - r, x + r, y + r], fill=255)
    if antialias:
        img = img.resize((size, size), Image.Resampling.BOX)
    return np.asarray(img)


def draw(shape: BaseShape, size: int, line_width: int, variant: str = "whole", level: float = 0.0,
         antialias: bool = False, stroke: str = "inside") -> np.ndarray:
    """uint8 [size, size] image: black outline on white, optionally degraded (strokes: module docstring)."""
    return _degrade(_outline(shape, size, line_width, antialias, stroke), shape, size, variant, level, antialias)


@functools.lru_cache(maxsize=8)
def _base(cls: str, rng_key: tuple, size: int, line_width: int, antialias: bool, stroke: str = "inside",
          channels: int = 1):
    """Base shape and outline of one pair: its corner and edge images (consecutive items) draw it once. The
    binary ``release`` outline is drawn in ``channels`` channels directly; the others in grey."""
    rng = np.random.default_rng([int(x) + 1 for x in rng_key])
    shape = sample_shape(cls, rng, size, line_width)
    if stroke == "release" and not antialias:
        return shape, _release_outline(shape, size, line_width, 1, channels)
    return shape, _outline(shape, size, line_width, antialias, stroke)


def _items(cfg: PolygonConfig, seed: int):
    for ci, cls in enumerate(cfg.classes):
        for k in range(cfg.per_class):
            if "whole" in cfg.variants:
                yield Item("whole", f"{cls}_whole_{k:06d}", {"shape_class": cls, "sides": SIDES[cls], "level": 0.0,
                                                             "variant": "whole", "_rng": (seed, ci, k, -1)})
            if cls == "circle":
                continue
            for li, level in enumerate(cfg.levels):
                pair = f"{cls}_p{level:.2f}_{k:06d}"
                for variant in ("corners", "edges"):
                    if variant in cfg.variants:
                        yield Item(f"{variant}_p{level:.2f}", f"{cls}_{variant}_p{level:.2f}_{k:06d}",
                                   {"shape_class": cls, "sides": SIDES[cls],
                                   "level": float(level), "variant": variant, "_rng": (seed, ci, k, li)}, pair)


# the released dataset's drawing: 224 px, 3-channel, binary, OpenCV's centred 3-px stroke (thickness 2)
PRESETS = {"paper": {"stroke": "release", "line_width": 2, "size": 224, "antialias": False, "channels": 3}}


def items(cfg: PolygonConfig, seed: int):
    return _items(cfg, seed)


def render(cfg: PolygonConfig, item: Item):
    shape, outline = _base(item.params["shape_class"], tuple(item.params["_rng"]), cfg.size, cfg.line_width,
                           cfg.antialias, cfg.stroke, cfg.channels)
    variant, level = item.params["variant"], item.params["level"]
    img = _degrade(outline, shape, cfg.size, variant, level, cfg.antialias)
    if cfg.channels == 3 and img.ndim == 2:
        img = np.broadcast_to(img[:, :, None], img.shape + (3,))  # a view; the PNG encoder copies once
    extra = {"cx": shape.cx, "cy": shape.cy, "radius": shape.radius, "rotation_deg": shape.rotation_deg,
             "perimeter": shape.perimeter}
    if variant != "whole":
        extra["disc_radius"] = disc_radius(shape, level)
        extra["removed_fraction"] = removed_fraction(shape, variant, level)
    return img, extra


register("degraded_polygons", PolygonConfig, "Tang & Ley (2023) degraded polygons: whole, corner- and edge-degraded",
         "papers/degraded-polygons.txt", items=items, render=render, presets=PRESETS,
         test_params={"per_class": 2, "levels": [0.3], "classes": ["circle", "triangle", "square"]})


def export_release_layout(dataset: str | os.PathLike, out: str | os.PathLike) -> list:
    """Lay a generated ``degraded_polygons`` dataset out as the authors' release, so their training code
    reads it: per degradation level ``<out>/p<level>/`` and for whole shapes ``<out>/whole/``, each with
    ``pngs/{N_s}_{k}_{whole|nocorners|noedges}.png`` (N_s = side count, 1 for circles; k counts the base
    shapes of one class, shared by a corner/edge pair), ``metadata_{whole|nocorners|noedges}.csv``
    (``filename,label``, label = N_s) and ``generator_args.txt`` (the dataset's config.json). Images are
    hard-linked when possible (no copy), else copied. Returns the folders written."""
    import json
    import shutil

    import pandas as pd

    from scenes.files import atomic_write_bytes

    src, out = Path(dataset), Path(out)
    if not (src / "annotations.parquet").is_file():
        raise FileNotFoundError(f"{src}: no annotations.parquet; is this a degraded_polygons dataset?")
    df = pd.read_parquet(src / "annotations.parquet")
    if "shape_class" not in df.columns:
        raise ValueError(f"{src}: not a degraded_polygons dataset (no shape_class column)")
    df = df[df.file_name != ""]
    names = {"whole": "whole", "corners": "nocorners", "edges": "noedges"}
    written = []
    for (variant_group, level), g in df.groupby([df.variant == "whole", df.level], sort=True):
        folder = out / ("whole" if variant_group else f"p{level:.2f}")
        (folder / "pngs").mkdir(parents=True, exist_ok=True)
        rows: dict[str, list[str]] = {}
        for cls, gc in g.groupby("shape_class", sort=False):
            n_s = max(SIDES[cls], 1)
            keys = list(dict.fromkeys(gc.set_id if not variant_group else gc.item_id))  # k per base shape
            for r in gc.itertuples():
                k = keys.index(r.item_id if variant_group else r.set_id)
                name = f"{n_s}_{k}_{names[r.variant]}.png"
                target = folder / "pngs" / name
                if not target.exists():
                    try:
                        os.link(src / r.file_name, target)
                    except OSError:
                        shutil.copyfile(src / r.file_name, target)
                rows.setdefault(names[r.variant], []).append(f"{name},{n_s}")
        for variant, lines in rows.items():
            atomic_write_bytes(folder / f"metadata_{variant}.csv", ("filename,label\n" + "\n".join(lines) + "\n").encode())
        args = json.loads((src / "config.json").read_text()) if (src / "config.json").is_file() else {}
        args["level"] = None if variant_group else float(level)
        atomic_write_bytes(folder / "generator_args.txt", json.dumps(args, indent=1, sort_keys=True).encode())
        written.append(folder)
    return written
