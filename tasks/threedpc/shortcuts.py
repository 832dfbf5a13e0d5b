"""Shortcut audit of a 3D-PC build: can the labels be read off 2D layout, orientation or raw pixels?

The 3D-PC (Linsley et al., 2024) claims to measure visual perspective taking (VPT) and depth order. A
dataset only does so when no simple, non-perspective cue gives the label away. This module measures, on a
finished build's metadata (one row per rendered frame, see docs/ARCHITECTURE.md "3D-PC dataset") and its
images, what a careful reviewer would try, each fitted on ``split == "train"`` and scored on the held-out
``split == "test"`` scenes:

* ``cue_auc``      — ROC AUC of each single cue (:func:`shortcut_cues`) against the label, over all of the
  task's frames (nothing is fitted, so all splits are scored: more placements, a tighter estimate;
  0.5 = no information; 0 or 1 = the cue alone solves the task, either way round).
* ``rule``         — one-line rules (a threshold and polarity fitted on train, accuracy on test), e.g. VPT
  "the object's image box is not between the props → visible", "the lens axis points within N° of the ball in
  the image → visible" (the 2D orientation cue), depth "ball higher in the image → further".
* ``cue_logreg``   — logistic regression on all cues together (standardised), accuracy on test; and on the
                     image cues alone (``<n>_image_cues``, :data:`IMAGE_CUES`), gated separately.
* ``pixel_logreg`` — logistic regression on downsampled raw pixels (``pixel_size``² RGB, standardised).
* ``shuffled_control`` — the same pixel model trained on permuted training labels (should sit at ~0.5).
* ``pixel_cv``     — the same pixel model in folds grouped by scene over every frame of the task (each scene held
  out once, :func:`scene_fold_predict`), scored on all frames; reported, never gated. The gated figure above
  rests on the 5-10 test scenes of one split, whose draw moves it by ±0.1 on small builds (issue 35, 30 Nov).

Confidence intervals (95%) are percentile bootstraps over placements, i.e. (scene, setting) clusters: the
frames of a setting share their VPT label and nearly all their layout, so images are not independent.
Gates (:class:`AuditConfig`, the ``audit.*`` settings) turn the numbers into pass/fail; a build whose
audit fails is kept on disk but the build raises :class:`ShortcutAuditFailed`. A gate is enforced only when
its measure rests on at least ``min_placements`` placements: on a handful (``preset=small``: 8 test
placements) a null cue's AUC has a 95% CI of about ±0.3, so a failure there says nothing about the design;
and (``beyond_chance``) a figure outside its limits fails only when its 95% CI excludes chance (0.5).

Image coordinates: pixels with the origin at the top-left, u to the right, v down (OpenCV, as
:class:`scenes.camera.Camera`); positions are divided by the image width/height, so cues lie in [0, 1].
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from infra.schema import field

# AuditConfig lives with the build's other settings (importing the package must not import this CLI module)
from .config import ORIENTATION, AuditConfig  # noqa: F401 (re-exported)

TASKS = {"vpt": ("in_vpt", "vpt_label"), "depth": ("in_depth", "depth_label")}
BOUNDS_COLUMNS = tuple(f"object_{e}_{a}" for e in ("lo", "hi") for a in "xyz")
AUDIT_FILE = "shortcut_audit"
class ShortcutAuditFailed(RuntimeError):
    """A build's shortcut audit exceeded a gate; the outputs are written and kept."""



def object_bounds_columns(scene) -> dict:
    """``object_lo_x .. object_hi_z``: the central object's axis-aligned 3D bounds (m), for the metadata
    (the audit's "object between the props in the image" cue projects them)."""
    lo, hi = np.asarray(scene.object_bounds, float)
    return {f"object_{e}_{a}": float(v[i]) for e, v in (("lo", lo), ("hi", hi)) for i, a in enumerate("xyz")}


# ---------------------------------------------------------------------- geometry of the cues
def _cameras(df):
    """Intrinsics (n,4: fx, fy, cx, cy), world-to-camera (n,4,4), width and height (n,) from metadata."""
    k = df[["fx", "fy", "cx", "cy"]].to_numpy(float)
    w2c = df[[f"w2c_{i}{j}" for i in range(4) for j in range(4)]].to_numpy(float).reshape(-1, 4, 4)
    return k, w2c, df["width"].to_numpy(float), df["height"].to_numpy(float)


