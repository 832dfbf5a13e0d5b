"""The canonical frame of scenes loaded from files (scenes/canonical.py, scenes/capture.py).

Catalogue scenes (whose true frame is known) are moved by a random rotation, scale and translation, written
without a sidecar, loaded back and must come out upright (up within 2°), on the ground (within 1% of the
object's height), and give the same VPT and depth labels for the same physical placements."""
import dataclasses
import math

import numpy as np
import pytest

from scenes.canonical import CanonicalFrame, FrameHints, estimate_frame, ransac_planes
from scenes.catalogue import build
from scenes.gaussians import GaussianScene, SceneError
from scenes.load import load_scene
from scenes.ply import write_ply
from tasks.labels import LabelRules, depth_order, vpt_label
from tasks.placement import sample_placement


def random_similarity(seed: int) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    t = np.eye(4)
    t[:3, :3] = rng.uniform(0.3, 3.0) * Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
    t[:3, 3] = rng.normal(0, 5, 3)
    return t


def moved(scene, t: np.ndarray) -> GaussianScene:
    g = scene.gaussians
    return GaussianScene(g.means, g.quats, g.log_scales, g.opacity_logits, g.sh, world_transform=t,
                         source="moved").in_world()


def object_height(scene) -> float:
    lo, hi = scene.object_bounds
    return float(hi[2] - max(lo[2], 0.0))


def map_placement(pl, c: np.ndarray):
    """A placement of the original frame in the canonical one (``c``: original → canonical similarity)."""
    s = float(np.cbrt(np.linalg.det(c[:3, :3])))
    r = c[:3, :3] / s
    turn = math.degrees(math.atan2(r[1, 0], r[0, 0]))
    obs = dataclasses.replace(pl.observer, position=tuple(c[:3, :3] @ pl.observer.position + c[:3, 3]),
                              yaw_deg=pl.observer.yaw_deg + turn, size=pl.observer.size * s)
    tgt = dataclasses.replace(pl.target, position=tuple(c[:3, :3] @ pl.target.center + c[:3, 3]), size=pl.target.size * s)
    return dataclasses.replace(pl, observer=obs, target=tgt)


@pytest.mark.parametrize("name,seed", [("hydrant_02", 1), ("bench_01", 2), ("umbrella_03", 4),
                                       pytest.param("car_02", 3, marks=pytest.mark.slow),
                                       pytest.param("laptop_01", 5, marks=pytest.mark.slow),
                                       pytest.param("chair_04", 6, marks=pytest.mark.slow)])
def test_random_similarity_is_undone(name, seed):
    sc = build(name)
    t = random_similarity(seed)
    h = object_height(sc)
    fr, keep = estimate_frame(moved(sc, t), hints=FrameHints(object_height_m=h))
    c = fr.transform @ t  # original → file → canonical: should be a turn about +z and a shift
    s = float(np.cbrt(np.linalg.det(c[:3, :3])))
    up = (c[:3, :3] / s) @ [0, 0, 1.0]
    assert math.degrees(math.acos(min(1.0, up[2]))) < 2.0, f"up off by {math.degrees(math.acos(min(1, up[2]))):.2f} deg"
    ground = c @ np.array([[x, y, 0.0, 1.0] for x in (-2, 0, 2) for y in (-2, 0, 2)]).T
    assert np.abs(ground[2]).max() < 0.01 * h, "the ground lands at z = 0"
    assert abs(s - 1) < 0.01, f"metric scale from the object's height: {s:.4f}"
    assert fr.up_source == "ground_plane" and fr.ground_kind == "captured" and not fr.add_ground
    assert keep.mean() > 0.99, "a catalogue scene has no floaters"


def test_labels_survive_the_round_trip(tmp_path):
    """Same placements (mapped by the recovered frame) → same VPT labels (ray cast on the loaded scene's proxy +
    render check) and depth order as on the original scene's exact geometry."""
    name = "hydrant_02"
    sc = build(name)
    t = random_similarity(11)
    path = tmp_path / "moved.ply"
    write_ply(moved(sc, t), path)
    loaded = load_scene(str(path), frame={"object_height_m": object_height(sc)})
    c = np.asarray(loaded.metadata["canonical"]["transform"]) @ t
    rules = LabelRules()
    rng = np.random.default_rng(0)
    agree = defined = 0
    for i in range(9):
        pl, _ = sample_placement(sc, ("visible", "occluded", "out_of_view")[i % 3], rng, rules=rules)
        a = vpt_label(sc, pl.observer, pl.target, rules, support=None)
        m = map_placement(pl, c)
        b = vpt_label(loaded, m.observer, m.target, rules, support=None)
        if a["vpt_label"] is not None and b["vpt_label"] is not None:
            defined += 1
            agree += int(a["vpt_label"] == b["vpt_label"])
        for eye in sc.trajectory.cameras(4):
            e2 = c[:3, :3] @ eye.center + c[:3, 3]
            assert depth_order(eye.center, pl.observer, pl.target)["depth_label"] == \
                depth_order(e2, m.observer, m.target)["depth_label"]
    assert defined >= 8 and agree == defined, f"{agree}/{defined} VPT labels agree"


