"""Where a 3D-PC build puts things and how its randomness is seeded: the output folder's names (scene
folders, their label tables, the ImageFolder views) and the per-scene random streams. Shared by the builder
(``build``) and the assembler (``assemble``), which therefore need not import each other."""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np

from .config import BuildConfig

VIEWS = ("vpt", "depth", "vpt_strategy", "human")  # ImageFolder views assemble() builds (folders under out/)
LABELS_FILE = "_labels.parquet"


def scene_rng(cfg: BuildConfig, name: str, stream: int = 0) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, zlib.crc32(name.encode()), stream])


def _safe(name: str) -> str:
    return Path(name).stem if (os.path.sep in name or name.endswith((".ply", ".pt"))) else name


def scene_dir(cfg: BuildConfig, scene, split: str) -> Path:
    category = scene.metadata.get("category", _safe(scene.name))
    return Path(cfg.out) / "images" / split / category / _safe(scene.name)


def scene_dir_of(cfg: BuildConfig, name: str) -> Path:
    """:func:`scene_dir` of scene ``name`` without building it when it is a catalogue name (its folder follows
    from the name: building a catalogue scene costs seconds of CPU, and ``assemble`` needs only the folders);
    scene files are loaded."""
    from scenes.catalogue import parse_name
    from scenes.gaussians import SceneError

    split = cfg.split_of(name)
    if not (os.path.sep in name or name.endswith((".ply", ".pt", ".yaml", ".yml", ".json"))):
        try:
            category, _ = parse_name(name)
            return Path(cfg.out) / "images" / split / category / name
        except SceneError:
            pass
    from scenes.load import load_scene

    return scene_dir(cfg, load_scene(name), split)
