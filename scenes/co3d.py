"""CO3D v2: annotations → OpenCV cameras, and scene specs pairing a trained splat with its sequence.

Annotation files (per category): ``frame_annotations.jgz`` and ``sequence_annotations.jgz`` (gzipped
JSON lists). A frame has ``sequence_name``, ``frame_number``, ``image{path, size=[H, W]}`` and
``viewpoint{R, T, focal_length, principal_point, intrinsics_format}`` in PyTorch3D's convention
(row vectors X_cam = X_world·R + T; +X left, +Y up, +Z forward; NDC intrinsics).

Conversion to our OpenCV camera (pixel centres at +0.5):

    s_x = s_y = min(W, H)/2  ("ndc_isotropic", CO3D v2)   or   s_x, s_y = W/2, H/2  ("ndc_norm_image_bounds", v1)
    fx = focal_length[0]·s_x,  fy = focal_length[1]·s_y
    cx = W/2 − principal_point[0]·s_x,  cy = H/2 − principal_point[1]·s_y
    R_cv = F·Rᵀ,  t_cv = F·T,  F = diag(−1, −1, 1)

A **scene spec** (YAML or JSON) names a trained splat and its CO3D sequence::

    name: hydrant_416_57046      # optional
    splat: point_cloud.ply       # INRIA .ply or gsplat checkpoint .pt (relative to the spec file)
    splat_to_co3d: [[...4x4...]] # optional: maps the splat's frame to the CO3D world frame (e.g. undoing
                                 # gsplat's normalize_world_space); identity if omitted
    co3d_root: /data/co3d        # folder holding <category>/frame_annotations.jgz
    category: hydrant
    sequence: 416_57046

Loading it (``scenes.load.load_scene("spec.yaml")``) aligns the scene to Vantage's world frame: the
cameras' mean up vector becomes +z, the object's centre (median of the sequence's point cloud, or of the
Gaussians near the cameras' look-at point) moves to the origin and the ground (the 2nd percentile of
point heights) to z = 0; CO3D's arbitrary units become metres by the object's height (``object_height_m:`` in
the spec, else its category's typical height, ``scenes.canonical.CATEGORY_HEIGHTS_M``). The recorded camera path is kept (``Scene.metadata["recorded_cameras"]``) and
an orbit fitted to it is the scene's reference trajectory; the object's extent comes from the point cloud.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
from pathlib import Path

import numpy as np

from .camera import Camera
from .canonical import CATEGORY_HEIGHTS_M
from .gaussians import SceneError
from .ply import load_scene_file, read_vertices
from .scene import Scene
from .trajectory import OrbitTrajectory

FORMATS = ("ndc_isotropic", "ndc_norm_image_bounds")
_F = np.diag([-1.0, -1.0, 1.0])


def read_jgz(path: str | os.PathLike) -> list[dict]:
    path = str(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise SceneError(f"{path}: no such file") from None
    except (OSError, json.JSONDecodeError, EOFError) as e:
        raise SceneError(f"{path}: not a gzipped JSON annotation file ({type(e).__name__}: {e})") from None
    if not isinstance(data, list):
        raise SceneError(f"{path}: expected a JSON list of annotations, got {type(data).__name__}")
    return data


def viewpoint_to_camera(viewpoint: dict, image_size, where: str = "viewpoint") -> Camera:
    """A CO3D ``viewpoint`` and ``image.size`` = [H, W] → :class:`Camera` (OpenCV, pixels)."""
    try:
        h, w = (int(v) for v in image_size)
        r = np.asarray(viewpoint["R"], np.float64)
        t = np.asarray(viewpoint["T"], np.float64)
        f = [float(v) for v in viewpoint["focal_length"]]
        p = [float(v) for v in viewpoint["principal_point"]]
    except (KeyError, TypeError, ValueError) as e:
        raise SceneError(f"{where}: malformed viewpoint ({type(e).__name__}: {e}); need R, T, focal_length, "
                         "principal_point and image.size") from None
    fmt = viewpoint.get("intrinsics_format", "ndc_norm_image_bounds")
    if fmt not in FORMATS:
        raise SceneError(f"{where}: intrinsics_format {fmt!r} unknown; one of {FORMATS}")
    if r.shape != (3, 3) or t.shape != (3,):
        raise SceneError(f"{where}: R must be 3x3 and T length 3, got {list(r.shape)} and {list(t.shape)}")
    sx, sy = (min(w, h) / 2,) * 2 if fmt == "ndc_isotropic" else (w / 2, h / 2)
    w2c = np.eye(4)
    w2c[:3, :3] = _F @ r.T
    w2c[:3, 3] = _F @ t
    return Camera(w, h, f[0] * sx, f[1] * sy, w / 2 - p[0] * sx, h / 2 - p[1] * sy, w2c)


def load_sequence(root: str | os.PathLike, category: str, sequence: str) -> dict:
    """Frames of one sequence, sorted by frame number: cameras, image paths, point-cloud path."""
    cat = Path(root) / category
    frames = [a for a in read_jgz(cat / "frame_annotations.jgz") if a.get("sequence_name") == sequence]
    if not frames:
        raise SceneError(f"{cat / 'frame_annotations.jgz'}: no frames for sequence {sequence!r}")
    frames.sort(key=lambda a: a["frame_number"])
    seqs = [s for s in read_jgz(cat / "sequence_annotations.jgz") if s.get("sequence_name") == sequence]
    cams = [viewpoint_to_camera(a["viewpoint"], a["image"]["size"], f"{sequence} frame {a['frame_number']}") for a in frames]
    pc = None
    if seqs and seqs[0].get("point_cloud"):
        pc = Path(root) / seqs[0]["point_cloud"]["path"]
    return {"category": category, "sequence": sequence, "cameras": cams,
            "frame_numbers": [int(a["frame_number"]) for a in frames],
            "images": [str(Path(root) / a["image"]["path"]) for a in frames], "point_cloud": pc}


def read_point_cloud(path: str | os.PathLike) -> np.ndarray:
    """xyz [N, 3] float64 from a PLY point cloud (vertex x, y, z; other properties ignored), through
    Vantage's one PLY parser (:func:`scenes.ply.read_vertices`)."""
    _, cols, _ = read_vertices(path, ["x", "y", "z"], what="a point cloud with x y z")
    return np.stack([np.asarray(cols[k], np.float64) for k in ("x", "y", "z")], 1)