def test_loaded_scene_records_its_frame(tmp_path):
    sc = build("plant_02")
    t = random_similarity(3)
    path = tmp_path / "plant.ply"
    write_ply(moved(sc, t), path)
    loaded = load_scene(str(path))
    can = loaded.metadata["canonical"]
    assert can["up_source"] == "ground_plane" and can["height_source"] == "category:plant"
    assert np.allclose(np.asarray(can["transform"])[3], [0, 0, 0, 1]) and loaded.metadata["file_sha256"]
    # z up, ground at 0, object at the origin
    lo, hi = loaded.object_bounds
    assert abs((lo[0] + hi[0]) / 2) < 0.05 and abs((lo[1] + hi[1]) / 2) < 0.05 and lo[2] == 0.0
    z = loaded.gaussians.means[:, 2]
    assert np.percentile(z, 5) > -0.02
    # the hints override the estimate, and the sidecar's frame is read
    import json

    (tmp_path / "plant.ply.json").write_text(json.dumps({"frame": {"object_height_m": 2.0}}))
    again = load_scene(str(path))
    assert again.metadata["canonical"]["height_source"] == "override"
    assert abs(again.object_bounds[1][2] - 2.0) < 1e-6


def test_cut_out_object_gets_a_ground_disc(tmp_path):
    """An object without any ground (the catalogue's object alone, like a cut-out capture) is stood on an added
    textured disc at its base; its up comes from the convention prior (-y) when nothing says otherwise."""
    from scenes.surface import Part, parts_to_gaussians

    sc = build("hydrant_03")
    g = parts_to_gaussians([Part(sc.meshes["object"], (0.6, 0.2, 0.1), spacing=0.01)], np.random.default_rng(0))
    to_inria = np.eye(4)
    to_inria[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]  # +z up → -y up, as COLMAP/INRIA files are
    path = tmp_path / "cutout.ply"
    write_ply(dataclasses.replace(g, world_transform=to_inria).in_world(), path)
    loaded = load_scene(str(path))
    can = loaded.metadata["canonical"]
    assert can["up_source"] in ("convention", "support_plane") and can["add_ground"]
    assert np.allclose(can["up_file"], [0, -1, 0], atol=0.02)
    assert "ground" in loaded.meshes and loaded.metadata["added_ground"]["gaussians"] > 10_000
    z = loaded.gaussians.means[: loaded.metadata["file_gaussians"], 2]
    assert abs(np.percentile(z, 0.2)) < 0.02, "the object stands on the disc"


def test_bad_hints_are_named():
    with pytest.raises(SceneError, match=r"frame.up='sideways'"):
        FrameHints.from_dict({"up": "sideways"})
    with pytest.raises(SceneError, match=r"frame.object_height_m=-1"):
        FrameHints.from_dict({"object_height_m": -1})
    with pytest.raises(SceneError, match=r"unknown key\(s\) \['colour'\]"):
        FrameHints.from_dict({"colour": 1})
    with pytest.raises(SceneError, match="not a similarity"):
        FrameHints.from_dict({"transform": [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]})


def test_ransac_finds_a_plane_among_clutter():
    rng = np.random.default_rng(0)
    n = np.array([0.3, -0.2, 0.93])
    n /= np.linalg.norm(n)
    a = np.cross(n, [1, 0, 0])
    a /= np.linalg.norm(a)
    b = np.cross(n, a)
    plane = rng.uniform(-3, 3, (5000, 2)) @ np.stack([a, b]) + 1.5 * n
    clutter = rng.normal(0, 1, (3000, 3)) + 3 * n
    planes = ransac_planes(np.vstack([plane, clutter]), 0.02, rng)
    assert abs(abs(planes[0]["normal"] @ n) - 1) < 1e-6 and planes[0]["share"] > 0.6


