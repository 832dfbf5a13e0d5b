"""Images per second of the MindSet object datasets (issue 14), against a baseline in the same run.

    python -m benchmarks.objects_datasets [--workers 1]

Each dataset is generated once (in-process, ``/dev/shm`` when it exists, so file-system cost does not
dominate) with its ``paper`` preset restricted (see ``WORKLOADS``: fewer instances or samples per
object; viewpoint: one object per category, all 41 views). Baseline = ``mindset/weber_law`` paper preset (495 images) in the same run, so the
ratios are comparable across machines. Process CPU time (user + system) is reported beside wall time: on a
shared machine wall > CPU. The load average is printed. The library's build and render caches are cleared
before each dataset (one process runs them all); compiled kernels stay warm after the first.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

WORKLOADS = [
    ("mindset/weber_law", {"preset": "paper"}),
    ("mindset/line_drawings", {"preset": "paper", "instances": 2}),
    ("mindset/silhouettes", {"preset": "paper", "instances": 2}),
    ("mindset/dotted_line_drawings", {"preset": "paper", "instances": 2}),
    ("mindset/segmented_line_drawings", {"preset": "paper", "instances": 2}),
    ("mindset/global_change", {"preset": "paper", "instances": 2}),
    ("mindset/viewpoint_invariance", {"preset": "paper", "instances": 1}),
    ("mindset/transformations_2d", {"preset": "paper", "instances": 1, "samples": 10}),
    ("mindset/same_different", {"preset": "paper", "samples": 50}),
    ("mindset/embedded_figures", {"preset": "paper", "samples": 20}),
    ("mindset/texturized_line_drawings", {"preset": "paper", "instances": 1, "samples": 5}),
    ("mindset/texturized_line_drawings", {"preset": "lines", "instances": 1, "samples": 5}),
    ("mindset/texturized_blobs", {"preset": "paper"}),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args(argv)
    import pandas as pd

    import tasks.stimuli  # noqa: F401
    from tasks.stimuli import write_dataset

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    print(f"load average {os.getloadavg()}; workers {args.workers}")
    rates = {}
    from scenes.objects import _build
    from tasks.stimuli.mindset._objects import _alpha

    for name, params in WORKLOADS:
        _build.cache_clear()  # each dataset builds and renders its objects itself, as in its own run
        _alpha.cache_clear()
        tmp = tempfile.mkdtemp(dir=base)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            out = write_dataset(name, os.path.join(tmp, "d"), params, seed=0, workers=args.workers, progress=False)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            n = len(pd.read_parquet(out / "annotations.parquet"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        rates[name] = n / wall
        ratio = rates[name] / rates[WORKLOADS[0][0]]
        print(f"{name:34s} {n:5d} images  wall {wall:7.1f} s  cpu {cpu:7.1f} s  {n / wall:7.1f} img/s "
              f"({n / max(cpu, 1e-9):7.1f} img/cpu-s)  x{ratio:.3f} of baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
