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


def _sample_shapes(cls: str, seeds: list, size: int, line_width: int) -> tuple[list, np.ndarray]:
    """:func:`sample_shape` for a batch of polygons of one class, one generator per seed (``default_rng(seed)``):
    the same draws per shape, the vertices computed for the whole batch (elementwise the same operations, so
    the same numbers; tested). Returns the shapes and their vertices, float64 [B, n, 2]."""
    min_r = int(size / 5)
    pad = math.ceil(line_width / 2)
    n = SIDES[cls]
    draws = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        cx, cy = rng.integers(min_r + pad + 1, size - min_r - pad, size=2).tolist()
        max_r = min(cx, cy, size - cx, size - cy)
        r = int(rng.integers(min_r, max_r)) if max_r > min_r else min_r
        draws.append((cx, cy, r, int(rng.integers(0, 360))))
    cx, cy, r, rot = (np.array(c, np.int64)[:, None] for c in zip(*draws, strict=True))
    a = np.array([math.radians(x) for x in rot[:, 0].tolist()])[:, None] + 2 * math.pi * np.arange(n) / n
    v = np.stack([np.rint(cx + r * np.cos(a)).astype(int), np.rint(cy + r * np.sin(a)).astype(int)], axis=2)
    shapes = [BaseShape(cls, *d, tuple(map(tuple, vs))) for d, vs in zip(draws, v.tolist(), strict=True)]
    return shapes, v.astype(np.float64)


def disc_centres(shape: BaseShape, variant: str) -> np.ndarray:
    """float64 [n, 2] (x, y): the vertices (``corners``) or the edge midpoints (``edges``); read-only."""
    return shape._centres["corners" if variant == "corners" else "edges"]


def disc_radius(shape: BaseShape, level: float) -> int:
    return int(math.ceil(level * shape.perimeter / (2 * len(shape.vertices))))


def removed_fraction(shape: BaseShape, variant: str, level: float) -> float:
    """Exact fraction of the (ideal, zero-width) outline inside the discs (fast path: :func:`_removed_fractions`,
    vectorised; its plain loop twin ``removed_fraction_loop`` gives the same bits, and the NumPy
    ``removed_fraction_reference`` is the specification both are tested against)."""
    v = shape._centres["vertices"]
    return float(_removed_fractions(v[None], disc_centres(shape, variant)[None],
                                    np.array([float(disc_radius(shape, level))]))[0])


