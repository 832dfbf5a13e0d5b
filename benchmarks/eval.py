"""Evaluation speed (issue 6 goals, on 2 CPU cores):

1. with embeddings cached, a linear probe (the paper's protocol: 50 epochs, batch 128, 3 seeds, early
   stopping) for one model and task trains in <= 30 s;
2. extraction + probe for a ResNet-18-sized model on the default 3D-PC build in <= 10 minutes on CPU.

    python benchmarks/eval.py [--task out/bench_eval_3dpc] [--n 1024] [--rounds 2] [--model timm:resnet18]

The probe runs ``eval.probe.run_probe`` on embeddings with the default build's VPT split sizes
(train/val/test 3,422 / 3,814 / 3,698: the default build with label rule v3.2, docs/benchmarks.md) and
``--dim`` (default 2,048, ResNet-50's width), with a learnable signal; its baseline is the same probe with the reference dropout masks (float
draws, ``probe.FAST_MASKS=False``) and one gather of the shuffled matrix per epoch
(``probe.GATHER_PER_BATCH=False``), same result. Extraction is timed on ``--n`` images of a 3D-PC build at
the default 256×256 (built with the small preset's scenes at size 256 if ``--task`` does not exist), cycled
when the build has fewer images, and projected to the default build's 11,108 kept frames; its baseline is
the plain path (``fast=false``: the model as loaded and the library transform per image), the new one the
fast path (batch norms folded, uint8 preprocessing), both with the decoding worker, interleaved round by
round so both see the same machine load. CPU time (user + system of this process and its finished
decoding workers) is printed beside wall time: on a shared machine it is the steadier figure.
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

DEFAULT_BUILD_IMAGES = 11_108  # kept basic frames of the default build, label rule v3.2 (docs/benchmarks.md)
VPT_SPLITS = {"train": 3_422, "val": 3_814, "test": 3_698}  # the same build's balanced VPT splits


def synthetic(dim: int, seed: int = 0):
    import numpy as np
    import pandas as pd

    from eval.embeddings import Embeddings
    from eval.tasks import TaskData

    rng = np.random.default_rng(seed)
    n = sum(VPT_SPLITS.values())
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, dim)).astype(np.float32)
    X[:, :8] += 0.6 * (2 * y - 1)[:, None]
    split = np.concatenate([[s] * k for s, k in VPT_SPLITS.items()])
    ids = [f"img{i:05d}" for i in range(n)]
    items = pd.DataFrame({"item_id": ids, "path": ids, "label": y, "label_name": y.astype(str), "split": split,
                          "group": ids})
    return TaskData(Path("."), "bench/vpt", "bench", items, ["0", "1"], ("test",)), Embeddings(ids, {"pooled": X}, "k", False)


def ensure_build(path: Path) -> Path:
    if (path / "metadata.parquet").is_file():
        return path
    from tasks.threedpc import build
    from tasks.threedpc.config import compose_config

    print(f"building a 3D-PC dataset at 256x256 into {path} ...", flush=True)
    build(compose_config(["preset=small", "size=256", "workers=2", f"out={path}"]), progress=True)
    return path


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the decoding workers)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def timed_extraction(m, paths, batch_size, workers):
    """(images/s wall, CPU ms per image, pooled features)."""
    from eval.embeddings import extract

    c0, t0 = cpu_seconds(), time.perf_counter()
    feats = extract(m, paths, batch_size, progress=False, workers=workers)["pooled"]
    return len(paths) / (time.perf_counter() - t0), (cpu_seconds() - c0) / len(paths) * 1e3, feats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="out/bench_eval_3dpc")
    ap.add_argument("--n", type=int, default=1024, help="images per extraction measurement (cycled over the build)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of (baseline, new) measurements")
    ap.add_argument("--model", default="timm:resnet18")
    ap.add_argument("--dim", type=int, default=2048, help="probe feature width (ResNet-50: 2048)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1, help="decoding workers for both paths")
    args = ap.parse_args()

    import torch

    from eval import probe as P
    from eval.tasks import load_task
    from eval.zoo import load_model

    print(f"torch threads: {torch.get_num_threads()}, cpu count: {os.cpu_count()}, "
          f"load average at start: {os.getloadavg()[0]:.1f}")
    # 1. probe on cached embeddings: the paper's protocol, 3 seeds, once; and its ratio to the baseline (the
    #    reference masks and gathers) on 1 seed x 5 epochs, interleaved in the same run
    task, emb = synthetic(args.dim)

    def probe_time(cfg, fast_masks):
        P.FAST_MASKS = P.GATHER_PER_BATCH = fast_masks
        with tempfile.TemporaryDirectory() as tmp:
            c0, t0 = cpu_seconds(), time.perf_counter()
            s = P.run_probe(task, emb, "bench", cfg, tmp, progress=False)
            return time.perf_counter() - t0, cpu_seconds() - c0, s

    short = P.ProbeConfig(epochs=5, patience=0, seeds=(0,))
    probe_time(short, True)  # warm-up (first-call costs would fall on the baseline)
    runs = {False: [], True: []}
    for _ in range(args.rounds):
        for fast in runs:
            w, c, s = probe_time(short, fast)
            runs[fast].append((w, c, s[s.split == "test"]["accuracy"].mean()))
    assert len({round(a, 12) for r in runs.values() for _, _, a in r}) == 1, "the two mask paths disagree"
    for fast, rs in runs.items():
        print(f"probe, 1 seed x 5 epochs, {args.dim} dims, {'new' if fast else 'baseline'} (masks {'integer' if fast else 'float'}, gather per {'batch' if fast else 'epoch'}): "
              f"wall {', '.join(f'{w:.1f}' for w, _, _ in rs)} s, CPU {', '.join(f'{c:.1f}' for _, c, _ in rs)} s")
    print(f"  -> ratio baseline/new: wall {min(w for w, _, _ in runs[False]) / min(w for w, _, _ in runs[True]):.2f}x, "
          f"CPU {min(c for _, c, _ in runs[False]) / min(c for _, c, _ in runs[True]):.2f}x (same test accuracy)")
    cfg = P.ProbeConfig()
    probe_s, probe_cpu, s = probe_time(cfg, True)
    print(f"probe, {len(task.split('train'))} train images x {args.dim} dims, {len(cfg.seeds)} seeds, <= {cfg.epochs} "
          f"epochs (the paper's protocol): {probe_s:.1f} s wall, {probe_cpu:.1f} s CPU (goal 30 s); epochs run per seed "
          f"{s.drop_duplicates('seed')['epochs_run'].tolist()}, test accuracy "
          f"{s[s.split == 'test']['accuracy'].mean():.3f}; load average {os.getloadavg()[0]:.1f}")

    # 2. extraction throughput on real 3D-PC frames: the plain path (baseline) vs the fast path (new),
    #    interleaved so both see the same machine load
    build = ensure_build(Path(args.task))
    t = load_task(build, "vpt")
    _, paths = t.image_files()
    paths = (paths * (args.n // len(paths) + 1))[:args.n]
    models = {"plain": load_model(args.model, preprocess="shorter_side", fast=False),
              "fast": load_model(args.model, preprocess="shorter_side", fast=True)}
    print(f"fast path: {models['fast'].folded_bn} batch norms folded")
    for m in models.values():
        timed_extraction(m, paths[: args.batch_size], args.batch_size, 0)  # warm-up
    rates: dict[str, list] = {k: [] for k in models}
    feats = {}
    for _ in range(args.rounds):
        for k, m in models.items():
            rate, cpu_ms, feats[k] = timed_extraction(m, paths, args.batch_size, args.workers)
            rates[k].append((rate, cpu_ms))
    diff = float(abs(feats["fast"] - feats["plain"]).max() / abs(feats["plain"]).max())
    for k, rs in rates.items():
        print(f"extraction, {args.model} {m.data_config['input_size']}, shorter_side, batch {args.batch_size}, {args.n} "
              f"images, decode workers {args.workers}, {k} path: {', '.join(f'{r:.1f}' for r, _ in rs)} images/s; "
              f"CPU {', '.join(f'{c:.1f}' for _, c in rs)} ms/image")
    rate = max(r for r, _ in rates["fast"])
    print(f"  -> ratio fast/plain: wall {rate / max(r for r, _ in rates['plain']):.2f}x, CPU "
          f"{min(c for _, c in rates['plain']) / min(c for _, c in rates['fast']):.2f}x; features max |diff| / max "
          f"|plain| = {diff:.1e}; load average now {os.getloadavg()[0]:.1f}")
    projected = DEFAULT_BUILD_IMAGES / rate
    print(f"the default build's {DEFAULT_BUILD_IMAGES} images at {rate:.1f} images/s: {projected / 60:.1f} min; "
          f"+ probe: {(projected + probe_s) / 60:.1f} min (goal 10 min)")


if __name__ == "__main__":
    main()
