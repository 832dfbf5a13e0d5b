"""Contact sheet of the catalogue: one frame of every scene, for looking at what the project makes.

    python -m render.gallery out/catalogue.png [size] [frame_phase]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


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


def main() -> None:
    from infra.images import save_png

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/catalogue.png")
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    phase = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    out.parent.mkdir(parents=True, exist_ok=True)
    save_png(out, catalogue_sheet(size, phase, columns=4))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
