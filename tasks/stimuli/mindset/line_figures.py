"""MindSet line-figure datasets rebuilt as vector geometry (white strokes on a uniform background), from the
coordinate files in ``tasks/data/mindset/`` (each names the figure it follows and says where it is a
stand-in):

* ``mindset/depth_drawings`` (C.1.6, Fig. 8; Enns & Rensink, 1991): conditions ``basis``, ``variation1``,
  ``variation2``, two members (a, b) each; ``set_id`` = the pair a similarity judgment compares;
* ``mindset/relational_vs_coordinate`` (C.1.5, Fig. 7; Hummel & Stankiewicz, 1996, Exp. 5): six objects ×
  ``basis``, ``relation_change`` (one part moved across the bar), ``coordinate_change`` (the bar with its
  parts moved by the same amount); ``set_id`` = the object;
* ``mindset/nap_vs_mp_lines`` (C.1.8; Kubilius, Sleurs & Wagemans, 2017): 26 two-line items ×
  ``reference``, ``nap`` (the singular value: parallel, L, T, collinear, straight), ``mp`` (the same change
  the other way); ``set_id`` = the item; columns ``family``, ``value``, ``reference_value``, ``change``.

Every image of one set shares one transform (the set's union fitted so its longest side is
``object_longest_side`` px, centred), so the variants differ only where the geometry differs. Strokes are
``stroke_width`` px with round joints and caps. The figures are deterministic (``random=False``) unless the
background is ``random_uniform``. ``source=<folder>`` uses a user's copy of the original images instead
(``<folder>/<condition>/<name>.png``, e.g. the original's ``kubilius_2017/pngs/{reference,NAP,MP}``), each
resized to ``object_longest_side`` and centred, ``set_id`` = the file name.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, item_rng, new_canvas, paint,
                     place_image, polyline, register_mindset, rgb_columns, source_images, to_uint8, union)

DATA = Path(__file__).resolve().parents[2] / "data" / "mindset"


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    """A figure file of ``tasks/data/mindset`` (parsed JSON)."""
    return json.loads((DATA / f"{name}.json").read_text())


@dataclasses.dataclass(frozen=True)
class LineFigureConfig(MindsetConfig):
    object_longest_side: float = field(200.0, "the set's longest side on the canvas (px; the original's 200)",
                                       range=(8.0, 4096.0))
    stroke_width: float = field(3.0, "stroke width (px)", range=(0.5, 50.0))
    stroke_color: tuple = field((255, 255, 255), "RGB 0-255 of the strokes", range=(0, 255))
    source: str = field("", "'' = the built-in vector figures; or a folder of the original images, "
                        "<folder>/<condition>/<name>.png (matched across conditions by name)")

    def __post_init__(self):
        super().__post_init__()
        check_rgb("stroke_color", self.stroke_color)
        if self.object_longest_side + self.stroke_width > self.canvas_size:
            raise ConfigError(f"object_longest_side={self.object_longest_side} + stroke_width={self.stroke_width} "
                              f"exceeds canvas_size={self.canvas_size}")


def fit(strokes_sets: list[list[np.ndarray]], cfg: LineFigureConfig) -> tuple[float, np.ndarray]:
    """(scale, offset) mapping figure units to pixels: the union of every variant of a set fitted so its
    longest side is ``object_longest_side`` px, centred on the canvas."""
    pts = np.concatenate([s for strokes in strokes_sets for s in strokes])
    lo, hi = pts.min(0), pts.max(0)
    scale = cfg.object_longest_side / max(hi - lo)
    offset = cfg.canvas_size / 2 - scale * (lo + hi) / 2
    return float(scale), offset


def draw(cfg: LineFigureConfig, strokes: list[np.ndarray], scale: float, offset, bg) -> np.ndarray:
    img = new_canvas(cfg.canvas_size, bg)
    shapes = [polyline(np.asarray(s, float) * scale + offset, cfg.stroke_width) for s in strokes]
    paint(img, union(*shapes), cfg.stroke_color, cfg.antialias)
    return to_uint8(img)


def _common(cfg, seed, set_key):
    rng = item_rng(seed, set_key)
    return {**rgb_columns("stroke", cfg.stroke_color), **background_params(cfg, rng)}


# ------------------------------------------------------------------------------------------ depth drawings
DEPTH_CONDITIONS = ("basis", "variation1", "variation2")


def depth_variants() -> dict[tuple[str, str], list[np.ndarray]]:
    """(member, condition) -> strokes (figure units) of the Enns & Rensink stand-ins."""
    fig = load("enns_rensink_1991")["items"]
    return {(m, c): [np.asarray(s["points"], float) for s in fig[m][c]] for m in fig for c in fig[m]}


def depth_items(cfg: LineFigureConfig, seed: int):
    for cond in DEPTH_CONDITIONS:
        for member in ("a", "b"):
            yield Item(cond, f"{cond}_{member}", {"member": member, **_common(cfg, seed, f"{cond}{member}")}, cond)


def depth_render(cfg: LineFigureConfig, item: Item):
    variants = depth_variants()
    # one fit for all six drawings: the context added in a condition is the same for a and b
    scale, offset = fit(list(variants.values()), cfg)
    img = draw(cfg, variants[(item.params["member"], item.condition)], scale, offset, background_rgb(item.params))
    return img, {"scale_px_per_unit": scale}


# ------------------------------------------------------------------------------------------ relational vs coordinate
RC_CONDITIONS = ("basis", "relation_change", "coordinate_change")


def hs_variants(index: int) -> dict[str, list[np.ndarray]]:
    """The three versions of Hummel & Stankiewicz object ``index`` (figure units): the moved part translated
    by ``delta_y`` (relation change), or the bar with all its parts translated by it (coordinate change)."""
    obj = load("hummel_stankiewicz_1996")["objects"][index]
    d = np.array([0.0, obj["delta_y"]])
    out = {c: [] for c in RC_CONDITIONS}
    for s in obj["strokes"]:
        pts = np.asarray(s["points"], float)
        out["basis"].append(pts)
        out["relation_change"].append(pts + d if s["group"] == "moved" else pts)
        out["coordinate_change"].append(pts + d if s["group"] in ("bar", "moved") else pts)
    return out


def rc_items(cfg: LineFigureConfig, seed: int):
    objs = load("hummel_stankiewicz_1996")["objects"]
    for k, obj in enumerate(objs):
        for cond in RC_CONDITIONS:
            yield Item(cond, f"{cond}_{k:02d}", {"object": k, "delta_y_units": float(obj["delta_y"]),
                                                  "moved_relation": obj["moved_relation"],
                                                  **_common(cfg, seed, f"{k}")}, f"object_{k:02d}")


def rc_render(cfg: LineFigureConfig, item: Item):
    variants = hs_variants(item.params["object"])
    scale, offset = fit(list(variants.values()), cfg)
    img = draw(cfg, variants[item.condition], scale, offset, background_rgb(item.params))
    return img, {"scale_px_per_unit": scale, "delta_y_px": item.params["delta_y_units"] * scale}


# ------------------------------------------------------------------------------------------ NAP vs MP lines
NAP_CONDITIONS = ("reference", "nap", "mp")


def _rotate(pts: np.ndarray, deg: float) -> np.ndarray:
    """Counter-clockwise on screen (y down) about (50, 50)."""
    a = np.deg2rad(deg)
    c, s = np.cos(a), np.sin(a)
    q = pts - 50.0
    return np.stack([c * q[:, 0] + s * q[:, 1], -s * q[:, 0] + c * q[:, 1]], 1) + 50.0


def two_lines(family: str, value: float) -> list[np.ndarray]:
    """The two strokes of ``family`` at parameter ``value`` (figure units; rules in kubilius_2017.json)."""
    f = load("kubilius_2017")["families"][family]
    l1, l2 = (np.asarray(x, float) for x in f["lines"])
    if family == "parallel":
        a = np.deg2rad(value)
        c, s = np.cos(a), np.sin(a)
        q = l2 - f["pivot"]
        l2 = np.stack([c * q[:, 0] + s * q[:, 1], -s * q[:, 0] + c * q[:, 1]], 1) + f["pivot"]
    elif family in ("touch", "collinear"):
        l2 = l2 + value * np.asarray(f["direction"], float)
    elif family == "cross":
        l2 = np.array([l2[0], l2[1] + value * np.asarray(f["direction"], float)])
    elif family == "curvature":
        if value > 0:  # circular arc through both ends with sagitta ``value`` towards -y
            (x0, y0), (x1, _) = l1
            half = (x1 - x0) / 2
            R = (half ** 2 + value ** 2) / (2 * value)
            cx, cy = (x0 + x1) / 2, y0 - value + R
            t = np.arcsin(half / R)
            a = np.linspace(-t, t, 64)
            l1 = np.stack([cx + R * np.sin(a), cy - R * np.cos(a)], 1)
    else:
        raise ValueError(f"family {family!r}; one of {', '.join(load('kubilius_2017')['families'])}")
    return [l1, l2]


def nap_variants(index: int) -> dict[str, list[np.ndarray]]:
    item = load("kubilius_2017")["items"][index]
    f = load("kubilius_2017")["families"][item["family"]]
    return {c: [_rotate(s, item["rotation_deg"]) for s in two_lines(item["family"], f[c])] for c in NAP_CONDITIONS}


def nap_items(cfg: LineFigureConfig, seed: int):
    data = load("kubilius_2017")
    for k, it in enumerate(data["items"]):
        f = data["families"][it["family"]]
        for cond in NAP_CONDITIONS:
            yield Item(cond, f"{cond}_{k:02d}", {"item": k, "family": it["family"], "rotation_deg": float(it["rotation_deg"]),
                                                  "value": float(f[cond]), "reference_value": float(f["reference"]),
                                                  "change": abs(float(f[cond]) - float(f["reference"])),
                                                  "value_unit": f["unit"], **_common(cfg, seed, f"{k}")},
                       f"item_{k:02d}")


def nap_render(cfg: LineFigureConfig, item: Item):
    variants = nap_variants(item.params["item"])
    scale, offset = fit(list(variants.values()), cfg)
    return draw(cfg, variants[item.condition], scale, offset, background_rgb(item.params)), {"scale_px_per_unit": scale}


def with_source(items, render, conditions):
    """``items``/``render`` that use ``source=<folder>`` images when the config names one."""
    def src_items(cfg: LineFigureConfig, seed: int):
        if not cfg.source:
            yield from items(cfg, seed)
            return
        for cond, stem, path in source_images(cfg.source, conditions):
            yield Item(cond, f"{cond}_{stem}", {"source_file": stem, "_path": path,
                                                 **_common(cfg, seed, stem)}, stem)

    def src_render(cfg: LineFigureConfig, item: Item):
        if not cfg.source:
            return render(cfg, item)
        return place_image(item.params["_path"], cfg.canvas_size, cfg.object_longest_side,
                           background_rgb(item.params)), {}

    return src_items, src_render


depth_items, depth_render = with_source(depth_items, depth_render, DEPTH_CONDITIONS)
rc_items, rc_render = with_source(rc_items, rc_render, RC_CONDITIONS)
nap_items, nap_render = with_source(nap_items, nap_render, NAP_CONDITIONS)

# the original: longest side 200 px, antialiasing off (6 / 18 / 78 images; lite: the same, antialiased)
PAPER = {"object_longest_side": 200.0, "stroke_width": 3.0, "antialias": False}
LITE = {"object_longest_side": 200.0, "stroke_width": 3.0, "antialias": True}
register_mindset("depth_drawings", LineFigureConfig,
                 "Depth drawings (Enns & Rensink): base pair and two variations adding the same context to both",
                 "mindset-vision.txt C.1.6 Fig. 8; Enns & Rensink 1991", items=depth_items, render=depth_render,
                 conditions=DEPTH_CONDITIONS, paper=PAPER, lite=LITE, random=False,
                 figure="tasks/data/mindset/enns_rensink_1991.json (stand-in for Enns & Rensink 1991)")
register_mindset("relational_vs_coordinate", LineFigureConfig,
                 "Relational vs coordinate change (Hummel & Stankiewicz Exp. 5): basis / relation change / "
                 "coordinate change", "mindset-vision.txt C.1.5 Fig. 7; Hummel & Stankiewicz 1996",
                 items=rc_items, render=rc_render, conditions=RC_CONDITIONS, paper=PAPER, lite=LITE, random=False,
                 figure="tasks/data/mindset/hummel_stankiewicz_1996.json (stand-in for Exp. 5)")
register_mindset("nap_vs_mp_lines", LineFigureConfig,
                 "NAP vs MP, 2D two-line stimuli (Kubilius): reference / NAP change / MP change of equal size",
                 "mindset-vision.txt C.1.8; Kubilius, Sleurs & Wagemans 2017", items=nap_items, render=nap_render,
                 conditions=NAP_CONDITIONS, paper=PAPER, lite=LITE, random=False,
                 figure="tasks/data/mindset/kubilius_2017.json (stand-in for the 26 items)")
