"""MindSet viewpoint invariance (``mindset-vision.txt`` C.3), ETH-80-like (Leibe & Schiele, 2003): 8
categories × 10 objects × 41 views on the upper view hemisphere, rendered from the procedural library at
controlled azimuth and inclination (the original clones the ~300 MB ETH-80 at generation time).

Views: inclinations 0, 22.5, 45 and 67.5° (elevation above the horizontal; 90 = from above) × 10 azimuths
every 36°, plus the view from above — 41 directions, as ETH-80's 41 per object. ``min_inclination`` /
``max_inclination`` keep a band (the original's ``inclination_lim``). ETH-80's categories are apple, car,
cow, cup, dog, horse, pear, tomato; the library offers car and dog of those, so the default eight are
car, dog, cat, elephant, bottle, chair, truck and bird (any library categories can be chosen). Images are
shaded (ETH-80 are photographs), silhouettes or line drawings. Condition = category; ``set_id`` = one object
(all its views); ``instance`` numbers the objects within a category.
"""
from __future__ import annotations

import dataclasses


from ..registry import ConfigError, Item, field
from ._objects import ObjectsConfig, compose, library_categories, object_alpha, object_buffers, object_params
from .common import background_params, background_rgb, item_rng, new_canvas, register_mindset, to_uint8

INCLINATIONS = (0.0, 22.5, 45.0, 67.5)
N_AZIMUTHS = 10


def eth80_views() -> list[tuple[float, float]]:
    """The 41 (azimuth_deg, inclination_deg) view directions, in order."""
    return [(36.0 * k, inc) for inc in INCLINATIONS for k in range(N_AZIMUTHS)] + [(0.0, 90.0)]


@dataclasses.dataclass(frozen=True)
class ViewpointConfig(ObjectsConfig):
    categories: tuple = field(("car", "dog", "cat", "elephant", "bottle", "chair", "truck", "bird"),
                              "object categories", choices=library_categories(None))
    instances: int = field(10, "objects per category", range=(1, 100))
    drawing: str = field("shaded", "how objects are drawn", choices=("shaded", "silhouette", "line"))
    min_inclination: float = field(0.0, "lowest view inclination kept (deg)", range=(0.0, 90.0))
    max_inclination: float = field(90.0, "highest view inclination kept (deg)", range=(0.0, 90.0))

    def __post_init__(self):
        super().__post_init__()
        if self.min_inclination > self.max_inclination:
            raise ConfigError(f"min_inclination={self.min_inclination} must be <= max_inclination={self.max_inclination}")
        if not views(self):
            raise ConfigError(f"inclinations [{self.min_inclination}, {self.max_inclination}] keep none of the "
                              f"view inclinations {INCLINATIONS + (90.0,)}")


def views(cfg: ViewpointConfig) -> list[tuple[float, float]]:
    return [(a, i) for a, i in eth80_views() if cfg.min_inclination <= i <= cfg.max_inclination]


def _items(cfg: ViewpointConfig, seed: int):
    for c in cfg.categories:
        for i in range(1, cfg.instances + 1):
            rng = item_rng(seed, c, i)
            bg = background_params(cfg, rng)
            for k, (az, inc) in enumerate(views(cfg)):
                p = {**object_params(cfg, c, i, seed, None, azimuth=az, inclination=inc), "view_index": k,
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


register_mindset("viewpoint_invariance", ViewpointConfig, "ETH-80-like views: categories × objects × 41 view "
                 "directions on the upper hemisphere", "mindset-vision.txt C.3; Leibe & Schiele 2003 (ETH-80)",
                 items=_items, render=_render, conditions=library_categories(None),
                 paper={"instances": 10, "longest_side": 200, "min_inclination": 0.0, "max_inclination": 90.0},
                 lite={"instances": 1, "categories": ("car", "dog"), "min_inclination": 45.0})

