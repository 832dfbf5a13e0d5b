"""Prop placements: where the observer and the target stand in a scene, explicit or sampled.

Sampling puts both props on the ground around the central object, outside it, and draws until the
ray-cast VPT outcome is the one requested:

* ``visible``      — the observer faces the target across open ground (target within ±fov/4 of its axis).
* ``occluded``     — the target is on the far side of the object (azimuth opposite ±25°), observer facing it.
* ``out_of_view``  — open line of sight but the observer faces away (target outside its frustum).

The render check is not run here (it is part of :func:`tasks.labels.vpt_label`); callers decide what to
do when it disagrees. Everything random flows from the ``rng`` passed in.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from scenes.props import Observer, Target

from .labels import LabelRules, in_view, raycast_visible_fraction, vpt_from_fraction

OUTCOMES = ("visible", "occluded", "out_of_view")


class PlacementError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Placement:
    observer: Observer
    target: Target

    def meshes(self) -> list:
        """[observer mesh, target mesh] — the order every mesh index refers to."""
        return [self.observer.mesh(), self.target.mesh()]

    def to_row(self) -> dict:
        return {**self.observer.to_row(), **self.target.to_row()}


@dataclasses.dataclass(frozen=True)
class PropStyle:
    """Sizes (m), colours and shapes of the props; the defaults are the 3D-PC's green camera and red ball."""

    observer_size: float = 0.24
    observer_shape: str = "camera"
    observer_color: tuple[float, float, float] = (0.1, 0.75, 0.15)
    observer_fov_deg: float = 60.0
    target_size: float = 0.18
    target_shape: str = "ball"
    target_color: tuple[float, float, float] = (0.85, 0.08, 0.06)


def _clear_of(mesh, point: np.ndarray, radius: float, margin: float = 0.03) -> bool:
    import trimesh

    _, dist, _ = trimesh.proximity.closest_point(mesh, point[None])
    return bool(dist[0] > radius + margin)


def make_props(style: PropStyle, obs_xy, yaw_deg: float, tgt_xy, elevation: float = 0.0) -> Placement:
    """Props resting on the ground (``elevation`` 0) or floating with their bottoms ``elevation`` m up."""
    obs = Observer((0.0, 0.0, 0.0), yaw_deg, 0.0, style.observer_size, tuple(style.observer_color),
                   style.observer_shape, style.observer_fov_deg)
    obs = dataclasses.replace(obs, position=(float(obs_xy[0]), float(obs_xy[1]), obs.base_offset() + elevation))
    tz = style.target_size / 2 + elevation
    tgt = Target((float(tgt_xy[0]), float(tgt_xy[1]), tz), style.target_size, tuple(style.target_color), style.target_shape)
    return Placement(obs, tgt)


def sample_placement(scene, outcome: str, rng: np.random.Generator, style: PropStyle = PropStyle(),
                     rules: LabelRules = LabelRules(), max_tries: int = 500) -> tuple[Placement, dict]:
    """Draw a placement whose ray-cast VPT outcome is ``outcome``; returns (placement, evidence).

    Raises :class:`PlacementError` naming the scene after ``max_tries`` failures.
    """
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome={outcome!r}; one of {OUTCOMES}")
    lo, hi = scene.object_bounds
    centre = (lo[:2] + hi[:2]) / 2
    r_obj = 0.5 * float(np.linalg.norm(hi[:2] - lo[:2]))
    obj = scene.meshes.get("object") if scene.meshes else None
    occ = scene.occluders()
    want = {"visible": (1, "visible"), "occluded": (0, "occluded"), "out_of_view": (0, "out_of_view")}[outcome]
    for _ in range(max_tries):
        a_obs = rng.uniform(0, 2 * math.pi)
        if outcome == "occluded":
            a_tgt = a_obs + math.pi + math.radians(rng.uniform(-25, 25))
            r_o, r_t = rng.uniform(0.15, 0.8), rng.uniform(0.05, 0.5)
        else:
            a_tgt = a_obs + math.radians(rng.choice([-1, 1]) * rng.uniform(30, 100))
            r_o, r_t = rng.uniform(0.15, 0.9), rng.uniform(0.15, 0.9)
        obs_xy = centre + (r_obj + r_o) * np.array([math.cos(a_obs), math.sin(a_obs)])
        tgt_xy = centre + (r_obj + r_t) * np.array([math.cos(a_tgt), math.sin(a_tgt)])
        to_tgt = math.degrees(math.atan2(tgt_xy[1] - obs_xy[1], tgt_xy[0] - obs_xy[0]))
        if outcome == "out_of_view":
            yaw = to_tgt + 180 + rng.uniform(-60, 60)
        else:
            yaw = to_tgt + rng.uniform(-1, 1) * style.observer_fov_deg / 4
        pl = make_props(style, obs_xy, yaw, tgt_xy)
        if np.linalg.norm(np.subtract(obs_xy, tgt_xy)) < pl.observer.bounding_radius() + pl.target.bounding_radius + 0.05:
            continue
        if obj is not None and not (_clear_of(obj, np.asarray(pl.observer.position), pl.observer.bounding_radius())
                                    and _clear_of(obj, pl.target.center, pl.target.bounding_radius)):
            continue
        view = in_view(pl.observer, pl.target)
        frac = raycast_visible_fraction(pl.observer.eye, pl.target, occ, rules.n_rays)
        label, reason = vpt_from_fraction(frac, view, rules)
        if (label, reason) == want:
            return pl, {"visible_fraction_raycast": frac, "in_view": view}
    raise PlacementError(f"{scene.name}: no '{outcome}' placement found in {max_tries} tries")


def _position(xyz, base: float) -> tuple[float, float, float]:
    p = [float(v) for v in xyz]
    if len(p) == 2:
        return (p[0], p[1], base)
    if len(p) == 3:
        return (p[0], p[1], p[2])
    raise ValueError(f"a prop position is [x, y] (on the ground) or [x, y, z]; got {list(xyz)}")


def placement_from_config(scene, cfg: dict) -> tuple[Placement | None, LabelRules, dict]:
    """Resolve a ``props`` configuration (configs/props/*.yaml) → (placement or None, rules, evidence)."""
    mode = cfg.get("mode", "none")
    rules = LabelRules(**cfg.get("rules", {}))
    if mode == "none":
        return None, rules, {}
    style = PropStyle(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.get("style", {}).items()})
    if mode == "sample":
        rng = np.random.default_rng([int(cfg.get("seed", 0)), 0x9D])
        placement, evidence = sample_placement(scene, cfg.get("outcome", "visible"), rng, style, rules)
        return placement, rules, evidence
    if mode == "explicit":
        o, t = cfg.get("observer", {}), cfg.get("target", {})
        if "position" not in o or "position" not in t:
            raise ValueError("props mode 'explicit' needs observer.position and target.position")
        obs = Observer((0, 0, 0), float(o.get("yaw_deg", 0.0)), float(o.get("pitch_deg", 0.0)), style.observer_size,
                       tuple(style.observer_color), style.observer_shape, style.observer_fov_deg)
        obs = dataclasses.replace(obs, position=_position(o["position"], obs.base_offset()))
        tgt = Target(_position(t["position"], style.target_size / 2), style.target_size, tuple(style.target_color),
                     style.target_shape)
        return Placement(obs, tgt), rules, {}
    raise ValueError(f"props.mode={mode!r}; one of none, sample, explicit")
