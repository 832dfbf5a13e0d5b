"""How many sampled VPT placements hang on the exact eye point (issue 10.3), and what the aperture costs.

Draws placements with the builder's sampler (``tasks.placement.sample_placement``, which accepts by the
lens-centre ray cast) in every catalogue scene, then ray-casts each from the whole aperture
(``tasks.labels.aperture_fractions``) at several aperture radii (in observer sizes) and counts how many
requested-occluded placements are half visible or more from some aperture point, and how many the v2.0
rule calls ``partial``. Also times the ray cast from the centre alone and from the 9 aperture points.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/aperture.py [--per 4] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

import numpy as np

# run as a script, this folder comes first on sys.path and benchmarks/render.py would shadow the package
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def main() -> None:
    import pandas as pd

    from scenes.catalogue import catalogue_names
    from scenes.load import load_scene
    from tasks.labels import LabelRules, aperture_fractions, in_view, vpt_from_aperture
    from tasks.placement import PropStyle, sample_placement
    from tasks.threedpc.build import jittered_style

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=int, default=4, help="placements per scene and outcome")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    scales = [0.1, 0.15, 0.2, 0.25, 0.3]
    rows, t_centre, t_aperture = [], [], []
    for name in catalogue_names():
        scene = load_scene(name)
        occ = scene.occluders()
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        for outcome in ("occluded", "visible"):
            for _ in range(args.per):
                pl, _ = sample_placement(scene, outcome, rng, jittered_style(PropStyle(), rng, 0.2), LabelRules())
                view = in_view(pl.observer, pl.target)
                rec = {"scene": name, "category": name.split("_")[0], "outcome": outcome}
                t = time.perf_counter()
                aperture_fractions(pl.observer, pl.target, occ, LabelRules(aperture_scale=0.0), support=pl.target_support)
                t_centre.append(time.perf_counter() - t)
                for s in scales:
                    rules = LabelRules(aperture_scale=s)
                    t = time.perf_counter()
                    fr = aperture_fractions(pl.observer, pl.target, occ, rules, support=pl.target_support)
                    if s == 0.25:
                        t_aperture.append(time.perf_counter() - t)
                    rec[f"max_{s}"] = fr.max()
                    rec[f"reason_{s}"] = vpt_from_aperture(fr, view, rules)[1]
                rows.append(rec)
    df = pd.DataFrame(rows)
    occ_, vis = df[df.outcome == "occluded"], df[df.outcome == "visible"]
    print(f"{len(occ_)} occluded and {len(vis)} visible placements drawn by the lens-centre sampler "
          f"({args.per} per scene and outcome, seed {args.seed})")
    print("aperture radius (observer sizes, cm at 0.24 m) | occluded: >=50% visible from the rim | occluded -> partial | visible -> partial")
    for s in scales:
        print(f"  {s:.2f} ({100 * s * 0.24:.1f} cm) | {(occ_[f'max_{s}'] >= 0.5).sum()} | "
              f"{(occ_[f'reason_{s}'] == 'partial').sum()} | {(vis[f'reason_{s}'] == 'partial').sum()}")
    per_cat = occ_.groupby("category")["reason_0.25"].apply(lambda r: f"{(r == 'partial').sum()}/{len(r)}")
    print("occluded -> partial at 0.25, by category:", per_cat.to_dict())
    print(f"ray cast per placement (median): centre {np.median(t_centre) * 1e3:.1f} ms, "
          f"aperture (9 points) {np.median(t_aperture) * 1e3:.1f} ms, ratio {np.median(t_aperture) / np.median(t_centre):.1f}")


if __name__ == "__main__":
    main()
