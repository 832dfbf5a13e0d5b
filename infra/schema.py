"""Declaring and checking settings, once for every configuration (2D generators' ``Config`` dataclasses,
the 3D-PC build, its label rules and audit gates, and the evaluation methods' settings in ``eval``).

A setting is a dataclass field made with :func:`field`: its default, a help text with units, and the
allowed ``choices``, closed ``range`` or other ``check`` (an open interval, a non-empty list) in the field's
metadata. :func:`validate_config` checks every field of an instance against them and raises
:class:`ConfigError` naming the field, the value and what is allowed; the CLIs print that one line
(``error: ...``, exit 2). Cross-field rules stay with their dataclass and raise the same error
(:func:`not_allowed`).

The same dataclasses are the Hydra configs of the command lines that read them: :func:`store_structured`
registers one as a config group's ``default`` (a structured config), so the YAML that composes it names the
group and holds no copy of the defaults, and OmegaConf checks an override's type when it is given.
"""
from __future__ import annotations

import dataclasses
import numbers
import re


class ConfigError(ValueError):
    """A setting out of its declared choices or range, or an unknown key (one line for the user)."""


def field(default, help: str, choices=None, range=None, check=None, **kw):  # noqa: A002 - mirrors dataclasses.field
    """A declared setting. ``choices``: the allowed values (of each item of a list); ``range``: closed
    ``(low, high)`` (of each item); ``check``: ``(predicate, allowed)`` for any other rule on the whole value,
    e.g. ``(lambda v: 0 <= v < 1, "in [0, 1)")`` -> ``dropout=1.5 is not allowed (in [0, 1))``."""
    meta = {"help": help}
    if choices is not None:
        meta["choices"] = tuple(choices)
    if range is not None:
        meta["range"] = tuple(range)
    if check is not None:
        meta["check"] = check
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=meta, **kw)
    return dataclasses.field(default=default, metadata=meta, **kw)


_KINDS = {  # annotation -> (test, what the value must be)
    "int": (lambda x: isinstance(x, numbers.Integral) and not isinstance(x, bool), "a whole number"),
    "float": (lambda x: isinstance(x, numbers.Real) and not isinstance(x, bool), "a number"),
    "bool": (lambda x: isinstance(x, bool), "true or false"),
    "str": (lambda x: isinstance(x, str), "text"),
    "dict": (lambda x: isinstance(x, dict), "a mapping {key: value, ...}"),
}


def _annotation(f) -> tuple[str, int | None, bool]:
    """(item type, number of items or None, optional) of a field's annotation: ``float`` -> ("float", None,
    False); ``tuple[float, float, float]`` -> ("float", 3, False); ``tuple[str, ...] | None`` -> ("str", -1,
    True). Unknown forms give an empty item type (not checked)."""
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    parts = [p.strip() for p in t.split("|")]
    optional = "None" in parts
    parts = [p for p in parts if p != "None"]
    if len(parts) != 1:
        return "", None, optional
    m = re.fullmatch(r"(?:tuple|list)\[(.*)\]", parts[0])
    if not m:
        return parts[0], None, optional
    items = [i.strip() for i in m.group(1).split(",")]
    if parts[0].startswith("list") or items[-1] == "...":
        return items[0], -1, optional
    return (items[0], len(items), optional) if len(set(items)) == 1 else ("", None, optional)


def validate_config(cfg) -> None:
    """Check every field declared with :func:`field`: its type (from the annotation: int, float, bool, str,
    tuples and lists of them, optional), number of items (``tuple[float, float, float]``), choices and range;
    name the field, the value and what is allowed."""
    for f in dataclasses.fields(cfg):
        if "help" not in f.metadata:  # not declared with field() (e.g. a nested section, a required path)
            continue
        v = getattr(cfg, f.name)
        choices, rng = f.metadata.get("choices"), f.metadata.get("range")
        kind, count, optional = _annotation(f)
        if v is None and (optional or f.default is None):  # an optional setting left unset
            continue
        if count is not None:
            if not isinstance(v, (list, tuple)):
                raise ConfigError(f"{f.name}={v!r} must be a list ({f.metadata.get('help', '')})")
            if count >= 0 and len(v) != count:
                raise ConfigError(f"{f.name}={v!r} must have {count} values ({f.metadata.get('help', '')})")
        values = v if isinstance(v, (list, tuple)) else [v]
        for x in values:
            if x is None and f.default is None:  # an optional setting left unset
                continue
            if kind in _KINDS and not _KINDS[kind][0](x):
                raise ConfigError(f"{f.name}={x!r} must be {_KINDS[kind][1]} ({f.metadata.get('help', '')})")
            if choices is not None and x not in choices:
                raise ConfigError(f"{f.name}={x!r} is not allowed; allowed values: {', '.join(map(str, choices))}")
            if rng is not None and not (rng[0] <= x <= rng[1]):
                raise ConfigError(f"{f.name}={x!r} is out of range [{rng[0]}, {rng[1]}] ({f.metadata.get('help', '')})")
        check = f.metadata.get("check")
        if check is not None and not check[0](v):
            raise not_allowed(f.name, v, check[1])


