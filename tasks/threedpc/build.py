"""Build the 3D-PC: depth order, VPT-basic and VPT-Strategy image sets with audited labels.

Output folder (see docs/ARCHITECTURE.md, "3D-PC dataset"):

    images/<split>/<category>/<scene>/s<setting>/f<frame>.png   kept frames (basic tasks)
    images/strategy/<category>/<scene>/step<k>.png              VPT-Strategy sequences
    vpt/<train|val|test>/<0|1>/…  depth/<train|val|test>/<0|1>/…  vpt_strategy/test/<0|1>/…
    human/vpt/<0|1>/…  human/depth/<0|1>/…                       ImageFolder views (hard links)
    metadata.parquet / metadata.csv                              one row per rendered frame
    manifest.json, summary.md

Each scene is built by one job into a hidden temporary folder that is renamed into place when complete,
so an interrupted build never exposes a half-written scene and a re-run builds only missing scenes.
All randomness flows from (seed, scene name).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np

from ..labels import aperture_label, aperture_labels, label_frame, raycast_visible_fraction, vpt_label
from ..placement import (CompositeOccluders, Placement, PlacementError, PropStyle, make_props, sample_matched_settings,
                         sample_placement, staged_scene)
from infra.schema import validate_config, validate_section
from .config import BuildConfig, ConfigError, facing_away_settings, upgrade_identity
from .layout import (DEPTH_ONLY, LABELS_FILE, VIEWS, load_build_scene, scene_dir, scene_dir_of,  # noqa: F401
                     scene_rng)  # (re-exported)


def jittered_style(style: PropStyle, rng: np.random.Generator, jitter: float, observer_min: float = 0.0) -> PropStyle:
    """Prop sizes scaled by independent factors, the observer's U(max(1 − j, observer_min), 1 + j), the ball's
    U(1 − j, 1 + j): size carries little label information, and the observer stays large enough that its
    facing direction can be read (``observer_min``; 0 = the same range for both)."""
    fo, ft = rng.uniform([max(1 - jitter, observer_min), 1 - jitter], 1 + jitter)
    return dataclasses.replace(style, observer_size=style.observer_size * float(fo), target_size=style.target_size * float(ft))


def sized_style(style: PropStyle, rng: np.random.Generator, ball_range=(0.6, 2.0), observer_range=(0.8, 1.6)) -> PropStyle:
    """Prop sizes scaled by independent log-uniform factors, the ball's in ``ball_range``, the observer's in
    ``observer_range``. Why log-uniform and wide: the depth task's size cue is (ball size / observer size) ×
    (observer distance / ball distance); a wide, symmetric spread of the first factor in log units keeps the
    second (perspective, a cue people use) from deciding depth order alone (issue 10: pixel-ratio AUC 0.125
    against the 0.10 floor with U(0.5, 1.5) × U(0.8, 1.5)). The viewer's framing (:func:`framed_cameras`)
    keeps the smallest props large enough on screen."""
    fb, fo = np.exp(rng.uniform(np.log([ball_range[0], observer_range[0]]), np.log([ball_range[1], observer_range[1]])))
    return dataclasses.replace(style, observer_size=style.observer_size * float(fo), target_size=style.target_size * float(fb))


def props_aim(placement: Placement) -> np.ndarray:
    """Where the framed viewer of a VPT setting looks (world metres, (3,)): the midpoint of the two props' centres."""
    return (np.asarray(placement.observer.position, float) + placement.target.center) / 2


def bisector_aim(eye, placement: Placement) -> np.ndarray:
    """Where the framed viewer of a depth-only setting looks from ``eye`` (world metres, (3,)): along the bisector
    of the angle between its rays to the two props' centres, at their mean distance. Both centres then lie at the
    same angle from the optical axis, so they project point-symmetrically about the image centre (pinhole,
    centred principal point): neither is further out. Aimed at the 3D midpoint (:func:`props_aim`) instead, the
    nearer prop always projects further from the centre (its offset is divided by a smaller depth), which orders
    every depth item by itself (the audit's ``centre_offset_diff``: AUC 0.000 on such builds; issue 35, 29 Nov)."""
    eye = np.asarray(eye, float)
    a, b = np.asarray(placement.observer.position, float) - eye, np.asarray(placement.target.center, float) - eye
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    d = a / na + b / nb
    return eye + d / float(np.linalg.norm(d)) * (na + nb) / 2


def framing_zoom(camera, placement: Placement, margin: float) -> float:
    """The largest zoom (focal-length factor, ≥ 0) at which both props' bounding spheres stay inside the
    image with ``margin`` (fraction of the image size) on each side, for ``camera`` (pinhole, centred
    principal point). Conservative: a sphere of radius r at camera-space (x, y, z) projects within
    f·(|x| + r)/(z − r) of the principal point along x (likewise y). 0 when a prop is behind the camera."""
    zoom = math.inf
    spheres = [(np.asarray(placement.observer.position, float), placement.observer.bounding_radius()),
               (placement.target.center, placement.target.bounding_radius)]
    for c, r in spheres:
        x, y, z = camera.world_to_camera(c[None])[0]
        if z - r <= 1e-6:
            return 0.0
        for v, f, half in ((x, camera.fx, camera.width / 2), (y, camera.fy, camera.height / 2)):
            zoom = min(zoom, (1 - 2 * margin) * half / (f * (abs(v) + r) / (z - r)))
    return float(zoom)


def framed_cameras(arc, placement: Placement, frames: int, size: int, zoom_max: float, margin: float,
                   bisector: bool = False):
    """The viewer's frames for one setting, framed on the props: each camera stands where ``arc`` puts it,
    looks at the props' midpoint (:func:`props_aim`; ``bisector``: along the bisector of its rays to them,
    :func:`bisector_aim`, as depth-only settings do) and narrows its field of view by the largest zoom in
    [1, ``zoom_max``] that keeps both props ``margin`` inside the image (:func:`framing_zoom`).

    Why zoom rather than walking closer: the props' on-screen sizes grow by the zoom while their distance
    ratio — the perspective size cue to depth order — stays what the arc gives (walking closer from the
    1.25× orbit to 1.0× would push the pixel-ratio AUC from ~0.12 to ~0.09, beyond the audit's 0.10 floor).
    Returns (cameras, zooms [frames])."""
    aim = props_aim(placement)
    cams, zooms = [], []
    for base in arc.cameras(frames, size, size):
        cam = base.looking_at(base.center, bisector_aim(base.center, placement) if bisector else aim)
        z = float(np.clip(framing_zoom(cam, placement, margin), 1.0, zoom_max))
        cams.append(dataclasses.replace(cam, fx=cam.fx * z, fy=cam.fy * z))
        zooms.append(z)
    return cams, np.array(zooms)


