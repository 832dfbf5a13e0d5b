"""CPU time per stage of the cpu splat kernel (issue 19): this checkout's ``render/_cpu.py`` against the one
of a git revision, same process, same frames, interleaved; every frame compared (values that differ are
counted, with their largest difference; more than 1/255 is an error).

    python benchmarks/render_stages.py [--scene couch_02 | trained:300000] [--frames 20] [--size 256]
        [--threads 1] [--baseline-rev HEAD] [--repeats 3]

Frames: ``couch_02`` (any catalogue name) — the splat calls of a 3D-PC basic scene as the builder makes them
(2 settings, ``--frames`` frames each, props as mesh depth limits and colour background), captured once by
running ``tasks.threedpc.build.basic_scene_rows``; ``trained:N`` — :func:`benchmarks.trained_scenes.trained_like`
on an orbit of ``--frames`` cameras. ``--threads`` numba threads (the 3D-PC build: 2 worker processes of 1
thread). Each module's ``render_cpu`` is timed with its stage clock swapped for ``time.process_time``
(user + sys of the process, all threads): projection, depth sort + packing, binning, compositing (with the
finish), in ms per frame; the best of ``--repeats`` passes over all frames (passes alternate between the two
kernels).
"""
from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
ROOT = Path(_here).parent

STAGES = ("project", "sort", "bin", "composite")


def load_rev(rev: str):
    """``render/_cpu.py`` of git revision ``rev`` as module ``render._cpu_at_rev``."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:render/_cpu.py"], capture_output=True,
                         text=True, check=True).stdout
    folder = tempfile.mkdtemp(prefix="vantage_stages_")
    atexit.register(shutil.rmtree, folder, True)
    path = Path(folder) / "_cpu_at_rev.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("render._cpu_at_rev", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["render._cpu_at_rev"] = mod
    spec.loader.exec_module(mod)
    return mod


def build_frames(scene_name: str, frames: int, size: int):
    """[(scene, camera, background map, depth limit or None)] of a 3D-PC basic scene with 2 settings."""
    import render._cpu as cpu
    from scenes.load import load_scene
    from tasks.threedpc.config import compose_config

    build = importlib.import_module("tasks.threedpc.build")

    calls = []
    real = cpu.render_cpu

    def capture(scene, camera, background, depth_limit=None, *a, **k):
        calls.append((scene, camera, np.array(background), None if depth_limit is None else np.array(depth_limit)))
        return real(scene, camera, background, depth_limit, *a, **k)

    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        cfg = compose_config([f"out={tmp}/out", "settings=2", f"frames={frames}", f"size={size}", "human_n=8"])
        scene = load_scene(scene_name, seed=0)
        cpu.render_cpu = capture
        try:
            build.basic_scene_rows(cfg, scene, "train", Path(tmp) / "s", Path(tmp) / "out" / "s")
        finally:
            cpu.render_cpu = real
    # the frames proper (the placement's render checks are smaller renders)
    return [c for c in calls if c[1].width == size and c[1].height == size]


def trained_frames(n: int, frames: int, size: int):
    sys.path.append(_here)
    from trained_scenes import orbit_cameras, trained_like

    g = trained_like(n)
    bg = np.zeros((size, size, 3), np.float32)
    return [(g, c, bg, None) for c in orbit_cameras(frames, size)]


def run(mod, frames):
    """(outputs, ms per frame by stage) of one pass over ``frames`` with ``mod.render_cpu``."""
    split = {}
    outs = []
    for scene, cam, bg, limit in frames:
        outs.append(mod.render_cpu(scene, cam, bg, limit, timings=split))
    return outs, {k: 1000 * split[k] / len(frames) for k in STAGES}


def compare(outs, ref) -> tuple[int, float]:
    """(number of output values that differ, their largest absolute difference; inf where finite and not,
    or NaN and not) between two passes' outputs (rgb, alpha, expected depth, median per frame)."""
    n_diff, max_diff = 0, 0.0
    for a, b in zip(outs, ref):
        for x, y in zip(a, b):
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            n = int((~same).sum())
            if n:
                n_diff += n
                both = ~same & np.isfinite(x) & np.isfinite(y)
                max_diff = max(max_diff, float(np.abs(x[both].astype(np.float64) - y[both]).max()) if both.any() else 0.0,
                               float("inf") if (~same & ~both).any() else 0.0)
    return n_diff, max_diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="couch_02")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--baseline-rev", default="HEAD")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cache", help="pickle of the frames: read if it exists, else written (repeated runs skip "
                                    "the scene set-up)")
    args = ap.parse_args()
    import numba

    import render._cpu as new

    numba.set_num_threads(args.threads)
    base = load_rev(args.baseline_rev)
    t0 = time.process_time()
    if args.cache and os.path.exists(args.cache):
        with open(args.cache, "rb") as f:
            frames = pickle.load(f)
    elif args.scene.startswith("trained:"):
        frames = trained_frames(int(args.scene.split(":")[1]), args.frames, args.size)
    else:
        frames = build_frames(args.scene, args.frames, args.size)
    if args.cache and not os.path.exists(args.cache):
        with open(args.cache + ".tmp", "wb") as f:
            pickle.dump(frames, f)
        os.replace(args.cache + ".tmp", args.cache)
    print(f"{args.scene}: {len(frames)} frames at {args.size} px, {len(frames[0][0])}+ Gaussians, "
          f"{sum(f[3] is not None for f in frames)} with a depth limit; numba threads {args.threads}; "
          f"set-up {time.process_time() - t0:.1f} CPU-s; baseline = render/_cpu.py at {args.baseline_rev}")
    clock = types.SimpleNamespace(perf_counter=time.process_time)
    for mod in (new, base):
        mod.time = clock
        run(mod, frames[:2])  # warm-up: compiled or loaded from numba's cache
    best = {"new": None, "base": None}
    n_diff, max_diff = 0, 0.0
    for _ in range(args.repeats):
        for name, mod in (("base", base), ("new", new)):
            outs, ms = run(mod, frames)
            if best[name] is None or sum(ms.values()) < sum(best[name].values()):
                best[name] = ms
            if name == "base":
                ref = outs
            else:
                n_diff, max_diff = compare(outs, ref)
    if n_diff:
        print(f"{n_diff} output values of the {len(frames)} frames differ from the baseline's, by at most "
              f"{max_diff:.2e}; load average {os.getloadavg()[0]:.1f}")
        if not max_diff <= 1 / 255:
            raise SystemExit("error: the new kernel's output differs from the baseline's by more than 1/255")
    else:
        print(f"all {len(frames)} frames bit-identical to the baseline; load average {os.getloadavg()[0]:.1f}")
    print(f"  {'CPU ms/frame':14s}" + "".join(f"{k:>11s}" for k in STAGES) + f"{'total':>11s}")
    for name in ("base", "new"):
        ms = best[name]
        print(f"  {name:14s}" + "".join(f"{ms[k]:11.1f}" for k in STAGES) + f"{sum(ms.values()):11.1f}")
    print(f"  {'ratio':14s}" + "".join(f"{best['base'][k] / best['new'][k]:11.2f}" for k in STAGES)
          + f"{sum(best['base'].values()) / sum(best['new'].values()):11.2f}")


if __name__ == "__main__":
    main()
