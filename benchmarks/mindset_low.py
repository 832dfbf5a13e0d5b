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


def timed(name: str, params: dict, out: Path, workers: int) -> tuple[int, float]:
    import json

    from tasks.stimuli import GENERATORS, write_dataset
    from tasks.stimuli.registry import make_config

    gen = GENERATORS[name]
    n = len(list(gen.items(make_config(gen, params), 0)))
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    write_dataset(name, out, params, workers=workers, shard_size=max(1, -(-n // 8)), progress=False)
    dt = time.perf_counter() - t
    assert json.loads((out / "manifest.json").read_text())["images"] == n
    return n, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="scratch folder (default: a temporary one, deleted)")
    ap.add_argument("--only", nargs="*", default=LOW)
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="mindset_bench_"))
    base_n, base_t = timed("degraded_polygons", {"preset": "paper", "per_class": 200, "levels": [0.3]},
                           root / "baseline", args.workers)
    base = base_n / base_t
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; workers={args.workers}")
    print(f"{'dataset':34s} {'images':>7s} {'seconds':>8s} {'images/s':>9s} {'x baseline':>10s}")
    print(f"{'baseline: degraded_polygons':34s} {base_n:7d} {base_t:8.1f} {base:9.1f} {1.0:10.2f}")
    total_n = total_t = 0.0
    for short in args.only:
        n, dt = timed(f"mindset/{short}", {"preset": "paper"}, root / short, args.workers)
        total_n, total_t = total_n + n, total_t + dt
        print(f"{'mindset/' + short:34s} {n:7d} {dt:8.1f} {n / dt:9.1f} {n / dt / base:10.2f}")
    print(f"{'all of the above':34s} {int(total_n):7d} {total_t:8.1f} {total_n / total_t:9.1f} "
          f"{total_n / total_t / base:10.2f}")
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
