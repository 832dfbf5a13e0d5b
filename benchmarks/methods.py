"""Speed of the MindSet methods (issue 15 goals, on 2 CPU cores):

1. similarity judgment for one ResNet-18-size model over a 1,000-pair dataset at 10 layers, 1 repetition:
   <= 2 minutes (``--pairs``);
2. decoder training on cached features: <= 1 minute per dataset (``--items``).

    python benchmarks/methods.py [--pairs 1000] [--items 3000] [--baseline-pairs 20] [--only similarity|decoders]
                                 [--threads N] [--work DIR]

Similarity: ``timm:resnet18`` (random weights; speed does not depend on them) on 224×224 noise images in
matched sets of a reference and two comparison levels (so 1,000 pairs = 500 sets = 1,500 images), at 10
layers (the stem, the 8 residual blocks, the global pool); distances are cosine on the flattened maps. Its
baseline is the plain twin (``similarity_reference``: batch size 1, the reference recomputed for every
pair, as the original), timed on ``--baseline-pairs`` pairs just before and projected per pair.
Decoders: six regression decoders (raw pixels 16×16×3 and ResNet-18's widths 64, 128, 256, 512, 512) on
``--items`` synthetic cached feature rows with a learnable target, 100 epochs at most, early stopping;
its baseline is the same six decoders trained one at a time.

Wall time and this process's CPU time (``time.process_time``, all its threads) are both printed: on a
shared machine the wall time mostly measures the other processes.
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

LAYERS = ("conv1", "layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0", "layer3.1", "layer4.0", "layer4.1",
          "global_pool")


def noise_sets(root: Path, n_sets: int, size: int = 224, seed: int = 0) -> None:
    import numpy as np
    import pandas as pd
    from PIL import Image

    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sets):
        base = rng.uniform(0, 1, (size, size, 3))
        for level, amount in (("reference", 0.0), ("near", 0.1), ("far", 0.5)):
            img = np.clip(base + amount * rng.uniform(-1, 1, base.shape), 0, 1)
            name = f"{level}/{s:05d}.png"
            (root / level).mkdir(parents=True, exist_ok=True)
            Image.fromarray((img * 255).astype(np.uint8)).save(root / name, compress_level=1)
            rows.append({"file_name": name, "dataset": "bench_pairs", "condition": level, "item_id": f"{level}_{s}",
                         "set_id": f"s{s:05d}", "seed": seed})
    pd.DataFrame(rows).to_parquet(root / "annotations.parquet", index=False)


def bench_similarity(n_pairs: int, n_base: int, work: Path) -> None:
    import pandas as pd
    import torch

    from eval.similarity import SimilarityConfig, make_pairs, pair_distances, similarity_reference
    from eval.zoo import load_model

    n_sets = (n_pairs + 1) // 2
    data = work / f"pairs_{n_sets}"
    if not (data / "annotations.parquet").is_file():
        t = time.perf_counter()
        noise_sets(data, n_sets)
        print(f"made {3 * n_sets} images in {time.perf_counter() - t:.1f} s", flush=True)
    loaded = load_model("timm:resnet18", channels_last=True)
    cfg = SimilarityConfig(reference="reference", metric="cosine", layers=LAYERS, batch_size=32)
    ann = pd.read_parquet(data / "annotations.parquet")
    pairs = make_pairs(ann, "condition", "reference")
    print(f"threads {torch.get_num_threads()}, load average {os.getloadavg()}", flush=True)
    t, c = time.perf_counter(), time.process_time()
    similarity_reference(loaded, data, pairs.head(n_base), list(LAYERS), cfg)
    ref_wall, ref_cpu = (time.perf_counter() - t) / n_base, (time.process_time() - c) / n_base
    t, c = time.perf_counter(), time.process_time()
    d = pair_distances(loaded, data, pairs, list(LAYERS), cfg)
    fast, fast_cpu = time.perf_counter() - t, time.process_time() - c
    n = len(pairs)
    print(f"similarity: {n} pairs x {len(LAYERS)} layers ({len(d)} distances): wall {fast:.1f} s, CPU {fast_cpu:.1f} s "
          f"({torch.get_num_threads()} thread(s)); plain twin per pair: wall {ref_wall * 1000:.0f} ms, "
          f"CPU {ref_cpu * 1000:.0f} ms -> projected wall {ref_wall * n:.0f} s, CPU {ref_cpu * n:.0f} s; speed-up "
          f"x{ref_wall * n / fast:.1f} (wall), x{ref_cpu * n / fast_cpu:.1f} (CPU); load average {os.getloadavg()}",
          flush=True)


def bench_decoders(n_items: int) -> None:
    import numpy as np

    from eval.decoders import DecoderConfig, train_decoders

    rng = np.random.default_rng(0)
    dims = {"pixels": 768, "layer1": 64, "layer2": 128, "layer3": 256, "layer4": 512, "pooled": 512}
    y = rng.normal(size=n_items)
    X = {}
    for k, d in dims.items():
        a = rng.normal(size=(n_items, d)).astype(np.float32)
        a[:, :4] += y[:, None].astype(np.float32)
        X[k] = a
    split = rng.choice(["train", "val", "test"], size=n_items, p=[0.65, 0.15, 0.2])
    cfg = DecoderConfig(targets=("y",), task_type="regression", epochs=100, patience=10)
    t, c = time.perf_counter(), time.process_time()
    for k in X:
        train_decoders({k: X[k]}, y, split, "regression", 1, cfg, seed=0)
    alone, alone_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    fit = train_decoders(X, y, split, "regression", 1, cfg, seed=0)
    joint, joint_cpu = time.perf_counter() - t, time.process_time() - c
    print(f"decoders: 6 on {n_items} items ({(split == 'train').sum()} train), epochs run {dict(fit.epochs_run)}: "
          f"jointly wall {joint:.1f} s, CPU {joint_cpu:.1f} s; one at a time wall {alone:.1f} s, CPU {alone_cpu:.1f} s "
          f"(x{alone_cpu / joint_cpu:.2f} CPU); load average {os.getloadavg()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--baseline-pairs", type=int, default=20)
    ap.add_argument("--items", type=int, default=3000)
    ap.add_argument("--only", choices=("similarity", "decoders"))
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = torch's default)")
    ap.add_argument("--work", default=None, help="folder for the generated images (default: a temporary folder)")
    a = ap.parse_args()
    if a.threads:  # one thread: CPU time = compute time, without the spin-waits of a descheduled partner thread
        import torch

        torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        if a.only != "similarity":
            bench_decoders(a.items)
        if a.only != "decoders":
            bench_similarity(a.pairs, a.baseline_pairs, work)


if __name__ == "__main__":
    main()
