"""Trained-like Gaussian scenes for the renderer benchmark (issue 19): synthetic, seeded, with the statistics
measured on a real third-party trained 3DGS scene (45,624 Gaussians) and those typical of CO3D scenes
trained with gsplat or the INRIA code.

Target statistics (issue 19), matched by piecewise log-linear quantile functions through the stated
percentiles (so the sample's percentiles are the stated ones up to sampling noise):

* opacity: median 0.65, 12% below 0.1, 10th-90th percentile 0.07-0.98;
* largest axis / object extent: median 1.3%, 90th percentile 4.7%, 99th 9%;
* anisotropy (largest / smallest axis): median 16, 90th percentile 49;
* SH degree 3 with non-zero higher coefficients (view-dependent colour);
* a few percent (``floaters``, default 3%) of large, faint floaters (standard deviation 2-6% of the
  extent, 2-4x the median Gaussian's largest axis; opacity 0.02-0.3) spread through a volume 2.5x the
  object's, including between the camera orbit and the object.

The "object" is a union of six ellipsoid surfaces on a ground disc (a fifth of the surface Gaussians; a
trained CO3D scene keeps its surroundings), Gaussians lying on the surfaces and flattened along the normal
as trained splats are, of extent ``extent`` metres, centred at the origin, +z up; cameras orbit it at
1.6x its extent, looking at the centre.
"""
from __future__ import annotations

import numpy as np

# (cumulative probability, value) knots of the quantile functions (issue 19's measured percentiles; the
# tails beyond the stated ones are this module's choice and are stated here)
OPACITY_Q = ((0.0, 0.004), (0.10, 0.07), (0.12, 0.10), (0.50, 0.65), (0.90, 0.98), (1.0, 0.995))
SIZE_Q = ((0.0, 0.001), (0.50, 0.013), (0.90, 0.047), (0.99, 0.09), (1.0, 0.15))  # largest axis / extent
ANISO_Q = ((0.0, 1.0), (0.50, 16.0), (0.90, 49.0), (1.0, 200.0))  # largest / smallest axis


def quantile_sample(knots, u: np.ndarray) -> np.ndarray:
    """Values at probabilities ``u`` of the piecewise log-linear quantile function through ``knots``."""
    p = np.array([k[0] for k in knots])
    v = np.log(np.array([k[1] for k in knots]))
    return np.exp(np.interp(u, p, v))


def _rotation_to_quat(rot: np.ndarray) -> np.ndarray:
    """[N, 3, 3] rotation matrices → [N, 4] wxyz quaternions (Shepperd's method, vectorised)."""
    from scipy.spatial.transform import Rotation

    xyzw = Rotation.from_matrix(rot).as_quat()
    return np.concatenate([xyzw[:, 3:], xyzw[:, :3]], 1)


