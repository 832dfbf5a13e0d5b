"""Evaluation speed (issue 6 goals, on 2 CPU cores):

1. with embeddings cached, a linear probe (the paper's protocol: 50 epochs, batch 128, 3 seeds, early
   stopping) for one model and task trains in <= 30 s;
2. extraction + probe for a ResNet-18-sized model on the default 3D-PC build in <= 10 minutes on CPU.

    python benchmarks/eval.py [--task out/bench_eval_3dpc] [--n 1024] [--model timm:resnet18]

The probe runs ``eval.probe.run_probe`` on embeddings with the default build's VPT split sizes
(train/val/test 5,176 / 1,198 / 3,750, from docs/benchmarks.md) and ResNet-18's width (512), with a
learnable signal. Extraction is timed on ``--n`` images of a 3D-PC build at the default 256×256 (built
with the small preset's scenes at size 256 if ``--task`` does not exist), cycled when the build has fewer
images, and projected to the default build's 12,395 kept frames. Baseline in the same run: the released
3D-PC code re-extracted features for every task and method, so its cost per (task, method) is
extraction + probe; the ratio printed is that against a probe on cached embeddings.
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

DEFAULT_BUILD_IMAGES = 12_395
VPT_SPLITS = {"train": 5_176, "val": 1_198, "test": 3_750}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="out/bench_eval_3dpc")
    ap.add_argument("--n", type=int, default=1024, help="images to extract (cycled over the build)")
    ap.add_argument("--model", default="timm:resnet18")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()

    import torch

    from eval.embeddings import extract
    from eval.probe import ProbeConfig, run_probe
    from eval.tasks import load_task
    from eval.zoo import load_model

    print(f"torch threads: {torch.get_num_threads()}, cpu count: {os.cpu_count()}")
    # 1. probe on cached embeddings
    task, emb = synthetic(512)
    cfg = ProbeConfig()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        s = run_probe(task, emb, "bench", cfg, tmp, progress=False)
        probe_s = time.perf_counter() - t0
    print(f"probe, cached embeddings, {len(task.split('train'))} train images x 512 dims, {len(cfg.seeds)} seeds, "
          f"<= {cfg.epochs} epochs: {probe_s:.1f} s (goal 30 s); epochs run per seed {s.drop_duplicates('seed')['epochs_run'].tolist()}, "
          f"test accuracy {s[s.split == 'test']['accuracy'].mean():.3f}")

    # 2. extraction throughput on real 3D-PC frames
    build = ensure_build(Path(args.task))
    t = load_task(build, "vpt")
    _, paths = t.image_files()
    paths = (paths * (args.n // len(paths) + 1))[:args.n]
    m = load_model(args.model)
    extract(m, paths[: args.batch_size], args.batch_size, progress=False)  # warm-up
    t0 = time.perf_counter()
    extract(m, paths, args.batch_size, progress=True)
    ext_s = time.perf_counter() - t0
    rate = len(paths) / ext_s
    projected = DEFAULT_BUILD_IMAGES / rate
    print(f"extraction, {args.model} ({m.data_config['input_size']}), batch {args.batch_size}: "
          f"{rate:.1f} images/s; the default build's {DEFAULT_BUILD_IMAGES} images: {projected / 60:.1f} min")
    total = projected + probe_s
    print(f"extraction + probe, default build: {total / 60:.1f} min (goal 10 min)")
    print(f"baseline (re-extract per task and method, as the released code) / cached probe: "
          f"{total / probe_s:.0f}x per additional (task, method)")


if __name__ == "__main__":
    main()
