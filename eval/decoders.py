"""Decoders: linear (or small MLP) read-outs of a frozen network at several depths at once (MindSet: Vision).

Source: ``papers/mindset-vision.txt`` and ``reference/mindset-catalogue.md`` section 4 (the original trained
six linear decoders on a ResNet-152 — raw image, the four stages, avgpool — with the whole network in
training mode, so the "frozen" backbone's BatchNorm statistics drifted on the synthetic images; a bug).

Here the backbone only ever runs inside feature extraction (``eval.zoo.LoadedModel.features``: eval mode,
``torch.inference_mode``) and its features come from the embedding cache (``eval.embeddings``), so its
parameters and BatchNorm buffers cannot change (tested bit for bit). Decoder inputs (``features``):
``pixels`` (the preprocessed image average-pooled to ``pixel_size`` × ``pixel_size`` × 3 and flattened:
the raw-input decoder), each zoo tap (spatially averaged, e.g. ``layer1`` … ``layer4``) and ``pooled``.
MindSet flattened the full maps (up to 802,816 inputs); averaged maps keep the depth comparison at a cost a
CPU can train in seconds — a documented difference.

Training (one decoder per feature, all on the same batches, one Adam optimiser each, inputs z-scored with
training statistics, each feature's scale floored at a tenth of its matrix's spread): ``classification`` (cross-entropy; one target column; classes = the sorted values
over all rows, so train and test share one encoding — the original's first-appearance order was fragile)
or ``regression`` (MSE on z-scored targets; one or more target columns). Trained on the rows of
``train_conditions`` (split train/val/test by a stable hash of ``set_id``), evaluated on the held-out rows
of those conditions and on every row of ``test_conditions`` (e.g. Ebbinghaus: train on scrambled flankers,
test on small/big flankers). Early stopping per decoder on its validation loss (``patience``), the best
state kept. A checkpoint after every epoch (``<results>/checkpoints/<run_id>/decoders.pt``, atomic);
``epochs_per_invocation`` pauses a run and the same call resumes it to the same result as an
uninterrupted one (tested).

Outputs (``results/`` folder, append-only, one part per run id): ``decoder/<run_id>.parquet`` — one row per
decoder × evaluated item × target (``prediction``, ``target_value``, ``error`` or ``correct``, ``score``);
``decoder_summary/<run_id>.parquet`` — per decoder × condition × target: ``n``, ``metric`` (``accuracy``
or ``rmse``), ``value`` with a bootstrap CI over items, ``best_epoch``, ``epochs_run``, ``val_loss``.
Classification predictions are also written as trials and summary rows of the one trial schema
(``feature`` = the decoder's input), so ``python -m eval stats`` reads them like any other method's.
"""
from __future__ import annotations

import copy
import hashlib
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from infra import schema as S

TASK_TYPES = ("classification", "regression")


@dataclass(frozen=True)
class DecoderConfig:
    """Settings of the decoders (``python -m eval decoder``: ``decoder.<field>=``), declared and checked with
    ``infra.schema`` (errors name ``decoder.<field>``)."""

    targets: tuple[str, ...] = S.field((), "annotation columns to decode (classification: exactly one)",
                                       check=S.non_empty("at least one annotation column"))
    task_type: str = S.field("classification", "classification or regression", choices=TASK_TYPES)
    train_conditions: tuple[str, ...] = S.field((), "conditions trained on (empty = every condition)")
    test_conditions: tuple[str, ...] = S.field((), "evaluated besides the held-out rows of the train conditions")
    features: tuple[str, ...] = S.field((), "empty = pixels, every tap, pooled")
    pixel_size: int = S.field(16, "raw-input decoder: the image average-pooled to this many pixels per side",
                              check=S.between(1, 224))
    hidden: int = S.field(0, "0 = linear decoders; > 0 = one hidden ReLU layer of this width", check=S.at_least(0))
    lr: float = S.field(1e-3, "Adam learning rate", check=S.above(0))
    weight_decay: float = S.field(0.0, "weight decay", check=S.at_least(0))
    epochs: int = S.field(100, "most training epochs", check=S.at_least(1))
    batch_size: int = S.field(64, "rows per step", check=S.at_least(1))
    patience: int = S.field(10, "epochs without a better validation loss before a decoder stops (0 = never)",
                            check=S.at_least(0))
    val_fraction: float = S.field(0.15, "of the train conditions' sets", check=S.between(0, 1, "()"))
    test_fraction: float = S.field(0.2, "of the train conditions' sets, held out for evaluation")
    split_seed: int = S.field(0, "seed of the set splits")
    seeds: tuple[int, ...] = S.field((0,), "training seeds", check=S.non_empty("at least one seed"))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))

    def __post_init__(self):
        S.validate_section(self, "decoder")
        if not 0 <= self.test_fraction < 1 - self.val_fraction:
            raise S.not_allowed("decoder.test_fraction", self.test_fraction, "in [0, 1 - val_fraction)")
        if self.task_type == "classification" and len(self.targets) != 1:
            raise S.not_allowed("decoder.targets", self.targets, "exactly one column for classification")


