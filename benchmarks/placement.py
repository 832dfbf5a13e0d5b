"""CPU of the 3D-PC's placement sampling: batched candidates against their plain twin, in the same run.

Three measurements, each with its baseline measured in this run:

* **candidates** — per catalogue scene, ``--n`` candidate placements drawn and judged one at a time
  (``tasks.placement.draw_candidate``, one ``aperture_label`` ray cast each: the plain twin) and in one batch
  (``draw_candidates``: one ray cast per scene mesh over all candidates). Both from the same seed; the script
  checks that they return the same candidates and counts.
* **scan** — the VPT-Strategy scan of ``tasks.threedpc.build``: the aperture verdict at 121 positions of a
  path, position by position (``aperture_label``) and batched (``aperture_labels``); same verdicts checked.
* **build** (``--build``) — a TINY 3D-PC build (the test suite's ``TINY_3DPC``) in a subprocess, here and,
  with ``--baseline-root <checkout of an older revision>``, with that revision's code in the same run
  (``git worktree add <dir> <rev>``): CPU seconds of each and their ratio.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/placement.py [--n 200] [--scenes hydrant_01 couch_03 ...]
        [--build] [--baseline-root <dir>] [--repeats 2]

CPU seconds (``time.process_time``; the build's children included), so that a loaded machine changes the
figures less than it changes wall time.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# run as a script, this folder comes first on sys.path and benchmarks/render.py would shadow the package
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
ROOT = Path(_here).parent

BUILD_SNIPPET = """
import json, resource, sys, time
sys.path.insert(0, {tests!r})
from conftest import TINY_3DPC
from tasks.threedpc import build, config_from_dict
t = time.process_time()
build(config_from_dict({{**TINY_3DPC, "out": {out!r}}}), progress=False)
c = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"cpu_s": time.process_time() - t + c.ru_utime + c.ru_stime}}))
"""


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def candidates(names, n: int, repeats: int) -> list[dict]:
    import numpy as np

    from scenes.load import load_scene
    from tasks.labels import LabelRules
    from tasks.placement import MatchedDesign, PropStyle, design_footprint, draw_candidate, draw_candidates

    design, rules, rows = MatchedDesign(), LabelRules(), []
    for name in names:
        sc = load_scene(name)
        fp = design_footprint(sc, design)

        def style_fn(rng):
            return PropStyle()

        def loop(seed):
            rng, c = np.random.default_rng(seed), collections.Counter()
            return [draw_candidate(sc, rng, style_fn(rng), rules, design, c, fp) for _ in range(n)], c

        def batch(seed):
            rng, c = np.random.default_rng(seed), collections.Counter()
            return draw_candidates(sc, rng, style_fn, n, rules, design, c, fp), c

        loop(99), batch(99)  # warm: meshes, BVH, caches
        t_loop, t_batch = [], []
        for rep in range(repeats):
            tl, (a, ca) = _cpu(lambda: loop(rep))
            tb, (b, cb) = _cpu(lambda: batch(rep))
            same = list(ca.items()) == list(cb.items()) and all(
                (x is None and y is None) or (x is not None and y is not None and x.placement == y.placement
                                              and x.fraction == y.fraction) for x, y in zip(a, b))
            if not same:
                raise SystemExit(f"{name}: the batched candidates differ from the loop's (seed {rep})")
            t_loop.append(tl)
            t_batch.append(tb)
        rows.append({"scene": name, "n": n, "loop_ms": 1e3 * min(t_loop) / n, "batch_ms": 1e3 * min(t_batch) / n,
                     "ratio": min(t_loop) / min(t_batch)})
        print(f"candidates {name}: loop {rows[-1]['loop_ms']:.2f} ms, batch {rows[-1]['batch_ms']:.2f} ms per "
              f"candidate ({rows[-1]['ratio']:.2f}x), same candidates and counts", flush=True)
    return rows


def scan(name: str, repeats: int) -> dict:
    import dataclasses

    import numpy as np

    from scenes.load import load_scene
    from tasks.labels import aperture_label, aperture_labels
    from tasks.placement import CompositeOccluders
    from tasks.threedpc.build import _strategy_path, style_for
    from tasks.threedpc.config import config_from_dict

    cfg = config_from_dict({"out": "unused"})
    sc = load_scene(name)
    occ, rules = sc.occluders(), dataclasses.replace(cfg.rules, n_rays=64)
    rng = np.random.default_rng(0)
    at, r_obj, _ = _strategy_path(sc, rng, cfg, style_for(cfg, rng), 0.0)
    grid = np.linspace(-(r_obj + 0.9), r_obj + 0.9, 121)
    jobs = [(p.observer, p.target, CompositeOccluders([occ] + [s.mesh() for s in p.supports]), True, p.target_support)
            for p in (at(t) for t in grid)]
    t_one, t_all = [], []
    for _ in range(repeats):
        tl, a = _cpu(lambda: [aperture_label(o, t, c, rules, visible_in_view=v, support=s)["vpt_reason"]
                              for o, t, c, v, s in jobs])
        tb, b = _cpu(lambda: [r["vpt_reason"] for r in aperture_labels(jobs, rules)])
        if a != b:
            raise SystemExit(f"{name}: the batched scan's verdicts differ")
        t_one.append(tl)
        t_all.append(tb)
    row = {"scene": name, "positions": len(grid), "one_ms": 1e3 * min(t_one), "batch_ms": 1e3 * min(t_all),
           "ratio": min(t_one) / min(t_all), "verdicts": dict(collections.Counter(a))}
    print(f"scan {name}: {row['positions']} positions one by one {row['one_ms']:.0f} ms, batched "
          f"{row['batch_ms']:.0f} ms ({row['ratio']:.2f}x), same verdicts {row['verdicts']}", flush=True)
    return row


def build_cpu(root: Path) -> float:
    """CPU seconds of a TINY build with the code under ``root``, its numba kernels compiled first (a fresh
    checkout would otherwise pay ~50 CPU-s of compilation inside the build; ``tasks.warmup`` where it exists)."""
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    if (root / "tasks" / "warmup.py").exists():
        subprocess.run([sys.executable, "-m", "tasks.warmup"], cwd=root, env=env, capture_output=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        code = BUILD_SNIPPET.format(tests=str(root / "tests"), out=str(Path(tmp) / "tiny"))
        p = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"TINY build with {root} failed:\n{p.stderr[-2000:]}")
        return json.loads(p.stdout.strip().splitlines()[-1])["cpu_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", nargs="+", default=["hydrant_01", "couch_03", "bench_01", "motorcycle_01"])
    ap.add_argument("--n", type=int, default=200, help="candidates per scene")
    ap.add_argument("--scan-scene", default="plant_04")
    ap.add_argument("--repeats", type=int, default=2, help="timings per measurement (the smallest is kept)")
    ap.add_argument("--build", action="store_true", help="also time a TINY 3D-PC build in a subprocess")
    ap.add_argument("--baseline-root", type=Path, help="a checkout of an older revision, built in the same run")
    args = ap.parse_args()
    candidates(args.scenes, args.n, args.repeats)
    scan(args.scan_scene, args.repeats)
    if args.build or args.baseline_root:
        here = build_cpu(ROOT)
        print(f"TINY build here: {here:.1f} CPU-s", flush=True)
        if args.baseline_root:
            base = build_cpu(args.baseline_root.resolve())
            print(f"TINY build at {args.baseline_root}: {base:.1f} CPU-s; ratio {base / here:.2f}x", flush=True)


if __name__ == "__main__":
    main()
