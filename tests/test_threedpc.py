"""The 3D-PC builder: balance, splits, determinism, resume, independent label checks, config errors."""
import dataclasses
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from tasks.threedpc import ConfigError, build, config_from_dict
from tasks.threedpc.config import outside_validated_range

from tests.conftest import TINY_3DPC as TINY


@pytest.fixture
def tiny(tiny_3dpc):
    """The session's TINY build (tests/conftest.py), shared with other files: read it, do not change it."""
    return tiny_3dpc


def test_outputs_and_balance(tiny):
    md = pd.read_parquet(tiny / "metadata.parquet")
    assert {"file_name", "scene", "setting", "frame", "split", "vpt_label", "depth_label", "depth_gap", "keep",
            "drop_reason", "visible_fraction_raycast", "visible_fraction_render", "observer_x", "ball_size",
            "w2c_00", "in_vpt", "in_depth", "in_human", "label_rule_version"} <= set(md.columns)
    for task, col, lab in (("vpt", "in_vpt", "vpt_label"), ("depth", "in_depth", "depth_label")):
        for sp, g in md[md[col]].groupby("split"):
            n = g[lab].value_counts()
            assert n.get(0, 0) == n.get(1, 0) > 0, (task, sp, n.to_dict())
            files = sorted((tiny / task / sp).rglob("*.png"))
            assert len(files) == len(g)
    # a human set per task (depth settings of its own): each from that task's test frames, balanced on its label
    for task in ("vpt", "depth"):
        human = md[md[f"in_human_{task}"]]
        assert len(human) == 4 and (human.split == "test").all() and human.keep.all()
        assert human[f"{task}_label"].notna().all()
        assert sorted(human[f"{task}_label"]) == [0, 0, 1, 1]
        files = sorted((tiny / "human" / task).rglob("*.png"))  # the view: one link per image, under its label
        assert len(files) == 4 and sorted(int(f.parent.name) for f in files) == [0, 0, 1, 1]
    assert (md.in_human == (md.in_human_vpt | md.in_human_depth)).all()
    depth_only = md.requested.eq("depth_only")
    assert depth_only[md.in_human_depth].all() and not depth_only[md.in_human_vpt].any()
    assert json.loads((tiny / "manifest.json").read_text())["counts"]["human"] == {"vpt0": 2, "vpt1": 2, "depth0": 2,
                                                                                  "depth1": 2}
    strat = md[md.in_strategy].sort_values("setting")
    from tasks.threedpc.build import scene_rng, strategy_pattern

    steps = TINY["strategy_steps"]
    b, k, a = strategy_pattern(steps, scene_rng(config_from_dict({**TINY, "out": str(tiny)}), "motorcycle_04", 1))
    assert "".join(map(str, strat.vpt_label)) == "1" * b + "0" * k + "1" * a  # clear → blocked → clear, 50/50
    assert k == steps // 2 and b >= 1 and a >= 1
    assert (md[~md.keep.astype(bool)].file_name == "").all() and (md[~md.keep.astype(bool)].drop_reason != "").all()
    manifest = json.loads((tiny / "manifest.json").read_text())
    assert manifest["counts"]["vpt"] and len(manifest["images"]) == int((md.file_name != "").sum())
    summary = (tiny / "summary.md").read_text()
    assert "Joint labels" in summary and "Dropped frames by reason" in summary and "size ratio" in summary


def test_splits_are_disjoint(tiny):
    md = pd.read_parquet(tiny / "metadata.parquet")
    assert (md.groupby("scene").split.nunique() == 1).all(), "every scene lies in one split (val held out by scene)"
    val = set(md[md.split == "val"].scene)
    assert len(val) == 1 and val <= {"hydrant_01", "hydrant_02"}, val  # one training instance of the category
    train_scenes = set(md[md.split == "train"].scene)
    assert train_scenes == {"hydrant_01", "hydrant_02"} - val
    for other in ("val", "test", "strategy"):
        assert train_scenes.isdisjoint(md[md.split == other].scene)
    assert json.loads((tiny / "manifest.json").read_text())["val_scenes"] == sorted(val)


def test_labels_match_independent_recomputation(tiny):
    import trimesh

    from scenes.camera import Camera
    from scenes.load import load_scene
    from scenes.props import Observer, Support, Target
    from tasks.labels import LabelRules, depth_order, in_view, raycast_visible_fraction, vpt_from_fraction

    md = pd.read_parquet(tiny / "metadata.parquet")
    kept = md[md.keep.astype(bool)]
    # the sample must include props on supports, or the check below would not cover them
    sample = pd.concat([kept[kept.ball_support_kind != "ground"].sample(6, random_state=0),
                        (g := kept[kept.ball_support_kind == "ground"]).sample(min(6, len(g)), random_state=0)])
    rules = LabelRules()
    for r in sample.itertuples():
        obs = Observer((r.observer_x, r.observer_y, r.observer_z), r.observer_yaw_deg, r.observer_pitch_deg,
                       r.observer_size, shape=r.observer_shape, fov_deg=r.observer_fov_deg)
        ball = Target((r.ball_x, r.ball_y, r.ball_z), r.ball_size, shape=r.ball_shape)
        d = depth_order(Camera.from_row(r._asdict()).center, obs, ball, rules)
        assert d["depth_gap"] == pytest.approx(r.depth_gap, rel=1e-9)
        assert (d["depth_label"] if d["depth_label"] is not None else -1) == (-1 if pd.isna(r.depth_label) else r.depth_label)
        scene = load_scene(r.scene)
        # the supports (re-made from their recorded columns) block lines of sight like the scene
        row = r._asdict()
        sups = [s for s in (Support.from_row(row, "observer_", (r.observer_x, r.observer_y)),
                            Support.from_row(row, "ball_", (r.ball_x, r.ball_y))) if s is not None]
        occ = trimesh.util.concatenate([scene.occluders()] + [s.mesh() for s in sups])
        frac = raycast_visible_fraction(obs.eye, ball, occ, rules.n_rays)
        label, _ = vpt_from_fraction(frac, in_view(obs, ball), rules)
        assert label == r.vpt_label