# --------------------------------------------------------------------------------------------------
# the data: annotation rows, splits, features


@dataclass
class DecoderData:
    root: Path
    name: str
    rows: pd.DataFrame  # file_name, path, condition, set_id, split (train|val|test), the target columns
    classes: list[str]  # classification: the label encoding; regression: []


def load_decoder_data(root, cfg: DecoderConfig) -> DecoderData:
    """The rows of a generated dataset (``annotations.parquet``) used by ``cfg``, with their splits."""
    from .tasks import TaskError, hashed_split, read_annotations

    root = Path(root)
    ann = read_annotations(root, "decoders")
    missing = [t for t in cfg.targets if t not in ann]
    if missing:
        raise TaskError(f"decoder.targets={missing}: not columns of {root / 'annotations.parquet'}; columns: {list(ann)}")
    cond = ann["condition"].astype(str) if "condition" in ann else pd.Series("", index=ann.index)
    have = set(cond)
    for name in ("train_conditions", "test_conditions"):
        unknown = sorted(set(map(str, getattr(cfg, name))) - have)
        if unknown:
            raise TaskError(f"decoder.{name}={unknown}: not in {root / 'annotations.parquet'}; have {sorted(have)}")
    train_c = set(map(str, cfg.train_conditions)) or have
    test_c = set(map(str, cfg.test_conditions)) - train_c
    keep = cond.isin(train_c | test_c)
    ann, cond = ann[keep].reset_index(drop=True), cond[keep].reset_index(drop=True)
    key = ann["set_id"].astype(str).where(ann["set_id"].astype(str) != "", ann["file_name"].astype(str)) \
        if "set_id" in ann else ann["file_name"].astype(str)
    split = np.where(cond.isin(train_c), hashed_split(key, cfg.val_fraction, cfg.test_fraction, cfg.split_seed), "test")
    rows = pd.DataFrame({"file_name": ann["file_name"].astype(str), "path": [str(root / f) for f in ann["file_name"]],
                         "condition": cond, "set_id": key, "split": split})
    for t in cfg.targets:
        rows[t] = ann[t].to_numpy()
    if cfg.task_type == "regression":
        for t in cfg.targets:
            try:
                rows[t] = rows[t].astype(float)
            except (TypeError, ValueError):
                raise TaskError(f"decoder.targets: column {t!r} is not numeric; use decoder.task_type=classification") from None
        classes = []
    else:
        rows[cfg.targets[0]] = rows[cfg.targets[0]].astype(str)
        classes = sorted(rows[cfg.targets[0]].unique())
    for s in ("train", "val"):
        if not (rows["split"] == s).any():
            raise TaskError(f"task={root}: the {s} split is empty (train conditions {sorted(train_c)}); use more sets or "
                            "change decoder.val_fraction/test_fraction")
    dataset = str(ann["dataset"].iloc[0]) if "dataset" in ann and len(ann) else root.name
    return DecoderData(root, f"{dataset}/{'+'.join(cfg.targets)}", rows, classes)


class PixelModel:
    """The raw-input "backbone": the model's own preprocessing, then the image average-pooled to
    ``size`` × ``size`` and flattened (feature ``pixels``, ``3·size²`` values). Cached like any model."""

    def __init__(self, loaded, size: int):
        self.loaded, self.size = loaded, int(size)
        self.transform, self.model_id = loaded.transform, loaded.model_id

    def features(self, batch) -> dict:
        import torch
        import torch.nn.functional as F

        with torch.inference_mode():
            return {"pixels": F.adaptive_avg_pool2d(batch.float(), self.size).flatten(1)}

    def identity(self) -> dict:
        ident = self.loaded.identity()
        return {"pixels": self.size, "preprocess": ident["preprocess"], "data_config": ident["data_config"],
                "versions": ident["versions"]}


