"""The Gaussian scene type: what a trained (or procedural) 3D Gaussian Splatting scene holds.

Conventions (stated once here, see docs/ARCHITECTURE.md):

* World frame: right-handed, metres; procedural scenes use +z up.
* ``means``      float32 [N, 3], world coordinates.
* ``quats``      float32 [N, 4], **wxyz** order, stored raw (not necessarily unit length, never zero);
  renderers normalise.
* ``log_scales`` float32 [N, 3], natural log of the standard deviations along the Gaussian's local axes
  (activated scale = exp(log_scale)), as in the INRIA ``.ply``.
* ``opacity_logits`` float32 [N], logit of the opacity (activated opacity = sigmoid(logit)).
* ``sh``         float32 [N, K, 3] spherical-harmonic coefficients, **basis-major** (K = (degree+1)²,
  coefficient 0 is DC), RGB last. Colour = max(Σ_k Y_k(d)·sh_k + 0.5, 0).
* ``world_transform`` float64 [4, 4] or None: maps the scene's stored frame to the world frame used by
  cameras and props (e.g. undoing gsplat's ``normalize_world_space``). Renderers apply it through
  :meth:`GaussianScene.in_world`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .sh import C0 as SH_C0  # zeroth-order real SH constant Y_0 = 1 / (2·sqrt(pi)); defined once, in scenes.sh


class SceneError(ValueError):
    """A scene (or a scene file) is malformed. The message names the source, the field and the fix."""


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def logit(p: np.ndarray | float) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    return np.log(p) - np.log1p(-p)


def rgb_to_sh_dc(rgb: np.ndarray) -> np.ndarray:
    """Colour in [0, 1] → DC coefficient such that a degree-0 scene renders exactly that colour."""
    return (np.asarray(rgb, dtype=np.float64) - 0.5) / SH_C0


def sh_degree_from_count(k: int, where: str = "sh") -> int:
    """Number of SH coefficients per channel (1, 4, 9, 16) → degree (0..3)."""
    d = math.isqrt(k)
    if d * d != k or k < 1:
        raise SceneError(f"{where}: {k} SH coefficients per channel is not a perfect square (1, 4, 9 or 16)")
    if d - 1 > 3:
        raise SceneError(f"{where}: SH degree {d - 1} > 3 is not supported (found {k} coefficients)")
    return d - 1


@dataclasses.dataclass
class GaussianScene:
    """A set of 3D Gaussians with raw (pre-activation) parameters; see module docstring for conventions.

    ``source`` names where the scene came from (a file path or a catalogue name); it is used in errors.
    ``metadata`` is free-form JSON-serialisable data (catalogue name, seed, category, ...).
    """

    means: np.ndarray
    quats: np.ndarray
    log_scales: np.ndarray
    opacity_logits: np.ndarray
    sh: np.ndarray
    world_transform: np.ndarray | None = None
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    source: str = "<memory>"

    def __post_init__(self) -> None:
        self.means = np.ascontiguousarray(self.means, dtype=np.float32)
        self.quats = np.ascontiguousarray(self.quats, dtype=np.float32)
        self.log_scales = np.ascontiguousarray(self.log_scales, dtype=np.float32)
        self.opacity_logits = np.ascontiguousarray(np.reshape(self.opacity_logits, (-1,)), dtype=np.float32)
        self.sh = np.ascontiguousarray(self.sh, dtype=np.float32)
        if self.world_transform is not None:
            self.world_transform = np.asarray(self.world_transform, dtype=np.float64)
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise :class:`SceneError` naming the field, the number of bad rows and the source."""
        src = self.source
        n = self.means.shape[0] if self.means.ndim >= 1 else -1
        expected = {
            "means": (n, 3),
            "quats": (n, 4),
            "log_scales": (n, 3),
            "opacity_logits": (n,),
        }
        if self.means.ndim != 2 or self.means.shape[1] != 3:
            raise SceneError(f"{src}: field 'means' must have shape [N, 3], got {list(self.means.shape)}")
        for name, shape in expected.items():
            arr = getattr(self, name)
            if arr.shape != shape:
                raise SceneError(
                    f"{src}: field '{name}' must have shape {list(shape)} (N={n} from 'means'), got {list(arr.shape)}"
                )
        if self.sh.ndim != 3 or self.sh.shape[0] != n or self.sh.shape[2] != 3:
            raise SceneError(f"{src}: field 'sh' must have shape [N, K, 3] with N={n}, got {list(self.sh.shape)}")
        sh_degree_from_count(self.sh.shape[1], where=f"{src}: field 'sh'")
        for name in ("means", "quats", "log_scales", "opacity_logits", "sh"):
            arr = getattr(self, name)
            bad = ~np.isfinite(arr.reshape(n, -1)).all(axis=1) if n else np.zeros(0, bool)
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise SceneError(
                    f"{src}: field '{name}' has non-finite values in {int(bad.sum())} of {n} rows "
                    f"(first bad row {first}); drop or repair those Gaussians"
                )
        qn = np.linalg.norm(self.quats.astype(np.float64), axis=1)
        zero = qn < 1e-12
        if zero.any():
            raise SceneError(
                f"{src}: field 'quats' has {int(zero.sum())} zero-length quaternions of {n} "
                f"(first bad row {int(np.flatnonzero(zero)[0])}); a rotation needs a non-zero wxyz quaternion"
            )
        if self.world_transform is not None:
            t = self.world_transform
            if t.shape != (4, 4) or not np.isfinite(t).all():
                raise SceneError(f"{src}: field 'world_transform' must be a finite 4x4 matrix, got shape {list(t.shape)}")

    # ------------------------------------------------------------------ properties
    def __len__(self) -> int:
        return int(self.means.shape[0])

    @property
    def sh_degree(self) -> int:
        return sh_degree_from_count(self.sh.shape[1], where=self.source)

    @property
    def scales(self) -> np.ndarray:
        """Activated standard deviations, float32 [N, 3]."""
        return np.exp(self.log_scales)

    @property
    def opacities(self) -> np.ndarray:
        """Activated opacities in (0, 1), float32 [N]."""
        return sigmoid(self.opacity_logits).astype(np.float32)

    def subset(self, index: np.ndarray) -> "GaussianScene":
        return dataclasses.replace(
            self,
            means=self.means[index],
            quats=self.quats[index],
            log_scales=self.log_scales[index],
            opacity_logits=self.opacity_logits[index],
            sh=self.sh[index],
            metadata=dict(self.metadata),
        )

    def with_sh_degree(self, degree: int) -> "GaussianScene":
        """Truncate (or zero-pad) the SH coefficients to ``degree``."""
        k = (degree + 1) ** 2
        sh = np.zeros((len(self), k, 3), np.float32)
        m = min(k, self.sh.shape[1])
        sh[:, :m] = self.sh[:, :m]
        return dataclasses.replace(self, sh=sh, metadata=dict(self.metadata))

    def in_world(self) -> "GaussianScene":
        """The scene with ``world_transform`` applied to means and rotations (and scales, for a similarity).

        The transform must be a similarity (rotation · uniform scale + translation); anything else
        cannot be represented by Gaussians with the same parameterisation and is rejected. View-dependent
        colour is rotated with the scene (``scenes/sh.py``).
        """
        t = self.world_transform
        if t is None:
            return self
        a = t[:3, :3]
        s = np.cbrt(np.linalg.det(a))
        r = a / s
        if s <= 0 or not np.allclose(r @ r.T, np.eye(3), atol=1e-5):
            raise SceneError(f"{self.source}: world_transform is not a similarity (rotation·scale+translation)")
        means = (self.means.astype(np.float64) @ a.T + t[:3, 3]).astype(np.float32)
        from .sh import rotate_sh

        quats = quat_multiply(matrix_to_quat(r)[None, :], self.quats.astype(np.float64))
        return dataclasses.replace(
            self,
            means=means,
            quats=quats.astype(np.float32),
            log_scales=self.log_scales + np.float32(math.log(s)),
            sh=rotate_sh(self.sh, r) if self.sh.shape[1] > 1 else self.sh,
            world_transform=None,
            metadata=dict(self.metadata),
        )

    @staticmethod
    def concatenate(scenes: list["GaussianScene"], source: str = "<concatenated>") -> "GaussianScene":
        if not scenes:
            raise SceneError(f"{source}: nothing to concatenate")
        deg = max(s.sh_degree for s in scenes)
        scenes = [s.with_sh_degree(deg) for s in scenes]
        return GaussianScene(
            means=np.concatenate([s.means for s in scenes]),
            quats=np.concatenate([s.quats for s in scenes]),
            log_scales=np.concatenate([s.log_scales for s in scenes]),
            opacity_logits=np.concatenate([s.opacity_logits for s in scenes]),
            sh=np.concatenate([s.sh for s in scenes]),
            source=source,
        )


