"""Plain PyTorch reference of the gsplat 1.5.3 "classic" forward pass (float64, readable, slow).

This file is the specification the fast ``cpu`` kernel (``render/_cpu.py``) is tested against. It
follows the rules written in docs/render.md ("Splat rendering rules") step by step, with no
tricks beyond vectorising each step over Gaussians and over the pixels of one 16×16 tile.
"""
from __future__ import annotations

import math

import numpy as np

from .rules import ALPHA_MAX, ALPHA_MIN, EPS2D, EXTENT_MAX, FAR, GUARD_BAND, NEAR, T_STOP, TILE

def sh_basis(dirs, degree: int):
    """Real SH basis Y_k(d) for unit directions ``dirs`` [N, 3] → [N, (degree+1)²] (``scenes/sh.py``)."""
    import torch

    from scenes.sh import sh_basis as basis

    return torch.as_tensor(basis(dirs.detach().cpu().numpy(), degree), dtype=torch.float64)


def quat_to_rotmat(q):
    import torch

    q = q / q.norm(dim=1, keepdim=True)
    w, x, y, z = q.unbind(1)
    return torch.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ],
        dim=1,
    ).reshape(-1, 3, 3)


def project(means, quats, log_scales, opacity_logits, sh, w2c, fx, fy, cx, cy, width, height,
            near=NEAR, far=FAR):
    """Steps 1-5 and 8: per-Gaussian screen-space parameters.

    Returns a dict of tensors over the *kept* Gaussians: ``index`` (into the input), ``mean2d`` [M,2],
    ``conic`` [M,3] = (A, B, C), ``opacity`` [M], ``depth`` [M] (camera z), ``color`` [M,3],
    ``radius`` [M,2] (per-axis pixel radii).
    """
    import torch

    f64 = dict(dtype=torch.float64)
    means = torch.as_tensor(means, **f64)
    w2c = torch.as_tensor(w2c, **f64)
    opac = torch.sigmoid(torch.as_tensor(opacity_logits, **f64))
    scales = torch.exp(torch.as_tensor(log_scales, **f64))
    rot = quat_to_rotmat(torch.as_tensor(quats, **f64))
    sh = torch.as_tensor(sh, **f64)

    # 1. covariance Σ = R diag(s²) Rᵀ
    m = rot * scales[:, None, :]
    cov = m @ m.transpose(1, 2)
    # 2. world → camera
    rv, tv = w2c[:3, :3], w2c[:3, 3]
    pc = means @ rv.T + tv
    x, y, z = pc.unbind(1)
    cov_c = rv @ cov @ rv.T
    # 3. EWA projection with the 1.3×-FOV clamp on x/z, y/z
    tan_x, tan_y = 0.5 * width / fx, 0.5 * height / fy
    zs = torch.where(z.abs() > 0, z, torch.ones_like(z))  # avoid 0-division for culled points
    tx = zs * torch.clamp(x / zs, -(cx / fx + GUARD_BAND * tan_x), (width - cx) / fx + GUARD_BAND * tan_x)
    ty = zs * torch.clamp(y / zs, -(cy / fy + GUARD_BAND * tan_y), (height - cy) / fy + GUARD_BAND * tan_y)
    zero = torch.zeros_like(zs)
    jac = torch.stack([torch.stack([fx / zs, zero, -fx * tx / zs**2], 1),
                       torch.stack([zero, fy / zs, -fy * ty / zs**2], 1)], 1)
    cov2d = jac @ cov_c @ jac.transpose(1, 2)
    mean2d = torch.stack([fx * x / zs + cx, fy * y / zs + cy], 1)
    # 4. dilation and conic
    a = cov2d[:, 0, 0] + EPS2D
    b = cov2d[:, 0, 1]
    c = cov2d[:, 1, 1] + EPS2D
    det = a * c - b * b
    dets = torch.where(det > 0, det, torch.ones_like(det))
    conic = torch.stack([c / dets, -b / dets, a / dets], 1)
    # 5. per-axis extent where alpha >= 1/255
    k = torch.clamp(torch.sqrt(2 * torch.log(torch.clamp(opac / ALPHA_MIN, min=1.0))), max=EXTENT_MAX)
    radius = torch.stack([torch.ceil(k * torch.sqrt(a)), torch.ceil(k * torch.sqrt(c))], 1)
    keep = (z >= near) & (z <= far) & (det > 0) & (opac >= ALPHA_MIN) & (radius > 0).any(1)
    keep &= (mean2d[:, 0] + radius[:, 0] > 0) & (mean2d[:, 0] - radius[:, 0] < width)
    keep &= (mean2d[:, 1] + radius[:, 1] > 0) & (mean2d[:, 1] - radius[:, 1] < height)
    # 8. view-dependent colour (direction from camera centre to the Gaussian, world space)
    campos = -rv.T @ tv
    dirs = means - campos
    dirs = dirs / dirs.norm(dim=1, keepdim=True).clamp(min=1e-12)
    degree = int(round(math.sqrt(sh.shape[1]))) - 1
    color = torch.clamp((sh_basis(dirs, degree)[:, :, None] * sh).sum(1) + 0.5, min=0.0)
    idx = torch.nonzero(keep).squeeze(1)
    return dict(index=idx, mean2d=mean2d[idx], conic=conic[idx], opacity=opac[idx], depth=z[idx],
                color=color[idx], radius=radius[idx])


