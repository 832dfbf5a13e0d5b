"""Fast antialiased coverage for the illusion generators: ``common.coverage``'s result, computed where it
can differ from 0 or 1 only.

``common.coverage`` (the reference) samples every pixel of a shape's bounding box on a k × k sub-pixel grid;
for long diagonal strokes (Ponzo's rails) and big annular sectors (Jastrow) that is 16 samples for each of
tens of thousands of pixels, most of them plainly inside or outside. Here the shape is first sampled at pixel
centres; a pixel is *uniform* when the centres of its 5 × 5 neighbourhood agree, and takes that value (0 or
1); only the other pixels (a band about 2 px wide around every edge) are supersampled, at exactly the sub-
pixel positions the reference uses, so their coverage is bit-identical. The result equals the reference
for every shape whose features are at least ~1 px wide and whose holes are at least ~4 px across — every
shape these generators draw (tests/test_mindset_illusions.py compares both on thousands of them). A shape
thinner than that (a hairline, a needle tip) should use ``common.paint``.

This is a drawing primitive like the ones in ``common.py`` (owned by the low/mid-level group); it lives here
until it is merged there.
"""
from __future__ import annotations

import math

import numpy as np

from .common import SUPERSAMPLE, Shape, coverage, paint_coverage

_HALO = 2  # neighbourhood radius (px) over which the centre samples must agree


def _dilate(mask: np.ndarray, r: int) -> np.ndarray:
    """Boolean dilation by a (2r+1)² square (separable running OR over a zero-padded block)."""
    h, w = mask.shape
    p = np.zeros((h + 2 * r, w), bool)
    p[r:r + h] = mask
    rows = np.zeros((h, w), bool)
    for d in range(2 * r + 1):
        rows |= p[d:d + h]
    q = np.zeros((h, w + 2 * r), bool)
    q[:, r:r + w] = rows
    out = np.zeros((h, w), bool)
    for d in range(2 * r + 1):
        out |= q[:, d:d + w]
    return out


def fast_coverage(shape: Shape, size, antialias: bool = True, k: int = SUPERSAMPLE):
    """Same contract and result as :func:`common.coverage` (float32 [h, w] coverage over the pixels meeting
    the shape's bounding box, and the block's (row, column) origin) — see the module docstring."""
    if not antialias:
        return coverage(shape, size, False)
    H, W = (size, size) if isinstance(size, (int, np.integer)) else size
    x0, y0, x1, y1 = shape.bbox
    c0, r0 = max(int(np.floor(x0)), 0), max(int(np.floor(y0)), 0)
    c1, r1 = min(int(np.floor(x1)) + 1, W), min(int(np.floor(y1)) + 1, H)
    if c1 <= c0 or r1 <= r0:
        return np.zeros((0, 0), np.float32), (0, 0)
    cx = np.arange(c0, c1) + 0.5
    cy = np.arange(r0, r1) + 0.5
    centre = np.broadcast_to(shape.inside(cx[None, :], cy[:, None]), (r1 - r0, c1 - c0))
    # mixed: some centre within the halo is inside and some is outside
    some_in = _dilate(centre, _HALO)
    some_out = _dilate(~centre, _HALO)
    # the block's border ring is always supersampled: its neighbourhood is partly unknown (off the image)
    edge = np.zeros_like(centre)
    edge[:_HALO], edge[-_HALO:], edge[:, :_HALO], edge[:, -_HALO:] = True, True, True, True
    mixed = (some_in & some_out) | edge
    cov = centre.astype(np.float32)
    ii, jj = np.nonzero(mixed)
    _supersample(cov, shape, ii, jj, r0, c0, k)
    return cov, (r0, c0)


def _supersample(cov: np.ndarray, shape: Shape, ii, jj, r0: int, c0: int, k: int) -> None:
    """Set ``cov[ii, jj]`` (pixels (r0 + ii, c0 + jj) of the canvas) to the fraction of their k × k sub-sample
    centres inside ``shape``, in place (the supersampled coverage of the mixed pixels)."""
    if len(ii):
        off = (np.arange(k) + 0.5) / k
        xs = ((jj + c0)[:, None, None] + off[None, None, :]) + np.zeros((1, k, 1))
        ys = ((ii + r0)[:, None, None] + off[None, :, None]) + np.zeros((1, 1, k))
        inside = shape.inside(xs.ravel(), ys.ravel()).reshape(len(ii), k * k)
        cov[ii, jj] = inside.sum(axis=1, dtype=np.int64).astype(np.float32) / np.float32(k * k)