def trained_like(n: int, seed: int = 0, extent: float = 2.0, floaters: float = 0.03):
    """A trained-like :class:`~scenes.gaussians.GaussianScene` of exactly ``n`` Gaussians (SH degree 3).

    Args:
        n: number of Gaussians.
        seed: everything random flows from ``numpy.random.default_rng(seed)``.
        extent: object size in metres (the largest-axis statistics are relative to it).
        floaters: fraction of large faint floaters.
    """
    from scenes.gaussians import GaussianScene, logit

    rng = np.random.default_rng(seed)
    n_float = int(round(floaters * n))
    n_surf = n - n_float
    # surface points on 6 random ellipsoids inside the extent; the normal is the ellipsoid's gradient
    k = 6
    centres = rng.uniform(-0.25, 0.25, (k, 3)) * extent
    radii = rng.uniform(0.12, 0.3, (k, 3)) * extent
    which = rng.integers(0, k, n_surf)
    d = rng.normal(size=(n_surf, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pts = centres[which] + radii[which] * d
    normal = d / radii[which]
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    ground = rng.uniform(size=n_surf) < 0.2
    n_g = int(ground.sum())
    rho = 1.5 * extent * np.sqrt(rng.uniform(size=n_g))
    phi = rng.uniform(0.0, 2 * np.pi, n_g)
    pts[ground] = np.stack([rho * np.cos(phi), rho * np.sin(phi), np.full(n_g, -0.5 * extent)], 1)
    normal[ground] = (0.0, 0.0, 1.0)
    # local frame: third axis = normal (the thinnest), first two random in the tangent plane
    t = np.cross(normal, rng.normal(size=(n_surf, 3)))
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    rot = np.stack([t, np.cross(normal, t), normal], axis=2)  # columns are the local axes
    big = quantile_sample(SIZE_Q, rng.uniform(size=n_surf)) * extent
    aniso = quantile_sample(ANISO_Q, rng.uniform(size=n_surf))
    mid = big / aniso ** rng.uniform(0.0, 0.6, n_surf)  # middle axis between the smallest and the largest
    scales = np.stack([big, mid, big / aniso], 1)
    opac = quantile_sample(OPACITY_Q, rng.uniform(size=n_surf))
    # floaters: roughly isotropic, 2-6% of the extent, opacity 0.02-0.3, anywhere in a 2.5x volume
    f_pts = rng.uniform(-1.25, 1.25, (n_float, 3)) * extent
    f_rot = np.linalg.qr(rng.normal(size=(n_float, 3, 3)))[0]
    f_rot *= np.sign(np.linalg.det(f_rot))[:, None, None]
    f_scales = rng.uniform(0.02, 0.06, (n_float, 1)) * extent * rng.uniform(0.5, 1.0, (n_float, 3))
    f_opac = rng.uniform(0.02, 0.3, n_float)
    means = np.concatenate([pts, f_pts])
    quats = _rotation_to_quat(np.concatenate([rot, f_rot]))
    log_scales = np.log(np.concatenate([scales, f_scales]))
    opacity = np.clip(np.concatenate([opac, f_opac]), 1e-4, 1 - 1e-4)
    # SH degree 3: DC colours around mid grey; higher bands decaying with degree, never all zero
    sh = np.zeros((n, 16, 3))
    sh[:, 0] = rng.normal(0.0, 0.6, (n, 3))
    for deg, sd in ((1, 0.15), (2, 0.08), (3, 0.05)):
        sh[:, deg * deg:(deg + 1) ** 2] = rng.normal(0.0, sd, (n, 2 * deg + 1, 3))
    perm = rng.permutation(n)  # trained scenes store Gaussians in no spatial order
    return GaussianScene(means=means[perm], quats=quats[perm], log_scales=log_scales[perm],
                         opacity_logits=logit(opacity)[perm], sh=sh[perm],
                         source=f"trained_like(n={n}, seed={seed}, extent={extent}, floaters={floaters})")


def orbit_cameras(frames: int, size: int, extent: float = 2.0, fov_deg: float = 60.0):
    """``frames`` cameras on a circle of radius 1.6·extent at 0.4·extent height, looking at the centre."""
    from scenes.camera import Camera

    cams = []
    for a in np.linspace(0.0, 2 * np.pi, frames, endpoint=False):
        eye = (1.6 * extent * np.cos(a), 1.6 * extent * np.sin(a), 0.4 * extent)
        cams.append(Camera.from_fov(size, size, fov_deg).looking_at(eye, (0.0, 0.0, 0.0)))
    return cams


def scene_statistics(scene, extent: float = 2.0) -> dict[str, float]:
    """The issue's statistics measured on ``scene`` (surface Gaussians and floaters together)."""
    o = 1.0 / (1.0 + np.exp(-scene.opacity_logits.astype(np.float64)))
    s = np.exp(scene.log_scales.astype(np.float64))
    big = s.max(1) / extent
    an = s.max(1) / s.min(1)
    return {"opacity_median": float(np.median(o)), "opacity_below_0.1": float((o < 0.1).mean()),
            "opacity_p10": float(np.quantile(o, 0.1)), "opacity_p90": float(np.quantile(o, 0.9)),
            "size_median": float(np.median(big)), "size_p90": float(np.quantile(big, 0.9)),
            "size_p99": float(np.quantile(big, 0.99)), "aniso_median": float(np.median(an)),
            "aniso_p90": float(np.quantile(an, 0.9))}