def test_imagefolder_loads_views(tiny):
    from torchvision.datasets import ImageFolder

    ds = ImageFolder(str(tiny / "vpt" / "test"))
    assert ds.classes == ["0", "1"] and len(ds) > 0
    img, label = ds[0]
    assert img.size == (64, 64) and label in (0, 1)


def test_deterministic_parallel_any_job_order_and_resumable(tiny, tmp_path, monkeypatch):
    """Same config and seed -> byte-identical images, tables and summary whether built by 1 worker in the
    default job order (strategy scenes first; the session's TINY build) or by 2 workers in the opposite order;
    an interrupted build resumes without rebuilding finished scenes and removes half-written folders.

    One resumed build checks all three: a copy of TINY loses a basic scene and the VPT-Strategy scene (and
    everything assembled from the scenes), then 2 workers rebuild those two concurrently in reversed order
    (the strategy scene last instead of first) while the two kept scenes must stay untouched; the result must
    equal TINY byte for byte. The two lost are TINY's quickest to build (couch_03 about 7 CPU-s, motorcycle_04
    5; hydrant_02 15)."""
    import importlib

    b = importlib.import_module("tasks.threedpc.build")
    out = tmp_path / "b"
    shutil.copytree(tiny, out)
    cfg = config_from_dict({**TINY, "out": str(out), "workers": 2})
    assert b.job_order(cfg, cfg.scenes) == ["motorcycle_04", "hydrant_01", "hydrant_02", "couch_03"]
    # the interruption: two scenes lost, a half-written temporary folder left behind, nothing assembled yet
    lost = [next((out / "images").rglob(n)) for n in ("couch_03", "motorcycle_04")]
    for d in lost:
        shutil.rmtree(d)
    for p in out.iterdir():
        if p.name not in ("images", "config.json"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    (lost[0].parent / ".couch_03.tmp999").mkdir()
    (lost[0].parent / ".couch_03.tmp999" / "junk.png").write_bytes(b"partial")
    kept = [next((out / "images").rglob(n)) / "_labels.parquet" for n in ("hydrant_01", "hydrant_02")]
    t_kept = [k.stat().st_mtime_ns for k in kept]
    order, default = [], b.job_order
    with monkeypatch.context() as m:
        m.setattr(b, "job_order", lambda cfg, names: order.extend(default(cfg, names)[::-1]) or order)
        build(cfg, progress=False)
    assert [k.stat().st_mtime_ns for k in kept] == t_kept, "finished scenes are not rebuilt"
    assert [d.name for d in lost if d.exists()] == ["couch_03", "motorcycle_04"]
    assert order == ["couch_03", "hydrant_02", "hydrant_01", "motorcycle_04"], "reversed: the strategy scene last"
    a, b_ = json.loads((tiny / "manifest.json").read_text()), json.loads((out / "manifest.json").read_text())
    assert a["images"] == b_["images"], "same config and seed -> byte-identical images (1 or 2 workers, any order)"
    for f in ("metadata.parquet", "metadata.csv", "summary.md"):
        assert (tiny / f).read_bytes() == (out / f).read_bytes(), f
    assert not any("tmp" in p.name for p in out.rglob("*"))


def test_invalid_configs_fail_before_rendering(tmp_path):
    base = {**TINY, "out": str(tmp_path / "x")}
    with pytest.raises(ConfigError, match="unknown catalogue scene 'bench_07'"):
        config_from_dict({**base, "scenes": ["bench_07", "couch_03"]})
    with pytest.raises(ConfigError, match="too few scenes for the split: train 1, test 0"):
        config_from_dict({**base, "scenes": ["hydrant_01"]})
    with pytest.raises(ConfigError, match="settings=5: must be even"):
        config_from_dict({**base, "settings": 5})
    with pytest.raises(ConfigError, match="human_n=400 cannot be balanced"):
        config_from_dict({**base, "human_n": 400})
    with pytest.raises(ConfigError, match=r"depth_cue_band=\[0.6, 0.9\]: must be \[low, high\] with 0 <= low < 0.5"):
        config_from_dict({**base, "depth_cue_band": [0.6, 0.9]})
    assert config_from_dict({**base, "depth_cue_band": None}).depth_cue_band is None
    with pytest.raises(ConfigError, match="unknown config keys \\['frame'\\]"):
        config_from_dict({**base, "frame": 3})
    with pytest.raises(ConfigError, match="needs a split in scene_splits"):
        (tmp_path / "s.ply").write_bytes(b"ply")
        config_from_dict({**base, "scenes": [str(tmp_path / "s.ply"), "couch_03"]})
    assert not (tmp_path / "x").exists(), "nothing written"


def test_cli_rejects_bad_config_and_other_output(tmp_path, tiny, python_m):
    r = python_m("tasks.threedpc", f"out={tmp_path / 'y'}", "preset=small", "settings=3", timeout=120)
    assert r.returncode == 2 and "settings=3: must be even" in r.stderr
    with pytest.raises(ConfigError, match="different configuration"):
        build(config_from_dict({**TINY, "out": str(tiny), "seed": 1}), progress=False)


def test_code_side_design_is_part_of_the_build_identity(tiny, monkeypatch):
    """The build's identity (its config.json stamp and manifest) holds what the code fixes — label rule version,
    matched design, lens length — so a build resumed by code with another lens or placement rule is refused,
    not mixed with the old scenes."""
    import scenes.props as props

    from tasks.labels import LABEL_RULE_VERSION

    cfg = config_from_dict({**TINY, "out": str(tiny)})
    ident = cfg.identity()["design"]
    assert ident["label_rule_version"] == LABEL_RULE_VERSION and ident["lens_length"] == props.LENS_LENGTH
    assert ident["matched_design"]["clear_margin"] == pytest.approx(0.10)
    assert json.loads((tiny / "manifest.json").read_text())["config"]["design"] == json.loads(json.dumps(ident))
    monkeypatch.setattr(props, "LENS_LENGTH", 0.4)
    assert cfg.identity()["design"]["lens_length"] == 0.4
    with pytest.raises(ConfigError, match="different configuration"):
        build(cfg, progress=False)


def test_prop_distance_cue_is_reported(tiny):
    md = pd.read_parquet(tiny / "metadata.parquet")
    d = np.linalg.norm(md[["observer_x", "observer_y", "observer_z"]].to_numpy() - md[["ball_x", "ball_y", "ball_z"]].to_numpy(), axis=1)
    np.testing.assert_allclose(md["prop_distance"], d)
    from sklearn.metrics import roc_auc_score

    v = md[md.in_vpt]
    auc = roc_auc_score(v.vpt_label.astype(int), v.prop_distance)
    assert f"VPT cue check: the 3D distance between the props separates the VPT labels with AUC {auc:.2f}" in (
        tiny / "summary.md").read_text()


def test_size_ratio_uncorrelated_with_depth(tiny):
    md = pd.read_parquet(tiny / "metadata.parquet")
    k = md[md.in_depth]
    r = np.corrcoef(k.ball_size / k.observer_size, k.depth_label.astype(float))[0, 1]
    assert abs(r) < 0.5  # small sample; the default build reports ~0
    assert k.ball_size.nunique() > 1 and k.observer_size.nunique() > 1


@pytest.mark.slow
def test_build_restoring_the_legacy_placement_fails_the_shortcut_audit(tmp_path):
    """Issue 10: today's (pre-issue) placement — props on the ground, occluded ones on opposite sides of the
    object, the observer always facing the ball — must fail the build's audit gate (VPT from prop distance)."""
    from tasks.threedpc.shortcuts import ShortcutAuditFailed

    legacy = {"scenes": ["hydrant_01", "car_01", "plant_01", "hydrant_03", "car_03"], "settings": 8, "frames": 3,
              "size": 48, "human_n": 0, "strategy_steps": 6, "workers": 1, "placement_design": "legacy",
              "out_of_view_fraction": 0.0, "ball_size_range": [0.8, 1.2], "observer_size_range": [0.8, 1.2], "height_jitter": 0.25, "val_holdout": "setting",
              "audit": {"min_placements": 20, "bootstrap": 100}, "allow_unvalidated": True, "depth_settings": 0}
    out = tmp_path / "legacy"
    with pytest.raises(ShortcutAuditFailed, match="prop_distance"):
        build(config_from_dict({**legacy, "out": str(out)}), progress=False)
    assert (out / "summary.md").exists() and (out / "shortcut_audit.csv").exists(), "outputs kept"
    table = pd.read_csv(out / "shortcut_audit.csv")
    row = table[(table.task == "vpt") & (table.kind == "cue_auc") & (table.name == "prop_distance")].iloc[0]
    assert row.value < 0.35


def test_framing_keeps_both_props_inside_and_enlarges_them():
    """The per-frame framing (issue 10: observers ~10 px tall in far views): the camera zooms in on the props
    by the largest factor in [1, zoom_max] that keeps both inside the margin, so props grow by that factor."""
    import dataclasses

    from scenes.load import load_scene
    from scenes.props import surface_samples
    from tasks.placement import PropStyle, make_props
    from tasks.threedpc.build import framed_cameras, framing_zoom

    sc = load_scene("couch_01")
    pl = make_props(PropStyle(), (-1.2, 0.3), 20.0, (1.0, -0.4), 0.3, 0.0, {})
    arc = dataclasses.replace(sc.trajectory, sweep_deg=90.0, closed=False, radius=1.25 * sc.trajectory.radius)
    margin = 0.08
    cams, zooms = framed_cameras(arc, pl, 6, 256, 3.0, margin)
    assert (zooms >= 1).all() and (zooms <= 3).all() and zooms.max() > 1.2
    pts = np.concatenate([surface_samples(pl.observer), surface_samples(pl.target)])
    for cam, z in zip(cams, zooms, strict=True):
        uv, depth = cam.project(pts)
        assert (depth > 0).all()
        if 1 < z < 3:  # fitted zoom: every surface point inside the margin box
            assert (uv >= margin * 256 - 1e-6).all() and (uv <= (1 - margin) * 256 + 1e-6).all()
        # on-screen sizes grow by the zoom: the camera's focal length is the base one times the zoom
        base = dataclasses.replace(cam, fx=cam.fx / z, fy=cam.fy / z)
        uv0, _ = base.project(pts)
        np.testing.assert_allclose(np.ptp(uv[:, 1] - 128), z * np.ptp(uv0[:, 1] - 128), rtol=1e-9)
        assert framing_zoom(cam, pl, margin) >= 1 - 1e-9 or z == 1.0


def test_kept_frames_show_props_at_least_the_minimum_size(tiny):
    """Every image in a task set shows the observer at least min_observer_height × size and the ball at least
    min_ball_height × size pixels tall; frames below are dropped with a reason; the summary reports min/median."""
    cfg = config_from_dict({**TINY, "out": str(tiny)})
    md = pd.read_parquet(tiny / "metadata.parquet")
    used = md[md.in_vpt | md.in_depth | md.in_strategy]
    assert (used.observer_height_px >= cfg.min_observer_height * cfg.size).all()
    assert (used.ball_height_px >= cfg.min_ball_height * cfg.size).all()
    small = md[md.drop_reason.str.contains("observer_too_small")]
    assert (small.observer_height_px < cfg.min_observer_height * cfg.size).all()
    basic = md[(md.task_set == "basic") & (md.in_vpt | md.in_depth)]
    summary = (tiny / "summary.md").read_text()
    assert "## Prop sizes on screen" in summary
    assert (f"| basic (VPT or depth set) | {len(basic)} | {int(basic.observer_height_px.min())} | "
            f"{basic.observer_height_px.median():.0f} |") in summary


def test_prop_sizes_are_log_uniform_and_independent():
    from tasks.placement import PropStyle
    from tasks.threedpc.build import sized_style

    rng = np.random.default_rng(0)
    st = [sized_style(PropStyle(), rng, (0.6, 2.0), (0.8, 1.6)) for _ in range(4000)]
    fb = np.array([s.target_size for s in st]) / PropStyle().target_size
    fo = np.array([s.observer_size for s in st]) / PropStyle().observer_size
    assert fb.min() >= 0.6 and fb.max() <= 2.0 and fo.min() >= 0.8 and fo.max() <= 1.6
    # log-uniform: the log factor's mean sits mid-range, its quartiles evenly spaced
    q = np.quantile(np.log(fb), [0.25, 0.5, 0.75])
    assert abs(q[1] - np.log(np.sqrt(0.6 * 2.0))) < 0.03 and abs((q[2] - q[1]) - (q[1] - q[0])) < 0.04
    assert abs(np.corrcoef(np.log(fb), np.log(fo))[0, 1]) < 0.05


def test_contact_sheet_cli(tiny, tmp_path, python_m):
    """``python -m tasks.threedpc.sheet`` (forked from a warm server, tests/conftest.py: python_m): n images per
    label, label 0 first, captions name label and sizes; bad input → error and exit 2."""
    from tasks.threedpc.sheet import caption, contact_sheet, pick_images, read_rows

    md = read_rows(tiny)
    pick = pick_images(md, "vpt", "test", 3)
    assert list(pick.vpt_label) == sorted(pick.vpt_label) and set(pick.vpt_label) == {0, 1}
    assert caption(pick.iloc[0], "vpt").startswith("0 ")
    img = contact_sheet(tiny, "depth", "test", 3, cols=3, tile=32)
    assert img.dtype == np.uint8 and img.shape[1] == 3 * 32 and img.shape[0] % (32 + 14) == 0
    out = tmp_path / "s.png"
    ok = python_m("tasks.threedpc.sheet", str(tiny), "--n", "2", "--tile", "32", "--out", str(out))
    assert ok.returncode == 0 and out.is_file(), ok.stderr
    bad = python_m("tasks.threedpc.sheet", str(tmp_path / "nope"), "--out", str(out))
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr


def test_contact_sheet_spreads_over_settings():
    """The sheet's sample takes one frame per setting before any setting's second (frames of a setting
    share its geometry): 3 settings × 5 frames per label, n=4 → 3 distinct settings then a repeat;
    ``spread=False`` is a plain random sample."""
    import pandas as pd

    from tasks.threedpc.sheet import pick_images

    md = pd.DataFrame([{"in_vpt": True, "split": "test", "vpt_label": y, "scene": f"s{y}", "setting": k,
                        "frame": f, "file_name": f"{y}/{k}/{f}"}
                       for y in (0, 1) for k in range(3) for f in range(5)])
    pick = pick_images(md, "vpt", "test", 4)
    for y in (0, 1):
        g = pick[pick.vpt_label == y]
        assert len(g) == 4 and g.setting.iloc[:3].nunique() == 3 and g.file_name.is_unique
    assert pick.file_name.tolist() == pick_images(md, "vpt", "test", 4).file_name.tolist()  # seeded
    plain = [pick_images(md, "vpt", "test", 3, seed=s, spread=False) for s in range(20)]
    assert any(p[p.vpt_label == 0].setting.nunique() < 3 for p in plain)


def test_blind_contact_sheet_and_scoring(tiny, tmp_path, python_m):
    """``--blind``: the same images shuffled, captions without labels, the key next to the PNG; ``--score``
    counts a rater's right, wrong and unsure answers per label against it; bad answers → error, exit 2
    (``python -m tasks.threedpc.sheet`` forked from a warm server, tests/conftest.py: python_m)."""
    import pandas as pd

    from tasks.threedpc.sheet import contact_sheet, pick_images, read_rows, score_answers

    img, key = contact_sheet(tiny, "vpt", "test", 3, cols=3, tile=32, blind=True)
    pick = pick_images(read_rows(tiny), "vpt", "test", 3)
    assert sorted(key.file_name) == sorted(pick.file_name) and list(key.tile) == list(range(len(pick)))
    assert list(key.label) != sorted(key.label) or len(set(key.label)) == 1  # shuffled (seeded: fixed order)
    assert img.shape[1] == 3 * 32
    ans = key[["tile"]].assign(answer=key.label.astype(float))
    ans.loc[0, "answer"] = 1 - ans.loc[0, "answer"]
    ans.loc[1, "answer"] = np.nan
    res = score_answers(key, ans)
    assert (res["right"], res["wrong"], res["unsure"]) == (len(key) - 2, 1, 1)
    assert res["wrong_tiles"] == [0] and res["unsure_tiles"] == [1]
    assert sum(res[f"label{y}"]["right"] for y in (0, 1)) == res["right"]
    with pytest.raises(ValueError, match=r"tile\(s\) \[0\] have answers other than 0, 1 or blank \(e.g. 'visible'"):
        score_answers(key, ans.astype(object).assign(answer=["visible"] + list(ans.answer[1:])))
    out = tmp_path / "b.png"
    run = python_m("tasks.threedpc.sheet", str(tiny), "--n", "3", "--tile", "32", "--blind", "--out", str(out))
    assert run.returncode == 0 and out.is_file(), run.stderr
    keyfile = tmp_path / "b.png.key.csv"
    assert pd.read_csv(keyfile).file_name.tolist() == key.file_name.tolist()
    ans.to_csv(tmp_path / "a.csv", index=False)
    run = python_m("tasks.threedpc.sheet", str(tiny), "--score", str(tmp_path / "a.csv"), "--out", str(out))
    assert run.returncode == 0 and '"wrong": 1' in run.stdout, run.stderr
    ans.assign(answer=7).to_csv(tmp_path / "bad.csv", index=False)
    run = python_m("tasks.threedpc.sheet", str(tiny), "--score", str(tmp_path / "bad.csv"), "--key", str(keyfile))
    assert run.returncode == 2 and run.stderr.startswith("error:") and "other than 0, 1" in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("category", ["bench", "car", "chair", "couch", "hydrant", "laptop", "motorcycle", "plant",
                                      "suitcase", "umbrella"])
def test_every_default_strategy_scene_has_a_grounded_sequence(tmp_path, category):
    """The default build's VPT-Strategy scenes (catalogue instance 04) each admit a clear -> blocked -> clear
    sequence under the aperture rule at the default settings (a slatted bench back once admitted none and the
    full build failed), with half the steps blocked and the ball visible at both ends."""
    import importlib

    from scenes.load import load_scene
    from tasks.threedpc.config import compose_config

    build_mod = importlib.import_module("tasks.threedpc.build")
    cfg = compose_config([f"out={tmp_path}"])
    rows, info = build_mod.strategy_scene_rows(cfg, load_scene(f"{category}_04", seed=0), tmp_path / "t", tmp_path / "x")
    labels = [int(r["vpt_label"]) for r in rows]
    assert len(labels) == cfg.strategy_steps and sum(labels) == cfg.strategy_steps - cfg.strategy_steps // 2
    assert labels[0] == labels[-1] == 1 and info["strategy_pattern"] == "".join(map(str, labels))
    assert all(r["ball_height_px"] >= cfg.min_ball_height * cfg.size for r in rows)


def test_strategy_frames_match_their_plain_twin(tmp_path, monkeypatch):
    """Every VPT-Strategy attempt gets the same verdict (and, when it succeeds, the same rows and images)
    from strategy_frames, which splats only what the verdict needs, as from the plain twin that renders every
    step in order; the scene's sequence and rejection counts follow."""
    import collections
    import importlib

    import render.compose as compose
    from scenes.load import load_scene

    b = importlib.import_module("tasks.threedpc.build")

    cfg = config_from_dict({**TINY, "out": str(tmp_path / "o"), "size": 48, "strategy_steps": 4})
    seen = []
    verdicts = collections.Counter()
    splats = {"fast": 0, "ref": 0}
    real_splat, mode = compose.splat, ["fast"]

    def counted(g, camera, *a, **k):
        splats[mode[0]] += camera.width == cfg.size  # the viewer's frames, not the 64-px render checks
        return real_splat(g, camera, *a, **k)

    monkeypatch.setattr(compose, "splat", counted)
    fast_fn = b.strategy_frames

    def both(cfg, scene, at, ts, cam, n_before, n_block):
        mode[0] = "fast"
        fast = fast_fn(cfg, scene, at, ts, cam, n_before, n_block)
        mode[0] = "ref"
        ref = b.strategy_frames_reference(cfg, scene, at, ts, cam, n_before, n_block)
        assert fast[0] == ref[0] and len(fast[1]) == len(ref[1])
        for (*fa, la, ia), (*ra, lr, ir) in zip(fast[1], ref[1], strict=True):
            np.testing.assert_array_equal(ia, ir)
            assert list(la) == list(lr) and la == lr and fa[0] == ra[0] and fa[2] == ra[2]
        seen.append(fast[0])
        return fast

    monkeypatch.setattr(b, "strategy_frames", both)
    for name in ("plant_04",):  # both kinds of failure (hydrant_04 as well: twice the time)
        scene = load_scene(name, seed=0)
        (tmp_path / name).mkdir()
        rows, info = b.strategy_scene_rows(cfg, scene, tmp_path / name, tmp_path / "o" / name)
        rej = info["strategy_rejected"]
        assert seen[-1] is None and rows and len(seen) - 1 == rej.get("props_too_small", 0) + rej.get("label_or_visibility", 0)
        assert [s for s in seen[:-1]] == [s for s in seen[:-1] if s in rej]
        verdicts.update(seen)
        seen.clear()
    print(dict(verdicts), splats)
    assert verdicts["props_too_small"] and verdicts["label_or_visibility"], "both failures exercised"
    assert splats["fast"] < splats["ref"]


def test_use_idle_cores_only_for_the_last_running_job(monkeypatch):
    """A build worker takes every numba thread only while its job is the last one running and none is
    waiting; otherwise its share (the build's images do not depend on it: tests/test_render_fast.py)."""
    import multiprocessing as mp

    import importlib

    import numba

    b = importlib.import_module("tasks.threedpc.build")
    jobs = mp.get_context("spawn").Array("i", [3, 0])
    monkeypatch.setattr(b, "_WORKER", {"threads": 1, "jobs": jobs})
    before = numba.get_num_threads()
    try:
        for waiting, running, want in ((3, 0, 1), (1, 2, 1), (0, 2, 1), (0, 1, numba.config.NUMBA_NUM_THREADS),
                                       (1, 1, 1)):
            jobs[0], jobs[1] = waiting, running
            b.use_idle_cores()
            assert numba.get_num_threads() == want, (waiting, running)
        monkeypatch.setattr(b, "_WORKER", {"threads": None, "jobs": None})
        numba.set_num_threads(1)
        b.use_idle_cores()  # outside a build's pool: untouched
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)