def too_small(row: dict, cfg: BuildConfig) -> list[str]:
    """Drop reasons for a rendered frame whose props are shorter on screen than ``cfg.min_observer_height`` /
    ``cfg.min_ball_height`` × the image height (their mask heights ``observer_height_px``/``ball_height_px``):
    a person must be able to read the observer's facing and find the ball in every image."""
    out = []
    if row.get("observer_height_px", 0) < cfg.min_observer_height * cfg.size:
        out.append("observer_too_small")
    if row.get("ball_height_px", 0) < cfg.min_ball_height * cfg.size:
        out.append("ball_too_small")
    return out


def bisector_azimuths(centre_xy, radius: float, a_xy, b_xy) -> list[float]:
    """Azimuths (degrees) where a circle of ``radius`` around ``centre_xy`` crosses the perpendicular
    bisector of a and b, i.e. where a viewer on that orbit is equally far from both (in the ground plane)."""
    a, b, c = (np.asarray(v, float)[:2] for v in (a_xy, b_xy, centre_xy))
    w = b - a
    k = 0.5 * (b @ b - a @ a) - c @ w
    r = radius * float(np.linalg.norm(w))
    if r == 0 or abs(k) > r:
        return []
    th, dphi = math.atan2(w[1], w[0]), math.acos(k / r)
    return [math.degrees(th + dphi), math.degrees(th - dphi)]


def viewer_arc(scene, placement: Placement, rng: np.random.Generator, cfg: BuildConfig, vpt: bool = False):
    """A smooth viewer path near the reference trajectory (jittered radius and height, slow wobble).

    The arc is centred where the viewer is equally far from the two props (so the depth order flips
    mid-trajectory and depth labels balance within each VPT class, as in the release where depth flips in
    most trajectories); when the orbit misses that bisector, it is centred perpendicular to the props' axis.

    ``vpt`` (a VPT setting) with ``cfg.vpt_arc_deg`` set (only with depth-only settings, so that these frames
    need no depth flip): the arc sweeps ``vpt_arc_deg`` (× the same random factor) centred on the direction from
    the object's centre to the nearest point of the props' ground line, i.e. the viewer looks across the sight
    line at the object behind it. A clear line then passes in front of the object in the image as a blocked one
    runs through it (issue 35, 29 Nov: the props' image midpoint offset from the object, visible against
    occluded AUC 0.96 with the bisector arc, 0.58 in a re-projection of the same placements from ±10° of that
    direction). The same random numbers are drawn either way.
    """
    ref = scene.trajectory
    # matched design: props stand anywhere around the object (up to opposite sides), so the viewer steps
    # back (``viewer_scale`` × the reference orbit) to keep both in frame along the arc; the framing
    # (framed_cameras) then zooms in on the props
    scale = 1.0 if cfg.placement_design == "legacy" else cfg.viewer_scale
    radius = float(scale * ref.radius * rng.uniform(1 - cfg.radius_jitter, 1 + cfg.radius_jitter))
    o, t = np.asarray(placement.observer.position[:2]), placement.target.center[:2]
    c = np.asarray(ref.target[:2])
    # look at the centroid of the object and the two props, so both props stay in frame
    look = (c + o + t) / 3
    # and at the props' mean height (props on supports stand up to ~1.3 m high)
    look_z = (min(ref.target[2], 0.35) + placement.observer.position[2] + placement.target.center[2]) / 3
    target = (float(look[0]), float(look[1]), float(look_z if cfg.placement_design != "legacy" else min(ref.target[2], 0.35)))
    crossings = bisector_azimuths(look, radius, o, t)
    if crossings:
        # the crossing on the props' side of the object (the far one looks at them through the object)
        mid = (o + t) / 2 - c
        mid_az = math.degrees(math.atan2(mid[1], mid[0]))
        gaps = [abs((a - mid_az + 180) % 360 - 180) for a in crossings]
        pick = int(np.argmin(gaps)) if np.linalg.norm(mid) > 0.15 else int(rng.integers(len(crossings)))
        centre = crossings[pick] + rng.uniform(-10, 10)
    else:
        centre = math.degrees(math.atan2(t[1] - o[1], t[0] - o[0])) + rng.choice([-90.0, 90.0]) + rng.uniform(-30, 30)
    sweep = cfg.arc_deg * rng.uniform(0.8, 1.2) * rng.choice([-1.0, 1.0])
    if vpt and cfg.vpt_arc_deg is not None:
        lo, hi = scene.object_bounds
        centre = line_facing_azimuth(placement, (np.asarray(lo[:2]) + hi[:2]) / 2)
        sweep *= cfg.vpt_arc_deg / cfg.arc_deg
        if cfg.vpt_arc_side == "either" and sweep < 0:  # the other side (the draw of the arc's direction decides)
            centre += 180.0
    return dataclasses.replace(
        ref, target=target, start_deg=float(centre - sweep / 2), sweep_deg=float(sweep), closed=False, radius=radius,
        height=float(ref.height + rng.uniform(-cfg.height_jitter, cfg.height_jitter)),
        wobble=float(rng.uniform(0.3, 0.8)), phase_r=float(rng.uniform(0, 2 * math.pi)),
        phase_h=float(rng.uniform(0, 2 * math.pi)),
    )


def line_facing_azimuth(placement: Placement, centre_xy) -> float:
    """Azimuth (degrees, about ``centre_xy``) of the nearest point of the props' ground segment to ``centre_xy``,
    the object's centre: where a viewer sees the sight line in front of the object. When the segment passes
    within 1 mm of the centre (a line straight through it) the props' midpoint's direction is used instead."""
    o, t = np.asarray(placement.observer.position[:2], float), np.asarray(placement.target.center[:2], float)
    c = np.asarray(centre_xy, float)
    ab = t - o
    s = float(np.clip((c - o) @ ab / max(ab @ ab, 1e-12), 0.0, 1.0))
    d = o + s * ab - c
    if np.linalg.norm(d) < 1e-3:
        d = (o + t) / 2 - c
    return math.degrees(math.atan2(d[1], d[0]))


