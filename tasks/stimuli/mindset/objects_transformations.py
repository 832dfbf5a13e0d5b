"""MindSet 2D transformations (``mindset-vision.txt`` C.3): line drawings of library objects translated,
scaled, rotated and sheared, with separate parameter ranges for a ``train`` and a ``test`` split (the
original's lists of ranges, meant for decoders trained on one range and tested on another).

Each image is the object's untransformed line drawing (centred, longest side ``longest_side``) warped by
one affine map about the canvas centre, bilinearly, on the coverage before quantisation:

    forward (input pixel -> output pixel) = T(centre + t·canvas) · R(rotation) · Sh(shear) · S(scale) · T(−centre)

where R turns counter-clockwise on screen by ``rotation_deg``, Sh shears x by tan(``shear_deg``)·y, and
coordinates are continuous pixels (x right, y down, pixel centres at +0.5). The forward matrix is recorded
(``a11 a12 tx / a21 a22 ty``), so any tool can reproduce the image from the untransformed drawing (tested
with scikit-image, independently of the generator's SciPy warp). Conditions: ``train``, ``test``; the
class is a column. Defaults follow the original (translation ±0.2 of the canvas, scale 0.5-0.9, rotation
0-360) with the rotation range split: train 0-180°, test 180-360°. ``paper``: the 36 objects of
``_objects.BAKER36`` (standing in for Baker et al.'s 36 drawings) × 25 train + 25 test images = 1,800, the
original's 36 × 50 draws over rotation 0-360° (here stratified: half in each half-turn), white on black (the
original draws black on white and inverts);
``imagenet16``: the 16 ImageNet-16 categories × 5 instances × 50 per split (8,000; the 16-class OOD use).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..registry import ConfigError, Item, field
from ._objects import WHITE_ON_BLACK, ObjectsConfig, compose, library_categories, object_alpha
from .common import item_rng, register_mindset
from .objects_drawings import REFERENCE, object_items

RANGES = ("translation_x", "translation_y", "scale", "rotation", "shear")
LIMITS = {"translation_x": (-0.5, 0.5), "translation_y": (-0.5, 0.5), "scale": (0.05, 4.0),
          "rotation": (-360.0, 360.0), "shear": (-60.0, 60.0)}


def _rng_field(default, what, unit):
    return field(default, f"{what} range (low, high) {unit}", range=LIMITS[what.split()[-1]])


@dataclasses.dataclass(frozen=True)
class TransformConfig(ObjectsConfig):
    samples: int = field(50, "transformed images per object and split", range=(1, 100_000))
    train_translation_x: tuple = _rng_field((-0.2, 0.2), "train translation_x", "(fraction of the canvas)")
    train_translation_y: tuple = _rng_field((-0.2, 0.2), "train translation_y", "(fraction of the canvas)")
    train_scale: tuple = _rng_field((0.5, 0.9), "train scale", "(factor)")
    train_rotation: tuple = _rng_field((0.0, 180.0), "train rotation", "(deg, counter-clockwise)")
    train_shear: tuple = _rng_field((0.0, 0.0), "train shear", "(deg)")
    test_translation_x: tuple = _rng_field((-0.2, 0.2), "test translation_x", "(fraction of the canvas)")
    test_translation_y: tuple = _rng_field((-0.2, 0.2), "test translation_y", "(fraction of the canvas)")
    test_scale: tuple = _rng_field((0.5, 0.9), "test scale", "(factor)")
    test_rotation: tuple = _rng_field((180.0, 360.0), "test rotation", "(deg, counter-clockwise)")
    test_shear: tuple = _rng_field((0.0, 0.0), "test shear", "(deg)")

    def __post_init__(self):
        super().__post_init__()
        for split in ("train", "test"):
            for r in RANGES:
                name = f"{split}_{r}"
                v = getattr(self, name)
                if len(v) != 2 or v[0] > v[1]:
                    raise ConfigError(f"{name}={v!r}: must be two numbers (low, high) with low <= high, each in "
                                      f"[{LIMITS[r][0]}, {LIMITS[r][1]}]")


def affine(size: int, tx: float, ty: float, scale: float, rotation_deg: float, shear_deg: float) -> np.ndarray:
    """Forward 3×3 matrix (input pixel coordinates -> output), see module docstring."""
    c = size / 2
    a = math.radians(rotation_deg)
    # counter-clockwise on screen with y down: x' = x cos + y sin, y' = −x sin + y cos
    R = np.array([[math.cos(a), math.sin(a), 0], [-math.sin(a), math.cos(a), 0], [0, 0, 1]])
    Sh = np.array([[1, math.tan(math.radians(shear_deg)), 0], [0, 1, 0], [0, 0, 1]])
    S = np.diag([scale, scale, 1.0])
    T0 = np.array([[1, 0, -c], [0, 1, -c], [0, 0, 1]])
    T1 = np.array([[1, 0, c + tx * size], [0, 1, c + ty * size], [0, 0, 1]])
    return T1 @ R @ Sh @ S @ T0


def warp(alpha: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``alpha`` [H, W] moved by the forward ``matrix`` (bilinear, zero outside)."""
    from scipy import ndimage

    inv = np.linalg.inv(matrix)
    # ndimage works in (row, col) index space with samples at integer indices: pixel centre (x, y) =
    # (col + 0.5, row + 0.5). Output index o -> output point p = o + 0.5 -> input point inv·p -> index − 0.5.
    P = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]])  # (x, y) <-> (row, col) swap
    half = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
    unhalf = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]])
    M = P @ unhalf @ inv @ half @ P
    return ndimage.affine_transform(alpha, M[:2, :2], offset=M[:2, 2], order=1, mode="constant", cval=0.0)


def _items(cfg: TransformConfig, seed: int):
    for base in object_items(cfg, seed, condition="train"):
        for split in ("train", "test"):
            for k in range(cfg.samples):
                rng = item_rng(seed, "affine", base.item_id, split, k)
                v = {r: float(rng.uniform(*getattr(cfg, f"{split}_{r}"))) for r in RANGES}
                m = affine(cfg.canvas_size, v["translation_x"], v["translation_y"], v["scale"], v["rotation"], v["shear"])
                p = {**base.params, **{f"{r}": round(x, 6) for r, x in v.items()}, "split": split,
                     **{n: float(m[i, j]) for n, (i, j) in
                        (("a11", (0, 0)), ("a12", (0, 1)), ("tx", (0, 2)), ("a21", (1, 0)), ("a22", (1, 1)), ("ty", (1, 2)))}}
                yield Item(split, f"{base.item_id}_{split}_{k:05d}", p, set_id=base.item_id)


def recorded_matrix(p: dict) -> np.ndarray:
    return np.array([[p["a11"], p["a12"], p["tx"]], [p["a21"], p["a22"], p["ty"]], [0, 0, 1.0]])


def _render(cfg: TransformConfig, item):
    p = item.params
    return compose(cfg, p, warp(object_alpha(cfg, p, "line"), recorded_matrix(p))), {}


register_mindset("transformations_2d", TransformConfig, "line drawings translated, scaled, rotated and sheared, "
                 "train and test ranges; the forward affine is recorded", REFERENCE, items=_items, render=_render,
                 conditions=("train", "test"), paper={"object_set": "baker36", "samples": 25, **WHITE_ON_BLACK},
                 presets={"imagenet16": {"object_set": "grid", "categories": library_categories("imagenet16"),
                                         "instances": 5, "samples": 50}},
                 lite={"instances": 1, "samples": 1, "categories": ("car", "bird")})
