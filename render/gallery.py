"""Contact sheet of the catalogue: one frame of every scene, for looking at what the project makes.

    python -m render.gallery out/catalogue.png [size] [frame_phase]
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infra.cli import run_options
from infra.schema import field


def catalogue_sheet(size: int = 128, phase: float = 0.0, names: list[str] | None = None, columns: int = 8) -> np.ndarray:
    """uint8 image: scenes in catalogue order, row-major, each rendered at trajectory phase ``phase``."""
    from tqdm import tqdm

    from scenes.camera import Camera
    from scenes.catalogue import build, catalogue_names

    from .splat import splat

    names = names or catalogue_names()
    tiles = []
    for name in tqdm(names, desc="gallery", unit="scene"):
        sc = build(name)
        eye = sc.trajectory.eye(phase)
        cam = Camera.from_fov(size, size, sc.trajectory.fov_deg).looking_at(eye, sc.trajectory.target)
        tiles.append(splat(sc.gaussians, cam, background=sc.background, backend="cpu").image_uint8())
    while len(tiles) % columns:
        tiles.append(np.zeros_like(tiles[0]))
    rows = [np.concatenate(tiles[i:i + columns], 1) for i in range(0, len(tiles), columns)]
    return np.concatenate(rows, 0)


USAGE = "usage: python -m render.gallery [out.png] [size] [frame_phase]   (or out=... size=... phase=...)"


@dataclass(frozen=True)
class GalleryOptions:
    out: str = field("out/catalogue.png", "the PNG to write")
    size: int = field(128, "tile width = height, pixels", range=(16, 2048))
    phase: float = field(0.0, "trajectory phase of every frame (0 = the first frame, 1 = the end of the sweep)", range=(0.0, 1.0))
    columns: int = field(4, "tiles per row", range=(1, 64))


def _job(o: GalleryOptions) -> str:
    from infra.images import save_png

    out = Path(o.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_png(out, catalogue_sheet(o.size, o.phase, columns=o.columns))
    return f"wrote {out}"


def main(argv: list[str] | None = None) -> int:
    return run_options("render.gallery", USAGE, GalleryOptions, _job, argv, positional=("out", "size", "phase"))


if __name__ == "__main__":
    raise SystemExit(main())