def alignment(cameras: list[Camera], points: np.ndarray) -> np.ndarray:
    """4×4 rigid transform from the CO3D world to Vantage's: mean camera up → +z, object centre → origin,
    ground (2nd percentile of heights) → z = 0."""
    ups = np.array([-c.w2c[1, :3] for c in cameras])  # camera −y axis in world coordinates
    up = ups.mean(0)
    up /= np.linalg.norm(up)
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(up, z)
    c = float(up @ z)
    if np.linalg.norm(v) < 1e-9:
        rot = np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    else:
        vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
        rot = np.eye(3) + vx + vx @ vx / (1 + c)
    p = points @ rot.T
    centre = np.median(p, axis=0)
    ground = np.percentile(p[:, 2], 2)
    t = np.eye(4)
    t[:3, :3] = rot
    t[:3, 3] = -np.array([centre[0], centre[1], ground])
    return t


def fit_orbit(cameras: list[Camera], target, fov_deg: float):
    """An orbit (Vantage frame) matching a recorded camera path: median radius and height around target."""
    eyes = np.array([c.center for c in cameras])
    rel = eyes[:, :2] - np.asarray(target[:2])
    az = np.degrees(np.unwrap(np.arctan2(rel[:, 1], rel[:, 0])))
    return OrbitTrajectory(target=tuple(float(v) for v in target), radius=float(np.median(np.linalg.norm(rel, axis=1))),
                           height=float(np.median(eyes[:, 2])), radius_amp=0.0, height_amp=0.0,
                           start_deg=float(az[0]), sweep_deg=float(az[-1] - az[0]), fov_deg=fov_deg)


