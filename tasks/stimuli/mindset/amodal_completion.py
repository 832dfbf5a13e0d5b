"""MindSet amodal completion (``mindset-vision.txt`` C.1.7, Fig. 9; Rensink & Enns, 1998): a black square and a
white disc, as matched triplets.

For one configuration — the occluded shape at (x, y), the occluder along direction ``angle`` at the distance
where it hides ``hidden_fraction`` of the occluded shape's area (drawn from ``hidden``, solved by bisection)
— three images are made:

* ``occlusion``  — the whole occluded shape, the occluder drawn on top of it (it hides a part);
* ``notched``    — the occluded shape minus exactly the part the occluder hid (the notch), and the occluder
  moved radially away (same direction, ``gap`` px clear of the shape);
* ``unoccluded`` — the whole occluded shape, the occluder at the moved-away position (the distractor).

So ``notched`` and ``unoccluded`` differ only inside the occluder's footprint at its occluding position,
and ``occlusion`` and ``notched`` show the same visible part of the occluded shape (measured in the tests).
``top_shape`` says which shape occludes (``circle`` over the square, or ``square`` over the circle); both are
made for every sample, as in the original (6 images per sample). ``set_id`` = the triplet.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_order, check_rgb, difference, disc,
                     item_rng, new_canvas, paint, rect, register_mindset, rgb_columns, to_uint8)

CONDITIONS = ("occlusion", "notched", "unoccluded")


@dataclasses.dataclass(frozen=True)
class AmodalConfig(MindsetConfig):
    samples: int = field(5, "configurations (each: 2 top shapes × 3 conditions = 6 images)", range=(1, 1_000_000))
    background_color: tuple = field((100, 100, 100), "RGB 0-255 of the fixed background", range=(0, 255))
    circle_color: tuple = field((255, 255, 255), "RGB 0-255 of the disc", range=(0, 255))
    square_color: tuple = field((0, 0, 0), "RGB 0-255 of the square", range=(0, 255))
    min_size: float = field(40.0, "smallest square side = disc diameter (px)", range=(4.0, 1000.0))
    max_size: float = field(70.0, "largest square side = disc diameter (px)", range=(4.0, 1000.0))
    hidden: tuple = field((0.15, 0.35), "fraction of the occluded shape's area the occluder hides (min, max); "
                          "each sample draws one, the distance is solved for it", range=(0.01, 0.9))
    gap: float = field(12.0, "clearance between the moved-away occluder and the occluded shape (px)",
                       range=(1.0, 500.0))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("circle_color", self.circle_color)
        check_rgb("square_color", self.square_color)
        check_order(self, "min_size", "max_size", strict=False)
        if len(self.hidden) != 2 or self.hidden[0] > self.hidden[1]:
            raise ConfigError(f"hidden={self.hidden!r}: must be [min, max] with min <= max, each in [0.01, 0.9]")
        need = 2 * np.sqrt(2) * self.max_size + self.gap + 4  # the moved-away pair side by side, worst case
        if need > self.canvas_size:
            raise ConfigError(f"max_size={self.max_size} with gap={self.gap} does not fit a canvas_size="
                              f"{self.canvas_size} canvas (needs 2.83 × max_size + gap + 4 = {need:.0f} px); "
                              "lower them")


def _extent(kind: str, size: float, angle: float) -> float:
    """Distance from a shape's centre to its outline along direction ``angle`` (rad): the disc's radius, or
    the axis-aligned square's half side over max(|cos|, |sin|)."""
    if kind == "circle":
        return size / 2
    return size / 2 / max(abs(np.cos(angle)), abs(np.sin(angle)))


def _shape(kind: str, x: float, y: float, size: float):
    return disc(x, y, size / 2) if kind == "circle" else rect(x - size / 2, y - size / 2, x + size / 2, y + size / 2)


def hidden_fraction(bottom: str, size_b: float, top: str, size_t: float, offset) -> float:
    """Share of the occluded shape's area (centred at 0) inside the occluder centred at ``offset`` (px),
    from a 200 × 200 grid of points over the occluded shape's box (error < 1 %)."""
    g = (np.arange(200) + 0.5) / 200 * size_b - size_b / 2
    x, y = g[None, :], g[:, None]
    inside_b = _shape(bottom, 0.0, 0.0, size_b).inside(x, y)
    inside_t = _shape(top, float(offset[0]), float(offset[1]), size_t).inside(x, y)
    return float((inside_b & inside_t).sum() / inside_b.sum())


