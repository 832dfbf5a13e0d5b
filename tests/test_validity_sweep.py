"""benchmarks/validity_sweep.py (issue 35.4): its grid composes into valid build configs, its table measures the
margin to every gate, its report says pass/fail per configuration; no build (seconds)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import validity_sweep as sweep  # noqa: E402

from tasks.threedpc.shortcuts import AUDIT_DTYPES  # noqa: E402


def test_every_configuration_is_a_valid_build_with_enough_test_placements_for_enforced_gates(tmp_path):
    from tasks.threedpc.config import compose_config
    from tasks.threedpc.shortcuts import AuditConfig

    names = [c["name"] for c in sweep.CONFIGS]
    assert len(names) == len(set(names)) and 8 <= len(names) <= 21  # a sweep stays about two hours of CPU
    varied = {k: {str(c[k]) for c in sweep.CONFIGS} for k in ("subset", "settings", "frames", "seed", "size")}
    assert all(len(v) >= 3 for v in varied.values()), varied  # every option takes at least three values
    composed = {}
    for c in sweep.CONFIGS:
        cfg = composed[c["name"]] = compose_config(sweep.overrides(c, tmp_path / c["name"], 2))
        assert cfg.settings == c["settings"] and cfg.frames == c["frames"] and cfg.size == c["size"]
        assert not cfg.audit.enforce  # a failing build is kept and reported
        splits = [cfg.split_of(s) for s in cfg.scenes]
        assert "strategy" not in splits  # the audit does not use VPT-Strategy scenes
        # every gate can be enforced: at least min_placements test placements (before frames are dropped)
        assert splits.count("test") * cfg.settings >= AuditConfig().min_placements, c["name"]
        if c["oov"] is not None:
            assert cfg.out_of_view_fraction == c["oov"]
        for k, v in c["design"].items():  # a candidate design's options reach the builder
            assert getattr(cfg, k) == v, (c["name"], k)
        if cfg.depth_settings:  # the depth task's own placements: enough test ones for its gates too
            assert splits.count("test") * cfg.depth_settings >= AuditConfig().min_placements, c["name"]
        # outside the builder's validated range: built with allow_unvalidated (the sweep shows why it refuses)
        assert cfg.allow_unvalidated == bool(sweep.outside_range(c)), c["name"]
    outside = {c["name"]: sweep._range_cell(c) for c in sweep.CONFIGS if sweep.outside_range(c)}
    assert outside["last5_f2"] == "outside: frames=2" and outside["oov20"] == "outside: out_of_view_fraction=0.2"
    assert "base" not in outside and "oov60" not in outside and "last5_f3" not in outside
    assert any(c["design"] for c in sweep.CONFIGS) and any(not c["design"] for c in sweep.CONFIGS)
    # a whole-grid design variant (--design): every default-design configuration is a valid build with its
    # options. Hydra composes each design once (its options are valid overrides); every pair is then validated
    # by the builder's own check on the composed configuration plus the options (config_from_dict: the same
    # validation without Hydra's 0.3-0.7 s per compose; a composed config round-trips through it unchanged)

    from tasks.threedpc.config import config_from_dict

    first = next(c for c in sweep.CONFIGS if not c["design"])
    assert all(config_from_dict(cfg.as_input()) == cfg for cfg in composed.values())
    for name, options in sweep.DESIGNS.items():
        if not options:
            continue
        ov = sweep._overrides({**first, "design": options}, tmp_path / name / first["name"], 2)
        cfg = compose_config([*ov, "allow_unvalidated=true"])
        assert all(getattr(cfg, k) == v for k, v in options.items()), name
        for c in sweep.CONFIGS:
            if not c["design"]:
                cfg = config_from_dict({**composed[c["name"]].as_input(), **options, "allow_unvalidated": True})
                assert all(getattr(cfg, k) == v for k, v in options.items()), (name, c["name"])


def _table(values: dict) -> pd.DataFrame:
    rows = []
    for (task, kind, name), (v, lo, hi, n) in values.items():
        rows.append({"task": task, "kind": kind, "name": name, "value": v, "ci_low": v - 0.05, "ci_high": v + 0.05,
                     "n_train": 100, "n_test": 100, "n_placements": n, "scored_on": "test" if kind != "cue_auc" else "all",
                     "gate_low": lo, "gate_high": hi, "passed": None if np.isnan(lo) else bool(lo <= v <= hi),
                     "enforced": bool(not np.isnan(lo) and n >= 40), "description": ""})
    return pd.DataFrame(rows).astype(AUDIT_DTYPES)


def test_margins_and_the_report_say_which_configuration_fails_and_by_how_much():
    nan = float("nan")
    ok = _table({("vpt", "cue_auc", "prop_distance"): (0.55, 0.35, 0.65, 100),
                 ("vpt", "rule", "lens_points_at_ball_2d"): (0.60, 0.0, 0.65, 50),
                 ("vpt", "pixel_logreg", "pixels"): (0.50, 0.43, 0.57, 50),
                 ("vpt", "shuffled_control", "pixels_shuffled_labels"): (0.5, nan, nan, 50)})
    bad = _table({("vpt", "cue_auc", "prop_distance"): (0.30, 0.35, 0.65, 100),
                  ("vpt", "rule", "lens_points_at_ball_2d"): (0.74, 0.0, 0.65, 50),
                  ("vpt", "pixel_logreg", "pixels"): (0.58, 0.43, 0.57, 20),  # outside, but not enforced
                  ("vpt", "shuffled_control", "pixels_shuffled_labels"): (0.5, nan, nan, 50)})
    rows = []
    for name, t in (("good", ok), ("bad", bad)):
        g = sweep.gated(t)
        assert "shuffled_control" not in set(g.kind)  # reported only: no gate, no margin
        g.insert(0, "config", name)
        rows.append(g)
    rows = pd.concat(rows, ignore_index=True)
    m = rows.set_index(["config", "name"]).margin
    assert m["good", "prop_distance"] == pytest.approx(0.10) and m["good", "lens_points_at_ball_2d"] == pytest.approx(0.05)
    assert m["bad", "prop_distance"] == pytest.approx(-0.05) and m["bad", "lens_points_at_ball_2d"] == pytest.approx(-0.09)
    base = {"subset": "first5_01", "settings": 10, "frames": 2, "seed": 0, "size": 256, "oov": None}
    records = {n: {"config": {**base, "name": n, "frames": f}, "cpu_s": 1.0, "splits": {"train": 10, "test": 10},
                   "oov": 0.4, "facing_away_share": 0.24} for n, f in (("good", 4), ("bad", 2))}
    md = sweep.markdown(rows, records, ["--out", "x"])
    lines = md.splitlines()
    good = next(x for x in lines if x.startswith("| good |"))
    bad_line = next(x for x in lines if x.startswith("| bad |"))
    assert "PASS" in good and "+0.050 (vpt lens_points_at_ball_2d)" in good
    # the builder's validated range: stated from its rules, its own column, and the verdict counts only the
    # configurations inside it
    from tasks.threedpc.config import validated_range_text

    assert f"outside_validated_range`: {validated_range_text()})" in md
    assert "| default | inside |" in good and "| default | outside: frames=2 |" in bad_line
    assert ("**1 of 1 configurations inside the validated range pass.** Outside it (1, built with "
            "`allow_unvalidated=true`): bad fails.") in md
    assert "**FAIL** (2) (1 outside but not enforced)" in bad_line and "-0.090 (vpt lens_points_at_ball_2d)" in bad_line  # the pixel row: not enforced
    dist = next(x for x in lines if x.startswith("| vpt | rule | lens_points_at_ball_2d |"))
    # over the configurations inside the validated range; the failure outside it in its own column
    assert dist.endswith("| 0.600 | 0.600 | 0.600 | +0.050 | good | 0 | 1 |")
    assert lines.index(sweep.OUTSIDE_HEADING) < lines.index(bad_line) and lines.index(good) < lines.index(
        sweep.OUTSIDE_HEADING)
    assert "python benchmarks/validity_sweep.py --out x" in md
    # the reported (never gated) figures: one row per configuration, a blank cell where a build lacks one
    audit = pd.concat([_table({("vpt", "tree", "two_level_tree"): (0.91, nan, nan, 50),
                               ("depth", "tree", "two_level_tree"): (0.99, nan, nan, 50),
                               ("vpt", "contrast_auc", "lens_ball_angle:out_of_view"): (0.0, nan, nan, 50),
                               ("vpt", "cue_auc", "prop_distance"): (0.55, 0.35, 0.65, 100),
                               ("vpt", "cue_logreg", "17_image_cues_with_orientation"): (0.81, nan, nan, 50),
                               ("vpt", "cue_logreg", "16_image_cues"): (0.52, 0.0, 0.65, 50),
                               ("vpt", "pixel_cv", "pixels_scene_folds"): (0.55, nan, nan, 90)}).assign(config="good"),
                       _table({("vpt", "tree", "two_level_tree"): (0.62, nan, nan, 50)}).assign(config="bad")])
    rep = sweep.reported(audit)
    # the regression's cue count (it varies with the build) is not part of its key; its gated twin is not reported
    assert len(rep) == 6 and set(rep.kind) == {"tree", "contrast_auc", "cue_logreg", "pixel_cv"}
    assert list(rep[rep.kind == "cue_logreg"].name) == ["image_cues_with_orientation"]
    lines = sweep.markdown(rows, records, ["--out", "x"], rep=rep).splitlines()
    good = next(x for x in lines if x.startswith("| good | 0.910"))
    assert good.count(" | ") == 7 and "| 0.990 (" in good and "| 0.000 (" in good
    assert good.endswith("| 0.810 (0.760-0.860) | 0.550 (0.500-0.600) |")
    assert next(x for x in lines if x.startswith("| bad | 0.620")).endswith("|  |  |  |  |  |  |")


def test_unknown_configuration_is_refused_with_one_error_line(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "validity_sweep.py"), "--out", str(tmp_path),
                        "--only", "nope"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("error: --only ['nope']") and len(r.stderr.splitlines()) == 1


def test_a_finished_build_is_not_rebuilt(tmp_path, monkeypatch):
    c = sweep.CONFIGS[0]
    (tmp_path / c["name"]).mkdir()
    rec = {"config": c, "wall_s": 1.0, "cpu_s": 2.0}
    (tmp_path / c["name"] / "sweep_build.json").write_text(json.dumps(rec))
    import importlib

    build = importlib.import_module("tasks.threedpc.build")
    monkeypatch.setattr(build, "build", lambda *a, **k: pytest.fail("rebuilt a finished configuration"))
    assert sweep.build_one(c, tmp_path, 1) == rec


def test_pixel_cv_reads_a_label_the_pixels_carry_and_not_one_they_do_not(tiny_3dpc):
    """benchmarks/pixel_cv.py (30 Nov): the audit's pixel model in folds grouped by scene. On the TINY build's
    VPT frames, a label that is the image's brightness (above the median) is read at >= 0.8 by frames held out
    with their scene; the same label permuted over placements is not (a placement's frames share a label, as
    the audit's clusters assume); the CI brackets the figure and the counts are the build's."""
    sys.path.insert(0, str(ROOT / "benchmarks"))  # the scripts take their own folder off the path on import
    import pixel_cv

    from tasks.threedpc.shortcuts import cluster_ids, image_features

    meta = pd.read_parquet(tiny_3dpc / "metadata.parquet")
    vpt = meta.in_vpt.fillna(False).to_numpy(bool)
    x = image_features(tiny_3dpc, list(meta.file_name[vpt]), 32)
    bright = x.mean(1)
    label = pd.array([pd.NA] * len(meta), dtype="Int8")
    label[np.flatnonzero(vpt)] = (bright > np.median(bright)).astype(int)
    easy = meta.assign(vpt_label=label)
    r = pixel_cv.cv_accuracy(tiny_3dpc, "vpt", folds=3, n_boot=200, meta=easy)
    assert r["frames"] == int(vpt.sum()) and r["scenes"] == meta[vpt].scene.nunique()
    assert r["cv_accuracy"] >= 0.8 and r["ci_low"] <= r["cv_accuracy"] <= r["ci_high"]
    clusters = cluster_ids(meta[vpt])
    flip = np.random.default_rng(0).permutation(int(clusters.max()) + 1) % 2
    label[np.flatnonzero(vpt)] = flip[clusters]
    r = pixel_cv.cv_accuracy(tiny_3dpc, "vpt", folds=3, n_boot=200, meta=meta.assign(vpt_label=label))
    assert r["ci_low"] <= 0.5 + 1e-9 or r["cv_accuracy"] < 0.7