def above(low):
    """``check`` of a number > ``low``."""
    return (lambda v: v > low, f"> {low}")


def at_least(low):
    """``check`` of a number >= ``low``."""
    return (lambda v: v >= low, f">= {low}")


def between(low, high, ends: str = "[]"):
    """``check`` of a number in an interval whose ``ends`` are ``[`` / ``(`` and ``]`` / ``)``, e.g.
    ``between(0, 1, "[)")`` -> ``in [0, 1)``."""
    lo_ok = (lambda v: v >= low) if ends[0] == "[" else (lambda v: v > low)
    hi_ok = (lambda v: v <= high) if ends[1] == "]" else (lambda v: v < high)
    return (lambda v: lo_ok(v) and hi_ok(v), f"in {ends[0]}{low}, {high}{ends[1]}")


def non_empty(allowed: str):
    """``check`` of a list with at least one item (``allowed`` says what, e.g. "at least one seed")."""
    return (lambda v: len(v) >= 1, allowed)


def not_allowed(name: str, value, allowed: str) -> ConfigError:
    """The error of a setting that breaks a ``check`` or a rule between fields: ``name=value is not allowed
    (allowed)``."""
    return ConfigError(f"{name}={value!r} is not allowed ({allowed})")


def make_section(cls, values, name: str, hint: str = ""):
    """``cls(**values)`` for the config section ``name`` (e.g. ``rules``), checked with :func:`validate_config`:
    an unknown key or a bad value is a :class:`ConfigError` that names the dotted key as the user typed it
    (``rules.n_rays=0 ...``)."""
    values = dict(values or {})
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"unknown config keys {[f'{name}.{k}' for k in unknown]}; known: {known}{hint}")
    try:
        obj = cls(**values)
    except ConfigError as e:
        raise _in_section(e, cls, name, hint) from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{name}: {e}{hint}") from None
    validate_section(obj, name, hint)  # also for a dataclass that does not check itself (PropStyle)
    return obj


def validate_section(obj, name: str, hint: str = "") -> None:
    """:func:`validate_config` of the config section ``name``, its errors naming the dotted key."""
    try:
        validate_config(obj)
    except ConfigError as e:
        raise _in_section(e, type(obj), name, hint) from None


def _in_section(e: ConfigError, cls, name: str, hint: str) -> ConfigError:
    msg = str(e)
    if msg.startswith(name + "."):  # named in full already (a dataclass that validates itself)
        return ConfigError(msg + hint)
    first = msg.split("=", 1)[0]
    known = [f.name for f in dataclasses.fields(cls)]
    return ConfigError((f"{name}.{msg}" if first in known else f"{name}: {msg}") + hint)


def store_structured(group: str, cls, name: str = "default", required: tuple[str, ...] = ()) -> None:
    """Register dataclass ``cls`` as the Hydra config ``<group>/<name>``: its fields' types and defaults are
    the config (``defaults: [/<group>@<key>: <name>]`` composes it). ``required``: fields the command line
    must set (``???`` in the node; a ``???`` in YAML would not override a default when merged). A frozen
    dataclass gives a read-only node in OmegaConf; the node is made writable so that the command line can
    override it."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    node = OmegaConf.structured(_loose_mappings(cls))
    OmegaConf.set_readonly(node, False)
    for key in required:
        node[key] = "???"
    ConfigStore.instance().store(group=group, name=name, node=node)


def _loose_mappings(cls):
    """``cls``, or a copy whose optional mapping fields that default to None (``prompts: dict | None = None``)
    are typed ``Any`` for OmegaConf. A typed null mapping node cannot take a command-line mapping: Hydra merges
    ``key={a: 1}`` into the node and OmegaConf 2.3 fails inside that merge (``'NoneType' object has no attribute
    'get'``), so ``diffusion.prompts={a: ..., b: ...}`` never reached the program. An ``Any`` node is assigned
    instead; the value's type is then checked by :func:`validate_config` (``dict`` is one of its kinds)."""
    import typing

    hints = typing.get_type_hints(cls)

    def optional_mapping(t) -> bool:
        args = typing.get_args(t)
        return type(None) in args and any(a is dict or typing.get_origin(a) is dict for a in args)

    loose = {f.name for f in dataclasses.fields(cls) if f.default is None and optional_mapping(hints[f.name])}
    if not loose:
        return cls
    return dataclasses.make_dataclass(cls.__name__, [
        (f.name, typing.Any if f.name in loose else hints[f.name],
         dataclasses.field(default=f.default, default_factory=f.default_factory, metadata=f.metadata))
        for f in dataclasses.fields(cls)])
