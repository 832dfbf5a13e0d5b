"""Read time of 1M-Gaussian scenes in the compressed formats (issue 31 goal: ≤ 2 s each for .splat and SOG on
2 cores), with two baselines measured in the same run: ``np.fromfile`` of the .splat's raw bytes (the floor
for any reader of that file) and Vantage's INRIA .ply reader on the same scene (the format users convert
from). Every reader is vectorised numpy (no loop per Gaussian); SOG time is mostly Pillow's WebP decoding.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/scene_formats.py [n_gaussians] [repeats]

The scene is the catalogue scene hydrant_02 (219,223 Gaussians) tiled side by side until it holds n
Gaussians (degree 0, as the real scenes), so positions, scales and colours are those of a real layout.
Each timing is the best of ``repeats`` reads (default 3).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def tiled_scene(n: int):
    """hydrant_02 repeated on a grid (14 m apart) until ``n`` Gaussians, cut to exactly ``n``."""
    from scenes.catalogue import build
    from scenes.gaussians import GaussianScene

    g = build("hydrant_02").gaussians
    copies = -(-n // len(g))
    side = int(np.ceil(np.sqrt(copies)))
    offsets = np.array([[14.0 * (i % side), 14.0 * (i // side), 0.0] for i in range(copies)])
    rep = lambda a: np.concatenate([a] * copies)[:n]  # noqa: E731
    means = (g.means[None, :, :] + offsets[:, None, :].astype(np.float32)).reshape(-1, 3)[:n]
    return GaussianScene(means=means, quats=rep(g.quats), log_scales=rep(g.log_scales),
                         opacity_logits=rep(g.opacity_logits), sh=rep(g.sh), source=f"hydrant_02 x{copies}")


def best_of(fn, repeats: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds of this process) over ``repeats`` calls. On a shared machine the
    CPU time is what the read costs; the wall time adds waiting for a core."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu


def main() -> None:
    from scenes.formats import read_scene_file, write_scene_file

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    scene = tiled_scene(n)
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name in ("s.ply", "s.splat", "s.sog", "s.compressed.ply", "s.spz", "s.ksplat"):
            t0 = time.perf_counter()
            paths[name] = write_scene_file(scene, Path(d) / name)
            print(f"wrote {name:16s} {os.path.getsize(paths[name]) / 1e6:7.1f} MB in {time.perf_counter() - t0:5.1f} s")
        raw = best_of(lambda: np.fromfile(paths["s.splat"], np.uint8), repeats)
        ply = best_of(lambda: read_scene_file(paths["s.ply"]), repeats)
        print(f"\n{n} Gaussians, best of {repeats} (wall / CPU seconds); baselines: np.fromfile of the .splat bytes "
              f"{raw[0]:.3f} / {raw[1]:.3f}, INRIA .ply read {ply[0]:.3f} / {ply[1]:.3f}")
        print(f"{'format':16s} {'wall s':>7s} {'CPU s':>6s} {'CPU / fromfile':>14s} {'CPU / .ply':>10s}  goal (<= 2 s)")
        for name in ("s.splat", "s.sog", "s.compressed.ply", "s.spz", "s.ksplat"):
            wall, cpu = best_of(lambda p=paths[name]: read_scene_file(p), repeats)
            goal = ("met" if cpu <= 2.0 else "MISSED") + (" (wall too)" if wall <= 2.0 else " (CPU; wall over)") \
                if name in ("s.splat", "s.sog") else ""
            print(f"{name:16s} {wall:7.3f} {cpu:6.3f} {cpu / max(raw[1], 1e-3):14.1f} {cpu / ply[1]:10.2f}  {goal}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
