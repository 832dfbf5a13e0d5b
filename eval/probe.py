"""Linear probes on cached embeddings (the 3D-PC protocol; every value configurable).

Head: ``BatchNorm1d(d, affine=False) → Dropout(p) → Linear(d, k)`` trained with cross-entropy (for two
classes this is the released code's ``Linear(d, 1)`` + BCE up to parameterisation) by AdamW. Early stopping
watches the validation split (held out by setting or pair, never by image): the head with the best
``monitor`` value is kept; training stops after ``patience`` epochs without improvement (0 = run all
epochs, keep the best). Several seeds give a mean and a CI across seeds; every evaluation split also gets a
bootstrap CI over items per seed.
"""
from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from infra import schema as S

# method_digest, summary_rows, task_clusters and trial_rows live in the runner now; re-exported for callers
from .runner import (Method, SeedResult, method_digest, register_method, run_method, summary_rows,  # noqa: F401
                     task_clusters, trial_rows)

log = logging.getLogger(__name__)


MONITORS = ("val_loss", "val_accuracy")


@dataclass(frozen=True)
class ProbeConfig:
    """The 3D-PC protocol's linear probe (``python -m eval probe``: ``probe.<field>=``). Declared and checked
    with ``infra.schema`` (errors name ``probe.<field>``)."""

    lr: float = S.field(5e-4, "AdamW learning rate", check=S.above(0))
    weight_decay: float = S.field(1e-4, "AdamW weight decay", check=S.at_least(0))
    epochs: int = S.field(50, "most training epochs", check=S.at_least(1))
    batch_size: int = S.field(128, "embeddings per step", check=S.at_least(1))
    dropout: float = S.field(0.3, "dropout probability before the linear layer", check=S.between(0, 1, "[)"))
    patience: int = S.field(10, "epochs without improvement before stopping (0 = run all, keep the best)",
                            check=S.at_least(0))
    monitor: str = S.field("val_loss", "validation value that picks the best head", choices=MONITORS)
    seeds: tuple[int, ...] = S.field((0, 1, 2), "training seeds", check=S.non_empty("at least one seed"))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))

    def __post_init__(self):
        S.validate_section(self, "probe")


@dataclass
class ProbeFit:
    head: object  # torch.nn.Module
    best_epoch: int
    epochs_run: int
    val_accuracy: float
    val_loss: float
    seconds: float
    history: list = field(default_factory=list)


def make_head(dim: int, n_classes: int, dropout: float, seed: int | None = None):
    """The released code's probe head: BatchNorm1d without affine -> Dropout(p) -> Linear(d, k).

    With ``seed``, the dropout masks come from a seeded NumPy generator (:class:`SeededDropout`) instead of
    torch's CPU Bernoulli sampler, which was half of the probe's training time (measured in
    ``benchmarks/eval.py``); ``seed=None`` gives the plain ``nn.Dropout`` twin. Both drop each input with
    probability p and scale the kept ones by 1/(1-p) in training, and are the identity in eval mode."""
    import torch.nn as nn

    drop = nn.Dropout(dropout) if seed is None else SeededDropout(dropout, seed, fast=FAST_MASKS)
    return nn.Sequential(nn.BatchNorm1d(dim, affine=False), drop, nn.Linear(dim, n_classes))


GATHER_PER_BATCH = True  # each batch's rows gathered when used (stays in cache: ~3x cheaper than gathering the
# shuffled matrix once per epoch, the reference, measured 10 vs 31 ms per epoch at 5,176 x 2,048; same rows)
FAST_MASKS = True  # SeededDropout draws its masks as 32-bit integers (Uint32Masks): the same masks, ~2x cheaper


