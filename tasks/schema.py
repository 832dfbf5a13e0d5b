"""Declaring and checking settings, once for every configuration in ``tasks`` (2D generators' ``Config``
dataclasses, the 3D-PC build, its label rules and audit gates).

A setting is a dataclass field made with :func:`field`: its default, a help text with units, and the
allowed ``choices`` or closed ``range`` in the field's metadata. :func:`validate_config` checks every field
of an instance against them and raises :class:`ConfigError` naming the field, the value and what is allowed;
the CLIs print that one line (``error: ...``, exit 2). Cross-field rules stay with their dataclass.
"""
from __future__ import annotations

import dataclasses


class ConfigError(ValueError):
    """A setting out of its declared choices or range, or an unknown key (one line for the user)."""


def field(default, help: str, choices=None, range=None, **kw):  # noqa: A002 - mirrors dataclasses.field
    meta = {"help": help}
    if choices is not None:
        meta["choices"] = tuple(choices)
    if range is not None:
        meta["range"] = tuple(range)
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=meta, **kw)
    return dataclasses.field(default=default, metadata=meta, **kw)


def validate_config(cfg) -> None:
    """Check every field's type, choices and range; name the field, the value and what is allowed."""
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        choices, rng = f.metadata.get("choices"), f.metadata.get("range")
        values = v if isinstance(v, (list, tuple)) else [v]
        for x in values:
            if x is None and f.default is None:  # an optional setting left unset
                continue
            if choices is not None and x not in choices:
                raise ConfigError(f"{f.name}={x!r} is not allowed; allowed values: {', '.join(map(str, choices))}")
            if rng is not None and not (rng[0] <= x <= rng[1]):
                raise ConfigError(f"{f.name}={x!r} is out of range [{rng[0]}, {rng[1]}] ({f.metadata.get('help', '')})")


def make_section(cls, values, name: str, hint: str = ""):
    """``cls(**values)`` for the config section ``name`` (e.g. ``rules``): an unknown key or a bad value is a
    :class:`ConfigError` that names the dotted key as the user typed it (``rules.n_rays=0 ...``)."""
    values = dict(values or {})
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"unknown config keys {[f'{name}.{k}' for k in unknown]}; known: {known}{hint}")
    try:
        return cls(**values)
    except ConfigError as e:
        msg = str(e)
        first = msg.split("=", 1)[0]
        raise ConfigError((f"{name}.{msg}" if first in known else f"{name}: {msg}") + hint) from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{name}: {e}{hint}") from None
