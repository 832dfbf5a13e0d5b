"""Where a 3D-PC basic scene's CPU goes (issue 19): one scene built as the builder builds it, CPU seconds
(user + sys of this process and its threads, ``time.process_time``) split by stage.

    python benchmarks/threedpc_scene.py [--scene couch_02] [--settings 2] [--frames 50] [--size 256]

Stages (nested calls are counted once, in the outer stage): placement (candidate pool, candidate ray casts,
render checks of the chosen pairs), splat (the cpu kernel, per frame), mesh layers (pyrender/EGL, colour,
index and the props-alone masks), PNG writing, other (labels, framing, rows). Runs after a warm-up
(numba kernels from the on-disk cache, the EGL context), into a temporary folder.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="couch_02")
    ap.add_argument("--settings", type=int, default=2)
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--size", type=int, default=256)
    args = ap.parse_args()
    import importlib

    import render.compose as compose
    from scenes.load import load_scene
    from tasks.threedpc.config import compose_config

    build = importlib.import_module("tasks.threedpc.build")
    cpu: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    active: list[str] = []

    def timed(mod, name, stage):
        f = getattr(mod, name)

        def g(*a, **k):
            if active:  # inside another timed stage: counted there
                return f(*a, **k)
            active.append(stage)
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                cpu[stage] += time.process_time() - t
                calls[stage] += 1
                active.pop()
        setattr(mod, name, g)

    timed(build, "scene_placements", "placement (pool, ray casts, render checks)")
    timed(compose, "render_mesh_layer", "mesh layers (pyrender)")
    timed(compose, "splat", "splat (cpu kernel)")
    timed(build, "_save_png", "PNG writing")
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        cfg = compose_config([f"out={tmp}/out", f"settings={args.settings}", f"frames={args.frames}", f"size={args.size}"])
        scene = load_scene(args.scene, seed=0)
        build.scene_placements(cfg, scene, build.scene_rng(cfg, scene.name))  # warm-up
        cpu.clear()
        calls.clear()
        t0, w0 = time.process_time(), time.perf_counter()
        rows, _ = build.basic_scene_rows(cfg, scene, "train", Path(tmp) / "s", Path(tmp) / "out" / "s")
        total, wall = time.process_time() - t0, time.perf_counter() - w0
    kept = sum(bool(r["keep"]) for r in rows)
    print(f"{args.scene}: {len(rows)} frames ({kept} kept), {args.settings} settings x {args.frames} frames at "
          f"{args.size} px; CPU {total:.2f} s, wall {wall:.2f} s, load {os.getloadavg()[0]:.1f}")
    for stage, s in cpu.most_common():
        print(f"  {stage:45s} {s:8.2f} s  {100 * s / total:5.1f}%  ({calls[stage]} calls, {1000 * s / calls[stage]:.1f} ms each)")
    rest = total - sum(cpu.values())
    print(f"  {'other (labels, framing, rows)':45s} {rest:8.2f} s  {100 * rest / total:5.1f}%")


if __name__ == "__main__":
    main()