# ------------------------------------------------------------------- the validated range (issue 35.4, 29 Nov)
OUTSIDE_CASES = [
    ("frames", 2, "frames=2 is below 3"),
    ("out_of_view_fraction", 0.2, "out_of_view_fraction=0.2 makes 1 of the 5 not-visible settings per scene face "
                                  "away (0.20), outside [0.33, 0.60]"),
    ("out_of_view_fraction", 0.7, "out_of_view_fraction=0.7 makes 4 of the 5"),
    ("placement_design", "legacy", "placement_design=legacy"),
    ("depth_settings", 0, "depth_settings=0"),
]


def test_every_range_rule_is_breached_by_a_refusal_case():
    """The refusal cases together break every rule of ``VALIDATED_RANGE`` (a new rule needs a case), and each
    breaks the rule its message names."""
    from tasks.threedpc.config import VALIDATED_RANGE

    base = {**TINY, "settings": 10, "depth_settings": 10, "out": "x", "allow_unvalidated": True}
    hit = set()
    for option, value, field in OUTSIDE_CASES:
        extra = {"depth_settings": 0} if option == "placement_design" else {}  # the legacy design needs it
        cfg = config_from_dict({**base, **extra, option: value})
        broken = {i: r.breach(cfg) for i, r in enumerate(VALIDATED_RANGE) if r.breach(cfg)}
        assert any(m.startswith(field) for m in broken.values()), (option, broken)
        hit.update(i for i, m in broken.items() if m.startswith(field))
    assert hit == set(range(len(VALIDATED_RANGE)))


