"""Real spherical harmonics (INRIA / gsplat basis and ordering) and their rotation.

Rotating a scene by R must rotate its view-dependent colour: the colour seen along d after the
rotation equals the colour seen along Rᵀd before it. Each degree l's coefficients mix only among
themselves (rotations preserve the span of degree-l harmonics), so the (2l+1)×(2l+1) matrix D_l with
Σ_m' D_l[m', m]·Y_m'(d) = Y_m(Rᵀd) is found exactly by least squares over a few dozen directions.
"""
from __future__ import annotations

import numpy as np

C0 = 0.28209479177387814
C1 = 0.4886025119029199
C2 = (1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396)
C3 = (-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154,
      -0.4570457994644658, 1.445305721320277, -0.5900435899266435)


def sh_basis(dirs: np.ndarray, degree: int) -> np.ndarray:
    """Y_k(d) for unit directions [N, 3] → [N, (degree+1)²] (float64)."""
    d = np.asarray(dirs, np.float64)
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    out = [np.full_like(x, C0)]
    if degree >= 1:
        out += [-C1 * y, C1 * z, -C1 * x]
    if degree >= 2:
        xx, yy, zz = x * x, y * y, z * z
        out += [C2[0] * x * y, C2[1] * y * z, C2[2] * (2 * zz - xx - yy), C2[3] * x * z, C2[4] * (xx - yy)]
    if degree >= 3:
        out += [C3[0] * y * (3 * xx - yy), C3[1] * x * y * z, C3[2] * y * (4 * zz - xx - yy),
                C3[3] * z * (2 * zz - 3 * xx - 3 * yy), C3[4] * x * (4 * zz - xx - yy), C3[5] * z * (xx - yy),
                C3[6] * x * (xx - 3 * yy)]
    return np.stack(out, axis=1)


def sh_rotation_matrices(rotation: np.ndarray, degree: int) -> list[np.ndarray]:
    """[D_0, …, D_degree] for the rotation matrix ``rotation`` (see module docstring)."""
    r = np.asarray(rotation, np.float64)
    rng = np.random.default_rng(0)
    d = rng.normal(size=(64, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    b = sh_basis(d, degree)             # Y(d)
    a = sh_basis(d @ r, degree)         # Y(Rᵀ d)  (row-vector form: d @ R = (Rᵀ d)ᵀ)
    mats = []
    for l in range(degree + 1):
        sl = slice(l * l, (l + 1) ** 2)
        sol, *_ = np.linalg.lstsq(b[:, sl], a[:, sl], rcond=None)
        mats.append(sol)  # b @ sol = a  →  new coefficients = sol @ old
    return mats


def rotate_sh(sh: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Rotate basis-major SH coefficients [N, K, 3] by ``rotation`` (3×3)."""
    k = sh.shape[1]
    degree = int(round(np.sqrt(k))) - 1
    out = np.array(sh, dtype=np.float64, copy=True)
    for l, dl in enumerate(sh_rotation_matrices(rotation, degree)):
        if l == 0:
            continue
        sl = slice(l * l, (l + 1) ** 2)
        out[:, sl, :] = np.einsum("pm,nmc->npc", dl, out[:, sl, :])
    return out.astype(np.float32)
