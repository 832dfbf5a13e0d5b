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
# ``requested`` and ``pair_role`` of a depth-only setting's frames (BuildConfig.depth_settings)
DEPTH_ONLY = "depth_only"


def scene_key(name: str) -> str:
    """What a scene's randomness and folder are keyed by: a catalogue name itself; for a scene file its name
    without folder and format suffixes (``data/guitar.compressed.ply`` → ``guitar``), so moving the files
    elsewhere changes nothing in the build."""
    from scenes.capture import scene_name
    from scenes.load import is_file_spec

    return scene_name(name) if is_file_spec(name) else name


def scene_rng(cfg: BuildConfig, name: str, stream: int = 0) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, zlib.crc32(scene_key(name).encode()), stream])


def load_build_scene(cfg: BuildConfig, name: str):
    """Scene ``name`` of a build, with its canonical-frame hints (``cfg.scene_frames``) for scene files."""
    from scenes.load import load_scene

    return load_scene(name, seed=0, frame=cfg.frame_of(name))


def scene_dir(cfg: BuildConfig, scene, split: str) -> Path:
    category = scene.metadata.get("category", scene_key(scene.name))
    return Path(cfg.out) / "images" / split / category / scene_key(scene.name)


def scene_dir_of(cfg: BuildConfig, name: str) -> Path:
    """:func:`scene_dir` of scene ``name`` without building it when it is a catalogue name (its folder follows
    from the name: building a catalogue scene costs seconds of CPU, and ``assemble`` needs only the folders);
    scene files are loaded."""
    from scenes.catalogue import parse_name
    from scenes.gaussians import SceneError

    from scenes.load import is_file_spec

    split = cfg.split_of(name)
    if not is_file_spec(name):
        try:
            category, _ = parse_name(name)
            return Path(cfg.out) / "images" / split / category / name
        except SceneError:
            pass
    return scene_dir(cfg, load_build_scene(cfg, name), split)