@pytest.mark.parametrize("option, value, field", OUTSIDE_CASES)
def test_builder_refuses_options_outside_the_validated_range(tmp_path, option, value, field):
    """Options outside the range over which every validity-sweep configuration passed its shortcut audit are
    refused before anything is written, with one line naming the field, its value and the way out; with
    ``allow_unvalidated`` the config is accepted and its identity (what is rendered) is unchanged."""
    base = {**TINY, "settings": 10, "depth_settings": 10, "out": str(tmp_path / "x")}
    with pytest.raises(ConfigError) as err:
        config_from_dict({**base, option: value})
    msg = str(err.value)
    assert msg.startswith(field) and "allow_unvalidated=true" in msg and "docs/validity_sweep.md" in msg
    assert "\n" not in msg and not (tmp_path / "x").exists()
    if option == "placement_design":  # depth-only settings (on by default) need the matched design: said next
        with pytest.raises(ConfigError, match="use depth_settings=0 with the legacy design"):
            config_from_dict({**base, option: value, "allow_unvalidated": True})
        base["depth_settings"] = 0
    cfg = config_from_dict({**base, option: value, "allow_unvalidated": True})
    assert outside_validated_range(cfg)[0].startswith(field)
    assert cfg.identity() == dataclasses.replace(cfg, allow_unvalidated=False).identity()


