"""MindSet size illusions (``mindset-vision.txt`` C.2.1-C.2.4): Müller-Lyer, Ponzo, Ebbinghaus, Jastrow.

Each has a "scrambled" condition (the illusion's elements, rearranged so that they do not elicit it in
humans: the training set of a decoder) and illusory conditions (the test set). The quantity a decoder
regresses — line length, centre-circle diameter, shape size — is an exact geometric parameter recorded in
the annotation table, and the tests measure it back from the PNGs.

Units: pixels of the canvas, continuous coordinates with the origin at the top-left corner, x right, y
down (see ``common.py``); sizes that scale with the canvas are sampled as fractions of ``canvas_size`` and
recorded both in px and normalised (``*_norm`` = px / canvas_size). Angles in degrees. Every random draw
comes from :func:`common.item_rng` (dataset seed, condition, index), so any item renders identically in any
process.

Presets (issue 32): ``paper`` — and the Config defaults — are the original's stimuli as its committed defaults
draw them (geometry ranges, stroke widths, placement, overlaps and clipping included; each Config's docstring
says what that is for its dataset, and ``docs/mindset.md`` lists every knowing deviation, e.g. exact sizes where
Pillow drew 1 px short, antialiasing by coverage instead of the original's blur). ``clean`` keeps Vantage's
earlier variants of Müller-Lyer, Ponzo and Ebbinghaus (thicker strokes, every element measurable alone: context
clear of the targets, flankers not touching), byte for byte as they were ``paper`` before. Jastrow was not among
the datasets issue 32 compared; its presets are unchanged.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, Shape, background_params, background_rgb, check_rgb, item_rng, new_canvas,
                     register_mindset, to_uint8)
from .illusions_raster import paint_disc, paint_segment
from .illusions_raster import paint_fast as paint

RED, BLUE, WHITE = (255, 0, 0), (0, 0, 255), (255, 255, 255)
NAN = float("nan")  # a parameter column that does not apply to the row (typed float columns, never None)


def _check_range(cfg, name: str, lo: float, hi: float) -> None:
    """A (min, max) pair field: two numbers in [lo, hi], min <= max."""
    v = getattr(cfg, name)
    if len(v) != 2 or v[0] > v[1]:
        raise ConfigError(f"{name}={list(v)!r}: must be [min, max] with min <= max, each in [{lo}, {hi}]")


def _uniform(rng: np.random.Generator, pair) -> float:
    return float(rng.uniform(pair[0], pair[1])) if pair[1] > pair[0] else float(pair[0])


# ============================================================================================ Müller-Lyer
@dataclasses.dataclass(frozen=True)
class MullerLyerConfig(MindsetConfig):
    """Defaults = the original's (``muller_lyer_illusion/generate_dataset.py`` at 224 px): line 56-150 px,
    fins 15-30 px at 10-44° to the line, 1-px strokes, the line's centre drawn as described under
    ``placement``, scrambled = the figure's two arrowheads at random places and orientations. Preset ``clean``:
    Vantage's earlier variant (2-px strokes, shorter lines, wider fin angles, the figure inside a margin, the
    four fins detached and kept clear of the line)."""

    n_scrambled: int = field(5000, "images of the scrambled condition", range=(0, 10_000_000))
    n_illusory: int = field(500, "images of each illusory condition (inward, outward)", range=(0, 10_000_000))
    line_length: tuple = field((0.25, 0.67), "[min, max] line length as a fraction of canvas_size (the "
                               "original: 56-150 px of 224)", range=(0.01, 0.95))
    fin_length: tuple = field((0.067, 0.134), "[min, max] fin length as a fraction of canvas_size (the "
                              "original: 15-30 px of 224)", range=(0.01, 0.4))
    fin_angle: tuple = field((10.0, 44.0), "[min, max] angle between each fin and the line (degrees)",
                             range=(5.0, 85.0))
    line_width: float = field(1.0, "stroke width of line and fins (px)", range=(0.5, 32.0))
    line_color: tuple = field((255, 255, 255), "RGB 0-255 of line and fins", range=(0, 255))
    placement: str = field("original", "where the line's centre goes: 'original' = x and y alike uniform in "
                           "[fin_length + L/2, S - fin_length - L/2] (the original's rule: a long line stays near "
                           "the middle of the canvas), y on a pixel row's centre so a 1-px line is one row; "
                           "'inside' = anywhere the whole figure keeps margin from the border",
                           choices=("original", "inside"))
    scrambled: str = field("arrowheads", "the scrambled condition: 'arrowheads' = the figure's two arrowheads "
                           "(each two fins joined at a vertex) at random places in opposite random directions, "
                           "anywhere on the canvas (they may cross the line), as the original; 'fins' = the four "
                           "fins detached, each at a random place and orientation, clear of the line and of each "
                           "other", choices=("arrowheads", "fins"))
    margin: float = field(0.05, "placement='inside' and scrambled='fins': minimum distance of the figure from "
                          "the border (fraction of canvas_size)", range=(0.0, 0.3))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("line_color", self.line_color)
        for name, hi in (("line_length", 0.95), ("fin_length", 0.4), ("fin_angle", 85.0)):
            _check_range(self, name, 0, hi)
        if self.placement == "original":
            widest = self.line_length[1] + 2 * self.fin_length[1]
            if widest > 1.0:
                raise ConfigError(f"line_length max {self.line_length[1]} + 2 × fin_length max "
                                  f"{self.fin_length[1]} = {widest:.2f} of the canvas: the figure does not fit "
                                  "(placement='original'); lower them")
        else:
            widest = self.line_length[1] + 2 * self.fin_length[1] + 2 * self.margin
            if widest > 1.0:
                raise ConfigError(f"line_length max {self.line_length[1]} + 2 × fin_length max "
                                  f"{self.fin_length[1]} + 2 × margin {self.margin} = {widest:.2f} of the canvas: "
                                  "the outward figure does not fit; lower them")


def fin_segments(x0: float, x1: float, y: float, fin_len: float, angle_deg: float, direction: str):
    """The four fins of a Müller-Lyer figure on the horizontal line (x0, y)-(x1, y), as (start, end) points:
    each starts at a line end (the vertex) and makes ``angle_deg`` with the line. ``inward``: arrowheads
    (fins point back over the line, the figure looks shorter); ``outward``: tails (fins point away from
    the line, it looks longer)."""
    a = math.radians(angle_deg)
    dx, dy = fin_len * math.cos(a), fin_len * math.sin(a)
    s = 1.0 if direction == "inward" else -1.0  # inward: the left end's fins go right
    out = []
    for xv, sign in ((x0, s), (x1, -s)):
        for vy in (-dy, dy):
            out.append(((xv, y), (xv + sign * dx, y + vy)))
    return out


def arrowhead_segments(x: float, y: float, direction_deg: float, fin_len: float, angle_deg: float):
    """The two fins of one arrowhead with its vertex at (x, y), opening towards ``direction_deg`` (0 = +x,
    90 = +y, i.e. clockwise on screen), each at ``angle_deg`` from that direction: (start, end) points."""
    out = []
    for s in (-1.0, 1.0):
        a = math.radians(direction_deg + s * angle_deg)
        out.append(((x, y), (x + fin_len * math.cos(a), y + fin_len * math.sin(a))))
    return out


def _segment_far(p, q, box, gap) -> bool:
    """Is segment p-q at least ``gap`` px from the axis-aligned box (x0, y0, x1, y1)? (sampled along it)."""
    t = np.linspace(0, 1, 24)[:, None]
    pts = np.asarray(p) * (1 - t) + np.asarray(q) * t
    dx = np.maximum(np.maximum(box[0] - pts[:, 0], pts[:, 0] - box[2]), 0)
    dy = np.maximum(np.maximum(box[1] - pts[:, 1], pts[:, 1] - box[3]), 0)
    return bool((np.hypot(dx, dy) >= gap).all())


def scrambled_fins(cfg: MullerLyerConfig, p: dict, rng: np.random.Generator):
    """scrambled='fins': the same four fins, detached: each at a random place and orientation, clear of the
    line (>= 4 widths + 4 px) and of each other, so the line is the only horizontal stroke a decoder can
    measure."""
    S = cfg.canvas_size
    m = cfg.margin * S
    fl = p["fin_length"]
    box = (p["line_x0"], p["line_y"], p["line_x1"], p["line_y"])
    fins, tries = [], 0
    while len(fins) < 4:
        tries += 1
        if tries > 100_000:
            raise RuntimeError(f"mindset/muller_lyer: cannot place 4 detached fins of {fl:.0f} px around a "
                               f"{p['line_length']:.0f} px line on a {S} px canvas; lower fin_length")
        th = rng.uniform(0, 2 * math.pi)
        px, py = rng.uniform(m, S - m, 2)
        q = (px + fl * math.cos(th), py + fl * math.sin(th))
        if not (m <= q[0] <= S - m and m <= q[1] <= S - m):
            continue
        if not _segment_far((px, py), q, box, 4 * cfg.line_width + 4):
            continue
        if any(not _segment_far((px, py), q, (min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1])),
                                2 * cfg.line_width) for a, b in fins):
            continue
        fins.append(((float(px), float(py)), (float(q[0]), float(q[1]))))
    return fins


def muller_lyer_items(cfg: MullerLyerConfig, seed: int):
    S = cfg.canvas_size
    m = cfg.margin * S
    for cond, n in (("scrambled", cfg.n_scrambled), ("inward", cfg.n_illusory), ("outward", cfg.n_illusory)):
        for k in range(n):
            rng = item_rng(seed, cond, k)
            L = _uniform(rng, cfg.line_length) * S
            fl = _uniform(rng, cfg.fin_length) * S
            ang = _uniform(rng, cfg.fin_angle)
            fx, fy = fl * math.cos(math.radians(ang)), fl * math.sin(math.radians(ang))
            if cfg.placement == "original":
                lo, hi = fl + L / 2, S - fl - L / 2
                cx = float(rng.uniform(lo, hi))
                # a whole row whose centre lies in [lo, hi] (the original's positions are whole pixels); the
                # middle row when the range is narrower than a pixel
                r0, r1 = math.ceil(lo - 0.5), math.floor(hi - 0.5)
                cy = (float(rng.integers(r0, r1 + 1)) if r1 >= r0 else float(math.floor(S / 2 - 0.5))) + 0.5
            else:
                ext = fx if cond == "outward" else 0.0  # horizontal reach of the fins beyond the line ends
                cx = float(rng.uniform(m + L / 2 + ext, S - m - L / 2 - ext))
                cy = float(rng.uniform(m + fy + cfg.line_width, S - m - fy - cfg.line_width))
            x0, x1 = cx - L / 2, cx + L / 2
            params = {"line_length": L, "line_length_norm": L / S, "line_x0": x0, "line_x1": x1, "line_y": cy,
                      "fin_length": fl, "fin_angle": ang, "fin_direction": cond,
                      "arrow_direction": NAN, "arrow1_x": NAN, "arrow1_y": NAN, "arrow2_x": NAN, "arrow2_y": NAN}
            if cond == "scrambled" and cfg.scrambled == "arrowheads":
                # the two arrowheads: vertices anywhere the fins stay on the canvas, opposite directions
                (a1x, a1y), (a2x, a2y) = rng.uniform(fl, S - fl, (2, 2))
                params.update(arrow_direction=float(rng.uniform(0, 360)), arrow1_x=float(a1x), arrow1_y=float(a1y),
                              arrow2_x=float(a2x), arrow2_y=float(a2y))
            # scrambled='fins' places them at render time (a rejection loop: kept out of the serial items pass),
            # from their own generator
            params["_seed"], params["_k"] = int(seed), k
            params.update(background_params(cfg, rng))
            yield Item(cond, f"{cond}_{k:05d}", params)


def muller_lyer_segments(cfg: MullerLyerConfig, cond: str, p: dict):
    """The fins of one image as (start, end) points (the line is drawn separately)."""
    if cond != "scrambled":
        return fin_segments(p["line_x0"], p["line_x1"], p["line_y"], p["fin_length"], p["fin_angle"], cond)
    if cfg.scrambled == "fins":
        return scrambled_fins(cfg, p, item_rng(p["_seed"], "scrambled_fins", p["_k"]))
    d = p["arrow_direction"]
    return (arrowhead_segments(p["arrow1_x"], p["arrow1_y"], d, p["fin_length"], p["fin_angle"])
            + arrowhead_segments(p["arrow2_x"], p["arrow2_y"], d + 180.0, p["fin_length"], p["fin_angle"]))


def muller_lyer_render(cfg: MullerLyerConfig, item: Item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    w = cfg.line_width
    paint_segment(img, (p["line_x0"], p["line_y"]), (p["line_x1"], p["line_y"]), w, "butt", cfg.line_color,
                  cfg.antialias)
    for a, b in muller_lyer_segments(cfg, item.condition, p):
        # round caps: the fins meet the line without a notch at the vertex (the vertex is the line's end)
        paint_segment(img, a, b, w, "round", cfg.line_color, cfg.antialias)
    return to_uint8(img), {}


ML_COUNTS = {"n_scrambled": 5000, "n_illusory": 500}
ML_PAPER = {**ML_COUNTS, "line_length": [0.25, 0.67], "fin_length": [0.067, 0.134], "fin_angle": [10.0, 44.0],
            "line_width": 1.0, "placement": "original", "scrambled": "arrowheads"}
register_mindset(
    "muller_lyer", MullerLyerConfig,
    "Müller-Lyer: a horizontal line with inward (arrowhead) or outward (tail) fins, or its two arrowheads "
    "scattered; decoder target line_length (px)", "mindset-vision.txt C.2.1; Müller-Lyer 1889 (Day & Knuth 1981)",
    items=muller_lyer_items, render=muller_lyer_render, conditions=("scrambled", "inward", "outward"),
    paper=ML_PAPER, lite={"n_scrambled": 4, "n_illusory": 4},
    presets={"clean": {**ML_COUNTS, "line_length": [0.2, 0.5], "fin_length": [0.06, 0.12],
                       "fin_angle": [25.0, 65.0], "line_width": 2.0, "placement": "inside", "scrambled": "fins"}},
    figure="MindSet Fig. 3 (Müller-Lyer panel)")


# ============================================================================================ Ponzo
PONZO_MARGIN = 0.11  # layout='original': the original's margin (fraction of the canvas) for rails, sleepers, targets


@dataclasses.dataclass(frozen=True)
class PonzoConfig(MindsetConfig):
    """Defaults = the original's (``ponzo_illusion/generate_dataset.py``, read from the public repository; the
    shared reference copy does not hold it), ``layout='original'``: two rails 0.78 × canvas long whose midpoints
    lie ``rail_offset`` left and right of the middle at half height, each ``rail_angle`` from vertical (its slope
    drawn uniformly, 3.2-5.2, as the original); ``num_rail_lines`` sleepers, one at a random row of each of as many
    equal bands between the margins (0.11 × canvas), each across both rails' lines and 10 % of the track's width
    beyond either; the red and the blue line centred horizontally, one on a random row of the upper half and one
    of the lower half (which colour is on top at random), lengths 0.1-0.5 of the canvas, drawn last and free to
    cross rails and sleepers. Scrambled: ``num_rail_lines`` + 2 white segments between random points of the
    canvas, and the two coloured lines at independent random rows between the margins. Preset ``clean``:
    Vantage's earlier variant (rails meeting above the top line, sleepers clear of the targets, targets inside
    the track, scrambled = the same segments moved clear of the targets, lengths 0.1-0.3)."""

    n_scrambled: int = field(5000, "images of the scrambled condition", range=(0, 10_000_000))
    n_illusory: int = field(500, "images of each railway condition (same_length, different_length)",
                            range=(0, 10_000_000))
    layout: str = field("original", "'original': the original's railway and scrambled segments (see "
                        "PonzoConfig); 'clean': rails meeting above the targets, context kept clear of the targets",
                        choices=("original", "clean"))
    target_length: tuple = field((0.1, 0.5), "[min, max] target line length (fraction of canvas_size)",
                                 range=(0.02, 0.6))
    min_length_difference: float = field(0.0, "different_length and scrambled: minimum |red - blue| "
                                         "(fraction of canvas_size; 0 = independent lengths, as the original)",
                                         range=(0.0, 0.5))
    rail_angle: tuple = field((10.89, 17.35), "[min, max] angle of each rail from vertical (degrees; the "
                              "convergence). layout='original' draws the slope (cotangent) uniformly, as the "
                              "original's 3.2-5.2; 'clean' the angle", range=(1.0, 40.0))
    rail_offset: tuple = field((0.11, 0.33), "layout='original': distance of each rail's midpoint from the "
                               "vertical midline (fraction of canvas_size)", range=(0.0, 0.5))
    num_rail_lines: int = field(5, "horizontal segments (sleepers) across the rails", range=(0, 50))
    line_width: float = field(2.0, "stroke width (px)", range=(0.5, 16.0))
    context_color: tuple = field((255, 255, 255), "RGB of rails and sleepers", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("context_color", self.context_color)
        _check_range(self, "target_length", 0.02, 0.6)
        _check_range(self, "rail_angle", 1.0, 40.0)
        _check_range(self, "rail_offset", 0.0, 0.5)
        if self.target_length[1] - self.target_length[0] < self.min_length_difference:
            raise ConfigError(f"target_length={list(self.target_length)}: the range is narrower than "
                              f"min_length_difference={self.min_length_difference}; widen it or lower the difference")


def _two_lengths(rng, cfg: PonzoConfig, S: int) -> tuple[float, float]:
    lo, hi = cfg.target_length
    while True:  # rejection: the two lengths differ by at least the minimum (the range allows it, checked)
        a, b = rng.uniform(lo, hi, 2)
        if abs(a - b) >= cfg.min_length_difference:
            return float(a) * S, float(b) * S


def rail_x(p: dict, S: int, y: float) -> tuple[float, float]:
    """layout='original': x of the left and the right rail's line at height ``y`` (px; the lines continued
    beyond the rails' ends, as the sleepers use them)."""
    t = math.tan(math.radians(p["rail_angle"]))
    off = p["rail_offset"]
    return S / 2 - off + (S / 2 - y) * t, S / 2 + off - (S / 2 - y) * t