def load_co3d_scene(spec_path: str | os.PathLike):
    """A :class:`scenes.scene.Scene` from a CO3D scene spec (see module docstring)."""
    spec_path = Path(spec_path)
    text = spec_path.read_text()
    try:
        if spec_path.suffix in (".yaml", ".yml"):
            import yaml

            spec = yaml.safe_load(text)
        else:
            spec = json.loads(text)
    except Exception as e:  # noqa: BLE001
        raise SceneError(f"{spec_path}: cannot parse the scene spec ({type(e).__name__}: {e})") from None
    missing = [k for k in ("splat", "co3d_root", "category", "sequence") if k not in (spec or {})]
    if missing:
        raise SceneError(f"{spec_path}: scene spec lacks {missing}")
    base = spec_path.parent
    splat = Path(spec["splat"]) if Path(spec["splat"]).is_absolute() else base / spec["splat"]
    root = Path(spec["co3d_root"]) if Path(spec["co3d_root"]).is_absolute() else base / spec["co3d_root"]
    seq = load_sequence(root, spec["category"], str(spec["sequence"]))
    g = load_scene_file(splat)
    to_co3d = np.asarray(spec.get("splat_to_co3d", np.eye(4)), np.float64)
    if seq["point_cloud"] is not None and Path(seq["point_cloud"]).exists():
        pts = read_point_cloud(seq["point_cloud"])
    else:
        w = g.in_world() if g.world_transform is not None else g
        pts = (w.means.astype(np.float64) @ to_co3d[:3, :3].T + to_co3d[:3, 3])[w.opacities > 0.5]
    align = alignment(seq["cameras"], pts)
    # metric scale: CO3D's reconstructions have arbitrary units; the object's height (95th percentile of the
    # point heights above the ground) is set to the spec's object_height_m, else its category's typical height
    p = pts @ align[:3, :3].T + align[:3, 3]
    height = float(np.percentile(p[:, 2], 95))
    target_h = spec.get("object_height_m") or CATEGORY_HEIGHTS_M.get(str(spec["category"]))
    scale = float(target_h) / height if target_h and height > 0 else 1.0
    align = np.diag([scale, scale, scale, 1.0]) @ align
    to_world = align @ to_co3d @ (g.world_transform if g.world_transform is not None else np.eye(4))
    g.world_transform = to_world
    cams = [_moved_camera(c, align) for c in seq["cameras"]]
    p = p * scale
    lo, hi = np.percentile(p, 5, axis=0), np.percentile(p, 95, axis=0)
    lo[2] = 0.0
    target = ((lo + hi) / 2).tolist()
    fov = float(np.median([c.fov_x_deg for c in cams]))
    name = spec.get("name") or f"{spec['category']}_{spec['sequence']}"
    meta = {"file": str(splat), "category": spec["category"], "co3d_sequence": str(spec["sequence"]),
            "object_bounds": [lo.tolist(), hi.tolist()], "alignment": align.tolist(), "scale": scale,
            "height_source": ("spec" if spec.get("object_height_m") else f"category:{spec['category']}") if target_h
            else "co3d units (unknown category: give object_height_m)",
            "recorded_cameras": [c.as_row() for c in cams], "frame_numbers": seq["frame_numbers"]}
    return Scene(name, g, fit_orbit(cams, target, fov), (0.0, 0.0, 0.0), metadata=meta)


def _moved_camera(cam: Camera, sim: np.ndarray) -> Camera:
    """``cam`` after its world is moved by the similarity ``sim`` (rotation × uniform scale + translation): the
    same image of the moved scene (the camera turns with the rotation; its centre moves with the scale)."""
    s = float(np.cbrt(np.linalg.det(sim[:3, :3])))
    r = sim[:3, :3] / s
    w2c = np.eye(4)
    w2c[:3, :3] = cam.w2c[:3, :3] @ r.T
    w2c[:3, 3] = -w2c[:3, :3] @ (sim[:3, :3] @ cam.center + sim[:3, 3])
    return dataclasses.replace(cam, w2c=w2c)


def square_crop(cam: Camera, size: int) -> Camera:
    """Centre-crop a camera to a square of its shorter side, then scale to ``size`` pixels."""
    side = min(cam.width, cam.height)
    s = size / side
    return Camera(size, size, cam.fx * s, cam.fy * s, (cam.cx - (cam.width - side) / 2) * s,
                  (cam.cy - (cam.height - side) / 2) * s, cam.w2c)


__all__ = ["alignment", "fit_orbit", "load_co3d_scene", "load_sequence", "read_jgz", "square_crop",
           "viewpoint_to_camera"]