def style_for(cfg: BuildConfig, rng: np.random.Generator) -> PropStyle:
    """The prop style of one placement: ``cfg.style`` with independently drawn size factors."""
    return sized_style(cfg.style, rng, cfg.ball_size_range, cfg.observer_size_range)


def _save_png(path: Path, img: np.ndarray) -> None:
    """A frame of the build (``infra.images.save_frame_png``, looked up at each call so benchmarks can time it)."""
    from infra.images import save_frame_png

    save_frame_png(path, img)


def _labelled_placement(cfg, scene, outcome, rng, rejected):
    for _ in range(cfg.max_placement_tries):
        style = style_for(cfg, rng)
        pl, _ = sample_placement(scene, outcome, rng, style, cfg.rules)
        vpt = vpt_label(scene, pl.observer, pl.target, cfg.rules, support=pl.target_support)
        if vpt["vpt_label"] is not None:
            return pl, vpt
        rejected[f"render_{vpt['vpt_reason']}"] += 1
    raise PlacementError(f"{scene.name}: no '{outcome}' placement passed the render check in {cfg.max_placement_tries} tries")


def scene_placements(cfg: BuildConfig, scene, rng: np.random.Generator) -> tuple[list, dict]:
    """The basic-task settings of one scene: [(placement, vpt evidence, info)] and rejection counts by
    reason. Settings alternate VPT-visible / not-visible (occluded, or facing away for
    ``out_of_view_fraction`` of them); ``placement_design`` chooses how they are drawn (tasks/placement.py)."""
    n_half = cfg.settings // 2
    n_oov = facing_away_settings(cfg.settings, cfg.out_of_view_fraction)
    negatives = ["out_of_view"] * n_oov + ["occluded"] * (n_half - n_oov)
    rng.shuffle(negatives)
    outcomes = [x for pair in zip(["visible"] * n_half, negatives, strict=True) for x in pair]  # visible, not, …
    if cfg.placement_design == "legacy":
        rejected: collections.Counter = collections.Counter()
        out = []
        for outcome in outcomes:
            pl, vpt = _labelled_placement(cfg, scene, outcome, rng, rejected)
            out.append((pl, vpt, {}))
        return out, dict(rejected)

    def label_fn(pl):
        return vpt_label(staged_scene(scene, pl), pl.observer, pl.target, cfg.rules, support=pl.target_support)

    return sample_matched_settings(scene, outcomes, rng, lambda r: style_for(cfg, r),
                                   label_fn, cfg.rules, max_tries=cfg.max_placement_tries)


ARC_PHASES = (0.0, 0.25, 0.5, 0.75, 1.0)


def arc_lens_angles(arc, placement, yaws: np.ndarray) -> np.ndarray:
    """Mean over the viewer positions ``ARC_PHASES`` of ``arc`` (each looking at the props' midpoint, as the
    framed frames do; the angle does not depend on the zoom) of the audit's ``lens_ball_angle`` (degrees) with
    the observer turned to each of ``yaws`` (degrees, level): (len(yaws),)."""
    from scenes.camera import Camera

    from .shortcuts import _forward, lens_ball_angle

    aim = props_aim(placement)
    base = Camera.from_fov(64, 64, 60.0)
    cams = [base.looking_at(arc.eye(s), aim) for s in ARC_PHASES]
    n, m = len(yaws), len(cams)
    k = np.repeat([[c.fx, c.fy, c.cx, c.cy] for c in cams], n, axis=0)
    w2c = np.repeat(np.stack([c.w2c for c in cams]), n, axis=0)
    y = np.tile(np.asarray(yaws, float), m)
    fwd = _forward(y, np.full(len(y), placement.observer.pitch_deg))
    obs = np.broadcast_to(np.asarray(placement.observer.position, float), (n * m, 3))
    ball = np.broadcast_to(placement.target.center, (n * m, 3))
    offset = np.full(n * m, placement.observer._front_offset())
    ang = lens_ball_angle(k, w2c, obs, fwd, ball, offset).reshape(m, n)
    return np.nanmean(np.where(np.isfinite(ang), ang, 90.0), axis=0)


def _face_viewer_as_pair(cfg, scene, pl, vpt, info, arc, pos_cos, rng, rejected):
    """Settings come in pairs (positive, then its negative). With ``cfg.away_facing`` "image"
    (issue 35; measured, not the default) the positive's lens-ball angle in the image along its arc (:func:`arc_lens_angles`) is
    remembered, and a facing-away negative is turned to the yaw, at least ``away_min_deg`` from its target and
    with the target out of view, whose angle along its own arc is nearest to it: its lens points at the ball
    in the image as the positive's does, and only its facing in depth tells that it cannot see it. With
    "viewer" (the default): the positive's observer-faces-viewer cosine towards its arc's middle viewer position,
    and the negative turned (:func:`tasks.placement.turned_to_viewer`) to the same cosine towards its own
    arc's middle (issue 10: observer_faces_viewer AUC 0.63-0.69 without it). Then relabelled. The
    placement-time match (``sample_matched_settings``) can only guess where the viewer will stand; this uses
    the arc itself. Returns (placement, vpt, the positive's angle or cosine to remember)."""
    from ..placement import MatchedDesign, first_turned_away, turned_to_viewer, viewer_facing_cos

    design = MatchedDesign()
    mid = arc.eye(0.5)
    image = cfg.away_facing == "image"
    if info.get("pair_role") == "positive":
        if image:
            return pl, vpt, float(arc_lens_angles(arc, pl, np.array([pl.observer.yaw_deg]))[0])
        return pl, vpt, viewer_facing_cos(pl, mid)
    if info.get("pair_role") == "out_of_view" and pos_cos is not None:
        if image:  # pos_cos holds the positive's mean lens-ball angle in the image (degrees)
            yaws = np.arange(0.0, 360.0, 1.0)
            cost = np.abs(arc_lens_angles(arc, pl, yaws) - pos_cos)
            turned = first_turned_away(pl, yaws[np.argsort(cost, kind="stable")], design)
        else:
            turned = turned_to_viewer(pl, mid, pos_cos, rng, design)
        if turned is None:
            rejected["face_viewer_unmatched"] = rejected.get("face_viewer_unmatched", 0) + 1
            return pl, vpt, None
        v2 = vpt_label(staged_scene(scene, turned), turned.observer, turned.target, cfg.rules,
                       support=turned.target_support)
        if v2["vpt_label"] == 0 and v2["vpt_reason"] == "out_of_view":
            return turned, v2, None
        rejected["face_viewer_relabel_failed"] = rejected.get("face_viewer_relabel_failed", 0) + 1
    return pl, vpt, None