def SeededDropout(p: float, seed: int, fast: bool = True):  # noqa: N802 - a module factory (torch is imported lazily)
    """Inverted dropout with masks from ``numpy.random.default_rng(seed)``: keep each element with
    probability 1-p (a uniform float32 draw >= p) and scale kept ones by 1/(1-p); identity in eval mode.

    ``fast`` draws the same masks without making the floats (:class:`Uint32Masks`, ~2x cheaper; the
    masks were the probe's largest cost); ``fast=False`` is the reference, ``rng.random(..., float32) >= p``."""
    import torch
    import torch.nn as nn

    class _SeededDropout(nn.Module):
        def __init__(self):
            super().__init__()
            self.p, self.rng = float(p), np.random.default_rng(seed)
            self.masks = Uint32Masks(self.rng, self.p) if fast else None

        def forward(self, x):
            if not self.training or self.p == 0.0:
                return x
            shape = tuple(x.shape)
            keep = self.masks.keep(shape) if self.masks else self.rng.random(shape, dtype=np.float32) >= self.p
            return x * torch.from_numpy(keep) / (1.0 - self.p)

        def extra_repr(self) -> str:
            return f"p={self.p}, numpy generator"

    return _SeededDropout()


class Uint32Masks:
    """The masks ``rng.random(shape, dtype=float32) >= p`` of a fresh ``default_rng`` (PCG64), call after
    call, without making the floats. NumPy makes a float32 draw from one 32-bit output ``r`` as
    ``(r >> 8) * 2**-24`` and takes 32-bit outputs as the low then the high half of each 64-bit output,
    keeping an odd call's last half for the next call; the comparison with ``p`` is in float32. So
    ``draw >= p`` exactly when ``r >= ceil(float32(p) * 2**24) * 256``, and the 32-bit outputs are the
    generator's raw 64-bit outputs read as pairs (little-endian), with the left-over half kept here.
    Checked against the float draws in tests/test_eval_fastpath.py."""

    def __init__(self, rng, p: float):
        import math
        import sys

        if sys.byteorder != "little" or type(rng.bit_generator).__name__ != "PCG64":
            raise ValueError("Uint32Masks needs NumPy's PCG64 on a little-endian machine")
        self.bits = rng.bit_generator
        self.threshold = np.uint32(min(math.ceil(float(np.float32(p)) * 2 ** 24), 2 ** 24 - 1) * 256) \
            if p > 0 else np.uint32(0)
        self.always = float(np.float32(p)) > 1 - 2 ** -24  # every draw is below p: keep nothing
        self.left = np.empty(0, np.uint32)

    def keep(self, shape: tuple) -> np.ndarray:
        n = int(np.prod(shape))
        need = n - len(self.left)
        raw = self.bits.random_raw((need + 1) // 2).view(np.uint32) if need > 0 else np.empty(0, np.uint32)
        r = np.concatenate([self.left, raw]) if len(self.left) else raw
        self.left = r[n:].copy()
        if self.always:
            return np.zeros(shape, bool)
        return (r[:n] >= self.threshold).reshape(shape)


def _evaluate(head, X, y, batch: int = 4096):
    import torch
    import torch.nn.functional as F

    head.eval()
    with torch.no_grad():
        logits = torch.cat([head(X[i:i + batch]) for i in range(0, len(X), batch)])
        loss = float(F.cross_entropy(logits, y)) if y is not None else float("nan")
        acc = float((logits.argmax(1) == y).float().mean()) if y is not None else float("nan")
    return logits, loss, acc


def train_probe(X_train: np.ndarray, y_train: np.ndarray, X_val: np.ndarray, y_val: np.ndarray,
                n_classes: int, cfg: ProbeConfig, seed: int) -> ProbeFit:
    if len(X_train) < 2 or len(X_val) < 1:
        raise ValueError(f"a probe needs >= 2 training and >= 1 validation images (got {len(X_train)}, {len(X_val)})")
    with _probe_threads():
        return _train_probe(X_train, y_train, X_val, y_val, n_classes, cfg, seed)


PROBE_THREADS = 1  # the head's ops are tiny (a batch of 128 x d): a second thread only adds synchronisation,
# and on a busy machine a descheduled partner thread stalls every op (measured 7x slower with 2 threads)


class _probe_threads:
    """Run the probe's training with ``PROBE_THREADS`` intra-op threads, restoring the caller's count."""

    def __enter__(self):
        import torch

        self.before = torch.get_num_threads()
        torch.set_num_threads(min(PROBE_THREADS, self.before))

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self.before)