def decoder_features(loaded, data: DecoderData, cfg: DecoderConfig, cache_dir=None, batch_size: int = 64,
                     device: str = "cpu", progress: bool = True) -> tuple[dict[str, np.ndarray], str]:
    """``{decoder input name: float32 [N, D]}`` for ``data.rows`` (in order) from the embedding cache, and a
    digest of the cache keys used. ``cfg.features`` empty = pixels, every tap of ``loaded``, pooled."""
    from .embeddings import get_embeddings

    wanted = list(cfg.features) or ["pixels", *loaded.taps, "pooled"]
    bad = [f for f in wanted if f not in ("pixels", "pooled", *loaded.taps)]
    if bad:
        raise ValueError(f"decoder.features={bad}: allowed pixels, pooled and the taps {list(loaded.taps)} "
                         "(add taps=[...] to decode other layers)")
    ids = sorted(set(data.rows["file_name"]))
    paths = [str(data.root / i) for i in ids]
    out, keys = {}, []
    if any(f != "pixels" for f in wanted):
        emb = get_embeddings(loaded, ids, paths, cache_dir, batch_size, "float32", device, progress)
        keys.append(emb.key)
        for f in wanted:
            if f != "pixels":
                out[f] = emb.matrix(data.rows["file_name"], f)
    if "pixels" in wanted:
        emb = get_embeddings(PixelModel(loaded, cfg.pixel_size), ids, paths, cache_dir, batch_size, "float32", device,
                             progress)
        keys.append(emb.key)
        out["pixels"] = emb.matrix(data.rows["file_name"], "pixels")
    return {f: out[f] for f in wanted}, hashlib.sha256("|".join(keys).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------------
# training


def make_decoder(dim: int, n_out: int, hidden: int):
    import torch.nn as nn

    if hidden:
        return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, n_out))
    return nn.Linear(dim, n_out)


@dataclass
class DecoderFit:
    decoders: dict  # name -> nn.Module (best state, eval mode)
    best_epoch: dict
    epochs_run: dict
    val_loss: dict
    stats: dict  # name -> (mean, std) of the inputs; "_target" -> (mean, std) for regression
    history: list = field(default_factory=list)
    paused: bool = False