def ponzo_context_original(cfg: PonzoConfig, cond: str, p: dict, rng: np.random.Generator):
    """layout='original': the white segments as (start, end) points — see :class:`PonzoConfig`."""
    S = cfg.canvas_size
    if cond == "scrambled":
        return [tuple((float(x), float(y)) for x, y in rng.uniform(0, S, (2, 2)))
                for _ in range(cfg.num_rail_lines + 2)]
    m = PONZO_MARGIN * S
    phi = math.radians(p["rail_angle"])
    half = (S - 2 * m) / 2
    dx, dy = half * math.sin(phi), half * math.cos(phi)
    off = p["rail_offset"]
    segments = [((S / 2 - off - dx, S / 2 + dy), (S / 2 - off + dx, S / 2 - dy)),
                ((S / 2 + off + dx, S / 2 + dy), (S / 2 + off - dx, S / 2 - dy))]
    n = cfg.num_rail_lines
    edges = [math.floor(i * (S - 2 * m) / n + m) for i in range(n + 1)] if n else []
    for i in range(n):  # one sleeper on a random row of each band (whole rows: the 2-px stroke fills two)
        y = float(rng.integers(edges[i], max(edges[i + 1], edges[i] + 1)))
        xl, xr = rail_x(p, S, y)
        extra = 0.1 * (xr - xl)
        segments.append(((xl - extra, y), (xr + extra, y)))
    return segments