def _distance_for_hidden(bottom, size_b, top, size_t, u, target) -> float:
    """Centre distance along unit vector ``u`` at which the occluder hides ``target`` of the occluded area
    (bisection: the hidden share falls monotonically as the occluder moves out along a ray)."""
    lo, hi = 0.0, size_b / 2 * np.sqrt(2) + size_t / 2 * np.sqrt(2)
    for _ in range(30):
        mid = (lo + hi) / 2
        if hidden_fraction(bottom, size_b, top, size_t, u * mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def layout(cfg: AmodalConfig, rng: np.random.Generator, top: str) -> dict:
    """Centres (px) of the occluded shape and of the occluder at its occluding (``near``) and moved-away
    (``far``) positions, for occluder ``top`` (``circle`` or ``square``)."""
    bottom = "square" if top == "circle" else "circle"
    size_b = float(rng.uniform(cfg.min_size, cfg.max_size))
    size_t = float(rng.uniform(cfg.min_size, cfg.max_size))
    angle = float(rng.uniform(0, 2 * np.pi))
    u = np.array([np.cos(angle), np.sin(angle)])
    rad_t = size_t / 2 * np.sqrt(2) if top == "square" else size_t / 2  # the occluder's circumradius
    target = float(rng.uniform(*cfg.hidden))
    near = _distance_for_hidden(bottom, size_b, top, size_t, u, target)
    # moved away radially until the occluder's circumscribed circle clears the occluded shape's
    far = size_b / 2 * np.sqrt(2) + rad_t + cfg.gap
    # centre the whole far configuration (the widest) on a random point that keeps it on the canvas
    pts = np.array([[0, 0], u * far])
    r = max(size_b / 2 * np.sqrt(2), rad_t) + 2
    lo, hi = -pts.min(0) + r, cfg.canvas_size - pts.max(0) - r
    if (hi < lo).any():
        raise ConfigError(f"sizes up to max_size={cfg.max_size} with gap={cfg.gap} do not fit canvas_size="
                          f"{cfg.canvas_size}; lower them")
    c = rng.uniform(lo, hi)
    return {"bottom": bottom, "size_b": size_b, "size_t": size_t, "angle": angle, "hidden": target, "occluded": c,
            "near": c + u * near, "far": c + u * far}


def items(cfg: AmodalConfig, seed: int):
    for k in range(cfg.samples):
        for top in ("circle", "square"):
            rng = item_rng(seed, k, top)
            g = layout(cfg, rng, top)
            bg = background_params(cfg, rng)
            sizes = {g["bottom"]: g["size_b"], top: g["size_t"]}
            for cond in CONDITIONS:
                drawn = g["near"] if cond == "occlusion" else g["far"]
                yield Item(cond, f"{cond}_{top}_top_{k:05d}",
                           {"top_shape": top, "sample": k, "angle_deg": float(np.rad2deg(g["angle"])),
                            "hidden_fraction": g["hidden"],
                            "occluded_x": float(g["occluded"][0]), "occluded_y": float(g["occluded"][1]),
                            "occluder_x": float(drawn[0]), "occluder_y": float(drawn[1]),
                            "occluding_x": float(g["near"][0]), "occluding_y": float(g["near"][1]),
                            "circle_diameter": sizes["circle"], "square_side": sizes["square"],
                            **rgb_columns("circle", cfg.circle_color), **rgb_columns("square", cfg.square_color),
                            **bg},
                           f"{top}_top_{k:05d}")


def render(cfg: AmodalConfig, item: Item):
    p = item.params
    top = p["top_shape"]
    bottom = "square" if top == "circle" else "circle"
    size = {"circle": p["circle_diameter"], "square": p["square_side"]}
    colour = {"circle": cfg.circle_color, "square": cfg.square_color}
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    occluded = _shape(bottom, p["occluded_x"], p["occluded_y"], size[bottom])
    if item.condition == "notched":
        occluded = difference(occluded, _shape(top, p["occluding_x"], p["occluding_y"], size[top]))
    paint(img, occluded, colour[bottom], cfg.antialias)
    paint(img, _shape(top, p["occluder_x"], p["occluder_y"], size[top]), colour[top], cfg.antialias)
    return to_uint8(img), {}


register_mindset("amodal_completion", AmodalConfig,
                 "Amodal completion: occlusion / notched / unoccluded matched triplets, disc over square or square "
                 "over disc", "mindset-vision.txt C.1.7 Fig. 9; Rensink & Enns 1998", items=items, render=render,
                 conditions=CONDITIONS, paper={"samples": 5}, lite={"samples": 2},
                 figure="MindSet Fig. 9 (Rensink & Enns 1998)")