def _removed_fractions(v: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """float64 [B]: per polygon b (vertices ``v`` [B, n, 2], disc centres ``c`` [B, m, 2], radius ``r`` [B])
    the fraction of its outline inside the discs. The arithmetic of :func:`removed_fraction_loop`, operation
    for operation and in its order (sums accumulated one term at a time), so the bits are the same; NumPy
    over the batch instead of a compiled loop (no compiler to start in every run)."""
    a = v[:, :, None, :]                                           # [B, n, 1, 2] edge starts
    d = np.roll(v, -1, axis=1) - v                                 # [B, n, 2]
    dx, dy = d[:, :, 0:1], d[:, :, 1:2]                            # [B, n, 1]
    qa = dx * dx + dy * dy
    fx = a[..., 0] - c[:, None, :, 0]                              # [B, n, m]
    fy = a[..., 1] - c[:, None, :, 1]
    qb = 2.0 * (fx * dx + fy * dy)
    rr = r[:, None, None]
    qc = fx * fx + fy * fy - rr * rr
    disc = qb * qb - 4.0 * qa * qc
    hit = disc > 0.0
    root = np.sqrt(np.where(hit, disc, 0.0))
    lo = np.minimum(np.maximum((-qb - root) / (2.0 * qa), 0.0), 1.0)
    hi = np.minimum(np.maximum((-qb + root) / (2.0 * qa), 0.0), 1.0)
    # the loop's insertion sort by start is stable: a stable sort, the missed discs last (they add nothing)
    order = np.argsort(np.where(hit, lo, np.inf), axis=2, kind="stable")
    s0 = np.take_along_axis(lo, order, 2)
    s1 = np.take_along_axis(np.where(hit, hi, -np.inf), order, 2)
    covered = np.zeros(qa.shape[:2])
    end = np.zeros(qa.shape[:2])
    for j in range(s0.shape[2]):
        t0, t1 = s0[:, :, j], s1[:, :, j]
        take = t1 > end
        covered = np.where(take, covered + (t1 - np.maximum(t0, end)), covered)
        end = np.where(take, t1, end)
    length = np.sqrt(qa[:, :, 0])
    removed = np.zeros(len(v))
    total = np.zeros(len(v))
    for e in range(v.shape[1]):
        removed = removed + covered[:, e] * length[:, e]
        total = total + length[:, e]
    return removed / total


def removed_fraction_loop(shape: BaseShape, variant: str, level: float) -> float:
    """The removed fraction as a plain loop (the twin of :func:`_removed_fractions`, bit for bit): per edge,
    each disc's parameter interval [lo, hi] (a quadratic), inserted in order of its start, the union's
    length summed one interval at a time."""
    v = shape._centres["vertices"].tolist()
    c = disc_centres(shape, variant).tolist()
    r = float(disc_radius(shape, level))
    n = len(v)
    removed = total = 0.0
    for e in range(n):
        ax, ay = v[e]
        dx, dy = v[(e + 1) % n][0] - ax, v[(e + 1) % n][1] - ay
        qa = dx * dx + dy * dy
        spans: list[tuple[float, float]] = []
        for cx, cy in c:
            fx, fy = ax - cx, ay - cy
            qb = 2.0 * (fx * dx + fy * dy)
            qc = fx * fx + fy * fy - r * r
            disc = qb * qb - 4.0 * qa * qc
            if disc <= 0.0:
                continue
            root = math.sqrt(disc)
            lo = min(max((-qb - root) / (2.0 * qa), 0.0), 1.0)
            hi = min(max((-qb + root) / (2.0 * qa), 0.0), 1.0)
            i = len(spans)
            while i > 0 and spans[i - 1][0] > lo:
                i -= 1
            spans.insert(i, (lo, hi))
        covered = end = 0.0
        for lo, hi in spans:
            if hi > end:
                covered += hi - max(lo, end)
                end = hi
        length = math.sqrt(qa)
        removed += covered * length
        total += length
    return removed / total


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


def _edge_rows(v: np.ndarray, size: int, reach: float):
    """The edges of a batch of closed polygons ``v`` [B, n, 2] (x, y) and the image rows each can reach:
    per edge (start ``ax``, ``ay``, direction ``dx``, ``dy``, squared length ``q``; edge index b·n + i) and
    per (edge, row) entry the edge index ``e`` and the row ``y`` (rows within ``reach`` of the edge, clipped to
    the image)."""
    a = v.reshape(-1, 2)
    d = (np.roll(v, -1, axis=1) - v).reshape(-1, 2)
    ax, ay, dx, dy = a[:, 0], a[:, 1], d[:, 0], d[:, 1]
    q = dx * dx + dy * dy
    y0 = np.maximum(np.floor(np.minimum(ay, ay + dy) - reach), 0).astype(np.int64)
    y1 = np.minimum(np.ceil(np.maximum(ay, ay + dy) + reach), size - 1).astype(np.int64)
    rows = np.maximum(y1 - y0 + 1, 0)
    e = np.repeat(np.arange(len(ax)), rows)                       # one entry per (edge, row)
    y = np.arange(len(e)) - np.repeat(np.cumsum(rows) - rows - y0, rows)
    return ax, ay, dx, dy, q, e, y


def _stroke_pixels(v: np.ndarray, size: int, reach: float) -> np.ndarray:
    """int64 flat indices b·S² + y·S + x (repeats possible) of the pixels of polygon b (vertices ``v``
    [B, n, 2], x, y) whose centre lies within ``reach`` of its closed outline, for a batch of polygons at
    once. Per edge, per row, only the columns near the edge's centre line are tested (a superset: every
    pixel within reach is among them); each candidate gets the test of :func:`release_stroke_reference`,
    operation for operation, so the pixels are the same (tested)."""
    S = size
    n = v.shape[1]
    ax, ay, dx, dy, q, e, y = _edge_rows(v, S, reach)
    bx0 = np.maximum(np.floor(np.minimum(ax, ax + dx) - reach), 0).astype(np.int64)
    bx1 = np.minimum(np.ceil(np.maximum(ax, ax + dx) + reach), S - 1).astype(np.int64)
    x0, x1 = bx0[e], bx1[e]
    ey_, steep = dy[e], dy[e] != 0.0
    with np.errstate(divide="ignore", invalid="ignore"):          # the band's columns: centre line ± half-width
        xc = ax[e] + (y - ay[e]) * dx[e] / ey_
        hw = reach * np.sqrt(q[e]) / np.abs(ey_) + 1.0
        x0 = np.where(steep, np.maximum(x0, np.floor(xc - hw)), x0).astype(np.int64)
        x1 = np.where(steep, np.minimum(x1, np.ceil(xc + hw)), x1).astype(np.int64)
    cols = np.maximum(x1 - x0 + 1, 0)
    k = np.repeat(np.arange(len(e)), cols)                        # one entry per candidate pixel
    x = np.arange(len(k)) - np.repeat(np.cumsum(cols) - cols - x0, cols)
    y, e = y[k], e[k]
    px, py = x - ax[e], y - ay[e]
    ddx, ddy = dx[e], dy[e]
    t = np.minimum(np.maximum((px * ddx + py * ddy) / q[e], 0.0), 1.0)
    ex, ey = px - t * ddx, py - t * ddy
    near = ex * ex + ey * ey <= reach * reach
    return ((e[near] // n) * S + y[near]) * S + x[near]


def _stroke_rows(v: np.ndarray, size: int, reach: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The same stroke as :func:`_stroke_pixels` for polygons with whole-number vertices (every ``release``
    drawing without antialiasing), as runs: per edge and row, the pixels within ``reach`` of the edge form one
    interval (a capsule is convex), computed from its three parts — the band along the segment (|cross| ≤
    reach·length, 0 ≤ dot ≤ length²) and the two end discs. Returns (b·S + y, first x, last x) per run, x
    clipped to the image; empty runs have last < first; and the index of each run's edge in its polygon. Equal to the per-pixel test: with integer vertices a
    run's end is never within 1e-8 px of a whole number unless it is one exactly (the band's sides sit at
    (py·dx ± reach·length)/dy, and reach·length = (10·w + 9)·length/20 is never a whole number that an
    integer cross product reaches; an end-disc side would need a square equal to reach² − py²), while the
    floating-point error is ~1e-13 px; tested against the reference on random polygons and line widths."""
    S = size
    n = v.shape[1]
    ax, ay, dx, dy, q, e, y = _edge_rows(v, S, reach)
    ax, ay, dx, dy, q = ax.take(e), ay.take(e), dx.take(e), dy.take(e), q.take(e)
    py = y - ay
    r2 = reach * reach
    lo = np.full(len(e), np.inf)
    hi = np.full(len(e), -np.inf)
    for h2, cx in ((r2 - py * py, ax), (r2 - (py - dy) * (py - dy), ax + dx)):  # the end discs
        w = np.sqrt(np.maximum(h2, 0.0))
        inside = h2 >= 0.0
        lo = np.where(inside, np.minimum(lo, cx - w), lo)
        hi = np.where(inside, np.maximum(hi, cx + w), hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        rl = reach * np.sqrt(q)
        # |cross| <= reach·length, cross = (x - ax)·dy − py·dx; for dy = 0: |py·dx| <= reach·length
        c0, c1 = (py * dx - rl) / dy, (py * dx + rl) / dy
        flat, near = dy == 0.0, np.abs(py * dx) <= rl
        b_lo = np.where(flat, np.where(near, -np.inf, np.inf), np.minimum(c0, c1))
        b_hi = np.where(flat, np.where(near, np.inf, -np.inf), np.maximum(c0, c1))
        # 0 <= dot <= q, dot = (x - ax)·dx + py·dy; for dx = 0: 0 <= py·dy <= q
        t0, t1 = (-py * dy) / dx, (q - py * dy) / dx
        vert = dx == 0.0
        ok = (py * dy >= 0.0) & (py * dy <= q)
        b_lo = np.maximum(b_lo, np.where(vert, np.where(ok, -np.inf, np.inf), np.minimum(t0, t1)))
        b_hi = np.minimum(b_hi, np.where(vert, np.where(ok, np.inf, -np.inf), np.maximum(t0, t1)))
    band = b_lo <= b_hi
    lo = np.where(band, np.minimum(lo, ax + b_lo), lo)
    hi = np.where(band, np.maximum(hi, ax + b_hi), hi)
    first = np.maximum(np.ceil(lo), 0)
    last = np.minimum(np.floor(hi), S - 1)
    empty = ~(first <= last)
    first = np.where(empty, 0, first).astype(np.int64)
    last = np.where(empty, -1, last).astype(np.int64)
    return (e // n) * S + y, first, last, e % n


def _run_pixels(row: np.ndarray, first: np.ndarray, last: np.ndarray, size: int) -> np.ndarray:
    """Flat indices row·S + x of every pixel of the runs (repeats where runs overlap)."""
    cols = last - first + 1
    return np.arange(cols.sum()) + np.repeat(row * size + first - (np.cumsum(cols) - cols), cols)


def _black_pixels(v: np.ndarray, size: int, reach: float) -> list[np.ndarray]:
    """Per polygon of the batch ``v`` [B, n, 2]: the sorted, unique flat indices y·S + x of its stroke."""
    S2 = size * size
    mask = np.zeros(len(v) * S2, bool)
    mask[_stroke_pixels(v, size, reach)] = True
    flat = np.flatnonzero(mask)
    cuts = np.searchsorted(flat, np.arange(1, len(v)) * S2)
    return [p - b * S2 for b, p in enumerate(np.split(flat, cuts))]


def _outside_discs(pix: np.ndarray, size: int, centres: np.ndarray, r: float) -> np.ndarray:
    """The pixels of ``pix`` (flat y·S + x) whose centre is farther than ``r`` from every centre [m, 2]
    (x, y) — the black pixels a disc does not whiten (the test of :func:`release_discs_reference`)."""
    x = (pix % size).astype(np.float64)[:, None]
    y = (pix // size).astype(np.float64)[:, None]
    cx, cy = centres[None, :, 0], centres[None, :, 1]
    return pix[~((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r).any(axis=1)]


def _runs_minus_discs(y: np.ndarray, first: np.ndarray, last: np.ndarray, cx: np.ndarray, cy: np.ndarray,
                      r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs (row ``y``, ``first`` .. ``last`` x) with every pixel whose centre lies within ``r`` of a disc
    centre removed — the white discs of :func:`release_discs_reference`, on runs. Per run: its image's disc
    centres ``cx``, ``cy`` [runs, m] and radius ``r`` [runs]. Centres are whole or half pixels and radii
    whole numbers, so each disc's span on a row is exact in integers at twice the scale:
    (2x − 2cx)² ≤ 4r² − (2y − 2cy)². The spans, sorted by start, leave pieces between them (from the run's
    start, each piece starts after the furthest span end so far): (starts, ends) [runs, m + 1], a piece
    empty where end < start."""
    cx2 = np.rint(cx * 2).astype(np.int64)
    h = np.rint(4 * r * r).astype(np.int64)[:, None] - (2 * y[:, None] - np.rint(cy * 2).astype(np.int64)) ** 2
    s = np.floor(np.sqrt(np.maximum(h, 0))).astype(np.int64)       # exact: isqrt for h < 2**52
    hit = h >= 0
    big = np.int64(1) << 40
    a = np.where(hit, (cx2 - s + 1) // 2, big)                      # the disc's first and last x on the row
    b = np.where(hit, (cx2 + s) // 2, -big)
    if a.shape[1] == 2:  # two discs per run (every run of the paper set): a compare-and-swap, no sort
        return _two_spans(first, last, a, b, big)
    return _sorted_spans(first, last, a, b, big)


def _sorted_spans(first: np.ndarray, last: np.ndarray, a: np.ndarray, b: np.ndarray, big) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of runs ``first`` .. ``last`` left between the discs' spans ``a`` .. ``b`` [runs, m] (no span:
    a = ``big``, b = −``big``), as :func:`_runs_minus_discs` returns them: the spans sorted by start (stable),
    each piece from the furthest span end so far to the next span's start."""
    order = np.argsort(a, axis=1, kind="stable")
    a, b = np.take_along_axis(a, order, 1), np.take_along_axis(b, order, 1)
    starts = np.maximum.accumulate(np.concatenate([first[:, None], b + 1], axis=1), axis=1)
    ends = np.concatenate([np.where(a < big, np.minimum(a - 1, last[:, None]), -1), last[:, None]], axis=1)
    return starts, ends


def _two_spans(first: np.ndarray, last: np.ndarray, a: np.ndarray, b: np.ndarray, big) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of :func:`_runs_minus_discs` for two discs per run (its sort and running maximum written
    out for two columns: the spans swapped where the second starts first — strictly, as the stable sort —
    and the pieces' starts and ends built column by column; :func:`_sorted_spans` is the reference, tested equal)."""
    swap = a[:, 1] < a[:, 0]
    a0, a1 = np.where(swap, a[:, 1], a[:, 0]), np.where(swap, a[:, 0], a[:, 1])
    b0, b1 = np.where(swap, b[:, 1], b[:, 0]), np.where(swap, b[:, 0], b[:, 1])
    s1 = np.maximum(first, b0 + 1)
    starts = np.stack([first, s1, np.maximum(s1, b1 + 1)], axis=1)
    ends = np.stack([np.where(a0 < big, np.minimum(a0 - 1, last), -1), np.where(a1 < big, np.minimum(a1 - 1, last), -1),
                     last], axis=1)
    return starts, ends


def _image(pix, size: int, channels: int) -> np.ndarray:
    """uint8 [S, S] or [S, S, C] (contiguous): white, black at the flat pixels ``pix`` (an array, or a tuple of
    arrays); every channel of a pixel set at once, through a view of C-byte items."""
    img = np.full(size * size * channels, 255, np.uint8)
    black = np.zeros(1, f"V{channels}")[0]
    for p in pix if isinstance(pix, tuple) else (pix,):
        img.view(f"V{channels}")[p] = black
    return img.reshape(size, size) if channels == 1 else img.reshape(size, size, channels)


def release_stroke_reference(vertices, size: int, line_width: int, scale: int = 1) -> np.ndarray:
    """uint8 [size·scale]²: the ``release`` stroke, plainly — each pixel centre's distance to every edge
    (the specification the fast strokes, per pixel and as runs, are tested against, pixel for pixel)."""
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
    v = np.asarray(shape.vertices, np.float64)[None] * k + off
    return _image(_black_pixels(v, n, reach)[0], n, channels)


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
            n, channels = outline.shape[0], (outline.shape[2] if outline.ndim == 3 else 1)
            centres = disc_centres(shape, variant)
            black = np.flatnonzero(outline.reshape(n * n, channels)[:, 0] == 0)
            img = _image(_outside_discs(black, n, centres if k == 1 else centres * k + (k - 1) / 2,
                                        float(disc_radius(shape, level) * k)), n, channels)
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


GROUP = 6  # base shapes drawn per batch by the fast path (108 images at 9 levels: NumPy's per-call cost shared;
# per image 98 us at 1, 75 at 3, 67 at 6, 64 at 12)


@functools.lru_cache(maxsize=2)
def _group(cls: str, seed: int, ci: int, k0: int, k1: int, levels: tuple, variants: tuple, size: int,
           line_width: int) -> dict:
    """Every image of base indices ``k0`` ≤ k < ``k1`` of one polygon class in the binary ``release`` drawing
    (consecutive items: whole shape, then the corner/edge pair at every level), drawn as one batch: the
    strokes as runs (:func:`_stroke_rows`), each degraded image's runs minus its discs
    (:func:`_runs_minus_discs`), the removed fractions (:func:`_removed_fractions`). Returns {(k, level
    index or -1, variant): (black pixels y·S + x, extra columns)}; the pixels and numbers of the per-item path
    (:func:`draw`, :func:`removed_fraction`; tested)."""
    degraded = [v for v in ("corners", "edges") if v in variants]
    keys = [(k, li) for k in range(k0, k1)
            for li in ([-1] if "whole" in variants else []) + (list(range(len(levels))) if degraded else [])]
    shapes, v = _sample_shapes(cls, [[seed + 1, ci + 1, k + 1, li + 1] for k, li in keys], size, line_width)
    reach = release_reach(line_width)
    row, first, last, edge = _stroke_rows(v, size, reach)
    y = row % size
    bounds = np.searchsorted(row, np.arange(len(shapes) + 1) * size).tolist()  # runs come shape by shape
    extras = [{"cx": s.cx, "cy": s.cy, "radius": s.radius, "rotation_deg": s.rotation_deg, "perimeter": s.perimeter}
              for s in shapes]
    out = {}
    for b, (k, li) in enumerate(keys):
        if li < 0:
            lo, hi = bounds[b], bounds[b + 1]
            out[k, li, "whole"] = (_run_pixels(y[lo:hi], first[lo:hi], last[lo:hi], size), extras[b])
    deg = [b for b, (_, li) in enumerate(keys) if li >= 0]
    if not deg:
        return out
    # every degraded image at once: its shape's runs minus its discs
    radii = [disc_radius(shapes[b], float(levels[keys[b][1]])) for b in deg]
    r = np.array(radii, np.float64)
    images, centres = [], []
    for variant in degraded:
        c = v[deg] if variant == "corners" else (v[deg] + np.roll(v[deg], -1, axis=1)) / 2  # as BaseShape._centres
        fractions = _removed_fractions(v[deg], c, r).tolist()
        centres.append(c)
        images += [(b, i, variant, fractions[i]) for i, b in enumerate(deg)]
    cs = np.concatenate(centres)                                       # [images, m, 2]
    rs = np.concatenate([r] * len(degraded))
    counts = [bounds[b + 1] - bounds[b] for b, _, _, _ in images]
    owner = np.repeat(np.arange(len(images)), counts)                # runs, image by image
    at = np.array([bounds[b] for b, _, _, _ in images], np.int64)     # each image's first run in the batch
    idx = np.arange(len(owner)) + np.repeat(at - (np.cumsum(counts) - counts), counts)
    ys, fs, ls, es = y.take(idx), first.take(idx), last.take(idx), edge.take(idx)
    # a disc can only reach an edge's runs if its centre lies within radius + reach of the edge: per image
    # and edge, the few such discs (the others' slots point far away), so a run is tested against those only
    va = v[[b for b, _, _, _ in images]]                               # [images, n, 2]
    vd = np.roll(va, -1, axis=1) - va
    rel = cs[:, :, None, :] - va[:, None, :, :]                        # [images, m, n, 2]
    t = np.clip((rel * vd[:, None]).sum(-1) / (vd * vd).sum(-1)[:, None], 0.0, 1.0)
    gap = rel - t[..., None] * vd[:, None]
    reach_ok = (gap * gap).sum(-1) <= (rs[:, None, None] + reach + 2.0) ** 2    # [images, m, n]
    slots = max(int(reach_ok.sum(axis=1).max()), 1)
    pick = np.argsort(~reach_ok, axis=1, kind="stable")[:, :slots]      # [images, slots, n]
    ok = np.take_along_axis(reach_ok, pick, 1)
    scx = np.where(ok, np.take_along_axis(cs[:, :, 0, None], pick, 1), -1e4).transpose(0, 2, 1)  # [images, n, slots]
    scy = np.where(ok, np.take_along_axis(cs[:, :, 1, None], pick, 1), -1e4).transpose(0, 2, 1)
    oe = owner * v.shape[1] + es                                       # (image, edge) of each run, flat
    cx, cy = scx.reshape(-1, slots).take(oe, 0), scy.reshape(-1, slots).take(oe, 0)  # [runs, slots]
    ro = rs.take(owner)[:, None]          # (take: NumPy's integer gather without fancy indexing's overhead)
    # only runs that a disc's bounding box touches need the exact test; the others are kept whole
    # (the same comparisons in fewer passes: in-place temporaries, and the two-slot case without a reduction)
    tmp = ys[:, None] - cy
    near = np.abs(tmp, out=tmp) <= ro
    np.subtract(cx, ro, out=tmp)
    near &= tmp <= ls[:, None]
    np.add(cx, ro, out=tmp)
    near &= tmp >= fs[:, None]
    near = near[:, 0] | near[:, 1] if slots == 2 else near.any(axis=1)
    hit, miss = np.flatnonzero(near), np.flatnonzero(~near)           # indices once: cheaper than 10 masks
    o, yn = owner.take(hit), ys.take(hit)
    starts, ends = _runs_minus_discs(yn, fs.take(hit), ls.take(hit), cx.take(hit, 0), cy.take(hit, 0), rs.take(o))
    keep = np.flatnonzero(starts <= ends)                              # the non-empty pieces, flat, run by run
    run = keep // starts.shape[1]
    # pixels of the untouched runs and of the touched runs' pieces, each in image order; an image is both slices
    parts = []
    for y_, f_, l_, own in ((ys.take(miss), fs.take(miss), ls.take(miss), owner.take(miss)),
                            (yn.take(run), starts.take(keep), ends.take(keep), o.take(run))):
        pix = _run_pixels(y_, f_, l_, size)
        cut = np.cumsum(np.bincount(own, weights=l_ - f_ + 1, minlength=len(images))).astype(np.int64).tolist()
        parts.append((pix, [0] + cut))
    for j, (b, i, variant, fraction) in enumerate(images):
        k, li = keys[b]
        pix = tuple(p[c[j]:c[j + 1]] for p, c in parts)
        out[k, li, variant] = (pix, {**extras[b], "disc_radius": radii[i], "removed_fraction": fraction})
    return out


def render(cfg: PolygonConfig, item: Item):
    p = item.params
    if cfg.stroke == "release" and not cfg.antialias and p["shape_class"] != "circle":
        seed, ci, k, li = (int(x) for x in p["_rng"])
        k0 = k - k % GROUP
        pix, extra = _group(p["shape_class"], seed, ci, k0, min(k0 + GROUP, cfg.per_class), tuple(cfg.levels),
                            tuple(cfg.variants), cfg.size, cfg.line_width)[k, li, p["variant"]]
        return _image(pix, cfg.size, cfg.channels), dict(extra)
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
         test_params={"per_class": 2, "levels": [0.3], "classes": ["circle", "triangle", "square"]},
         png_deflate="rle")  # binary line drawings: run-length deflate is smaller and faster for them


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

    from infra.files import atomic_write_bytes

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
