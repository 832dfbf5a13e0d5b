"""16-class ImageNet (Geirhos et al., 2018): map 1000-way ImageNet probabilities to 16 categories.

The category → ILSVRC-2012 index table is versioned package data (``scenes/objects/imagenet.json``: the
lowest layer that uses it, the object library, owns the one copy; 207 classes; it includes manual exclusions, so it is data, not derived from WordNet). A 1000-class model's
decision: softmax over its logits, then per category aggregate its classes' probabilities by the mean
(the principled choice derived in the paper's appendix, used by model-vs-human), the sum (the 2018
plots) or the max; the aggregation is recorded with every result.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

import numpy as np

AGGREGATIONS = ("mean", "sum", "max")


@functools.lru_cache(maxsize=1)
def mapping() -> dict:
    with resources.files("scenes.objects").joinpath("imagenet.json").open() as f:
        return json.load(f)


def categories() -> list[str]:
    return sorted(mapping()["categories"])


def category_scores(probs: np.ndarray, aggregation: str = "mean") -> np.ndarray:
    """[..., 1000] probabilities → [..., 16] category scores (alphabetical category order)."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation={aggregation!r}; one of {AGGREGATIONS}")
    p = np.asarray(probs, np.float64)
    if p.shape[-1] != 1000:
        raise ValueError(f"expected 1000 ImageNet probabilities in the last axis, got {p.shape[-1]}")
    table = mapping()["categories"]
    fn = {"mean": np.mean, "sum": np.sum, "max": np.max}[aggregation]
    return np.stack([fn(p[..., table[c]], axis=-1) for c in categories()], axis=-1)


def decide(probs: np.ndarray, aggregation: str = "mean") -> tuple[np.ndarray, np.ndarray]:
    """(category names [...], scores [..., 16]) — the 16-way decision of a 1000-way model."""
    scores = category_scores(probs, aggregation)
    return np.asarray(categories())[np.argmax(scores, axis=-1)], scores
