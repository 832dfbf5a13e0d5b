"""The evaluation methods that exist: the built-in ones (imported here, so they register) and every module of
this package, found by discovery (``eval.runner.METHODS`` imports them when it is listed or a name is looked
up). A new method is ONE module here: its ``Config`` dataclass (settings declared with
``infra.schema.field``: default, help, choices/range) and its :class:`~eval.runner.Method` class under
``@register_method("<name>", cli="<usage>", uses_model=...)``; ``python -m eval <name> --help`` then lists its
settings, ``python -m eval <name> task=... out=...`` runs it (``eval.cli.method_job``), ranges checked.

The registry itself (``METHODS``, ``register_method``, the ``Method`` contract) is in :mod:`eval.runner`;
this package sits above the methods, so nothing below imports it and there is no cycle."""
from __future__ import annotations

from .. import finetune, probe  # noqa: F401  (the built-in methods register themselves on import)
from .. import ood  # noqa: F401  (issue 15)
from .. import diffusion, vlm  # noqa: F401  (zero-shot methods, issue 16)
from ..runner import METHODS, Method


def get_method(name: str) -> type[Method]:
    """The method registered as ``name``; an unknown name is an error (``ValueError``) with "did you mean"
    and the registered methods."""
    return METHODS[name]
