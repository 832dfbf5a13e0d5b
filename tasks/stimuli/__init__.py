"""2D stimulus generators: one contract (registry.py), one writer (writer.py), one CLI (tasks.generate).

The generator modules (distortions, gratings, polygons, mindset/) register themselves when imported; the
registry imports them on demand (a name's own module when it is looked up, all of them when it is listed),
so a run pays for its own generator's imports only."""
from .registry import GENERATORS, ConfigError, Item, describe
from .writer import SkipItem, write_dataset

__all__ = ["GENERATORS", "ConfigError", "Item", "SkipItem", "describe", "write_dataset"]
