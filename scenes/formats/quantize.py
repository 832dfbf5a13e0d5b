"""Quantisation shared by the compressed scene formats: unsigned-normalised bit fields, clamped logits,
Morton order and 1-D codebooks. Plain vectorised numpy (no loop per Gaussian).

Conventions: an ``n``-bit unorm field holds ``round(t · (2ⁿ − 1))`` for ``t`` in [0, 1] (round half up, as
PlayCanvas's ``packUnorm``: ``floor(t · (2ⁿ − 1) + 0.5)``) and decodes to ``q / (2ⁿ − 1)``, so the decode
error is at most half a step, ``0.5 / (2ⁿ − 1)`` of the field's range.
"""
from __future__ import annotations

import numpy as np

# opacity byte 0 or 255 would be a logit of ∓inf; formats that store sigmoid(opacity) are decoded with the
# alpha clamped here (as splat-transform's readers do), which re-encodes to the same byte
ALPHA_EPS = 1e-6


def unorm_unpack(words: np.ndarray, shift: int, bits: int) -> np.ndarray:
    """The ``bits``-wide field at ``shift`` of unsigned integer ``words``, as float64 in [0, 1]."""
    mask = (1 << bits) - 1
    return ((np.asarray(words, np.uint32) >> np.uint32(shift)) & np.uint32(mask)).astype(np.float64) / mask


def unorm_pack(t: np.ndarray, bits: int) -> np.ndarray:
    """``t`` in [0, 1] (clamped) → ``bits``-wide unsigned integers (uint32), round half up."""
    mask = (1 << bits) - 1
    return np.clip(np.floor(np.asarray(t, np.float64) * mask + 0.5), 0, mask).astype(np.uint32)


def alpha_to_logit(alpha: np.ndarray) -> np.ndarray:
    """Opacity in [0, 1] → logit, with alpha clamped to [ALPHA_EPS, 1 − ALPHA_EPS] (finite for 0 and 1)."""
    a = np.clip(np.asarray(alpha, np.float64), ALPHA_EPS, 1.0 - ALPHA_EPS)
    return np.log(a) - np.log1p(-a)


def byte_table(decode) -> np.ndarray:
    """``decode`` (float64 → float64) evaluated for the 256 byte values, as float32: decoding a byte field
    is then one gather, ``byte_table(f)[bytes]``, equal to ``f(bytes).astype(float32)``."""
    return np.asarray(decode(np.arange(256, dtype=np.float64)), np.float64).astype(np.float32)


ALPHA_LOGITS = byte_table(lambda b: alpha_to_logit(b / 255.0))  # opacity byte → logit


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def _spread_bits_10(v: np.ndarray) -> np.ndarray:
    """Insert two zero bits after each of the 10 low bits of ``v`` (uint64): abc → a00b00c."""
    v = v.astype(np.uint64) & np.uint64(0x3FF)
    v = (v | (v << np.uint64(16))) & np.uint64(0x030000FF)
    v = (v | (v << np.uint64(8))) & np.uint64(0x0300F00F)
    v = (v | (v << np.uint64(4))) & np.uint64(0x030C30C3)
    v = (v | (v << np.uint64(2))) & np.uint64(0x09249249)
    return v


def morton_order(means: np.ndarray) -> np.ndarray:
    """Indices that sort points [N, 3] along a Z-order (Morton) curve of 10 bits per axis over their box.

    Neighbouring Gaussians end up in the same 256-Gaussian chunk (compressed PLY) or texture block (SOG),
    which tightens per-chunk bounds and helps compression; the order is deterministic (stable sort).
    """
    p = np.asarray(means, np.float64)
    if len(p) == 0:
        return np.zeros(0, np.int64)
    lo, hi = p.min(0), p.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    q = np.clip(np.floor((p - lo) / span * 1023.0), 0, 1023).astype(np.uint64)
    code = _spread_bits_10(q[:, 0]) | (_spread_bits_10(q[:, 1]) << np.uint64(1)) | (_spread_bits_10(q[:, 2]) << np.uint64(2))
    return np.argsort(code, kind="stable")


