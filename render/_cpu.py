"""The fast CPU splat renderer: numba-compiled projection, parallel 16×16 tile binning and parallel tiles.

Same rules as the readable reference in ``render/_torch_impl.py`` (which the tests compare against):
projection, SH colour and the per-pixel Gaussian evaluation in float64 (edge-on flat Gaussians have
near-singular 2D covariances, whose quadratic form cancels badly in float32); transmittance and colour
accumulation in float32.

Pipeline (three passes over the Gaussians, none serial)
1. ``_project`` (parallel over Gaussians): activation, EWA projection, dilation, conic, per-axis
   radii, view-dependent colour, culling. Writes a packed float64 record per Gaussian (into per-thread
   scratch arrays kept between frames, :func:`scratch`). ``_project_cached`` is the same with the
   view-independent activation (normalised quaternion, exp scales, sigmoid opacity, ln(255·o), extent)
   read from a per-Gaussian-set cache (:func:`cached_activation`, same operations, bit-identical records;
   the inputs' bit patterns are checked per Gaussian, so arrays changed in place are recomputed);
   ``_project`` is its plain twin (``render_cpu(cache=False)``).
2. Binning (``bin_tiles``): one stable sort of the kept Gaussians by camera z (a compiled radix sort of the
   depths' bit patterns, equal to numpy's stable argsort: ``depth_order``) and a parallel
   gather of their records in that order (``packed``: compositing then reads each tile's Gaussians at
   ascending addresses; the gather's scattered reads are prefetched); the gather also writes each Gaussian's tile rectangle
   (``rects``, 16 bytes, so the two binning passes need not re-read the records); ``_bin_count`` (parallel over
   fixed chunks of ``packed``) counts each chunk's tile overlaps; a prefix sum over (tile, chunk) gives every chunk its slot in every tile;
   ``_bin_scatter`` (parallel over chunks) writes the indices. Each tile's list is therefore in
   (z, input index) order with no per-tile sort — exactly what the plain twin :func:`bin_reference`
   (a global stable sort, then appending to tiles one Gaussian at a time) gives; tested equal.
   The renderer does this per depth slab (front 1/16 of the Gaussians, then 1/16, 1/8, 1/4, 1/2), binning
   a slab only into tiles that are not yet opaque, so Gaussians behind opaque tiles cost no binning; when
   a slab closes fewer than 10% of the open tiles (a translucent scene), the rest is done in one slab.
   (Listing a tile only where the α ≥ 1/255 ellipse meets it was tried: it dropped 17% of the overlaps
   of a trained-like scene but cost more than it saved.)
3. ``_composite`` (parallel over tiles): front to back over the tile's Gaussians, each touching only the
   pixel centres of its row-by-row α ≥ 1/255 span inside its bounding box (span coefficients once per
   Gaussian and tile, no division per row; the spans of the tile's 16 rows in one vectorised loop; clipped to the row's first..last pixel not yet terminated,
   rows whose pixels have all terminated skipped), with early
   termination per pixel and per tile. The α of a row are computed for all 16 pixels of the tile row at once
   (``_alpha``: σ in float64 and exp(−σ) by ``_exp_neg``, a polynomial LLVM vectorises, within 4 ulp of libm's
   exp), then the per-pixel rule applied to the span's pixels as selects in a second branch-free loop over
   the row (the tile's state is one float32 array of planes, ``_S_T`` … ``_S_LIMIT``); both loops are
   vectorised and cost about what two scalar libm exps did. A tile's records lie scattered over ``packed`` (tens of MB), so a
   tile used to wait on memory at each Gaussian: the record and radii ``PREFETCH_AHEAD`` Gaussians ahead
   are requested early (``_prefetch_row``, a hint that changes no value). With ``cull=False`` the loop is the plain per-pixel
   rule these are tested against (the same ``_alpha`` per pixel, so the same bits).

Each stage is compiled twice: ``parallel=True`` (tiles and Gaussians over the cores, for one frame at a
time) and serial with ``nogil=True`` (one frame per thread, for many small frames: :func:`render.splat_many`).
Both give bit-identical images. Compiled functions are cached on disk (``cache=True``), so only the first
process compiles.
"""
from __future__ import annotations

import math
import os
import threading
import time
import types
import weakref

# numba's OpenMP threads otherwise spin between parallel regions (a frame has ~15: projection, gather, and
# per depth slab a count, a scatter and a composite), burning the CPU other processes and our own
# partner thread need; on a shared 2-core machine that doubled the CPU per frame. Read by libgomp when
# numba first starts its threads; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba as nb  # noqa: E402
import numpy as np
from llvmlite import ir
from numba import types as nbtypes
from numba.core import cgutils
from numba.extending import intrinsic

from scenes.sh import C0, C1, C2, C3

from . import rules
from .rules import ALPHA_MAX, EPS2D, EXTENT_MAX, FAR, GUARD_BAND, NEAR, TILE

ALPHA_MIN = np.float32(rules.ALPHA_MIN)  # float32: compared with the float32 alpha of the compositing step
ALPHA_MIN_64 = rules.ALPHA_MIN  # float64: the opacity cull in the float64 projection
ALPHA_MIN_INV = 1.0 / rules.ALPHA_MIN  # exactly 255.0; a product keeps the kernel's rounding as before
T_STOP = np.float32(rules.T_STOP)
# Culling margins: a pixel is skipped without evaluation only when σ > ln(255·o) + CUT_MARGIN, i.e. its α
# is below 1/255 by a factor e^-0.001 — about 10⁴ float32 rounding steps, so the float32 α test would
# have skipped it too; pixel-centre bounds are widened by SPAN_SLACK px (1/4096) for the same reason.
CUT_MARGIN = 1e-3
SPAN_SLACK = 2.0 ** -12
# Chunks of Gaussians for the parallel binning (the result does not depend on it; more chunks balance
# threads better, each costs one tile histogram)
BIN_CHUNKS = 16
# Depth slabs (see slab_bounds): the first holds 1/SLAB_FIRST of the kept Gaussians; fewer than SLAB_MIN
# kept Gaussians are binned in one go
SLAB_FIRST = 16
SLAB_MIN = 32768
SLAB_KEEP_GOING = 0.1
# Depth sort digits: 6 x 11 bits cover a float64's 64; the sort passes over the high three only
RADIX_BITS = 11
RADIX_PASSES = 6
RADIX_BUCKETS = 1 << RADIX_BITS
RADIX_HIGH = 3  # the radix passes cover digits 3-5 (bits 33-63); runs equal there are ordered afterwards

# Packed record layout (float64): x, y, A, B, C, opacity, r, g, b, depth, σ cut, det(conic)
REC = 12

# Compositing reads each tile's Gaussians from ``packed`` at ascending but scattered addresses (tens of MB,
# far beyond the caches), so a tile waited on memory at every Gaussian: its record and radii are requested
# this many Gaussians ahead (a prefetch hint; changes no value). 0 turns it off.
PREFETCH_AHEAD = 8


