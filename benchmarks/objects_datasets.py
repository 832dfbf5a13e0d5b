"""Images per CPU-second of the MindSet shape and object datasets (issue 14), and the projected time of the
group's ``paper`` presets, against a baseline in the same run.

    python -m benchmarks.objects_datasets [--workers 1]

Each dataset is generated once (in-process, ``/dev/shm`` when it exists, so file-system cost does not
dominate) with its ``paper`` preset restricted (see ``WORKLOADS``: fewer categories, instances or samples;
viewpoint: one object per category, all 41 views). Baseline = ``mindset/weber_law`` paper preset (495
images) in the same run, so the ratios are comparable across machines. Process CPU time (user + system) is
reported beside wall time: on a shared machine wall > CPU. The library's build and render caches are
cleared before each dataset (one process runs them all), so each workload pays for its own objects, as a
run of the dataset would; a workload shows each object fewer times than the paper preset does, so the
projection (paper images / measured images per CPU-second, summed, over 2 cores) is on the slow side.
The load average is printed before and after.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

# (dataset, preset, restriction of the preset for the measurement)
WORKLOADS = [
    ("mindset/weber_law", "paper", {}),
    ("mindset/line_drawings", "paper", {"instances": 2}),
    ("mindset/silhouettes", "paper", {"instances": 2}),
    ("mindset/dotted_line_drawings", "paper", {"instances": 2}),
    ("mindset/segmented_line_drawings", "paper", {"instances": 2}),
    ("mindset/global_change", "paper", {"instances": 2}),
    ("mindset/viewpoint_invariance", "paper", {"instances": 1}),
    ("mindset/transformations_2d", "paper", {"instances": 1, "samples": 20}),
    ("mindset/same_different", "paper", {"samples": 100}),
    ("mindset/embedded_figures", "paper", {"samples": 20}),
    ("mindset/leuven_embedded_figures", "paper", {}),
    ("mindset/texturized_line_drawings", "paper", {"categories": ["bear", "chair"], "instances": 1, "samples": 100}),
    ("mindset/texturized_line_drawings", "lines", {"categories": ["bear", "chair"], "instances": 1, "samples": 100}),
    ("mindset/texturized_blobs", "paper", {}),
]


def paper_count(name: str, preset: str) -> int:
    """Images the full preset writes (its item list, nothing rendered)."""
    from tasks.stimuli.registry import get_generator
    from tasks.stimuli.writer import make_config

    gen = get_generator(name)
    return sum(1 for _ in gen.items(make_config(gen, {"preset": preset}), 0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args(argv)
    import pandas as pd

    import tasks.stimuli  # noqa: F401
    from tasks.stimuli import write_dataset

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    print(f"load average before {os.getloadavg()}; workers {args.workers}")
    rates = {}
    from scenes.objects import _build
    from tasks.stimuli.mindset._objects import _alpha

    total_paper, total_cpu = 0, 0.0
    print(f"{'dataset':44s} {'images':>6s} {'wall s':>7s} {'CPU s':>7s} {'img/CPU-s':>9s} {'x base':>7s} "
          f"{'paper imgs':>10s} {'proj. CPU s':>11s}")
    for name, preset, restrict in WORKLOADS:
        _build.cache_clear()  # each dataset builds and renders its objects itself, as in its own run
        _alpha.cache_clear()
        tmp = tempfile.mkdtemp(dir=base)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            out = write_dataset(name, os.path.join(tmp, "d"), {"preset": preset, **restrict}, seed=0,
                                workers=args.workers, progress=False)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            n = len(pd.read_parquet(out / "annotations.parquet"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        key = f"{name} {preset}"
        rates[key] = n / max(cpu, 1e-9)
        ratio = rates[key] / rates[f"{WORKLOADS[0][0]} {WORKLOADS[0][1]}"]
        full = paper_count(name, preset)
        proj = full / rates[key]
        if name != WORKLOADS[0][0]:
            total_paper, total_cpu = total_paper + full, total_cpu + proj
        print(f"{key:44s} {n:6d} {wall:7.1f} {cpu:7.1f} {rates[key]:9.1f} {ratio:7.3f} {full:10d} {proj:11.0f}",
              flush=True)
    print(f"group paper presets: {total_paper} images, projected {total_cpu:.0f} CPU s = "
          f"{total_cpu / 60:.1f} CPU min = {total_cpu / 120:.1f} min on 2 cores (goal 10)")
    print(f"load average after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
