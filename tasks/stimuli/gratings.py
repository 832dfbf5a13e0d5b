"""Abutting-grating corruption (Fan & Zeng, 2022): a figure defined only by line ends.

The figure mask comes from a threshold at 0.5 (``img > 0.5`` for white-on-black digits, ``img < 0.5`` for
black silhouettes on white). Gratings are 1-pixel lines of period ``interval``: with
s = (d0·row + d1·col) mod interval, figure pixels are lit where s == 0 and background pixels where
s == interval // 2 — the same grating shifted by half a period, so the figure has no luminance edge,
only an illusory contour. Directions (d0, d1): horizontal (1, 0), vertical (0, 1), UR (1, 1), UL (−1, 1).
Output is binary (white lines on black); ``invert=True`` gives black lines on white (the paper's input
to ImageNet models).

Datasets: digits at 28×28 (intervals 2, 4, 6, 8) or upsampled to 224×224 by bilinear ×8 and
re-thresholded (intervals 4, 8, 16, 32); silhouettes at 224×224 (intervals 4-14 step 2). Offline
sources: scikit-learn's bundled handwritten digits (8×8, bilinearly upsampled to 28×28) and silhouettes
rendered from the catalogue's procedural objects; or a folder of images (``source=<dir>``, one
subfolder per class).
"""
from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

import numpy as np

from .registry import ConfigError, Item, field, register

DIRECTIONS = {"horizontal": (1, 0), "vertical": (0, 1), "UR": (1, 1), "UL": (-1, 1)}