def _train_probe(X_train, y_train, X_val, y_val, n_classes, cfg, seed) -> ProbeFit:
    import torch
    import torch.nn.functional as F

    t0 = time.perf_counter()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    Xt = torch.from_numpy(np.array(X_train, dtype=np.float32))
    yt = torch.from_numpy(np.array(y_train, dtype=np.int64))
    Xv = torch.from_numpy(np.array(X_val, dtype=np.float32))
    yv = torch.from_numpy(np.array(y_val, dtype=np.int64))
    head = make_head(Xt.shape[1], n_classes, cfg.dropout, seed=seed)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    best = (None, -1, float("inf"), -1.0, float("inf"))  # state, epoch, score, acc, loss
    history, since = [], 0
    n = len(Xt)
    for epoch in range(cfg.epochs):
        head.train()
        perm = torch.randperm(n, generator=gen)
        if not GATHER_PER_BATCH:  # the reference: one gather per epoch, batches are contiguous slices
            Xp, yp = Xt[perm], yt[perm]
        for i in range(0, n, cfg.batch_size):
            if min(cfg.batch_size, n - i) < 2:  # BatchNorm in training mode needs two samples
                continue
            if GATHER_PER_BATCH:
                idx = perm[i:i + cfg.batch_size]
                xb, yb = Xt[idx], yt[idx]
            else:
                xb, yb = Xp[i:i + cfg.batch_size], yp[i:i + cfg.batch_size]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(head(xb), yb).backward()
            opt.step()
        _, vloss, vacc = _evaluate(head, Xv, yv)
        history.append({"epoch": epoch, "val_loss": vloss, "val_accuracy": vacc})
        score = vloss if cfg.monitor == "val_loss" else -vacc
        if score < best[2] - 1e-12:
            best = (copy.deepcopy(head.state_dict()), epoch, score, vacc, vloss)
            since = 0
        else:
            since += 1
            if cfg.patience and since >= cfg.patience:
                break
    head.load_state_dict(best[0])
    head.eval()
    return ProbeFit(head, best[1], len(history), best[3], best[4], time.perf_counter() - t0, history)


def predict(head, X: np.ndarray) -> np.ndarray:
    """Class probabilities [N, k]."""
    import torch

    logits, _, _ = _evaluate(head, torch.from_numpy(np.array(X, dtype=np.float32)), None)
    return torch.softmax(logits, 1).numpy()


@register_method("probe")
class ProbeMethod(Method):
    """The linear probe as an evaluation method: one head per seed on the cached embeddings of the task's
    train split, early-stopped on val, class probabilities for the evaluation items."""

    Config = ProbeConfig

    def __init__(self, task, cfg: ProbeConfig, embeddings, feature: str = "pooled", identity: dict | None = None):
        super().__init__(task, cfg)
        self.embeddings, self.feature, self._identity = embeddings, feature, dict(identity or {})

    def digest_fields(self) -> dict:
        return {"feature": self.feature, "embeddings": self.embeddings.key}

    def identity(self) -> dict:
        return self._identity

    def start(self, items: pd.DataFrame, run) -> None:
        # every matrix is looked up before the first seed: a missing embedding fails before any training
        self.tr, self.va = self.task.split("train"), self.task.split("val")
        self.Xtr = self.embeddings.matrix(self.tr["item_id"], self.feature)
        self.Xva = self.embeddings.matrix(self.va["item_id"], self.feature)
        self.Xev = self.embeddings.matrix(items["item_id"], self.feature)

    def run_seed(self, seed: int, rid: str) -> SeedResult:
        fit = train_probe(self.Xtr, self.tr["label"].to_numpy(), self.Xva, self.va["label"].to_numpy(),
                          len(self.task.classes), self.cfg, seed)
        return SeedResult(probs=predict(fit.head, self.Xev), facts={
            "best_epoch": fit.best_epoch, "epochs_run": fit.epochs_run, "val_accuracy": fit.val_accuracy,
            "train_seconds": fit.seconds})


