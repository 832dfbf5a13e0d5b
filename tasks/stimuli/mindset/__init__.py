"""MindSet: Vision (Biscione et al., 2024) regenerated: one registered generator per dataset, each named
``mindset/<name>`` (``python -m tasks.generate dataset=mindset/weber_law out=<dir> preset=lite``).

``common.py`` holds what they all share (naming, presets, background, drawing, the annotation schema
check). Every other module (and subpackage) here defines datasets and registers them when imported; this
package imports all of them, in sorted order, so a new dataset module needs no import line elsewhere
(several groups — low/mid-level, illusions, shapes — add modules side by side).
"""
from __future__ import annotations

import importlib
import pkgutil

from . import common  # noqa: F401
from .common import MINDSET, dataset_name, register_mindset, schema_problems

__all__ = ["MINDSET", "dataset_name", "register_mindset", "schema_problems"]

for _m in sorted(pkgutil.walk_packages(__path__, prefix=__name__ + "."), key=lambda m: m.name):
    if _m.name.rsplit(".", 1)[-1] != "common" and not _m.name.rsplit(".", 1)[-1].startswith("_"):
        importlib.import_module(_m.name)
