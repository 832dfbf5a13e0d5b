"""Degraded-polygon generation speed, PNG writing included (issue 5 goal: >= 4,000 images/s on 2 cores).

    python benchmarks/polygons.py [--per-class 60] [--workers 2] [--fast-dir /dev/shm]

Also measured in the same run: the file-system ceiling (2 processes creating files of the same size and
doing nothing else), and the writer into ``--fast-dir`` (a RAM file system, if present) to separate the
generator's own speed from the disk's cost of creating files.

Baseline, measured in the same run: a plain single-process PIL pipeline like the original script
(PIL drawing, PIL PNG save of a 3-channel image per file). Then Vantage's writer on the same workload
(6 polygon classes × 9 levels × corner/edge pairs), with 1 and with ``--workers`` processes.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def baseline(n: int, out: Path) -> float:
    import numpy as np
    from PIL import Image

    from tasks.stimuli.polygons import draw, sample_shape

    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for i in range(n):
        s = sample_shape("hexagon", rng)
        img = draw(s, 224, 2, "corners" if i % 2 else "edges", 0.3)
        Image.fromarray(img).convert("RGB").save(out / f"{i}.png")
    return n / (time.perf_counter() - t)


def _create_files(args) -> None:
    folder, n, size = args
    data = os.urandom(size)
    for i in range(n):
        with open(f"{folder}/{os.getpid()}_{i}.png", "wb") as f:
            f.write(data)


def file_ceiling(folder: Path, n: int, size: int, workers: int) -> float:
    """Files/s that ``workers`` processes can create in ``folder`` (the disk's own limit)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
        list(ex.map(_create_files, [(str(folder), 10, size)] * workers))  # warm-up
        t = time.perf_counter()
        list(ex.map(_create_files, [(str(folder), n // workers, size)] * workers))
        return n / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-class", type=int, default=60)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fast-dir", default="/dev/shm")
    args = ap.parse_args()
    from tasks.stimuli import write_dataset

    params = {"per_class": args.per_class, "variants": ["corners", "edges"],
              "classes": ["triangle", "square", "pentagon", "hexagon", "heptagon", "octagon"]}
    n = args.per_class * 6 * 9 * 2
    # write under ./out: on this kind of machine creating files under /tmp costs ~0.6 ms each (vs ~0.03 ms)
    Path("out").mkdir(exist_ok=True)
    fast = Path(args.fast_dir) if args.fast_dir and Path(args.fast_dir).is_dir() else None
    with tempfile.TemporaryDirectory(dir="out") as tmp:
        tmp = Path(tmp)
        (tmp / "base").mkdir()
        base = baseline(2000, tmp / "base")
        rates = {}
        for w in (1, args.workers):
            t = time.perf_counter()
            write_dataset("degraded_polygons", tmp / f"w{w}", params, workers=w, shard_size=1000, progress=False)
            rates[f"vantage writer, {w} worker(s)"] = n / (time.perf_counter() - t)
        pngs = list((tmp / f"w{args.workers}").rglob("*.png"))
        mean_size = int(sum(p.stat().st_size for p in pngs[:500]) / min(500, len(pngs)))
        (tmp / "files").mkdir()
        ceiling = file_ceiling(tmp / "files", 4000, mean_size, args.workers)
    fast_rate = None
    if fast:
        with tempfile.TemporaryDirectory(dir=fast) as ftmp:
            t = time.perf_counter()
            write_dataset("degraded_polygons", Path(ftmp) / "w", params, workers=args.workers, shard_size=1000,
                          progress=False)
            fast_rate = n / (time.perf_counter() - t)
            (Path(ftmp) / "files").mkdir()
            fast_ceiling = file_ceiling(Path(ftmp) / "files", 4000, mean_size, args.workers)
    print(f"{n} degraded polygons (224x224, 3-channel PNG, mean {mean_size} bytes), table and manifest included")
    print(f"{'run':<44}{'images/s':>10}{'x baseline':>12}")
    print(f"{'baseline (PIL, 1 process)':<44}{base:>10.0f}{1.0:>12.2f}")
    for name, r in rates.items():
        print(f"{name:<44}{r:>10.0f}{r / base:>12.2f}")
    print(f"{'disk ceiling: create files only, ' + str(args.workers) + ' procs':<44}{ceiling:>10.0f}{ceiling / base:>12.2f}")
    best = max(rates.values())
    if fast_rate:
        print(f"{'vantage writer, ' + str(args.workers) + ' workers, into ' + str(fast):<44}{fast_rate:>10.0f}"
              f"{fast_rate / base:>12.2f}")
        print(f"{'RAM-disk ceiling: create files only':<44}{fast_ceiling:>10.0f}{fast_ceiling / base:>12.2f}")
    print(f"writer on disk = {best / ceiling:.0%} of the disk's file-creation ceiling")
    print(f"goal >= 4000 images/s: on disk {'met' if best >= 4000 else 'NOT met'} ({best:.0f}); "
          + (f"into RAM {'met' if fast_rate >= 4000 else 'NOT met'} ({fast_rate:.0f}); " if fast_rate else "")
          + f"full 1.26M release on disk ≈ {1.26e6 / best / 60:.1f} min")

if __name__ == "__main__":
    main()
