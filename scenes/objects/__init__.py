"""The procedural object library: recognisable 3D objects, each instance a trimesh model built from seeded
parameters. Groups of categories (:data:`GROUPS`): the 16-class ImageNet categories (Geirhos et al., 2018),
the 3D-PC's 10 (Linsley et al., 2024; car and chair are also in the 16) and Baker & Elder's (2022) nine
animals (bear, cat and elephant are also in the 16).

``build(category, instance, seed=0)`` returns an :class:`ObjectModel`: its named parts (closed meshes with
outward normals), the parameters drawn for it (every number that shapes it, recorded so a dataset row can
carry them), its ImageNet class indices and the category's canonical view. Instances are a deterministic
function of (category, instance, seed); instance numbers start at 1. Conventions are those of
:mod:`scenes.objects.shapes` (+z up, standing on z = 0, +x the object's front). The pixels come from
:mod:`render.drawing` (line drawing, silhouette, shaded; any azimuth and inclination).

Builders live in ``animals.py``, ``vehicles.py``, ``household.py`` and ``furniture.py`` and register
themselves with :func:`category`. ImageNet indices: ``imagenet.json`` beside this file, the versioned
16-class ImageNet table (the one copy: ``tasks.imagenet16`` reads its ``categories`` from here, since tasks
may import scenes but not the reverse) and, under ``other_categories``, the ILSVRC-2012 classes of the
other categories (empty where ImageNet-1k has none: hydrant, motorcycle, suitcase).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from infra.registry import Registry, where

if TYPE_CHECKING:  # imported where used: importing it costs ~0.5-1 s, and naming categories needs none
    import trimesh

N_INSTANCES = 5  # instances per category the library promises (more can be built: any instance >= 1)

# the category groups, named without loading the builders (tests/test_objects.py checks them against the
# registered categories); "imagenet16" is imagenet.json's table
THREEDPC = ("bench", "car", "chair", "couch", "hydrant", "laptop", "motorcycle", "plant", "suitcase", "umbrella")
BAKER2022 = ("bear", "bunny", "cat", "elephant", "frog", "lizard", "tiger", "turtle", "wolf")


class ObjectError(ValueError):
    pass


class Params:
    """Draws a builder's parameters from its rng and records each by name (for the annotation tables)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.values: dict[str, float | int | str] = {}

    def uniform(self, name: str, lo: float, hi: float) -> float:
        v = round(float(self.rng.uniform(lo, hi)), 4)
        self.values[name] = v
        return v

    def integer(self, name: str, lo: int, hi: int) -> int:
        """A whole number in [lo, hi] (both included)."""
        v = int(self.rng.integers(lo, hi + 1))
        self.values[name] = v
        return v

    def choice(self, name: str, options):
        v = options[int(self.rng.integers(len(options)))]
        self.values[name] = v
        return v


@dataclasses.dataclass(frozen=True)
class Category:
    name: str
    builder: Callable[[Params], list[tuple[str, trimesh.Trimesh]]]
    view: tuple[float, float]  # canonical (azimuth_deg, inclination_deg): the view a drawing of it would use
    description: str


@dataclasses.dataclass(frozen=True)
class ObjectModel:
    """One instance: named closed meshes (model units, +z up, front +x), its drawn parameters, its labels."""

    category: str
    instance: int
    seed: int
    parts: tuple[tuple[str, trimesh.Trimesh], ...]
    params: dict
    imagenet_indices: tuple[int, ...]
    view: tuple[float, float]

    @functools.cached_property
    def mesh(self) -> trimesh.Trimesh:
        """All parts in one mesh (faces in part order; :attr:`face_part` maps a face to its part)."""
        import trimesh

        return trimesh.util.concatenate([m for _, m in self.parts])

    @functools.cached_property
    def face_part(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.parts)), [len(m.faces) for _, m in self.parts])

    @property
    def name(self) -> str:
        return f"{self.category}_{self.instance:02d}"


