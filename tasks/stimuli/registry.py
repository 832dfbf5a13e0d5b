"""The 2D stimulus-generator contract and registry.

A generator is one :class:`Generator` registered with :func:`register` by the module that defines it
(a plain call after its ``render``, so both halves are named explicitly; nothing is looked up by module
name later). It provides

* ``Config`` — a frozen dataclass: every parameter with a default; units and allowed values in the
  field metadata (``help``, ``choices``, ``range``); :func:`validate_config` enforces them;
* ``items(config, seed)`` — a deterministic iterator of :class:`Item` specifications (cheap: no pixels);
* ``render(config, item)`` — the pixels of one item (uint8 [H, W] or [H, W, 3]) and its extra columns;
* ``random`` — whether its images depend on the dataset seed (every random draw must flow from the seed
  passed to ``items``; tests/test_stimuli.py checks every registered generator both ways);
* ``test_params`` — a small configuration that exercises the random parts (used by that test);
* ``presets`` — named parameter sets (``preset=paper``), applied before the user's parameters;
* ``png_deflate`` — how the writer deflates its PNGs: "default", or "rle" for binary line drawings
  (``infra.images.DEFLATE_MODES``; recorded in the manifest).

:data:`GENERATORS` imports a generator's module when its name is first looked up (:data:`HOMES`), and
every module of the ``tasks.stimuli`` package (discovery) when the registry is listed: a new generator is one
new module in ``tasks/stimuli/`` (or ``tasks/stimuli/mindset/``) and no other file changes.

Splitting "what to make" (items) from "making it" (render) lets the shared writer shard the work over
processes, resume, and stay byte-identical whatever the worker count.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from infra.registry import Registry, suggest

from infra.schema import ConfigError, field, validate_config  # noqa: F401  (re-exported: the generators' one schema)


@dataclasses.dataclass(frozen=True)
class Item:
    """One image to make: where it goes and what describes it.

    ``condition`` names the folder (e.g. ``corners_p0.30``); ``item_id`` is unique within the dataset;
    ``set_id`` links images made from the same base item (e.g. corner/edge pairs); ``params`` are the
    generator's own per-item parameters (become table columns).
    """

    condition: str
    item_id: str
    params: dict[str, Any]
    set_id: str = ""


@dataclasses.dataclass(frozen=True)
class Generator:
    name: str
    Config: type
    items: Callable[[Any, int], Iterator[Item]]
    render: Callable[[Any, Item], tuple[Any, dict]]
    description: str = ""
    reference: str = ""
    random: bool = True
    test_params: dict = dataclasses.field(default_factory=dict)
    presets: dict = dataclasses.field(default_factory=dict)
    png_deflate: str = "default"

    @property
    def module(self) -> str:
        """The module that defines the generator (the writer's fork-server workers preload it)."""
        return self.render.__module__


# Where each generator is registered, so a run imports only its own generator's module (importing all of
# them, MindSet's ~30 included, took ~0.15 s of every run's serial start-up). A name missing here still works:
# the registry then imports every module of this package (discovery), so a new generator is one new module
# here (or in mindset/) and this table is only a speed-up; tests/test_stimuli.py checks it against them.
HOMES = {"image_distortions": "tasks.stimuli.distortions", "abutting_digits": "tasks.stimuli.gratings",
         "abutting_silhouettes": "tasks.stimuli.gratings", "degraded_polygons": "tasks.stimuli.polygons"}
PREFIX_HOMES = {"mindset/": "tasks.stimuli.mindset"}  # that package imports all of its dataset modules
# modules of tasks.stimuli that are not generators (discovery skips them; names starting with _ are skipped too)
NOT_GENERATORS = ("registry", "writer", "eidolon", "mindset.common")


def home(name: str) -> str | None:
    """The module that registers generator ``name`` (None: not in the table)."""
    if name in HOMES:
        return HOMES[name]
    return next((m for prefix, m in PREFIX_HOMES.items() if name.startswith(prefix)), None)


#: The registered generators by name (an :class:`infra.registry.Registry`: a read-only mapping). Looking one
#: name up imports its module only (:func:`home`); listing them imports every module of ``tasks.stimuli``
#: first (discovery), so a listing is always complete.
GENERATORS: Registry[Generator] = Registry("dataset", key="dataset", origin=lambda g: g.items.__module__,
                                           discover=("tasks.stimuli",), skip=NOT_GENERATORS, home=home)


def _modules() -> list[str]:
    """Every generator module (discovered), for the table test."""
    return GENERATORS.discover_modules()


def register(name: str, Config: type, description: str, reference: str = "", *,
             items: Callable[[Any, int], Iterator[Item]], render: Callable[[Any, Item], tuple[Any, dict]],
             random: bool = True, test_params: dict | None = None, presets: dict | None = None,
             png_deflate: str = "default") -> Generator:
    """Register generator ``name`` with its ``items`` and ``render`` functions (called once, in the module
    that defines them, after both). A second registration of one name is an error: two modules would
    otherwise silently replace each other's generator."""
    if home(name) not in (None, items.__module__, items.__module__.rsplit(".", 1)[0]):
        GENERATORS.load(name)  # its own module first: a second registration is caught whichever comes first
    from infra.images import DEFLATE_MODES

    if png_deflate not in DEFLATE_MODES:
        raise ValueError(f"generator {name!r}: png_deflate={png_deflate!r}; one of {', '.join(map(repr, DEFLATE_MODES))}")
    gen = Generator(name, Config, items, render, description, reference, random, dict(test_params or {}),
                    dict(presets or {}), png_deflate)
    return GENERATORS.register(name, gen)


def get_generator(name: str) -> Generator:
    """The registered generator ``name``; an unknown name is an error with "did you mean" and the registered ones."""
    if not isinstance(name, str) or name not in GENERATORS:
        raise ConfigError(GENERATORS.unknown_message(name))
    return GENERATORS[name]


def make_config(gen: Generator, params: dict[str, Any]):
    """Build a generator's config from user parameters (unknown keys are an error listing the known ones)."""
    params = dict(params)
    preset = params.pop("preset", None)
    if preset is not None:  # a preset's values first, the user's parameters override them
        if preset not in gen.presets:
            raise ConfigError(f"dataset {gen.name!r}: preset={preset!r} unknown; available: "
                              f"{', '.join(gen.presets) or '(none)'}")
        params = {**gen.presets[preset], **params}
    known = {f.name: f for f in dataclasses.fields(gen.Config)}
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(f"dataset {gen.name!r}: unknown parameter(s) {unknown}; {suggest(unknown[0], list(known))}"
                          f"known: {', '.join(known)} (python -m tasks.generate dataset={gen.name} --help)")
    coerced = {}
    for k, v in params.items():
        default = known[k].default if known[k].default is not dataclasses.MISSING else known[k].default_factory()
        if isinstance(default, tuple) and isinstance(v, list):
            v = tuple(v)
        elif isinstance(default, float) and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        elif default is not None and not isinstance(v, type(default)) and not (isinstance(default, tuple)):
            raise ConfigError(f"dataset {gen.name!r}: {k}={v!r} should be a {type(default).__name__} ({known[k].metadata.get('help', '')})")
        coerced[k] = v
    cfg = gen.Config(**coerced)
    validate_config(cfg)
    return cfg


def describe(gen: Generator) -> str:
    lines = [f"{gen.name}: {gen.description}"]
    for pname, pvals in gen.presets.items():
        lines.append(f"    preset={pname}: {', '.join(f'{k}={v!r}' for k, v in pvals.items())}")
    for f in dataclasses.fields(gen.Config):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        extra = ""
        if "choices" in f.metadata:
            extra = f" (one of {', '.join(map(str, f.metadata['choices']))})"
        elif "range" in f.metadata:
            extra = f" (in [{f.metadata['range'][0]}, {f.metadata['range'][1]}])"
        lines.append(f"    {f.name} = {default!r}: {f.metadata.get('help', '')}{extra}")
    return "\n".join(lines)
