"""MindSet emergent features (``mindset-vision.txt`` C.1.3, Fig. 5; Pomerantz & Portillo, 2011; Biscione &
Bowers, 2023): dot pairs whose only difference is one dot's position, alone and with context dots that
create an emergent feature.

One *set* (``sample``) is four pairs (a, b) that share the two target positions p_a, p_b:

* ``single``      — one dot, at p_a (image a) or p_b (image b): the base pair;
* ``proximity``   — plus a context dot c on the line through p_a and p_b, outside the segment: the
  orientation of (target, c) is the same in a and b, only the distance differs;
* ``orientation`` — plus a context dot c on the perpendicular bisector of p_a p_b: the distance to c is
  equal in a and b, only the orientation differs;
* ``linearity``   — the orientation pair plus a dot d on the line from c through p_a, beyond p_a: the three
  dots are collinear in a and not in b.

The context dots are identical in a and b (added to both images), so any extra discriminability is
configural. Every pair of dots in any image is at least ``min_dot_distance`` px apart (centre to centre)
and every dot centre at least ``border`` px from the canvas edge (the paper's 20 and 40, which the
original generator passed as 0). Conditions ``<feature>_<a|b>``; ``set_id`` = the pair; ``sample`` links
the four pairs of one set. Columns: the dots' centres (``target_x/y``, ``context_x/y``, ``extra_x/y``;
-1 where absent).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, disc, item_rng, new_canvas, paint,
                     register_mindset, rgb_columns, to_uint8)

FEATURES = ("single", "proximity", "orientation", "linearity")


@dataclasses.dataclass(frozen=True)
class EmergentConfig(MindsetConfig):
    samples: int = field(1000, "sets (each 4 pairs = 8 images)", range=(1, 1_000_000))
    dot_size: float = field(10.0, "dot diameter (px)", range=(1.0, 100.0))
    min_dot_distance: float = field(20.0, "minimum centre-to-centre distance between any two dots (px)",
                                    range=(0.0, 200.0))
    border: float = field(40.0, "minimum distance of a dot centre from the canvas edge (px)", range=(0.0, 500.0))
    dot_color: tuple = field((255, 255, 255), "RGB 0-255 of the dots", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("dot_color", self.dot_color)
        if self.canvas_size - 2 * self.border < 3 * self.min_dot_distance:
            raise ConfigError(f"border={self.border} and min_dot_distance={self.min_dot_distance} leave no room on "
                              f"a canvas_size={self.canvas_size} canvas; lower them or raise canvas_size")


def sample_set(cfg: EmergentConfig, rng: np.random.Generator, tries: int = 10_000) -> dict[str, np.ndarray]:
    """Dot positions of one set (px, float [2] each): targets ``a``, ``b``; context ``prox`` (proximity),
    ``orient`` (orientation and linearity) and ``lin`` (the linearity dot). Rejection sampling until every
    image's dots satisfy the distance and border constraints."""
    lo, hi = cfg.border, cfg.canvas_size - cfg.border
    dmin = cfg.min_dot_distance

    def ok(*pts):
        p = np.array(pts)
        if (p < lo).any() or (p > hi).any():
            return False
        d = np.linalg.norm(p[:, None] - p[None], axis=-1)
        return (d[np.triu_indices(len(p), 1)] >= dmin).all()

    for _ in range(tries):
        a, b = rng.uniform(lo, hi, 2), rng.uniform(lo, hi, 2)
        if not ok(a, b):
            continue
        u = (b - a) / np.linalg.norm(b - a)
        n = np.array([-u[1], u[0]])
        # proximity: on the line a-b beyond b (or beyond a), at a distance of at least dmin from the near one
        s = rng.uniform(dmin, dmin + 60)
        prox = b + u * s if rng.random() < 0.5 else a - u * s
        # orientation: on the perpendicular bisector, either side
        orient = (a + b) / 2 + n * rng.uniform(dmin, dmin + 60) * rng.choice([-1.0, 1.0])
        # linearity: on the line from orient through a, beyond a
        v = (a - orient) / np.linalg.norm(a - orient)
        lin = a + v * rng.uniform(dmin, dmin + 50)
        if ok(a, prox) and ok(b, prox) and ok(a, orient) and ok(b, orient) and ok(a, orient, lin) \
                and ok(b, orient, lin):
            return {"a": a, "b": b, "prox": prox, "orient": orient, "lin": lin}
    raise ConfigError(f"no dot layout satisfies min_dot_distance={cfg.min_dot_distance} and border={cfg.border} "
                      f"on a canvas_size={cfg.canvas_size} canvas after {tries} tries; relax them")


def items(cfg: EmergentConfig, seed: int):
    for k in range(cfg.samples):
        rng = item_rng(seed, k)
        dots = sample_set(cfg, rng)
        bg = background_params(cfg, rng)
        for feat in FEATURES:
            context = {"single": [], "proximity": [dots["prox"]], "orientation": [dots["orient"]],
                       "linearity": [dots["orient"], dots["lin"]]}[feat]
            for member in ("a", "b"):
                t = dots[member]
                cx = [float(c[0]) for c in context] + [-1.0] * (2 - len(context))
                cy = [float(c[1]) for c in context] + [-1.0] * (2 - len(context))
                yield Item(f"{feat}_{member}", f"{feat}_{member}_{k:06d}",
                           {"feature": feat, "member": member, "sample": k, "n_dots": 1 + len(context),
                            "target_x": float(t[0]), "target_y": float(t[1]),
                            "context_x": cx[0], "context_y": cy[0], "extra_x": cx[1], "extra_y": cy[1],
                            "dot_size": cfg.dot_size, **rgb_columns("dot", cfg.dot_color), **bg},
                           f"{feat}_{k:06d}")


def render(cfg: EmergentConfig, item: Item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    for x, y in ((p["target_x"], p["target_y"]), (p["context_x"], p["context_y"]), (p["extra_x"], p["extra_y"])):
        if x >= 0:
            paint(img, disc(x, y, cfg.dot_size / 2), cfg.dot_color, cfg.antialias)
    return to_uint8(img), {}


register_mindset("emergent_features", EmergentConfig,
                 "Emergent features (Pomerantz): single / proximity / orientation / linearity dot pairs (a, b)",
                 "mindset-vision.txt C.1.3 Fig. 5; Pomerantz & Portillo 2011", items=items, render=render,
                 conditions=[f"{f}_{m}" for f in FEATURES for m in ("a", "b")],
                 paper={"samples": 1000}, lite={"samples": 3}, figure="MindSet Fig. 5")
