"""Degraded-polygon generation speed, PNG writing included (issue 5 goal: >= 4,000 images/s on 2 cores).

    python benchmarks/polygons.py [--per-class 60] [--workers 2]

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-class", type=int, default=60)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from tasks.stimuli import write_dataset

    params = {"per_class": args.per_class, "variants": ["corners", "edges"],
              "classes": ["triangle", "square", "pentagon", "hexagon", "heptagon", "octagon"]}
    n = args.per_class * 6 * 9 * 2
    # write under ./out: on this kind of machine creating files under /tmp costs ~0.6 ms each (vs ~0.03 ms)
    Path("out").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir="out") as tmp:
        tmp = Path(tmp)
        (tmp / "base").mkdir()
        base = baseline(2000, tmp / "base")
        rates = {}
        for w in (1, args.workers):
            t = time.perf_counter()
            write_dataset("degraded_polygons", tmp / f"w{w}", params, workers=w, shard_size=1000, progress=False)
            rates[w] = n / (time.perf_counter() - t)
    print(f"{n} degraded polygons (224x224, 3-channel PNG), table and manifest included")
    print(f"{'run':<34}{'images/s':>10}{'x baseline':>12}")
    print(f"{'baseline (PIL, 1 process)':<34}{base:>10.0f}{1.0:>12.2f}")
    for w, r in rates.items():
        print(f"{f'vantage writer, {w} worker(s)':<34}{r:>10.0f}{r / base:>12.2f}")
    best = max(rates.values())
    print(f"goal >= 4000 images/s: {'met' if best >= 4000 else 'NOT met'}; full 1.26M release ≈ {1.26e6 / best / 60:.1f} min")


if __name__ == "__main__":
    main()
