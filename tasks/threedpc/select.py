"""Depth items matched on single image cues (issue 35.4): no one cue decides the depth order.

In a picture of props on a floor the nearer prop is usually the lower one and the larger one. Those are real
pictorial depth cues, but when one of them alone decides nearly every item, a depth benchmark measures that
cue, not depth perception. On builds with few frames per viewer trajectory (the frames then sit at the arc's
ends, where the depth gap is largest) the ball's image height alone ordered 95% of the (nearer, further)
pairs (AUC 0.050 against the depth label, docs/validity_sweep.md, ``s16_f2``), beyond the shortcut audit's gate
[0.10, 0.90].

:func:`cue_matched_keep` chooses the depth items among the balanced candidates: while some cue's AUC over the
kept items lies outside ``band``, it drops the items whose removal brings the cues back most (for one cue
alone: the positives it ranks highest and the negatives it ranks lowest, the items it decides most surely),
a positive and a negative at a time in one split, so that the labels stay balanced in every split; a removal
that would push another cue out of the band counts against itself. A build whose cues all lie inside the
band keeps every candidate, so such a build is unchanged by the selection. The cues are the shortcut audit's own
(:func:`tasks.threedpc.shortcuts.shortcut_cues`, computed from the metadata; the mean-colour cues need the
images and are left to the audit, where they stay far inside their gate: 0.54-0.66 over the sweep).

The AUC is the audit's (:func:`tasks.threedpc.shortcuts.weighted_auc`, over the frames where the cue is
finite, all splits together), so a kept set inside the band is inside it for the audit too.
"""
from __future__ import annotations

import math

import numpy as np

# cues the selection leaves to the audit: they need the images (mean colour)
IMAGE_CUES = ("mean_r", "mean_g", "mean_b")


class SelectionError(ValueError):
    """The band cannot be met without emptying a split's label (names the cue, its AUC and the band)."""


def cue_aucs(cues, y: np.ndarray, keep: np.ndarray) -> dict[str, float]:
    """AUC of each column of ``cues`` (a DataFrame) against ``y`` over the rows ``keep`` where it is finite
    (NaN when fewer than two rows or one label)."""
    from .shortcuts import weighted_auc

    out = {}
    for c in cues.columns:
        x = cues[c].to_numpy(float)
        ok = keep & np.isfinite(x)
        out[c] = float(weighted_auc(x[ok], y[ok])) if ok.sum() >= 2 and len(np.unique(y[ok])) == 2 else math.nan
    return out


def removal_effects(x: np.ndarray, y: np.ndarray, keep: np.ndarray) -> tuple[float, np.ndarray]:
    """One cue's AUC over the kept rows where it is finite, and (n,) the AUC after removing each row alone
    (unchanged for rows not kept or without the cue). With U the Mann–Whitney count of (positive, negative)
    pairs the cue orders correctly (ties one half), removing positive i takes away u_i (its negatives below,
    ties one half) and one positive: (U − u_i) / ((P − 1) N); removing negative j takes away v_j (its
    positives above): (U − v_j) / (P (N − 1))."""
    ok = keep & np.isfinite(x)
    pos, neg = ok & (y == 1), ok & (y == 0)
    p, n = int(pos.sum()), int(neg.sum())
    if p < 1 or n < 1:
        return math.nan, np.full(len(x), math.nan)
    xn, xp = np.sort(x[neg]), np.sort(x[pos])
    xf = np.where(ok, x, 0.0)
    a, b = np.searchsorted(xn, xf, "left"), np.searchsorted(xn, xf, "right")
    u = a + 0.5 * (b - a)                      # negatives below each row (ties one half)
    c, d = np.searchsorted(xp, xf, "left"), np.searchsorted(xp, xf, "right")
    v = (p - d) + 0.5 * (d - c)                # positives above each row (ties one half)
    total = float(u[pos].sum())
    auc = total / (p * n)
    after = np.full(len(x), auc)
    after[pos] = (total - u[pos]) / ((p - 1) * n) if p > 1 else math.nan  # the last of a label: undefined
    after[neg] = (total - v[neg]) / (p * (n - 1)) if n > 1 else math.nan
    return auc, after


