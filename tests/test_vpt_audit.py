"""Ray-cast vs rendered VPT labels over hundreds of placements in the catalogue (the label audit)."""
import numpy as np
import pytest

from scenes.catalogue import CATEGORIES
from tasks.audit import agreement, agreement_study


def check_sampled(df, min_both: float) -> None:
    """The audit's claims on sampled placements: ray cast and render agree (>= 98 %), the ray cast is never
    'partial', placements not found are only 'occluded' requests (<= 25 %), kept labels are as requested."""
    share, n = agreement(df)
    print(f"\nsampled placements: {len(df)}; both labels set: {n}; agreement {share:.4f}; "
          f"reasons {df.vpt_reason.value_counts().to_dict()}")
    # the sampler accepts by the whole aperture (rule v2.0+), so the ray cast is never partial; where no
    # placement on the ground is hidden from the whole lens (the gap under a bench or couch) none is found.
    # Rule v3.0 asks the ball's clearance disc (2 radii) to be hidden, which a small object hides less often
    # on the ground: 41 of 200 not found at seed 0 (v2.0: under 40), hence 25%
    assert n >= min_both * len(df)
    assert share >= 0.98
    assert (df.vpt_reason_raycast != "partial").all()
    missing = df[df.vpt_reason == "not_found"]
    assert (missing.requested == "occluded").all() and len(missing) <= 0.25 * len(df)
    # every requested outcome was produced and labelled as requested when kept
    kept = df[df.vpt_label.notna()]
    want = {"visible": 1, "occluded": 0, "out_of_view": 0}
    assert (kept.vpt_label == kept.requested.map(want)).all()
    assert set(kept.requested) == set(want), "every outcome kept at least once"


def test_raycast_and_render_agree_on_sampled_placements():
    """The default suite's audit: every category once, each requested outcome (visible, occluded twice,
    out of view) once per scene: 40 placements (the 200-placement audit below is `make test-slow`)."""
    df = agreement_study([f"{c}_01" for c in CATEGORIES], per_scene=4, seed=0, mode="sampled")
    assert len(df) == 40
    check_sampled(df, min_both=0.65)


@pytest.mark.slow
def test_raycast_and_render_agree_on_200_sampled_placements():
    df = agreement_study([f"{c}_{i:02d}" for c in CATEGORIES for i in (1, 3)], per_scene=10, seed=0, mode="sampled")
    assert len(df) >= 200
    check_sampled(df, min_both=0.65)  # n >= 130 of 200


def test_raycast_and_render_agree_on_unfiltered_placements():
    df = agreement_study([f"{c}_02" for c in CATEGORIES], per_scene=10, seed=1, mode="random")
    share, n = agreement(df)
    in_view = df[df.in_view]
    share_iv, n_iv = agreement(in_view)
    print(f"\nrandom placements: {len(df)}; agreement {share:.4f} of {n}; in view only {share_iv:.4f} of {n_iv}; "
          f"partial {int((df.vpt_reason == 'partial').sum())}")
    assert share >= 0.98 and share_iv >= 0.95 and n_iv >= 30
    assert np.isfinite(df.visible_fraction_render).all()