# ---------------------------------------------------------------------- quaternion helpers (wxyz)
def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """wxyz quaternions [..., 4] (normalised here) → rotation matrices [..., 3, 3]."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrices [..., 3, 3] → unit wxyz quaternions [..., 4] with w ≥ 0.

    Vectorised Shepperd method: for each matrix the largest of (w², x², y², z²) is computed from the
    diagonal and the other components from the off-diagonal sums/differences, which is stable for
    every rotation (including 180° turns).
    """
    m = np.asarray(m, dtype=np.float64)
    r = m.reshape(-1, 3, 3)
    m00, m11, m22 = r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]
    # 4·(w², x², y², z²)
    sq = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], 1)
    big = np.argmax(sq, axis=1)
    s = np.sqrt(np.maximum(sq[np.arange(len(r)), big], 1e-300))  # = 2·|largest component|
    d21, d02, d10 = r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0], r[:, 1, 0] - r[:, 0, 1]
    s01, s02, s12 = r[:, 0, 1] + r[:, 1, 0], r[:, 0, 2] + r[:, 2, 0], r[:, 1, 2] + r[:, 2, 1]
    cand = np.stack(
        [
            np.stack([s * s, d21, d02, d10], 1),
            np.stack([d21, s * s, s01, s02], 1),
            np.stack([d02, s01, s * s, s12], 1),
            np.stack([d10, s02, s12, s * s], 1),
        ],
        1,
    )
    out = cand[np.arange(len(r)), big] / (2 * s[:, None])
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    out[out[:, 0] < 0] *= -1
    return out.reshape(m.shape[:-2] + (4,))


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of wxyz quaternions (broadcasting): rotation by ``a`` after ``b``."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, np.float64), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )
