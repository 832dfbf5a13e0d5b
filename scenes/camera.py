"""Pinhole cameras in the OpenCV convention (the one gsplat uses).

* Camera axes: +x right, +y down, +z forward (into the scene). Camera-space depth is z.
* ``w2c`` is the 4×4 world-to-camera matrix: x_cam = R·x_world + t.
* Intrinsics ``K = [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]`` in pixels; pixel (row i, col j) is sampled
  at (u, v) = (j + 0.5, i + 0.5), so a centred principal point is (W/2, H/2).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np


class CameraError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Camera:
    """A pinhole camera: image size, intrinsics and world-to-camera pose (float64)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    w2c: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(4))

    def __post_init__(self) -> None:
        w2c = np.asarray(self.w2c, dtype=np.float64)
        object.__setattr__(self, "w2c", w2c)
        if w2c.shape != (4, 4):
            raise CameraError(f"w2c must be a finite 4x4 matrix, got shape {list(w2c.shape)}")
        if not np.isfinite(w2c).all():
            raise CameraError(f"w2c must be a finite 4x4 matrix, got non-finite entries {w2c.tolist()}")
        r = w2c[:3, :3]
        # np.allclose(r @ r.T, I, atol=1e-5) written out (the same test on finite entries, ~10x cheaper: cameras are
        # made per candidate placement and per frame)
        eye3 = np.eye(3)
        if not (np.abs(r @ r.T - eye3) <= 1e-5 + 1e-5 * eye3).all() or np.linalg.det(r) < 0:
            raise CameraError("w2c rotation block is not a proper rotation (orthonormal, det +1)")
        if int(self.width) <= 0 or int(self.height) <= 0:
            raise CameraError(f"image size must be positive, got {self.width}x{self.height}")
        if not (self.fx > 0 and self.fy > 0):
            raise CameraError(f"focal lengths must be positive, got fx={self.fx}, fy={self.fy}")

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def from_fov(width: int, height: int, fov_x_deg: float, w2c: np.ndarray | None = None,
                 fov_y_deg: float | None = None) -> "Camera":
        """Centred principal point; horizontal FOV in degrees (vertical derived for square pixels)."""
        if not 0 < fov_x_deg < 180:
            raise CameraError(f"fov_x_deg must be in (0, 180), got {fov_x_deg}")
        fx = 0.5 * width / math.tan(math.radians(fov_x_deg) / 2)
        fy = fx if fov_y_deg is None else 0.5 * height / math.tan(math.radians(fov_y_deg) / 2)
        return Camera(width, height, fx, fy, width / 2, height / 2, np.eye(4) if w2c is None else w2c)

    @staticmethod
    def from_K(width: int, height: int, K: np.ndarray, w2c: np.ndarray | None = None) -> "Camera":
        K = np.asarray(K, dtype=np.float64)
        if K.shape != (3, 3):
            raise CameraError(f"K must be 3x3, got {list(K.shape)}")
        return Camera(width, height, K[0, 0], K[1, 1], K[0, 2], K[1, 2], np.eye(4) if w2c is None else w2c)

    def looking_at(self, eye, target, up=(0.0, 0.0, 1.0)) -> "Camera":
        return dataclasses.replace(self, w2c=look_at(eye, target, up))

    def resized(self, width: int, height: int) -> "Camera":
        sx, sy = width / self.width, height / self.height
        return dataclasses.replace(self, width=width, height=height, fx=self.fx * sx, fy=self.fy * sy,
                                   cx=self.cx * sx, cy=self.cy * sy)

    # ------------------------------------------------------------------ derived
    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0, self.cx], [0, self.fy, self.cy], [0, 0, 1.0]])

    @property
    def c2w(self) -> np.ndarray:
        r, t = self.w2c[:3, :3], self.w2c[:3, 3]
        out = np.eye(4)
        out[:3, :3] = r.T
        out[:3, 3] = -r.T @ t
        return out

    @property
    def center(self) -> np.ndarray:
        """Camera centre in world coordinates."""
        return self.c2w[:3, 3]

    @property
    def forward(self) -> np.ndarray:
        """Viewing direction (+z of the camera) in world coordinates."""
        return self.w2c[2, :3].copy()

    @property
    def fov_x_deg(self) -> float:
        return math.degrees(2 * math.atan(0.5 * self.width / self.fx))

    def world_to_camera(self, points: np.ndarray) -> np.ndarray:
        p = np.asarray(points, dtype=np.float64)
        return p @ self.w2c[:3, :3].T + self.w2c[:3, 3]

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World points [N, 3] → (pixel coordinates [N, 2] as (u, v) with the +0.5 convention, depth z [N])."""
        pc = self.world_to_camera(points)
        z = pc[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = np.stack([self.fx * pc[:, 0] / z + self.cx, self.fy * pc[:, 1] / z + self.cy], axis=1)
        return uv, z

    def as_row(self) -> dict[str, float]:
        """Flat record: width, height, fx, fy, cx, cy and w2c_00..w2c_33 (row-major)."""
        row: dict[str, float] = {"width": int(self.width), "height": int(self.height), "fx": float(self.fx),
                                 "fy": float(self.fy), "cx": float(self.cx), "cy": float(self.cy)}
        for i in range(4):
            for j in range(4):
                row[f"w2c_{i}{j}"] = float(self.w2c[i, j])
        return row

    @staticmethod
    def from_row(row) -> "Camera":
        w2c = np.array([[float(row[f"w2c_{i}{j}"]) for j in range(4)] for i in range(4)])
        return Camera(int(row["width"]), int(row["height"]), float(row["fx"]), float(row["fy"]),
                      float(row["cx"]), float(row["cy"]), w2c)


def cross3(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``numpy.cross`` of two 3-vectors with the same products and differences (bit-identical, tested), without
    its axis handling, which cost ~40 µs a call: the VPT ray casts make ~10⁵ calls per strategy scene."""
    return np.array([u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]])


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """World-to-camera matrix (OpenCV axes) for a camera at ``eye`` looking at ``target``.

    The camera's +z points from eye to target, +x is forward × up (image right), +y = z × x (image down),
    so ``up`` appears upwards in the image.
    """
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    z = target - eye
    if np.linalg.norm(z) < 1e-12:
        raise CameraError("look_at: eye and target coincide")
    z /= np.linalg.norm(z)
    x = cross3(z, up)  # numpy.cross, bit for bit, without its axis handling
    if np.linalg.norm(x) < 1e-9:
        raise CameraError("look_at: viewing direction is parallel to 'up'; pass another up vector")
    x /= np.linalg.norm(x)
    y = cross3(z, x)
    r = np.stack([x, y, z])
    w2c = np.eye(4)
    w2c[:3, :3] = r
    w2c[:3, 3] = -r @ eye
    return w2c
