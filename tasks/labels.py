"""3D-PC labels: visual perspective taking (VPT), depth order and viewer visibility.

Every function is pure and returns the label *and* the numbers behind it, so that each label in a
dataset can be audited. Polarity (the same everywhere in Vantage):

* ``vpt_label``:   1 = the observer (green camera) can see the target (red ball), 0 = it cannot,
  ``None`` = ambiguous (dropped). ``vpt_reason`` ∈ {visible, occluded, out_of_view, partial, disagree}.
* ``depth_label``: 1 = the target is further from the viewer than the observer, 0 = nearer,
  ``None`` = ambiguous (relative gap below ``depth_gap_min``). ``depth_reason`` ∈ {ordered, ambiguous}.

VPT is decided twice, independently: by ray casting against the exact scene geometry (meshes) and by
rendering the splats from the observer's eye. A label is kept only when both agree. The ray cast is done
from every point of the observer's aperture (the lens front, :func:`aperture_points`): a ball is occluded
only when it is hidden from all of it and visible only when it is visible from all of it, so that no label
hangs on where exactly inside the lens a person imagines the eye. Since rule v3.0 the rays aim at the ball's
clearance disc (:class:`ClearanceDisc`: the ball and a ring around it), so that a ball a hair beside or behind
an outline is dropped as partial rather than labelled in a way no person could check.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from scenes.props import cross3

from infra.schema import ConfigError, field, validate_config

LABEL_RULE_VERSION = "3.2"


@dataclasses.dataclass(frozen=True)
class LabelRules:
    """Thresholds behind every label (recorded with each dataset via ``LABEL_RULE_VERSION`` and values).

    vpt_visible_min:  visible fraction ≥ this (and target in view) → visible (1). The ray-cast fraction is over the
                      clearance disc (see ``clearance``), the render check's over the ball's own pixels.
                      0.9 since v3.0 (was 0.8 of the ball alone: a fifth of the ball could be behind the outline).
    vpt_hidden_max:   visible fraction ≤ this → not visible (0, occluded); in between → partial (dropped).
    depth_gap_min:    |d_ball − d_observer| / mean(d) below this → ambiguous depth (dropped).
    prop_visible_min: a prop whose visible fraction in the viewer's image is below this → frame dropped.
    prop_in_image_min: a prop with less of its surface inside the viewer's image → frame dropped.
    n_rays:           rays per line-of-sight test (spread over the target's silhouette).
    check_size:       image size (pixels) of the render check, a camera at the eye aimed at the target.
    alpha_hidden:     a target pixel is hidden when the splats in front of it reach this opacity.
    aperture_scale:   radius of the observer's aperture, in observer sizes (body widths). The line of sight is
                      ray-cast from the eye (lens-front centre) and ``aperture_points`` points on a circle of
                      this radius around it, perpendicular to the viewing direction. 0.25 = the lens ring's
                      radius (the lens front is 0.22, its ring 0.25 body widths: 6 cm at the default 0.24 m),
                      i.e. the whole lens a person sees. Rules v2.0+: visible only if the visible fraction is
                      ≥ ``vpt_visible_min`` from every aperture point, occluded only if ≤ ``vpt_hidden_max``
                      from every one, else partial (dropped). 0 = the v1.0 single-eye-point rule.
    aperture_points:  points on the aperture's rim (evenly spaced; 8 → 45° apart).
    clearance:        rule v3.x's margin at the target's end of the sight line, in target sizes (diameters): the
                      ray-cast fractions are taken over the **clearance disc** (:class:`ClearanceDisc`), the target's
                      silhouette grown by ``clearance × size`` all round (0.5 → a disc of 2 × the ball's radius),
                      minus the part below the target's bottom (its own support, the ground). Visible then means the
                      ball *and a ring around it* are in plain view; occluded that the occluder covers the ball with
                      room to spare. Why (issue 10): with the ball alone, rejection sampling picked balls a hair
                      above or beside the object's outline as seen from the observer, which no person can judge
                      from a 256-px image. v3.0: 0.25; v3.1 (default): 0.5, because at 0.25 about one VPT image in
                      eight still hung on heights along the sight line that one view cannot settle. 0 = the v2.0
                      rule (the target's own silhouette).
    ring_below:       rule v3.2 (default True): for a ball on a stand the clearance disc goes on below the ball, down
                      to the stand's foot, and the rays to it ignore the ball's own stand (as if it were glass), so
                      a ball seen over an object's top edge is visible only with the ring's margin below it too.
                      Why (issue 10): v3.1 cut the disc at the ball's bottom for every ball (its stand blocks the
                      rays below it), so a raised ball whose bottom just cleared the top edge of the object was
                      labelled visible: the hesitations left on the v3.1 contact sheet (balls on poles at the
                      object's height). False = v3.1. A ball on the ground keeps the cut (the ground is below it).
    """

    vpt_visible_min: float = field(0.9, "visible fraction at or above which the ball counts as visible", range=(0, 1))
    vpt_hidden_max: float = field(0.05, "visible fraction at or below which the ball counts as occluded", range=(0, 1))
    depth_gap_min: float = field(0.10, "relative depth gap below which depth order is ambiguous", range=(0, 2))
    prop_visible_min: float = field(0.5, "least visible fraction of a prop in the viewer's image", range=(0, 1))
    prop_in_image_min: float = field(0.9, "least share of a prop's surface inside the image", range=(0, 1))
    n_rays: int = field(256, "rays per line-of-sight test", range=(1, 65536))
    check_size: int = field(64, "render-check image size (pixels)", range=(8, 4096))
    alpha_hidden: float = field(0.5, "splat opacity in front of a prop pixel that hides it", range=(0, 1))
    aperture_scale: float = field(0.25, "aperture radius in observer sizes (0 = single eye point)", range=(0, 10))
    aperture_points: int = field(8, "points on the aperture's rim", range=(0, 360))
    clearance: float = field(0.5, "clearance ring around the target, in target sizes (0 = the target alone)",
                             range=(0, 5))
    ring_below: bool = field(True, "v3.2: the clearance ring also below a raised ball, its own stand ignored "
                             "(False = v3.1: the ring cut at the ball's bottom)")

    def __post_init__(self):
        validate_config(self)  # each field's declared range (tasks/schema.py), then the rules between fields
        if self.aperture_scale > 0 and self.aperture_points < 3:
            raise ConfigError(f"aperture_points={self.aperture_points}: need >= 3 rim points when aperture_scale > 0 "
                              f"(got aperture_scale={self.aperture_scale}); or aperture_scale=0 for one eye point")
        if not self.vpt_hidden_max < self.vpt_visible_min:
            raise ConfigError(f"vpt_hidden_max={self.vpt_hidden_max}, vpt_visible_min={self.vpt_visible_min}: need "
                              "vpt_hidden_max < vpt_visible_min")
        if not self.depth_gap_min < 2:
            raise ConfigError(f"depth_gap_min={self.depth_gap_min} is out of range [0, 2)")


# ---------------------------------------------------------------------- VPT
def in_view(observer, target) -> bool:
    """True when the target's centre lies inside the observer's (square) viewing frustum."""
    cam = observer.camera(64, 64)
    uv, z = cam.project(target.center[None])
    return bool(z[0] > 0 and 0 <= uv[0, 0] <= 64 and 0 <= uv[0, 1] <= 64)


def raycast_visible_fraction(eye, target, occluders, n_rays: int = 256) -> float:
    """Fraction of rays from ``eye`` to points spread over the target's silhouette that reach the
    target before hitting ``occluders`` (a trimesh, or anything with ``.ray.intersects_location``)."""
    pts = target.facing_points(eye, n_rays)
    eye = np.asarray(eye, float)
    vec = pts - eye
    dist = np.linalg.norm(vec, axis=1)
    dirs = vec / dist[:, None]
    locs, idx, _ = occluders.ray.intersects_location(np.tile(eye, (len(pts), 1)), dirs, multiple_hits=False)
    blocked = np.zeros(len(pts), bool)
    if len(idx):
        hit = np.linalg.norm(locs - eye, axis=1)
        blocked[idx] = hit < dist[idx] - 1e-4
    return float(1.0 - blocked.mean())


def aperture_points(observer, rules: LabelRules = LabelRules()) -> np.ndarray:
    """Eye points of the observer's aperture, (1 + k, 3) world metres: row 0 is the eye (lens-front centre),
    rows 1.. are ``k = rules.aperture_points`` points evenly spaced on a circle of radius
    ``rules.aperture_scale × observer.size`` around it, in the plane perpendicular to the viewing direction
    (starting at the observer's left, counter-clockwise seen from the front). Only the eye when the scale is 0."""
    eye = np.asarray(observer.eye, float)
    r = rules.aperture_scale * observer.size
    if r <= 0 or rules.aperture_points == 0:
        return eye[None]
    rot = observer.rotation  # columns: forward, left, up
    ang = 2 * math.pi * np.arange(rules.aperture_points) / rules.aperture_points
    rim = eye + r * (np.cos(ang)[:, None] * rot[:, 1] + np.sin(ang)[:, None] * rot[:, 2])
    return np.vstack([eye, rim])


def raycast_visible_fractions(eyes, target, occluders, n_rays: int = 256) -> np.ndarray:
    """:func:`raycast_visible_fraction` from each of several eye points (m, 3) in one batched ray cast:
    returns (m,) fractions. Each eye gets its own silhouette points (the target seen from that point)."""
    eyes = np.atleast_2d(np.asarray(eyes, float))
    pts = np.concatenate([target.facing_points(e, n_rays) for e in eyes])
    org = np.repeat(eyes, n_rays, axis=0)
    vec = pts - org
    dist = np.linalg.norm(vec, axis=1)
    dirs = vec / dist[:, None]
    locs, idx, _ = occluders.ray.intersects_location(org, dirs, multiple_hits=False)
    blocked = np.zeros(len(pts), bool)
    if len(idx):
        hit = np.linalg.norm(locs - org[idx], axis=1)
        stops = hit < dist[idx] - 1e-4
        box = getattr(target, "ignore_box", None)  # the ball's own stand (rule v3.2): not an occluder of its ring
        if box is not None:
            stops &= ~np.all((locs >= box[0]) & (locs <= box[1]), axis=1)
        blocked[idx] = stops
    return 1.0 - blocked.reshape(len(eyes), n_rays).mean(1)


@functools.lru_cache(maxsize=32)
def _spiral(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Vogel spiral of ``m`` points on the unit disc: (sqrt(k/m), cos φ, sin φ) with k = i + 0.5 and the
    golden angle φ = k·π(3 − √5); read-only, shared by every :class:`ClearanceDisc` (the same values it
    computed per call before, once per m)."""
    k = np.arange(m) + 0.5
    phi = k * math.pi * (3 - math.sqrt(5))
    out = (np.sqrt(k / m), np.cos(phi), np.sin(phi))
    for a in out:
        a.flags.writeable = False
    return out


class ClearanceDisc:
    """The target grown by a clearance ring, as ray-cast targets (``facing_points``) for the VPT rule v3.x.

    ``facing_points(eye, n)``: ``n`` points spread uniformly (Vogel spiral) over the disc of radius
    ``target.bounding_radius + clearance × target.size`` through the target's centre, perpendicular to the view
    from ``eye``, without the points lower than ``floor``. A ray reaching a disc point inside the target passes
    only through the target, which is not an occluder, so the inner part stands for the target.

    ``floor``: the target's bottom (world z of centre − bounding radius) for a target on the ground, or with
    ``support`` None or ``below`` False (rule v3.0/v3.1: its support or the ground would block rays to points
    lower down from any eye). With a ``support`` and ``below`` (rule v3.2) the floor is the support's foot, and
    ``ignore_box`` (the support's bounds grown by 1 mm) tells the ray cast to ignore hits on the support, so the
    ring below a raised ball is judged against everything else.
    """

    def __init__(self, target, clearance: float, support=None, below: bool = False):
        self.target = target
        self.radius = float(target.bounding_radius + clearance * target.size)
        self.floor = float(target.center[2] - target.bounding_radius)
        self.ignore_box = None
        if support is not None and below:
            self.floor = float(support.bottom)
            b = np.asarray(support.mesh().bounds, float)
            self.ignore_box = np.stack([b[0] - 1e-3, b[1] + 1e-3])

    def _frame(self, eye) -> tuple[np.ndarray, np.ndarray]:
        """Two unit vectors spanning the disc's plane as seen from ``eye`` (perpendicular to the view)."""
        view = self.target.center - eye
        view = view / np.linalg.norm(view)
        helper = np.array([0, 0, 1.0]) if abs(view[2]) < 0.9 else np.array([1.0, 0, 0])
        a = cross3(view, helper)
        a /= np.linalg.norm(a)
        return a, cross3(view, a)

    def facing_points(self, eye, n: int = 256) -> np.ndarray:
        eye = np.asarray(eye, float)
        c = self.target.center
        a, b = self._frame(eye)
        m = 2 * n  # the dropped lower part is at most half the disc
        while True:
            sq, cos_phi, sin_phi = _spiral(m)
            r = self.radius * sq
            pts = c + (r * cos_phi)[:, None] * a + (r * sin_phi)[:, None] * b
            keep = pts[pts[:, 2] >= self.floor - 1e-9]
            if len(keep) >= n:
                return keep[_evenly(len(keep), n)]
            if m >= 64 * n:  # the builder's floors keep at least half the disc; this one keeps almost none of it
                raise ValueError(f"clearance disc of the target at {tuple(np.round(c, 3))}: fewer than {n} of "
                                 f"{m} disc points lie above its floor z={self.floor:.3f} seen from {tuple(np.round(eye, 3))}")
            m *= 2

    def facing_points_many(self, eyes, n: int = 256) -> np.ndarray:
        """:meth:`facing_points` of each eye (m, 3), stacked ((m·n, 3)): the same points bit for bit (tested),
        the disc points of all eyes in one array operation (the per-eye frames are computed as there)."""
        eyes = np.atleast_2d(np.asarray(eyes, float))
        frames = [self._frame(e) for e in eyes]
        a = np.array([f[0] for f in frames])[:, None, :]
        b = np.array([f[1] for f in frames])[:, None, :]
        sq, cos_phi, sin_phi = _spiral(2 * n)
        r = self.radius * sq
        pts = self.target.center + (r * cos_phi)[None, :, None] * a + (r * sin_phi)[None, :, None] * b
        keep = pts[:, :, 2] >= self.floor - 1e-9
        out = []
        for i, (p, k) in enumerate(zip(pts, keep)):
            idx = np.flatnonzero(k)
            out.append(p[idx[_evenly(len(idx), n)]] if len(idx) >= n else self.facing_points(eyes[i], n))
        return np.concatenate(out)


@functools.lru_cache(maxsize=256)
def _evenly(count: int, n: int) -> np.ndarray:
    """``n`` indices spread evenly over ``range(count)`` (rounded linspace; read-only, computed once per pair)."""
    out = np.linspace(0, count - 1, n).round().astype(int)
    out.flags.writeable = False
    return out


def sight_target(target, rules: LabelRules, *, support):
    """What the VPT ray cast aims at: the target itself (``clearance`` 0, rule v2.0) or its
    :class:`ClearanceDisc` (``support``: the stand the target rests on, None = the ground).

    ``support`` has no default here nor in :func:`aperture_fractions`, :func:`aperture_label` and
    :func:`vpt_label`: since rule v3.2 a raised ball's label depends on its stand, so every caller says which
    (``support=placement.target_support``, or ``support=None`` for a ball on the ground); a call that forgets
    it fails instead of silently labelling a raised ball as if it lay on the ground."""
    if rules.clearance <= 0:
        return target
    return ClearanceDisc(target, rules.clearance, support, below=rules.ring_below)


def aperture_fractions(observer, target, occluders, rules: LabelRules = LabelRules(), *, support) -> np.ndarray:
    """Visible fraction of ``target`` (its clearance disc, :func:`sight_target`; ``support`` = the stand it rests
    on, None = the ground) from every point of the observer's aperture (:func:`aperture_points`): (1 + k,)
    floats in [0, 1], entry 0 from the eye centre. Label with :func:`vpt_from_aperture`."""
    return raycast_visible_fractions(aperture_points(observer, rules), sight_target(target, rules, support=support),
                                     occluders, rules.n_rays)


def vpt_from_aperture(fractions, visible_in_view: bool, rules: LabelRules) -> tuple[int | None, str]:
    """VPT rule v2.0 over the aperture: out of view → (0, out_of_view); visible from every aperture point
    (min ≥ ``vpt_visible_min``) → (1, visible); hidden from every one (max ≤ ``vpt_hidden_max``) → (0, occluded);
    otherwise (None, partial). With a single fraction this is :func:`vpt_from_fraction`."""
    f = np.atleast_1d(np.asarray(fractions, float))
    if not visible_in_view:
        return 0, "out_of_view"
    if f.min() >= rules.vpt_visible_min:
        return 1, "visible"
    if f.max() <= rules.vpt_hidden_max:
        return 0, "occluded"
    return None, "partial"


def aperture_label(observer, target, occluders, rules: LabelRules = LabelRules(), visible_in_view: bool | None = None,
                   *, support) -> dict:
    """Ray-cast VPT label over the aperture, for samplers: casts from the eye centre first and from the rim
    only when the centre's verdict is clear (a centre ``partial`` or ``out_of_view`` cannot become visible or
    occluded, so rejection loops pay the rim only for candidates). Returns ``vpt_label``, ``vpt_reason``,
    ``in_view``, ``visible_fraction_raycast`` (centre) and ``visible_fraction_min`` / ``_max`` (NaN when the
    rim was not cast). Same label as :func:`vpt_from_aperture` on :func:`aperture_fractions` (tested)."""
    view = in_view(observer, target) if visible_in_view is None else bool(visible_in_view)
    pts = aperture_points(observer, rules)
    target = sight_target(target, rules, support=support)
    centre = float(raycast_visible_fractions(pts[:1], target, occluders, rules.n_rays)[0])
    out = {"in_view": view, "visible_fraction_raycast": centre}
    label, reason = vpt_from_fraction(centre, view, rules)
    if label is None or reason == "out_of_view" or len(pts) == 1:
        lo = hi = centre if len(pts) == 1 else float("nan")
        return {**out, "vpt_label": label, "vpt_reason": reason, "visible_fraction_min": lo, "visible_fraction_max": hi}
    fr = np.concatenate([[centre], raycast_visible_fractions(pts[1:], target, occluders, rules.n_rays)])
    label, reason = vpt_from_aperture(fr, view, rules)
    return {**out, "vpt_label": label, "vpt_reason": reason, "visible_fraction_min": float(fr.min()),
            "visible_fraction_max": float(fr.max())}


# ---------------------------------------------------------------- batched ray casts (fast path)
def _occluder_parts(occluders):
    """(shared, own) intersectors of an occluder set: a :class:`tasks.placement.CompositeOccluders` exposes
    ``intersectors`` (the scene's first, shared by every placement of a scene; then the placement's supports);
    any other occluder (a trimesh) is one shared intersector."""
    its = getattr(occluders, "intersectors", None)
    if its is None:
        return occluders.ray, []
    return its[0], list(its[1:])


def raycast_visible_fractions_many(groups, n_rays: int = 256) -> list[np.ndarray]:
    """:func:`raycast_visible_fractions` for many (eyes, target, occluders) groups at once: one ray cast per
    distinct shared intersector (the scene's Embree BVH, see :func:`_occluder_parts`) over every group's rays,
    each group's own intersectors (its supports) on its rays only. Returns one (m,) array per group, bit for
    bit what :func:`raycast_visible_fractions` returns for that group alone (its plain twin; tested): every ray
    is cast, combined (nearest hit, the shared mesh first, ties to it, as :class:`CompositeOccluders`) and
    judged on its own, so batching changes no ray's answer, only how many Python calls pay for them.
    Why: a 3D-PC scene judges thousands of candidate placements and VPT-Strategy scan positions, each a few
    hundred to a few thousand rays, and per-call overhead was most of their cost."""
    if not groups:
        return []
    pts, org, bounds, boxes = [], [], [0], []
    for eyes, target, _ in groups:
        eyes = np.atleast_2d(np.asarray(eyes, float))
        many = getattr(target, "facing_points_many", None)
        pts.append(many(eyes, n_rays) if many is not None else np.concatenate([target.facing_points(e, n_rays) for e in eyes]))
        org.append(np.repeat(eyes, n_rays, axis=0))
        bounds.append(bounds[-1] + len(pts[-1]))
        boxes.append(getattr(target, "ignore_box", None))
    pts, org = np.concatenate(pts), np.concatenate(org)
    vec = pts - org
    dist = np.linalg.norm(vec, axis=1)
    dirs = vec / dist[:, None]
    best = np.full(len(org), np.inf)
    loc = np.zeros((len(org), 3))

    def take(rows, locs, idx):
        if not len(idx):
            return
        r = rows[idx]
        d = np.linalg.norm(locs - org[r], axis=1)
        closer = d < best[r]
        best[r[closer]], loc[r[closer]] = d[closer], locs[closer]

    parts = [_occluder_parts(occ) for _, _, occ in groups]
    shared: dict[int, list[int]] = {}
    for g, (it, _) in enumerate(parts):
        shared.setdefault(id(it), []).append(g)
    for members in shared.values():  # the shared mesh first: CompositeOccluders' order
        rows = np.concatenate([np.arange(bounds[g], bounds[g + 1]) for g in members])
        locs, idx, _ = parts[members[0]][0].intersects_location(org[rows], dirs[rows], multiple_hits=False)
        take(rows, locs, np.asarray(idx, np.int64))
    for g, (_, own) in enumerate(parts):
        rows = np.arange(bounds[g], bounds[g + 1])
        for it in own:
            locs, idx, _ = it.intersects_location(org[rows], dirs[rows], multiple_hits=False)
            take(rows, locs, np.asarray(idx, np.int64))
    out = []
    for g, (eyes, _, _) in enumerate(groups):
        sl = slice(bounds[g], bounds[g + 1])
        b, lg, dg = best[sl], loc[sl], dist[sl]
        hit = np.flatnonzero(np.isfinite(b))
        blocked = np.zeros(len(b), bool)
        if len(hit):
            h = np.linalg.norm(lg[hit] - org[sl][hit], axis=1)
            stops = h < dg[hit] - 1e-4
            if boxes[g] is not None:
                stops &= ~np.all((lg[hit] >= boxes[g][0]) & (lg[hit] <= boxes[g][1]), axis=1)
            blocked[hit] = stops
        out.append(1.0 - blocked.reshape(len(np.atleast_2d(eyes)), n_rays).mean(1))
    return out


def aperture_labels(jobs, rules: LabelRules = LabelRules()) -> list[dict]:
    """:func:`aperture_label` for many placements at once (its plain twin; the same dicts, tested).
    ``jobs``: (observer, target, occluders, visible_in_view (None: computed), support) per placement.
    Two batched ray casts (:func:`raycast_visible_fractions_many`): every eye centre, then the rims of the
    placements whose centre verdict is clear — the same two-stage rule as :func:`aperture_label`."""
    prep = []
    for observer, target, occluders, visible_in_view, support in jobs:
        view = in_view(observer, target) if visible_in_view is None else bool(visible_in_view)
        prep.append((view, aperture_points(observer, rules), sight_target(target, rules, support=support), occluders))
    centres = raycast_visible_fractions_many([(p[:1], t, occ) for _, p, t, occ in prep], rules.n_rays)
    out, rim = [], []
    for k, ((view, pts, tgt, occ), c) in enumerate(zip(prep, centres)):
        centre = float(c[0])
        res = {"in_view": view, "visible_fraction_raycast": centre}
        label, reason = vpt_from_fraction(centre, view, rules)
        if label is None or reason == "out_of_view" or len(pts) == 1:
            lo = hi = centre if len(pts) == 1 else float("nan")
            res.update(vpt_label=label, vpt_reason=reason, visible_fraction_min=lo, visible_fraction_max=hi)
        else:
            rim.append(k)
        out.append(res)
    rims = raycast_visible_fractions_many([(prep[k][1][1:], prep[k][2], prep[k][3]) for k in rim], rules.n_rays)
    for k, r in zip(rim, rims):
        fr = np.concatenate([[out[k]["visible_fraction_raycast"]], r])
        label, reason = vpt_from_aperture(fr, out[k]["in_view"], rules)
        out[k].update(vpt_label=label, vpt_reason=reason, visible_fraction_min=float(fr.min()),
                      visible_fraction_max=float(fr.max()))
    return out


def vpt_from_fraction(fraction: float, visible_in_view: bool, rules: LabelRules) -> tuple[int | None, str]:
    if not visible_in_view:
        return 0, "out_of_view"
    if fraction >= rules.vpt_visible_min:
        return 1, "visible"
    if fraction <= rules.vpt_hidden_max:
        return 0, "occluded"
    return None, "partial"


def check_camera(observer, target, size: int):
    """Camera at the observer's eye aimed at the target, framing it at ~60% of the image width."""
    d = float(np.linalg.norm(target.center - observer.eye))
    fov = math.degrees(2 * math.atan(min(1.6 * target.bounding_radius / max(d, 1e-6), 10.0)))
    return observer.camera(size, size, look_at=target.center, fov_deg=min(fov, 170.0))


def rendered_visible_fraction(gaussians, observer, target, rules: LabelRules, background=(0, 0, 0),
                              mesh_renderer: str = "pyrender") -> float:
    """Fraction of the target's pixels that survive compositing, rendered from the observer's eye."""
    from render.compose import composite

    cam = check_camera(observer, target, rules.check_size)
    comp = composite(gaussians, cam, [target.mesh()], background=background, mesh_renderer=mesh_renderer)
    n = int(comp.layer.mask.sum())
    if n == 0:
        return float("nan")
    return float(comp.mesh_visible(0, rules.alpha_hidden).sum() / n)


def vpt_label(scene, observer, target, rules: LabelRules = LabelRules(), mesh_renderer: str = "pyrender",
              *, support) -> dict:
    """VPT label with its evidence: ray-cast and rendered visible fractions, in-view flag, both labels.

    ``scene`` is a :class:`scenes.scene.Scene`; its exact meshes (or proxy mesh) are the occluders. The ray
    cast covers the whole aperture (``visible_fraction_min`` / ``_max`` over :func:`aperture_points`;
    ``visible_fraction_raycast`` is the eye centre's); the render check renders from the eye centre only
    (one 64×64 splat render; the aperture's extremes are already decided by the exact geometry).
    ``support``: the stand the target rests on (None = the ground), for the clearance ring below it (rule v3.2).
    """
    view = in_view(observer, target)
    occ = scene.occluders()
    fr = aperture_fractions(observer, target, occ, rules, support=support)
    f_ray = float(fr[0])
    f_ren = rendered_visible_fraction(scene.gaussians, observer, target, rules, scene.background, mesh_renderer)
    lab_ray, why_ray = vpt_from_aperture(fr, view, rules)
    lab_ren, why_ren = vpt_from_fraction(f_ren if np.isfinite(f_ren) else 0.0, view, rules)
    if lab_ray is None or lab_ren is None:
        label, reason = None, "partial"
    elif lab_ray != lab_ren:
        label, reason = None, "disagree"
    else:
        label, reason = lab_ray, why_ray
    return {"vpt_label": label, "vpt_reason": reason, "in_view": view, "visible_fraction_raycast": f_ray,
            "visible_fraction_min": float(fr.min()), "visible_fraction_max": float(fr.max()),
            "visible_fraction_render": f_ren, "vpt_label_raycast": lab_ray, "vpt_label_render": lab_ren,
            "vpt_reason_raycast": why_ray, "vpt_reason_render": why_ren}


# ---------------------------------------------------------------------- depth order
def depth_order(viewer_eye, observer, target, rules: LabelRules = LabelRules()) -> dict:
    """Depth label from the viewer's distances to the two prop centres (Euclidean, metres)."""
    eye = np.asarray(viewer_eye, float)
    d_ball = float(np.linalg.norm(target.center - eye))
    d_obs = float(np.linalg.norm(np.asarray(observer.position, float) - eye))
    gap = (d_ball - d_obs) / (0.5 * (d_ball + d_obs))
    if abs(gap) < rules.depth_gap_min:
        label, reason = None, "ambiguous"
    else:
        label, reason = int(gap > 0), "ordered"
    return {"d_ball": d_ball, "d_observer": d_obs, "depth_gap": gap, "depth_label": label, "depth_reason": reason}


# ---------------------------------------------------------------------- viewer visibility
def in_image_fraction(camera, points: np.ndarray) -> float:
    uv, z = camera.project(points)
    inside = (z > 0.01) & (uv[:, 0] >= 0) & (uv[:, 0] <= camera.width) & (uv[:, 1] >= 0) & (uv[:, 1] <= camera.height)
    return float(inside.mean())


def viewer_visibility(comp, camera, props: list, alone_masks: list[np.ndarray], rules: LabelRules = LabelRules()) -> dict:
    """Per prop: visible fraction in the viewer's image (pixels surviving the splats and the other prop,
    over its pixels when rendered alone) and the fraction of its surface inside the image.

    ``props`` = [observer, target] in the order of the meshes composited in ``comp``.
    Returns the numbers and ``keep`` / ``drop_reason`` for the frame.
    """
    from scenes.props import surface_samples

    inside, visible, pixels, heights = [], [], [], []
    for k, (prop, alone) in enumerate(zip(props, alone_masks, strict=True)):
        n_alone = int(alone.sum())
        pixels.append(n_alone)
        heights.append(mask_height_px(alone))
        visible.append(float(comp.mesh_visible(k, rules.alpha_hidden).sum() / n_alone) if n_alone else 0.0)
        inside.append(in_image_fraction(camera, surface_samples(prop)))
    return visibility_row(inside, visible, pixels, rules, heights)


def mask_height_px(mask: np.ndarray) -> int:
    """Rows (pixels) spanned by a prop's mask [H, W] bool in the viewer's image, from its top row to its
    bottom row (0 for an empty mask): the prop's size on screen as a person judges it (issue 10)."""
    rows = np.flatnonzero(np.asarray(mask).any(axis=1))
    return int(rows[-1] - rows[0] + 1) if len(rows) else 0


def visibility_row(inside: list[float], visible: list[float], pixels: list[int], rules: LabelRules,
                   heights: list[int] | None = None) -> dict:
    """Per-prop (observer, ball) visibility columns plus ``keep`` and ``drop_reason``: a prop less than
    ``prop_in_image_min`` inside the image → ``<prop>_outside_image``, else one less than
    ``prop_visible_min`` visible → ``<prop>_hidden`` (a NaN visibility, i.e. not rendered, is not judged).
    ``heights``: each prop's on-screen height (pixels, :func:`mask_height_px`; 0 = not rendered), recorded
    as ``<prop>_height_px``."""
    out: dict = {}
    reasons = []
    heights = [0, 0] if heights is None else heights
    for name, f_in, vis, n, h in zip(("observer", "ball"), inside, visible, pixels, heights, strict=True):
        out.update({f"{name}_visible_fraction": vis, f"{name}_in_image_fraction": f_in, f"{name}_pixels": n,
                    f"{name}_height_px": int(h)})
        if f_in < rules.prop_in_image_min:
            reasons.append(f"{name}_outside_image")
        elif vis < rules.prop_visible_min:
            reasons.append(f"{name}_hidden")
    out["keep"] = not reasons
    out["drop_reason"] = ";".join(reasons)
    return out


# ---------------------------------------------------------------------- one frame
def props_may_overlap(eye, placement) -> bool:
    """False only when the cones from ``eye`` around the two props' bounding spheres are disjoint, so
    neither prop can occlude the other in any image taken from ``eye`` (a conservative, exact test)."""
    eye = np.asarray(eye, float)
    spheres = [(np.asarray(placement.observer.position, float), placement.observer.bounding_radius()),
               (placement.target.center, placement.target.bounding_radius)]
    dirs, half = [], []
    for c, r in spheres:
        d = float(np.linalg.norm(c - eye))
        if d <= r * 1.001:
            return True
        dirs.append((c - eye) / d)
        half.append(math.asin(r / d))
    angle = math.acos(float(np.clip(dirs[0] @ dirs[1], -1.0, 1.0)))
    return angle <= half[0] + half[1]


@dataclasses.dataclass
class FrameMeshes:
    """The mesh pass of one viewer frame (everything a frame's labels need except the splats).

    ``inside``: each prop's (observer, ball) share of surface samples inside the image (None when not
    computed); ``layer``: both props rendered together (:class:`render.meshes.MeshLayer`; None when the frame
    was not rendered because a prop lies outside the image); ``alone``: each prop's mask rendered alone."""

    inside: list[float] | None
    layer: object | None
    alone: list[np.ndarray] | None

    @property
    def heights(self) -> list[int]:
        """Each prop's on-screen height in pixels (:func:`mask_height_px`; 0 = not rendered)."""
        return [0, 0] if self.alone is None else [mask_height_px(a) for a in self.alone]

    @property
    def pixels(self) -> list[int]:
        return [0, 0] if self.alone is None else [int(a.sum()) for a in self.alone]

    def visible_bound(self) -> list[float]:
        """Each prop's visible fraction before the splats: its pixels in front in the combined layer over its
        pixels alone (0 for an empty mask, as :func:`viewer_visibility`). The splats can only lower it, so a
        prop below ``prop_visible_min`` here is hidden whatever the splats do."""
        return [float((self.layer.index == k).sum() / n) if n else 0.0 for k, n in enumerate(self.pixels)]


def frame_meshes(placement, camera, rules: LabelRules = LabelRules(), mesh_renderer: str = "pyrender",
                 skip_outside: bool = False) -> FrameMeshes:
    """The mesh pass of :func:`label_frame`: the props' combined layer and each prop's mask alone (from the
    combined layer when neither prop can hide the other, :func:`props_may_overlap`). ``skip_outside``: first
    measure how much of each prop lies inside the image and render nothing when one is below
    ``rules.prop_in_image_min`` (that frame is dropped whatever the pixels)."""
    from render.compose import render_mesh_layer
    from scenes.props import surface_samples

    inside = None
    if skip_outside:
        inside = [in_image_fraction(camera, surface_samples(p)) for p in (placement.observer, placement.target)]
        if min(inside) < rules.prop_in_image_min:
            return FrameMeshes(inside, None, None)
    meshes = placement.meshes()
    layer = render_mesh_layer(meshes, camera, mesh_renderer)
    if props_may_overlap(camera.center, placement):
        alone = [render_mesh_layer([m], camera, mesh_renderer).mask for m in meshes]
    else:  # neither prop can hide the other: each one's pixels in the combined layer are its own
        alone = [layer.index == k for k in range(len(meshes))]
    return FrameMeshes(inside, layer, alone)


def unsplatted_row(placement, camera, fm: FrameMeshes, vpt: dict, rules: LabelRules = LabelRules(),
                   drop: list[str] | None = None) -> dict:
    """The row of a frame that is dropped without splatting: visible fractions NaN (not judged), the mesh
    pass's pixels and heights, ``keep`` False and ``drop_reason`` = ``drop`` joined by ';' (None: the
    outside-image reasons :func:`visibility_row` finds from ``fm.inside``). ``fm.inside`` must be known."""
    nan = float("nan")
    row = {**depth_order(camera.center, placement.observer, placement.target, rules),
           **visibility_row(fm.inside, [nan, nan], fm.pixels, rules, fm.heights if fm.alone is not None else None),
           **vpt, "label_rule_version": LABEL_RULE_VERSION}
    if drop is not None:
        row["keep"], row["drop_reason"] = False, ";".join(drop)
    return row


def splat_frame(scene, placement, camera, fm: FrameMeshes, vpt: dict, rules: LabelRules = LabelRules(),
                backend: str = "cpu") -> tuple[np.ndarray, dict]:
    """The splat pass of :func:`label_frame` over the mesh pass ``fm`` (rendered): (uint8 image, row)."""
    from render.compose import composite_layer

    comp = composite_layer(scene.gaussians, camera, fm.layer, scene.background, backend=backend)
    row = {**depth_order(camera.center, placement.observer, placement.target, rules),
           **viewer_visibility(comp, camera, [placement.observer, placement.target], fm.alone, rules),
           **vpt, "label_rule_version": LABEL_RULE_VERSION}
    return comp.image_uint8(), row


def label_frame(scene, placement, camera, vpt: dict, rules: LabelRules = LabelRules(), backend: str = "cpu",
                mesh_renderer: str = "pyrender", render_dropped: bool = True,
                too_small=None) -> tuple[np.ndarray | None, dict]:
    """Render the viewer's image with the props and compute its per-frame labels.

    Returns (uint8 image [H,W,3], row) where row holds the depth-order evidence, both props' visibility
    in the viewer's image, the frame's keep flag / drop reason and the (frame-independent) VPT evidence.
    With ``render_dropped=False`` a frame that is dropped anyway because a prop lies outside the image is
    not rendered: the image is None and the visible fractions are NaN. With ``render_dropped=False`` and
    ``too_small`` (a function of a row's ``observer_height_px``/``ball_height_px`` → drop reasons, [] to keep;
    heights come from the mesh pass alone), a frame it drops is not splatted either — unless the meshes alone
    already hide a prop (then the frame is rendered and dropped as hidden, exactly as with ``render_dropped``):
    image None, visible fractions NaN, ``keep`` False, ``drop_reason`` its reasons. Every frame it keeps is
    byte for byte the fully rendered one (tests/test_labels.py compares).
    """
    fm = frame_meshes(placement, camera, rules, mesh_renderer, skip_outside=not render_dropped)
    if fm.layer is None:
        return None, unsplatted_row(placement, camera, fm, vpt, rules)
    if too_small is not None and not render_dropped:
        small = too_small({"observer_height_px": fm.heights[0], "ball_height_px": fm.heights[1]})
        if small and min(fm.visible_bound()) >= rules.prop_visible_min:
            return None, unsplatted_row(placement, camera, fm, vpt, rules, small)
    return splat_frame(scene, placement, camera, fm, vpt, rules, backend)


LABEL_DTYPES = {
    "vpt_label": "Int8", "depth_label": "Int8", "vpt_label_raycast": "Int8", "vpt_label_render": "Int8",
    "in_view": "boolean", "keep": "boolean",
    "vpt_reason": "string", "depth_reason": "string", "drop_reason": "string", "vpt_reason_raycast": "string",
    "vpt_reason_render": "string", "label_rule_version": "string", "file_name": "string", "scene": "string",
    "observer_shape": "string", "ball_shape": "string", "frame": "int32", "width": "int32", "height": "int32",
    "seed": "int64", "observer_pixels": "int32", "ball_pixels": "int32", "observer_height_px": "int32",
    "ball_height_px": "int32",
    "category": "string", "split": "string", "task_set": "string", "requested": "string", "setting": "int32",
}


def labels_table(rows: list[dict]):
    """Rows → a DataFrame with explicit dtypes (labels are nullable Int8: <NA> = ambiguous)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    dtypes = {k: v for k, v in LABEL_DTYPES.items() if k in df.columns}
    for c in df.columns:
        if c not in dtypes and df[c].dtype.kind in "fi":
            dtypes[c] = "float64"
    return df.astype(dtypes)