def ponzo_context(cfg: PonzoConfig, cond: str, p: dict, rng: np.random.Generator):
    """The white segments: two rails converging upward (half width ``track_half_width_top`` at the top target,
    growing by tan(rail_angle) per px downward, cut at their meeting point or the canvas) and
    ``num_rail_lines`` sleepers across the track at random heights clear of the targets; scrambled: the same
    segments (lengths kept), each moved to a random place and orientation clear of the targets. Drawn at render
    time from their own generator (rejection loops stay out of the serial items pass)."""
    S, w = cfg.canvas_size, cfg.line_width
    cx, y_top, y_bottom, h_top = S / 2, p["top_y"], p["bottom_y"], p["track_half_width_top"]
    t = math.tan(math.radians(p["rail_angle"]))
    apex = y_top - h_top / t  # where the rails would meet
    y0, y1 = max(apex, 0.02 * S), 0.98 * S
    rails = [((cx - (h_top + (y0 - y_top) * t), y0), (cx - (h_top + (y1 - y_top) * t), y1)),
             ((cx + (h_top + (y0 - y_top) * t), y0), (cx + (h_top + (y1 - y_top) * t), y1))]
    sleepers = []
    for _ in range(cfg.num_rail_lines):
        for _try in range(1000):
            ys = float(rng.uniform(max(y0, 0.05 * S) + w, y1 - w))
            clear = min(abs(ys - y_top), abs(ys - y_bottom)) > 3 * w + 2
            if clear and all(abs(ys - q[0][1]) > max(2 * w, 0.03 * S) for q in sleepers):
                break
        half = h_top + (ys - y_top) * t + 0.03 * S
        sleepers.append(((cx - half, ys), (cx + half, ys)))
    context = rails + sleepers
    if cond != "scrambled":
        return context
    boxes = [(cx - p["top_length"] / 2, y_top, cx + p["top_length"] / 2, y_top),
             (cx - p["bottom_length"] / 2, y_bottom, cx + p["bottom_length"] / 2, y_bottom)]
    moved = []
    for a, b in context:
        L = math.dist(a, b)
        for _try in range(100_000):
            th = rng.uniform(0, math.pi)
            dx, dy = L / 2 * math.cos(th), L / 2 * math.sin(th)
            px = rng.uniform(abs(dx), S - abs(dx)) if 2 * abs(dx) < S else S / 2
            py = rng.uniform(abs(dy), S - abs(dy)) if 2 * abs(dy) < S else S / 2
            q0, q1 = (px - dx, py - dy), (px + dx, py + dy)
            if all(_segment_far(q0, q1, bx, 3 * w + 2) for bx in boxes):
                break
        else:
            raise RuntimeError(f"mindset/ponzo: cannot scramble a {L:.0f} px segment clear of the targets; lower "
                               "target_length or num_rail_lines")
        moved.append(((float(q0[0]), float(q0[1])), (float(q1[0]), float(q1[1]))))
    return moved


