"""The rasterisation rules every splat backend shares, stated once (gsplat 1.5.3 "classic" mode).

The fast CPU kernel (``render/_cpu.py``), its readable float64 twin (``render/_torch_impl.py``) and the
gsplat adapter (``render/_gsplat.py``) import these; the step-by-step rules are in docs/render.md
("Splat rendering rules"). The real-SH basis constants are geometry, not kernel policy: they live in
:mod:`scenes.sh` (``C0 … C3``), which the CPU kernel and the torch twin import (gsplat evaluates the same
basis itself; its adapter passes ``sh_degree``).
"""
from __future__ import annotations

TILE = 16  # pixels per tile side (binning and early termination)
ALPHA_MIN = 1.0 / 255.0  # a splat contributes to a pixel only where alpha >= 1/255 (one 8-bit step)
ALPHA_MAX = 0.999  # alpha is clamped below 1 so transmittance never reaches exactly 0
T_STOP = 1e-4  # a pixel stops compositing once its transmittance falls below this
EPS2D = 0.3  # px², added to the 2D covariance diagonal (low-pass dilation; gsplat ``eps2d``)
GUARD_BAND = 0.3  # the view frustum widened by this fraction of tan(fov/2) when clamping for the Jacobian
EXTENT_MAX = 3.33  # a splat's bounding box is at most 3.33 standard deviations per axis
NEAR = 0.01  # m, near clipping plane (gsplat's default ``near_plane``)
FAR = 1e10  # m, far clipping plane (gsplat's default ``far_plane``)
