"""The evaluation methods that exist: the built-in ones (imported here, so they register) and any registered
since. The registry itself (``METHODS``, ``register_method``, the ``Method`` contract) is in
:mod:`eval.runner`; this module sits above the methods, so nothing below imports it and there is no cycle."""
from __future__ import annotations

from . import finetune, probe  # noqa: F401  (the built-in methods register themselves on import)
from . import ood  # noqa: F401  (issue 15)
from . import diffusion, vlm  # noqa: F401  (zero-shot methods, issue 16)
from .runner import METHODS, Method


def get_method(name: str) -> type[Method]:
    """The method registered as ``name``; an unknown name is an error listing the registered methods."""
    if name not in METHODS:
        raise ValueError(f"method={name!r}: no such evaluation method; registered: {', '.join(sorted(METHODS))}")
    return METHODS[name]