def ponzo_items(cfg: PonzoConfig, seed: int):
    S = cfg.canvas_size
    w = cfg.line_width
    for cond, n in (("scrambled", cfg.n_scrambled), ("same_length", cfg.n_illusory),
                    ("different_length", cfg.n_illusory)):
        for k in range(n):
            rng = item_rng(seed, cond, k)
            if cond == "same_length":
                red = blue = _uniform(rng, cfg.target_length) * S
            else:
                red, blue = _two_lengths(rng, cfg, S)
            offset = h_top = NAN
            if cfg.layout == "original":
                m = PONZO_MARGIN * S
                # whole rows (the 2-px lines cover two rows exactly): scrambled anywhere between the margins,
                # else one in the upper and one in the lower half
                if cond == "scrambled":
                    y_red, y_blue = (float(v) for v in rng.integers(int(m), int(S - m) + 1, 2))
                    phi = NAN
                else:
                    y_up = float(rng.integers(int(m), S // 2 + 1))
                    y_down = float(rng.integers(S // 2, int(S - m) + 1))
                    y_red, y_blue = (y_up, y_down) if rng.integers(0, 2) else (y_down, y_up)
                    offset = _uniform(rng, cfg.rail_offset) * S
                    lo, hi = (1 / math.tan(math.radians(a)) for a in (cfg.rail_angle[1], cfg.rail_angle[0]))
                    phi = math.degrees(math.atan(1 / float(rng.uniform(lo, hi))))  # uniform in the slope
                red_on_top = y_red < y_blue
                y_top, y_bottom = min(y_red, y_blue), max(y_red, y_blue)
                top_len, bottom_len = (red, blue) if red_on_top else (blue, red)
                if cond != "scrambled":
                    xl, xr = rail_x({"rail_angle": phi, "rail_offset": offset}, S, y_top)
                    h_top = (xr - xl) / 2
            else:
                red_on_top = bool(rng.integers(0, 2))
                top_len, bottom_len = (red, blue) if red_on_top else (blue, red)
                # target centres on whole pixels: the 2-px lines cover whole rows (measured back exactly)
                y_top = float(round(rng.uniform(0.25, 0.38) * S))
                y_bottom = float(round(rng.uniform(0.62, 0.75) * S))
                phi = _uniform(rng, cfg.rail_angle)
                # the track's half width at the top target: the longer of the two lines fits, with a small gap
                h_top = max(top_len, bottom_len) / 2 + float(rng.uniform(2, 0.04 * S)) + w
            yield Item(cond, f"{cond}_{k:05d}", {
                "red_length": red, "blue_length": blue, "red_length_norm": red / S, "blue_length_norm": blue / S,
                "top_color": "red" if red_on_top else "blue", "top_length": top_len, "bottom_length": bottom_len,
                "top_y": y_top, "bottom_y": y_bottom, "rail_angle": phi, "rail_offset": offset,
                "num_rail_lines": cfg.num_rail_lines, "track_half_width_top": h_top, "_seed": int(seed), "_k": k,
                **background_params(cfg, rng)})


def ponzo_render(cfg: PonzoConfig, item: Item):
    p = item.params
    S = cfg.canvas_size
    img = new_canvas(S, background_rgb(p))
    context = ponzo_context_original if cfg.layout == "original" else ponzo_context
    for a, b in context(cfg, item.condition, p, item_rng(p["_seed"], "ponzo_context", item.condition, p["_k"])):
        paint_segment(img, a, b, cfg.line_width, "butt", cfg.context_color, cfg.antialias)
    red_y, blue_y = (p["top_y"], p["bottom_y"]) if p["top_color"] == "red" else (p["bottom_y"], p["top_y"])
    # red first, then blue (the original's order: where the two share a row, blue is on top)
    for y, L, col in ((red_y, p["red_length"], RED), (blue_y, p["blue_length"], BLUE)):
        paint_segment(img, (S / 2 - L / 2, y), (S / 2 + L / 2, y), cfg.line_width, "butt", col, cfg.antialias)
    return to_uint8(img), {}


PONZO_COUNTS = {"n_scrambled": 5000, "n_illusory": 500, "num_rail_lines": 5}
register_mindset(
    "ponzo", PonzoConfig,
    "Ponzo: a red and a blue horizontal line across converging rails (same or different lengths), or with the "
    "rail segments scrambled; decoder targets red_length, blue_length (px)",
    "mindset-vision.txt C.2.2; Ponzo 1910", items=ponzo_items, render=ponzo_render,
    conditions=("scrambled", "same_length", "different_length"),
    paper={**PONZO_COUNTS, "layout": "original", "target_length": [0.1, 0.5], "min_length_difference": 0.0,
           "rail_angle": [10.89, 17.35], "rail_offset": [0.11, 0.33], "line_width": 2.0},
    lite={"n_scrambled": 4, "n_illusory": 4},
    presets={"clean": {**PONZO_COUNTS, "layout": "clean", "target_length": [0.1, 0.3], "min_length_difference": 0.02,
                       "rail_angle": [8.0, 25.0], "line_width": 2.0}},
    figure="MindSet Fig. 3 (Ponzo panel)")


# ============================================================================================ Ebbinghaus
@dataclasses.dataclass(frozen=True)
class EbbinghausConfig(MindsetConfig):
    """Defaults = the original's (``ebbinghaus_illusion/generate_dataset.py``): centre diameter 0.1-0.4 of the
    canvas; 5 big flankers of diameter 0.24-0.30 or 8 small ones of 0.04-0.15 on a ring 0.02 of the canvas
    outside the centre circle, as many as drawn even where they overlap one another or leave the canvas;
    scrambled = 5 flankers of diameter 0.04-0.30 with their centres anywhere on the canvas (overlapping, under the
    centre circle or cut by the border alike). Preset ``clean``: Vantage's earlier variant (smaller centre and
    flankers, only as many flankers as fit on the ring without touching, scattered flankers clear of the centre,
    of each other and of the border)."""

    n_scrambled: int = field(5000, "images with the flankers scattered at random", range=(0, 10_000_000))
    n_illusory: int = field(50, "images of each illusory condition (small_flankers, big_flankers)",
                            range=(0, 10_000_000))
    center_size: tuple = field((0.1, 0.4), "[min, max] centre-circle diameter (fraction of canvas_size)",
                               range=(0.01, 0.5))
    small_flanker_size: tuple = field((0.04, 0.15), "[min, max] small flanker diameter (fraction)",
                                      range=(0.01, 0.5))
    big_flanker_size: tuple = field((0.24, 0.3), "[min, max] big flanker diameter (fraction)", range=(0.01, 0.5))
    small_flanker_count: tuple = field((8, 8), "[min, max] number of small flankers", range=(1, 64))
    big_flanker_count: tuple = field((5, 5), "[min, max] number of big flankers", range=(1, 64))
    scrambled_count: tuple = field((5, 5), "[min, max] number of scattered flankers (scrambled)", range=(1, 64))
    scrambled_flanker_size: tuple = field((0.04, 0.3), "[min, max] diameter of a scattered flanker (fraction)",
                                          range=(0.01, 0.5))
    gap: tuple = field((0.02, 0.02), "[min, max] gap between the centre circle and the flanker ring (fraction)",
                       range=(0.0, 0.3))
    flanker_overlap: bool = field(True, "true: every flanker drawn, even where flankers overlap one another, the "
                                  "centre circle (scrambled) or the border (the original); false: a ring keeps only "
                                  "as many flankers as fit without touching, scattered ones stay clear of the "
                                  "centre, of each other and inside the canvas, and the ring must fit the canvas")
    center_color: tuple = field((255, 0, 0), "RGB of the centre circle", range=(0, 255))
    flanker_color: tuple = field((255, 255, 255), "RGB of the flankers", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        for name in ("center_color", "flanker_color"):
            check_rgb(name, getattr(self, name))
        for name, lo, hi in (("center_size", .01, .5), ("small_flanker_size", .01, .5),
                             ("big_flanker_size", .01, .5), ("scrambled_flanker_size", .01, .5),
                             ("small_flanker_count", 1, 64), ("big_flanker_count", 1, 64),
                             ("scrambled_count", 1, 64), ("gap", 0, .3)):
            _check_range(self, name, lo, hi)
        reach = self.center_size[1] / 2 + self.gap[1] + self.big_flanker_size[1]
        if reach > 0.5 and not self.flanker_overlap:
            raise ConfigError(f"center_size max/2 + gap max + big_flanker_size max = {reach:.2f} of the canvas: "
                              "the big-flanker ring leaves the canvas (must be <= 0.5 with flanker_overlap=false); "
                              "lower them or set flanker_overlap=true")


def ebbinghaus_items(cfg: EbbinghausConfig, seed: int):
    S = cfg.canvas_size
    c = S / 2
    for cond, n in (("scrambled", cfg.n_scrambled), ("small_flankers", cfg.n_illusory),
                    ("big_flankers", cfg.n_illusory)):
        for k in range(n):
            rng = item_rng(seed, cond, k)
            rc = _uniform(rng, cfg.center_size) * S / 2
            circles = []
            if cond == "scrambled":
                n_f = int(rng.integers(cfg.scrambled_count[0], cfg.scrambled_count[1] + 1))
                lo, hi = cfg.scrambled_flanker_size
                for _ in range(n_f):
                    if cfg.flanker_overlap:  # anywhere: the centre uniform over the canvas
                        r = float(rng.uniform(lo, hi)) * S / 2
                        x, y = rng.uniform(0, S, 2)
                        circles.append((float(x), float(y), r))
                        continue
                    for _try in range(2000):  # random sizes and places; clear of the centre and each other
                        r = float(rng.uniform(lo, hi)) * S / 2
                        x, y = rng.uniform(r + 1, S - r - 1, 2)
                        if math.hypot(x - c, y - c) < rc + r + 0.03 * S:
                            continue
                        if all(math.hypot(x - a, y - b) >= r + q + 2 for a, b, q in circles):
                            circles.append((float(x), float(y), r))
                            break
                shift, ring_r, flanker_r = 0.0, 0.0, float("nan")
            else:
                size = cfg.small_flanker_size if cond == "small_flankers" else cfg.big_flanker_size
                count = cfg.small_flanker_count if cond == "small_flankers" else cfg.big_flanker_count
                flanker_r = _uniform(rng, size) * S / 2
                ring_r = rc + _uniform(rng, cfg.gap) * S + flanker_r
                n_f = int(rng.integers(count[0], count[1] + 1))
                if not cfg.flanker_overlap:  # at most as many as fit on the ring without touching (1 px apart)
                    n_f = min(n_f, int(math.pi / math.asin(min(1.0, (flanker_r + 1) / ring_r))))
                shift = float(rng.uniform(0, 360 / n_f))  # the ring's rotation (the original's Shift)
                for j in range(n_f):
                    a = math.radians(shift + 360 * j / n_f)
                    circles.append((c + ring_r * math.sin(a), c - ring_r * math.cos(a), flanker_r))
            yield Item(cond, f"{cond}_{k:05d}", {
                "center_diameter": 2 * rc, "center_size_norm": 2 * rc / S,
                "flanker_diameter": 2 * flanker_r, "flanker_size_norm": 2 * flanker_r / S,
                "num_flankers": len(circles), "ring_radius": ring_r, "shift": shift,
                "_circles": tuple(circles), **background_params(cfg, rng)})


def ebbinghaus_render(cfg: EbbinghausConfig, item: Item):
    p = item.params
    S = cfg.canvas_size
    img = new_canvas(S, background_rgb(p))
    for x, y, r in p["_circles"]:
        paint_disc(img, x, y, r, cfg.flanker_color, cfg.antialias)
    paint_disc(img, S / 2, S / 2, p["center_diameter"] / 2, cfg.center_color, cfg.antialias)
    return to_uint8(img), {}


EBB_COUNTS = {"n_scrambled": 5000, "n_illusory": 50}
register_mindset(
    "ebbinghaus", EbbinghausConfig,
    "Ebbinghaus (Titchener circles): a red centre circle ringed by small or big white flankers, or with "
    "flankers of random sizes scattered; decoder target center_size_norm (diameter / canvas)",
    "mindset-vision.txt C.2.3; Ebbinghaus 1902", items=ebbinghaus_items, render=ebbinghaus_render,
    conditions=("scrambled", "small_flankers", "big_flankers"),
    paper={**EBB_COUNTS, "center_size": [0.1, 0.4], "small_flanker_size": [0.04, 0.15],
           "big_flanker_size": [0.24, 0.3], "small_flanker_count": [8, 8], "big_flanker_count": [5, 5],
           "scrambled_count": [5, 5], "scrambled_flanker_size": [0.04, 0.3], "gap": [0.02, 0.02],
           "flanker_overlap": True},
    lite={"n_scrambled": 4, "n_illusory": 4},
    presets={"clean": {**EBB_COUNTS, "center_size": [0.08, 0.2], "small_flanker_size": [0.04, 0.07],
                       "big_flanker_size": [0.15, 0.2], "small_flanker_count": [8, 12], "big_flanker_count": [4, 6],
                       "scrambled_count": [4, 12], "scrambled_flanker_size": [0.04, 0.2], "gap": [0.02, 0.05],
                       "flanker_overlap": False}},
    figure="MindSet Fig. 2 (decoder panel) and Fig. 3")


# ============================================================================================ Jastrow
def annular_sector(cx: float, cy: float, r_outer: float, r_inner: float, span_deg: float,
                   rotation_deg: float = 0.0) -> Shape:
    """The Jastrow shape: the part of the annulus r_inner <= d <= r_outer around (cx, cy) within
    ±span/2 of the direction ``rotation_deg`` (0 = straight up, clockwise on screen). Area
    span_rad / 2 × (r_outer² − r_inner²) px²."""
    half = math.radians(span_deg) / 2
    rot = math.radians(rotation_deg)
    ux, uy = math.sin(rot), -math.cos(rot)  # the shape's axis (up when rotation is 0)
    cos_half = math.cos(half)

    def inside(x, y):
        dx, dy = x - cx, y - cy
        d2 = dx * dx + dy * dy
        d = np.sqrt(d2)
        return (d2 <= r_outer * r_outer) & (d2 >= r_inner * r_inner) & (dx * ux + dy * uy >= cos_half * d)

    return Shape(tuple(float(v) for v in _jastrow_bbox(cx, cy, r_outer, r_inner, span_deg, rotation_deg, pad=1.0)),
                 inside)


def annular_sector_area(r_outer: float, r_inner: float, span_deg: float) -> float:
    return math.radians(span_deg) / 2 * (r_outer ** 2 - r_inner ** 2)


JASTROW_CONDITIONS = ("illusory_red_on_top", "illusory_blue_on_top", "aligned_red_on_top", "aligned_blue_on_top",
                      "random", "random_same_size")


@dataclasses.dataclass(frozen=True)
class JastrowConfig(MindsetConfig):
    n_illusory: int = field(50, "images per illusory condition (same sizes stacked; red or blue on top)",
                            range=(0, 10_000_000))
    n_aligned: int = field(50, "images per aligned condition (different sizes stacked; red or blue on top)",
                           range=(0, 10_000_000))
    n_random: int = field(2000, "images with different sizes at random places and rotations",
                          range=(0, 10_000_000))
    n_random_same_size: int = field(100, "images with equal sizes at random places and rotations",
                                    range=(0, 10_000_000))
    size: tuple = field((0.3, 0.45), "[min, max] outer radius of a shape (fraction of canvas_size)",
                        range=(0.05, 0.8))
    min_size_difference: float = field(0.03, "aligned/random: minimum |red − blue| outer radius (fraction)",
                                       range=(0.0, 0.5))
    arc_span: tuple = field((60.0, 90.0), "[min, max] angular extent of a shape (degrees)", range=(10.0, 180.0))
    arc_width: tuple = field((0.3, 0.45), "[min, max] radial width as a fraction of the outer radius",
                             range=(0.05, 0.95))
    gap: float = field(0.03, "stacked conditions: vertical gap between the shapes (fraction of canvas_size)",
                       range=(0.0, 0.3))

    def __post_init__(self):
        super().__post_init__()
        for name, lo, hi in (("size", .05, .8), ("arc_span", 10, 180), ("arc_width", .05, .95)):
            _check_range(self, name, lo, hi)
        if self.size[1] - self.size[0] < self.min_size_difference:
            raise ConfigError(f"size={list(self.size)}: the range is narrower than min_size_difference="
                              f"{self.min_size_difference}; widen it or lower the difference")


def _jastrow_bbox(cx, cy, R, r, span, rot, pad: float = 0.0):
    """Bounding box (x0, y0, x1, y1) of an annular sector from 64 samples of each arc, widened by ``pad``
    px (samples 1.4° apart on an arc of radius R miss its extreme by at most R·(1 − cos 0.7°) < 0.01 R)."""
    a = np.radians(rot + np.linspace(-span / 2, span / 2, 64))
    xs = np.concatenate([cx + R * np.sin(a), cx + r * np.sin(a)])
    ys = np.concatenate([cy - R * np.cos(a), cy - r * np.cos(a)])
    pad = pad + 0.01 * R
    return xs.min() - pad, ys.min() - pad, xs.max() + pad, ys.max() + pad


def jastrow_items(cfg: JastrowConfig, seed: int):
    S = cfg.canvas_size
    plan = [(c, cfg.n_illusory) for c in JASTROW_CONDITIONS[:2]] + [(c, cfg.n_aligned) for c in JASTROW_CONDITIONS[2:4]]
    plan += [("random", cfg.n_random), ("random_same_size", cfg.n_random_same_size)]
    for cond, n in plan:
        for k in range(n):
            rng = item_rng(seed, cond, k)
            span = _uniform(rng, cfg.arc_span)
            wfrac = _uniform(rng, cfg.arc_width)
            if cond.startswith("illusory") or cond == "random_same_size":
                red = blue = _uniform(rng, cfg.size) * S
            else:
                while True:
                    red, blue = (float(v) * S for v in rng.uniform(cfg.size[0], cfg.size[1], 2))
                    if abs(red - blue) >= cfg.min_size_difference * S:
                        break
            shapes = {}
            if cond.startswith(("illusory", "aligned")):
                top, bottom = ("red", "blue") if "red_on_top" in cond else ("blue", "red")
                Rt, Rb = (red, blue) if top == "red" else (blue, red)
                # stacked as in Jastrow's figure: one centre column, the top shape's inner (short) edge
                # ``gap`` px above the bottom shape's outer (long) edge on the axis. Apexes: the top's inner
                # arc at cy − Rt(1 − w), the bottom's outer arc at cy + dy − Rb; their distance is the gap.
                gap = cfg.gap * S
                dy = Rb - Rt * (1 - wfrac) + gap
                boxes = [_jastrow_bbox(0, 0, Rt, Rt * (1 - wfrac), span, 0),
                         _jastrow_bbox(0, dy, Rb, Rb * (1 - wfrac), span, 0)]
                y_lo, y_hi = min(b[1] for b in boxes), max(b[3] for b in boxes)
                x_lo, x_hi = min(b[0] for b in boxes), max(b[2] for b in boxes)
                cx = S / 2 - (x_lo + x_hi) / 2
                cy = S / 2 - (y_lo + y_hi) / 2
                if y_hi - y_lo > S or x_hi - x_lo > S:
                    raise ConfigError(f"mindset/jastrow: shapes of outer radius {Rt:.0f} and {Rb:.0f} px stacked do "
                                      f"not fit a {S} px canvas; lower size")
                shapes[top] = (cx, cy, Rt, 0.0)
                shapes[bottom] = (cx, cy + dy, Rb, 0.0)
            else:
                placed = []
                for colour, R in (("red", red), ("blue", blue)):
                    for _try in range(5000):
                        rot = float(rng.uniform(0, 360))
                        bx = _jastrow_bbox(0, 0, R, R * (1 - wfrac), span, rot)
                        if bx[2] - bx[0] >= S - 2 or bx[3] - bx[1] >= S - 2:
                            continue
                        ox = float(rng.uniform(1 - bx[0], S - 1 - bx[2]))
                        oy = float(rng.uniform(1 - bx[1], S - 1 - bx[3]))
                        box = (bx[0] + ox, bx[1] + oy, bx[2] + ox, bx[3] + oy)
                        # bounding boxes 2 px apart: the shapes never touch (each area measurable alone)
                        if all(box[0] > q[2] + 2 or q[0] > box[2] + 2 or box[1] > q[3] + 2 or q[1] > box[3] + 2
                               for q in placed):
                            placed.append(box)
                            shapes[colour] = (ox, oy, R, rot)
                            break
                    else:
                        raise ConfigError(f"mindset/jastrow: cannot place two shapes apart on a {S} px canvas; "
                                          "lower size")
            area = {c: annular_sector_area(shapes[c][2], shapes[c][2] * (1 - wfrac), span) for c in ("red", "blue")}
            yield Item(cond, f"{cond}_{k:05d}", {
                "red_size": red, "blue_size": blue, "red_size_norm": red / S, "blue_size_norm": blue / S,
                "size_red_minus_blue": (red - blue) / S, "arc_span": span, "arc_width": wfrac,
                "red_area": area["red"], "blue_area": area["blue"],
                "on_top": cond.split("_")[1] if cond.startswith(("illusory", "aligned")) else "",
                "red_x": shapes["red"][0], "red_y": shapes["red"][1], "red_rotation": shapes["red"][3],
                "blue_x": shapes["blue"][0], "blue_y": shapes["blue"][1], "blue_rotation": shapes["blue"][3],
                **background_params(cfg, rng)})


def jastrow_render(cfg: JastrowConfig, item: Item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    for colour, rgb in (("red", RED), ("blue", BLUE)):
        R = p[f"{colour}_size"]
        paint(img, annular_sector(p[f"{colour}_x"], p[f"{colour}_y"], R, R * (1 - p["arc_width"]), p["arc_span"],
                                  p[f"{colour}_rotation"]), rgb, cfg.antialias)
    return to_uint8(img), {}


register_mindset(
    "jastrow", JastrowConfig,
    "Jastrow: a red and a blue annular sector, stacked (same size: illusory; different: aligned) or at "
    "random places and rotations; decoder targets red_size_norm, blue_size_norm, size_red_minus_blue",
    "mindset-vision.txt C.2.4; Jastrow 1892", items=jastrow_items, render=jastrow_render,
    conditions=JASTROW_CONDITIONS,
    paper={"n_illusory": 50, "n_aligned": 50, "n_random": 2000, "n_random_same_size": 100},
    lite={"n_illusory": 3, "n_aligned": 3, "n_random": 3, "n_random_same_size": 3},
    figure="MindSet Fig. 3 (Jastrow panel)")
