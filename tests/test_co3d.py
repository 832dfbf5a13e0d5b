"""CO3D v2 conversion and scene specs, on a CO3D-format fixture the test writes itself."""
import gzip
import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from render import splat
from scenes.camera import Camera
from scenes.co3d import load_sequence, read_jgz, square_crop, viewpoint_to_camera
from scenes.gaussians import SceneError
from scenes.ply import write_ply
from scenes.load import load_scene
from tests.conftest import random_scene


def hand_projection(X, R, T, focal, pp, H, W, fmt):
    """PyTorch3D by hand: row-vector camera transform, NDC with +X left / +Y up, then pixels."""
    Xc = np.asarray(X) @ np.asarray(R) + np.asarray(T)
    x_ndc = focal[0] * Xc[0] / Xc[2] + pp[0]
    y_ndc = focal[1] * Xc[1] / Xc[2] + pp[1]
    sx, sy = (min(H, W) / 2, min(H, W) / 2) if fmt == "ndc_isotropic" else (W / 2, H / 2)
    return np.array([W / 2 - x_ndc * sx, H / 2 - y_ndc * sy]), Xc[2]


@pytest.mark.parametrize("fmt", ["ndc_isotropic", "ndc_norm_image_bounds"])
def test_viewpoint_conversion_matches_hand_projection(fmt):
    R = Rotation.from_euler("xyz", [10, -35, 5], degrees=True).as_matrix()
    T = [0.2, -0.1, 4.0]
    vp = {"R": R.tolist(), "T": T, "focal_length": [1.8, 1.7], "principal_point": [0.05, -0.08], "intrinsics_format": fmt}
    H, W = 300, 400
    cam = viewpoint_to_camera(vp, [H, W])
    rng = np.random.default_rng(0)
    for X in rng.normal(0, 0.7, (20, 3)):
        want_uv, want_z = hand_projection(X, R, T, vp["focal_length"], vp["principal_point"], H, W, fmt)
        uv, z = cam.project(X[None])
        np.testing.assert_allclose(uv[0], want_uv, atol=1e-9)
        np.testing.assert_allclose(z[0], want_z, atol=1e-12)
    s = 150 if fmt == "ndc_isotropic" else None
    if s:
        assert cam.fx == pytest.approx(1.8 * 150) and cam.cx == pytest.approx(200 - 0.05 * 150)
    else:
        assert cam.fx == pytest.approx(1.8 * 200) and cam.fy == pytest.approx(1.7 * 150)


