"""Cross-validated raw-pixel regression of a 3D-PC task over every scene of finished builds.

    python benchmarks/pixel_cv.py BUILD [BUILD ...] [--task vpt|depth] [--folds 5] [--out table.csv]

The shortcut audit (``tasks.threedpc.shortcuts``) fits its pixel regression once, on the training scenes, and
scores it on the test scenes: on a sweep build that is 5 test scenes and 40-50 placements, so one figure moves by
±0.12 with the draw of scenes (issue 35). This tool fits the audit's own model (``logreg_fit_predict`` on
``pixel_size``² RGB thumbnails, ``pixel_C``) in grouped folds over *all* scenes of a build (every scene held out
once, ``GroupKFold`` by scene, so a scene's frames never sit on both sides) and reports the accuracy over every
frame with a 95% percentile bootstrap over placements (scene, setting), as the audit's CIs. It answers whether
a design carries a pixel signal, where the audit's single split answers whether one build passes. Builds
audited since 30 Nov carry the same figure as their ``pixel_cv`` row (``shortcuts.scene_fold_predict``, the same
folds); this tool recomputes it for builds audited before and splits out their test scenes.

Columns: build, task, frames, placements, scenes, cv_accuracy, ci_low, ci_high, test_split_accuracy (the same
out-of-fold predictions on the build's test scenes only).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def cv_accuracy(build: Path, task: str = "vpt", folds: int = 5, n_boot: int = 1000, seed: int = 0,
                meta=None) -> dict:
    """One build's grouped cross-validated pixel accuracy (see the module docstring); ``meta``: its metadata
    table with other labels (default: ``build/metadata.parquet``; tests give it labels of known difficulty)."""
    import numpy as np
    import pandas as pd

    from tasks.threedpc.shortcuts import (TASKS, AuditConfig, cluster_counts, cluster_ids, cluster_mean_ci,
                                          image_features, scene_fold_predict)

    meta_file = build / "metadata.parquet"
    if meta is None and not meta_file.exists():
        raise FileNotFoundError(f"{build}: no metadata.parquet (not a finished 3D-PC build)")
    cfg = AuditConfig()
    col, lab = TASKS[task]
    meta = pd.read_parquet(meta_file) if meta is None else meta
    d = meta[meta[col].fillna(False).to_numpy(bool)].reset_index(drop=True)
    scenes = d.scene.astype(str).to_numpy()
    if len(np.unique(scenes)) < 2:
        raise ValueError(f"{build}: {task} frames from {len(np.unique(scenes))} scene(s); need 2 or more")
    x = image_features(build, list(d.file_name), cfg.pixel_size).astype(np.float64)
    y = d[lab].astype(int).to_numpy()
    pred, _ = scene_fold_predict(x, y, scenes, cfg, np.random.default_rng(seed), folds)
    if pred is None:
        raise ValueError(f"{build}: a fold's training frames hold one {task} label")
    correct = (pred == y).astype(float)
    clusters = cluster_ids(d)
    lo, hi = cluster_mean_ci(correct, clusters, cluster_counts(clusters, n_boot, np.random.default_rng(seed)))
    test = (d.split == "test").to_numpy()
    return {"build": str(build), "task": task, "frames": len(y), "placements": int(clusters.max()) + 1,
            "scenes": len(np.unique(scenes)), "cv_accuracy": float(correct.mean()),
            "ci_low": lo, "ci_high": hi,
            "test_split_accuracy": float(correct[test].mean()) if test.any() else float("nan")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="finished 3D-PC build folders")
    ap.add_argument("--task", default="vpt", choices=("vpt", "depth"))
    ap.add_argument("--folds", type=int, default=5, help="scene folds (at most the number of scenes)")
    ap.add_argument("--out", default=None, help="also write the table here (.csv)")
    args = ap.parse_args(argv)
    if args.folds < 2:
        ap.error(f"--folds {args.folds}: need 2 or more (each scene is held out once)")
    import pandas as pd

    rows = []
    for b in args.builds:
        try:
            rows.append(cv_accuracy(Path(b), args.task, args.folds))
        except (FileNotFoundError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        r = rows[-1]
        print(f"{b}: {r['frames']} frames, {r['placements']} placements, {r['scenes']} scenes: cv accuracy "
              f"{r['cv_accuracy']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}], on its test scenes "
              f"{r['test_split_accuracy']:.3f}", flush=True)
    if args.out:
        from infra.files import atomic_write_text

        atomic_write_text(Path(args.out), pd.DataFrame(rows).to_csv(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