def test_validated_range_holds_the_defaults_and_counts_facing_away_as_the_builder_does():
    """The defaults (50 frames, 0.4 facing away), the small preset and the sweep's settings are inside; the
    share is taken after the builder's rounding: 0.3, 0.4 and 0.5 of 5 not-visible settings all give 2."""
    from tasks.threedpc.config import FACING_AWAY_SHARE, compose_config, facing_away_settings

    assert not outside_validated_range(compose_config(["scenes=[hydrant_01,hydrant_03]", "out=x"]))
    assert not outside_validated_range(compose_config(["preset=small", "out=x"]))
    assert [facing_away_settings(10, f) for f in (0.2, 0.3, 0.4, 0.5, 0.6)] == [1, 2, 2, 2, 3]
    assert [facing_away_settings(s, 0.4) for s in (4, 12, 16)] == [1, 2, 3]  # 0.5, 0.33, 0.375: inside
    assert FACING_AWAY_SHARE[0] <= 2 / 6 and 3 / 5 <= FACING_AWAY_SHARE[1]


# ---------------------------------------------------------------------- depth-only settings (issue 35, 29 Nov)
def test_depth_settings_config_identity_and_splits(tmp_path):
    """``depth_settings`` (default 10 since 29 Nov) is part of a build's identity unless 0 (so stamps of builds
    from before the field resume with ``depth_settings=0``), needs the matched design, and with
    ``val_holdout: setting`` holds out the last of the depth-only settings too."""
    base = {**TINY, "out": str(tmp_path / "x")}
    default = {k: v for k, v in base.items() if k != "depth_settings"}
    assert config_from_dict(default).depth_settings == 10
    assert config_from_dict(default).identity()["depth_settings"] == 10
    assert "depth_settings" not in config_from_dict({**base, "depth_settings": 0, "allow_unvalidated": True}).identity()
    assert config_from_dict({**base, "depth_settings": 4}).identity()["depth_settings"] == 4
    with pytest.raises(ConfigError, match="depth_settings=2: needs placement_design=matched"):
        config_from_dict({**base, "depth_settings": 2, "placement_design": "legacy", "allow_unvalidated": True})
    cfg = config_from_dict({**base, "depth_settings": 4, "val_holdout": "setting", "val_settings": 2})
    parts = [cfg.part_of("hydrant_01", k) for k in range(cfg.settings + cfg.depth_settings)]
    assert parts == ["train", "train", "val", "val", "train", "train", "val", "val"]
    assert cfg.part_of("couch_03", 5) == "test"
    # away_facing, the facing-away design (a build option since 29 Nov, before a code-side MatchedDesign knob)
    assert "away_facing" not in config_from_dict(base).identity()
    image = config_from_dict({**base, "away_facing": "image"}).identity()
    assert image["away_facing"] == "image" and "away_facing" not in image["design"]["matched_design"]
    from tasks.threedpc.config import upgrade_identity

    old = dict(image, design={**image["design"], "matched_design": {**image["design"]["matched_design"],
                                                                      "away_facing": "image"}})
    old.pop("away_facing")
    assert upgrade_identity(old) == image  # a stamp of an "image" build from then resumes as the option
    # the extension budget before 30 Nov (30) only decided when a scene gave up: its finished builds resume
    old = dict(image, design={**image["design"], "matched_design": {**image["design"]["matched_design"],
                                                                      "max_extensions": 30}})
    assert image["design"]["matched_design"]["max_extensions"] == 80 and upgrade_identity(old) == image
    with pytest.raises(ConfigError, match="away_facing"):
        config_from_dict({**base, "away_facing": "sideways"})


