"""Validity of the 3D-PC across build configurations (issue 35.4): build a grid, audit each, one table.

    python benchmarks/validity_sweep.py --out <dir> [--only NAME ...] [--no-build | --reassemble] [--workers 2]
                                        [--doc docs/validity_sweep.md]

A user who rebuilds the 3D-PC with other scenes, more settings or fewer frames must get a dataset whose labels
still cannot be read off 2D layout, orientation or raw pixels. This command builds the benchmark over a grid of
build options (:data:`CONFIGS`: scene subsets of the catalogue, settings per scene, frames per trajectory,
seeds, image size), each in its own folder ``<out>/<name>/`` with ``audit.enforce=false`` (a failing build is
kept and reported, not lost), runs the shortcut audit of each (``tasks.threedpc.shortcuts.shortcut_audit``
with the default gates, :class:`AuditConfig`) and writes

* ``<out>/validity_sweep.csv`` — one row per configuration × audit row that has a gate: the figure, its 95% CI,
  the gate, ``margin`` (distance to the nearer limit; negative = outside), passed, enforced;
  ``<out>/validity_sweep_orientation.csv`` — the 2D orientation cue's rows (reported, not gated by default)
  ``<out>/validity_sweep_reported.csv`` — the two-level trees and per-kind VPT contrasts (``REPORTED``, never gated)
  with their margin to the 0.65 limit they would have;
* ``--doc`` (default ``docs/validity_sweep.md``) — the configurations, pass/fail per configuration with its
  smallest margin, the distribution of every gated figure over the configurations, and the full wide table;
  with the command line and the date.

The builder refuses options outside its validated range (``tasks.threedpc.config.outside_validated_range``);
the sweep builds such configurations with ``allow_unvalidated=true`` and reports them in a table of their own
(``OUTSIDE_HEADING``), so the range rests on measurements: its verdict counts the configurations inside it.

Resumable: a configuration whose folder holds ``sweep_build.json`` (written when its build returned) is not
rebuilt; a build cut short resumes scene by scene (the builder's own resume). The audit is re-run on every
finished build each time (seconds), so a changed audit or gate re-scores the sweep without rebuilding;
``--reassemble`` runs the builder again on finished builds (seconds each: scenes kept, item selection, views
and audit anew), so a changed item selection (``depth_cue_band``) reaches the sweep without re-rendering.
The grid keeps each build to a few CPU minutes: no VPT-Strategy scenes (the audit does not use them) and
short trajectories, but at least 40 test placements each so that every gate is enforced
(``audit.min_placements``). Run long sweeps as ``nohup nice -n 19 ... &``.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import resource
import shlex
import sys
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

# the results page finds the configurations outside the validated range by this heading
from eval.results_3dpc_page import OUTSIDE_HEADING  # noqa: E402

CATEGORIES = ("bench", "car", "chair", "couch", "hydrant", "laptop", "motorcycle", "plant", "suitcase", "umbrella")
FIRST5, LAST5 = CATEGORIES[:5], CATEGORIES[5:]

# scene subsets of the catalogue: (scenes, scene_splits overrides). Five test scenes (5 × settings >= 40 test
# placements, audit.min_placements) and five training scenes keep a build to a few CPU minutes.
ALT_A = ("bench", "chair", "hydrant", "motorcycle", "suitcase")
ALT_B = ("car", "couch", "laptop", "plant", "umbrella")


def _subset(cats, train: str, test: str):
    scenes = [f"{c}_{i}" for c in cats for i in (train, test)]
    default = train in ("01", "02") and test == "03"
    return scenes, {} if default else {**{f"{c}_{train}": "train" for c in cats}, **{f"{c}_{test}": "test" for c in cats}}


SUBSETS = {
    "all10": ([f"{c}_{i}" for c in CATEGORIES for i in ("01", "03")], {}),  # every category: 10 train, 10 test
    "first5_01": _subset(FIRST5, "01", "03"),   # instance 01 trains, 03 tests (catalogue splits)
    "last5_01": _subset(LAST5, "01", "03"),
    "first5_02": _subset(FIRST5, "02", "03"),   # instance 02 trains
    "last5_02": _subset(LAST5, "02", "03"),
    "first5_swap": _subset(FIRST5, "03", "02"),  # other test instances: 02 tests, 03 trains (splits overridden)
    "altA_01": _subset(ALT_A, "01", "03"),
    "altB_02": _subset(ALT_B, "02", "03"),
}


def _cfg(name, subset, settings=10, frames=4, seed=0, size=256, oov=None, design=None):
    """One configuration; ``oov`` = out_of_view_fraction (None: the builder's default); ``design``: further
    builder options of a candidate design, e.g. ``{"depth_settings": 10}`` (None: the default design)."""
    return {"name": name, "subset": subset, "settings": settings, "frames": frames, "seed": seed, "size": size,
            "oov": oov, "design": dict(design or {})}


# the candidate design of 29 Nov (issue 35): the depth task on settings of its own whose observer faces a random
# direction (the gaze cue: an observer looking at the ball gives the depth order away), which lets facing-away
# VPT negatives be turned in depth so that the lens points at the ball in the image as a visible one's does
CANDIDATE = {"depth_settings": 10, "away_facing": "image"}
# whole-grid design variants (``--design``): every default-design configuration built with these options too
# (v5: the VPT viewer also looks across the sight line; its VPT frames do not balance depth jointly: human_n=0)
# (v4: the candidate alone, VPT frames on the bisector arc as by default, so the human subset is drawn as by default)
# (shared: depth on the VPT images, the paper's protocol and the default before 29 Nov; outside the validated range
# since: its depth items are ordered by the framing, centre_offset_diff, and the observer's gaze)
# (v6: no facing-away negatives, the VPT viewer across the sight line; v8: v6 with the viewer on either side;
# docs/validity.md, 29 Nov, eighth session)
DESIGNS = {"default": {}, "shared": {"depth_settings": 0}, "v4": dict(CANDIDATE),
           "v5": {**CANDIDATE, "vpt_arc_deg": 30, "human_n": 0},
           "v6": {"depth_settings": 10, "vpt_arc_deg": 30, "out_of_view_fraction": 0.0},
           "v8": {"depth_settings": 10, "vpt_arc_deg": 30, "out_of_view_fraction": 0.0, "vpt_arc_side": "either"}}


# the grid, in build order (the most telling first, so a sweep cut short still says something)
CONFIGS = [
    _cfg("all10_s10_f4", "all10", settings=10, frames=4),  # 20 scenes: about three times a small configuration
    _cfg("base", "first5_01", settings=10, frames=4),
    _cfg("last5_f2", "last5_01", settings=10, frames=2, seed=1),   # fewer frames
    _cfg("swap_f3", "first5_swap", settings=10, frames=3, seed=4),  # other test instances
    _cfg("altB_s12", "altB_02", settings=12, frames=3, seed=8),    # more settings, a mixed subset
    _cfg("size384", "last5_02", settings=10, frames=3, size=384, seed=5),
    _cfg("size192", "altA_01", settings=10, frames=4, size=192, seed=6),
    _cfg("s16_f2", "first5_02", settings=16, frames=2, seed=2),    # more settings, fewer frames (issue 35)
    _cfg("oov20", "first5_01", settings=10, frames=4, oov=0.2),    # half the facing-away share
    _cfg("f8", "last5_01", settings=10, frames=8, seed=3),
    _cfg("altA_s10", "altA_01", settings=10, frames=3, seed=7),
    # 20 scenes again (about 90 test placements: the pixel regression's noise halves), other seeds, few frames
    _cfg("all10_s12_f3", "all10", settings=12, frames=3, seed=9),
    _cfg("all10_s10_f2", "all10", settings=10, frames=2, seed=10),
    # the failures' own scene subsets and seeds with one frame more (issue 35: is it the frames?), and the
    # facing-away share above the default's (2 of 5 not-visible settings per scene; oov20's 1 of 5 fails;
    # 0.3 and 0.5 round to 2 of 5 as 0.4 does: build.scene_placements)
    _cfg("last5_f3", "last5_01", settings=10, frames=3, seed=1),
    _cfg("all10_s10_f3", "all10", settings=10, frames=3, seed=10),
    _cfg("s16_f3", "first5_02", settings=16, frames=3, seed=2),
    _cfg("oov60", "first5_01", settings=10, frames=4, oov=0.6),
    # the design before 29 Nov (depth on the VPT images, the paper's protocol; outside the validated range since),
    # then candidate designs: the turned-in-depth facing-away negatives, on the configuration that failed the
    # default design's VPT pixel gate
    _cfg("base_shared", "first5_01", settings=10, frames=4, design={"depth_settings": 0}),
    _cfg("all10_s10_f2_v4", "all10", settings=10, frames=2, seed=10, design=CANDIDATE),
    # and the VPT viewer looking across the sight line (vpt_arc_deg); its VPT frames no longer balance depth
    # jointly, so no human subset yet (human_n=0: the subset of a depth-only design is still to be designed)
    _cfg("all10_s10_f2_v5", "all10", settings=10, frames=2, seed=10,
         design={**CANDIDATE, "vpt_arc_deg": 30, "human_n": 0}),
]


def overrides(c: dict, folder: Path, workers: int) -> list[str]:
    """Hydra overrides of ``python -m tasks.threedpc`` for configuration ``c`` (with ``allow_unvalidated=true``
    when it lies outside the builder's validated range: the sweep measures those too)."""
    ov = _overrides(c, folder, workers)
    return ov + ["allow_unvalidated=true"] if outside_range(c) else ov


def outside_range(c: dict) -> list[str]:
    """What of configuration ``c`` lies outside the builder's validated range
    (``tasks.threedpc.config.outside_validated_range``; empty: inside), one sentence each."""
    return list(_outside_range(json.dumps(c, sort_keys=True)))


@functools.lru_cache(maxsize=None)
def _outside_range(key: str) -> tuple[str, ...]:  # a Hydra compose per configuration, once
    from tasks.threedpc.config import compose_config, outside_validated_range

    ov = _overrides(json.loads(key), Path("unbuilt"), 1) + ["allow_unvalidated=true"]
    return tuple(outside_validated_range(compose_config(ov)))


def _range_cell(c: dict) -> str:
    """The configurations table's cell: inside, or the fields outside the validated range."""
    why = outside_range(c)
    return "inside" if not why else "outside: " + ", ".join(w.split(" ", 1)[0].rstrip(":") for w in why)


def _overrides(c: dict, folder: Path, workers: int) -> list[str]:
    scenes, splits = SUBSETS[c["subset"]]
    ov = [f"scenes=[{','.join(scenes)}]", f"settings={c['settings']}", f"frames={c['frames']}",
          f"seed={c['seed']}", f"size={c['size']}", f"human_n={c.get('design', {}).get('human_n', 8)}",
          f"workers={workers}", "audit.enforce=false",
          f"out={folder}"]
    if c.get("oov") is not None:
        ov.append(f"out_of_view_fraction={c['oov']}")
    ov += [f"{k}={v}" for k, v in sorted(c.get("design", {}).items()) if k != "human_n"]
    if splits:
        ov.append("scene_splits={" + ",".join(f"{k}:{v}" for k, v in sorted(splits.items())) + "}")
    return ov


def _cpu_seconds() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _timed_build(ov: list[str]) -> dict:
    """Run the builder with overrides ``ov``: its wall and CPU seconds (children included) and when it ended."""
    from tasks.threedpc.build import build
    from tasks.threedpc.config import compose_config

    t0, cpu0 = time.time(), _cpu_seconds()
    build(compose_config(ov), progress=False)
    return {"wall_s": round(time.time() - t0, 1), "cpu_s": round(_cpu_seconds() - cpu0, 1),
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def build_one(c: dict, out: Path, workers: int, reassemble: bool = False) -> dict:
    """Build configuration ``c`` in ``out/<name>`` unless finished; returns its record (sweep_build.json).
    ``reassemble``: run the builder again on a finished build (it keeps every scene whose files match its
    manifest and assembles anew: the item selection, views and audit of today's code); the record keeps the
    original build's cost and adds the re-assembly's."""
    from infra.files import atomic_write_text

    folder = out / c["name"]
    done = folder / "sweep_build.json"
    ov = overrides(c, folder, workers)
    if done.exists():
        rec = json.loads(done.read_text())
        if not reassemble:
            return rec
        rec["reassembled"] = _timed_build(ov)
        atomic_write_text(done, json.dumps(rec, indent=2))
        print(f"[{time.strftime('%H:%M:%S')}] re-assembled {c['name']}: {rec['reassembled']['cpu_s']} CPU-s", flush=True)
        return rec
    print(f"[{time.strftime('%H:%M:%S')}] building {c['name']}: {' '.join(shlex.quote(o) for o in ov)}", flush=True)
    t = _timed_build(ov)
    rec = {"config": c, "overrides": ov, "wall_s": t["wall_s"], "cpu_s": t["cpu_s"], "finished": t["at"]}
    atomic_write_text(done, json.dumps(rec, indent=2))
    print(f"[{time.strftime('%H:%M:%S')}] built {c['name']}: {rec['wall_s']} s wall, {rec['cpu_s']} CPU-s", flush=True)
    return rec


def audit_one(c: dict, out: Path):
    """The shortcut audit (default gates) of a finished build, as a table with the configuration's columns."""
    import pandas as pd

    from tasks.threedpc.shortcuts import AuditConfig, shortcut_audit

    folder = out / c["name"]
    meta = pd.read_parquet(folder / "metadata.parquet")
    table = shortcut_audit(meta, folder, AuditConfig())
    table.insert(0, "config", c["name"])
    return table


def gated(table):
    """The rows of an audit table that have a gate, with ``margin`` = distance to the nearer limit (< 0: outside)."""
    import numpy as np

    t = table[np.isfinite(table.gate_low.to_numpy(float))].copy()
    t["margin"] = np.minimum(t.value - t.gate_low, t.gate_high - t.value)
    return t


def orientation(table, limit: float = 0.65):
    """The VPT rows of the 2D orientation cue (reported, not gated by default: ``AuditConfig.vpt_orientation_max``)
    with ``margin`` to the limit ``limit`` it would have if gated (rule <= limit, AUC in [1 - limit, limit])."""
    import numpy as np

    from tasks.threedpc.shortcuts import ORIENTATION

    t = table[(table.task == "vpt") & table.name.isin(ORIENTATION)].copy()
    auc = (t.kind == "cue_auc").to_numpy()
    t["margin"] = np.where(auc, np.minimum(t.value - (1 - limit), limit - t.value), limit - t.value)
    return t


# reported beside the gates (issue 35, 29 Nov): the two-level trees and the per-kind VPT contrasts of the cues
# that give each kind of not-visible image away
REPORTED = (("vpt", "tree", "two_level_tree"), ("depth", "tree", "two_level_tree"),
            ("depth", "tree", "two_level_tree_image"),
            ("vpt", "contrast_auc", "props_midpoint_offset:occluded"),
            ("vpt", "contrast_auc", "lens_ball_angle:out_of_view"),
            ("vpt", "cue_logreg", "image_cues_with_orientation"), ("vpt", "pixel_cv", "pixels_scene_folds"))


def reported(table):
    """The audit rows of ``REPORTED`` (never gated); a regression's name loses its cue count
    (``17_image_cues_with_orientation`` → ``image_cues_with_orientation``), which varies with the build."""
    import re

    t = table.copy()
    reg = (t.kind == "cue_logreg").to_numpy(bool)
    t.loc[reg, "name"] = [re.sub(r"^\d+_", "", n) for n in t.loc[reg, "name"]]
    keys = set(REPORTED)
    return t[[(r.task, r.kind, r.name) in keys for r in t.itertuples()]].copy()


def _reported_lines(rep, names: list[str]) -> list[str]:
    """The markdown section of the ``REPORTED`` rows: one column per figure, one row per configuration."""
    if rep is None or not len(rep):
        return []
    head = ["VPT two-level tree", "depth two-level tree", "depth two-level tree, image cues only",
            "VPT props_midpoint_offset, visible vs occluded (AUC)", "VPT lens_ball_angle, visible vs facing away (AUC)",
            "VPT regression on the image cues with the lens direction", "VPT pixel regression, scene folds over all frames"]
    lines = ["", "## Reported, not gated: two-level rules and per-kind contrasts", "",
             "A two-level decision tree on all of the audit's cues (three thresholds at most, fitted on train, test "
             "accuracy) and two single cues on the visible images against one kind of not-visible image "
             "(`contrast_auc` rows). The pooled single-cue AUCs above can sit inside their gates while each kind of "
             "negative is given away by its own cue: the props' midpoint sits on the object in occluded images and "
             "the lens points away from the ball in facing-away ones; the sixth column is the regression on the image "
             "cues with the lens direction taken in (its gated twin leaves it out while the orientation cue is "
             "ungated, `audit.vpt_orientation_max`): the two cues together; the last, the audit's pixel model in "
             "folds grouped by scene over every frame (`pixel_cv`; the gated figure rests on one split's 5-10 test "
             "scenes, docs/validity.md, 30 Nov). On depth items posed on the VPT images "
             "(`base_shared`) the depth tree reads where the observer looks (at the ball, or straight away from it) "
             "together with whether it faces the viewer: an observer that looks at the ball with its back to the "
             "viewer has the ball beyond it. On depth settings of their own, its splits pair the props' size ratio "
             "in the image (`pixel_ratio` or `projected_size_ratio`) with their physical size ratio (`size_ratio`), a "
             "scene parameter no image shows: together they are the distance ratio, i.e. the label; the tree on "
             "image cues only (`IMAGE_CUES` of `tasks/threedpc/shortcuts.py`) is what an image allows. The fitted rules are in each build's "
             "`shortcut_audit.csv` (`description`). See docs/results.md, \"What a two-level rule can do\".", "",
             "| config | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for n in names:
        g = rep[rep.config == n]
        cells = []
        for task, kind, name in REPORTED:
            x = g[(g.task == task) & (g.kind == kind) & (g.name == name)]
            cells.append("" if not len(x) else f"{x.value.iloc[0]:.3f} ({x.ci_low.iloc[0]:.3f}-{x.ci_high.iloc[0]:.3f})")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def _reassembly_lines(records: dict) -> list[str]:
    """A note on the builds re-assembled with ``--reassemble`` (their scenes rendered earlier)."""
    again = {n: r["reassembled"] for n, r in records.items() if "reassembled" in r}
    if not again:
        return []
    last = max(r["at"] for r in again.values())[:16].replace("T", " ")
    return [f"{len(again)} of {len(records)} builds were re-assembled by `--reassemble` (last at {last} UTC): their "
            "scenes as rendered before, their item selection, views and audit by today's code. Build CPU-s is the "
            "original build's.", ""]


CONFIG_COLUMNS = ("config", "scene subset", "settings", "frames", "seed", "size",
                  "out_of_view_fraction (facing-away share of VPT images)", "design options", "validated range",
                  "scenes (train/val/test)", "test placements", "depth items (cue-matching dropped)", "build CPU-s",
                  "result", "smallest margin (figure)")


def _config_table(rows, records: dict, names: list[str]) -> list[str]:
    """The configurations table (Markdown lines) of ``names``: options, sizes, cost, pass/fail, smallest margin."""
    lines = ["| " + " | ".join(CONFIG_COLUMNS) + " |", "|" + "---|" * len(CONFIG_COLUMNS)]
    for n in names:
        r = rows[rows.config == n]
        c = records[n]["config"]
        counts = records[n].get("splits", {})
        outside = r[r.passed.fillna(True).eq(False)]
        fail = outside[outside.enforced.fillna(False)]
        noise = len(outside) - len(fail)
        worst = r.loc[r.margin.idxmin()]
        tp = int(r[r.scored_on == "test"].n_placements.max())
        lines.append(f"| {n} | {c['subset']} | {c['settings']} | {c['frames']} | {c['seed']} | {c['size']} | "
                     f"{records[n]['oov']} ({records[n]['facing_away_share']:.3f}) | "
                     f"{' '.join(f'{k}={v}' for k, v in sorted(c.get('design', {}).items())) or 'default'} | "
                     f"{_range_cell(c)} | {sum(counts.values())} ({counts.get('train', 0)}/{counts.get('val', 0)}/{counts.get('test', 0)}) | {tp} | "
                     f"{records[n].get('depth_items', ('', ''))[0]} ({records[n].get('depth_items', ('', ''))[1]}) | "
                     f"{records[n].get('cpu_s', '')} | {'PASS' if not len(fail) else f'**FAIL** ({len(fail)})'}"
                     f"{f' ({noise} outside but not enforced)' if noise else ''} "
                     f"| {worst.margin:+.3f} ({worst.task} {worst['name']}) |")
    return lines


def _failed(rows):
    """Per row: outside its gate and enforced (a failure)."""
    return rows.passed.fillna(True).eq(False) & rows.enforced.fillna(False).astype(bool)


def failing(rows) -> list[str]:
    """Configurations with a figure outside its gate and enforced, in table order."""
    return list(dict.fromkeys(rows[_failed(rows)].config))


def _range_verdict(rows, inside: list[str], out: list[str]) -> str:
    """One sentence: how many configurations inside the validated range pass, and what the others did."""
    bad = set(failing(rows))
    text = f"**{sum(n not in bad for n in inside)} of {len(inside)} configurations inside the validated range pass.**"
    if out:
        text += (f" Outside it ({len(out)}, built with `allow_unvalidated=true`): "
                 + ", ".join(f"{n} {'fails' if n in bad else 'passes'}" for n in out) + ".")
    return text


def markdown(rows, records: dict, argv: list[str], orient=None, rep=None, grid=None) -> str:
    """docs/validity_sweep.md from the long table ``rows`` (one row per configuration × gated figure)."""
    import numpy as np
    import pandas as pd

    from tasks.threedpc.config import validated_range_text

    names = list(dict.fromkeys(rows.config))
    beyond = [n for n in names if outside_range(records[n]["config"])]
    inside = [n for n in names if n not in beyond]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/validity_sweep.py " + " ".join(shlex.quote(a) for a in argv)
    lines = ["# 3D-PC validity across build configurations (issue 35.4)", "",
             f"Generated by `{cmd}` on {now} (`benchmarks/validity_sweep.py`; do not edit by hand). Each configuration "
             "is a full 3D-PC build (`python -m tasks.threedpc` with the overrides below, `human_n=8`, no VPT-Strategy "
             "scenes) audited by `tasks/threedpc/shortcuts.py` with the default gates (`AuditConfig`). Single-cue AUCs "
             "are scored on all of the task's frames; rules and regressions are fitted on the train scenes and scored on "
             "the held-out test scenes. `margin` = distance of the figure to the nearer limit of its gate (negative: "
             "outside). A gate is enforced when its figure rests on >= 40 placements. `depth items`: the depth task's "
             "images after balancing and the cue matching of `depth_cue_band` (`tasks/threedpc/select.py`), with how "
             "many balanced candidates the matching dropped.", "",
             *_reassembly_lines(records),
             "## Configurations", "",
             "The builder refuses options outside its validated range (`tasks.threedpc.config.outside_validated_range`: "
             f"{validated_range_text()}) unless `allow_unvalidated=true`; "
             "the sweep builds the configurations outside it with that flag, to show why they are refused. "
             + _range_verdict(rows, inside, beyond), "",
             *_config_table(rows, records, inside)]
    if beyond:
        lines += ["", OUTSIDE_HEADING, "",
                  "Refused by the builder unless `allow_unvalidated=true` (built with it here, to show why; the "
                  "`validated range` column names the fields outside it).", "",
                  *_config_table(rows, records, beyond)]
    missing = [c["name"] for c in (CONFIGS if grid is None else grid) if c["name"] not in names]
    if missing:
        lines += ["", f"Not built yet (the same command resumes them): {', '.join(missing)}."]
    lines += ["", "## Every gated figure over the configurations", "",
              "min / median / max over the configurations inside the validated range, the smallest margin and in "
              "which configuration; the last column counts the failures of the configurations outside it.", "",
              "| task | kind | figure | gate | min | median | max | smallest margin | where | failures | failures outside the range |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    key = ["task", "kind", "name"]
    fails = _failed(rows)
    for (task, kind, name), g in rows[~rows.config.isin(beyond)].groupby(key, sort=False):
        w = g.loc[g.margin.idxmin()]
        nfail = int(fails[g.index].sum())
        sel = rows.config.isin(beyond) & (rows.task == task) & (rows.kind == kind) & (rows["name"] == name)
        lines.append(f"| {task} | {kind} | {name} | [{g.gate_low.iloc[0]:.2f}, {g.gate_high.iloc[0]:.2f}] | "
                     f"{g.value.min():.3f} | {np.median(g.value):.3f} | {g.value.max():.3f} | {w.margin:+.3f} | "
                     f"{w.config} | {nfail} | {int(fails[sel].sum())} |")
    if orient is not None and len(orient):
        lines += ["", "## Reported, not gated: the 2D orientation cue (VPT)", "",
                  "\"The lens axis points within N° of the ball in the image → visible\" (N fitted on train, test "
                  "accuracy) and the AUC of that angle (`lens_ball_angle`). Not gated by default "
                  "(`audit.vpt_orientation_max`, see `AuditConfig`); the margin is to the limit 0.65 it would have "
                  "beside the other rules (negative: it would fail).", "",
                  "| config | rule (95% CI) | rule margin | cue AUC (95% CI) | AUC margin |", "|---|---|---|---|---|"]
        for n in names:
            o = orient[orient.config == n]
            if len(o) < 2:
                continue
            r, a = o[o.kind == "rule"].iloc[0], o[o.kind == "cue_auc"].iloc[0]
            lines.append(f"| {n} | {r.value:.3f} ({r.ci_low:.3f}-{r.ci_high:.3f}) | {r.margin:+.3f} | "
                         f"{a.value:.3f} ({a.ci_low:.3f}-{a.ci_high:.3f}) | {a.margin:+.3f} |")
    lines += _reported_lines(rep, names)
    lines += ["", "## Full table (value, margin)", "",
              "| task | kind | figure | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    for (task, kind, name), g in rows.groupby(key, sort=False):
        cells = []
        for n in names:
            x = g[g.config == n]
            if not len(x):
                cells.append("")
                continue
            x = x.iloc[0]
            outside = x.passed is not pd.NA and x.passed is not None and not bool(x.passed)
            cell = f"{x.value:.3f} ({x.margin:+.3f})"
            cells.append((f"**{cell}**" if bool(x.enforced) else f"*{cell}*") if outside else cell)
        lines.append(f"| {task} | {kind} | {name} | " + " | ".join(cells) + " |")
    lines += ["", "Bold: outside its gate and enforced (a failure); italics: outside its gate but its 95% CI still "
              "includes chance (0.5), so not enforced (`audit.beyond_chance`). Build cost measured on the shared 2-core machine under `nice -n 19` "
              "(CPU seconds of the build process and its workers).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python benchmarks/validity_sweep.py", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder holding one build folder per configuration")
    ap.add_argument("--only", nargs="*", default=None, help="configuration names (default: all)")
    ap.add_argument("--no-build", action="store_true", help="only audit the finished builds")
    ap.add_argument("--reassemble", action="store_true",
                    help="run the builder again on finished builds: re-assemble them (item selection, views, audit) "
                         "with today's code, keeping their rendered scenes")
    ap.add_argument("--workers", type=int, default=2, help="build processes per configuration")
    ap.add_argument("--design", default="default", choices=sorted(DESIGNS),
                    help="build every default-design configuration with a candidate design's options (DESIGNS); "
                         "use its own --out and --doc")
    ap.add_argument("--doc", default=str(Path(_here).parent / "docs" / "validity_sweep.md"),
                    help="markdown report to write (default docs/validity_sweep.md)")
    args = ap.parse_args(argv)
    known = [c["name"] for c in CONFIGS]
    if args.only is not None and not set(args.only) <= set(known):
        print(f"error: --only {sorted(set(args.only) - set(known))}: unknown configuration(s); known: {known}",
              file=sys.stderr)
        return 2
    import pandas as pd

    from infra.files import atomic_write_text, write_table

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    grid = CONFIGS if args.design == "default" else [
        {**c, "design": dict(DESIGNS[args.design])} for c in CONFIGS if not c["design"]]
    todo = [c for c in grid if args.only is None or c["name"] in args.only]
    records, tables, orients, reps = {}, [], [], []
    for c in todo:
        done = out / c["name"] / "sweep_build.json"
        if args.no_build and not done.exists():
            continue
        records[c["name"]] = build_one(c, out, args.workers, args.reassemble and not args.no_build)
    for c in todo:
        if c["name"] not in records:
            continue
        t = audit_one(c, out)
        meta = pd.read_parquet(out / c["name"] / "metadata.parquet")
        records[c["name"]]["splits"] = meta.drop_duplicates("scene").split.value_counts().to_dict()
        dropped = int(meta["cue_dropped_depth"].sum()) if "cue_dropped_depth" in meta else 0
        records[c["name"]]["depth_items"] = (int(meta.in_depth.fillna(False).sum()), dropped)
        vpt = meta[meta.in_vpt.fillna(False).astype(bool)]
        records[c["name"]]["facing_away_share"] = float((vpt.vpt_reason == "out_of_view").mean())
        records[c["name"]]["oov"] = json.loads((out / c["name"] / "config.json").read_text())["out_of_view_fraction"]
        tables.append(gated(t))
        orients.append(orientation(t))
        reps.append(reported(t))
        print(f"audited {c['name']}: smallest margin {tables[-1].margin.min():+.3f}", flush=True)
    if not tables:
        print("error: no finished build to audit", file=sys.stderr)
        return 2
    rows = pd.concat(tables, ignore_index=True)
    orient = pd.concat(orients, ignore_index=True)
    write_table(rows, out / "validity_sweep")
    rep = pd.concat(reps, ignore_index=True)
    write_table(orient, out / "validity_sweep_orientation")
    write_table(rep, out / "validity_sweep_reported")
    atomic_write_text(Path(args.doc), markdown(rows, records, argv, orient, rep, grid))
    print(f"wrote {out / 'validity_sweep.csv'} and {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
