"""Renderer benchmark on trained-like scenes (issue 19): today's kernel, the new kernel and the torch
reference, in the same run.

    python benchmarks/render_trained.py [--sizes 256 512 1024] [--scenes trained:100000 trained:300000
        trained:1000000 catalogue:300000] [--frames 5] [--torch-scenes trained:100000 catalogue:300000]
        [--baseline-rev 39fe13b] [--trajectory-frames 8]

Scenes: ``trained:N`` — :func:`benchmarks.trained_scenes.trained_like` (semi-transparent, anisotropic, SH
degree 3, 3% floaters; its statistics are printed) viewed on an orbit; ``catalogue:N`` — car_02 built dense
and subsampled to N Gaussians on its reference trajectory (as ``benchmarks/render.py``).

Per scene and image size: frames/s of the new ``cpu`` kernel (through ``render.splat``), of the kernel at
``--baseline-rev`` (its ``render/_cpu.py`` loaded from git, same process, same scene and cameras) and of the
``torch`` reference (1 frame, for ``--torch-scenes`` at the first size: one frame takes minutes); peak resident memory while the new kernel renders (``VmHWM`` after resetting it
with ``/proc/self/clear_refs``, so it includes the resident scene); and the split of the new kernel's time:
projection, depth sort + packing, binning, compositing, PNG writing (8-bit conversion + encoding + atomic
write to a temporary folder). Every render of the new kernel is checked equal to the baseline's to 1/255.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
ROOT = Path(_here).parent


def load_baseline(rev: str):
    """The ``render/_cpu.py`` of git revision ``rev`` as module ``render._cpu_baseline`` (or None)."""
    try:
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:render/_cpu.py"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"note: no baseline ({rev}: {e}); only the new kernel and torch are measured")
        return None
    path = Path(tempfile.mkdtemp(prefix="vantage_baseline_")) / "_cpu_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("render._cpu_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["render._cpu_baseline"] = mod
    spec.loader.exec_module(mod)
    return mod


def baseline_render(mod, scene, cam, bg):
    """One frame with the baseline module's pipeline; returns (rgb, seconds by stage)."""
    w, h = cam.width, cam.height
    n = len(scene)
    t0 = time.perf_counter()
    rec = np.zeros((n, mod.REC), np.float64)
    radii = np.zeros((n, 2), np.int32)
    mod._project(scene.means, scene.quats, scene.log_scales, scene.opacity_logits, scene.sh,
                 np.ascontiguousarray(cam.w2c, np.float64), float(cam.fx), float(cam.fy), float(cam.cx),
                 float(cam.cy), w, h, 0.01, 1e10, rec, radii)
    t1 = time.perf_counter()
    packed, pradii, tile_start, ids = mod._bin(rec, radii, w, h)
    t2 = time.perf_counter()
    out = [np.empty((h, w, 3), np.float32)] + [np.empty((h, w), np.float32) for _ in range(3)]
    mod._composite(packed, pradii, tile_start, ids, w, h, bg, np.zeros((1, 1), np.float32), False, *out)
    t3 = time.perf_counter()
    return out[0], {"project": t1 - t0, "sort+bin": t2 - t1, "composite": t3 - t2}


