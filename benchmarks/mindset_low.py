"""Images/s of the MindSet low/mid-level datasets' ``paper`` preset through the shared writer.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/mindset_low.py [--workers 2] [--out /tmp/mindset_bench]

Each dataset is written whole (PNGs, tables, manifest) into a fresh folder; shards are 1/8 of the dataset so
both workers get work. The baseline, measured in the same run, is ``degraded_polygons`` (paper preset,
200 images per class and level) so figures from runs on differently loaded machines can be compared as ratios.
The machine's load average is printed with the table.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# run as a script, this folder comes first on sys.path and benchmarks/render.py would shadow the package
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

LOW = ["weber_law", "emergent_features", "uncrowding", "amodal_completion", "decomposition", "depth_drawings",
       "relational_vs_coordinate", "nap_vs_mp_lines", "nap_vs_mp_geons"]


def timed(name: str, params: dict, out: Path, workers: int) -> tuple[int, float, float]:
    """(images, wall seconds, CPU seconds of this process — all the work when workers=1)."""
    import json

    from tasks.stimuli import GENERATORS, write_dataset
    from tasks.stimuli.registry import make_config

    gen = GENERATORS[name]
    n = len(list(gen.items(make_config(gen, params), 0)))
    shutil.rmtree(out, ignore_errors=True)
    t, c = time.perf_counter(), time.process_time()
    write_dataset(name, out, params, workers=workers, shard_size=max(1, -(-n // 8)), progress=False)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    assert json.loads((out / "manifest.json").read_text())["images"] == n
    return n, dt, dc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="scratch folder (default: a temporary one, deleted)")
    ap.add_argument("--only", nargs="*", default=LOW)
    ap.add_argument("--cpu", action="store_true", help="also write each dataset with 1 worker and report CPU ms/image")
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="mindset_bench_"))
    base_n, base_t, _ = timed("degraded_polygons", {"preset": "paper", "per_class": 200, "levels": [0.3]},
                              root / "baseline", args.workers)
    base = base_n / base_t
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; workers={args.workers}")
    print(f"{'dataset':34s} {'images':>7s} {'seconds':>8s} {'images/s':>9s} {'x baseline':>10s} {'CPU ms/image':>13s}")
    print(f"{'baseline: degraded_polygons':34s} {base_n:7d} {base_t:8.1f} {base:9.1f} {1.0:10.2f}")
    total_n = total_t = total_c = 0.0
    for short in args.only:
        n, dt, _ = timed(f"mindset/{short}", {"preset": "paper"}, root / short, args.workers)
        # the CPU cost, measured in-process (workers=1), is what a load-free 2-core machine divides by 2
        _, _, dc = timed(f"mindset/{short}", {"preset": "paper"}, root / f"{short}_1", 1) if args.cpu else (0, 0, 0)
        total_n, total_t, total_c = total_n + n, total_t + dt, total_c + dc
        print(f"{'mindset/' + short:34s} {n:7d} {dt:8.1f} {n / dt:9.1f} {n / dt / base:10.2f} {1000 * dc / n:13.2f}")
    print(f"{'all of the above':34s} {int(total_n):7d} {total_t:8.1f} {total_n / total_t:9.1f} "
          f"{total_n / total_t / base:10.2f} {1000 * total_c / total_n:13.2f}")
    if args.cpu:
        print(f"CPU total {total_c:.1f} s: ~{total_c / 2:.1f} s on 2 idle cores (perfect split)")
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
