"""Assemble built scenes into the dataset: metadata, ImageFolder views, human subset, manifest, summary.

Everything here is derived from the per-scene label tables and images, deterministically, so it is
simply redone on every (re-)run.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..labels import LABEL_RULE_VERSION
from .config import BuildConfig, ConfigError, outside_validated_range
from .layout import DEPTH_ONLY, LABELS_FILE, VIEWS, scene_dir_of, scene_rng


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _flat(row) -> str:
    return f"{Path(row.scene).stem}_s{int(row.setting):02d}_f{int(row.frame):03d}.png"


def human_subset(df, n: int, rng: np.random.Generator, labels: tuple[str, ...] = ("vpt_label", "depth_label")):
    """Indices of ``n`` test images of ``df`` balanced jointly on ``labels``, spread over scenes.

    Two labels (vpt, depth; one set for both tasks, as the paper's 94 images): cells (0,0),(0,1),(1,0),(1,1) get
    ⌊n/4⌋ each and the remainder goes to the mixed cells first (94 → 23/24/24/23). One label (a task's own
    set): ⌊n/2⌋ per class, the remainder to class 1 (94 → 47/47)."""
    cand = df[(df.split == "test") & df.keep]
    for lab in labels:
        cand = cand[cand[lab].notna()]
    # cells in drawing order; the remainder goes to the cells first in ``extra_first``
    cells, extra_first = ([(0, 0), (0, 1), (1, 0), (1, 1)], [(0, 1), (1, 0), (0, 0), (1, 1)]) if len(labels) == 2 \
        else ([(0,), (1,)], [(1,), (0,)])
    base, rem = divmod(n, len(cells))
    chosen = []
    for c in cells:
        pool = cand
        for lab, v in zip(labels, c):
            pool = pool[pool[lab] == v]
        want = base + (1 if c in extra_first[:rem] else 0)
        if len(pool) < want:
            cell = ", ".join(f"{lab.split('_')[0]} {v}" for lab, v in zip(labels, c))
            raise ConfigError(f"human subset: only {len(pool)} test images with {cell}, need {want}; "
                              "lower human_n or build more test scenes/settings")
        # round-robin over scenes (each scene's images in random order) spreads the subset evenly
        by_scene = {s: list(rng.permutation(g.index.to_numpy())) for s, g in pool.groupby("scene", sort=True)}
        picked = []
        while len(picked) < want:
            for s in sorted(by_scene):
                if by_scene[s] and len(picked) < want:
                    picked.append(by_scene[s].pop())
        chosen += picked
    return sorted(chosen)


def human_subsets(df, cfg: BuildConfig, candidates) -> tuple[list, list]:
    """(VPT human set, depth human set) as row indices of ``df`` (``human_n`` images each, test split).

    With the depth task on the VPT images (``depth_settings=0``, the paper's protocol) one set serves both
    tasks, balanced jointly on the two labels. With depth settings of their own each task draws its set from
    its own candidate frames (``candidates``: :func:`task_candidates`' masks, before label balancing and the
    depth items' cue matching, so that changing ``depth_cue_band`` leaves the human sets as they are), balanced
    on its label: the VPT frames then need not balance depth (``vpt_arc_deg`` arcs do not flip it), and people
    judge depth order on the kind of image the models are tested on (the depth-only settings')."""
    if not cfg.human_n:
        return [], []
    rng = scene_rng(cfg, "__human__")
    if not cfg.depth_settings:  # the VPT candidates are the depth task's frames too
        both = human_subset(df[candidates[0]], cfg.human_n, rng)
        return both, both
    vpt = human_subset(df[candidates[0]], cfg.human_n, rng, ("vpt_label",))
    depth = human_subset(df[candidates[1]], cfg.human_n, rng, ("depth_label",))
    return vpt, depth


def task_candidates(df):
    """(in_vpt, in_depth) before balancing: kept basic-task frames with the task's label. With depth-only
    settings in the build (``requested == "depth_only"``, ``BuildConfig.depth_settings``) the depth task takes
    them alone and the VPT task never does; otherwise both tasks share the frames (the paper's protocol)."""
    basic = (df.task_set == "basic").to_numpy(bool)
    kept = df.keep.fillna(False).to_numpy(bool)
    depth_only = df.requested.eq(DEPTH_ONLY).fillna(False).to_numpy(bool)
    in_vpt = basic & ~depth_only & kept & df.vpt_label.notna().to_numpy(bool)
    in_depth = basic & (depth_only if depth_only.any() else True) & kept & df.depth_label.notna().to_numpy(bool)
    return in_vpt, in_depth


def build_views(out: Path, df) -> None:
    """The ImageFolder views (hard links to the images) for the rows of ``df``: every source is checked
    first, the views are built in a temporary folder and swapped in one by one, so a failure never leaves
    the previous views destroyed or half-built."""
    from infra.outputs import mark_owned  # the views carry Vantage's mark: overwrite=true deletes them whole

    sources = [f for f in df.file_name if f]
    missing = [f for f in sources if not (out / f).is_file()]
    if missing:
        raise ConfigError(f"{out}: {len(missing)} image(s) listed by the scene label files are missing "
                          f"({', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}); run the build again to "
                          "rebuild their scenes (the ImageFolder views were left untouched)")
    stage = out / f".views.tmp{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    for v in VIEWS:
        (stage / v).mkdir(parents=True)
        mark_owned(stage / v)
    for row in df.itertuples():
        if not row.file_name:
            continue
        src = out / row.file_name
        if row.in_vpt:
            _link(src, stage / "vpt" / row.split / str(int(row.vpt_label)) / _flat(row))
        if row.in_depth:
            _link(src, stage / "depth" / row.split / str(int(row.depth_label)) / _flat(row))
        if row.in_strategy:
            _link(src, stage / "vpt_strategy" / "test" / str(int(row.vpt_label)) / _flat(row))
        if row.in_human_vpt:
            _link(src, stage / "human" / "vpt" / str(int(row.vpt_label)) / _flat(row))
        if row.in_human_depth:
            _link(src, stage / "human" / "depth" / str(int(row.depth_label)) / _flat(row))
    for v in VIEWS:
        old = out / f".{v}.old.tmp{os.getpid()}"
        if (out / v).exists():
            os.replace(out / v, old)
        os.replace(stage / v, out / v)
        if old.exists():
            shutil.rmtree(old)
    stage.rmdir()


def compare_manifest(path: Path, images: dict[str, str]) -> list[str]:
    """Paths whose sha256 differs from the previous manifest at ``path`` (reported, never silently
    accepted: a re-run repairs damaged scenes first, so a difference left here is a real change)."""
    import logging

    try:
        prev = json.loads(path.read_text()).get("images") or {}
    except (OSError, ValueError):
        return []
    modified = sorted(f for f, h in images.items() if f in prev and prev[f] != h)
    if modified:
        logging.getLogger(__name__).warning(
            "%d image(s) differ from the previous manifest.json (recorded as modified_since_previous_manifest): %s",
            len(modified), ", ".join(modified[:5]))
    return modified


def assemble(cfg: BuildConfig, thumbs: dict | None = None) -> None:
    """Everything after the scenes: metadata, views, manifest, summary and the shortcut audit. ``thumbs``:
    the audit's image thumbnails the scene jobs made while writing the frames ({file_name: 8-bit array};
    ``shortcuts.image_features``), so the audit need not decode those files again; same output."""
    import pandas as pd

    from infra.files import atomic_write_text
    out = Path(cfg.out)
    tables = []
    rejections: dict[str, dict[str, int]] = {}
    captures: dict[str, dict] = {}
    for name in cfg.scenes:
        d = scene_dir_of(cfg, name)
        tables.append(pd.read_parquet(d / LABELS_FILE))
        rejections[name] = scene_rejections(d)
        record = scene_record(d)
        if record:
            captures[name] = record
    df = pd.concat(tables, ignore_index=True)
    df["in_vpt"], df["in_depth"] = task_candidates(df)
    candidates = df.in_vpt.to_numpy(bool).copy(), df.in_depth.to_numpy(bool).copy()  # before balance and selection
    # Balance each task's labels within each split by dropping a seeded random sample of the majority
    # label (recorded per image in balance_dropped_<task>); occluded settings lose more frames to hidden
    # props than visible ones, so VPT would otherwise lean towards 1.
    for task, col, lab in (("vpt", "in_vpt", "vpt_label"), ("depth", "in_depth", "depth_label")):
        flag = f"balance_dropped_{task}"
        df[flag] = False
        rng = scene_rng(cfg, f"__balance_{task}__")
        for sp in sorted(df.loc[df[col], "split"].unique()):
            sel = df[col] & (df.split == sp)
            n0, n1 = int((df.loc[sel, lab] == 0).sum()), int((df.loc[sel, lab] == 1).sum())
            major = 0 if n0 > n1 else 1
            idx = df.index[sel & (df[lab] == major)].to_numpy()
            drop = rng.choice(idx, size=abs(n0 - n1), replace=False) if n0 != n1 else []
            df.loc[drop, flag] = True
            df.loc[drop, col] = False
    # depth items matched on single image cues (tasks/threedpc/select.py): no layout cue decides the order
    from .select import depth_selection

    df["cue_dropped_depth"] = False
    drop, selection = depth_selection(df, cfg.depth_cue_band)
    df.loc[drop, "cue_dropped_depth"] = True
    df.loc[drop, "in_depth"] = False
    df["in_strategy"] = df.task_set == "strategy"
    human_vpt, human_depth = human_subsets(df, cfg, candidates)
    df["in_human_vpt"], df["in_human_depth"] = False, False
    df.loc[human_vpt, "in_human_vpt"] = True
    df.loc[human_depth, "in_human_depth"] = True
    df["in_human"] = df.in_human_vpt | df.in_human_depth  # in either task's human set
    df["size_ratio"] = df.ball_size / df.observer_size
    df["pixel_ratio"] = df.ball_pixels / df.observer_pixels.clip(lower=1)
    df["prop_distance"] = np.linalg.norm(df[["observer_x", "observer_y", "observer_z"]].to_numpy(float)
                                         - df[["ball_x", "ball_y", "ball_z"]].to_numpy(float), axis=1)

    # the shortcut audit (tasks/threedpc/shortcuts.py) needs only this table and the images: it runs in a
    # thread while the views, tables and manifest are written (numpy, sklearn, hashing and file writes
    # release the GIL), on its own copy of the table; its outputs are written by it, the summary after both
    from concurrent.futures import ThreadPoolExecutor

    from .shortcuts import enforce, run_build_audit

    with ThreadPoolExecutor(1, thread_name_prefix="3dpc-audit") as ex:
        audit = ex.submit(run_build_audit, df.copy(), out, cfg.audit, thumbs)
        counts = _write_tables(cfg, out, df, rejections, captures, selection)
        audit_table, audit_md = audit.result()
    atomic_write_text(out / "summary.md", summary_markdown(cfg, df, counts, rejections, selection) + audit_md)
    enforce(audit_table, out, cfg.audit)


def _write_tables(cfg: BuildConfig, out: Path, df, rejections: dict, captures: dict | None = None,
                 selection: dict | None = None) -> dict:
    """The views, metadata tables and manifest of an assembled build; returns the per-task counts.
    ``selection``: the depth items' cue matching (:func:`tasks.threedpc.select.depth_selection`), recorded in
    the manifest when it dropped frames or could not meet its band (a build it leaves unchanged keeps the
    manifest it had without it)."""
    from infra.files import package_version, write_table
    from infra.images import DEFLATE
    from infra.files import atomic_write_text

    build_views(out, df)
    write_table(df, out / "metadata")

    images = sorted(out / f for f in df.file_name if f)
    counts = {}
    for task, col, lab in (("vpt", "in_vpt", "vpt_label"), ("depth", "in_depth", "depth_label"),
                           ("vpt_strategy", "in_strategy", "vpt_label")):
        sub = df[df[col]]
        counts[task] = {f"{sp}/{int(lb)}": int(n) for (sp, lb), n in sub.groupby(["split", lab]).size().items()}
    if cfg.depth_settings:
        counts["human"] = {f"{task}{int(v)}": int(n) for task in ("vpt", "depth")
                           for v, n in df[df[f"in_human_{task}"]].groupby(f"{task}_label").size().items()}
    else:
        counts["human"] = {f"vpt{int(a)}_depth{int(b)}": int(n) for (a, b), n in
                           df[df.in_human].groupby(["vpt_label", "depth_label"]).size().items()}
    manifest = {
        "dataset": "3D-PC (Vantage)", "vantage_version": package_version(), "png_deflate": DEFLATE,
        "label_rule_version": LABEL_RULE_VERSION,
        "seed": cfg.seed, "config": json.loads(json.dumps(cfg.identity(), default=list)), "counts": counts,
        "val_scenes": sorted(df.loc[df.split == "val", "scene"].unique().tolist()),
        "rejected_placements": {"total": _total(rejections), "by_scene": rejections},
        "images": {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in images},
    }
    outside = outside_validated_range(cfg)
    if outside:  # built with allow_unvalidated=true: say so where every user of the build looks
        manifest["outside_validated_range"] = outside
    if captures:  # scene files: which file (sha256) and how it was placed in the canonical frame
        manifest["captures"] = captures
    if selection and (sum(selection["dropped"].values()) or "unmet" in selection):
        manifest["depth_item_selection"] = selection
    modified = compare_manifest(out / "manifest.json", manifest["images"])
    if modified:
        manifest["modified_since_previous_manifest"] = modified
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True))
    return counts


def scene_record(folder: Path) -> dict:
    """A scene file's record in a built scene's ``_scene.json`` (file, sha256, format, frame hints and the
    canonical-frame estimate; ``{}`` for catalogue scenes)."""
    f = folder / "_scene.json"
    if not f.exists():
        return {}
    return json.loads(f.read_text()).get("capture", {})


def scene_rejections(folder: Path) -> dict[str, int]:
    """Rejected candidate placements / strategy paths of one built scene, by reason (from _scene.json)."""
    f = folder / "_scene.json"
    if not f.exists():
        return {}
    info = json.loads(f.read_text())
    return {k: int(v) for k, v in {**info.get("rejected_placements", {}), **info.get("strategy_rejected", {})}.items()}


def _total(rejections: dict[str, dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in rejections.values():
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    return dict(sorted(total.items()))


REJECTION_REASONS = {
    "pool_visible": "candidate geometries with a clear line of sight (kept in the pool, not rejections)",
    "pool_occluded": "candidate geometries with a blocked line of sight (kept in the pool, not rejections)",
    "pool_partial": "candidates between the visible and occluded thresholds (ray cast)",
    "pool_collides_with_object": "candidates whose props or supports touch the object",
    "pool_visible_through_outline": "visible candidates whose sight line threads the object's outline (within "
                                    "clear_margin of its footprint, below its top): a person cannot tell",
    "pool_occluded_at_edge": "occluded candidates whose line the object blocks only near an edge (a copy "
                             "shifted block_margin x clear_margin beside it passes): a person cannot tell",
    "pool_props_too_close": "candidates whose props touch each other",
    "pool_outside_frustum_vertically": "candidates whose target is above/below the observer's view although it looks towards it",
    "unmatched": "not-visible candidates without a visible candidate of similar layout",
    "pool_extended": "scenes (pairs) that needed another pool of candidates before a matched pair was found",
    "render_partial": "picks whose full label (ray cast + render check) is partial",
    "render_disagree": "picks whose render check disagrees with the ray cast",
    "render_label_changed": "picks whose full label differs from the pool's ray cast",
    "no_clear_blocked_clear": "strategy paths without a clear → blocked → clear scan",
    "no_margin": "strategy paths without clear steps one ball diameter from the blocked run",
    "label_or_visibility": "strategy paths with a step whose label or viewer visibility failed",
    "face_viewer_unmatched": "facing-away negatives that could not be turned to their positive's angle with the viewer",
    "face_viewer_relabel_failed": "facing-away negatives whose turned observer no longer labelled out_of_view (kept unturned)",
    "props_too_small": "strategy paths with a step whose observer or ball is shorter on screen than the minimum",
}


def prop_size_lines(cfg: BuildConfig, df) -> list[str]:
    """The "Prop sizes on screen" section: how tall (pixels) the observer and the ball are in the kept images
    (basic frames in the task sets, and VPT-Strategy steps), against the build's minimum (frames below it are
    dropped as ``observer_too_small`` / ``ball_too_small``), and the framing zoom."""
    if "observer_height_px" not in df:
        return []
    lines = ["## Prop sizes on screen (pixels tall, kept images)", "",
             f"Minimum kept: observer {cfg.min_observer_height * cfg.size:.0f} px, ball {cfg.min_ball_height * cfg.size:.0f} px "
             f"(`min_observer_height`, `min_ball_height` × {cfg.size} px); framing zoom in [1, {cfg.zoom_max:g}].", "",
             "| images | n | observer min | observer median | ball min | ball median | zoom median |", "|---|---|---|---|---|---|---|"]
    for name, sel in (("basic (VPT or depth set)", (df.task_set == "basic") & (df.in_vpt | df.in_depth)),
                      ("VPT-Strategy", df.task_set == "strategy")):
        sub = df[sel]
        if not len(sub):
            continue
        z = f"{sub.viewer_zoom.median():.2f}" if "viewer_zoom" in sub and sub.viewer_zoom.notna().any() else ""
        lines.append(f"| {name} | {len(sub)} | {int(sub.observer_height_px.min())} | {sub.observer_height_px.median():.0f} | "
                     f"{int(sub.ball_height_px.min())} | {sub.ball_height_px.median():.0f} | {z} |")
    return lines + [""]


def selection_lines(selection: dict | None, band=()) -> list[str]:
    """The summary's account of the depth items' cue matching (``tasks/threedpc/select.py``; ``band``: the
    build's ``depth_cue_band``, None when matching is off)."""
    if band is None:
        return ["- depth items: no cue matching (`depth_cue_band: null`)"]
    if selection is None:  # no depth items to match
        return []
    lo, hi = selection["band"]
    n = sum(selection["dropped"].values())
    if "unmet" in selection:
        outside = ", ".join(f"{c} {v['before']:.3f}" for c, v in selection["cues"].items())
        return [f"- depth items: **not cue-matched** — the band [{lo:g}, {hi:g}] (`depth_cue_band`) cannot be met "
                f"({selection['unmet']}); all balanced candidates kept, outside the band: {outside}"]
    if not n:
        return [f"- depth items: every single image cue's AUC against the depth label already lay in [{lo:g}, {hi:g}] "
                "(`depth_cue_band`); none dropped"]
    moved = "; ".join(f"{c} {v['before']:.3f} → {v['after']:.3f}" for c, v in selection["cues"].items())
    per = ", ".join(f"{s} {k}" for s, k in sorted(selection["dropped"].items()) if k)
    return [f"- depth items matched on single image cues (`depth_cue_band` [{lo:g}, {hi:g}]): {n} balanced candidates "
            f"dropped in label pairs ({per}) so that no cue's AUC lies outside the band; outside before: {moved}"]


def summary_markdown(cfg: BuildConfig, df, counts: dict, rejections: dict | None = None,
                     selection: dict | None = None) -> str:
    import pandas as pd

    basic = df[df.task_set == "basic"]
    lines = ["# 3D-PC build summary", "",
             f"Scenes: {len(cfg.scenes)} (seed {cfg.seed}, label rules v{LABEL_RULE_VERSION}); "
             f"{len(basic)} basic-task frames rendered, {int(basic.keep.sum())} kept.", ""]
    outside = outside_validated_range(cfg)
    if outside:
        lines += ["**Outside the validated range** (built with `allow_unvalidated=true`; the validity sweep, "
                  "docs/validity_sweep.md, passed its shortcut audit only inside it):", "",
                  *[f"- {o}" for o in outside], ""]
    lines += ["## Images per task, split and label", "", "| task | split | label 0 | label 1 |", "|---|---|---|---|"]
    for task in ("vpt", "depth", "vpt_strategy"):
        splits = sorted({k.split("/")[0] for k in counts[task]})
        for sp in splits:
            lines.append(f"| {task} | {sp} | {counts[task].get(f'{sp}/0', 0)} | {counts[task].get(f'{sp}/1', 0)} |")
    lines += ["", "## Joint labels on the same images (kept basic frames with both labels)", "",
              "| | depth 0 (ball nearer) | depth 1 (ball further) |", "|---|---|---|"]
    both = basic[basic.keep.fillna(False) & basic.depth_label.notna() & basic.requested.ne(DEPTH_ONLY).fillna(True)]
    jt = pd.crosstab(both.vpt_label, both.depth_label)
    for v in (0, 1):
        lines.append(f"| vpt {v} | {int(jt.loc[v, 0]) if v in jt.index and 0 in jt.columns else 0} | "
                     f"{int(jt.loc[v, 1]) if v in jt.index and 1 in jt.columns else 0} |")
    if cfg.depth_settings:
        lines += ["", f"Human-test sets (test split, one per task, each balanced on its label; "
                  f"{int(df.in_human_vpt.sum())} VPT and {int(df.in_human_depth.sum())} depth images): "
                  f"{counts['human']}", ""]
    else:
        lines += ["", f"Human-test subset ({int(df.in_human.sum())} images, test split): {counts['human']}", ""]
    lines += ["## Dropped frames by reason", ""]
    dropped = basic[~basic.keep.fillna(False)]
    reasons = dropped.drop_reason.str.split(";").explode().value_counts()
    for r, n in reasons.items():
        lines.append(f"- {r}: {n} ({n / max(len(basic), 1):.1%} of frames)")
    amb = basic[basic.keep.fillna(False) & basic.depth_label.isna()]
    lines.append(f"- depth ambiguous (kept for VPT, excluded from depth): {len(amb)}")
    lines += selection_lines(selection, cfg.depth_cue_band)
    lines += ["", *prop_size_lines(cfg, df)]
    lines += ["", "## Label audit", ""]
    settings = df.drop_duplicates(["scene", "setting"])
    lines.append(f"- placement design `{cfg.placement_design}`; placements labelled: {len(settings)}. Every kept "
                 "placement has agreeing ray-cast and render labels by construction (a placement whose render check "
                 "disagrees is rejected), so what can fail is how often that happens: rejections by reason below.")
    val = sorted(df.loc[df.split == "val", "scene"].unique())
    lines.append(f"- validation held out by {cfg.val_holdout}" + (f": {', '.join(val)}" if cfg.val_holdout == "scene" else
                                                                 f" (last {cfg.val_settings} settings of each training scene)"))
    total = _total(rejections or {})
    if total:
        lines += ["", "### Placement candidates and rejections by reason (all scenes)", "", "| reason | count | meaning |",
                  "|---|---|---|"]
        lines += [f"| {k} | {v} | {REJECTION_REASONS.get(k, '')} |" for k, v in total.items()]
        lines.append("")
    kept = both
    if len(kept) > 2:
        r_size = np.corrcoef(kept.size_ratio, kept.depth_label.astype(float))[0, 1]
        r_pix = np.corrcoef(kept.pixel_ratio, kept.depth_label.astype(float))[0, 1]
        lines.append(f"- correlation of the physical size ratio (ball/observer) with the depth label: {r_size:+.3f} "
                     "(sizes are jittered independently of the label)")
        lines.append(f"- correlation of the apparent (pixel) size ratio with the depth label: {r_pix:+.3f} "
                     "(perspective: the nearer prop looks larger, as for people)")
    vk = df[df.in_vpt]
    per = vk.drop_duplicates(["scene", "setting"])
    if per.vpt_label.nunique() == 2 and per.size_ratio.nunique() > 1:
        r_vs = np.corrcoef(per.size_ratio, per.vpt_label.astype(float))[0, 1]
        lines.append(f"- correlation of the physical size ratio (ball/observer) with the VPT label, per placement: "
                     f"{r_vs:+.3f} over {len(per)} placements (sizes are drawn independently of the outcome)")
    if vk.vpt_label.nunique() == 2:
        from sklearn.metrics import roc_auc_score

        auc = roc_auc_score(vk.vpt_label.astype(int).to_numpy(), vk.prop_distance.to_numpy(float))
        lines.append(f"- VPT cue check: the 3D distance between the props separates the VPT labels with AUC {auc:.2f} "
                     "(0.5 = no cue; the legacy design put occluded props on opposite sides of the object, AUC ~0.15)")
    strat = df[df.task_set == "strategy"]
    if len(strat):
        pats = strat.sort_values(["scene", "setting"]).groupby("scene").vpt_label.apply(
            lambda s: "".join(str(int(x)) for x in s))
        lines += ["", "## VPT-Strategy sequences", ""] + [f"- {s}: `{p}`" for s, p in pats.items()]
    return "\n".join(lines) + "\n"