def test_inria_convention_with_a_tilted_ground_and_cameras(tmp_path):
    """An INRIA-frame capture (up ≈ -y, here tilted 35° as a camera pitched down makes it): the captured ground
    within 60° of the convention is taken; with an INRIA cameras.json beside the file, its cameras give up and
    the object's centre, refined by the ground plane."""
    import json

    from scipy.spatial.transform import Rotation

    sc = build("couch_02")
    to_inria = np.eye(4)
    to_inria[:3, :3] = Rotation.from_euler("x", -90 - 35, degrees=True).as_matrix() * 1.7
    to_inria[:3, 3] = [0.3, -0.2, 2.0]
    up_file = to_inria[:3, :3] @ [0, 0, 1.0] / 1.7
    path = tmp_path / "point_cloud" / "iteration_30000" / "point_cloud.ply"
    path.parent.mkdir(parents=True)
    write_ply(moved(sc, to_inria), path)
    fr = load_scene(str(path)).metadata["canonical"]
    assert fr["up_source"] == "ground_plane" and np.degrees(np.arccos(np.dot(fr["up_file"], up_file))) < 0.5
    # the INRIA trainer's cameras.json two folders up: camera-to-world rotation (rows) and position
    cams = []
    for cam in sc.trajectory.cameras(12, 64, 64):
        c2w = to_inria @ np.vstack([np.hstack([cam.c2w[:3, :3] * 1.0, cam.c2w[:3, 3:]]), [0, 0, 0, 1]])
        rot = c2w[:3, :3] / 1.7
        cams.append({"id": len(cams), "img_name": f"{len(cams):05d}", "width": 64, "height": 64,
                     "position": c2w[:3, 3].tolist(), "rotation": rot.tolist(), "fx": cam.fx, "fy": cam.fy})
    (tmp_path / "cameras.json").write_text(json.dumps(cams))
    import scenes.load

    scenes.load._CACHE.clear()
    loaded = load_scene(str(path))
    fr = loaded.metadata["canonical"]
    assert fr["up_source"] == "cameras+ground" and loaded.metadata["cameras_file"].endswith("cameras.json")
    assert np.degrees(np.arccos(np.dot(fr["up_file"], up_file))) < 0.5
    # the reference orbit follows the recorded cameras (catalogue orbit: ~1.2-1.7 m high around the object)
    assert 1.0 < loaded.trajectory.height < 2.0


def test_a_scene_without_structure_is_refused_by_the_cli(tmp_path, python_m):
    """A scene whose frame cannot be estimated (too few opaque Gaussians) renders in its file's frame, but props
    are refused: one error line naming the reason, exit 2, and no output folder (``python -m render.trajectory``
    forked from a warm server, tests/conftest.py: python_m)."""
    import os
    from pathlib import Path

    rng = np.random.default_rng(0)
    g = GaussianScene(rng.normal(size=(60, 3)), rng.normal(size=(60, 4)), np.full((60, 3), -3.0),
                      np.full(60, -4.0), rng.normal(size=(60, 1, 3)))
    write_ply(g, tmp_path / "faint.ply")
    root = Path(__file__).resolve().parents[1]
    r = python_m("render.trajectory", f"scene={tmp_path / 'faint.ply'}", f"out={tmp_path / 'out'}", "frames=2",
                 "props=sample", cwd=root,
                 env={**os.environ, "PYTHONPATH": str(root), "VANTAGE_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("error:") and "faint.ply" in r.stderr and "opacity" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("suffix", [".ply", ".splat"])
def test_random_similarity_is_undone_through_a_file(tmp_path, suffix):
    """The same through a file without sidecar, INRIA .ply (exact) and antimatter15 .splat (quantised colours,
    opacities and quaternions): loaded by load_scene, upright within 2°, ground within 1% of the height."""
    from scenes.formats import write_scene_file

    sc = build("bench_02")
    t = random_similarity(21)
    h = object_height(sc)
    path = tmp_path / f"bench{suffix}"
    write_scene_file(moved(sc, t), path)
    loaded = load_scene(str(path), frame={"object_height_m": h})
    c = np.asarray(loaded.metadata["canonical"]["transform"]) @ t
    s = float(np.cbrt(np.linalg.det(c[:3, :3])))
    up = (c[:3, :3] / s) @ [0, 0, 1.0]
    assert math.degrees(math.acos(min(1.0, up[2]))) < 2.0
    ground = c @ np.array([[x, y, 0.0, 1.0] for x in (-2, 0, 2) for y in (-2, 0, 2)]).T
    assert np.abs(ground[2]).max() < 0.01 * h
    assert loaded.metadata["format"] == {".ply": "inria-3dgs-ply", ".splat": "splat"}[suffix]
