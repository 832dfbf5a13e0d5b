"""MindSet viewpoint invariance (``mindset-vision.txt`` C.3), ETH-80-like (Leibe & Schiele, 2003): 8
categories × 10 objects × ETH-80's 41 views on the upper view hemisphere, rendered from the procedural library
at those azimuths and inclinations (the original clones the ~300 MB ETH-80 at generation time).

Views (:func:`eth80_views`): ETH-80's 41 directions as its file names give them (``<name>-<inclination>-
<azimuth>.png``, both whole degrees, inclination measured from straight above): 0 (1 view), 22 (4: azimuth 0,
90, 180, 270), 35 (4: 45, 135, 225, 315), 45 (4: 0-270 every 90), 66 (8: 27, 63, 117, 153, 207, 243, 297,
333), 68 (4: 0-270 every 90) and 90 (16: 0, 22, 45, 68, 90, 112, 135, 158, 180, 202, 225, 248, 270, 292, 315,
338), read from the file list of the ETH-80 copy the original clones (github.com/chenchkx/ETH-80). Vantage's
``inclination_deg`` is the elevation above the horizontal (90 = from above), so ETH-80's inclination i is
drawn at ``inclination_deg = 90 − i``; both are recorded (``eth80_inclination``, ``eth80_azimuth``).
``min_inclination`` / ``max_inclination`` keep a band of elevations; the original's ``inclination_lim = [30,
90]`` (ETH-80's convention) keeps the 36 views of elevation 0-60 (it drops the top view and the four at 22),
which is ``paper``: 8 × 10 × 36 = 2,880 images, the original's count; preset ``all_views`` keeps all 41.
ETH-80's categories are apple, car, cow, cup, dog, horse, pear, tomato; the library offers car and dog of
those, so the default eight are car, dog, cat, elephant, bottle, chair, truck and bird (any library categories
can be chosen). Images are shaded (ETH-80 are photographs), silhouettes or line drawings. Condition =
category; ``set_id`` = one object (all its views); ``instance`` numbers the objects within a category.
"""
from __future__ import annotations

import dataclasses


from ..registry import ConfigError, Item, field
from ._objects import (ObjectsConfig, compose, library_categories, object_alpha, object_buffers, object_list,
                       object_params)
from .common import background_params, background_rgb, item_rng, new_canvas, register_mindset, to_uint8

# ETH-80's (inclination from above, azimuths) as in its file names (module docstring)
ETH80_RINGS = ((0, (0,)), (22, (0, 90, 180, 270)), (35, (45, 135, 225, 315)), (45, (0, 90, 180, 270)),
               (66, (27, 63, 117, 153, 207, 243, 297, 333)), (68, (0, 90, 180, 270)),
               (90, (0, 22, 45, 68, 90, 112, 135, 158, 180, 202, 225, 248, 270, 292, 315, 338)))
INCLINATIONS = tuple(90.0 - i for i, _ in ETH80_RINGS)  # Vantage's elevations of the rings


def eth80_views() -> list[tuple[float, float]]:
    """The 41 (azimuth_deg, inclination_deg) view directions in Vantage's convention (inclination = elevation
    above the horizontal = 90 − ETH-80's inclination), in ETH-80's file-name order."""
    return [(float(a), 90.0 - i) for i, azs in ETH80_RINGS for a in azs]


@dataclasses.dataclass(frozen=True)
class ViewpointConfig(ObjectsConfig):
    categories: tuple = field(("car", "dog", "cat", "elephant", "bottle", "chair", "truck", "bird"),
                              "object categories", choices=library_categories(None))
    instances: int = field(10, "objects per category", range=(1, 100))
    drawing: str = field("shaded", "how objects are drawn", choices=("shaded", "silhouette", "line"))
    min_inclination: float = field(0.0, "lowest view inclination kept (deg above the horizontal; ETH-80 90 − this)",
                                   range=(0.0, 90.0))
    max_inclination: float = field(90.0, "highest view inclination kept (deg above the horizontal; the original's "
                                   "inclination_lim [30, 90] = 0-60 here)", range=(0.0, 90.0))

    def __post_init__(self):
        super().__post_init__()
        if self.min_inclination > self.max_inclination:
            raise ConfigError(f"min_inclination={self.min_inclination} must be <= max_inclination={self.max_inclination}")
        if not views(self):
            raise ConfigError(f"inclinations [{self.min_inclination}, {self.max_inclination}] keep none of the "
                              f"view inclinations {INCLINATIONS}")


def views(cfg: ViewpointConfig) -> list[tuple[float, float]]:
    return [(a, i) for a, i in eth80_views() if cfg.min_inclination <= i <= cfg.max_inclination]


def _items(cfg: ViewpointConfig, seed: int):
    for c, i in object_list(cfg):
        rng = item_rng(seed, c, i)
        bg = background_params(cfg, rng)
        for k, (az, inc) in enumerate(views(cfg)):
            p = {**object_params(cfg, c, i, seed, None, azimuth=az, inclination=inc), "view_index": k,
                 "eth80_inclination": int(round(90 - inc)), "eth80_azimuth": int(round(az)),
                 "drawing": cfg.drawing, **bg}
            yield Item(c, f"{c}_{i:02d}_az{az:05.1f}_inc{inc:04.1f}".replace(".", "p"), p, set_id=f"{c}_{i:02d}")


def _render(cfg: ViewpointConfig, item):
    p = item.params
    if p["drawing"] != "shaded":
        return compose(cfg, p, object_alpha(cfg, p, p["drawing"])), {}
    from render.drawing import shaded, silhouette

    b = object_buffers(cfg, p)
    cov, shade = silhouette(b), shaded(b)
    img = new_canvas(cfg.canvas_size, background_rgb(p))
    # shade is premultiplied by coverage (sub-pixel average with 0 outside): bg·(1 − cov) + 255·shade
    img = img * (1 - cov[..., None]) + 255.0 * shade[..., None]
    return to_uint8(img), {}


register_mindset("viewpoint_invariance", ViewpointConfig, "ETH-80-like views: categories × objects × ETH-80's 41 "
                 "view directions on the upper hemisphere (paper: the original's 36, inclination_lim [30, 90])",
                 "mindset-vision.txt C.3; Leibe & Schiele 2003 (ETH-80)",
                 items=_items, render=_render, conditions=library_categories(None),
                 paper={"instances": 10, "longest_side": 200, "min_inclination": 0.0, "max_inclination": 60.0,
                        "background_color": (0, 0, 0)},  # the original pastes ETH-80's objects on black
                 lite={"instances": 1, "categories": ("car", "dog"), "min_inclination": 45.0},
                 presets={"all_views": {"instances": 10, "longest_side": 200, "min_inclination": 0.0,
                                        "max_inclination": 90.0, "background_color": (0, 0, 0)}})