@intrinsic
def _prefetch_row(typingctx, arr, idx):
    """Hint the CPU to fetch row ``idx`` of the C-contiguous 2D array ``arr`` into cache (its first and last
    element: a row of ``packed`` spans two cache lines). No effect on any value (``llvm.prefetch``)."""
    sig = nbtypes.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        row = context.cast(builder, args[1], signature.args[1], nbtypes.intp)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        last = builder.sub(cgutils.unpack_tuple(builder, ary.shape, 2)[1], context.get_constant(nbtypes.intp, 1))
        for col in (context.get_constant(nbtypes.intp, 0), last):
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [row, col], wraparound=False)
            # read, high temporal locality (keep in all cache levels), data cache
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a·b + c rounded once (``llvm.fma.f64``; vectorised by LLVM, a correctly rounded libm call where the CPU
    has no FMA instruction, so the same value everywhere)."""
    sig = nbtypes.float64(nbtypes.float64, nbtypes.float64, nbtypes.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]), "llvm.fma.f64")
        return builder.call(fn, args)

    return sig, codegen


# exp(−σ) of the compositing step (``_exp_neg``): σ is clamped to [0, SIGMA_MAX] first. Beyond SIGMA_MAX,
# α = o·exp(−σ) < e^−30 < 1/255 for any opacity o ≤ 1, so the α test rejects the pixel with the clamped value
# as with the true one. Range reduction exp(−σ) = 2ⁿ·exp(r), n = round(−σ/ln 2), r = −σ − n·ln 2 (ln 2 split
# in two parts whose first has 32 trailing zero bits, so n·LN2_HI is exact for |n| ≤ 44; |r| ≤ ln2/2), exp(r)
# by its Taylor polynomial of degree 13 (remainder < 4e-18) evaluated by Estrin's scheme with fused
# multiply-adds: a short dependency chain, where Horner's 13 steps made the row's evaluation latency-bound.
SIGMA_MAX = 30.0
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5·2⁵²: x + _ROUND − _ROUND rounds x (|x| < 2⁵¹) to an integer, ties to even
_EXP_C = tuple(1.0 / math.factorial(k) for k in range(14))
_E0, _E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = _EXP_C
_TWO_M60 = 2.0 ** -60


def _exp_neg(s):
    """exp(−s) for s in [0, SIGMA_MAX], within 4 ulp of ``math.exp(-s)`` (tested; measured ≤ 2.02 ulp) —
    written out so that LLVM vectorises it over a tile row (``math.exp`` is a scalar libm call, ~5 ns,
    which was a third of the compositing time). Its float32 α equals the libm one except when libm's value
    lies within a few float64 ulp of a float32 rounding boundary (about 1 evaluation in 10⁸)."""
    x = -s
    nf = (x * _LOG2E + _ROUND) - _ROUND
    r = (x - nf * _LN2_HI) - nf * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    r8 = r4 * r4
    q0 = _fma(_fma(_E3, r, _E2), r2, _fma(_E1, r, _E0))
    q1 = _fma(_fma(_E7, r, _E6), r2, _fma(_E5, r, _E4))
    q2 = _fma(_fma(_E11, r, _E10), r2, _fma(_E9, r, _E8))
    p = _fma(_fma(_fma(_E13, r, _E12), r4, q2), r8, _fma(q1, r4, q0))
    # 2ⁿ exactly: n ∈ [−44, 0], 2^(n+60) an exact int64 power of two
    return p * np.float64(np.int64(1) << (np.int64(nf) + 60)) * _TWO_M60


def _alpha(op, sigma):
    """The float32 α = min(ALPHA_MAX, o·exp(−σ)) of one pixel, 0 where σ < 0 (or NaN): those pixels are
    skipped, as the α test then skips them. One function for the row-at-a-time (vectorised) and the plain
    per-pixel loops of ``_composite``, so both give the same bits."""
    e = _exp_neg(min(max(sigma, 0.0), SIGMA_MAX))
    return np.float32(min(ALPHA_MAX, op * e)) if sigma >= 0.0 else np.float32(0.0)


# Cull Gaussians whose (conservatively widened) box misses the image before forming their covariance
# (``_project_one``; read by ``project`` at each call); False is the plain order of operations, kept for the
# tests. Bit-identical records and radii.
EARLY_CULL = True

# scalars, so numba freezes them into the kernel as constants
C20, C21, C22, C23, C24 = C2
C30, C31, C32, C33, C34, C35, C36 = C3


def _project(means, quats, log_scales, opacity_logits, sh, w2c, fx, fy, cx, cy, width, height, near, far,
             rec, radii, early_cull):
    """Fill ``rec`` [N, REC] and ``radii`` [N, 2] (int32; 0 marks a culled Gaussian). ``early_cull``: see
    ``EARLY_CULL``."""
    n = means.shape[0]
    view = (fx, fy, cx, cy, width, height) + _view_constants(w2c, fx, fy, cx, cy, width, height) + (early_cull,)
    wt = _w2c_tuple(w2c)
    for i in nb.prange(n):
        radii[i, 0] = 0
        radii[i, 1] = 0
        mx, my, mz = np.float64(means[i, 0]), np.float64(means[i, 1]), np.float64(means[i, 2])
        x = w2c[0, 0] * mx + w2c[0, 1] * my + w2c[0, 2] * mz + w2c[0, 3]
        y = w2c[1, 0] * mx + w2c[1, 1] * my + w2c[1, 2] * mz + w2c[1, 3]
        z = w2c[2, 0] * mx + w2c[2, 1] * my + w2c[2, 2] * mz + w2c[2, 3]
        if z < near or z > far:
            continue
        vals = _activate_one(opacity_logits[i], quats[i, 0], quats[i, 1], quats[i, 2], quats[i, 3], log_scales[i, 0],
                             log_scales[i, 1], log_scales[i, 2])
        proj = _project_one((mx, my, mz, x, y, z), vals, wt, view)
        _store_one(i, vals, z, proj, sh, rec)
        radii[i, 0] = proj[7]  # 0 when culled
        radii[i, 1] = proj[8]


# View-independent per-Gaussian values (see ``activate``): normalised wxyz quaternion (4), exp scales (3),
# sigmoid opacity, L = log(max(255·opacity, 1)) and the extent min(EXTENT_MAX, sqrt(2L)). The 3D covariance
# itself is not cached: ``_project`` forms Σ_c = M Mᵀ with M = R_v · R · S, so a cached R S Sᵀ Rᵀ would
# round differently. KEY columns of the raw float32 inputs' bit patterns: quats (4), log_scales (3), opacity.
ACT = 10
KEY = 8


def _activate_one(logit, q0, q1, q2, q3, ls0, ls1, ls2):
    """The view-independent values of a Gaussian (layout ``ACT``) from its opacity logit, wxyz quaternion and
    log scales: computed here by ``_project`` (and by ``_project_cached`` for a Gaussian whose inputs
    changed), and cached by ``_activate`` — one set of operations. Scalars, not arrays (see ``_project_one``)."""
    opac = 1.0 / (1.0 + math.exp(-np.float64(logit)))
    qw, qx, qy, qz = np.float64(q0), np.float64(q1), np.float64(q2), np.float64(q3)
    qn = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    qw /= qn
    qx /= qn
    qy /= qn
    qz /= qn
    sx = math.exp(np.float64(ls0))
    sy = math.exp(np.float64(ls1))
    sz = math.exp(np.float64(ls2))
    lg = math.log(max(opac * ALPHA_MIN_INV, 1.0))
    ext = min(EXTENT_MAX, math.sqrt(2.0 * lg))
    return qw, qx, qy, qz, sx, sy, sz, opac, lg, ext


def _activate(quats, log_scales, opacity_logits, quat_bits, scale_bits, opacity_bits, act, key):
    """Fill ``act`` [N, ACT] (float64) and ``key`` [N, KEY] (int32: the inputs' bit patterns it came from)."""
    for i in nb.prange(quats.shape[0]):
        vals = _activate_one(opacity_logits[i], quats[i, 0], quats[i, 1], quats[i, 2], quats[i, 3], log_scales[i, 0],
                             log_scales[i, 1], log_scales[i, 2])
        for c in range(ACT):
            act[i, c] = vals[c]
        for c in range(4):
            key[i, c] = quat_bits[i, c]
        for c in range(3):
            key[i, 4 + c] = scale_bits[i, c]
        key[i, 7] = opacity_bits[i]


def _project_cached(means, quats, log_scales, opacity_logits, sh, quat_bits, scale_bits, opacity_bits, act, key,
                    w2c, fx, fy, cx, cy, width, height, near, far, rec, radii, early_cull):
    """``_project`` reading the view-independent values from ``act`` where the Gaussian's raw inputs still
    have the bit patterns in ``key`` (else computing them afresh, same operations); bit-identical records.
    Returns how many Gaussians in the z range missed the cache (their inputs changed since ``act`` was made)."""
    n = means.shape[0]
    misses = 0
    view = (fx, fy, cx, cy, width, height) + _view_constants(w2c, fx, fy, cx, cy, width, height) + (early_cull,)
    wt = _w2c_tuple(w2c)
    for i in nb.prange(n):
        radii[i, 0] = 0
        radii[i, 1] = 0
        mx, my, mz = np.float64(means[i, 0]), np.float64(means[i, 1]), np.float64(means[i, 2])
        x = w2c[0, 0] * mx + w2c[0, 1] * my + w2c[0, 2] * mz + w2c[0, 3]
        y = w2c[1, 0] * mx + w2c[1, 1] * my + w2c[1, 2] * mz + w2c[1, 3]
        z = w2c[2, 0] * mx + w2c[2, 1] * my + w2c[2, 2] * mz + w2c[2, 3]
        if z < near or z > far:
            continue
        if (key[i, 7] == opacity_bits[i] and key[i, 0] == quat_bits[i, 0] and key[i, 1] == quat_bits[i, 1]
                and key[i, 2] == quat_bits[i, 2] and key[i, 3] == quat_bits[i, 3]
                and key[i, 4] == scale_bits[i, 0] and key[i, 5] == scale_bits[i, 1]
                and key[i, 6] == scale_bits[i, 2]):
            qw, qx, qy, qz = act[i, 0], act[i, 1], act[i, 2], act[i, 3]
            sx, sy, sz = act[i, 4], act[i, 5], act[i, 6]
            opac, lg, ext = act[i, 7], act[i, 8], act[i, 9]
        else:
            misses += 1
            qw, qx, qy, qz, sx, sy, sz, opac, lg, ext = _activate_one(
                opacity_logits[i], quats[i, 0], quats[i, 1], quats[i, 2], quats[i, 3], log_scales[i, 0],
                log_scales[i, 1], log_scales[i, 2])
        vals = (qw, qx, qy, qz, sx, sy, sz, opac, lg, ext)
        proj = _project_one((mx, my, mz, x, y, z), vals, wt, view)
        _store_one(i, vals, z, proj, sh, rec)
        radii[i, 0] = proj[7]  # 0 when culled
        radii[i, 1] = proj[8]
    return misses


def _project_one(centre, act, wt, view):
    """The view-dependent half of a Gaussian's projection, from its camera-space centre (x, y, z) and its
    view-independent values (``_activate_one``'s, computed or cached): opacity cull, EWA projection with
    clamped x/z, y/z and dilation, conic, per-axis radii and frustum cull, and the unit view direction of its
    SH colour. Returns (kept, u, v, conic A, B, C, 1/det, rx, ry, dx, dy, dz) for :func:`_store_one` (kept
    False: culled). Shared by ``_project`` and ``_project_cached``. ``centre`` = (mx, my, mz, x, y, z), ``act``
    = ``_activate_one``'s tuple, ``wt`` = ``_w2c_tuple``, ``view`` = (fx, fy, cx, cy, width, height) +
    ``_view_constants`` + (early_cull,). Scalars only, no arrays: numba reference-counts an array handed to
    a helper with several exits, two atomic operations per array and Gaussian (with four arrays, about a
    third of the projection's time)."""
    mx, my, mz, x, y, z = centre
    qw, qx, qy, qz, sx, sy, sz, opac, lg, ext = act
    w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23 = wt
    fx, fy, cx, cy, width, height, camx, camy, camz, lim_xp, lim_xn, lim_yp, lim_yn, early_cull = view
    culled = (False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0, 0.0, 0.0)
    if opac < ALPHA_MIN_64:
        return culled
    tx = z * min(lim_xp, max(-lim_xn, x / z))
    ty = z * min(lim_yp, max(-lim_yn, y / z))
    j00 = fx / z
    j02 = -fx * tx / (z * z)
    j11 = fy / z
    j12 = -fy * ty / (z * z)
    u = fx * x / z + cx
    v = fy * y / z + cy
    if early_cull:
        # Frustum cull before the covariance. The 2D variance below is a_ = |Mᵀj|² + ε with M = R_v·R·S
        # and j = (j00, 0, j02) (a row of the Jacobian); |Mᵀj| = |S Rᵀ (R_vᵀ j)| ≤ s_max·|R_vᵀ j| (R is a
        # rotation), so the box half-width rx ≤ ext·sqrt(s_max²·|R_vᵀ j|² + ε) + 1 (the ceil); likewise ry
        # with (0, j11, j12). Widened by 0.1% and 2 px for rounding (a few products, ~1e-15 relative), a
        # Gaussian whose widened box misses the image has a real box that misses it too and is culled
        # below anyway: same records and radii (tested against EARLY_CULL = False).
        s2 = max(sx, sy, sz) ** 2
        wx0 = j00 * w00 + j02 * w20
        wx1 = j00 * w01 + j02 * w21
        wx2 = j00 * w02 + j02 * w22
        wy0 = j11 * w10 + j12 * w20
        wy1 = j11 * w11 + j12 * w21
        wy2 = j11 * w12 + j12 * w22
        bx = ext * math.sqrt(1.001 * (s2 * (wx0 * wx0 + wx1 * wx1 + wx2 * wx2) + EPS2D)) + 2.0
        by = ext * math.sqrt(1.001 * (s2 * (wy0 * wy0 + wy1 * wy1 + wy2 * wy2) + EPS2D)) + 2.0
        if u + bx <= 0 or u - bx >= width or v + by <= 0 or v - by >= height:
            return culled
    r00 = 1 - 2 * (qy * qy + qz * qz); r01 = 2 * (qx * qy - qw * qz); r02 = 2 * (qx * qz + qw * qy)
    r10 = 2 * (qx * qy + qw * qz); r11 = 1 - 2 * (qx * qx + qz * qz); r12 = 2 * (qy * qz - qw * qx)
    r20 = 2 * (qx * qz - qw * qy); r21 = 2 * (qy * qz + qw * qx); r22 = 1 - 2 * (qx * qx + qy * qy)
    m00, m01, m02 = _m_row(w00, w01, w02, r00, r01, r02, r10, r11, r12, r20, r21, r22, sx, sy, sz)
    m10, m11, m12 = _m_row(w10, w11, w12, r00, r01, r02, r10, r11, r12, r20, r21, r22, sx, sy, sz)
    m20, m21, m22 = _m_row(w20, w21, w22, r00, r01, r02, r10, r11, r12, r20, r21, r22, sx, sy, sz)
    c00 = m00 * m00 + m01 * m01 + m02 * m02
    c01 = m00 * m10 + m01 * m11 + m02 * m12
    c02 = m00 * m20 + m01 * m21 + m02 * m22
    c11 = m10 * m10 + m11 * m11 + m12 * m12
    c12 = m10 * m20 + m11 * m21 + m12 * m22
    c22 = m20 * m20 + m21 * m21 + m22 * m22
    a_ = j00 * (j00 * c00 + j02 * c02) + j02 * (j00 * c02 + j02 * c22) + EPS2D
    b_ = j00 * (j11 * c01 + j12 * c02) + j02 * (j11 * c12 + j12 * c22)
    c_ = j11 * (j11 * c11 + j12 * c12) + j12 * (j11 * c12 + j12 * c22) + EPS2D
    det = a_ * c_ - b_ * b_
    if det <= 0:
        return culled
    rx = math.ceil(min(ext * math.sqrt(a_), abs(u) + width + TILE + 1.0, 2.0 ** 30))
    ry = math.ceil(min(ext * math.sqrt(c_), abs(v) + height + TILE + 1.0, 2.0 ** 30))
    if rx <= 0 and ry <= 0:
        return culled
    if u + rx <= 0 or u - rx >= width or v + ry <= 0 or v - ry >= height:
        return culled
    dx, dy, dz = mx - camx, my - camy, mz - camz
    dn = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dn > 1e-12:
        dx /= dn
        dy /= dn
        dz /= dn
    return True, u, v, c_ / det, -b_ / det, a_ / det, 1.0 / det, rx, ry, dx, dy, dz


def _store_one(i, act, z, proj, sh, rec):
    """Write Gaussian ``i``'s record (SH colour included) from ``_project_one``'s result ``proj`` if kept (the
    caller writes the radii, 0 when culled). One exit (see ``_project_one``)."""
    kept, u, v, ca, cb, cc, det_inv, rx, ry, dx, dy, dz = proj
    if kept:
        opac, lg = act[7], act[8]
        k_sh = sh.shape[1]
        for ch in range(3):
            col = C0 * sh[i, 0, ch]
            if k_sh > 1:
                col += -C1 * dy * sh[i, 1, ch] + C1 * dz * sh[i, 2, ch] - C1 * dx * sh[i, 3, ch]
            if k_sh > 4:
                xx, yy, zz = dx * dx, dy * dy, dz * dz
                col += (C20 * dx * dy * sh[i, 4, ch] + C21 * dy * dz * sh[i, 5, ch]
                        + C22 * (2 * zz - xx - yy) * sh[i, 6, ch] + C23 * dx * dz * sh[i, 7, ch]
                        + C24 * (xx - yy) * sh[i, 8, ch])
                if k_sh > 9:
                    col += (C30 * dy * (3 * xx - yy) * sh[i, 9, ch] + C31 * dx * dy * dz * sh[i, 10, ch]
                            + C32 * dy * (4 * zz - xx - yy) * sh[i, 11, ch]
                            + C33 * dz * (2 * zz - 3 * xx - 3 * yy) * sh[i, 12, ch]
                            + C34 * dx * (4 * zz - xx - yy) * sh[i, 13, ch]
                            + C35 * dz * (xx - yy) * sh[i, 14, ch] + C36 * dx * (xx - 3 * yy) * sh[i, 15, ch])
            rec[i, 6 + ch] = max(col + 0.5, 0.0)
        rec[i, 0] = u
        rec[i, 1] = v
        rec[i, 2] = ca
        rec[i, 3] = cb
        rec[i, 4] = cc
        rec[i, 5] = opac
        rec[i, 9] = z
        rec[i, 10] = lg + CUT_MARGIN
        rec[i, 11] = det_inv


def _view_constants(w2c, fx, fy, cx, cy, width, height):
    """Per-frame constants of the projection: the camera centre (−Rᵀ t) and the clamping limits of x/z, y/z
    (the image's extent plus the guard band on each side)."""
    camx = -(w2c[0, 0] * w2c[0, 3] + w2c[1, 0] * w2c[1, 3] + w2c[2, 0] * w2c[2, 3])
    camy = -(w2c[0, 1] * w2c[0, 3] + w2c[1, 1] * w2c[1, 3] + w2c[2, 1] * w2c[2, 3])
    camz = -(w2c[0, 2] * w2c[0, 3] + w2c[1, 2] * w2c[1, 3] + w2c[2, 2] * w2c[2, 3])
    tan_x = 0.5 * width / fx
    tan_y = 0.5 * height / fy
    lim_xp = (width - cx) / fx + GUARD_BAND * tan_x
    lim_xn = cx / fx + GUARD_BAND * tan_x
    lim_yp = (height - cy) / fy + GUARD_BAND * tan_y
    lim_yn = cy / fy + GUARD_BAND * tan_y
    return camx, camy, camz, lim_xp, lim_xn, lim_yp, lim_yn


def _m_row(wa0, wa1, wa2, r00, r01, r02, r10, r11, r12, r20, r21, r22, sx, sy, sz):
    """A row of M = R_v · R · S (world-to-camera rotation row (wa0, wa1, wa2), Gaussian rotation, scales)."""
    va0 = wa0 * r00 + wa1 * r10 + wa2 * r20
    va1 = wa0 * r01 + wa1 * r11 + wa2 * r21
    va2 = wa0 * r02 + wa1 * r12 + wa2 * r22
    return va0 * sx, va1 * sy, va2 * sz


def _w2c_tuple(w2c):
    """The 3×4 world-to-camera matrix as a tuple of 12 scalars, row by row (for ``_project_one``)."""
    return (w2c[0, 0], w2c[0, 1], w2c[0, 2], w2c[0, 3], w2c[1, 0], w2c[1, 1], w2c[1, 2], w2c[1, 3],
            w2c[2, 0], w2c[2, 1], w2c[2, 2], w2c[2, 3])


def _pixel_range(centre, radius, size):
    """Pixel indices j whose centre j + 0.5 lies in [centre − radius, centre + radius], clipped to the image."""
    j0 = max(int(math.ceil(centre - radius - 0.5)), 0)
    j1 = min(int(math.floor(centre + radius - 0.5)), size - 1)
    return j0, j1


def _span_coefficients(ca, cb, cut, detq):
    """Per-Gaussian constants of :func:`_row_span`: (B/A, 2·cut/A, det/A²) of the conic (A > 0)."""
    ica = 1.0 / ca
    return cb * ica, 2.0 * cut * ica, detq * ica * ica


def _row_span(ucm, dy, cba, w2, q, jlo, jhi):
    """Pixel columns j in [jlo, jhi] whose centre may satisfy σ ≤ cut on the row at offset dy = v − row centre.

    σ(dx) = ½(A dx² + C dy²) + B dx dy ≤ cut  ⇔  dx ∈ −(B/A)·dy ± √(2·cut/A − (det/A²)·dy²) (det = AC − B²
    of the conic); the pixel centre j + 0.5 is u − dx, so j ∈ ucm + (B/A)·dy ± √(…) with ucm = u − c0 − ½
    (``cba``, ``w2``, ``q`` from :func:`_span_coefficients`, once per Gaussian and tile: no division
    per row). Rounding moves the bounds by ~1e-16 relative, far inside the SPAN_SLACK and CUT_MARGIN
    margins. Returns (j0, j1), empty when j0 > j1. (``_composite`` computes the bounds of all rows of a tile
    at once with :func:`_span_bounds`, this function's first half.)"""
    lo, hi = _span_bounds(ucm, dy, cba, w2, q, jlo - 1.0, jhi + 1.0)
    return max(int(lo), jlo), min(int(hi), jhi)


def _span_bounds(ucm, dy, cba, w2, q, lo_min, hi_max):
    """The float bounds (ceil, floor) of :func:`_row_span` before clipping, clamped to [lo_min, hi_max]
    (whole numbers, so the int conversion that follows is safe and the clipped span is the same); (hi_max,
    lo_min) when the row misses the ellipse. No branch: ``_composite`` evaluates it for a tile's 16 rows in
    one vectorised loop."""
    h2 = w2 - q * dy * dy
    half = math.sqrt(max(h2, 0.0))
    cen = ucm + cba * dy
    lo = min(max(np.ceil(cen - half - SPAN_SLACK), lo_min), hi_max)
    hi = min(max(np.floor(cen + half + SPAN_SLACK), lo_min), hi_max)
    return (lo if h2 >= 0.0 else hi_max), (hi if h2 >= 0.0 else lo_min)


def _tile_rows(rec, radii, g, height):
    """(first, last) tile row of Gaussian g's box and its pixel rows (i0, i1); empty when first > last."""
    i0, i1 = _pixel_range(rec[g, 1], np.float64(radii[g, 1]), height)
    return i0 // TILE, i1 // TILE if i1 >= i0 else -1, i0, i1


def _tile_cols(rec, radii, g, width):
    """(first, last) tile column of Gaussian g's box; empty when first > last."""
    jlo, jhi = _pixel_range(rec[g, 0], np.float64(radii[g, 0]), width)
    if jhi < jlo:
        return 1, 0
    return jlo // TILE, jhi // TILE


def _bin_count(rects, lo, hi, width, n_chunks, active, hist):
    """hist[c, t] = number of Gaussians of chunk c (a contiguous part of lo..hi) listed in tile t (active
    tiles only). ``rects``: each Gaussian's tile rectangle, see ``_gather``."""
    tiles_x = (width + TILE - 1) // TILE
    n = hi - lo
    for c in nb.prange(n_chunks):
        for g in range(lo + c * n // n_chunks, lo + (c + 1) * n // n_chunks):
            tx0, tx1 = rects[g, 2], rects[g, 3]
            for ty in range(rects[g, 0], rects[g, 1] + 1):
                for tx in range(tx0, tx1 + 1):
                    t = ty * tiles_x + tx
                    if active[t]:
                        hist[c, t] += 1


def _bin_scatter(rects, lo, hi, width, n_chunks, active, offsets, ids):
    """Write each chunk's Gaussian indices into its slots (``offsets[c, t]``, advanced as it goes)."""
    tiles_x = (width + TILE - 1) // TILE
    n = hi - lo
    for c in nb.prange(n_chunks):
        for g in range(lo + c * n // n_chunks, lo + (c + 1) * n // n_chunks):
            tx0, tx1 = rects[g, 2], rects[g, 3]
            for ty in range(rects[g, 0], rects[g, 1] + 1):
                for tx in range(tx0, tx1 + 1):
                    t = ty * tiles_x + tx
                    if active[t]:
                        ids[offsets[c, t]] = g
                        offsets[c, t] += 1


def _gather(rec, radii, order, width, height, packed, pradii, rects):
    """packed[k] = rec[order[k]] (and radii): the kept Gaussians in depth order, contiguous for compositing;
    rects[k] = (first, last tile row, first, last tile column) of Gaussian order[k]'s box (``_tile_rows``,
    ``_tile_cols``; empty ranges as they give them), which the binning's two passes read (16 bytes a
    Gaussian) instead of each re-reading the record and recomputing the box."""
    m = order.shape[0]
    for k in nb.prange(m):
        g = order[k]
        if PREFETCH_AHEAD > 0 and k + 2 * PREFETCH_AHEAD < m:  # scattered reads of rec: ask ahead
            _prefetch_row(rec, order[k + 2 * PREFETCH_AHEAD])
            _prefetch_row(radii, order[k + 2 * PREFETCH_AHEAD])
        for f in range(REC):
            packed[k, f] = rec[g, f]
        pradii[k, 0] = radii[g, 0]
        pradii[k, 1] = radii[g, 1]
        ty0, ty1, i0, i1 = _tile_rows(rec, radii, g, height)
        tx0, tx1 = _tile_cols(rec, radii, g, width)
        rects[k, 0] = ty0
        rects[k, 1] = ty1
        rects[k, 2] = tx0
        rects[k, 3] = tx1


# Planes of a tile's running state in ``_composite`` (one float32 array): transmittance, r, g, b and depth sums,
# median depth, done (1.0 once the pixel has terminated), depth limit
_S_T, _S_ACC, _S_MED, _S_DONE, _S_LIMIT, _S_N = 0, 1, 5, 6, 7, 8


def _composite(rec, radii, tile_start, ids, width, height, depth_limit, use_limit, cull, active,
               T_img, acc_img, med_img, done_img):
    """Composite one depth slab of each active tile front to back into the running per-pixel state
    (transmittance ``T_img`` [H, W], ``acc_img`` [H, W, 4] = r, g, b, depth sums, ``med_img``, ``done_img``);
    a tile whose pixels have all terminated is marked inactive.

    Within a tile the loop runs over Gaussians (depth order) and, for each, over only the pixels inside
    its bounding box — the exact box of its α ≥ 1/255 ellipse — and, with ``cull``, on each row only the
    span where σ ≤ ln(255·o) + margin; pixels outside would be skipped by the α test anyway. Each pixel
    therefore sees the same Gaussians in the same order as in the per-pixel rule (bit-identical with and
    without ``cull`` and for any split into slabs, tested); a pixel stops at its own early termination and
    the tile when all have. With ``cull`` a row is processed as two branch-free loops over its 16 pixels
    (α, then the rule as selects on the span's pixels); without, pixel by pixel as the plain rule reads.
    """
    tiles_x = (width + TILE - 1) // TILE
    tiles_y = (height + TILE - 1) // TILE
    for t in nb.prange(tiles_x * tiles_y):
        if not active[t] or tile_start[t] == tile_start[t + 1]:
            continue
        ty = t // tiles_x
        tx = t - ty * tiles_x
        r0, c0 = ty * TILE, tx * TILE
        nr, nc = min(TILE, height - r0), min(TILE, width - c0)
        # the tile's running state, one float32 plane per quantity (_S_T ... _S_LIMIT) in one array; pixels
        # beyond the image edge stay done
        st = np.empty((_S_N, TILE, TILE), np.float32)
        for i in range(TILE):
            for j in range(TILE):
                st[_S_T, i, j] = 1.0
                for ch in range(4):
                    st[_S_ACC + ch, i, j] = 0.0
                st[_S_MED, i, j] = np.inf
                st[_S_DONE, i, j] = 1.0
                st[_S_LIMIT, i, j] = np.inf
        alive = np.zeros(TILE, np.int64)  # pixels of each row not yet terminated
        first = np.zeros(TILE, np.int64)  # each row's first and last pixel not yet terminated
        last = np.full(TILE, -1, np.int64)
        arow = np.empty(TILE, np.float32)  # α of the current row's pixels (cull)
        span_lo = np.empty(TILE, np.int64)  # the current Gaussian's span on each row of the tile (cull)
        span_hi = np.empty(TILE, np.int64)
        n_done = 0
        for i in range(nr):
            for j in range(nc):
                st[_S_T, i, j] = T_img[r0 + i, c0 + j]
                for ch in range(4):
                    st[_S_ACC + ch, i, j] = acc_img[r0 + i, c0 + j, ch]
                st[_S_MED, i, j] = med_img[r0 + i, c0 + j]
                dn = done_img[r0 + i, c0 + j]
                st[_S_DONE, i, j] = 1.0 if dn else 0.0
                n_done += dn
                alive[i] += 1 - dn
                if use_limit:
                    st[_S_LIMIT, i, j] = depth_limit[r0 + i, c0 + j]
        for i in range(nr):
            first[i] = 0
            while first[i] < nc and st[_S_DONE, i, first[i]] != 0:
                first[i] += 1
            last[i] = nc - 1
            while last[i] >= 0 and st[_S_DONE, i, last[i]] != 0:
                last[i] -= 1
        n_pix = nr * nc
        for k in range(tile_start[t], tile_start[t + 1]):
            g = ids[k]
            if cull and PREFETCH_AHEAD > 0 and k + PREFETCH_AHEAD < tile_start[t + 1]:
                _prefetch_row(rec, ids[k + PREFETCH_AHEAD])
                _prefetch_row(radii, ids[k + PREFETCH_AHEAD])
            u, v = rec[g, 0], rec[g, 1]
            # pixel centres (j + 0.5) inside [u - rx, u + rx], clipped to the tile
            j0 = max(int(math.ceil(u - radii[g, 0] - 0.5)) - c0, 0)
            j1 = min(int(math.floor(u + radii[g, 0] - 0.5)) - c0, nc - 1)
            i0 = max(int(math.ceil(v - radii[g, 1] - 0.5)) - r0, 0)
            i1 = min(int(math.floor(v + radii[g, 1] - 0.5)) - r0, nr - 1)
            ca, cb, cc, op, z = rec[g, 2], rec[g, 3], rec[g, 4], rec[g, 5], rec[g, 9]
            cr, cg, cbl, zf = np.float32(rec[g, 6]), np.float32(rec[g, 7]), np.float32(rec[g, 8]), np.float32(z)
            cba, w2, q = _span_coefficients(ca, cb, rec[g, 10], rec[g, 11])
            ucm = u - c0 - 0.5
            if cull:
                # the spans of all the tile's rows at once (_row_span's bounds; a branch-free loop LLVM
                # vectorises, where row by row the square root's latency stalled the loop)
                for ii in range(TILE):
                    lo, hi = _span_bounds(ucm, v - (r0 + ii + 0.5), cba, w2, q, -1.0, np.float64(TILE))
                    span_lo[ii] = int(lo)
                    span_hi[ii] = int(hi)
            for i in range(i0, i1 + 1):
                dy = v - (r0 + i + 0.5)
                ccdy = cc * dy * dy
                if cull:
                    if alive[i] == 0:  # every pixel of this row has terminated
                        continue
                    # the span, clipped to the row's first and last pixel not yet terminated
                    ja, jb = max(span_lo[i], j0, first[i]), min(span_hi[i], j1, last[i])
                    if ja > jb:
                        continue
                    # The whole tile row at once, in two loops without branches (LLVM vectorises both; fused,
                    # they were not): α, then the per-pixel rule as selects on the span's pixels. 16 pixels
                    # cost about what 2 scalar libm exps did (spans average ~9 pixels).
                    for jj in range(TILE):
                        dxx = u - (c0 + jj + 0.5)
                        arow[jj] = _alpha(op, 0.5 * (ca * dxx * dxx + ccdy) + cb * dxx * dy)
                    n_term = 0
                    for jj in range(TILE):
                        a = arow[jj]
                        tt = st[_S_T, i, jj]
                        was_done = st[_S_DONE, i, jj]
                        use = ((jj >= ja) & (jj <= jb) & (was_done == 0) & (not z > st[_S_LIMIT, i, jj])
                               & (not a < ALPHA_MIN))
                        next_t = tt * (np.float32(1.0) - a)
                        stop = next_t <= T_STOP
                        upd = use & (not stop)
                        w = a * tt
                        st[_S_ACC, i, jj] = st[_S_ACC, i, jj] + cr * w if upd else st[_S_ACC, i, jj]
                        st[_S_ACC + 1, i, jj] = st[_S_ACC + 1, i, jj] + cg * w if upd else st[_S_ACC + 1, i, jj]
                        st[_S_ACC + 2, i, jj] = st[_S_ACC + 2, i, jj] + cbl * w if upd else st[_S_ACC + 2, i, jj]
                        st[_S_ACC + 3, i, jj] = st[_S_ACC + 3, i, jj] + zf * w if upd else st[_S_ACC + 3, i, jj]
                        st[_S_MED, i, jj] = zf if upd & (tt > 0.5) & (next_t <= 0.5) else st[_S_MED, i, jj]
                        st[_S_T, i, jj] = next_t if upd else tt
                        st[_S_DONE, i, jj] = np.float32(1.0) if use & stop else was_done
                        n_term += use & stop
                    if n_term > 0:
                        n_done += n_term
                        alive[i] -= n_term
                        while first[i] <= last[i] and st[_S_DONE, i, first[i]] != 0:
                            first[i] += 1
                        while last[i] >= first[i] and st[_S_DONE, i, last[i]] != 0:
                            last[i] -= 1
                    continue
                # the plain per-pixel rule (cull=False): every pixel of the box row
                for j in range(j0, j1 + 1):
                    if st[_S_DONE, i, j] != 0:
                        continue
                    dx = u - (c0 + j + 0.5)
                    a = _alpha(op, 0.5 * (ca * dx * dx + ccdy) + cb * dx * dy)
                    if a < ALPHA_MIN or z > st[_S_LIMIT, i, j]:
                        continue
                    tt = st[_S_T, i, j]
                    next_t = tt * (np.float32(1.0) - a)
                    if next_t <= T_STOP:
                        st[_S_DONE, i, j] = 1.0
                        n_done += 1
                        continue
                    w = a * tt
                    st[_S_ACC, i, j] += cr * w
                    st[_S_ACC + 1, i, j] += cg * w
                    st[_S_ACC + 2, i, j] += cbl * w
                    st[_S_ACC + 3, i, j] += zf * w
                    if tt > 0.5 and next_t <= 0.5:
                        st[_S_MED, i, j] = zf
                    st[_S_T, i, j] = next_t
            if n_done == n_pix:
                active[t] = False
                break
        for i in range(nr):
            for j in range(nc):
                T_img[r0 + i, c0 + j] = st[_S_T, i, j]
                for ch in range(4):
                    acc_img[r0 + i, c0 + j, ch] = st[_S_ACC + ch, i, j]
                med_img[r0 + i, c0 + j] = st[_S_MED, i, j]
                done_img[r0 + i, c0 + j] = st[_S_DONE, i, j] != 0


def _finish(T_img, acc_img, background, rgb, alpha, exp_depth):
    """Outputs from the running state: rgb = C + T·background, alpha = 1 − T, expected depth = D / (1 − T)."""
    for r in nb.prange(T_img.shape[0]):
        for c in range(T_img.shape[1]):
            tt = T_img[r, c]
            for ch in range(3):
                rgb[r, c, ch] = acc_img[r, c, ch] + tt * background[r, c, ch]
            alpha[r, c] = 1 - tt
            exp_depth[r, c] = acc_img[r, c, 3] / (1 - tt) if tt < 1 else 0.0


# Helpers are inlined into both compilations; each stage is compiled parallel and serial (nogil).
_m_row = nb.njit(inline="always", cache=True)(_m_row)
_activate_one = nb.njit(inline="always", cache=True)(_activate_one)
_project_one = nb.njit(inline="always", cache=True)(_project_one)
_store_one = nb.njit(inline="always", cache=True)(_store_one)
_w2c_tuple = nb.njit(inline="always", cache=True)(_w2c_tuple)
_view_constants = nb.njit(inline="always", cache=True)(_view_constants)
_exp_neg = nb.njit(inline="always", cache=True)(_exp_neg)
_alpha = nb.njit(inline="always", cache=True)(_alpha)
_pixel_range = nb.njit(inline="always", cache=True)(_pixel_range)
_span_coefficients = nb.njit(inline="always", cache=True)(_span_coefficients)
_row_span = nb.njit(inline="always", cache=True)(_row_span)
_span_bounds = nb.njit(inline="always", cache=True)(_span_bounds)
_tile_rows = nb.njit(inline="always", cache=True)(_tile_rows)
_tile_cols = nb.njit(inline="always", cache=True)(_tile_cols)
_STAGES = {f.__name__: f for f in (_project, _activate, _project_cached, _gather, _bin_count, _bin_scatter, _composite, _finish)}


def _renamed(f, suffix: str):
    """A copy of ``f`` under another name: numba's on-disk cache is keyed by the function's name and
    bytecode, not its compile options, so the parallel and serial compilations need distinct names."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + suffix, f.__defaults__, f.__closure__)
    g.__qualname__ = f.__qualname__ + suffix
    g.__doc__ = f.__doc__
    return g


PARALLEL = {k: nb.njit(parallel=True, cache=True)(_renamed(f, "_parallel")) for k, f in _STAGES.items()}
SERIAL = {k: nb.njit(nogil=True, cache=True)(_renamed(f, "_serial")) for k, f in _STAGES.items()}


def depth_order(rec, radii, radix: bool = True) -> np.ndarray:
    """Indices of the kept Gaussians (radii not both 0) sorted stably by camera z (ties: input order).

    ``radix``: a compiled LSD radix sort of the depths' IEEE bit patterns (:func:`_radix_argsort`; a stable
    sort has one result, so it equals the plain ``numpy.argsort(kind="stable")``, tested), about 5x cheaper
    than numpy's Timsort on the ~200k Gaussians of a 3D-PC frame. Depths that are not all ≥ 0 (never kept
    by the projection, which culls z < near) take the plain sort."""
    kept = np.flatnonzero((radii[:, 0] > 0) | (radii[:, 1] > 0))
    z = rec[kept, 9]
    if radix and len(kept) > 1 and bool((z >= 0.0).all()):  # also False for any NaN
        # non-negative float64 order = unsigned order of their bit patterns
        return kept[_radix_argsort(np.ascontiguousarray(z).view(np.uint64))]
    return kept[np.argsort(z, kind="stable")]


@nb.njit(cache=True, nogil=True)
def _radix_argsort(keys):
    """Stable argsort of uint64 ``keys``: an LSD radix sort on the high 31 bits only (digits 3-5 of six 11-bit
    digits, their histograms counted in one read of the keys; a digit all keys share is skipped), then each
    run of equal high bits — in input order, the passes being stable — ordered by its full keys, stably
    (insertion sort; a stable merge sort for runs longer than 32). The result is the one stable order, so it
    equals numpy's ``argsort(kind="stable")`` (tested, with ties, all-equal keys and keys equal in their high
    bits only). Why the high bits only: for the depths of a frame (float64 bit patterns, 2⁻²⁰ relative
    resolution in the top 31 bits) those runs hold one or two keys, and three of the six scattering passes
    are saved (trained-like 300k frame: 8.8 → 5.7 ms). 11-bit digits keep the 2048 write positions of a pass
    in cache (16-bit ones scattered each pass over 65536: 17% slower on 177k depths)."""
    n = keys.shape[0]
    mask = np.uint64(RADIX_BUCKETS - 1)
    count = np.zeros((RADIX_PASSES, RADIX_BUCKETS + 1), np.int64)
    for i in range(n):
        k = keys[i]
        for p in range(RADIX_HIGH, RADIX_PASSES):
            count[p, np.int64((k >> np.uint64(RADIX_BITS * p)) & mask) + 1] += 1
    idx = np.arange(n)
    key = keys.copy()
    idx2 = np.empty(n, np.int64)
    key2 = np.empty(n, np.uint64)
    for p in range(RADIX_HIGH, RADIX_PASSES):
        c = count[p]
        if c.max() == n:
            continue
        for d in range(RADIX_BUCKETS):
            c[d + 1] += c[d]
        shift = np.uint64(RADIX_BITS * p)
        for i in range(n):
            kk = key[i]
            d = np.int64((kk >> shift) & mask)
            pos = c[d]
            c[d] = pos + 1
            idx2[pos] = idx[i]
            key2[pos] = kk
        idx, idx2 = idx2, idx
        key, key2 = key2, key
    high = np.uint64(RADIX_BITS * RADIX_HIGH)
    i = 0
    while i < n:
        j = i + 1
        h = key[i] >> high
        while j < n and (key[j] >> high) == h:
            j += 1
        if j - i > 32:
            o = np.argsort(key[i:j], kind="mergesort")  # stable
            kseg, iseg = key[i:j][o], idx[i:j][o]
            key[i:j] = kseg
            idx[i:j] = iseg
        elif j - i > 1:
            for a in range(i + 1, j):  # insertion sort: stable (moves past strictly greater keys only)
                kk, ii = key[a], idx[a]
                b = a - 1
                while b >= i and key[b] > kk:
                    key[b + 1] = key[b]
                    idx[b + 1] = idx[b]
                    b -= 1
                key[b + 1] = kk
                idx[b + 1] = ii
        i = j
    return idx


def sort_and_pack(rec, radii, width: int, height: int, parallel: bool = True, reuse: bool = False):
    """(order [M] int64, packed [M, REC] = rec[order], pradii [M, 2], rects [M, 4] int32): the kept Gaussians
    by (z, index), and their tile rectangles in a ``width`` × ``height`` image (see ``_gather``). ``reuse``:
    packed, pradii and rects are this thread's scratch arrays (:func:`scratch`), valid until its next
    frame."""
    order = depth_order(rec, radii)
    m = order.shape[0]
    packed = scratch("packed", (m, REC), np.float64) if reuse else np.empty((m, REC), np.float64)
    pradii = scratch("pradii", (m, 2), np.int32) if reuse else np.empty((m, 2), np.int32)
    rects = scratch("rects", (m, 4), np.int32) if reuse else np.empty((m, 4), np.int32)
    (PARALLEL if parallel else SERIAL)["_gather"](rec, radii, order, int(width), int(height), packed, pradii, rects)
    return order, packed, pradii, rects


def bin_range(rects, lo: int, hi: int, width: int, active, parallel: bool = True, n_chunks: int = BIN_CHUNKS):
    """Bin Gaussians ``lo:hi`` of ``packed`` (their tile rectangles ``rects``, :func:`sort_and_pack`) into the
    ``active`` tiles of a ``width``-pixel-wide image → (tile_start [T+1] int64, ids [I] int32): tile t's
    Gaussians are ``ids[tile_start[t]:tile_start[t+1]]``, ascending indices into ``packed``.

    Two passes over fixed chunks of the range in parallel: a per-chunk tile histogram and, after a prefix
    sum over (tile, chunk), a scatter into each chunk's slots — so every tile's list keeps ``packed``'s
    order whatever the number of chunks or threads."""
    k = PARALLEL if parallel else SERIAL
    n_tiles = active.shape[0]
    n_chunks = max(1, min(n_chunks, hi - lo))
    hist = np.zeros((n_chunks, n_tiles), np.int64)
    k["_bin_count"](rects, lo, hi, width, n_chunks, active, hist)
    flat = hist.T.ravel()  # slot of chunk c in tile t: all earlier tiles, then tile t's earlier chunks
    offsets = np.empty(flat.size + 1, np.int64)
    offsets[0] = 0
    np.cumsum(flat, out=offsets[1:])
    tile_start = offsets[::n_chunks].copy()  # copies: the scatter advances chunk_offsets in place
    chunk_offsets = offsets[:-1].reshape(n_tiles, n_chunks).T.copy()
    ids = np.empty(int(offsets[-1]), np.int32)
    k["_bin_scatter"](rects, lo, hi, width, n_chunks, active, chunk_offsets, ids)
    return tile_start, ids


def bin_tiles(rec, radii, width: int, height: int, parallel: bool = True,
              n_chunks: int = BIN_CHUNKS):
    """All kept Gaussians into all tiles at once → (order, tile_start, ids) with ``order[ids]`` input
    indices: each tile's list in (camera z, input index) order. (The renderer bins depth slab by depth
    slab instead, see :func:`slab_bounds`; this is the whole-list form the reference test compares.)"""
    order, packed, pradii, rects = sort_and_pack(rec, radii, width, height, parallel)
    n_tiles = ((width + TILE - 1) // TILE) * ((height + TILE - 1) // TILE)
    tile_start, ids = bin_range(rects, 0, len(order), width, np.ones(n_tiles, np.bool_), parallel, n_chunks)
    return order, tile_start, ids


def slab_bounds(m: int, first: int | None = None, min_size: int | None = None) -> list[int]:
    """Ends of the depth slabs over ``m`` depth-ordered Gaussians: 1/16, 1/8, 1/4, 1/2, all of them (one
    slab below ``min_size``). Front slabs are composited first; the later ones are binned only into
    tiles that are not yet opaque, so the Gaussians behind an opaque surface cost no binning."""
    first = SLAB_FIRST if first is None else first
    if m < (SLAB_MIN if min_size is None else min_size):
        return [m]
    ends = [m // first]
    while ends[-1] < m:
        ends.append(min(m, 2 * ends[-1]))
    return ends


def bin_reference(rec, radii, width: int, height: int):
    """Plain twin of :func:`bin_tiles`: one global stable depth sort (``numpy.argsort``), then every kept
    Gaussian appended, in that order, to each tile its span function lists (the per-Gaussian tile test
    itself is shared, :func:`tiles_of`). Same output format."""
    tiles_x = (width + TILE - 1) // TILE
    n_tiles = tiles_x * ((height + TILE - 1) // TILE)
    kept = [g for g in range(rec.shape[0]) if radii[g, 0] > 0 or radii[g, 1] > 0]
    order = sorted(kept, key=lambda g: rec[g, 9])  # Python's sort is stable
    lists = [[] for _ in range(n_tiles)]
    for g in order:
        for t in tiles_of(rec, radii, int(g), width, height):
            lists[t].append(int(g))
    tile_start = np.zeros(n_tiles + 1, np.int64)
    tile_start[1:] = np.cumsum([len(x) for x in lists])
    ids = np.array([g for x in lists for g in x], np.int32)
    return tile_start, ids


def tiles_of(rec, radii, g: int, width: int, height: int) -> list[int]:
    """Tiles listing Gaussian ``g`` (row-major tile indices), as the binning kernels enumerate them."""
    return list(_tiles_of(rec, radii, g, width, height))


@nb.njit(cache=True)
def _tiles_of(rec, radii, g, width, height):
    tiles_x = (width + TILE - 1) // TILE
    out = []
    ty0, ty1, i0, i1 = _tile_rows(rec, radii, g, height)
    for ty in range(ty0, ty1 + 1):
        tx0, tx1 = _tile_cols(rec, radii, g, width)
        for tx in range(tx0, tx1 + 1):
            out.append(ty * tiles_x + tx)
    return out


_SCRATCH = threading.local()


def scratch(name: str, shape: tuple, dtype) -> np.ndarray:
    """This thread's scratch array ``name`` as a C-contiguous view of ``shape`` (contents undefined), kept
    from frame to frame: the per-frame records (tens of MB for 300k Gaussians) are then written into pages
    already mapped instead of freshly faulted-in ones (a few ms of kernel time per frame). Grows, never
    shrinks; one set per thread (``splat_frames`` renders one frame per thread)."""
    arrays = _SCRATCH.__dict__.setdefault("arrays", {})
    need = int(np.prod(shape))
    a = arrays.get(name)
    if a is None or a.dtype != np.dtype(dtype) or a.size < need:
        a = arrays[name] = np.empty(need, dtype)
    return a[:need].reshape(shape)


# View-independent values per Gaussian set (``activate``), reused from frame to frame: the 3D-PC build renders
# one scene's ~280k Gaussians for hundreds of frames in a process. Keyed by the identity of the scene's
# quats, log_scales and opacity_logits arrays (weak references: an entry goes when its arrays do; at most
# ACT_CACHE_SIZE entries). The key alone is not trusted: arrays can be changed in place, so each entry also
# holds the bit patterns of the inputs it was computed from and ``_project_cached`` compares them per Gaussian,
# computing afresh (same operations) where they differ. A stale entry can therefore cost time, never a wrong
# value; an entry that missed in a frame is rebuilt for the next one. Entries are replaced, never written to
# (threads rendering frames of the same scene may read one while another rebuilds it).
ACT_CACHE_SIZE = 4
_ACT_CACHE: dict = {}
_ACT_LOCK = threading.Lock()


def activate(scene, parallel: bool = True):
    """(act [N, ACT] float64, key [N, KEY] int32) of ``scene`` computed now (not cached; see ``_activate``)."""
    n = len(scene)
    act = np.empty((n, ACT), np.float64)
    key = np.empty((n, KEY), np.int32)
    q, ls, ol = scene.quats, scene.log_scales, scene.opacity_logits
    (PARALLEL if parallel else SERIAL)["_activate"](q, ls, ol, q.view(np.int32), ls.view(np.int32),
                                                    ol.view(np.int32), act, key)
    return act, key


def _act_key(scene) -> tuple:
    return id(scene.quats), id(scene.log_scales), id(scene.opacity_logits)


def cached_activation(scene, parallel: bool = True):
    """``activate(scene)`` from the cache, or None the first time these arrays are seen (they are then only
    remembered, so a Gaussian set rendered once — e.g. one made per frame — pays nothing for a cache it would
    never reuse); made and stored on the second. See ``ACT_CACHE_SIZE``."""
    arrays = (scene.quats, scene.log_scales, scene.opacity_logits)
    k = _act_key(scene)
    with _ACT_LOCK:
        entry = _ACT_CACHE.get(k)
        same = entry is not None and all(r() is a for r, a in zip(entry[0], arrays))
        if same and entry[1] is not None and entry[1].shape[0] == len(scene):
            _ACT_CACHE[k] = _ACT_CACHE.pop(k)  # most recently used last
            return entry[1], entry[2]
        if not same:
            _remember(k, arrays, None, None)
            return None
    return _store_activation(scene, parallel)


def _store_activation(scene, parallel: bool):
    act, key = activate(scene, parallel)
    with _ACT_LOCK:
        _remember(_act_key(scene), (scene.quats, scene.log_scales, scene.opacity_logits), act, key)
    return act, key


def _remember(k: tuple, arrays: tuple, act, key) -> None:
    """Store an entry (caller holds ``_ACT_LOCK``); the oldest goes beyond ``ACT_CACHE_SIZE``."""
    old = _ACT_CACHE.pop(k, None)
    while len(_ACT_CACHE) >= ACT_CACHE_SIZE:
        _ACT_CACHE.pop(next(iter(_ACT_CACHE)))
    if old is not None and all(r() is a for r, a in zip(old[0], arrays)):
        refs = old[0]  # same arrays: their finalizers are already registered
    else:
        refs = tuple(weakref.ref(a) for a in arrays)
        for a in arrays:
            weakref.finalize(a, _drop_activation, k, refs)
    _ACT_CACHE[k] = (refs, act, key)


def _drop_activation(k: tuple, refs: tuple) -> None:
    with _ACT_LOCK:
        entry = _ACT_CACHE.get(k)
        if entry is not None and entry[0] is refs:
            del _ACT_CACHE[k]


def project(scene, camera, near: float = NEAR, far: float = FAR, parallel: bool = True, reuse: bool = False,
            cache: bool = True):
    """Stage 1 → (rec [N, REC] float64, radii [N, 2] int32; radii 0 marks a culled Gaussian, whose rec row
    is left undefined). ``reuse``: rec and radii are this thread's scratch arrays (:func:`scratch`).
    ``cache``: read the view-independent values from :func:`cached_activation` (``_project_cached``);
    False is the plain twin (``_project``), bit-identical."""
    n = len(scene)
    rec = scratch("rec", (n, REC), np.float64) if reuse else np.zeros((n, REC), np.float64)
    radii = scratch("radii", (n, 2), np.int32) if reuse else np.zeros((n, 2), np.int32)
    k = PARALLEL if parallel else SERIAL
    view = (np.ascontiguousarray(camera.w2c, np.float64), float(camera.fx), float(camera.fy), float(camera.cx),
            float(camera.cy), int(camera.width), int(camera.height), float(near), float(far), rec, radii,
            bool(EARLY_CULL))
    q, ls, ol = scene.quats, scene.log_scales, scene.opacity_logits
    cached = None if not cache or any(a.dtype != np.float32 or not a.flags.c_contiguous for a in (q, ls, ol)) \
        else cached_activation(scene, parallel)
    if cached is None:
        # plain: asked for, a Gaussian set seen for the first time, or arrays not the C-contiguous float32 of
        # a GaussianScene (the key compares float32 bit patterns)
        k["_project"](scene.means, q, ls, ol, scene.sh, *view)
        return rec, radii
    act, key = cached
    misses = k["_project_cached"](scene.means, q, ls, ol, scene.sh, q.view(np.int32), ls.view(np.int32),
                                  ol.view(np.int32), act, key, *view)
    if misses:
        _store_activation(scene, parallel)  # inputs changed in place: the next frame reads fresh values
    return rec, radii


def render_cpu(scene, camera, background: np.ndarray, depth_limit: np.ndarray | None = None,
               near: float = NEAR, far: float = FAR, parallel: bool = True, cull: bool = True,
               slabs: bool = True, timings: dict | None = None, cache: bool = True):
    """Render ``scene`` (world frame) → (rgb [H,W,3], alpha [H,W], expected depth [H,W], median [H,W]).

    ``parallel``: spread this frame's Gaussians and tiles over numba's threads (True), or run serially
    without the GIL (False; for one frame per thread). ``cull``: on each row of a Gaussian's box visit only
    the pixel span inside its α ≥ 1/255 ellipse; ``slabs``: bin and composite front-to-back depth slabs, so Gaussians
    behind opaque tiles are never binned. Both give the same image bit for bit (False is the plain rule,
    kept for the tests). ``cache``: reuse the Gaussians' view-independent values between frames
    (:func:`project`; False: the plain projection, same image bit for bit). ``timings``: if a dict, seconds per stage are added under "project", "sort"
    (depth sort and packing), "bin" and "composite"."""
    w, h = int(camera.width), int(camera.height)
    k = PARALLEL if parallel else SERIAL
    clock = [time.perf_counter()]
    rec, radii = project(scene, camera, near, far, parallel, reuse=True, cache=cache)
    clock.append(time.perf_counter())
    order, packed, pradii, rects = sort_and_pack(rec, radii, w, h, parallel, reuse=True)
    del rec, radii
    clock.append(time.perf_counter())
    t_bin = t_comp = 0.0
    n_tiles = ((w + TILE - 1) // TILE) * ((h + TILE - 1) // TILE)
    active = np.ones(n_tiles, np.bool_)
    T_img = np.ones((h, w), np.float32)
    acc = np.zeros((h, w, 4), np.float32)
    median = np.full((h, w), np.inf, np.float32)
    done = np.zeros((h, w), np.bool_)
    use_limit = depth_limit is not None
    limit = np.ascontiguousarray(depth_limit, np.float32) if use_limit else np.zeros((1, 1), np.float32)
    lo = 0
    bounds = slab_bounds(len(order)) if slabs else [len(order)]
    while lo < len(order):
        if not active.any():
            break
        # The next slab, or everything left when the last one closed fewer than SLAB_KEEP_GOING of the
        # tiles still open: a translucent scene then pays no more parallel-region start-ups for nothing
        n_open = int(active.sum())
        hi = next(b for b in bounds if b > lo)
        t0 = time.perf_counter()
        tile_start, ids = bin_range(rects, lo, hi, w, active, parallel, BIN_CHUNKS if parallel else 1)
        t1 = time.perf_counter()
        k["_composite"](packed, pradii, tile_start, ids, w, h, limit, use_limit, cull, active, T_img, acc, median,
                        done)
        t_bin += t1 - t0
        t_comp += time.perf_counter() - t1
        lo = hi
        if active.sum() > (1.0 - SLAB_KEEP_GOING) * n_open:
            bounds = [len(order)]
    t2 = time.perf_counter()
    rgb = np.empty((h, w, 3), np.float32)
    alpha = np.empty((h, w), np.float32)
    exp_depth = np.empty((h, w), np.float32)
    k["_finish"](T_img, acc, np.ascontiguousarray(background, np.float32), rgb, alpha, exp_depth)
    if timings is not None:
        t_comp += time.perf_counter() - t2
        for key, dt in (("project", clock[1] - clock[0]), ("sort", clock[2] - clock[1]), ("bin", t_bin),
                        ("composite", t_comp)):
            timings[key] = timings.get(key, 0.0) + dt
    return rgb, alpha, exp_depth, median