def basic_scene_rows(cfg: BuildConfig, scene, split: str, tmp: Path, final: Path,
                     thumbs: dict | None = None, spec: str | None = None) -> tuple[list[dict], dict]:
    """The basic-task frames of one scene, written into ``tmp`` (named as in ``final``): (rows, info).
    ``thumbs``: a dict to receive each kept frame's shortcut-audit thumbnail ({file_name: 8-bit array},
    ``infra.images.small_uint8``), made here while the frame is in memory. ``spec``: the scene as ``cfg.scenes``
    names it (a scene file's path; default ``scene.name``), for its settings' splits."""
    from infra.images import small_uint8

    rng = scene_rng(cfg, scene.name)
    settings, rejected = scene_placements(cfg, scene, rng)
    rows = []
    pos_cos = None
    small_fn = None if cfg.placement_design == "legacy" else (lambda r: too_small(r, cfg))

    def setting_rows(k, pl, vpt, info, arc, outcome):
        part = cfg.part_of(spec or scene.name, k)
        stage = staged_scene(scene, pl)
        if cfg.placement_design == "legacy":
            cams, zooms = arc.cameras(cfg.frames, cfg.size, cfg.size), np.ones(cfg.frames)
        else:  # depth-only settings look along the bisector: no prop is nearer the image's edge for being nearer
            cams, zooms = framed_cameras(arc, pl, cfg.frames, cfg.size, cfg.zoom_max, cfg.frame_margin,
                                         bisector=outcome == DEPTH_ONLY)
        # frames dropped for a prop outside the image or too small on screen (mesh pass alone) are not splatted:
        # their rows get NaN visible fractions; kept frames are the fully rendered ones (label_frame)
        for f, cam in enumerate(cams):
            use_idle_cores()
            # (a frame label_frame keeps is large enough: a small one is dropped before its splat, or, when the
            # meshes alone already hide a prop, rendered and dropped as hidden)
            img, lab = label_frame(stage, pl, cam, vpt, cfg.rules, render_dropped=False, too_small=small_fn)
            rel = f"s{k:02d}/f{f:03d}.png"
            name = str((final / rel).relative_to(cfg.out)) if lab["keep"] else ""
            if lab["keep"]:
                _save_png(tmp / rel, img)
                if thumbs is not None:
                    thumbs[name] = small_uint8(img, cfg.audit.pixel_size)
            rows.append({"file_name": name,
                         "scene": scene.name, "category": scene.metadata.get("category", ""), "split": part,
                         "task_set": "basic", "setting": k, "frame": f, "requested": outcome,
                         "placement_design": cfg.placement_design, "viewer_zoom": float(zooms[f]), **info,
                         **cam.as_row(), **pl.to_row(), **lab})

    for k, (pl, vpt, info) in enumerate(settings):
        outcome = vpt["vpt_reason"] if vpt["vpt_label"] == 0 else "visible"
        arc = viewer_arc(scene, pl, rng, cfg, vpt=True)
        if cfg.placement_design != "legacy":
            pl, vpt, pos_cos = _face_viewer_as_pair(cfg, scene, pl, vpt, info, arc, pos_cos, rng, rejected)
        setting_rows(k, pl, vpt, info, arc, outcome)
    # depth-only settings (cfg.depth_settings) after every VPT one: their random numbers come after the VPT
    # settings' draws, so those are the same with or without them
    for j in range(cfg.depth_settings):
        pl, vpt = depth_only_placement(cfg, scene, rng, rejected)
        arc = viewer_arc(scene, pl, rng, cfg)
        setting_rows(cfg.settings + j, pl, vpt, {"pair_role": DEPTH_ONLY}, arc, DEPTH_ONLY)
    return rows, {"rejected_placements": dict(rejected)}


def depth_only_placement(cfg: BuildConfig, scene, rng: np.random.Generator, rejected) -> tuple[Placement, dict]:
    """A depth-only setting (``cfg.depth_settings``): props drawn as the matched design draws its candidates
    (:func:`tasks.placement.propose_candidate`, the same geometry checks), then the observer (and its stand)
    turned to a uniformly random yaw, so where it looks says nothing about which prop is nearer. Its VPT label
    is computed and recorded like any other, though its frames never join the VPT set. Returns (placement,
    vpt evidence); raises :class:`PlacementError` after ``cfg.max_placement_tries`` rejected candidates."""
    from ..placement import MatchedDesign, geometry_rejection, propose_candidate

    design = MatchedDesign()
    for _ in range(cfg.max_placement_tries):
        pl = propose_candidate(scene, rng, style_for(cfg, rng), design)
        yaw = float(rng.uniform(0.0, 360.0))  # drawn before the checks: one number per candidate whatever they say
        why = geometry_rejection(scene, pl)
        if why is not None:
            rejected[f"depth_only_{why}"] = rejected.get(f"depth_only_{why}", 0) + 1
            continue
        sup = pl.observer_support
        pl = dataclasses.replace(pl, observer=dataclasses.replace(pl.observer, yaw_deg=yaw),
                                 observer_support=None if sup is None else dataclasses.replace(sup, yaw_deg=yaw))
        vpt = vpt_label(staged_scene(scene, pl), pl.observer, pl.target, cfg.rules, support=pl.target_support)
        return pl, vpt
    raise PlacementError(f"{scene.name}: no depth-only placement passed the geometry checks in "
                         f"{cfg.max_placement_tries} tries")


