"""Compiled nearest-hit ray casting against small triangle meshes (the placement supports).

:func:`nearest_hits` is the numba twin of the vectorised numpy Möller–Trumbore in
``tasks.placement.TriangleRays.intersects_location_reference``: the same operations in the same order on
float64 (cross products as ``a1·b2 − a2·b1``, the three-term dot products summed as numpy's reduction
sums them: left to right), the same tie rule (the first triangle at the smallest t), so it returns
bit for bit the same hits (tested on random rays, tests/test_placement_design.py). It visits each
(ray, triangle) pair once without the numpy version's (rays × triangles × 3) temporaries.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _dot(a0, a1, a2, b0, b1, b2):
    # numpy's (a * b).sum(-1) over a length-3 axis, left to right (checked bit for bit by the tests)
    return (a0 * b0 + a1 * b1) + a2 * b2


@nb.njit(cache=True, nogil=True)
def nearest_hits(o_all, d_all, cand, v0, e1, e2, best, tri):
    """For each ray index in ``cand``: the smallest t > 1e-9 over all triangles (``best``, inf if none) and
    its triangle (``tri``, -1 if none), written in place. Triangles: v0, e1 = v1 − v0, e2 = v2 − v0 [m, 3]."""
    eps = 1e-12
    m = v0.shape[0]
    for k in range(cand.shape[0]):
        r = cand[k]
        ox, oy, oz = o_all[r, 0], o_all[r, 1], o_all[r, 2]
        dx, dy, dz = d_all[r, 0], d_all[r, 1], d_all[r, 2]
        tb = math.inf
        jb = -1
        for j in range(m):
            e1x, e1y, e1z = e1[j, 0], e1[j, 1], e1[j, 2]
            e2x, e2y, e2z = e2[j, 0], e2[j, 1], e2[j, 2]
            # p = d × e2
            px = dy * e2z - dz * e2y
            py = dz * e2x - dx * e2z
            pz = dx * e2y - dy * e2x
            det = _dot(e1x, e1y, e1z, px, py, pz)
            if not abs(det) > eps:
                continue
            inv = 1.0 / det
            sx, sy, sz = ox - v0[j, 0], oy - v0[j, 1], oz - v0[j, 2]
            u = _dot(sx, sy, sz, px, py, pz) * inv
            # q = s × e1
            qx = sy * e1z - sz * e1y
            qy = sz * e1x - sx * e1z
            qz = sx * e1y - sy * e1x
            v = _dot(dx, dy, dz, qx, qy, qz) * inv
            t = _dot(e2x, e2y, e2z, qx, qy, qz) * inv
            if u >= 0 and v >= 0 and u + v <= 1 and t > 1e-9 and t < tb:
                tb = t
                jb = j
        best[r] = tb
        tri[r] = jb