def codebook_1d(values: np.ndarray, size: int = 256, iterations: int = 20) -> np.ndarray:
    """A sorted float32 codebook of ``size`` entries for ``values`` (any shape; all entries share it).

    With at most ``size`` distinct values the codebook is exactly those values (padded with the largest),
    so re-encoding a decoded file reproduces it. Otherwise 1-D k-means (Lloyd's algorithm, exact on sorted
    data: assignment = the segment between the midpoints of neighbouring centres), seeded at the ``size``
    quantiles ``(i + 0.5) / size`` and run for ``iterations`` rounds; an empty cell keeps its centre.
    splat-transform's SOG writer uses 1-D k-means too (its ``quantize1d``); the values differ, the decoder
    does not care.
    """
    v = np.sort(np.asarray(values, np.float64).ravel())
    if v.size == 0:
        return np.zeros(size, np.float32)
    uniq = np.unique(v.astype(np.float32))
    if len(uniq) <= size:
        return np.concatenate([uniq, np.full(size - len(uniq), uniq[-1], np.float32)])
    centres = np.quantile(v, (np.arange(size) + 0.5) / size)
    csum = np.concatenate([[0.0], np.cumsum(v)])
    for _ in range(iterations):
        centres = np.unique(centres)  # merged centres would leave a cell with no values
        edges = np.searchsorted(v, (centres[1:] + centres[:-1]) / 2)
        lo = np.concatenate([[0], edges])
        hi = np.concatenate([edges, [len(v)]])
        count = hi - lo
        means = np.where(count > 0, (csum[hi] - csum[lo]) / np.maximum(count, 1), centres)
        if np.array_equal(means, centres):
            break
        centres = means
    book = np.unique(centres.astype(np.float32))
    return np.concatenate([book, np.full(size - len(book), book[-1], np.float32)])


def codebook_index(values: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """Index (uint8 for codebooks of ≤ 256 entries, else int64) of the nearest codebook entry to each value.

    ``codebook`` must be sorted ascending; ties go to the lower entry.
    """
    book = np.asarray(codebook, np.float64)
    mid = (book[1:] + book[:-1]) / 2
    idx = np.searchsorted(mid, np.asarray(values, np.float64), side="left")
    return idx.astype(np.uint8) if len(book) <= 256 else idx


# the three stored components, in order, for each dropped one (quaternion component indices)
SMALLEST_THREE_SLOTS = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])


def smallest_three(quats: np.ndarray, roundtrip) -> tuple[np.ndarray, np.ndarray]:
    """Choose, for each quaternion, which component a "smallest three" code drops (and reconstructs).

    ``quats`` [N, 4] (any order of components, normalised here); ``roundtrip(values)`` is the format's
    quantise-then-decode of stored components (values in about [−1/√2, 1/√2]). Returns ``(dropped [N],
    stored [N, 3])``: the dropped index and the three stored components (sign fixed so the dropped one is
    ≥ 0), before quantisation.

    The usual rule drops the largest |component|, so that the stored ones lie in [−1/√2, 1/√2]. When two
    are nearly equal (about 0.2% of trained Gaussians), quantising the others can make the reconstructed
    "largest" smaller than a stored one, and the plain rule would then pick the other component when the
    decoded quaternion is encoded again. Here, among the components whose dropping leaves the stored ones in
    [−1/√2, 1/√2] (the largest always does; a near-tie gives two), the dropped one is the one whose code
    decodes closest to the quaternion (ties: the larger component); so re-encoding a decoded file gives its
    words back.
    """
    q = np.asarray(quats, np.float64)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    n = len(q)
    rows = np.arange(n)
    errors = np.empty((n, 4))
    for drop in range(4):
        sign = np.where(q[:, drop] < 0, -1.0, 1.0)[:, None]
        target = q * sign
        got = np.asarray(roundtrip(target[:, SMALLEST_THREE_SLOTS[drop]]), np.float64)
        recon = np.empty_like(target)
        recon[:, SMALLEST_THREE_SLOTS[drop]] = got
        recon[:, drop] = np.sqrt(np.maximum(0.0, 1.0 - (got**2).sum(1)))
        errors[:, drop] = np.linalg.norm(recon - target, axis=1)
        in_range = (np.abs(target[:, SMALLEST_THREE_SLOTS[drop]]) <= np.sqrt(0.5) + 1e-6).all(1)
        errors[~in_range, drop] = np.inf
    best = errors.min(1, keepdims=True)
    # among choices as good as the best (to rounding), the largest component, as the plain rule
    score = np.where(errors <= best + 1e-12, np.abs(q), -1.0)
    dropped = np.argmax(score, axis=1)
    stored = q[rows[:, None], SMALLEST_THREE_SLOTS[dropped]] * np.where(q[rows, dropped] < 0, -1.0, 1.0)[:, None]
    return dropped, stored