def _strategy_path(scene, rng, cfg: BuildConfig, style: PropStyle, elevation: float = 0.0):
    """Props on opposite sides of the object, translated together along ``u`` ⊥ their axis ``v``; raised
    props stand on pedestals that move with them (legacy design: floating)."""
    from scenes.props import SUPPORT_COLORS

    lo, hi = scene.object_bounds
    c = (lo[:2] + hi[:2]) / 2
    r_obj = 0.5 * float(np.linalg.norm(hi[:2] - lo[:2]))
    a = rng.uniform(0, 2 * math.pi)
    v = np.array([math.cos(a), math.sin(a)])
    u = np.array([-v[1], v[0]])
    d_o, d_t = rng.uniform(0.25, 0.6), rng.uniform(0.1, 0.4)
    yaw = math.degrees(a)
    cols = rng.integers(len(SUPPORT_COLORS), size=2)
    supports = None if cfg.placement_design == "legacy" else {
        "kind_observer": "pedestal", "kind_target": "pedestal", "color_observer": SUPPORT_COLORS[cols[0]],
        "color_target": SUPPORT_COLORS[cols[1]], "yaw_observer": yaw}

    def at(t: float) -> Placement:
        return make_props(style, c - (r_obj + d_o) * v + t * u, yaw, c + (r_obj + d_t) * v + t * u, elevation,
                          supports=supports)

    return at, r_obj, u


def strategy_pattern(n: int, rng: np.random.Generator, varied: bool = True) -> tuple[int, int, int]:
    """(clear steps before, blocked steps, clear steps after) of an ``n``-step VPT-Strategy sequence: half
    the steps blocked (⌊n/2⌋, so every scene — and the set — is balanced for even n), at least one clear
    step each side. ``varied``: the split of the clear steps is drawn per scene (1100000111, 1000001111, …);
    otherwise fixed (legacy: 1110000011 for n = 10)."""
    n_block = n // 2
    n_before = int(rng.integers(1, n - n_block)) if varied else (n - n_block + 1) // 2
    return n_before, n_block, n - n_block - n_before


def strategy_steps(grid: np.ndarray, blocked: np.ndarray, clear: np.ndarray, n_before: int, n_block: int,
                   n_after: int, clearance: float, inset: float = 0.04) -> np.ndarray | None:
    """Step positions along the path: ``n_block`` inside the longest contiguous blocked run (``inset``
    from its ends), ``n_before``/``n_after`` on clear positions at least ``clearance`` (one ball diameter)
    beyond the run's ends, within 0.6 m of them. None when the run or the clear stretches are missing.
    ``grid`` [n] positions (m), ``blocked``/``clear`` [n] bool from the ray-cast scan."""
    if not blocked.any():
        return None
    edges = np.flatnonzero(np.diff(np.concatenate([[0], blocked.astype(int), [0]])))
    starts, ends = edges[::2], edges[1::2] - 1
    longest = int(np.argmax(ends - starts))
    t1, t2 = grid[starts[longest]], grid[ends[longest]]
    before = grid[clear & (grid <= t1 - clearance) & (grid >= t1 - clearance - 0.6)]
    after = grid[clear & (grid >= t2 + clearance) & (grid <= t2 + clearance + 0.6)]
    if len(before) < n_before or len(after) < n_after or t2 - t1 < 2 * inset:
        return None
    # clear steps on scanned clear positions (evenly spread among them), blocked ones evenly inside the run
    pick = lambda xs, k: xs[np.linspace(0, len(xs) - 1, k).round().astype(int)] if k else xs[:0]
    return np.concatenate([pick(before, n_before), np.linspace(t1 + inset, t2 - inset, n_block), pick(after, n_after)])


def strategy_frames(cfg: BuildConfig, scene, at, ts, cam, n_before: int, n_block: int):
    """One VPT-Strategy attempt's frames: (why it fails — ``props_too_small`` / ``label_or_visibility`` — or
    None, [(t, placement, wanted label, row, image)] for every step when it succeeds).

    The same verdict as :func:`strategy_frames_reference` (render every step's 256-px frame in order, stop at
    the first that fails; tested), but 256-px splats are rendered only where the verdict needs them. A step
    fails as ``label_or_visibility`` when its VPT label is not the wanted one or its frame is not kept, unless
    the frame is kept and a prop too small (``props_too_small``, basic-design rule). The mesh pass alone
    (:func:`tasks.labels.frame_meshes`) decides a prop outside the image or hidden by the other prop (not kept:
    ``label_or_visibility`` whatever the splats), and a prop too small; the VPT label needs its own checks
    (ray casts, one 64-px render), not the viewer's frame. So the steps are scanned in order on those alone
    until one fails for sure (then every earlier step that could still fail would fail as
    ``label_or_visibility`` too: no splat needed) or is too small; then the frames up to it are splatted, the
    likeliest to be dropped first, until one is not kept. Only a sequence that can pass is splatted whole."""
    from ..labels import frame_meshes, splat_frame

    legacy = cfg.placement_design == "legacy"
    pending, small = [], False  # steps that pass if their frame is kept; the last one too small?
    for k, t in enumerate(ts):
        pl = at(float(t))
        want = 0 if n_before <= k < n_before + n_block else 1
        fm = frame_meshes(pl, cam, cfg.rules, skip_outside=True)
        if fm.layer is None or min(fm.visible_bound()) < cfg.rules.prop_visible_min:
            return "label_or_visibility", []  # this frame is dropped whatever the splats
        h = fm.heights
        if not legacy and too_small({"observer_height_px": h[0], "ball_height_px": h[1]}, cfg):
            pending.append((t, pl, want, None, fm))
            small = True
            break
        vpt = vpt_label(staged_scene(scene, pl), pl.observer, pl.target, cfg.rules, support=pl.target_support)
        if vpt["vpt_label"] != want:
            return "label_or_visibility", []
        pending.append((t, pl, want, vpt, fm))
    # Now the attempt fails as label_or_visibility iff one of these frames is not kept; else it succeeds, or
    # fails as props_too_small when the last one is too small. The order of the splats is free: the frame
    # likeliest to be dropped first (least of the ball seen from the viewer's eye by a ray cast past the
    # object and the supports), so a failing attempt usually stops after one splat.
    occ = scene.occluders()
    seen = [raycast_visible_fraction(cam.center, pl.target, CompositeOccluders([occ] + [sp.mesh() for sp in pl.supports]), 64)
            for _, pl, *_ in pending]
    frames = {}
    for i in sorted(range(len(pending)), key=lambda i: seen[i]):
        t, pl, want, vpt, fm = pending[i]
        img, lab = splat_frame(staged_scene(scene, pl), pl, cam, fm, vpt or {}, cfg.rules)
        if not lab["keep"]:
            return "label_or_visibility", []
        frames[i] = (t, pl, want, lab, img)
    if small:
        return "props_too_small", []
    return None, [frames[i] for i in range(len(pending))]