def abutting_grating(figure: np.ndarray, interval: int, direction: str, invert: bool = False) -> np.ndarray:
    """uint8 [H, W] grating image for a boolean figure mask (see module docstring)."""
    if interval < 2:
        raise ConfigError(f"interval={interval}: must be >= 2 (the background is shifted by interval // 2)")
    if direction not in DIRECTIONS:
        raise ConfigError(f"direction={direction!r}; one of {', '.join(DIRECTIONS)}")
    d0, d1 = DIRECTIONS[direction]
    rows, cols = np.indices(figure.shape)
    s = np.mod(d0 * rows + d1 * cols, interval)
    lit = np.where(figure, s == 0, s == interval // 2)
    return np.where(lit != invert, 255, 0).astype(np.uint8)


def bilinear_upsample(img: np.ndarray, factor: float) -> np.ndarray:
    """Bilinear resize with align_corners=False semantics (pixel centres at +0.5), like torch's interpolate."""
    h, w = img.shape
    H, W = int(round(h * factor)), int(round(w * factor))
    y = np.clip((np.arange(H) + 0.5) / factor - 0.5, 0, h - 1)
    x = np.clip((np.arange(W) + 0.5) / factor - 0.5, 0, w - 1)
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (y - y0)[:, None], (x - x0)[None, :]
    a = img[y0][:, x0] * (1 - wx) + img[y0][:, x1] * wx
    b = img[y1][:, x0] * (1 - wx) + img[y1][:, x1] * wx
    return a * (1 - wy) + b * wy


@functools.lru_cache(maxsize=1)
def sklearn_digits_28() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 handwritten digits (8×8, 0-16) as floats in [0, 1] at 28×28, and labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    imgs = np.stack([bilinear_upsample(im / 16.0, 3.5) for im in d.images])
    return imgs, d.target.astype(int)


@functools.lru_cache(maxsize=1)
def catalogue_silhouettes(size: int = 224, views: int = 8) -> tuple[np.ndarray, list[str]]:
    """Black-on-white silhouettes (floats in [0, 1]) of the catalogue objects, ``views`` azimuths each."""
    from scenes.camera import Camera
    from render.meshes import render_meshes_raycast
    from scenes.catalogue import CATEGORIES, object_mesh

    imgs, labels = [], []
    for cat in CATEGORIES:
        obj = object_mesh(f"{cat}_01")  # build(...).meshes["object"], without the scene's Gaussians
        lo, hi = obj.bounds
        c = (lo + hi) / 2
        ext = float(np.linalg.norm(hi - lo))
        for v in range(views):
            a = 2 * np.pi * v / views + 0.3
            eye = c + np.array([np.cos(a), np.sin(a), 0.45]) * 1.6 * ext
            cam = Camera.from_fov(size, size, 40.0).looking_at(eye, c)
            mask = render_meshes_raycast([obj], cam).mask
            imgs.append(np.where(mask, 0.0, 1.0))
            labels.append(cat)
    return np.stack(imgs), labels


def folder_images(root: str) -> list[tuple[str, str]]:
    """(path, class) for every file under ``root/<class>/``; unreadable files are skipped at render time.
    Images directly in ``root`` (no class) are an error, not silently ignored."""
    from infra.images import class_folder_images

    try:
        out = class_folder_images(root)
    except ValueError as e:
        raise ConfigError(f"source={root!r}: {e}") from None
    if not out:
        raise ConfigError(f"source={root!r}: no files in class subfolders")
    return out


def _load_grey(path: str, size: int | None) -> np.ndarray:
    """Grey [size, size] float in [0, 1] through the one image loader (16/32-bit scaled, not saturated)."""
    from PIL import Image

    from infra.images import read_image, UnreadableImage

    from .writer import SkipItem

    try:
        g = read_image(path, "L")
    except UnreadableImage as e:
        raise SkipItem(str(e)) from None
    if size and g.size != (size, size):
        g = g.resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(g, float) / 255.0


@dataclasses.dataclass(frozen=True)
class DigitGratingConfig:
    resolution: str = field("low", "'low' = 28×28, 'high' = bilinear ×8 to 224×224", choices=("low", "high"))
    intervals: tuple = field((), "grating periods in pixels; empty = the paper's (low: 2, 4, 6, 8; high: 4, 8, 16, 32)",
                             range=(2, 512))
    directions: tuple = field(tuple(DIRECTIONS), "grating directions", choices=tuple(DIRECTIONS))
    n_images: int = field(100, "digits to use (the first n of the source)", range=(1, 10_000_000))
    source: str = field("sklearn_digits", "'sklearn_digits' (offline default) or a folder <dir>/<class>/<img>")
    include_original: bool = field(True, "also write the thresholded figure without gratings")
    invert: bool = field(False, "black lines on white instead of white on black")


@dataclasses.dataclass(frozen=True)
class SilhouetteGratingConfig:
    intervals: tuple = field((4, 6, 8, 10, 12, 14), "grating periods in pixels (paper sweep 4-14)", range=(2, 512))
    directions: tuple = field(tuple(DIRECTIONS), "grating directions", choices=tuple(DIRECTIONS))
    size: int = field(224, "image size (pixels)", range=(16, 4096))
    source: str = field("catalogue", "'catalogue' (silhouettes of the procedural objects) or a folder")
    views: int = field(8, "views per catalogue object", range=(1, 360))
    include_original: bool = field(True, "also write the silhouette without gratings")
    invert: bool = field(True, "black lines on white (the paper's ImageNet input)")


PAPER_INTERVALS = {"low": (2, 4, 6, 8), "high": (4, 8, 16, 32)}


def _conditions(cfg):
    conds = [("original", 0, "")] if cfg.include_original else []
    intervals = cfg.intervals or PAPER_INTERVALS[getattr(cfg, "resolution", "low")]
    return conds + [(f"{d}_i{i:02d}", i, d) for d in cfg.directions for i in intervals]


def _digit_source(cfg: DigitGratingConfig):
    if cfg.source == "sklearn_digits":
        imgs, labels = sklearn_digits_28()
        n = min(cfg.n_images, len(imgs))
        return [(("digits", i), str(labels[i])) for i in range(n)]
    files = folder_images(cfg.source)[: cfg.n_images]
    return [(("file", p), c) for p, c in files]


def _source_file(src, root: str) -> str:
    """Where an image came from: the file relative to ``source=`` (portable), or the built-in source."""
    if src[0] == "file":
        return os.path.relpath(src[1], root)
    return f"{src[0]}:{src[1]}"


def digit_items(cfg: DigitGratingConfig, seed: int):
    for k, (src, label) in enumerate(_digit_source(cfg)):
        for cond, interval, direction in _conditions(cfg):
            yield Item(cond, f"{k:05d}_{cond}", {"label": label, "interval": interval, "direction": direction,
                                                 "source_file": _source_file(src, cfg.source), "_src": src},
                       f"{k:05d}")


def _figure_from(cfg, src) -> np.ndarray:
    if src[0] == "digits":
        img = sklearn_digits_28()[0][src[1]]
        white_figure = True
    elif src[0] == "silhouette":
        img = catalogue_silhouettes(cfg.size, cfg.views)[0][src[1]]
        white_figure = False
    else:
        img = _load_grey(src[1], getattr(cfg, "size", None))
        white_figure = isinstance(cfg, DigitGratingConfig)
    if isinstance(cfg, DigitGratingConfig) and cfg.resolution == "high":
        img = bilinear_upsample(img, 8.0)
    return img > 0.5 if white_figure else img < 0.5


def render(cfg, item: Item):
    fig = _figure_from(cfg, item.params["_src"])
    if item.condition == "original":
        img = np.where(fig, 255, 0).astype(np.uint8)
        if getattr(cfg, "invert", False):
            img = 255 - img
    else:
        img = abutting_grating(fig, item.params["interval"], item.params["direction"], cfg.invert)
    return np.repeat(img[:, :, None], 3, axis=2), {"figure_fraction": float(fig.mean())}


def _silhouette_source(cfg: SilhouetteGratingConfig):
    if cfg.source == "catalogue":
        _, labels = catalogue_silhouettes(cfg.size, cfg.views)
        return [(("silhouette", i), c) for i, c in enumerate(labels)]
    if not os.path.isdir(cfg.source):
        raise ConfigError(f"source={cfg.source!r}: not 'catalogue' and not a folder")
    return [(("file", p), c) for p, c in folder_images(cfg.source)]


def silhouette_items(cfg: SilhouetteGratingConfig, seed: int):
    for k, (src, label) in enumerate(_silhouette_source(cfg)):
        for cond, interval, direction in _conditions(cfg):
            yield Item(cond, f"{label}_{k:04d}_{cond}", {"label": label, "interval": interval,
                                                         "direction": direction,
                                                         "source_file": _source_file(src, cfg.source), "_src": src},
                       f"{label}_{k:04d}")


# deterministic: no random draws (the seed is recorded, and tests check that it changes nothing)
register("abutting_digits", DigitGratingConfig, "Fan & Zeng (2022) abutting-grating digits (28×28 or 224×224)",
         "papers/abutting-grating-illusion.txt", items=digit_items, render=render, random=False,
         test_params={"n_images": 2, "intervals": [4], "directions": ["UR"]})
register("abutting_silhouettes", SilhouetteGratingConfig,
         "Fan & Zeng (2022) abutting-grating silhouettes (224×224, 16-class style)",
         "papers/abutting-grating-illusion.txt", items=silhouette_items, render=render, random=False,
         test_params={"size": 32, "views": 1, "intervals": [4], "directions": ["UL"]})