# filled by the builder modules of this package (discovered: a new category module needs no import line here)
CATEGORIES: Registry[Category] = Registry("object category", key="category", origin=lambda c: where(c.builder),
                                          discover=("scenes.objects",))


def category(name: str, view: tuple[float, float], description: str):
    """Register ``builder(params) -> [(part name, mesh), ...]`` as category ``name`` (in a builder module)."""
    def deco(fn):
        CATEGORIES.register(name, Category(name, fn, (float(view[0]), float(view[1])), description))
        return fn

    return deco


@functools.cache
def _imagenet_json() -> dict:
    return json.loads((Path(__file__).with_name("imagenet.json")).read_text())


@functools.cache
def imagenet_table(group: str = "imagenet16") -> dict[str, tuple[int, ...]]:
    """Category -> ILSVRC-2012 class indices: the 16-class mapping of Geirhos et al. (2018) by default,
    ``"all"`` adds the other categories' classes (some empty)."""
    data = _imagenet_json()
    table = dict(data["categories"])
    if group == "all":
        table.update(data["other_categories"])
    elif group != "imagenet16":
        raise ObjectError(f"imagenet_table group={group!r}: one of imagenet16, all")
    return {k: tuple(int(i) for i in v) for k, v in table.items()}


GROUPS = ("imagenet16", "3dpc", "baker2022")


def categories() -> list[str]:
    """Every registered category, sorted."""
    _load()
    return sorted(CATEGORIES)


def canonical_view(category: str) -> tuple[float, float]:
    """The category's canonical (azimuth_deg, inclination_deg)."""
    _load()
    if category not in CATEGORIES:
        raise ObjectError(f"object category {category!r} unknown; available: {', '.join(sorted(CATEGORIES))}")
    return CATEGORIES[category].view


def category_names(group: str | None = None) -> list[str]:
    """Sorted category names of ``group`` (one of :data:`GROUPS`; None: every category) without loading
    the builders (nor trimesh, ~0.5-1 s), for the 2D generators' configs, which name categories at import
    time. tests/test_objects.py checks that every category is in a group and the groups are registered."""
    groups = {"imagenet16": tuple(imagenet_table()), "3dpc": THREEDPC, "baker2022": BAKER2022}
    if group is None:
        return sorted(set().union(*groups.values()))
    if group not in groups:
        raise ObjectError(f"category group {group!r} unknown; one of {', '.join(GROUPS)}")
    return sorted(groups[group])


def build(category: str, instance: int, seed: int = 0) -> ObjectModel:
    """Instance ``instance`` (>= 1) of ``category``, deterministic in (category, instance, seed)."""
    _load()
    if category not in CATEGORIES:
        raise ObjectError(f"object category {category!r} unknown; available: {', '.join(sorted(CATEGORIES))}")
    for key, v, lo in (("instance", instance, 1), ("seed", seed, 0)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
            raise ObjectError(f"object {category}: {key}={v!r} must be a whole number >= {lo}")
    return _build(category, int(instance), int(seed))


@functools.lru_cache(maxsize=256)
def _build(category: str, instance: int, seed: int) -> ObjectModel:
    import trimesh

    cat = CATEGORIES[category]
    # crc32, not hash(): stable across processes, so a category's instances do not depend on PYTHONHASHSEED
    rng = np.random.default_rng([seed, zlib.crc32(category.encode()), instance])
    p = Params(rng)
    parts = cat.builder(p)
    for part_name, m in parts:
        if not isinstance(m, trimesh.Trimesh) or len(m.faces) == 0:
            raise ObjectError(f"object {category}_{instance:02d}: part {part_name!r} is empty")
    return ObjectModel(category, instance, seed, tuple(parts), dict(p.values),
                       imagenet_table("all").get(category, ()), cat.view)


def _load() -> None:
    CATEGORIES.load_all()  # imports every module of this package (the builders register their categories)