def project(k: np.ndarray, w2c: np.ndarray, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pinhole projection per row: ``pts`` (n,3) world metres → (uv (n,2) pixels, depth z (n,) metres)."""
    pc = np.einsum("nij,nj->ni", w2c[:, :3, :3], pts) + w2c[:, :3, 3]
    z = pc[:, 2]
    zs = np.where(np.abs(z) < 1e-9, 1e-9, z)
    uv = np.stack([k[:, 0] * pc[:, 0] / zs + k[:, 2], k[:, 1] * pc[:, 1] / zs + k[:, 3]], axis=1)
    return uv, z


def segment_hits_box(p: np.ndarray, q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether the 2D segment p→q meets the axis-aligned box [lo, hi] (all (n,2); Liang–Barsky clipping).

    Returns bool (n,). Used for "the object's image box lies between the two props"."""
    d = q - p
    t0, t1 = np.zeros(len(p)), np.ones(len(p))
    ok = np.ones(len(p), bool)
    for axis in range(2):
        for bound, sign in ((lo[:, axis], -1.0), (hi[:, axis], 1.0)):
            # inside half-plane: sign * (p + t d - bound) <= 0
            num = sign * (bound - p[:, axis])   # sign*(bound - p)
            den = sign * d[:, axis]
            par = np.abs(den) < 1e-12
            ok &= ~(par & (num < 0))
            with np.errstate(divide="ignore", invalid="ignore"):
                t = num / den
            enter = ~par & (den < 0)
            leave = ~par & (den > 0)
            t0 = np.where(enter, np.maximum(t0, t), t0)
            t1 = np.where(leave, np.minimum(t1, t), t1)
    return ok & (t0 <= t1)


def object_image_box(df, k, w2c) -> tuple[np.ndarray, np.ndarray]:
    """Image bounding box (pixels, (n,2) lo and hi) of the object's 3D bounds' 8 corners in front of the
    camera (corners behind it are ignored; NaN when the bounds are missing or wholly behind)."""
    lo = df[list(BOUNDS_COLUMNS[:3])].to_numpy(float)
    hi = df[list(BOUNDS_COLUMNS[3:])].to_numpy(float)
    uvs, fronts = [], []
    for cx in (lo[:, 0], hi[:, 0]):
        for cy in (lo[:, 1], hi[:, 1]):
            for cz in (lo[:, 2], hi[:, 2]):
                uv, z = project(k, w2c, np.stack([cx, cy, cz], 1))
                uvs.append(uv)
                fronts.append(z > 1e-3)
    uv = np.stack(uvs, 1)                       # (n, 8, 2)
    front = np.stack(fronts, 1)[..., None]      # (n, 8, 1)
    with np.errstate(invalid="ignore"):
        blo = np.where(front, uv, np.inf).min(1)
        bhi = np.where(front, uv, -np.inf).max(1)
    bad = ~np.isfinite(blo).all(1) | ~np.isfinite(bhi).all(1)
    blo[bad], bhi[bad] = np.nan, np.nan
    return blo, bhi


def _forward(yaw_deg, pitch_deg) -> np.ndarray:
    """Observer viewing direction (n,3) from yaw (azimuth from +x towards +y) and pitch (up), as scenes.props."""
    y, p = np.radians(yaw_deg), np.radians(pitch_deg)
    return np.stack([np.cos(p) * np.cos(y), np.cos(p) * np.sin(y), np.sin(p)], 1)


def lens_offset(df) -> np.ndarray:
    """Distance (m, (n,)) from the observer's centre to the front of its lens (camera) or its tip (arrow), as
    :meth:`scenes.props.Observer.eye` places it: where the prop visibly points from."""
    from scenes.props import ARROW_SCALE, LENS_LENGTH

    size = df["observer_size"].to_numpy(float)
    arrow = df["observer_shape"].astype(str).eq("arrow").to_numpy() if "observer_shape" in df else np.zeros(len(df), bool)
    return np.where(arrow, 0.6 * ARROW_SCALE, 0.3 + LENS_LENGTH) * size


def lens_ball_angle(k, w2c, obs, fwd, ball, offset) -> np.ndarray:
    """The 2D orientation cue (issue 35): angle (degrees, [0, 180], (n,)) in the viewer's image between the
    observer's lens axis — its projected centre to the projected front of its lens (``obs + offset·fwd``) — and
    the direction from its projected centre to the ball's. Small: "the lens points at the ball in the image",
    what a glance at the picture tells without judging the facing in depth. NaN when the axis projects to
    less than 1e-6 pixels (seen exactly end-on). Inputs as :func:`project` (``fwd`` unit (n,3) facing,
    ``offset`` (n,) metres)."""
    uv_o, _ = project(k, w2c, obs)
    uv_l, _ = project(k, w2c, obs + fwd * np.asarray(offset, float)[:, None])
    uv_b, _ = project(k, w2c, ball)
    a, b = uv_l - uv_o, uv_b - uv_o
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (a * b).sum(1) / (na * nb)
    ang = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    ang[(na < 1e-6) | (nb < 1e-6)] = np.nan
    return ang


def shortcut_cues(df):
    """Per-frame candidate shortcut cues (a DataFrame aligned with ``df``; float64, NaN where unavailable).

    Layout: ``prop_distance`` (3D, m), ``screen_separation`` (projected centres, pixels / image width),
    ``object_between`` (1 when the segment between the props' projected centres meets the object's image
    box), ``props_midpoint_offset`` (horizontal distance of the props' projected midpoint from the centre of
    the object's image box, in box widths: near 0 when the object sits between them, as when it blocks the
    line), ``observer_u/v``, ``ball_u/v`` (projected centres / image size), ``height_diff`` (observer_v −
    ball_v: > 0 when the ball is higher in the image), ``centre_offset_diff`` (the ball's distance from the image
    centre minus the observer's, in image sizes: with the camera aimed at the props' 3D midpoint the nearer prop
    is always the further out), ``ball_object_distance`` / ``observer_object_distance``
    (ground-plane distance from the object's centre, m), ``ball_z`` / ``observer_z`` (heights, m),
    ``viewer_distance`` (viewer to object centre, m).
    Size: ``size_ratio`` (ball/observer physical size), ``projected_size_ratio`` ((ball size / its distance) /
    (observer size / its distance)), ``pixel_ratio`` (rendered pixels ball / observer, if recorded).
    Orientation: ``observer_faces_viewer`` (cosine between the observer's forward direction and the
    direction from the observer to the viewer's camera centre); ``observer_faces_ball`` (the same towards
    the ball: part of VPT's definition when observers look away, so reported but never gated, see
    ``TASK_CUES``); ``lens_ball_angle`` (degrees, in the image: the observer's projected lens axis against the
    direction to the ball, :func:`lens_ball_angle`; the 2D shadow of ``observer_faces_ball``; gated for VPT by
    ``AuditConfig.vpt_orientation_max``).
    Visibility in the viewer's image: ``ball_visible_fraction``, ``observer_visible_fraction`` (if recorded).
    Colour: ``mean_r/g/b`` are added by :func:`image_features` (they need the images).
    """
    import pandas as pd

    k, w2c, width, height = _cameras(df)
    obs = df[["observer_x", "observer_y", "observer_z"]].to_numpy(float)
    ball = df[["ball_x", "ball_y", "ball_z"]].to_numpy(float)
    uv_o, _ = project(k, w2c, obs)
    uv_b, _ = project(k, w2c, ball)
    # camera centre C = -R^T t
    cam_c = -np.einsum("nji,nj->ni", w2c[:, :3, :3], w2c[:, :3, 3])
    d_o = np.linalg.norm(obs - cam_c, axis=1)
    d_b = np.linalg.norm(ball - cam_c, axis=1)
    cues = {
        "prop_distance": np.linalg.norm(obs - ball, axis=1),
        "screen_separation": np.linalg.norm(uv_o - uv_b, axis=1) / width,
        "observer_u": uv_o[:, 0] / width, "observer_v": uv_o[:, 1] / height,
        "ball_u": uv_b[:, 0] / width, "ball_v": uv_b[:, 1] / height,
        "height_diff": (uv_o[:, 1] - uv_b[:, 1]) / height,
        # issue 35 (29 Nov): a camera aimed at the props' 3D midpoint shows the nearer prop further from the image
        # centre (its offset divided by a smaller depth): depth AUC 0.000 on every such build
        "centre_offset_diff": (np.hypot(uv_b[:, 0] / width - 0.5, uv_b[:, 1] / height - 0.5)
                               - np.hypot(uv_o[:, 0] / width - 0.5, uv_o[:, 1] / height - 0.5)),
        "ball_z": ball[:, 2], "observer_z": obs[:, 2],
        "size_ratio": df["ball_size"].to_numpy(float) / df["observer_size"].to_numpy(float),
        "projected_size_ratio": (df["ball_size"].to_numpy(float) / d_b) / (df["observer_size"].to_numpy(float) / d_o),
    }
    to_viewer = cam_c - obs
    to_viewer /= np.linalg.norm(to_viewer, axis=1, keepdims=True)
    pitch = df["observer_pitch_deg"].to_numpy(float) if "observer_pitch_deg" in df else np.zeros(len(df))
    fwd = _forward(df["observer_yaw_deg"].to_numpy(float), pitch)
    cues["observer_faces_viewer"] = (fwd * to_viewer).sum(1)
    to_ball = ball - obs
    to_ball /= np.clip(np.linalg.norm(to_ball, axis=1, keepdims=True), 1e-12, None)
    cues["observer_faces_ball"] = (fwd * to_ball).sum(1)
    cues["lens_ball_angle"] = lens_ball_angle(k, w2c, obs, fwd, ball, lens_offset(df))
    if all(c in df for c in BOUNDS_COLUMNS):
        blo, bhi = object_image_box(df, k, w2c)
        between = segment_hits_box(uv_o, uv_b, blo, bhi).astype(float)
        between[np.isnan(blo).any(1)] = np.nan
        cues["object_between"] = between
        # issue 35 (29 Nov): the props' projected midpoint against the object's image box, horizontally, in box
        # widths. An occluded line runs through the object (its ground line 0.5 object radii from the centre,
        # median), a visible one beside it (1.0 radii): seen from the arc's middle the gap lies in depth, but the
        # arc turns it into a sideways image offset (visible against occluded AUC 0.72-0.94 on the sweep)
        mid_u = (uv_o[:, 0] + uv_b[:, 0]) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            off = np.abs(mid_u - (blo[:, 0] + bhi[:, 0]) / 2) / np.clip(bhi[:, 0] - blo[:, 0], 1e-6, None)
        cues["props_midpoint_offset"] = off
        centre = (df[list(BOUNDS_COLUMNS[:3])].to_numpy(float) + df[list(BOUNDS_COLUMNS[3:])].to_numpy(float)) / 2
        cues["ball_object_distance"] = np.linalg.norm(ball[:, :2] - centre[:, :2], axis=1)
        cues["observer_object_distance"] = np.linalg.norm(obs[:, :2] - centre[:, :2], axis=1)
        cues["viewer_distance"] = np.linalg.norm(cam_c - centre, axis=1)
    if "ball_pixels" in df and "observer_pixels" in df:
        cues["pixel_ratio"] = df["ball_pixels"].to_numpy(float) / np.clip(df["observer_pixels"].to_numpy(float), 1, None)
    for c in ("ball_visible_fraction", "observer_visible_fraction"):
        if c in df:
            cues[c] = df[c].to_numpy(float)
    return pd.DataFrame(cues, index=df.index)


# ---------------------------------------------------------------------- images
def load_small(path, size: int) -> np.ndarray:
    """An image as a (size, size, 3) float32 array in [0, 1] (``infra.images.read_image_small``)."""
    from infra.images import read_image_small

    return read_image_small(path, size)


def image_features(root, files, size: int = 32, threads: int = 4, thumbs: dict | None = None) -> np.ndarray:
    """Downsampled images (n, size*size*3) float32 in [0, 1] for ``files`` relative to ``root`` (PNG decoding
    releases the GIL, so a small thread pool reads them in parallel). ``thumbs``: {file: 8-bit (size, size, 3)
    thumbnail} made by the writer from the frame in memory (``infra.images.small_uint8``, bit for bit what
    reading the file gives, tested); the files it lacks are read."""
    from concurrent.futures import ThreadPoolExecutor

    root = Path(root)
    if not len(files):
        return np.zeros((0, size * size * 3), np.float32)
    thumbs = thumbs or {}

    def one(f):
        t = thumbs.get(f)
        if t is not None and t.shape == (size, size, 3):
            return (np.asarray(t, np.float32) / 255.0).reshape(-1)
        return load_small(root / f, size).reshape(-1)

    missing = [f for f in files if f not in thumbs]
    if len(missing) < 64:  # nothing (or little) to decode: no thread pool
        return np.stack([one(f) for f in files])
    with ThreadPoolExecutor(threads) as ex:
        arrs = list(ex.map(one, files))
    return np.stack(arrs)


# ---------------------------------------------------------------------- statistics
def weighted_auc(score: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """ROC AUC of ``score`` for binary ``y`` (1 = positive) with row weights ``w`` (n,) or (B, n); ties
    count one half (Mann–Whitney). Returns a float (w 1-D or None) or (B,) array. Sorted once, so B
    bootstrap weightings cost one cumulative sum each. Reference twin: sklearn's roc_auc_score."""
    score = np.asarray(score, float)
    y = np.asarray(y, float)
    w = np.ones_like(score) if w is None else np.asarray(w, float)
    order = np.argsort(score, kind="mergesort")
    s, yy, ww = score[order], y[order], w[..., order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    pos = np.add.reduceat(ww * yy, starts, axis=-1)
    neg = np.add.reduceat(ww * (1 - yy), starts, axis=-1)
    below = np.cumsum(neg, axis=-1) - neg
    num = (pos * (below + 0.5 * neg)).sum(-1)
    den = pos.sum(-1) * neg.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def cluster_ids(df) -> np.ndarray:
    """Integer id of each row's placement (scene, setting): the unit frames are resampled by."""
    import pandas as pd

    return pd.MultiIndex.from_frame(df[["scene", "setting"]].astype(str)).factorize()[0]


def cluster_counts(clusters: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, K) draws of a cluster bootstrap: how often each of the K clusters was drawn (with
    replacement) in each resample."""
    k = int(clusters.max()) + 1 if len(clusters) else 0
    return rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot) if k else np.zeros((n_boot, 0))


def cluster_weights(clusters: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) row weights of a cluster bootstrap: each resample draws the K clusters with replacement
    and a row's weight is how often its cluster was drawn (:func:`cluster_counts` per row)."""
    return cluster_counts(clusters, n_boot, rng)[:, clusters].astype(float)


def bootstrap_auc(score: np.ndarray, y: np.ndarray, clusters: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``weighted_auc(score, y, counts[:, clusters])`` (the plain twin, (B,) AUCs of a cluster bootstrap),
    bit for bit, without the (B, n) weight matrix. The AUC's numerator is Σ over (positive i, negative j) of
    w_i·w_j·([s_j < s_i] + ½[s_j = s_i]) = c_bᵀ M c_b with M[k, l] the same sum over the rows of clusters k
    and l (weights 1), and its denominator (c_b·P)(c_b·N) with P, N the positives and negatives per cluster.
    With integer counts and 0/1 labels every partial sum of both forms is a whole or half number far below
    2⁵², so both compute the same numerator and denominator exactly, in any order (tested equal). Scores
    that are not all finite, or labels not all 0/1, take the plain twin."""
    score = np.asarray(score, float)
    y = np.asarray(y)
    clusters = np.asarray(clusters)
    counts = np.asarray(counts, float)
    if (not len(score) or not np.isfinite(score).all() or not np.isin(y, (0, 1)).all()
            or counts.shape[1] > 4096 or not (counts == np.round(counts)).all() or np.abs(counts).max() > 2 ** 20):
        return weighted_auc(score, y, counts[:, clusters])
    k = counts.shape[1]
    pos = y == 1
    ps, pc = score[pos], clusters[pos]
    ns, nc = score[~pos], clusters[~pos]
    m = np.zeros((k, k))
    by = np.argsort(nc, kind="stable")
    cut = np.flatnonzero(np.r_[True, nc[by][1:] != nc[by][:-1], True])
    for a, b in zip(cut[:-1], cut[1:]):
        neg = np.sort(ns[by[a:b]])
        lo = np.searchsorted(neg, ps, "left")
        hi = np.searchsorted(neg, ps, "right")
        m[:, nc[by[a]]] = np.bincount(pc, weights=lo + 0.5 * (hi - lo), minlength=k)
    num = ((counts @ m) * counts).sum(-1)
    den = (counts @ np.bincount(pc, minlength=k).astype(float)) * (counts @ np.bincount(nc, minlength=k).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def cluster_mean_ci(values: np.ndarray, clusters: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """95% percentile CI of the mean of ``values`` (n,) under a cluster bootstrap (``counts`` (B, K) from
    :func:`cluster_counts`): each resample's mean is Σ count·sum / Σ count·size over the K clusters."""
    k = counts.shape[1]
    sums = np.bincount(clusters, np.asarray(values, float), minlength=k)
    return _ci((counts @ sums) / (counts @ np.bincount(clusters, minlength=k)))


def _ci(boot: np.ndarray) -> tuple[float, float]:
    boot = boot[np.isfinite(boot)]
    if not len(boot):
        return (math.nan, math.nan)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(lo), float(hi)


def fit_stump(x: np.ndarray, y: np.ndarray, threshold: float | None = None) -> tuple[float, int]:
    """Threshold t and polarity p ∈ {1, −1} maximising training accuracy of ``pred = (p·(x − t) > 0)``
    (``threshold`` given: only the polarity is fitted). Candidate thresholds: midpoints of up to 200 quantiles."""
    x, y = np.asarray(x, float), np.asarray(y, int)
    if threshold is not None:
        cands = np.array([threshold], float)
    else:
        q = np.unique(np.quantile(x, np.linspace(0, 1, 201)))
        cands = np.r_[q[0] - 1, (q[1:] + q[:-1]) / 2] if len(q) > 1 else q
    best = (-1.0, 0.0, 1)
    for t in cands:
        above = x > t
        acc = float((above == y).mean())
        for p, a in ((1, acc), (-1, 1 - acc)):
            if a > best[0]:
                best = (a, float(t), p)
    return best[1], best[2]


def stump_predict(x: np.ndarray, t: float, p: int) -> np.ndarray:
    return ((x > t) if p == 1 else ~(x > t)).astype(int)


def logreg_fit_predict(xtr, ytr, xte, C: float, seed: int = 0) -> np.ndarray:
    """Standardise (train mean/std), fit an L2 logistic regression (lbfgs) and predict test labels."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    mu = xtr.mean(0)
    sd = xtr.std(0)
    sd[sd < 1e-8] = 1.0
    # tol 1e-3: on 3D-PC pixels the test accuracy matches tol 1e-4 to 0.3 points at half the iterations
    model = LogisticRegression(C=C, max_iter=300, tol=1e-3, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit((xtr - mu) / sd, ytr)
    return model.predict((xte - mu) / sd)


# ---------------------------------------------------------------------- the audit
RULES = {
    # task: [(name, cue, fixed threshold or None, description)]
    "vpt": [("object_not_between_props", "object_between", 0.5,
             "object's image box not between the props -> visible"),
            ("props_far_apart_3d", "prop_distance", None, "props far apart (3D) -> not visible"),
            ("props_far_apart_screen", "screen_separation", None, "props far apart in the image -> not visible"),
            # issue 35: N fitted on train (the threshold), as every rule here
            ("lens_points_at_ball_2d", "lens_ball_angle", None,
             "the observer's lens axis points within N degrees of the ball in the image -> visible")],
    "depth": [("ball_higher_in_image", "height_diff", None, "ball higher in the image than the camera -> ball further"),
              ("observer_faces_viewer", "observer_faces_viewer", None, "observer faces the viewer -> ball further"),
              ("ball_looks_smaller", "projected_size_ratio", None, "ball small in the image relative to the camera -> further")],
}


def _row(task, kind, name, value, ci, n_train, n_test, n_placements, scored_on, gates, cfg: AuditConfig,
         description):
    lo, hi = gates if gates is not None else (math.nan, math.nan)
    passed = None if gates is None or not np.isfinite(value) else bool(lo <= value <= hi)
    # a figure outside its limits whose CI still holds chance (0.5) is noise as far as this build can tell
    chance = cfg.beyond_chance and passed is False and bool(ci[0] <= 0.5 <= ci[1])
    return {"task": task, "kind": kind, "name": name, "value": float(value), "ci_low": ci[0], "ci_high": ci[1],
            "n_train": int(n_train), "n_test": int(n_test), "n_placements": int(n_placements),
            "scored_on": scored_on, "gate_low": lo, "gate_high": hi, "passed": passed,
            "enforced": bool(gates is not None and n_placements >= cfg.min_placements and not chance),
            "description": description}


def audit_task(df, task: str, cfg: AuditConfig, pixels: np.ndarray | None = None) -> list[dict]:
    """Audit rows for one task. ``df``: the task's frames (metadata columns + the cues of
    :func:`shortcut_cues` + ``mean_r/g/b`` if known); ``pixels``: (len(df), d) image features or None."""
    _, lab = TASKS[task]
    y = df[lab].astype(int).to_numpy()
    tr = (df["split"] == "train").to_numpy()
    te = (df["split"] == "test").to_numpy()
    ntr, nte = int(tr.sum()), int(te.sum())
    rows: list[dict] = []
    if ntr == 0 or nte == 0 or len(np.unique(y[te])) < 2 or len(np.unique(y[tr])) < 2:
        return rows
    rng = np.random.default_rng([cfg.seed, 0xA0D1, len(task)])
    clusters = cluster_ids(df)
    k_all = len(np.unique(clusters))
    c_all = cluster_counts(clusters, cfg.bootstrap, rng)  # the bootstrap's row weights are c_all[:, clusters]
    clusters_te = cluster_ids(df[te])
    k_te = len(np.unique(clusters_te))
    wboot = cluster_weights(clusters_te, cfg.bootstrap, rng)
    cue_names = [c for c in CUE_ORDER if c in df.columns]

    def cue_auc(c):
        x = df[c].to_numpy(float)
        ok = np.isfinite(x)
        if ok.sum() < 2 or len(np.unique(y[ok])) < 2:
            return None
        auc = float(weighted_auc(x[ok], y[ok]))
        ci = _ci(bootstrap_auc(x[ok], y[ok], clusters[ok], c_all)) if cfg.bootstrap else (math.nan, math.nan)
        return ok, auc, ci

    # the cues' bootstrap AUCs (each a few passes over a bootstrap × frames matrix, numpy releasing the GIL)
    # on two threads: the audit runs after every scene is built, when the build's cores are free; each cue's
    # numbers are computed exactly as one at a time
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(cue_auc, cue_names))
    for c, res in zip(cue_names, results):
        if res is None:
            continue
        ok, auc, ci = res
        gate = None if c in TASK_CUES.get(task, ()) else cfg.gate(task, "cue_auc", c)
        rows.append(_row(task, "cue_auc", c, auc, ci, 0, int(ok.sum()), len(np.unique(clusters[ok])), "all",
                         gate, cfg, CUE_TEXT.get(c, c)))

    if task == "vpt" and "vpt_reason" in df:
        rows += contrast_rows(df, y, clusters, c_all, cue_names, cfg)

    def acc_row(kind, name, pred, description):
        correct = (pred == y[te]).astype(float)
        acc = float(correct.mean())
        if cfg.bootstrap:
            ci = _ci((wboot * correct).sum(1) / wboot.sum(1))
        else:
            ci = (math.nan, math.nan)
        return _row(task, kind, name, acc, ci, ntr, nte, k_te, "test", cfg.gate(task, kind, name), cfg, description)

    for name, c, thr, text in RULES[task]:
        if c not in df.columns:
            continue
        x = df[c].to_numpy(float)
        fin = np.isfinite(x)
        if not fin[tr].any():
            continue
        t, p = fit_stump(x[tr & fin], y[tr & fin], thr)
        xt = np.where(fin, x, np.nanmedian(x[tr]))
        rows.append(acc_row("rule", name, stump_predict(xt[te], t, p), f"{text} (threshold {t:.3g}, polarity {p:+d})"))

    joint = [c for c in cue_names if c not in TASK_CUES.get(task, ())
             and not (task == "vpt" and c in ORIENTATION and cfg.vpt_orientation_max is None)]
    # the regression on all cues, then on what the image shows (IMAGE_CUES): the first also reads scene parameters
    # (3D distances, heights) that fix whether the object lies between the props, i.e. the 3D layout the task
    # asks about; one on image cues alone is a 2D shortcut (issue 35, 29 Nov, eighth session). With the
    # orientation cue ungated, a reported third fit takes it in too, so that the summary shows the two together.
    image = [c for c in joint if c in IMAGE_CUES]
    fits = [(f"{len(joint)}_cues", joint, "logistic regression on "),
            (f"{len(image)}_image_cues", image, "logistic regression on the image cues ")]
    extra = [c for c in cue_names if c in ORIENTATION and c in IMAGE_CUES]
    if task == "vpt" and cfg.vpt_orientation_max is None and extra:
        fits.append((f"{len(image) + len(extra)}_image_cues_with_orientation", image + extra,
                     "logistic regression on the image cues "))
    for name, cols, text in fits:
        if cols:
            x = train_median_filled(df[cols].to_numpy(float), tr)
            pred = logreg_fit_predict(x[tr], y[tr], x[te], C=1.0, seed=cfg.seed)
            rows.append(acc_row("cue_logreg", name, pred, text + ", ".join(cols)))

    tree = [c for c in cue_names if c not in TASK_CUES.get(task, ())]
    pred, text = tree_fit_predict(df[tree], y, tr, te, cfg.seed)
    rows.append(acc_row("tree", "two_level_tree", pred, text))
    # the same tree on what the image shows (IMAGE_CUES): the one above may pair an image cue with a scene
    # parameter no image shows (pixel_ratio with the props' physical size_ratio gives their distance ratio)
    image = [c for c in tree if c in IMAGE_CUES]
    if image:
        pred, text = tree_fit_predict(df[image], y, tr, te, cfg.seed)
        rows.append(acc_row("tree", "two_level_tree_image", pred, text.replace(" cues: ", " image cues: ", 1)))

    if pixels is not None:
        itr = np.flatnonzero(tr)
        if len(itr) > cfg.max_train_images:
            itr = np.sort(rng.choice(itr, cfg.max_train_images, replace=False))
        xte = pixels[te]
        pred = logreg_fit_predict(pixels[itr], y[itr], xte, cfg.pixel_C, cfg.seed)
        desc = f"logistic regression on {cfg.pixel_size}x{cfg.pixel_size} RGB pixels (C={cfg.pixel_C})"
        rows.append(acc_row("pixel_logreg", "pixels", pred, desc))
        rows[-1]["n_train"] = len(itr)
        yshuf = rng.permutation(y[itr])
        pred = logreg_fit_predict(pixels[itr], yshuf, xte, cfg.pixel_C, cfg.seed)
        rows.append(acc_row("shuffled_control", "pixels_shuffled_labels", pred, desc + ", training labels permuted"))
        rows[-1]["n_train"] = len(itr)
        scenes = df["scene"].astype(str).to_numpy()
        pred, folds = scene_fold_predict(pixels, y, scenes, cfg, rng)
        if pred is not None:
            correct = (pred == y).astype(float)
            ci = cluster_mean_ci(correct, clusters, c_all) if cfg.bootstrap else (math.nan, math.nan)
            rows.append(_row(task, "pixel_cv", "pixels_scene_folds", float(correct.mean()), ci, len(y), len(y), k_all,
                             "all", None, cfg, f"{desc}, in {folds} folds grouped by scene over every frame (each "
                             "scene held out once; reported, not gated)"))
    return rows


def scene_fold_predict(x: np.ndarray, y: np.ndarray, scenes: np.ndarray, cfg: AuditConfig,
                       rng: np.random.Generator, folds: int = 5) -> tuple[np.ndarray | None, int]:
    """Out-of-fold predictions of the audit's pixel model (:func:`logreg_fit_predict`, ``cfg.pixel_C``) in
    ``min(folds, scenes)`` folds grouped by scene (``sklearn.model_selection.GroupKFold``: a scene's frames are
    never on both sides); each fold trains on at most ``cfg.max_train_images`` frames (a seeded subsample).
    Returns (predictions (n,), folds), or (None, 0) with fewer than two scenes or a fold whose training frames
    hold one label."""
    from sklearn.model_selection import GroupKFold

    k = min(folds, len(np.unique(scenes)))
    if k < 2:
        return None, 0
    pred = np.zeros_like(y)
    for tr, te in GroupKFold(k).split(x, y, scenes):
        if len(tr) > cfg.max_train_images:
            tr = np.sort(rng.choice(tr, cfg.max_train_images, replace=False))
        if len(np.unique(y[tr])) < 2:
            return None, 0
        pred[te] = logreg_fit_predict(x[tr], y[tr], x[te], cfg.pixel_C, cfg.seed)
    return pred, k


# the kinds of not-visible image a VPT contrast row sets against the visible ones (vpt_reason)
CONTRASTS = ("occluded", "out_of_view")


def contrast_rows(df, y, clusters, counts, cue_names, cfg: AuditConfig) -> list[dict]:
    """``contrast_auc`` rows (VPT, reported, never gated): each cue's AUC on the visible frames against one kind
    of not-visible frame (``CONTRASTS``; named ``<cue>:<kind>``), over all splits, CIs bootstrapping placements.

    The pooled AUC can hide a cue that gives one kind of negative away when the other kind sits on the other
    side of it: the props' midpoint sits on the object in occluded images but off it in visible and facing-away
    ones, and the lens points away from the ball in the image only in facing-away ones (issue 35, 29 Nov)."""
    reason = df["vpt_reason"].astype(str).to_numpy()
    rows = []
    for kind in CONTRASTS:
        m = (y == 1) | (reason == kind)
        if (y[m] == 0).sum() < 2 or (y[m] == 1).sum() < 2:
            continue
        for c in cue_names:
            x = df[c].to_numpy(float)
            ok = m & np.isfinite(x)
            if len(np.unique(y[ok])) < 2:
                continue
            auc = float(weighted_auc(x[ok], y[ok]))
            ci = _ci(bootstrap_auc(x[ok], y[ok], clusters[ok], counts)) if cfg.bootstrap else (math.nan, math.nan)
            rows.append(_row("vpt", "contrast_auc", f"{c}:{kind}", auc, ci, 0, int(ok.sum()),
                             len(np.unique(clusters[ok])), "all", None, cfg,
                             f"{CUE_TEXT.get(c, c)}; visible against {kind} frames only"))
    return rows


def train_median_filled(x: np.ndarray, tr: np.ndarray) -> np.ndarray:
    """``x`` (n, d) with every missing value (NaN) replaced by its column's median over the training rows
    ``tr`` (0 for a column with none there): the joint models' imputation, fitted on train only."""
    med = np.nanmedian(np.where(np.isfinite(x[tr]), x[tr], np.nan), axis=0) if tr.any() else np.zeros(x.shape[1])
    return np.where(np.isfinite(x), x, np.where(np.isfinite(med), med, 0.0))


def tree_fit_predict(x, y, tr, te, seed: int = 0) -> tuple[np.ndarray, str]:
    """A two-level decision tree (three threshold tests at most: the simplest rule that can treat two kinds of
    negative apart) on the cues ``x`` (DataFrame; NaN → the train median), fitted on ``tr``, predicting ``te``;
    and the tree as text (``cue <= t ? (...) : (...)``)."""
    from sklearn.tree import DecisionTreeClassifier

    a = train_median_filled(x.to_numpy(float), tr)
    t = DecisionTreeClassifier(max_depth=2, min_samples_leaf=5, random_state=seed).fit(a[tr], y[tr])
    s = t.tree_

    def node(i, top=False):
        if s.children_left[i] < 0:
            return str(int(t.classes_[np.argmax(s.value[i])]))
        text = (f"{x.columns[s.feature[i]]} <= {s.threshold[i]:.3g} ? {node(s.children_left[i])} : "
                f"{node(s.children_right[i])}")
        return text if top else f"({text})"
    return t.predict(a[te]), f"two-level decision tree on {x.shape[1]} cues: {node(0, top=True)}"


CUE_TEXT = {
    "prop_distance": "3D distance between the props",
    "screen_separation": "distance between the props' projected centres / image width",
    "object_between": "object's image box between the props (0/1)",
    "props_midpoint_offset": "horizontal offset of the props' image midpoint from the object's image box centre "
                             "(box widths)",
    "observer_u": "observer's image x", "observer_v": "observer's image y (down)",
    "ball_u": "ball's image x", "ball_v": "ball's image y (down)",
    "height_diff": "ball higher in the image than the observer (observer_v - ball_v)",
    "centre_offset_diff": "ball's distance from the image centre minus the observer's (fractions of the image size)",
    "ball_z": "ball height above ground (m)", "observer_z": "observer height above ground (m)",
    "size_ratio": "physical size ratio ball / observer",
    "projected_size_ratio": "projected size ratio (ball size/distance) / (observer size/distance)",
    "pixel_ratio": "rendered pixels ball / observer",
    "observer_faces_viewer": "cosine between observer's facing direction and the direction to the viewer",
    "observer_faces_ball": "cosine between observer's facing direction and the direction to the ball",
    "lens_ball_angle": "angle in the image between the observer's lens axis and the direction to the ball (deg)",
    "ball_object_distance": "ball's ground distance from the object's centre (m)",
    "observer_object_distance": "observer's ground distance from the object's centre (m)",
    "viewer_distance": "viewer's distance from the object's centre (m)",
    "ball_visible_fraction": "ball's visible fraction in the viewer's image",
    "observer_visible_fraction": "observer's visible fraction in the viewer's image",
    "mean_r": "mean image red", "mean_g": "mean image green", "mean_b": "mean image blue",
}
CUE_ORDER = tuple(CUE_TEXT)
# cues a viewer can measure in the image itself (positions, sizes and visible fractions in pixels, the props'
# angular size ratio, the lens direction as drawn, colour); the others are scene parameters (3D distances,
# heights, physical sizes, facing in 3D) that a person or a network has to infer
IMAGE_CUES = frozenset({
    "screen_separation", "object_between", "props_midpoint_offset", "observer_u", "observer_v", "ball_u", "ball_v",
    "height_diff", "centre_offset_diff", "pixel_ratio", "projected_size_ratio", "lens_ball_angle",
    "ball_visible_fraction", "observer_visible_fraction", "mean_r", "mean_g", "mean_b"})
# cues that are part of a task's definition (reported, never gated): whether the ball lies in the
# observer's field of view is half of "can the camera see the ball"
TASK_CUES = {"vpt": ("observer_faces_ball",)}


def shortcut_audit(meta, root=None, cfg: AuditConfig = AuditConfig(), progress: bool = False, thumbs: dict | None = None):
    """The shortcut audit of a build: a tidy table (one row per task × measure; columns task, kind, name,
    value, ci_low, ci_high, n_train, n_test, gate_low, gate_high, passed, description).

    ``meta``: the build's metadata (``metadata.parquet``); ``root``: the build folder holding the images
    (``file_name`` relative to it) or None to skip the image cues (mean colour, pixel regression);
    ``thumbs``: thumbnails the build made while writing the images (:func:`image_features`).
    """
    import pandas as pd

    rows: list[dict] = []
    use = np.zeros(len(meta), bool)
    for task, (col, _) in TASKS.items():
        if col in meta:
            use |= meta[col].fillna(False).to_numpy(bool)
    sub = meta[use].copy()
    sub = pd.concat([sub, shortcut_cues(sub)], axis=1)
    sub = sub.loc[:, ~sub.columns.duplicated(keep="last")]
    pix = None
    if root is not None and len(sub):
        pix = image_features(root, list(sub["file_name"]), cfg.pixel_size, thumbs=thumbs)
        rgb = pix.reshape(len(sub), -1, 3).mean(1)
        sub["mean_r"], sub["mean_g"], sub["mean_b"] = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    # the tasks are independent (each its own rows, seeded generator and models): one thread each, so the
    # build's serial tail is the longer task, not their sum; rows in TASKS order as before
    from concurrent.futures import ThreadPoolExecutor

    def one(task: str, col: str) -> list[dict]:
        m = sub[col].fillna(False).to_numpy(bool)
        return audit_task(sub[m], task, cfg, None if pix is None else pix[m])

    todo = [(task, col) for task, (col, _) in TASKS.items() if col in sub]
    with ThreadPoolExecutor(max(1, len(todo)), thread_name_prefix="audit-task") as ex:
        for part in list(ex.map(lambda tc: one(*tc), todo)):
            rows += part
    table = pd.DataFrame(rows, columns=list(AUDIT_DTYPES))
    return table.astype(AUDIT_DTYPES)


AUDIT_DTYPES = {"task": "string", "kind": "string", "name": "string", "value": "float64", "ci_low": "float64",
                "ci_high": "float64", "n_train": "int64", "n_test": "int64", "n_placements": "int64",
                "scored_on": "string", "gate_low": "float64", "gate_high": "float64", "passed": "boolean",
                "enforced": "boolean", "description": "string"}


def exceeded(table):
    """Rows whose value lies outside its gate (enforced or not)."""
    return table[table.passed.fillna(True).eq(False)]


def failed_gates(table):
    """Rows that fail an enforced gate (outside the limits and scored on >= min_placements placements)."""
    return table[table.passed.fillna(True).eq(False) & table.enforced.fillna(False)]


def failure_message(table, out=None) -> str:
    """One paragraph: every failed gate with its value and limit, and how to relax the gates."""
    bad = failed_gates(table)
    items = "; ".join(f"{r.task} {r.kind} {r.name} = {r.value:.3f} (allowed [{r.gate_low:.2f}, {r.gate_high:.2f}])"
                      for r in bad.itertuples())
    where = f" The outputs are kept in {out} (see shortcut_audit.csv and summary.md)." if out else ""
    return (f"3D-PC shortcut audit failed {len(bad)} gate(s): {items}. A model could answer these labels from "
            f"2D layout, orientation or raw pixels instead of perspective taking.{where} To keep building while "
            "iterating, pass audit.enforce=false (the audit is still written); to relax a gate, override it, e.g. "
            "audit.vpt_auc_low=0.3 audit.vpt_auc_high=0.7 (defaults: AuditConfig in tasks/threedpc/config.py).")


def audit_markdown(table, cfg: AuditConfig) -> str:
    """The ``## Shortcut audit`` section of summary.md."""
    import pandas as pd

    lines = ["", "## Shortcut audit", ""]
    if not cfg.enabled:
        return "\n".join(lines + ["Not run (audit.enabled=false).", ""])
    bad = failed_gates(table)
    loose = exceeded(table)
    loose = loose[~loose.enforced.fillna(False)]
    gated = int(table.enforced.fillna(False).sum())
    state = "PASSED" if not len(bad) else f"FAILED ({len(bad)} of {gated} enforced gates)"
    lines.append(f"Gates: **{state}**{'' if cfg.enforce else ' (not enforced: audit.enforce=false)'}. Single-cue "
                 "AUCs over all frames of the task; rules and regressions fitted on the train scenes and scored on "
                 "the held-out test scenes; 95% CIs bootstrap placements (scene, setting). AUC 0.5 = no information. "
                 f"Gates are enforced for measures resting on >= {cfg.min_placements} placements "
                 "(audit.min_placements)" + ("; a figure outside its limits fails when its 95% CI excludes 0.5 "
                                              "(audit.beyond_chance)." if cfg.beyond_chance else "."))
    lines.append("")
    if len(bad):
        lines += ["Failed gates:", ""] + [f"- {r.task} {r.kind} `{r.name}` = {r.value:.3f}, allowed "
                                         f"[{r.gate_low:.2f}, {r.gate_high:.2f}]" for r in bad.itertuples()] + [""]
    if len(loose):
        lines += ["Outside the limits but on too few placements to judge, or with a 95% CI that still includes "
                  "chance (0.5; audit.beyond_chance) (not enforced):", ""]
        lines += [f"- {r.task} {r.kind} `{r.name}` = {r.value:.3f} on {r.n_placements} placements, allowed "
                  f"[{r.gate_low:.2f}, {r.gate_high:.2f}]" for r in loose.itertuples()] + [""]
    contrast = table[table.kind == "contrast_auc"]
    lines += ["| task | kind | name | value | 95% CI | scored on | placements | gate | ok |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in table[table.kind != "contrast_auc"].itertuples():
        gate = "" if not np.isfinite(r.gate_low) else f"[{r.gate_low:.2f}, {r.gate_high:.2f}]"
        ok = "" if r.passed is None or r.passed is pd.NA else ("yes" if r.passed else
                                                              ("**NO**" if r.enforced else "no (not enforced)"))
        ci = "" if not np.isfinite(r.ci_low) else f"{r.ci_low:.3f}-{r.ci_high:.3f}"
        lines.append(f"| {r.task} | {r.kind} | {r.name} | {r.value:.3f} | {ci} | {r.scored_on} | {r.n_placements} "
                     f"| {gate} | {ok} |")
    if len(contrast):
        lo, hi = cfg.vpt_auc_low, cfg.vpt_auc_high
        lines += ["", "VPT contrasts (reported, not gated; `contrast_auc` rows of shortcut_audit.csv): single cues "
                  "on the visible frames against one kind of not-visible frame, those outside "
                  f"[{lo:.2f}, {hi:.2f}]:", ""]
        for kind in CONTRASTS:
            part = contrast[contrast.name.str.endswith(f":{kind}")]
            far = part[(part.value < lo) | (part.value > hi)]
            far = far.assign(d=(far.value - 0.5).abs()).sort_values("d", ascending=False)
            items = ", ".join(f"{r.name.rsplit(':', 1)[0]} {r.value:.2f}" for r in far.itertuples()) or "none"
            if len(part):
                lines.append(f"- visible vs {kind} ({part.n_test.max()} frames): {items}")
        lines.append("")
    return "\n".join(lines) + "\n"


def run_build_audit(df, out, cfg: AuditConfig, thumbs: dict | None = None):
    """Audit an assembled build (``df`` = its metadata, images under ``out``; ``thumbs``: see
    :func:`image_features`), write ``shortcut_audit.csv|parquet`` and return (table, markdown section). Does
    not raise on failed gates: call :func:`enforce` after everything else is written."""
    from infra.files import write_table

    if not cfg.enabled:
        return None, audit_markdown(None, cfg)
    table = shortcut_audit(df, out, cfg, thumbs=thumbs)
    write_table(table, Path(out) / AUDIT_FILE)
    return table, audit_markdown(table, cfg)


def enforce(table, out, cfg: AuditConfig) -> None:
    """Raise :class:`ShortcutAuditFailed` (after the outputs are written) when enforced gates fail."""
    if table is not None and cfg.enforce and len(failed_gates(table)):
        raise ShortcutAuditFailed(failure_message(table, out))


@dataclasses.dataclass(frozen=True)
class AuditOptions:
    build: str = field("???", "a finished 3D-PC build folder (holding metadata.parquet)")
    no_images: bool = field(False, "skip mean colour and the pixel regression")


def main(argv: list[str] | None = None) -> int:
    """``python -m tasks.threedpc.shortcuts <build folder> [no_images=true]``: audit an existing build, print the
    section and write ``shortcut_audit.csv|parquet`` into it (exit 1 when a gate fails)."""
    from infra.cli import run_options

    return run_options("tasks.threedpc.shortcuts", "usage: python -m tasks.threedpc.shortcuts <build> "
                       "[no_images=true]   (--no-images works too; exit 1 when an enforced gate fails)",
                       AuditOptions, _audit_job, argv, positional=("build",))


def _audit_job(o: AuditOptions) -> int:
    import pandas as pd

    meta_path = Path(o.build) / "metadata.parquet"
    if not meta_path.exists():
        raise ValueError(f"{meta_path} does not exist; pass a finished 3D-PC build folder")
    cfg = AuditConfig()
    meta = pd.read_parquet(meta_path)
    table = shortcut_audit(meta, None if o.no_images else o.build, cfg)
    from infra.files import write_table

    write_table(table, Path(o.build) / AUDIT_FILE)
    print(audit_markdown(table, cfg))
    return 1 if len(failed_gates(table)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
