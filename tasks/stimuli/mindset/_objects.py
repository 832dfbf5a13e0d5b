"""What the MindSet shape and object datasets share: objects from the procedural library
(``scenes/objects``) drawn by ``render/drawing.py`` instead of Baker et al.'s line drawings and silhouettes.

* :class:`ObjectsConfig` — which objects (``object_set``: ``grid`` = categories × instances 1..n, or
  ``baker36`` = :data:`BAKER36`), view (canonical + seeded jitter), longest side in pixels, stroke width, ink
  colour on a white ground (the originals' black on white);
* :data:`BAKER36` — the fixed 36 (category, instance) pairs that stand in for Baker et al.'s (2018) 36
  drawings in the ``paper`` presets; :func:`object_list` — the (category, instance) pairs a config draws;
* :func:`object_params` — one object's annotation columns: ``class_name`` (the library category),
  ``imagenet_index`` (its first ILSVRC-2012 index, -1 if none) and ``imagenet_indices`` (all, space separated),
  ``instance``, ``object_seed``, ``azimuth_deg``, ``inclination_deg``, ``longest_side`` and
  ``object_params`` (the library's drawn shape parameters as ``name=value;…``);
* :func:`object_alpha` — its line drawing / silhouette / shaded rendering as float coverage [H, W];
* :func:`compose` — ink of a colour over the background.

The object of (category, instance) is built with the dataset seed, so every object dataset generated with
one seed shows the same objects.

Why 36 and which: MindSet's line drawing, silhouette, dotted, segmented, texturized, global change and 2D
transformation sets draw Baker et al.'s 36 drawings (``assets/baker_2018_linedrawings``, one image per ImageNet
class, obtained from the authors on request, so not reproduced here): 19 animals (lion, lynx, tiger; standard
poodle, white wolf; ice bear; hare; ibex, llama, zebra; armadillo; king penguin, peacock, toucan; African
crocodile; bullfrog; dragonfly, sulphur butterfly; snail) and 17 objects (airship, space shuttle, lawn mower,
banana, pretzel, beer bottle, coffee mug, teapot, bow tie, running shoe, cello, trombone, hammer, paintbrush,
revolver, jigsaw puzzle, sewing machine). :data:`BAKER36` keeps that design — 36 images, 19 animals and 17
objects, every one of an ImageNet-1k class — from the library: each library animal once and, where Baker's set
has several animals of one kind and the library one model of it, further instances (felines: cat 1-2 and tiger;
canids: dog 1 and wolf 1; hoofed animals, which the library lacks: elephant, dog 2, wolf 2; birds: bird 1-3;
the two insects, which the library lacks: bird 4-5, the other flying animal; armadillo and snail: turtle 1-2,
the armoured and the shelled animal), and every library object category with an ImageNet-1k class once,
airplane twice (Baker's airship and space shuttle). The 16-class design (``object_set=grid``, 16 ImageNet-16
categories × 5 instances) is the datasets' preset ``imagenet16``, for the 16-class ImageNet (OOD) use.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..registry import ConfigError, field
from .common import MindsetConfig, background_rgb, check_rgb, new_canvas, paint_coverage, to_uint8

SUPERSAMPLE = 3  # sub-pixels per axis for the object renders (render/drawing.py)


def library_categories(group: str | None = "imagenet16") -> tuple[str, ...]:
    """The library's categories of ``group`` (``imagenet16``, ``3dpc``, ``baker2022``; None: all): the
    datasets draw the 16 ImageNet-16 classes by default and accept any library category."""
    from scenes.objects import category_names  # not categories(): that loads the builders and trimesh

    return tuple(category_names(group))


# (category, instance): 19 animals then 17 objects, the groups of Baker et al.'s 36 classes (module docstring)
BAKER36 = (
    ("cat", 1), ("cat", 2), ("tiger", 1),  # lion, lynx, tiger
    ("dog", 1), ("wolf", 1),  # standard poodle, white wolf
    ("bear", 1), ("bunny", 1),  # ice bear, hare
    ("elephant", 1), ("dog", 2), ("wolf", 2),  # ibex, llama, zebra (hoofed: the library has none)
    ("turtle", 1),  # armadillo
    ("bird", 1), ("bird", 2), ("bird", 3),  # king penguin, peacock, toucan
    ("lizard", 1), ("frog", 1),  # African crocodile, bullfrog
    ("bird", 4), ("bird", 5),  # dragonfly, sulphur butterfly (insects: the library has none)
    ("turtle", 2),  # snail
    ("airplane", 1), ("airplane", 2),  # airship, space shuttle
    ("bench", 1), ("bicycle", 1), ("boat", 1), ("bottle", 1), ("car", 1), ("chair", 1), ("clock", 1), ("couch", 1),
    ("keyboard", 1), ("knife", 1), ("laptop", 1), ("oven", 1), ("plant", 1), ("truck", 1), ("umbrella", 1),
)
BAKER36_ANIMALS = 19  # the first 19 pairs
# the original's committed defaults draw these datasets white on black (background_color [0, 0, 0]: its drawing
# classes then stroke in white, and 2d_transformations inverts its black-on-white output)
WHITE_ON_BLACK = {"background_color": (0, 0, 0), "ink_color": (255, 255, 255)}
OBJECT_SETS = ("grid", "baker36")


@dataclasses.dataclass(frozen=True)
class ObjectsConfig(MindsetConfig):
    background_color: tuple = field((255, 255, 255), "RGB 0-255 of the fixed background (white, as the "
                                    "original drawings)", range=(0, 255))
    ink_color: tuple = field((0, 0, 0), "RGB 0-255 of the lines / silhouette", range=(0, 255))
    categories: tuple = field(library_categories(), "object categories (default: the 16-class ImageNet names; any "
                              "library category: the 3D-PC's and Baker & Elder's animals too)",
                              choices=library_categories(None))
    instances: int = field(5, "objects per category (library instances 1..n)", range=(1, 100))
    object_set: str = field("grid", "which objects: grid = every category × instances 1..instances; baker36 = the "
                            "fixed 36 (category, instance) pairs standing in for Baker et al.'s 36 drawings "
                            "(categories and instances are then not used)", choices=OBJECT_SETS)
    longest_side: int = field(200, "the object's longest projected side (px)", range=(16, 2048))
    stroke_width: float = field(2.0, "line width of line drawings (px; constant along every line)", range=(0.5, 20.0))
    azimuth_jitter: float = field(0.0, "views: canonical azimuth + uniform ±this (deg; seeded)", range=(0.0, 180.0))
    inclination_jitter: float = field(0.0, "views: canonical inclination + uniform ±this (deg; clipped to "
                                      "[-90, 90])", range=(0.0, 90.0))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("ink_color", self.ink_color)
        if not self.categories:
            raise ConfigError("categories=(): give at least one of " + ", ".join(library_categories(None)))
        if len(set(self.categories)) != len(self.categories):
            raise ConfigError(f"categories={self.categories!r}: a category is listed twice")
        if self.longest_side > self.canvas_size:
            raise ConfigError(f"longest_side={self.longest_side} is out of range [16, canvas_size={self.canvas_size}]: "
                              "the object must fit the canvas")


def object_list(cfg: ObjectsConfig) -> list[tuple[str, int]]:
    """The (category, instance) pairs ``cfg`` draws, in item order."""
    if cfg.object_set == "baker36":
        return list(BAKER36)
    return [(c, i) for c in cfg.categories for i in range(1, cfg.instances + 1)]


def object_params(cfg: ObjectsConfig, category: str, instance: int, seed: int, rng: np.random.Generator | None,
                  azimuth: float | None = None, inclination: float | None = None,
                  longest_side: float | None = None) -> dict:
    """Annotation columns of one object view (see module docstring); the view is the category's canonical
    one (+ seeded jitter) unless ``azimuth``/``inclination`` are given."""
    from scenes.objects import build

    m = build(category, instance, seed)
    az, inc = m.view
    if azimuth is None:
        az += float(rng.uniform(-cfg.azimuth_jitter, cfg.azimuth_jitter)) if cfg.azimuth_jitter else 0.0
    else:
        az = float(azimuth)
    if inclination is None:
        inc += float(rng.uniform(-cfg.inclination_jitter, cfg.inclination_jitter)) if cfg.inclination_jitter else 0.0
    else:
        inc = float(inclination)
    indices = m.imagenet_indices  # the 16-class table's, or the other categories' (some have none: -1)
    return {"class_name": category, "imagenet_index": int(indices[0]) if indices else -1,
            "imagenet_indices": " ".join(map(str, indices)), "instance": int(instance), "object_seed": int(seed),
            "azimuth_deg": round(float(az), 4), "inclination_deg": round(float(np.clip(inc, -90, 90)), 4),
            "longest_side": float(cfg.longest_side if longest_side is None else longest_side),
            "object_params": ";".join(f"{k}={v}" for k, v in m.params.items())}


def object_buffers(cfg: ObjectsConfig, p: dict):
    from render.drawing import View, buffers
    from scenes.objects import build

    m = build(p["class_name"], int(p["instance"]), int(p["object_seed"]))
    view = View(p["azimuth_deg"], p["inclination_deg"], p["longest_side"], (cfg.canvas_size, cfg.canvas_size))
    return buffers(m.mesh, view, SUPERSAMPLE if cfg.antialias else 1)


def object_alpha(cfg: ObjectsConfig, p: dict, kind: str) -> np.ndarray:
    """float32 [H, W] in [0, 1]: ``line`` (line drawing, ``cfg.stroke_width``), ``silhouette`` or
    ``shaded`` (Lambert intensity × coverage). Cached per process (read-only array): the sets that show one
    object several times (segmented halves, global change, 2D transformations) render it once."""
    if kind not in ("line", "silhouette", "shaded"):
        raise ValueError(f"kind={kind!r}; one of line, silhouette, shaded")
    return _alpha(p["class_name"], int(p["instance"]), int(p["object_seed"]), float(p["azimuth_deg"]),
                  float(p["inclination_deg"]), float(p["longest_side"]), kind, float(cfg.stroke_width),
                  int(cfg.canvas_size), bool(cfg.antialias))


@functools.lru_cache(maxsize=32)
def _alpha(category, instance, seed, az, inc, longest, kind, stroke, canvas, antialias) -> np.ndarray:
    from render import drawing
    from scenes.objects import build

    m = build(category, instance, seed)
    b = drawing.buffers(m.mesh, drawing.View(az, inc, longest, (canvas, canvas)), SUPERSAMPLE if antialias else 1)
    out = {"line": lambda: drawing.line_drawing(b, stroke), "silhouette": lambda: drawing.silhouette(b),
           "shaded": lambda: drawing.shaded(b)}[kind]()
    out = out if antialias else (out >= 0.5).astype(np.float32)
    out.flags.writeable = False
    return out


def compose(cfg: ObjectsConfig, p: dict, alpha: np.ndarray) -> np.ndarray:
    """uint8 [H, W, 3]: ``ink_color`` over the item's background with per-pixel coverage ``alpha``."""
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    paint_coverage(img, np.asarray(alpha, np.float32), (0, 0), cfg.ink_color)
    return to_uint8(img)
