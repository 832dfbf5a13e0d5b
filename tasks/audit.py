"""Audits of the label pipeline: how often ray casting and rendering agree on VPT labels.

``agreement_study`` draws placements in catalogue (or any) scenes and labels each one both ways:

* ``mode="sampled"`` — the builder's protocol: placements drawn for a requested outcome
  (visible / occluded / out_of_view, in proportion 1:2:1) by :func:`tasks.placement.sample_placement`.
* ``mode="random"``  — unfiltered: both props anywhere on a ring around the object, the observer facing
  the target ± 45°. This includes the hard cases (grazing lines of sight, thin parts, gaps under
  objects) that the sampled protocol avoids, so it bounds how much the render check matters.

It returns one row per placement (scene, mode, both fractions and labels, final reason); the agreement
figure is the share of placements with both labels unambiguous on which they are equal.
"""
from __future__ import annotations

import math

import numpy as np

from .labels import LabelRules, vpt_label
from .placement import PlacementError, PropStyle, make_props, sample_placement


def _random_placement(scene, rng, style: PropStyle):
    lo, hi = scene.object_bounds
    c = (lo[:2] + hi[:2]) / 2
    r_obj = 0.5 * float(np.linalg.norm(hi[:2] - lo[:2]))
    while True:
        a, b = rng.uniform(0, 2 * math.pi, 2)
        p = c + (r_obj + rng.uniform(0.15, 1.0)) * np.array([math.cos(a), math.sin(a)])
        q = c + (r_obj + rng.uniform(0.05, 1.0)) * np.array([math.cos(b), math.sin(b)])
        if np.linalg.norm(p - q) > 0.4:
            yaw = math.degrees(math.atan2(q[1] - p[1], q[0] - p[0])) + rng.uniform(-45, 45)
            return make_props(style, p, yaw, q)


def agreement_study(scene_names: list[str], per_scene: int, seed: int = 0, mode: str = "sampled",
                    rules: LabelRules = LabelRules(), style: PropStyle = PropStyle(), progress: bool = False):
    import pandas as pd
    from tqdm import tqdm

    from scenes.load import load_scene

    if mode not in ("sampled", "random"):
        raise ValueError(f"mode={mode!r}; one of 'sampled', 'random'")
    rows = []
    for si, name in enumerate(tqdm(scene_names, desc=f"audit ({mode})", disable=not progress)):
        sc = load_scene(name)
        rng = np.random.default_rng([seed, si])
        for i in range(per_scene):
            if mode == "sampled":
                outcome = ("visible", "occluded", "occluded", "out_of_view")[i % 4]
                try:
                    pl, _ = sample_placement(sc, outcome, rng, style, rules)
                except PlacementError:  # e.g. 'occluded' on the ground behind a bench: rule 2.0 sees under it
                    rows.append({"scene": name, "mode": mode, "requested": outcome, "vpt_label": None,
                                 "vpt_reason": "not_found"})
                    continue
            else:
                outcome = ""
                pl = _random_placement(sc, rng, style)
            lab = vpt_label(sc, pl.observer, pl.target, rules, support=pl.target_support)
            rows.append({"scene": name, "mode": mode, "requested": outcome, **pl.to_row(), **lab})
    df = pd.DataFrame(rows)
    return df


def agreement(df) -> tuple[float, int]:
    """(share of equal labels, count) over placements whose ray-cast and render labels are both set."""
    both = df["vpt_label_raycast"].notna() & df["vpt_label_render"].notna()
    n = int(both.sum())
    same = (df.loc[both, "vpt_label_raycast"] == df.loc[both, "vpt_label_render"]).sum()
    return (float(same) / n if n else float("nan")), n
