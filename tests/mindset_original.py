"""Run the original MindSet: Vision generators (``../shared/reference/mindset-original``, MIT; read-only) as an
oracle for the ``paper`` presets: their own ``generate_all`` with their own sampling code, into a temporary
folder, seeded through ``random`` and ``numpy.random`` (the original has no seed of its own).

The reference copy holds the generators and ``src/utils/drawing_utils.py`` but not ``src/utils/misc.py`` (which
imports torch, torchvision, matplotlib and a logging service). The few names the generators take from it are
supplied here, written from what the original does: its shared defaults (224 px canvas, black background,
antialiasing on), ``apply_antialiasing`` = a Gaussian blur of radius 0.00334 × the image's shorter side (Pillow
``GaussianBlur``), and a folder reset. ``sty`` and ``toml`` (printing colours, writing ``config.toml``) are
stand-ins when not installed, and so is ``torchvision.transforms`` when torch is not already imported (Weber
imports it and never uses it). The generators' drawing needs Pillow and numpy; ``drawing_utils`` imports OpenCV
(the ``bench`` extra), so :func:`original_available` is False without it and the oracle tests skip with the reason.
"""
from __future__ import annotations

import contextlib
import importlib
import random
import shutil
import sys
import types
from pathlib import Path

import numpy as np

from shared_data import shared_data

SCRIPTS = {  # dataset -> the original's module under src/generate_datasets
    "ebbinghaus": "visual_illusions.ebbinghaus_illusion.generate_dataset",
    "muller_lyer": "visual_illusions.muller_lyer_illusion.generate_dataset",
    "weber_law": "low_mid_level_vision.weber_law.generate_dataset",
}


def original_root() -> Path:
    """The folder holding the original's ``src/`` (the shared reference copy)."""
    return shared_data().parent / "reference" / "mindset-original"


def original_available() -> tuple[bool, str]:
    """(True, "") when the original can run here, else (False, why)."""
    if not (original_root() / "src" / "utils" / "drawing_utils.py").is_file():
        return False, f"the original MindSet scripts are not at {original_root()} (shared reference copy absent)"
    try:
        import cv2  # noqa: F401
    except ImportError:
        return False, "OpenCV (cv2, extra 'bench') is not installed: the original's drawing_utils imports it"
    return True, ""


def _blur(img, amount=None):
    from PIL import ImageFilter

    return img.filter(ImageFilter.GaussianBlur(radius=min(img.size) * 0.00334 if amount is None else amount))


def _reset(path):
    path = Path(path)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)


def _misc_module() -> types.ModuleType:
    m = types.ModuleType("src.utils.misc")
    m.DEFAULTS = {"canvas_size": [224, 224], "background_color": [0, 0, 0], "antialiasing": True,
                  "behaviour_if_present": "overwrite"}
    m.add_general_args = lambda parser: None
    m.apply_antialiasing = _blur
    m.delete_and_recreate_path = _reset
    return m


@contextlib.contextmanager
def _original_modules(root: Path):
    """``src`` (the original's package root), its ``misc`` and the stand-ins described in the module docstring in
    ``sys.modules`` for the duration; they and the original's modules are removed again afterwards."""
    before = set(sys.modules)
    src = types.ModuleType("src")
    src.__path__ = [str(root / "src")]
    utils = types.ModuleType("src.utils")
    utils.__path__ = [str(root / "src" / "utils")]
    gen = types.ModuleType("src.generate_datasets")
    gen.__path__ = [str(root / "src" / "generate_datasets")]
    add = {"src": src, "src.utils": utils, "src.utils.misc": _misc_module(), "src.generate_datasets": gen}
    if "torchvision" not in sys.modules:  # Weber imports torchvision's transforms and never uses them; importing
        # torch for that would cost seconds
        tv = types.ModuleType("torchvision")
        tv.__path__ = []
        tr = types.ModuleType("torchvision.transforms")
        tr.transforms, tr.InterpolationMode = types.SimpleNamespace(), types.SimpleNamespace()
        tv.transforms = tr
        add.update({"torchvision": tv, "torchvision.transforms": tr})
    try:
        import sty  # noqa: F401
    except ImportError:
        colours = types.SimpleNamespace(yellow="", red="", green="", blue="", fg="")
        add["sty"] = types.SimpleNamespace(fg=colours, rs=colours)
    try:
        import toml  # noqa: F401
    except ImportError:
        add["toml"] = types.SimpleNamespace(dump=lambda *a, **k: None)
    sys.modules.update(add)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if name in add or name.startswith("src."):
                del sys.modules[name]


def run_original(name: str, out: Path, seed: int = 0, root: Path | None = None, **params) -> Path:
    """Generate dataset ``name`` (a key of :data:`SCRIPTS`, or a dotted module path under
    ``src/generate_datasets``) with the original's ``generate_all(output_folder=out, **params)``, its random
    generators seeded with ``seed``; returns the output folder (``annotation.csv`` + PNGs)."""
    root = original_root() if root is None else Path(root)
    module = SCRIPTS.get(name, name)
    with _original_modules(root):
        mod = importlib.import_module(f"src.generate_datasets.{module}")
        random.seed(seed)
        np.random.seed(seed)
        mod.generate_all(output_folder=str(out), **params)
    return Path(out)