def test_depth_only_placements_face_anywhere():
    """A depth-only observer's facing is independent of the ball: the angle between its facing and the
    direction to the ball spreads over [0°, 180°] (uniform yaw: mean 90°, a sixth within the 60° camera's
    view), where a VPT-visible observer looks within 7° of it; every placement passes the geometry checks."""
    from tasks.placement import geometry_rejection
    from tasks.threedpc.build import depth_only_placement, load_build_scene

    cfg = config_from_dict({**TINY, "out": "unused", "depth_settings": 2})
    scene = load_build_scene(cfg, "hydrant_01")
    rng = np.random.default_rng(0)
    angles = []
    for _ in range(40):
        pl, vpt = depth_only_placement(cfg, scene, rng, {})
        # clear of each other and of the object (the frustum check of the candidate held before the turn)
        assert geometry_rejection(scene, pl) in (None, "pool_outside_frustum_vertically")
        assert vpt["vpt_label"] in (0, 1, None)
        o, t = np.asarray(pl.observer.position[:2]), pl.target.center[:2]
        to_t = np.degrees(np.arctan2(t[1] - o[1], t[0] - o[0]))
        angles.append(abs((pl.observer.yaw_deg - to_t + 180) % 360 - 180))
        if pl.observer_support is not None:
            assert pl.observer_support.yaw_deg == pl.observer.yaw_deg  # the stand turns with it
    angles = np.array(angles)
    assert 70 < angles.mean() < 110 and 0.04 < (angles < 30).mean() < 0.35 and angles.max() > 150


def test_task_candidates_split_the_frames_between_the_tasks():
    from tasks.threedpc.assemble import task_candidates

    df = pd.DataFrame({"task_set": ["basic"] * 4 + ["strategy"],
                       "requested": ["visible", "occluded", "depth_only", "depth_only", "visible"],
                       "keep": [True, True, True, False, True], "vpt_label": [1, 0, 0, 1, 1],
                       "depth_label": [0, 1, 1, 0, pd.NA]})
    vpt, depth = task_candidates(df)
    assert vpt.tolist() == [True, True, False, False, False]
    assert depth.tolist() == [False, False, True, False, False]
    vpt, depth = task_candidates(df.iloc[[0, 1, 4]])  # no depth-only setting: both tasks on the same frames
    assert vpt.tolist() == depth.tolist() == [True, True, False]