def rasterize(proj, width, height, background, depth_limit=None):
    """Steps 6-7: tile binning, depth sort and front-to-back compositing.

    ``background`` [H, W, 3]; ``depth_limit`` [H, W] or None (a Gaussian contributes to pixel p only
    if its camera z ≤ depth_limit[p]). Returns numpy (rgb, alpha, expected_depth, median_depth).
    """
    import torch

    f64 = dict(dtype=torch.float64)
    bg = torch.as_tensor(np.asarray(background), **f64)
    limit = None if depth_limit is None else torch.as_tensor(np.asarray(depth_limit), **f64)
    rgb = bg.clone()  # pixels no Gaussian touches show the background
    alpha = torch.zeros(height, width, **f64)
    exp_depth = torch.zeros(height, width, **f64)
    median = torch.full((height, width), math.inf, **f64)

    mean2d, radius = proj["mean2d"], proj["radius"]
    # Depth sort once (stable: ties keep input order); each tile's list is a sorted subsequence.
    order = torch.sort(proj["depth"], stable=True).indices
    mean2d, radius = mean2d[order], radius[order]
    conic, opac, depth, color = (proj[k][order] for k in ("conic", "opacity", "depth", "color"))
    # A Gaussian touches the pixel centres in [mean - r, mean + r]; tile t spans pixels [16t, 16t+16).
    tx0 = torch.floor((mean2d[:, 0] - radius[:, 0]) / TILE)
    tx1 = torch.floor((mean2d[:, 0] + radius[:, 0]) / TILE)
    ty0 = torch.floor((mean2d[:, 1] - radius[:, 1]) / TILE)
    ty1 = torch.floor((mean2d[:, 1] + radius[:, 1]) / TILE)

    for ty in range((height + TILE - 1) // TILE):
        for tx in range((width + TILE - 1) // TILE):
            sel = torch.nonzero((tx0 <= tx) & (tx <= tx1) & (ty0 <= ty) & (ty <= ty1)).squeeze(1)
            if sel.numel() == 0:
                continue
            rows = torch.arange(ty * TILE, min((ty + 1) * TILE, height))
            cols = torch.arange(tx * TILE, min((tx + 1) * TILE, width))
            pr, pcl = torch.meshgrid(rows, cols, indexing="ij")
            px = pcl.reshape(-1).to(torch.float64) + 0.5  # pixel centres
            py = pr.reshape(-1).to(torch.float64) + 0.5
            dx = mean2d[sel, 0][None, :] - px[:, None]  # [P, G]
            dy = mean2d[sel, 1][None, :] - py[:, None]
            ca, cb, cc = conic[sel].unbind(1)
            sigma = 0.5 * (ca * dx * dx + cc * dy * dy) + cb * dx * dy
            a = torch.clamp(opac[sel][None, :] * torch.exp(-sigma), max=ALPHA_MAX)
            valid = (sigma >= 0) & (a >= ALPHA_MIN)
            if limit is not None:
                valid &= depth[sel][None, :] <= limit[pr.reshape(-1), pcl.reshape(-1)][:, None]
            a = torch.where(valid, a, torch.zeros_like(a))
            t_after = torch.cumprod(1 - a, dim=1)
            # Stop *before* the Gaussian whose transmittance would drop to <= 1e-4 (T is monotone, so
            # everything after it is dropped too).
            kept = valid & (t_after > T_STOP)
            a = torch.where(kept, a, torch.zeros_like(a))
            t_after = torch.cumprod(1 - a, dim=1)
            t_before = torch.cat([torch.ones_like(t_after[:, :1]), t_after[:, :-1]], dim=1)
            w = a * t_before
            t_final = t_after[:, -1]
            c = w @ color[sel]
            d = w @ depth[sel]
            crossed = kept & (t_after <= 0.5)
            first = torch.where(crossed.any(1), crossed.to(torch.int8).argmax(1), torch.full_like(px, -1, dtype=torch.long))
            med = torch.where(first >= 0, depth[sel][first.clamp(min=0)], torch.full_like(px, math.inf))
            r_, c_ = pr.reshape(-1), pcl.reshape(-1)
            rgb[r_, c_] = c + t_final[:, None] * bg[r_, c_]
            alpha[r_, c_] = 1 - t_final
            exp_depth[r_, c_] = torch.where(t_final < 1, d / (1 - t_final).clamp(min=1e-300), torch.zeros_like(d))
            median[r_, c_] = med
    return rgb.numpy(), alpha.numpy(), exp_depth.numpy(), median.numpy()


def render_reference(scene, camera, background, depth_limit=None, near=NEAR, far=FAR):
    """Render ``scene`` (already in world frame) with ``camera``; see :func:`render.splat`."""
    proj = project(scene.means, scene.quats, scene.log_scales, scene.opacity_logits, scene.sh, camera.w2c,
                   camera.fx, camera.fy, camera.cx, camera.cy, camera.width, camera.height, near, far)
    return rasterize(proj, camera.width, camera.height, background, depth_limit)
