"""Real trained captures (../shared/data/real-scenes: a guitar on a stand as PlayCanvas compressed PLY, three
statues on pedestals as SOG v2; all in the INRIA frame, up = -y, arbitrary units, no ground) through the whole
pipeline: canonical frame, props, labels, trajectories and a 3D-PC build. Skipped when the folder is absent."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shared_data import shared_data

ROOT = Path(__file__).resolve().parents[1]
REAL = shared_data() / "real-scenes"
SCENES = ["guitar.compressed.ply", "statue_narcissus.sog", "statue_angel-kneeling.sog", "statue_st-peter.sog"]

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"real scenes not found at {REAL} (../shared/data absent)")


@pytest.mark.parametrize("name", SCENES)
def test_real_capture_is_upright_on_a_ground(name):
    from scenes.canonical import fit_plane, ransac_planes
    from scenes.load import load_scene

    sc = load_scene(str(REAL / name))
    can = sc.metadata["canonical"]
    # no cameras, no captured ground: the INRIA convention, then a ground disc under the object's base
    assert can["up_source"] in ("convention", "support_plane")
    assert np.degrees(np.arccos(np.dot(can["up_file"], [0, -1, 0]))) < 3
    assert can["add_ground"] and "ground" in sc.meshes
    lo, hi = np.asarray(sc.object_bounds)
    assert lo[2] == 0 and abs(hi[2] - can["object_height_m"]) < 1e-6
    assert max(hi[:2] - lo[:2]) < 0.8 * hi[2], "guitar and statues are taller than wide once upright"
    g = sc.gaussians
    obj = g.means[: sc.metadata["file_gaussians"]][g.opacities[: sc.metadata["file_gaussians"]] > 0.35].astype(float)
    assert np.percentile(obj[:, 2], 0.5) > -0.03, "nothing of the object sinks under the ground"
    if name.startswith("statue"):
        # the pedestal (the lowest 30% of the object) is a box of the capture: its faces are level or plumb
        rng = np.random.default_rng(0)
        ped = obj[obj[:, 2] < 0.3 * obj[:, 2].max()]
        sample = ped[rng.choice(len(ped), min(len(ped), 60_000), replace=False)]
        planes = ransac_planes(sample, 0.008, rng, n_planes=4, min_share=0.03)[:2]
        assert len(planes) == 2, "the pedestal's faces are found"
        for p in planes:
            nz = min(1.0, abs(float(p["normal"][2])))
            off = np.degrees(min(np.arccos(nz), np.arcsin(nz)))  # from level (nz = 1) or plumb (nz = 0)
            assert off < 2.0, f"a pedestal face is {off:.2f} deg off level/plumb"
    else:
        # the guitar leans on its stand: its long axis within 25 degrees of vertical
        above = obj[obj[:, 2] > 0.3 * hi[2]]
        n, _, _ = fit_plane(above)  # the guitar's body-and-neck plane: its normal is horizontal
        assert abs(n[2]) < np.sin(np.radians(25))


def test_real_capture_trajectory_with_props(tmp_path):
    """render.trajectory on a real capture with sampled props: labels written, frames show the props."""
    out = tmp_path / "g"
    r = subprocess.run([sys.executable, "-m", "render.trajectory", f"scene={REAL / SCENES[0]}", "props=sample",
                        "props.outcome=occluded", "frames=2", "size=128", f"out={out}", "progress=false"],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    import pandas as pd

    lab = pd.read_csv(out / "labels.csv")
    assert (lab.vpt_label == 0).all() and (lab.vpt_reason == "occluded").all()
    run = json.loads((out / "run.json").read_text())
    can = run["scene_metadata"]["canonical"]
    assert can["up_source"] and len(can["transform"]) == 4 and run["scene_metadata"]["file_sha256"]
    from infra.images import read_image_array

    img = read_image_array(out / "frame_0000.png").astype(float)
    img = img / 255 if img.max() > 1.5 else img
    r_, g_, b_ = img[..., 0], img[..., 1], img[..., 2]
    green, red = (g_ > r_ + 0.2) & (g_ > b_ + 0.2), (r_ > g_ + 0.3) & (r_ > b_ + 0.3)
    assert green.sum() > 20 and red.sum() > 5, "both props in the first frame"


@pytest.mark.slow
def test_real_captures_build_a_3dpc(tmp_path):
    """A 3D-PC over the four real captures: both VPT labels, gates reported, captures recorded in the manifest."""
    files = [str(REAL / s) for s in SCENES]
    splits = {files[0]: "train", files[1]: "train", files[2]: "test", files[3]: "strategy"}
    out = tmp_path / "b"
    r = subprocess.run([sys.executable, "-m", "tasks.threedpc", f"out={out}", f"scenes=[{','.join(files)}]",
                        "scene_splits={" + ", ".join(f"{k}: {v}" for k, v in splits.items()) + "}",
                        "settings=4", "frames=3", "human_n=4", "val_settings=2", "progress=false"],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    man = json.loads((out / "manifest.json").read_text())
    assert set(man["captures"]) == set(files)
    assert all(c["canonical"]["add_ground"] for c in man["captures"].values())
    counts = man["counts"]["vpt"]
    assert counts.get("train/0", 0) > 0 and counts.get("train/1", 0) > 0 and counts.get("test/1", 0) > 0
    assert "Gates: **PASSED**" in (out / "summary.md").read_text()