def test_depth_only_settings_leave_the_vpt_settings_byte_identical(tiny, tmp_path):
    """Depth-only settings draw their random numbers after every VPT setting's, so a scene built without them
    (``depth_settings=0``, the paper's protocol) has the very VPT frames the session's TINY build (with them,
    as the default) has; TINY's depth-only settings are numbered after its VPT ones."""
    import hashlib

    from tasks.threedpc.build import basic_scene_rows, load_build_scene, scene_dir

    cfg = config_from_dict({**TINY, "out": str(tmp_path / "d"), "depth_settings": 0, "allow_unvalidated": True})
    scene = load_build_scene(cfg, "hydrant_01")
    final = scene_dir(cfg, scene, "train")
    tmp = tmp_path / "tmp"
    rows, _ = basic_scene_rows(cfg, scene, "train", tmp, final)
    rows = pd.DataFrame(rows)
    assert set(rows.setting) == set(range(cfg.settings)) and "depth_only" not in set(rows.requested)
    tiny_cfg = config_from_dict({**TINY, "out": str(tiny)})
    old = scene_dir(tiny_cfg, scene, "train")
    ref = pd.read_parquet(old / "_labels.parquet")
    ref_vpt, extra = ref[ref.setting < cfg.settings], ref[ref.setting >= cfg.settings]
    assert set(extra.setting) == set(range(cfg.settings, cfg.settings + tiny_cfg.depth_settings))
    assert set(extra.requested) == set(extra.pair_role) == {"depth_only"}
    assert len(extra) == tiny_cfg.depth_settings * cfg.frames
    for name in rows.file_name[rows.file_name != ""]:
        rel = name.split("hydrant_01/", 1)[1]
        same = hashlib.sha256((tmp / rel).read_bytes()).digest() == hashlib.sha256((old / rel).read_bytes()).digest()
        assert same, rel
    assert rows.file_name.tolist() == ref_vpt.file_name.tolist()  # (relative to the build folder)
    assert rows.observer_yaw_deg.tolist() == ref_vpt.observer_yaw_deg.tolist()


def test_vpt_arc_looks_across_the_sight_line(tmp_path):
    """``vpt_arc_deg`` (with depth-only settings): a VPT setting's viewer arc is centred on the direction from the
    object's centre to the nearest point of the props' ground line and sweeps vpt_arc_deg × the usual random
    factor, drawing the same random numbers as the bisector arc (so nothing after it changes)."""
    from scenes.props import Observer, Target
    from tasks.placement import Placement
    from tasks.threedpc.build import line_facing_azimuth, load_build_scene, viewer_arc

    beside = Placement(Observer((-1.0, 1.0, 0.3), yaw_deg=0.0), Target((1.0, 1.0, 0.3)))
    assert line_facing_azimuth(beside, (0.0, 0.0)) == pytest.approx(90.0)
    assert line_facing_azimuth(beside, (0.0, 3.0)) == pytest.approx(-90.0)
    end = Placement(Observer((0.5, -2.0, 0.3), yaw_deg=0.0), Target((2.0, -4.0, 0.3)))  # nearest point: an end
    assert line_facing_azimuth(end, (0.0, 0.0)) == pytest.approx(np.degrees(np.arctan2(-2.0, 0.5)))
    through = Placement(Observer((-1.0, 0.0, 0.3), yaw_deg=0.0), Target((2.0, 0.0, 0.3)))  # through the centre
    assert line_facing_azimuth(through, (0.0, 0.0)) == pytest.approx(0.0)  # the props' midpoint (0.5, 0)

    base = {**TINY, "out": str(tmp_path / "x"), "depth_settings": 2}
    with pytest.raises(ConfigError, match="vpt_arc_deg=30: needs depth_settings > 0"):
        config_from_dict({**TINY, "out": str(tmp_path / "x"), "depth_settings": 0, "vpt_arc_deg": 30})
    assert "vpt_arc_deg" not in config_from_dict(base).identity()
    cfg = config_from_dict({**base, "vpt_arc_deg": 30})
    assert cfg.identity()["vpt_arc_deg"] == 30
    scene = load_build_scene(cfg, "hydrant_01")
    lo, hi = scene.object_bounds
    pl = Placement(Observer((0.9, 0.4, 0.3), yaw_deg=0.0), Target((-0.2, 0.9, 0.3)))
    r1, r2, r3 = (np.random.default_rng(5) for _ in range(3))
    arc = viewer_arc(scene, pl, r1, cfg, vpt=True)
    plain = viewer_arc(scene, pl, r2, config_from_dict(base), vpt=True)  # no vpt_arc_deg: the bisector arc
    depth = viewer_arc(scene, pl, r3, cfg)  # a depth-only setting keeps the bisector arc
    assert r1.random() == r2.random() == r3.random()  # the same draws
    assert depth == plain and arc.radius == plain.radius and arc.height == plain.height
    want = line_facing_azimuth(pl, (np.asarray(lo[:2]) + hi[:2]) / 2)
    assert arc.start_deg + arc.sweep_deg / 2 == pytest.approx(want)
    assert arc.sweep_deg / plain.sweep_deg == pytest.approx(30 / cfg.arc_deg)
    # vpt_arc_side=either: the arcs drawn travelling clockwise (sweep < 0, half of them) look from the opposite
    # side, the others as with "line"; the same draws; the option enters the identity only when set
    either = config_from_dict({**base, "vpt_arc_deg": 30, "vpt_arc_side": "either"})
    assert "vpt_arc_side" not in cfg.identity() and either.identity()["vpt_arc_side"] == "either"
    with pytest.raises(ConfigError, match="vpt_arc_side=either: needs vpt_arc_deg"):
        config_from_dict({**base, "vpt_arc_side": "either"})
    sides = []
    for seed in range(12):
        a, b = (viewer_arc(scene, pl, np.random.default_rng(seed), c, vpt=True) for c in (cfg, either))
        assert (a.radius, a.height, abs(a.sweep_deg)) == (b.radius, b.height, abs(b.sweep_deg))
        turn = (b.start_deg + b.sweep_deg / 2 - (a.start_deg + a.sweep_deg / 2)) % 360
        assert turn == pytest.approx(180.0 if b.sweep_deg < 0 else 0.0, abs=1e-9)
        sides.append(turn > 90)
    assert 0 < sum(sides) < len(sides)