def run_probe(task, embeddings, model_id: str, cfg: ProbeConfig, results_dir, feature: str = "pooled",
              method: str = "probe", config_extra: dict | None = None, progress: bool = True,
              identity: dict | None = None) -> pd.DataFrame:
    """Train one probe per seed on ``task``'s train split, early-stop on val, evaluate the task's
    evaluation splits, and append trial and summary parts to ``results_dir`` (through
    :func:`eval.runner.run_method`). Seeds whose run already exists are skipped (resumable). ``identity``
    (``LoadedModel.run_identity()``: weights, preprocess) is recorded on every row with the feature and the
    method config digest. Returns this model's summary rows for the seeds."""
    return run_method(ProbeMethod(task, cfg, embeddings, feature, identity), model_id, results_dir,
                      run_method_name=method, config_extra=config_extra, progress=progress)


def seed_summary(summary: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """Mean and t-interval across seeds of accuracy per (model, run identity, task, method, split); the
    interval is clipped to [0, 1] (an accuracy cannot leave it; with 3 seeds the t-interval can); a single
    seed gives the interval [0, 1]. Runs of one model id with different weights, preprocessing, feature or
    method config are separate rows (an ``observer`` label from :func:`eval.results.label_runs` tells them
    apart). Computed per group column-wise (a zoo sweep has thousands of groups); :func:`seed_summary_loop`
    is the group-by-group reference."""
    from scipy import stats as st

    summary, keys = _seed_groups(summary)
    if summary.empty:
        return seed_summary_loop(summary, ci)
    g = summary[["accuracy", "balanced_accuracy"]].astype(float).groupby([summary[k] for k in keys], sort=True,
                                                                         dropna=False)
    agg = pd.DataFrame({"seeds": g["accuracy"].size(), "m": g["accuracy"].mean(), "sd": g["accuracy"].std(ddof=1),
                        "b": g["balanced_accuracy"].mean()})
    agg.loc[g["accuracy"].count() < agg["seeds"], ["m", "sd"]] = np.nan  # a missing accuracy spoils its group
    n = agg["seeds"].to_numpy()
    m = agg["m"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where(n > 1, st.t.ppf(0.5 + ci / 2, np.maximum(n - 1, 1)) * agg["sd"].to_numpy(float)
                        / np.sqrt(n), np.nan)
    low, high = m - half, m + half
    out = {k: list(v) for k, v in zip(keys, zip(*agg.index))}
    out.update(seeds=n.astype(int).tolist(), accuracy_mean=m.tolist(),
               accuracy_ci_low=np.where(low > 0.0, low, 0.0).tolist(),  # as max(0, x): NaN -> 0
               accuracy_ci_high=np.where(high < 1.0, high, 1.0).tolist(),  # as min(1, x): NaN -> 1
               balanced_accuracy_mean=agg["b"].to_numpy(float).tolist())
    return pd.DataFrame(out)


def _seed_groups(summary: pd.DataFrame):
    from .results import IDENTITY, label_runs

    summary, _ = label_runs(summary)
    return summary, ["model_id", "observer", *[c for c in IDENTITY if c in summary], "task", "method", "split"]


def seed_summary_loop(summary: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """Reference twin of :func:`seed_summary`: one group at a time."""
    from scipy import stats as st

    summary, keys = _seed_groups(summary)
    rows = []
    for key, g in summary.groupby(keys, sort=True, dropna=False):
        a = g["accuracy"].to_numpy(float)
        m = float(a.mean())
        half = float(st.t.ppf(0.5 + ci / 2, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a))) if len(a) > 1 else float("nan")
        rows.append(dict(zip(keys, key), seeds=len(a), accuracy_mean=m,
                         accuracy_ci_low=max(0.0, m - half), accuracy_ci_high=min(1.0, m + half),
                         balanced_accuracy_mean=float(g["balanced_accuracy"].mean())))
    return pd.DataFrame(rows)