def _atomic_save(obj, path: Path) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def train_decoders(X: dict[str, np.ndarray], y: np.ndarray, split: np.ndarray, task_type: str, n_out: int,
                   cfg: DecoderConfig, seed: int, checkpoint: Path | None = None,
                   epochs_per_invocation: int | None = None) -> DecoderFit:
    """Train one decoder per entry of ``X`` (float [N, D_f]) on the rows with ``split == "train"``, early
    stopping on ``split == "val"``. ``y``: int class indices [N] (classification) or float [N, T]
    (regression; z-scored with training statistics inside). Every decoder sees the same batches. With
    ``checkpoint``, the state after each epoch is saved there and a later call resumes from it;
    ``epochs_per_invocation`` returns a paused fit (``paused=True``) after that many epochs."""
    import torch
    import torch.nn.functional as F

    from .probe import _probe_threads

    tr, va = np.flatnonzero(split == "train"), np.flatnonzero(split == "val")
    if len(tr) < 2 or len(va) < 1:
        raise ValueError(f"decoders need >= 2 training and >= 1 validation rows (got {len(tr)}, {len(va)})")
    names = list(X)
    stats, Xt, Xv = {}, {}, {}
    for n in names:
        a = np.asarray(X[n], np.float32)
        # a feature constant in training (a blank image corner) must not be blown up where it varies at test:
        # its scale is floored at a tenth of the whole matrix's spread
        mu, sd = a[tr].mean(0), np.maximum(a[tr].std(0), 0.1 * float(a[tr].std()) + 1e-12)
        stats[n] = (mu, sd)
        z = torch.from_numpy((a - mu) / sd)
        Xt[n], Xv[n] = z[tr], z[va]
    if task_type == "regression":
        yf = np.asarray(y, np.float32).reshape(len(y), -1)
        mu, sd = yf[tr].mean(0), yf[tr].std(0) + 1e-6
        stats["_target"] = (mu, sd)
        yz = torch.from_numpy((yf - mu) / sd)
        loss_fn = F.mse_loss
    else:
        yz = torch.from_numpy(np.asarray(y, np.int64))
        loss_fn = F.cross_entropy
    yt, yv = yz[tr], yz[va]
    with _probe_threads(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        decs = {n: make_decoder(Xt[n].shape[1], n_out, cfg.hidden) for n in names}
        opts = {n: torch.optim.Adam(decs[n].parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay) for n in names}
        state = {"epoch": 0, "best": {n: None for n in names}, "best_loss": {n: float("inf") for n in names},
                 "best_epoch": {n: -1 for n in names}, "since": {n: 0 for n in names},
                 "active": {n: True for n in names}, "epochs_run": {n: 0 for n in names}, "history": []}
        if checkpoint is not None and checkpoint.is_file():
            from infra.safe_load import load_tensors

            ck = load_tensors(checkpoint, "decoder resume checkpoint")  # never unpickles code (issue 34)
            for n in names:
                decs[n].load_state_dict(ck["decoders"][n])
                opts[n].load_state_dict(ck["optimisers"][n])
            gen.set_state(ck["generator"])
            torch.set_rng_state(ck["torch_rng"])
            state = ck["state"]
        ran = 0
        while state["epoch"] < cfg.epochs and any(state["active"].values()):
            if epochs_per_invocation is not None and ran >= epochs_per_invocation:
                return DecoderFit({}, state["best_epoch"], state["epochs_run"], state["best_loss"], stats,
                                  state["history"], paused=True)
            perm = torch.randperm(len(tr), generator=gen)
            live = [n for n in names if state["active"][n]]
            for n in live:
                decs[n].train()
            for i in range(0, len(tr), cfg.batch_size):
                b = perm[i:i + cfg.batch_size]
                for n in live:
                    opts[n].zero_grad(set_to_none=True)
                    loss_fn(decs[n](Xt[n][b]), yt[b]).backward()
                    opts[n].step()
            row = {"epoch": state["epoch"]}
            for n in live:
                decs[n].eval()
                with torch.no_grad():
                    vloss = float(loss_fn(decs[n](Xv[n]), yv))
                row[n] = vloss
                state["epochs_run"][n] += 1
                if vloss < state["best_loss"][n] - 1e-12:
                    state["best"][n] = copy.deepcopy(decs[n].state_dict())
                    state["best_loss"][n], state["best_epoch"][n], state["since"][n] = vloss, state["epoch"], 0
                else:
                    state["since"][n] += 1
                    if cfg.patience and state["since"][n] >= cfg.patience:
                        state["active"][n] = False
            state["history"].append(row)
            state["epoch"] += 1
            ran += 1
            if checkpoint is not None:
                _atomic_save({"decoders": {n: decs[n].state_dict() for n in names},
                              "optimisers": {n: opts[n].state_dict() for n in names}, "generator": gen.get_state(),
                              "torch_rng": torch.get_rng_state(), "state": state}, checkpoint)
    for n in names:
        decs[n].load_state_dict(state["best"][n])
        decs[n].eval()
    return DecoderFit(decs, state["best_epoch"], state["epochs_run"], state["best_loss"], stats, state["history"])


def predict(fit: DecoderFit, X: dict[str, np.ndarray], task_type: str) -> dict[str, np.ndarray]:
    """Per decoder: class probabilities [N, k] (classification) or predictions in target units [N, T]."""
    import torch

    out = {}
    for n, dec in fit.decoders.items():
        mu, sd = fit.stats[n]
        with torch.no_grad():
            z = dec(torch.from_numpy((np.asarray(X[n], np.float32) - mu) / sd)).numpy().astype(np.float64)
        if task_type == "regression":
            tm, ts = fit.stats["_target"]
            out[n] = z * ts + tm
        else:
            e = np.exp(z - z.max(1, keepdims=True))
            out[n] = e / e.sum(1, keepdims=True)
    return out


def rmse_ci(errors, n_boot: int = 10_000, ci: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """RMSE of ``errors`` with a percentile bootstrap CI over items (n items drawn with replacement)."""
    from .stats import _percentiles, bootstrap_indices

    sq = np.asarray(errors, np.float64) ** 2
    if sq.size == 0:
        raise ValueError("RMSE of zero items")
    samples = np.concatenate([np.sqrt(sq[idx].mean(1)) for idx in
                              bootstrap_indices(sq.size, n_boot, np.random.default_rng(seed))])
    return float(np.sqrt(sq.mean())), *_percentiles(samples, ci)


# --------------------------------------------------------------------------------------------------
# a run: seeds, tables, resumable


def run_decoders(data: DecoderData, X: dict[str, np.ndarray], features_key: str, model_id: str, cfg: DecoderConfig,
                 results_dir, identity: dict | None = None, epochs_per_invocation: int | None = None,
                 config_extra: dict | None = None) -> pd.DataFrame | None:
    """Train and evaluate the decoders for each seed of ``cfg`` and append their tables to ``results_dir``
    (module docstring). A seed whose summary exists is skipped. Returns the summary rows of all seeds, or
    ``None`` when ``epochs_per_invocation`` paused a run (call again to resume)."""
    from . import results as R
    from . import stats
    from .runner import method_digest, summary_rows

    results_dir = Path(results_dir)
    rows = data.rows
    digest = R.config_digest({"decoder": asdict(cfg), "features": features_key, "task": data.name,
                              **(config_extra or {})})
    ident = {k: str((identity or {}).get(k, "")) for k in ("weights", "preprocess")}
    ident["method_config"] = method_digest(cfg)
    if cfg.task_type == "classification":
        index = {c: i for i, c in enumerate(data.classes)}
        y = np.array([index[v] for v in rows[cfg.targets[0]]])
        n_out = len(data.classes)
    else:
        y = rows[list(cfg.targets)].to_numpy(np.float64)
        n_out = len(cfg.targets)
    ev = np.flatnonzero(rows["split"].to_numpy() == "test")
    out = []
    for seed in cfg.seeds:
        rid = R.run_id("decoder", data.name, model_id, seed, digest)
        done = results_dir / "decoder_summary" / f"{rid}.parquet"
        if done.is_file():
            out.append(pd.read_parquet(done))
            continue
        t0 = time.perf_counter()
        fit = train_decoders(X, y, rows["split"].to_numpy(), cfg.task_type, n_out, cfg, seed,
                             results_dir / "checkpoints" / rid / "decoders.pt", epochs_per_invocation)
        if fit.paused:
            return None
        preds = predict(fit, {n: X[n][ev] for n in X}, cfg.task_type)
        base = {"model_id": model_id, "task": data.name, "method": "decoder", "seed": seed, "run_id": rid, **ident,
                "split": "test", "item_id": rows["file_name"].to_numpy()[ev], "condition": rows["condition"].to_numpy()[ev]}
        pred_rows, summ = [], []
        for n, p in preds.items():
            facts = {"best_epoch": fit.best_epoch[n], "epochs_run": fit.epochs_run[n], "val_loss": fit.val_loss[n]}
            if cfg.task_type == "classification":
                r = p.argmax(1)
                df = pd.DataFrame({**base, "feature": n, "target": cfg.targets[0],
                                   "target_value": rows[cfg.targets[0]].to_numpy()[ev],
                                   "prediction": np.asarray(data.classes, dtype=object)[r],
                                   "score": p[np.arange(len(r)), r], "correct": r == y[ev], "error": np.nan})
            else:
                df = pd.concat([pd.DataFrame({**base, "feature": n, "target": t, "target_value": y[ev, j].astype(str),
                                              "prediction": p[:, j].astype(str), "score": p[:, j],
                                              "correct": pd.NA, "error": p[:, j] - y[ev, j]})
                                for j, t in enumerate(cfg.targets)], ignore_index=True)
            pred_rows.append(df)
            for (cond, tgt), g in df.groupby(["condition", "target"], sort=True):
                if cfg.task_type == "classification":
                    e = stats.accuracy_ci(g["correct"].to_numpy(bool), cfg.n_boot, cfg.ci, seed)
                    val, lo, hi, metric = e.value, e.ci_low, e.ci_high, "accuracy"
                else:
                    val, lo, hi = rmse_ci(g["error"].to_numpy(float), cfg.n_boot, cfg.ci, seed)
                    metric = "rmse"
                summ.append({"model_id": model_id, "task": data.name, "method": "decoder", "seed": seed,
                             "feature": n, "condition": cond, "target": tgt, "n": len(g), "metric": metric,
                             "value": val, "ci_low": lo, "ci_high": hi,
                             "chance": 1 / n_out if metric == "accuracy" else float("nan"), **facts,
                             "train_seconds": time.perf_counter() - t0, "config_digest": digest, "run_id": rid, **ident})
        preds_df = pd.concat(pred_rows, ignore_index=True)
        summary = pd.DataFrame(summ)
        if cfg.task_type == "classification":  # the one trial schema too, so eval stats reads them
            trials = preds_df.assign(observer=model_id, observer_type="model", label=preds_df["target_value"],
                                     response=preds_df["prediction"], cluster="")
            std = pd.concat([summary_rows(g, data.classes, n_boot=cfg.n_boot, ci=cfg.ci, seed=seed, extra={
                "model_id": model_id, "task": data.name, "method": "decoder", "seed": seed, "feature": n,
                "best_epoch": fit.best_epoch[n], "epochs_run": fit.epochs_run[n], "val_accuracy": float("nan"),
                "train_seconds": time.perf_counter() - t0, "config_digest": digest, "run_id": rid})
                for n, g in trials.groupby("feature", sort=False)], ignore_index=True)
            R.write_part(results_dir, "trials", rid, trials)
            R.write_part(results_dir, "summary", rid, std)
        R.write_part(results_dir, "decoder", rid, preds_df)
        R.write_part(results_dir, "decoder_summary", rid, summary)  # last: its presence marks the run finished
        out.append(summary)
    return pd.concat(out, ignore_index=True)