def strategy_frames_reference(cfg: BuildConfig, scene, at, ts, cam, n_before: int, n_block: int):
    """Plain twin of :func:`strategy_frames`: every step labelled and rendered in order, stopping at the
    first that fails (the build's loop before issue 19)."""
    legacy = cfg.placement_design == "legacy"
    frames = []
    for k, t in enumerate(ts):
        pl = at(float(t))
        stage = staged_scene(scene, pl)
        vpt = vpt_label(stage, pl.observer, pl.target, cfg.rules, support=pl.target_support)
        want = 0 if n_before <= k < n_before + n_block else 1
        img, lab = label_frame(stage, pl, cam, vpt, cfg.rules)
        if not legacy and lab["keep"] and too_small(lab, cfg):
            return "props_too_small", []
        if vpt["vpt_label"] != want or not lab["keep"]:
            return "label_or_visibility", []
        frames.append((t, pl, want, lab, img))
    return None, frames


def strategy_scene_rows(cfg: BuildConfig, scene, tmp: Path, final: Path) -> tuple[list[dict], dict]:
    from scenes.camera import Camera

    rng = scene_rng(cfg, scene.name, 1)
    legacy = cfg.placement_design == "legacy"
    n_before, n_block, n_after = strategy_pattern(cfg.strategy_steps, rng, varied=not legacy)
    occ = scene.occluders()
    tries = collections.Counter()
    lo, hi = scene.object_bounds
    # Props rest on the ground; objects that are open near the ground (benches, chairs, motorcycles) rarely
    # block a whole ball there, so later attempts raise both props to 45%, 55%, 65%, 75% (legacy: 45%, 65%) of the object's
    # height, on pedestals that move with them (legacy: floating), recorded per image as prop_elevation.
    # A sequence needs a clear -> blocked -> clear scan, a margin and ten kept frames, so a strategy scene
    # gets its own budget, ``strategy_tries`` (rule v3.1 asks a blocked step to cover a disc of 2 ball radii:
    # on the ten catalogue _04 scenes 120 tries left couch_04 without a path; 240 finds all ten, within 97).
    height = float(hi[2] - lo[2])
    schedule = [0.0, 0.45 * height, 0.65 * height] if legacy else [0.0, 0.45 * height, 0.55 * height, 0.65 * height, 0.75 * height]
    budget = cfg.max_placement_tries if legacy else cfg.strategy_tries
    per = max(1, budget // len(schedule))
    for attempt in range(per * len(schedule)):
        use_idle_cores()
        elevation = schedule[attempt // per]
        style = style_for(cfg, rng)
        at, r_obj, u = _strategy_path(scene, rng, cfg, style, elevation)
        span = r_obj + 0.9
        grid = np.linspace(-span, span, 121)
        # whole-aperture verdict per position (rule v2.0+, 64 rays per aperture point for the scan): a step
        # clear or blocked only from the lens centre would be 'partial' in vpt_label and fail the sequence
        scan_rules = dataclasses.replace(cfg.rules, n_rays=64)

        def verdict_at(t):
            p = at(t)
            return aperture_label(p.observer, p.target, CompositeOccluders([occ] + [sp.mesh() for sp in p.supports]),
                                  scan_rules, visible_in_view=True, support=p.target_support)["vpt_reason"]

        # both ends first: a path not clear at an end fails whatever lies between (the same verdict and
        # rejection count as scanning every position; the scan draws no random numbers)
        ends = (verdict_at(grid[0]), verdict_at(grid[-1]))
        if ends != ("visible", "visible"):
            tries["no_clear_blocked_clear"] += 1
            continue
        # the inner positions in one batched cast (aperture_labels: the same verdicts as verdict_at, tested)
        inner = [at(t) for t in grid[1:-1]]
        inner = aperture_labels([(p.observer, p.target, CompositeOccluders([occ] + [sp.mesh() for sp in p.supports]),
                                  True, p.target_support) for p in inner], scan_rules)
        verdict = [ends[0], *(a["vpt_reason"] for a in inner), ends[1]]
        blocked = np.array([v == "occluded" for v in verdict])
        clear = np.array([v == "visible" for v in verdict])
        if not blocked.any() or not clear[0] or not clear[-1]:
            tries["no_clear_blocked_clear"] += 1
            continue
        if legacy:
            clearance = 0.04
        else:  # one ball diameter between a clear step and the blocked run
            clearance = style.target_size
        ts = strategy_steps(grid, blocked, clear, n_before, n_block, n_after, clearance)
        if ts is None:
            tries["no_margin"] += 1
            continue
        # fixed, elevated viewer at ~45° to the direction of motion, so the props visibly pass behind
        # (or in front of) the object across the image rather than along the line of sight
        az = math.degrees(math.atan2(-u[1], -u[0])) + rng.choice([-1.0, 1.0]) * rng.uniform(35, 55)
        ref = scene.trajectory
        eye_traj = dataclasses.replace(ref, start_deg=az, sweep_deg=0.0, radius=ref.radius * 1.15,
                                       height=ref.height + 0.6 + elevation, radius_amp=0.0, height_amp=0.0,
                                       closed=False, target=(ref.target[0], ref.target[1], ref.target[2] + elevation / 2))
        cam = eye_traj.cameras(1, cfg.size, cfg.size)[0]
        cam = Camera.from_fov(cfg.size, cfg.size, 65.0, cam.w2c)
        zoom = 1.0
        if not legacy:  # framed like the basic frames: aimed at the props' path, zoomed in as far as all steps fit
            steps = [at(float(t)) for t in ts]
            cam = cam.looking_at(cam.center, np.mean([props_aim(p) for p in steps], axis=0))
            zoom = float(np.clip(min(framing_zoom(cam, p, cfg.frame_margin) for p in steps), 1.0, cfg.zoom_max))
            cam = dataclasses.replace(cam, fx=cam.fx * zoom, fy=cam.fy * zoom)
        failed, frames = strategy_frames(cfg, scene, at, ts, cam, n_before, n_block)
        if failed:
            tries[failed] += 1
            continue
        rows = []
        for k, (t, pl, want, lab, img) in enumerate(frames):
            rows.append({"file_name": str((final / f"step{k:02d}.png").relative_to(cfg.out)), "scene": scene.name,
                         "category": scene.metadata.get("category", ""), "split": "strategy", "task_set": "strategy",
                         "setting": k, "frame": 0, "requested": "visible" if want else "occluded", "strategy_t": float(t),
                         "prop_elevation": float(elevation), "placement_design": cfg.placement_design,
                         "viewer_zoom": zoom,
                         **cam.as_row(), **pl.to_row(), **lab})
        for k, (*_, img) in enumerate(frames):
            _save_png(tmp / f"step{k:02d}.png", img)
        pattern = "".join(str(int(r["vpt_label"])) for r in rows)
        return rows, {"strategy_pattern": pattern, "strategy_rejected": dict(tries)}
    raise PlacementError(f"{scene.name}: no VPT-Strategy path found in {per * len(schedule)} tries ({dict(tries)})")


def scene_problems(final: Path, out: Path, expected: dict[str, str] | None = None) -> list[str]:
    """Why the built scene folder ``final`` is not complete ([] when it is): its labels file missing or
    unreadable, a file it lists missing, or (``expected``: the previous manifest's sha256 by path) an
    image whose content changed since the manifest was written."""
    import pandas as pd

    from infra.files import sha256_file

    if not (final / LABELS_FILE).is_file() or not (final / "_scene.json").is_file():
        return [f"{final.relative_to(out)}: labels file missing (unfinished scene)"] if final.exists() else ["not built"]
    try:
        names = [str(f) for f in pd.read_parquet(final / LABELS_FILE, columns=["file_name"])["file_name"] if f]
    except (OSError, ValueError, KeyError) as e:
        return [f"{final / LABELS_FILE}: unreadable ({type(e).__name__})"]
    problems = []
    for f in names:
        p = out / f
        if not p.is_file():
            problems.append(f"{f}: missing")
        elif expected is not None and f in expected and sha256_file(p) != expected[f]:
            problems.append(f"{f}: content differs from manifest.json")
    return problems


def build_scene(cfg: BuildConfig, name: str, expected: dict[str, str] | None = None, thumbs: dict | None = None) -> Path:
    """Build one scene's images and label rows (atomically: temp folder, then rename). Idempotent: a
    complete scene (:func:`scene_problems` finds nothing) is kept; an incomplete or damaged one is rebuilt
    (rendering is deterministic, so a repaired image is byte-identical to the lost one). ``thumbs``: a dict
    to receive the audit thumbnails of the basic frames it writes (:func:`basic_scene_rows`)."""
    import logging

    import pandas as pd

    from ..labels import labels_table

    split = cfg.split_of(name)
    scene = load_build_scene(cfg, name)
    final = scene_dir(cfg, scene, split)
    problems = scene_problems(final, Path(cfg.out), expected)
    if not problems:
        return final
    if problems != ["not built"]:
        logging.getLogger(__name__).warning("rebuilding %s: %s", name, "; ".join(problems[:5]))
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if split == "strategy":
        rows, info = strategy_scene_rows(cfg, scene, tmp, final)
    else:
        rows, info = basic_scene_rows(cfg, scene, split, tmp, final, thumbs, spec=name)
    from .shortcuts import object_bounds_columns  # here: `python -m tasks.threedpc.shortcuts` must not find it imported

    rows = [{**r, **object_bounds_columns(scene)} for r in rows]  # for the shortcut audit's object-between cue
    df = labels_table(rows)
    df["seed"] = pd.array([cfg.seed] * len(df), dtype="int64")
    df.to_parquet(tmp / LABELS_FILE, index=False)
    record = {"scene": name, "split": split, **info}
    if "canonical" in scene.metadata:  # a scene file: say which file and how it was placed
        record["capture"] = {k: scene.metadata[k] for k in ("file", "file_sha256", "format", "frame_hints", "canonical",
                                                           "added_ground", "cameras_file") if k in scene.metadata}
    (tmp / "_scene.json").write_text(json.dumps(record, sort_keys=True))
    if final.exists():
        _retire(final, tmp, Path(cfg.out))
    os.replace(tmp, final)
    return final


def _retire(final: Path, tmp: Path, out: Path) -> None:
    """Remove the old scene folder ``final`` before ``tmp`` replaces it: the files its labels list and its
    records go; anything else in it (not Vantage's) is moved into ``tmp``, never deleted."""
    import pandas as pd

    old = final.with_name(f".{final.name}.old.tmp{os.getpid()}")
    os.replace(final, old)
    listed = [LABELS_FILE, "_scene.json"]
    try:
        names = pd.read_parquet(old / LABELS_FILE, columns=["file_name"])["file_name"]
        listed += [str((out / f).relative_to(final)) for f in names if f]
    except (OSError, ValueError, KeyError):
        pass
    for rel in listed:
        (old / rel).unlink(missing_ok=True)
    for f in sorted(p for p in old.rglob("*") if p.is_file()):
        dst = tmp / f.relative_to(old)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, dst)
    shutil.rmtree(old)


# A worker's share of numba threads, and the build's job counts shared by its workers ([jobs not yet
# started, jobs running]; None outside a build's pool): see :func:`use_idle_cores`.
_WORKER: dict = {"threads": None, "jobs": None}


def _init_worker(threads: int, jobs=None) -> None:
    import numba

    numba.set_num_threads(threads)
    _WORKER.update(threads=threads, jobs=jobs)


def use_idle_cores() -> None:
    """Called by a scene job before each frame: the last scene of a build runs alone while the other
    workers have nothing left to do, so its worker then spreads each frame over every core numba has
    (tile-parallel kernels; the images do not depend on the number of threads, tests/test_render_fast.py),
    and goes back to its share otherwise. Does nothing outside a pool with shared job counts."""
    jobs, threads = _WORKER["jobs"], _WORKER["threads"]
    if jobs is None:
        return
    import numba

    want = numba.config.NUMBA_NUM_THREADS if jobs[0] == 0 and jobs[1] == 1 else threads
    if numba.get_num_threads() != want:
        numba.set_num_threads(want)


def _job(args) -> str:
    cfg, name, expected = args
    return str(build_scene(cfg, name, expected))


def _job_thumbs(args) -> tuple[str, dict]:
    """:func:`_job` that also returns the audit thumbnails of the frames it wrote (:func:`build_scene`), and
    keeps the shared job counts (:func:`use_idle_cores`)."""
    cfg, name, expected = args
    jobs = _WORKER["jobs"]
    if jobs is not None:
        with jobs.get_lock():
            jobs[0] -= 1
            jobs[1] += 1
    try:
        thumbs: dict = {}
        return str(build_scene(cfg, name, expected, thumbs if cfg.audit.enabled else None)), thumbs
    finally:
        if jobs is not None:
            with jobs.get_lock():
                jobs[1] -= 1


def job_order(cfg: BuildConfig, names) -> list[str]:
    """The order scenes are handed to the workers: VPT-Strategy scenes first, then the basic scenes, each
    group in ``names`` order. Why: a strategy scene's cost is its number of failed attempts (0 to
    ``strategy_tries``), unknown in advance; started last, a long one would leave the other workers
    idle at the end, while the basic scenes (the same number of frames each) fill the gaps. Each scene is
    built from (seed, scene name) alone and assembled in ``cfg.scenes`` order, so the output does not depend
    on this order (tested)."""
    names = list(names)
    return [n for n in names if cfg.split_of(n) == "strategy"] + [n for n in names if cfg.split_of(n) != "strategy"]


def preflight(cfg: BuildConfig) -> None:
    """Everything that could fail mid-build, checked before anything is rendered or stamped: every declared
    field of the config and its sections (``infra.schema``; a config made in Python need not have come through
    ``config_from_dict``) and every scene (each scene file is loaded). Raises :class:`ConfigError` naming the
    field and value."""
    from scenes.catalogue import parse_name
    from scenes.gaussians import SceneError
    from scenes.load import is_file_spec

    validate_config(cfg)
    for section in ("style", "rules", "audit"):
        validate_section(getattr(cfg, section), section)
    for name in cfg.scenes:
        try:
            if is_file_spec(name):
                load_build_scene(cfg, name)  # scene files: read, placed in the canonical frame, validated now
            else:
                parse_name(name)
        except (SceneError, OSError, ValueError) as e:
            raise ConfigError(f"scenes: {e}" if name in str(e) else f"scenes: {name}: {e}") from None


def _owned(cfg: BuildConfig):
    """What a previous build wrote into ``out`` (for overwrite=true): the manifest's images, every scene
    folder's listed files and records, the views (folders Vantage marks), the tables."""
    def owned(out: Path):
        import pandas as pd

        files = [out / n for n in ("manifest.json", "summary.md", "metadata.csv", "metadata.parquet")]
        try:
            files += [out / f for f in json.loads((out / "manifest.json").read_text()).get("images", {})]
        except (OSError, ValueError):
            pass
        for labels in (out / "images").glob(f"*/*/*/{LABELS_FILE}"):
            try:
                files += [out / f for f in pd.read_parquet(labels, columns=["file_name"])["file_name"] if f]
            except (OSError, ValueError, KeyError):
                pass
            files += [labels, labels.with_name("_scene.json")]
        return files, [out / v for v in VIEWS]
    return owned


def _temps(out: Path) -> list[Path]:
    images = out / "images"
    return [*images.glob("*/*/.*.tmp*"), *images.glob("*/*/.*.old*"), *out.glob(".*.tmp*")] if out.exists() else []


def build(cfg: BuildConfig, progress: bool = True) -> Path:
    """Build the dataset described by ``cfg`` (already validated) into ``cfg.out``.

    The output folder is claimed with :func:`infra.outputs.output_folder` (lock, stamp, resume, overwrite
    of Vantage's files only); a scene is rebuilt unless every file it lists exists with the content the
    previous manifest recorded."""
    from tqdm import tqdm

    from infra.outputs import output_folder, OutputError
    from infra.pool import run_jobs

    preflight(cfg)
    out = Path(cfg.out)
    with contextlib.ExitStack() as claimed:
        try:
            claimed.enter_context(output_folder(out, "tasks.threedpc", cfg.identity(), overwrite=cfg.overwrite,
                                                owned=_owned(cfg), temps=_temps, upgrade=upgrade_identity))
        except OutputError as e:
            raise ConfigError(str(e)) from None
        expected = None
        try:
            expected = json.loads((out / "manifest.json").read_text()).get("images")
        except (OSError, ValueError):
            pass
        names = job_order(cfg, cfg.scenes)
        bar = tqdm(total=len(names), desc="3D-PC scenes", unit="scene", disable=not progress)
        # the shortcut audit's thumbnails of the frames written now, made from the frames in memory (scenes
        # kept from an earlier run are read from their files by the audit)
        thumbs: dict = {}
        if cfg.workers == 1 or len(names) == 1:
            for name in names:
                build_scene(cfg, name, expected, thumbs if cfg.audit.enabled else None)
                bar.update(1)
        else:
            import multiprocessing as mp

            threads = max(1, (os.cpu_count() or 1) // cfg.workers)
            ctx = mp.get_context("spawn")
            jobs = ctx.Array("i", [len(names), 0])  # [not yet started, running], for use_idle_cores
            for _, t in run_jobs(_job_thumbs, [(cfg, n, expected) for n in names], cfg.workers, _init_worker,
                                 (threads, jobs), mp_context=ctx):
                thumbs.update(t)
                bar.update(1)
        bar.close()
        from .assemble import assemble

        assemble(cfg, thumbs)
    return out