def test_depth_only_frames_put_neither_prop_further_out():
    """Issue 35 (29 Nov): aimed at the props' 3D midpoint (VPT settings), a camera shows the nearer prop further
    from the image centre, always — a depth shortcut (the audit's ``centre_offset_diff``). Depth-only settings
    aim along the bisector of the rays to the props (``bisector_aim``): the two centres project point-symmetrically
    about the image centre, whichever is nearer. Checked on random placements and viewpoints by projecting."""
    from scenes.camera import Camera
    from tasks.placement import Observer, Placement, Target
    from tasks.threedpc.build import bisector_aim, props_aim
    from tasks.threedpc.shortcuts import shortcut_cues

    rng = np.random.default_rng(3)
    base = Camera.from_fov(256, 256, 50.0)
    rows = []
    for _ in range(200):
        o, t = rng.uniform(-1, 1, 3) * (1, 1, 0.4) + (0, 0, 0.5), rng.uniform(-1, 1, 3) * (1, 1, 0.4) + (0, 0, 0.5)
        pl = Placement(Observer(tuple(o), yaw_deg=float(rng.uniform(0, 360))), Target(tuple(t)))
        az, el, r = rng.uniform(0, 2 * np.pi), rng.uniform(0.1, 0.6), rng.uniform(3, 5)
        eye = np.array([r * np.cos(az) * np.cos(el), r * np.sin(az) * np.cos(el), r * np.sin(el)])
        near_is_ball = np.linalg.norm(t - eye) < np.linalg.norm(o - eye)
        for aim, kind in ((props_aim(pl), "midpoint"), (bisector_aim(eye, pl), "bisector")):
            cam = base.looking_at(eye, aim)
            (uo, vo), (ub, vb) = cam.project(np.stack([o, t]))[0] - 128.0
            out_o, out_b = np.hypot(uo, vo), np.hypot(ub, vb)
            if kind == "midpoint":  # the shortcut: the nearer one is further out
                assert (out_b > out_o) == near_is_ball
            else:  # point symmetry: equally far out, on opposite sides
                assert np.allclose([uo, vo], [-ub, -vb], atol=1e-6 * 256)
            rows.append({"kind": kind, "observer_x": o[0], "observer_y": o[1], "observer_z": o[2], "ball_x": t[0],
                         "ball_y": t[1], "ball_z": t[2], "near_is_ball": near_is_ball, **cam.as_row()})
    # the audit's cue reads it off the metadata: it separates nearer from further perfectly under the midpoint aim
    df = pd.DataFrame(rows).assign(ball_size=0.1, observer_size=0.1, observer_yaw_deg=0.0)
    cue = shortcut_cues(df)["centre_offset_diff"].to_numpy()
    mid = (df.kind == "midpoint").to_numpy()
    assert ((cue[mid] > 0) == df.near_is_ball[mid].to_numpy()).all()
    assert np.abs(cue[~mid]).max() < 1e-6


def test_config_round_trips_through_as_input(tmp_path, monkeypatch):
    """BuildConfig.as_input() is what config_from_dict takes back: every section, the pair tuples
    (scene_splits, scene_frames) and tuple fields come back equal, and a change applied on top is validated."""
    monkeypatch.chdir(tmp_path)
    for name in ("a.ply", "b.ply", "c.ply"):
        (tmp_path / name).write_bytes(b"")  # scene files must exist; their content is not read here
    cfg = config_from_dict({"scenes": ["a.ply", "b.ply", "c.ply"], "out": "o",
                            "scene_splits": {"a.ply": "train", "b.ply": "test", "c.ply": "strategy"},
                            "scene_frames": {"a.ply": {"up": "-y", "object_height_m": 1.2}},
                            "audit": {"vpt_orientation_max": 0.6}, "style": {"target_color": [1, 0, 0]},
                            "depth_cue_band": [0.2, 0.8], "settings": 6, "human_n": 8})
    assert config_from_dict(cfg.as_input()) == cfg
    assert config_from_dict({**cfg.as_input(), "settings": 8}) == dataclasses.replace(cfg, settings=8)
    with pytest.raises(ConfigError, match="settings"):
        config_from_dict({**cfg.as_input(), "settings": -1})


def test_human_subset_balances_its_cells_and_names_a_short_one():
    """``assemble.human_subset``: jointly on (vpt, depth) the remainder goes to the mixed cells first (94 →
    23/24/24/23, the paper's set for both tasks); on one label (a task's own set) to class 1 first; spread over
    scenes round-robin; a cell with too few test images is named in the error."""
    from tasks.threedpc.assemble import human_subset

    rng = np.random.default_rng(0)
    n = 800
    df = pd.DataFrame({"split": np.where(np.arange(n) % 5 == 0, "train", "test"), "keep": True,
                       "vpt_label": rng.integers(0, 2, n), "depth_label": rng.integers(0, 2, n).astype(float),
                       "scene": [f"s{i % 7}" for i in range(n)]})
    df.loc[3, "depth_label"] = np.nan  # ambiguous depth: never chosen for a set that needs it
    both = df.loc[human_subset(df, 94, np.random.default_rng(1))]
    assert (both.split == "test").all() and both.depth_label.notna().all()
    cells = both.groupby(["vpt_label", "depth_label"]).size().to_dict()
    assert cells == {(0, 0.0): 23, (0, 1.0): 24, (1, 0.0): 24, (1, 1.0): 23}
    assert both.scene.value_counts().max() - both.scene.value_counts().min() <= 4  # round-robin over 7 scenes
    one = df.loc[human_subset(df, 5, np.random.default_rng(1), ("vpt_label",))]
    assert one.vpt_label.value_counts().to_dict() == {1: 3, 0: 2}
    with pytest.raises(ConfigError, match="only 0 test images with depth 1, need 2"):
        human_subset(df[df.depth_label != 1], 4, np.random.default_rng(1), ("depth_label",))