def cue_matched_keep(cues, y, strata, band: tuple[float, float], step: float = 0.005,
                     max_rounds: int = 5000) -> tuple[np.ndarray, dict]:
    """Which rows to keep so that every cue's AUC lies in ``band`` (see the module docstring).

    ``cues``: DataFrame (n rows, one column per cue; NaN = cue unavailable for the row); ``y``: 0/1 labels
    (n,); ``strata``: (n,) labels of the groups to keep balanced (the splits). The distance outside the band,
    summed over the cues, is what each round lowers: every kept row is scored by how much removing it alone
    would lower that sum (:func:`removal_effects`, exact for one row); in each stratum the
    ``k = max(1, ceil(step × its smaller label count))`` best-scoring positives and as many negatives are taken
    together, and the stratum whose 2k removals lower the sum most loses them (never its last ``k`` of a
    label). A cue outside the band alone thus loses the items it ranks most surely (its highest positives,
    lowest negatives), and a removal that would push another cue out of the band counts against itself. Equal
    scores go to the items the outside cues rank most surely, then to the earlier row: deterministic.

    Returns (keep (n,) bool, :func:`selection_report`). Raises :class:`SelectionError` when every stratum would
    lose a label entirely (when no removal helps, the least harmful ones are taken: a local minimum is left,
    or the strata run out)."""
    y = np.asarray(y).astype(int)
    strata = np.asarray(strata).astype(str)
    lo, hi = float(band[0]), float(band[1])
    if not 0.0 <= lo < 0.5 < hi <= 1.0:
        raise SelectionError(f"depth_cue_band={list(band)}: need 0 <= low < 0.5 < high <= 1")
    xs = {c: cues[c].to_numpy(float) for c in cues.columns}

    def outside(a):
        return np.maximum(0.0, np.maximum(lo - a, a - hi))

    keep = np.ones(len(y), bool)
    before = cue_aucs(cues, y, keep)
    rounds = 0
    while True:
        aucs, gain = {}, np.zeros(len(y))
        for c, x in xs.items():
            a, after = removal_effects(x, y, keep)
            aucs[c] = a
            if np.isfinite(a):
                gain += outside(a) - outside(np.where(np.isfinite(after), after, a))
        excess = {c: float(outside(a)) for c, a in aucs.items() if np.isfinite(a)}
        worst = max(excess, key=lambda c: (excess[c], c), default=None)
        if worst is None or excess[worst] <= 0:
            break
        if rounds >= max_rounds:
            raise SelectionError(f"depth items: {worst} AUC {aucs[worst]:.3f} still outside band [{lo}, {hi}] after "
                                 f"{rounds} rounds")
        # among equal gains (ranks saturated: every positive above every negative), the items the outside cues
        # rank most surely first: their summed rank percentiles, signed towards the cue's side
        sure = np.zeros(len(y))
        for c, x in xs.items():
            if excess.get(c, 0.0) > 0:
                ok = keep & np.isfinite(x)
                r = np.zeros(len(y))
                r[ok] = (np.argsort(np.argsort(x[ok], kind="stable"), kind="stable") + 0.5) / ok.sum() - 0.5
                sure += r if aucs[c] > hi else -r
        sure = np.where(y == 1, sure, -sure)
        # the stratum whose k best positive and k best negative removals help most loses them (a small stratum,
        # e.g. a validation split of one scene, is not emptied to move a pooled AUC its larger peers can move)
        best = None
        for s in np.unique(strata[keep]):
            here = keep & (strata == s)
            pos, neg = np.flatnonzero(here & (y == 1)), np.flatnonzero(here & (y == 0))
            k = max(1, math.ceil(step * min(len(pos), len(neg))))
            if min(len(pos), len(neg)) <= k:
                continue
            picks = [rows[np.lexsort((-sure[rows], -gain[rows]))[:k]] for rows in (pos, neg)]
            total = float(gain[picks[0]].sum() + gain[picks[1]].sum())
            if best is None or total > best[0] + 1e-12:
                best = (total, picks)
        if best is None:
            raise SelectionError(
                f"depth items: bringing {worst} (AUC {aucs[worst]:.3f}) into band [{lo}, {hi}] would empty a label "
                "of every split; widen depth_cue_band or build more settings/frames")  # (also when no removal helps)
        for rows in best[1]:
            keep[rows] = False
        rounds += 1
    return keep, selection_report(cues, y, strata, (lo, hi), keep, rounds, before)


def selection_report(cues, y, strata, band, keep, rounds: int = 0, before: dict | None = None, **extra) -> dict:
    """``{"band", "rounds", "dropped": {stratum: rows}, "cues": {cue: {"before", "after"}}}`` (the cues outside
    the band before the selection; ``before``: their AUCs if already computed) plus ``extra``."""
    lo, hi = float(band[0]), float(band[1])
    before = cue_aucs(cues, y, np.ones(len(y), bool)) if before is None else before
    after = cue_aucs(cues, y, keep) if not keep.all() else before
    return {"band": [lo, hi], "rounds": rounds,
            "dropped": {str(s): int((~keep & (strata == s)).sum()) for s in np.unique(strata)},
            "cues": {c: {"before": round(before[c], 4), "after": round(after[c], 4)}
                     for c in cues.columns if np.isfinite(before[c]) and not lo <= before[c] <= hi}, **extra}


def depth_selection(df, band: tuple[float, float] | None):
    """The cue-matched depth items of an assembled build's table ``df`` (``in_depth`` already balanced per
    split): (index labels of ``df`` to drop from the depth set, report or None when ``band`` is None or there
    are no depth items). When the band cannot be met (:class:`SelectionError`: too few items) nothing is
    dropped and the report's ``unmet`` says why."""
    from .shortcuts import shortcut_cues

    sel = df["in_depth"].fillna(False).to_numpy(bool)
    if band is None or not sel.any():
        return df.index[:0], None
    sub = df[sel]
    cues = shortcut_cues(sub)
    cues = cues[[c for c in cues.columns if c not in IMAGE_CUES]]
    y, strata = sub["depth_label"].astype(int).to_numpy(), sub["split"].to_numpy()
    try:
        keep, report = cue_matched_keep(cues, y, strata, band)
    except SelectionError as e:
        # too few items to meet the band (a test build of a few frames): every candidate is kept, the summary and
        # the manifest say why, and the shortcut audit judges the build as it is (its gates need >= 40 placements)
        return df.index[:0], selection_report(cues, y, strata, band, np.ones(len(y), bool), unmet=str(e))
    return sub.index[~keep], report