def _write_jgz(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(obj, f)


def _p3d_viewpoint(cam: Camera, fmt="ndc_isotropic"):
    """Our camera → a CO3D viewpoint (the inverse of the documented conversion), for the fixture."""
    F = np.diag([-1.0, -1.0, 1.0])
    R = (F @ cam.w2c[:3, :3]).T
    T = F @ cam.w2c[:3, 3]
    s = min(cam.width, cam.height) / 2
    return {"R": R.tolist(), "T": T.tolist(), "focal_length": [cam.fx / s, cam.fy / s],
            "principal_point": [(cam.width / 2 - cam.cx) / s, (cam.height / 2 - cam.cy) / s], "intrinsics_format": fmt}


@pytest.fixture
def co3d_fixture(tmp_path):
    """A CO3D-like dataset in a tilted world frame (up = a rotated axis), one sequence of 8 frames."""
    tilt = np.eye(4)
    tilt[:3, :3] = Rotation.from_euler("xyz", [70, 20, -30], degrees=True).as_matrix()
    tilt[:3, 3] = [0.3, -0.2, 1.0]
    root = tmp_path / "co3d"
    frames = []
    for i in range(8):
        a = 2 * np.pi * i / 8
        eye = [2.5 * np.cos(a), 2.5 * np.sin(a), 1.2]
        cam_z = Camera(320, 240, 260.0, 260.0, 160.0, 120.0).looking_at(eye, [0, 0, 0.3])  # z-up frame
        cam = Camera(320, 240, 260.0, 260.0, 160.0, 120.0, cam_z.w2c @ np.linalg.inv(tilt))  # tilted frame
        img = root / "hydrant" / "1_1" / "images" / f"frame{i:06d}.jpg"
        img.parent.mkdir(parents=True, exist_ok=True)
        img.write_bytes(b"")
        frames.append({"sequence_name": "1_1", "frame_number": i, "frame_timestamp": i / 30,
                       "image": {"path": f"hydrant/1_1/images/frame{i:06d}.jpg", "size": [240, 320]},
                       "viewpoint": _p3d_viewpoint(cam), "meta": {}})
    frames.append({**frames[0], "sequence_name": "2_2"})
    _write_jgz(root / "hydrant" / "frame_annotations.jgz", frames[::-1])
    _write_jgz(root / "hydrant" / "sequence_annotations.jgz", [
        {"sequence_name": "1_1", "category": "hydrant", "viewpoint_quality_score": 1.0,
         "point_cloud": {"path": "hydrant/1_1/pointcloud.ply", "quality_score": 1.0, "n_points": 500}}])
    rng = np.random.default_rng(1)
    pts = np.concatenate([rng.uniform([-0.3, -0.3, 0.0], [0.3, 0.3, 0.8], (400, 3)),
                          np.c_[rng.uniform(-1, 1, (100, 2)), np.zeros(100)]])  # object + ground patch
    pts_t = pts @ tilt[:3, :3].T + tilt[:3, 3]
    from plyfile import PlyData, PlyElement

    v = np.array([tuple(p) for p in pts_t], dtype=[("x", "f4"), ("y", "f4"), ("z", "f4")])
    PlyData([PlyElement.describe(v, "vertex")]).write(str(root / "hydrant" / "1_1" / "pointcloud.ply"))
    return root, tilt


def test_load_sequence_sorted_and_converted(co3d_fixture):
    root, tilt = co3d_fixture
    seq = load_sequence(root, "hydrant", "1_1")
    assert seq["frame_numbers"] == list(range(8))
    assert seq["point_cloud"].name == "pointcloud.ply"
    # cameras look at the tilted image of (0, 0, 0.3)
    target = tilt[:3, :3] @ [0, 0, 0.3] + tilt[:3, 3]
    for cam in seq["cameras"]:
        uv, _ = cam.project(target[None])
        np.testing.assert_allclose(uv[0], [160, 120], atol=1e-6)
    with pytest.raises(SceneError, match="no frames for sequence '9_9'"):
        load_sequence(root, "hydrant", "9_9")


def test_scene_spec_aligns_to_z_up_and_keeps_images(co3d_fixture, tmp_path):
    root, tilt = co3d_fixture
    g = random_scene(1500, degree=1, seed=2, spread=0.3, center=(0, 0, 0.4))
    # the splat lives in the tilted CO3D frame
    g_t = g.__class__(g.means, g.quats, g.log_scales, g.opacity_logits, g.sh, world_transform=tilt).in_world()
    write_ply(g_t, tmp_path / "splat.ply")
    spec = tmp_path / "scene.yaml"
    spec.write_text(f"splat: splat.ply\nco3d_root: {root}\ncategory: hydrant\nsequence: '1_1'\n")
    sc = load_scene(str(spec))
    assert sc.name == "hydrant_1_1" and len(sc.metadata["recorded_cameras"]) == 8
    # aligned: the recorded eyes are 1.2 m above the ground plane and the object is at the origin
    eyes = np.array([Camera.from_row(r).center for r in sc.metadata["recorded_cameras"]])
    np.testing.assert_allclose(eyes[:, 2], 1.2, atol=0.05)
    lo, hi = np.asarray(sc.metadata["object_bounds"])
    assert abs((lo[0] + hi[0]) / 2) < 0.1 and abs((lo[1] + hi[1]) / 2) < 0.1 and lo[2] == 0
    # metres: the object's height is the hydrant category's (CO3D units are arbitrary)
    assert hi[2] == pytest.approx(0.75) and sc.metadata["height_source"] == "category:hydrant"
    assert sc.trajectory.radius == pytest.approx(2.5, rel=0.05)
    # rendering the aligned scene from an aligned recorded camera == rendering the CO3D-frame splat
    # from the camera the annotations describe (alignment is rigid; SH degree 1 rotates along)
    seq = load_sequence(root, "hydrant", "1_1")
    a = splat(g_t, square_crop(seq["cameras"][3], 64), backend="cpu")
    b = splat(sc.gaussians, square_crop(Camera.from_row(sc.metadata["recorded_cameras"][3]), 64), backend="cpu")
    assert a.alpha.mean() > 0.05
    assert np.abs(a.rgb - b.rgb).max() < 3e-3


def test_bad_annotation_files(tmp_path):
    (tmp_path / "x.jgz").write_bytes(b"not gzip")
    with pytest.raises(SceneError, match="not a gzipped JSON annotation file"):
        read_jgz(tmp_path / "x.jgz")
    with pytest.raises(SceneError, match="intrinsics_format 'pixels' unknown"):
        viewpoint_to_camera({"R": np.eye(3).tolist(), "T": [0, 0, 1], "focal_length": [1, 1],
                             "principal_point": [0, 0], "intrinsics_format": "pixels"}, [10, 10])
    with pytest.raises(SceneError, match="malformed viewpoint"):
        viewpoint_to_camera({"R": np.eye(3).tolist()}, [10, 10])
    spec = tmp_path / "s.yaml"
    spec.write_text("splat: a.ply\n")
    with pytest.raises(SceneError, match=r"scene spec lacks \['co3d_root', 'category', 'sequence'\]"):
        load_scene(str(spec))
