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


# ---------------------------------------------------------------------------------------------- sheets
SHEETS = {  # dataset -> (the original's module, its arguments for a few images, its condition folders in order,
    #            Vantage's conditions in the same order)
    "ebbinghaus": (SCRIPTS["ebbinghaus"], {"num_samples_scrambled": 3, "num_samples_illusory": 3},
                   ("scrambled_circles", "small_flankers", "big_flankers"),
                   ("scrambled", "small_flankers", "big_flankers")),
    "muller_lyer": (SCRIPTS["muller_lyer"], {"num_samples_scrambled": 3, "num_samples_illusory": 3},
                    ("scrambled", "inward", "outward"), ("scrambled", "inward", "outward")),
    "ponzo": ("visual_illusions.ponzo_illusion.generate_dataset",
              {"num_samples_scrambled": 3, "num_samples_illusory": 3},
              ("scrambled_lines", "ponzo_same_length", "ponzo_diff_length"),
              ("scrambled", "same_length", "different_length")),
}


def _label(img, text: str):
    from PIL import ImageDraw

    ImageDraw.Draw(img).text((4, 2), text, fill=(255, 255, 0))
    return img


def comparison_sheet(name: str, out_png: Path, root: Path | None = None, seed: int = 1, k: int = 3) -> Path:
    """A sheet of the original's images (left, ``k`` per condition) beside Vantage's ``paper`` images (right),
    one row per condition, 224-px tiles: ``python tests/mindset_original.py <name> <out.png> [--root DIR]``.
    Weber: the middle 64 × 32 px of lengths 5, 6, 20, 49 at grey 250, magnified 4× (nearest), original above
    Vantage, so the end pixels and rows can be counted. Geons: Vantage's items 12-21 (those added for the
    original's count), shaded reference / NAP / MP, two items per row (the original's are third-party images)."""
    import tempfile

    from PIL import Image

    from tasks.stimuli import write_dataset

    tmp = Path(tempfile.mkdtemp(prefix="mindset-sheet-"))
    try:
        if name == "nap_vs_mp_geons":  # Vantage only: the original's geons are third-party images
            items = list(range(12, 22))
            v = write_dataset("mindset/nap_vs_mp_geons", tmp / "v", {"items": items, "renderings": ["shaded"]},
                              seed=seed, progress=False)
            T = 160
            sheet = Image.new("RGB", (2 * 3 * (T + 4) + 12, (len(items) + 1) // 2 * (T + 4)), (60, 60, 60))
            for n, idx in enumerate(items):
                for j, role in enumerate(("reference", "nap", "mp")):
                    tile = Image.open(v / f"shaded_{role}" / f"shaded_{role}_{idx:02d}.png").convert("RGB")
                    tile = _label(tile.resize((T, T), Image.LANCZOS), f"item {idx} {role}")
                    sheet.paste(tile, ((n % 2) * (3 * (T + 4) + 12) + j * (T + 4), (n // 2) * (T + 4)))
        elif name == "weber_law":
            o = run_original("weber_law", tmp / "o", seed=seed, root=root, min_grayscale=250)
            v = write_dataset("mindset/weber_law", tmp / "v", {"preset": "paper", "min_grey": 250}, seed=seed,
                              progress=False)
            lengths = (5, 6, 20, 49)
            sheet = Image.new("RGB", (len(lengths) * 264, 2 * 136 + 4), (60, 60, 60))
            for j, L in enumerate(lengths):
                for i, path in enumerate((next((o / "all_images").glob(f"{L}_250_*.png")),
                                          v / "grey_250" / f"grey_250_len_{L:03d}_0000.png")):
                    crop = Image.open(path).convert("RGB").crop((80, 96, 144, 128)).resize((256, 128), Image.NEAREST)
                    sheet.paste(_label(crop, f"{'original' if i == 0 else 'Vantage'} L={L}"), (j * 264, i * 140))
        else:
            module, params, o_conds, v_conds = SHEETS[name]
            o = run_original(module, tmp / "o", seed=seed, root=root, **params)
            v = write_dataset(f"mindset/{name}", tmp / "v", {"preset": "paper", "n_scrambled": k, "n_illusory": k},
                              seed=seed, progress=False)
            T = 224
            sheet = Image.new("RGB", (2 * k * (T + 4) + 12, len(o_conds) * (T + 4)), (60, 60, 60))
            for i, (oc, vc) in enumerate(zip(o_conds, v_conds)):
                for side, files in enumerate((sorted((o / oc).glob("*.png"))[:k], sorted((v / vc).glob("*.png"))[:k])):
                    for j, f in enumerate(files):
                        tile = _label(Image.open(f).convert("RGB"), f"{'original' if side == 0 else 'Vantage'} {vc}")
                        sheet.paste(tile, (side * (k * (T + 4) + 12) + j * (T + 4), i * (T + 4)))
        Path(out_png).parent.mkdir(parents=True, exist_ok=True)
        sheet.save(out_png)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Path(out_png)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="a sheet of the original MindSet images beside Vantage's paper preset")
    ap.add_argument("name", choices=sorted(SHEETS) + ["weber_law", "nap_vs_mp_geons"])
    ap.add_argument("out", help="PNG to write")
    ap.add_argument("--root", default=None, help="folder holding the original's src/ (default: the shared reference "
                    "copy; Ponzo needs a copy of the public repository)")
    a = ap.parse_args()
    ok, why = original_available()
    if not ok and a.root is None and a.name != "nap_vs_mp_geons":
        raise SystemExit(f"error: {why}")
    print(comparison_sheet(a.name, Path(a.out), a.root))