def paint_fast(img: np.ndarray, shape: Shape, rgb, antialias: bool = True, opacity: float = 1.0) -> None:
    """:func:`common.paint` through :func:`fast_coverage` (same pixels, in place)."""
    cov, origin = fast_coverage(shape, img.shape[:2], antialias)
    paint_coverage(img, cov, origin, rgb, opacity)


# ------------------------------------------------------------------------------------ by distance (strokes, discs)
# A sub-sample of a pixel lies at most 0.375·√2 = 0.53 px from its centre, so a pixel whose samples disagree
# has its centre within 0.53 px of the shape's boundary. With a signed distance bound |sdf| <= the true
# distance to the boundary (exact inside; outside a box the max-norm is below the Euclidean distance), the
# pixels with |sdf(centre)| > _BAND are whole (inside iff sdf < 0) and only the band is supersampled.
_BAND = 0.6


def _sdf_coverage(shape: Shape, sdf, size, k: int = SUPERSAMPLE):
    H, W = (size, size) if isinstance(size, (int, np.integer)) else size
    x0, y0, x1, y1 = shape.bbox
    c0, r0 = max(int(np.floor(x0)), 0), max(int(np.floor(y0)), 0)
    c1, r1 = min(int(np.floor(x1)) + 1, W), min(int(np.floor(y1)) + 1, H)
    if c1 <= c0 or r1 <= r0:
        return np.zeros((0, 0), np.float32), (0, 0)
    d = sdf((np.arange(c0, c1) + 0.5)[None, :], (np.arange(r0, r1) + 0.5)[:, None])
    cov = (d < 0).astype(np.float32)
    ii, jj = np.nonzero(np.abs(d) <= _BAND)
    _supersample(cov, shape, ii, jj, r0, c0, k)
    return cov, (r0, c0)


def segment_coverage(p0, p1, width: float, cap: str, size, antialias: bool = True):
    """``coverage(segment(p0, p1, width, cap), size, antialias)``, the same pixels, supersampled only within
    0.6 px of the stroke's outline."""
    from .common import segment

    shape = segment(p0, p1, width, cap)
    (ax, ay), (bx, by) = (float(v) for v in p0), (float(v) for v in p1)
    length = math.hypot(bx - ax, by - ay)
    if not antialias or length == 0:
        return coverage(shape, size, antialias)
    ux, uy, h = (bx - ax) / length, (by - ay) / length, width / 2
    ext = h if cap == "square" else 0.0

    def sdf(x, y):
        t = (x - ax) * ux + (y - ay) * uy
        n = np.abs((x - ax) * -uy + (y - ay) * ux)
        if cap == "round":
            return np.hypot(t - np.clip(t, 0.0, length), n) - h
        return np.maximum(np.maximum(n - h, -ext - t), t - length - ext)

    return _sdf_coverage(shape, sdf, size)


def disc_coverage(cx: float, cy: float, r: float, size, antialias: bool = True):
    """``coverage(disc(cx, cy, r), size, antialias)``, the same pixels, supersampled only near the circle."""
    from .common import disc

    shape = disc(cx, cy, r)
    if not antialias:
        return coverage(shape, size, False)
    return _sdf_coverage(shape, lambda x, y: np.hypot(x - cx, y - cy) - r, size)


def paint_segment(img, p0, p1, width: float, cap: str, rgb, antialias: bool = True) -> None:
    cov, origin = segment_coverage(p0, p1, width, cap, img.shape[:2], antialias)
    paint_coverage(img, cov, origin, rgb)


def paint_disc(img, cx: float, cy: float, r: float, rgb, antialias: bool = True) -> None:
    cov, origin = disc_coverage(cx, cy, r, img.shape[:2], antialias)
    paint_coverage(img, cov, origin, rgb)
