"""One registry type for every extension point (generators, evaluation methods, eval commands, model sources,
dataset layouts, VLM providers, scene formats, human-data readers, classifier heads, object categories ...).

A :class:`Registry` maps names to the objects that modules register with :meth:`Registry.register` (a plain call
or a decorator). It

* refuses a second definition of a name, naming both (``where`` each was defined); registering the very
  same object again is a no-op;
* lists its names in registration order (iteration, :meth:`Registry.list` with an optional filter on the
  registered object);
* on a miss raises :class:`UnknownName` (a ``KeyError`` *and* a ``ValueError``) whose one-line message has
  "did you mean …" (``difflib``) and the known names;
* behaves as a read-only ``Mapping`` (``reg[name]``, ``name in reg``, ``reg.get``, ``.items()``), so the
  module-level names that were plain dicts (``METHODS``, ``GENERATORS``, ``SOURCES`` …) keep working.

Discovery: ``discover=("pkg.sub",)`` names packages whose submodules (recursively, except names starting with
``_`` and those in ``skip``) register by being imported. Listing imports them all first, so a new extension is
one new module in such a package and no index file changes; a lookup imports only ``home(name)`` (when given)
before falling back to every module, so a run pays for its own module's imports only.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_MISSING = object()


class UnknownName(KeyError, ValueError):
    """A lookup of a name nobody registered (a ``KeyError`` for ``Mapping`` code, a ``ValueError`` for the CLIs'
    user-error boundary); ``str()`` is the one-line message, not ``KeyError``'s quoted repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DuplicateName(ValueError):
    """A second, different definition registered under a name that is taken."""


def suggest(name: str, known: Sequence[str]) -> str:
    """``"did you mean 'x'? "`` for the closest of ``known`` (difflib, cutoff 0.6), else ``""``."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def where(obj: Any) -> str:
    """Where ``obj`` was defined, for messages: ``module.qualname`` of a function or class, else its type's."""
    target = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


def package_modules(packages: Sequence[str], skip: Sequence[str] = ()) -> list[str]:
    """The modules inside ``packages`` (recursively; not names starting with ``_`` nor ending in one of
    ``skip``), sorted. A package not imported yet is found without importing it (its ``__init__`` may be
    costly: ``python -m eval --help`` lists commands without importing the evaluation methods); an imported
    one is walked along its ``__path__`` (which a test may extend)."""
    import importlib.util
    import sys

    names: list[str] = []
    for pkg_name in packages:
        pkg = sys.modules.get(pkg_name)
        if pkg is not None:
            paths = list(getattr(pkg, "__path__", []))
        else:
            spec = importlib.util.find_spec(pkg_name)
            paths = list(spec.submodule_search_locations or []) if spec else []
        for m in pkgutil.walk_packages(paths, prefix=pkg_name + "."):
            parts = m.name[len(pkg_name) + 1:].split(".")
            if any(p.startswith("_") for p in parts) or any(m.name.endswith("." + s) for s in skip):
                continue
            names.append(m.name)
    return sorted(names)


class Registry(Mapping[str, T], Generic[T]):
    """Named extensions of one kind (``kind`` names it in messages, e.g. ``"evaluation method"``).

    ``origin(obj)`` says where a registered object was defined (default :func:`where`); ``discover`` and
    ``skip`` and ``home`` drive discovery (module docstring); ``key`` is the setting a user types the name as
    (e.g. ``"dataset"``), used in messages."""

    def __init__(self, kind: str, *, key: str = "", origin: Callable[[Any], str] = where,
                 discover: Sequence[str] = (), skip: Sequence[str] = (),
                 home: Callable[[str], str | None] | None = None):
        self.kind = kind
        self.key = key
        self._origin = origin
        self.discover = tuple(discover)
        self.skip = set(skip)
        self._home = home
        self._items: dict[str, T] = {}
        self._where: dict[str, str] = {}
        self._discovered = False

    # ----------------------------------------------------------------------------------------- registering
    def register(self, name: str, obj: Any = _MISSING, *, origin: str | None = None):
        """Register ``obj`` as ``name`` and return it; without ``obj``, a decorator doing that. ``origin``
        overrides where the definition is said to be (for objects that are neither functions nor classes)."""
        if obj is _MISSING:
            return lambda o: self.register(name, o, origin=origin)
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name {name!r}: must be a non-empty string")
        here = origin or self._origin(obj)
        if name in self._items and self._items[name] is not obj:
            raise DuplicateName(f"{self.kind} {name!r} is registered twice ({self._where[name]} and {here}); "
                                "give one of them another name")
        self._items[name] = obj
        self._where[name] = here
        return obj

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests that register a temporary extension clean up with this)."""
        self._items.pop(name, None)
        self._where.pop(name, None)

    def copy(self) -> "Registry[T]":
        """An independent registry with the same entries (for tests that register into a scratch copy)."""
        new = Registry(self.kind, key=self.key, origin=self._origin, discover=self.discover, skip=tuple(self.skip),
                       home=self._home)
        new._items, new._where, new._discovered = dict(self._items), dict(self._where), self._discovered
        return new

    def origin_of(self, name: str) -> str:
        """Where the definition registered as ``name`` lives (``module.qualname``)."""
        self[name]
        return self._where[name]

    # ------------------------------------------------------------------------------------------- discovery
    def discover_modules(self) -> list[str]:
        """The modules of the ``discover`` packages (:func:`package_modules`)."""
        return package_modules(self.discover, self.skip)

    def load_all(self) -> None:
        """Import the ``discover`` roots and every module in them, once (their imports register their
        extensions)."""
        if self._discovered:
            return
        for m in [*self.discover, *self.discover_modules()]:
            importlib.import_module(m)
        self._discovered = True

    def loaded(self) -> list[str]:
        """The names registered so far, without discovery (no import)."""
        return list(self._items)

    def refresh(self) -> None:
        """Forget that discovery ran, so the next listing finds modules added since (e.g. by a test)."""
        self._discovered = False

    def _load(self, name: str) -> None:
        if name in self._items or not self.discover:
            return
        module = self._home(name) if self._home else None
        if module is not None:
            importlib.import_module(module)
        if name not in self._items:  # a miss looks again (a module added since the last listing), then errs
            self._discovered = False
            self.load_all()

    # -------------------------------------------------------------------------------------------- reading
    def __getitem__(self, name: str) -> T:
        if isinstance(name, str):
            self._load(name)
            if name in self._items:
                return self._items[name]
        raise UnknownName(self.unknown_message(name))

    def lookup(self, name: str) -> T:
        """``self[name]``: the registered object, or :class:`UnknownName` with "did you mean …"."""
        return self[name]

    def unknown_message(self, name: Any) -> str:
        known = list(self)
        given = f" ({self.key}=)" if self.key else ""
        return (f"unknown {self.kind} {name!r}{given}; {suggest(name, known)}"
                f"known: {', '.join(sorted(known)) if known else '(none registered)'}")

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self._load(name)
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return iter(list(self._items))

    def __len__(self) -> int:
        self.load_all()
        return len(self._items)

    def list(self, where: Callable[[T], bool] | None = None) -> list[str]:  # noqa: A003 - the registry's verb
        """The registered names in registration order, only those whose object satisfies ``where`` if given."""
        return [n for n in self if where is None or where(self._items[n])]

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._items)})"
