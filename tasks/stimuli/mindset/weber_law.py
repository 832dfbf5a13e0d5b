"""MindSet Weber's law (``mindset-vision.txt`` C.1.1; after Jacob et al., 2021): one horizontal line per
image, its length and grey level swept on a grid.

The original (``weber_law/generate_dataset.py``): lengths 5..49 px step 1 (``max_line_length=50`` exclusive) ×
grey 50..250 step 20 (``max_grayscale=255`` exclusive) = 45 × 11 = 495 conditions, width 2 px, one image per
condition unless the width is random (1-5 px), every line at the centre of the canvas. Here every image is
annotated (the original wrote only the last sample of each condition). The line is a butt-capped stroke
centred on (cx, cy): exactly ``length`` px long and ``width`` px wide, so its drawn area is length × width px
(antialiased edges carry the fractional coverage) — the original's Pillow line covers length + 1 columns (both
end pixels), a quirk not reproduced (see ``docs/mindset.md``). ``position=center`` (``paper``) puts the centre
at the canvas centre (S/2, S/2), as the original; ``position=random`` (preset ``clean``, Vantage's earlier
variant) draws it uniformly such that the line lies inside the canvas with a margin of ``margin`` px.

Conditions are the grey level (folders ``grey_050`` …); length, width, grey and position are columns.
Similarity-judgment use: distances between images of one grey level against the log length ratio (and
between lengths of one grey level against the log luminance ratio).
"""
from __future__ import annotations

import dataclasses

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_order, item_rng, new_canvas, paint,
                     register_mindset, segment, to_uint8)


@dataclasses.dataclass(frozen=True)
class WeberConfig(MindsetConfig):
    min_length: int = field(5, "shortest line (px)", range=(1, 2048))
    max_length: int = field(50, "longest line + 1 (px; exclusive, as the original)", range=(2, 2049))
    length_step: int = field(1, "length step (px)", range=(1, 2048))
    min_grey: int = field(50, "darkest line grey level (0-255)", range=(0, 255))
    max_grey: int = field(255, "exclusive upper grey level (0-256)", range=(1, 256))
    grey_step: int = field(20, "grey step (levels)", range=(1, 255))
    width: int = field(2, "line width (px); 0 = random 1-5 px per image (the original's width='rnd')",
                       range=(0, 64))
    samples: int = field(1, "images per (length, grey) condition", range=(1, 100_000))
    position: str = field("center", "line centre: 'center' (the canvas centre, as the original) or 'random' "
                          "(uniform, the line inside the margin)",
                          choices=("random", "center"))
    margin: int = field(10, "minimum distance from the line to the canvas border (px)", range=(0, 1024))

    def __post_init__(self):
        super().__post_init__()
        check_order(self, "min_length", "max_length")
        check_order(self, "min_grey", "max_grey")
        longest = max(range(self.min_length, self.max_length, self.length_step))
        if longest + 2 * self.margin > self.canvas_size:
            raise ConfigError(f"max_length={self.max_length} with margin={self.margin}: a {longest} px line does "
                              f"not fit a canvas_size={self.canvas_size} canvas; lower them or raise canvas_size")


def lengths(cfg: WeberConfig) -> list[int]:
    return list(range(cfg.min_length, cfg.max_length, cfg.length_step))


def greys(cfg: WeberConfig) -> list[int]:
    return list(range(cfg.min_grey, cfg.max_grey, cfg.grey_step))


def items(cfg: WeberConfig, seed: int):
    for g in greys(cfg):
        for L in lengths(cfg):
            for k in range(cfg.samples):
                rng = item_rng(seed, g, L, k)
                width = cfg.width if cfg.width else int(rng.integers(1, 6))
                if cfg.position == "center":
                    cx = cy = cfg.canvas_size / 2
                else:  # the whole stroke (length along x, width along y) inside the margin
                    cx = float(rng.uniform(cfg.margin + L / 2, cfg.canvas_size - cfg.margin - L / 2))
                    cy = float(rng.uniform(cfg.margin + width / 2, cfg.canvas_size - cfg.margin - width / 2))
                yield Item(f"grey_{g:03d}", f"grey_{g:03d}_len_{L:03d}_{k:04d}",
                           {"length": L, "grey": g, "width": width, "cx": cx, "cy": cy, "sample": k,
                            **background_params(cfg, rng)})


def render(cfg: WeberConfig, item: Item):
    p = item.params
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    half = p["length"] / 2
    paint(img, segment((p["cx"] - half, p["cy"]), (p["cx"] + half, p["cy"]), p["width"], "butt"), (p["grey"],) * 3,
          cfg.antialias)
    return to_uint8(img), {}


PAPER = {"min_length": 5, "max_length": 50, "length_step": 1, "min_grey": 50, "max_grey": 255, "grey_step": 20,
         "width": 2, "samples": 1, "position": "center"}
LITE = {"min_length": 5, "max_length": 50, "length_step": 15, "min_grey": 50, "max_grey": 255, "grey_step": 100,
        "samples": 2}
register_mindset("weber_law", WeberConfig, "Weber's law: a horizontal line, length × grey level",
                 "mindset-vision.txt C.1.1; Jacob et al. 2021", items=items, render=render,
                 conditions=r"grey_\d{3}", paper=PAPER, lite=LITE, presets={"clean": {**PAPER, "position": "random"}},
                 test_params={**LITE, "position": "random"})  # paper/lite are deterministic (centred); the seed test needs draws
