"""2D stimulus generators: one contract (registry.py), one writer (writer.py), one CLI (tasks.generate)."""
from . import distortions, gratings, polygons  # noqa: F401  (register the generators)
from . import mindset  # noqa: F401  (MindSet: Vision datasets, mindset/<name>; issue 13)
from .registry import GENERATORS, ConfigError, Item, describe
from .writer import SkipItem, write_dataset

__all__ = ["GENERATORS", "ConfigError", "Item", "SkipItem", "describe", "write_dataset"]
