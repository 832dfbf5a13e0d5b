"""MindSet tilt illusion (``mindset-vision.txt`` C.2.5; Gibson & Radner 1937): a sinusoidal grating in a
central disc, a differently oriented grating around it (the context), or either alone.

Conditions: ``only_center`` (the disc's grating on a uniform background; orientation drawn uniformly — the
decoder's training set), ``only_context`` (the surround grating, the disc left at the background colour)
and ``center_context`` (both; by default the centre fixed at ``center_orientation`` = 0° and the context
drawn uniformly over [−90°, 90°), as the original). The human result to compare with: the decoded centre
orientation is repelled from the context's by up to ~20° of difference and weakly attracted at ~70-80°
(Wenderoth & Johnstone 1988).

Conventions: orientation of the bars in degrees, 0 = vertical bars, positive = clockwise on screen (the top of
the bars leans right), in [−90, 90); the luminance varies along n = (cos θ, sin θ) in (x right, y down)
coordinates: grey = 127.5 + 127.5·cos(2π·f/S·((x − S/2)·cos θ + (y − S/2)·sin θ) + φ), sampled at pixel
centres, with f = ``frequency`` cycles per canvas width S and φ the phase. The disc (radius
``radius`` × S/2 about the canvas centre) has antialiased edges (its coverage blends the two regions).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import MindsetConfig, background_params, background_rgb, item_rng, register_mindset, to_uint8
from .illusions_raster import disc_coverage

CONDITIONS = ("only_center", "only_context", "center_context")


@dataclasses.dataclass(frozen=True)
class TiltConfig(MindsetConfig):
    n_only_center: int = field(1000, "images of the centre grating alone", range=(0, 10_000_000))
    n_only_context: int = field(1000, "images of the context grating alone", range=(0, 10_000_000))
    n_center_context: int = field(1000, "images of centre and context", range=(0, 10_000_000))
    frequency: tuple = field((5.0, 20.0), "[min, max] spatial frequency (cycles per canvas width); one per "
                             "image, shared by centre and context", range=(1.0, 100.0))
    radius: tuple = field((0.1, 0.6), "[min, max] centre-disc radius as a fraction of half the canvas",
                          range=(0.02, 1.0))
    center_orientation: float = field(0.0, "center_context: the centre's orientation (degrees; "
                                      "fixed as the original); only_center draws it uniformly", range=(-90.0, 90.0))
    random_phase: bool = field(True, "a random phase per grating (else phase 0: bright bar through the centre)")

    def __post_init__(self):
        super().__post_init__()
        for name in ("frequency", "radius"):
            v = getattr(self, name)
            if len(v) != 2 or v[0] > v[1]:
                raise ConfigError(f"{name}={list(v)!r}: must be [min, max] with min <= max")
        if self.frequency[1] > self.canvas_size / 4:
            raise ConfigError(f"frequency max {self.frequency[1]} cycles on a {self.canvas_size} px canvas: "
                              f"above {self.canvas_size / 4:.0f} (4 px per cycle) the grating aliases; lower it")


def _orientation(rng) -> float:
    return float(rng.uniform(-90.0, 90.0))


def items(cfg: TiltConfig, seed: int):
    for cond, n in zip(CONDITIONS, (cfg.n_only_center, cfg.n_only_context, cfg.n_center_context)):
        for k in range(n):
            rng = item_rng(seed, cond, k)
            f = float(rng.uniform(*cfg.frequency))
            r = float(rng.uniform(*cfg.radius))
            theta_c = _orientation(rng) if cond == "only_center" else (cfg.center_orientation
                                                                      if cond == "center_context" else math.nan)
            theta_s = _orientation(rng) if cond != "only_center" else math.nan
            ph = rng.uniform(0, 2 * math.pi, 2) if cfg.random_phase else np.zeros(2)
            yield Item(cond, f"{cond}_{k:05d}", {
                "theta_center": theta_c, "theta_context": theta_s,
                "theta_difference": theta_s - theta_c if cond == "center_context" else math.nan,
                "frequency": f, "radius": r, "radius_px": r * cfg.canvas_size / 2,
                "phase_center": float(ph[0]), "phase_context": float(ph[1]), **background_params(cfg, rng)})


def grating(size: int, frequency: float, theta_deg: float, phase: float) -> np.ndarray:
    """float32 [size, size] grey 0-255 sinusoidal grating (module docstring for the convention)."""
    k = 2 * math.pi * frequency / size
    t = math.radians(theta_deg)
    c = np.arange(size, dtype=np.float64) + 0.5 - size / 2
    ph = k * math.cos(t) * c[None, :] + k * math.sin(t) * c[:, None] + phase
    return (127.5 + 127.5 * np.cos(ph)).astype(np.float32)


def render(cfg: TiltConfig, item: Item):
    p = item.params
    S = cfg.canvas_size
    img = np.empty((S, S, 3), np.float32)
    img[:] = np.asarray(background_rgb(p), np.float32)
    inner = np.zeros((S, S), np.float32)
    cov, (r0, c0) = disc_coverage(S / 2, S / 2, p["radius_px"], S, cfg.antialias)
    inner[r0:r0 + cov.shape[0], c0:c0 + cov.shape[1]] = cov
    if item.condition != "only_center":  # the context: everywhere outside the disc
        a = (1 - inner)[:, :, None]
        img += a * (grating(S, p["frequency"], p["theta_context"], p["phase_context"])[:, :, None] - img)
    if item.condition != "only_context":
        a = inner[:, :, None]
        img += a * (grating(S, p["frequency"], p["theta_center"], p["phase_center"])[:, :, None] - img)
    return to_uint8(img), {}


register_mindset(
    "tilt", TiltConfig,
    "Tilt illusion: a grating in a central disc, a surround grating of another orientation, or either alone; "
    "decoder target theta_center (degrees, 0 = vertical bars, clockwise positive)",
    "mindset-vision.txt C.2.5; Gibson & Radner 1937", items=items, render=render, conditions=CONDITIONS,
    paper={"n_only_center": 1000, "n_only_context": 1000, "n_center_context": 1000},
    lite={"n_only_center": 4, "n_only_context": 4, "n_center_context": 4},
    figure="MindSet Fig. 3 (tilt panel)")