def peak_reset() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_scene(spec: str, frames: int, size: int, scene_with):
    """(Gaussians, cameras, background colour); ``scene_with`` is benchmarks/render.py's catalogue helper."""
    kind, n = spec.split(":")
    n = int(n)
    if kind == "trained":
        from trained_scenes import orbit_cameras, trained_like

        return trained_like(n), orbit_cameras(frames, size), (0.0, 0.0, 0.0)
    if kind == "catalogue":
        sc, g = scene_with(n, "car_02")
        return g, sc.trajectory.cameras(frames, size, size), sc.background
    raise SystemExit(f"error: scene {spec!r}: use trained:N or catalogue:N")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    ap.add_argument("--scenes", nargs="+",
                    default=["trained:100000", "trained:300000", "trained:1000000", "catalogue:300000"])
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--torch-scenes", nargs="*", default=["trained:100000", "catalogue:300000"],
                    help="scenes whose first image size is also rendered by the torch reference (1 frame: "
                         "minutes each on a loaded 2-core machine)")
    ap.add_argument("--baseline-rev", default="39fe13b")
    ap.add_argument("--trajectory-frames", type=int, default=8,
                    help="frames of the trajectory rendered one frame per thread vs tile-parallel (0: skip)")
    args = ap.parse_args()
    sys.path.append(_here)  # for trained_scenes; appended, so the package `render` wins over render.py
    import numba
    import torch

    from render import splat
    from render._cpu import render_cpu
    from infra.images import save_png
    from render.splat import _background_map, frame_parallel, to_uint8
    from trained_scenes import scene_statistics

    spec = importlib.util.spec_from_file_location("bench_render", os.path.join(_here, "render.py"))
    bench_render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_render)
    base = load_baseline(args.baseline_rev)
    print(f"threads: numba {numba.get_num_threads()}, torch {torch.get_num_threads()}; "
          f"load average at start {os.getloadavg()[0]:.1f}; baseline = render/_cpu.py at {args.baseline_rev}")
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="vantage_bench_png_"))
    for sc_spec in args.scenes:
        for size in args.sizes:
            g, cams, bgc = make_scene(sc_spec, args.frames, size, bench_render.scene_with)
            if sc_spec.startswith("trained") and size == args.sizes[0]:
                print(f"{sc_spec} statistics: " + ", ".join(f"{k} {v:.3g}" for k, v in scene_statistics(g).items()))
            bg = _background_map(bgc, cams[0])
            splat(g, cams[0], background=bgc, backend="cpu")  # warm-up (compiled or loaded from cache)
            peak_reset()
            t, cpu0 = time.perf_counter(), time.process_time()
            outs = [splat(g, c, background=bgc, backend="cpu") for c in cams]
            fps_new = len(cams) / (time.perf_counter() - t)
            cpu_new = 1000 * (time.process_time() - cpu0) / len(cams)
            peak = peak_mib()
            split = {}
            png = 0.0
            for i, c in enumerate(cams):
                rgb = render_cpu(g.in_world(), c, bg, timings=split)[0]
                t = time.perf_counter()
                save_png(tmp / f"f{i:03d}.png", to_uint8(rgb))
                png += time.perf_counter() - t
            split = {k: 1000 * v / len(cams) for k, v in split.items()} | {"png": 1000 * png / len(cams)}
            fps_base, bsplit, diff, cpu_base = float("nan"), {}, float("nan"), float("nan")
            if base is not None:
                baseline_render(base, g.in_world(), cams[0], bg)  # warm-up
                t, cpu0 = time.perf_counter(), time.process_time()
                diff = 0.0
                for c, o in zip(cams, outs):
                    rgb, parts = baseline_render(base, g.in_world(), c, bg)
                    diff = max(diff, float(np.abs(rgb - o.rgb).max()))
                    for k, v in parts.items():
                        bsplit[k] = bsplit.get(k, 0.0) + 1000 * v / len(cams)
                fps_base = len(cams) / (time.perf_counter() - t)
                cpu_base = 1000 * (time.process_time() - cpu0) / len(cams)
                assert diff <= 1 / 255, f"{sc_spec} at {size}px: new kernel differs from the baseline by {diff}"
            fps_torch = float("nan")
            if sc_spec in args.torch_scenes and size == args.sizes[0]:
                t = time.perf_counter()
                splat(g, cams[0], background=bgc, backend="torch")
                fps_torch = 1 / (time.perf_counter() - t)
            row = dict(scene=sc_spec, size=size, fps=fps_new, base=fps_base, torch=fps_torch, peak=peak,
                       split=split, bsplit=bsplit, diff=diff, load=os.getloadavg()[0])
            rows.append(row)
            print(f"{sc_spec:<17}{size:>5}px  new {fps_new:6.2f} fps  baseline {fps_base:6.2f} fps  "
                  f"x{fps_new / fps_base:5.2f}  torch {fps_torch:7.3f} fps  x{fps_new / fps_torch:6.1f}  "
                  f"peak {peak:6.0f} MiB  max|new-baseline| {diff:.1e}  load {row['load']:.1f}", flush=True)
            print(f"    CPU ms/frame (both threads; the work, less sensitive to load): new {cpu_new:.0f}, baseline "
                  f"{cpu_base:.0f} (x{cpu_base / cpu_new:.2f})")
            print("    new ms/frame: " + ", ".join(f"{k} {v:.1f}" for k, v in split.items())
                  + "   baseline ms/frame: " + ", ".join(f"{k} {v:.1f}" for k, v in bsplit.items()), flush=True)
            if args.trajectory_frames and size <= 512:
                from render import splat_frames

                tcams = cams * -(-args.trajectory_frames // len(cams))
                tcams = tcams[: args.trajectory_frames]
                fps = {}
                for mode in ("tiles", "frames"):
                    for _ in splat_frames(g, tcams[:4], background=bgc, backend="cpu", mode=mode):
                        pass  # warm-up: the serial kernels are compiled (or loaded from cache) on first use
                    t = time.perf_counter()
                    for _ in splat_frames(g, tcams, background=bgc, backend="cpu", mode=mode):
                        pass
                    fps[mode] = len(tcams) / (time.perf_counter() - t)
                print(f"    trajectory of {len(tcams)} frames: tile-parallel {fps['tiles']:.2f} fps, one frame per "
                      f"thread {fps['frames']:.2f} fps (x{fps['frames'] / fps['tiles']:.2f}; auto picks "
                      f"{'frames' if frame_parallel(len(tcams), size, size, numba.get_num_threads()) else 'tiles'})",
                      flush=True)
            del g, outs


if __name__ == "__main__":
    main()
