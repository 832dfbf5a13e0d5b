"""End-to-end: the CLIs as a user runs them (subprocess, Hydra overrides), and their outputs."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from render import splat
from scenes.camera import Camera
from infra.outputs import OutputConflict
from tasks.trajectory import render_trajectory
from scenes.load import load_scene


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_trajectory_cli_end_to_end(tmp_path):
    r = run("render.trajectory", "scene=plant_02", "frames=4", "size=96", "out=traj", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "traj"
    pngs = sorted(out.glob("frame_*.png"))
    assert [p.name for p in pngs] == [f"frame_{i:04d}.png" for i in range(4)]
    assert not list(out.glob(".*tmp*")), "no temporary files left behind"
    df = pd.read_csv(out / "cameras.csv")
    cols = ["frame", "file_name", "width", "height", "fx", "fy", "cx", "cy"] + [f"w2c_{i}{j}" for i in range(4) for j in range(4)]
    assert list(df.columns) == cols
    pq = pd.read_parquet(out / "cameras.parquet")
    assert pq["frame"].dtype == "int32" and len(pq) == 4
    # Any frame can be re-rendered from its row and matches the PNG.
    sc = load_scene("plant_02")
    cam = Camera.from_row(df.iloc[2])
    img = splat(sc.gaussians, cam, background=sc.background, backend="cpu").image_uint8()
    np.testing.assert_array_equal(img, np.asarray(Image.open(out / df.file_name[2])))
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["config"]["scene"] == "plant_02" and run_info["scene_metadata"]["category"] == "plant"


def test_trajectory_resume_and_conflict(tmp_path):
    out = render_trajectory("suitcase_01", tmp_path / "t", frames=3, size=32, progress=False)
    first = (out / "frame_0001.png").read_bytes()
    (out / "frame_0001.png").unlink()
    mtime0 = (out / "frame_0000.png").stat().st_mtime_ns
    render_trajectory("suitcase_01", tmp_path / "t", frames=3, size=32, progress=False)
    assert (out / "frame_0001.png").read_bytes() == first, "deterministic re-render of the missing frame"
    assert (out / "frame_0000.png").stat().st_mtime_ns == mtime0, "existing frames are kept"
    with pytest.raises(OutputConflict, match="different configuration"):
        render_trajectory("suitcase_01", tmp_path / "t", frames=4, size=32, progress=False)
    render_trajectory("suitcase_01", tmp_path / "t", frames=2, size=32, progress=False, overwrite=True)
    assert len(list(out.glob("frame_*.png"))) == 2


def test_export_then_render_from_ply(tmp_path):
    r = run("scenes.export", "name=couch_03", "out=couch.ply", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "couch.ply").exists() and (tmp_path / "couch.ply.json").exists()
    a = render_trajectory(str(tmp_path / "couch.ply"), tmp_path / "a", frames=2, size=48, progress=False)
    b = render_trajectory("couch_03", tmp_path / "b", frames=2, size=48, progress=False)
    for name in ("frame_0000.png", "frame_0001.png"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), "the .ply + sidecar reproduce the catalogue scene"
    # Re-render from a recorded cameras.csv.
    c = render_trajectory("couch_03", tmp_path / "c", cameras=str(b / "cameras.csv"), size=48, progress=False)
    assert (c / "frame_0001.png").read_bytes() == (b / "frame_0001.png").read_bytes()


def test_export_list_and_bad_scene(tmp_path):
    r = run("scenes.export", "--list", cwd=tmp_path)
    assert r.returncode == 0 and len(r.stdout.split()) == 40
    r = run("render.trajectory", "scene=bench_09", "frames=1", "size=16", "out=x", cwd=tmp_path)
    assert r.returncode != 0 and "unknown catalogue scene 'bench_09'" in r.stderr


def test_trajectory_with_props_writes_labels(tmp_path):
    r = run("render.trajectory", "scene=hydrant_03", "props=explicit", "props.observer.position=[1.2,0.0]",
            "props.observer.yaw_deg=180", "props.target.position=[-1.0,0.2]", "frames=6", "size=96", "out=lab",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "lab"
    df = pd.read_parquet(out / "labels.parquet")
    assert len(df) == 6 and (df.file_name == [f"frame_{i:04d}.png" for i in range(6)]).all()
    for col in ["frame", "file_name", "fx", "w2c_23", "observer_x", "observer_yaw_deg", "observer_size", "ball_x",
                "ball_size", "visible_fraction_raycast", "visible_fraction_render", "depth_gap", "vpt_label",
                "vpt_reason", "depth_label", "depth_reason", "ball_visible_fraction", "keep", "drop_reason",
                "label_rule_version", "seed"]:
        assert col in df.columns, col
    assert str(df.vpt_label.dtype) == "Int8" and str(df.keep.dtype) == "boolean"
    # Hydrant between observer and ball: occluded, confirmed by the render check.
    assert (df.vpt_label == 0).all() and (df.vpt_reason == "occluded").all()
    assert df.visible_fraction_raycast.iloc[0] == 0.0
    csv = pd.read_csv(out / "labels.csv")
    assert len(csv) == 6
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["label_rules"]["version"] == df.label_rule_version.iloc[0]
    # An independent recomputation of the depth label from the recorded poses.
    from scenes.props import Observer, Target
    from tasks.labels import depth_order

    row = df.iloc[3]
    cam = Camera.from_row(row)
    obs = Observer((row.observer_x, row.observer_y, row.observer_z), row.observer_yaw_deg, size=row.observer_size)
    ball = Target((row.ball_x, row.ball_y, row.ball_z), size=row.ball_size)
    d = depth_order(cam.center, obs, ball)
    assert d["depth_gap"] == pytest.approx(row.depth_gap) and (d["depth_label"] is None) == pd.isna(row.depth_label)


def test_trajectory_with_sampled_props_resumes(tmp_path):
    kw = dict(frames=4, size=64, progress=False, props={"mode": "sample", "outcome": "visible", "seed": 5})
    out = render_trajectory("bench_03", tmp_path / "s", **kw)
    first = pd.read_parquet(out / "labels.parquet")
    (out / "frame_0002.png").unlink()
    render_trajectory("bench_03", tmp_path / "s", **kw)
    again = pd.read_parquet(out / "labels.parquet")
    pd.testing.assert_frame_equal(first, again)
    assert (first.vpt_label == 1).all()


def test_sampled_props_use_the_matched_design_with_stands(tmp_path):
    """props=sample draws from the 3D-PC build's distribution (tasks.placement.sample_outcome): an occluded ball
    behind a thin bench, which the ground-only legacy design could not find, and the stands are part of the
    scene — splatted into the frames (pixels differ from a render without them) and recorded in the labels."""
    from tasks.labels import label_frame
    from tasks.placement import placement_from_config, staged_scene

    props = {"mode": "sample", "outcome": "occluded", "seed": 0}
    out = render_trajectory("bench_01", tmp_path / "o", frames=2, size=64, progress=False, props=props)
    df = pd.read_parquet(out / "labels.parquet")
    assert (df.vpt_label == 0).all() and (df.vpt_reason == "occluded").all()
    sc = load_scene("bench_01")
    pl, rules, _ = placement_from_config(sc, props)
    assert pl.supports and set(df.ball_support_kind) == {pl.target_support.kind if pl.target_support else "ground"}
    staged = staged_scene(sc, pl)
    assert len(staged.gaussians) > len(sc.gaussians)
    cam = Camera.from_row(pd.read_parquet(out / "cameras.parquet").iloc[0])
    frame = np.asarray(Image.open(out / "frame_0000.png"))
    with_stands = label_frame(staged, pl, cam, {}, rules)[0]
    without = label_frame(sc, pl, cam, {}, rules)[0]
    np.testing.assert_array_equal(frame, with_stands)
    assert np.abs(frame.astype(int) - without).max() > 50
    # the legacy (ground-only) design stays reachable; a bad design or outcome is named before anything is written
    with pytest.raises(ValueError, match="props.design='ground'"):
        render_trajectory("bench_01", tmp_path / "x", frames=2, size=64, progress=False,
                          props={**props, "design": "ground"})
    with pytest.raises(ValueError, match="props.outcome='hidden'"):
        render_trajectory("bench_01", tmp_path / "x", frames=2, size=64, progress=False,
                          props={**props, "outcome": "hidden"})
    assert not (tmp_path / "x").exists()
    legacy, _, _ = placement_from_config(load_scene("hydrant_02"), {**props, "design": "legacy"})
    assert legacy.supports == ()
