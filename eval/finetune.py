"""Fine-tuning a whole model on a task (the 3D-PC protocol; every value configurable).

The backbone's pooled features feed ``Dropout(p) → Linear(d, k)``; backbone and head train together with
AdamW and cross-entropy; early stopping on the validation split keeps the best weights. After every epoch
a checkpoint (model, head, optimiser, epoch, best state, RNG states, history) is written atomically to
``<results>/checkpoints/<run_id>/last.pt``; a re-run with the same configuration resumes after the last
finished epoch. ``epochs_per_invocation`` trains at most that many epochs now (for cluster time limits),
leaving the run to be resumed later. The finished run writes trial and summary parts like the probe.
"""
from __future__ import annotations

import copy
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from infra import schema as S

from .probe import MONITORS
from .runner import Method, SeedResult, register_method, run_method

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinetuneConfig:
    """The 3D-PC protocol's fine-tuning (``python -m eval finetune``: ``finetune.<field>=``). Declared and
    checked with ``infra.schema`` (errors name ``finetune.<field>``)."""

    lr: float = S.field(5e-5, "AdamW learning rate", check=S.above(0))
    weight_decay: float = S.field(1e-4, "AdamW weight decay", check=S.at_least(0))
    epochs: int = S.field(30, "most training epochs", check=S.at_least(1))
    batch_size: int = S.field(16, "images per step (BatchNorm in training mode needs two)", check=S.at_least(2))
    dropout: float = S.field(0.7, "dropout probability before the new head", check=S.between(0, 1, "[)"))
    patience: int = S.field(5, "epochs without improvement before stopping (0 = run all, keep the best)",
                            check=S.at_least(0))
    monitor: str = S.field("val_loss", "validation value that picks the best checkpoint", choices=MONITORS)
    seeds: tuple[int, ...] = S.field((0,), "training seeds", check=S.non_empty("at least one seed"))
    num_workers: int = S.field(0, "data-loader worker processes", check=S.at_least(0))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))

    def __post_init__(self):
        S.validate_section(self, "finetune")


class _Images:
    """A torch-style dataset of (tensor, label) from a task's split table."""

    def __init__(self, items: pd.DataFrame, transform):
        self.paths = items["path"].tolist()
        self.labels = items["label"].to_numpy(np.int64)
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from .embeddings import load_image

        return self.transform(load_image(self.paths[i])), int(self.labels[i])


def _build(loaded, n_classes: int, dropout: float, device: str = "cpu"):
    import torch
    import torch.nn as nn

    from .zoo import to_vectors

    backbone = loaded.module
    forward = loaded.forward_fn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = backbone
            with torch.no_grad():
                size = loaded.data_config["input_size"]
                dim = to_vectors((forward or backbone)(torch.zeros(1, *size, device=device))).shape[1]
            self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, n_classes))

        def forward(self, x):
            feats = forward(x) if forward is not None else self.backbone(x)
            return self.head(to_vectors(feats))

    for p in backbone.parameters():
        p.requires_grad_(True)
    backbone.eval()  # the probe pass above must not touch BatchNorm statistics
    return Classifier()


def _atomic_save(obj, path: Path) -> None:
    import torch

    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, what: str = "fine-tune resume checkpoint"):
    """A resume checkpoint read by the one safe loader (``infra.safe_load.load_tensors``): tensors, numbers,
    strings and containers only, so a replaced file in a shared results folder cannot run code (it is refused
    with its reason, as a ``RuntimeError`` like the other resume failures)."""
    from infra.safe_load import CheckpointError, load_tensors

    try:
        return load_tensors(path, what)
    except CheckpointError as e:
        raise RuntimeError(f"{e}; remove it to start over") from None


def _loader(items, transform, cfg, shuffle, seed):
    import torch
    from torch.utils.data import DataLoader

    g = torch.Generator().manual_seed(seed)
    return DataLoader(_Images(items, transform), batch_size=cfg.batch_size, shuffle=shuffle, generator=g,
                      num_workers=cfg.num_workers, drop_last=False)


def _run_epoch_eval(model, loader, device="cpu"):
    import torch
    import torch.nn.functional as F

    model.eval()
    logits, labels = [], []
    with torch.no_grad():
        for x, y in loader:
            logits.append(model(x.to(device)).cpu())
            labels.append(y)
    lg, lb = torch.cat(logits), torch.cat(labels)
    return lg, float(F.cross_entropy(lg, lb)), float((lg.argmax(1) == lb).float().mean())


@register_method("finetune")
class FinetuneMethod(Method):
    """Fine-tuning as an evaluation method: per seed, backbone + head trained together from the model's
    initial weights, checkpointed every epoch (resumable), class probabilities for the evaluation items."""

    Config = FinetuneConfig
    feature = "finetuned"

    def __init__(self, task, cfg: FinetuneConfig, loaded, epochs_per_invocation: int | None = None,
                 device: str = "cpu", progress: bool = True):
        super().__init__(task, cfg)
        self.loaded, self.device, self.progress = loaded, device, progress
        self.epochs_per_invocation = epochs_per_invocation

    def digest_fields(self) -> dict:
        return {"model": self.loaded.identity()}

    def identity(self) -> dict:
        return self.loaded.run_identity()

    def start(self, items: pd.DataFrame, run) -> None:
        self.items, self.run = items, run
        self.initial = copy.deepcopy(self.loaded.module.state_dict())

    def finish(self) -> None:
        _refreeze(self.loaded, self.initial)

    def run_seed(self, seed: int, rid: str) -> SeedResult | None:
        return _finetune_seed(self.task, self.loaded, self.initial, self.items, self.cfg, seed, rid, self.run,
                              self.epochs_per_invocation, self.progress, self.device)


def run_finetune(task, loaded, model_id: str, cfg: FinetuneConfig, results_dir, method: str = "finetune",
                 epochs_per_invocation: int | None = None, config_extra: dict | None = None,
                 progress: bool = True, device: str = "cpu") -> pd.DataFrame | None:
    """Fine-tune per seed (through :func:`eval.runner.run_method`); returns summary rows, or None if the run
    was paused by ``epochs_per_invocation``."""
    m = FinetuneMethod(task, cfg, loaded, epochs_per_invocation, device, progress)
    return run_method(m, model_id, results_dir, run_method_name=method, config_extra=config_extra,
                      progress=progress)


def _finetune_seed(task, loaded, initial, ev, cfg, seed, rid, run, epochs_per_invocation, progress,
                   device) -> SeedResult | None:
    """One seed: train (resuming from its checkpoint in ``<results>/checkpoints/<rid>``), then probabilities
    for ``ev``; None when paused by ``epochs_per_invocation``."""
    import torch
    import torch.nn.functional as F
    from tqdm.auto import tqdm

    digest, model_id = run.digest, run.model_id
    tr, va = task.split("train"), task.split("val")
    loaded.module.load_state_dict(initial)
    torch.manual_seed(seed)
    model = _build(loaded, len(task.classes), cfg.dropout, device).to(device)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr,
                            weight_decay=cfg.weight_decay)
    ckdir = Path(run.results_dir) / "checkpoints" / rid
    ckdir.mkdir(parents=True, exist_ok=True)
    state = {"epoch": -1, "best_score": float("inf"), "best_epoch": -1, "best_acc": float("nan"),
             "since": 0, "history": [], "seconds": 0.0, "stopped": False}
    best_weights = None
    last = ckdir / "last.pt"
    if last.is_file():
        ck = load_checkpoint(last)
        if ck.get("digest") != digest:
            raise RuntimeError(f"{last}: checkpoint of a different configuration; remove it to start over")
        model.load_state_dict(ck["model"])  # (map_location cpu; load_state_dict copies onto the device)
        opt.load_state_dict(ck["optimizer"])
        state = ck["state"]
        torch.set_rng_state(ck["torch_rng"])
        best_weights = load_checkpoint(ckdir / "best.pt", "fine-tune best-epoch weights")
        log.info("resuming %s after epoch %d", rid, state["epoch"])
    val_loader = _loader(va, loaded.transform, cfg, False, seed)
    done_now = 0
    bar = tqdm(total=cfg.epochs, initial=state["epoch"] + 1, desc=f"finetune {model_id} seed {seed}",
               unit="epoch", disable=not progress, leave=False)
    while state["epoch"] + 1 < cfg.epochs and not state["stopped"]:
        if epochs_per_invocation is not None and done_now >= epochs_per_invocation:
            bar.close()
            return None
        epoch = state["epoch"] + 1
        t0 = time.perf_counter()
        model.train()
        tsum, thit, tn = 0.0, 0, 0  # running training loss and accuracy (train mode: dropout on)
        for x, y in _loader(tr, loaded.transform, cfg, True, seed * 100_003 + epoch):
            if len(y) < 2:
                continue
            opt.zero_grad(set_to_none=True)
            y = y.to(device)
            logits = model(x.to(device))
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            tsum += loss.item() * len(y)
            thit += int((logits.argmax(1) == y).sum())
            tn += len(y)
        _, vloss, vacc = _run_epoch_eval(model, val_loader, device)
        score = vloss if cfg.monitor == "val_loss" else -vacc
        state["history"].append({"epoch": epoch, "val_loss": vloss, "val_accuracy": vacc,
                                 "train_loss": tsum / max(tn, 1), "train_accuracy": thit / max(tn, 1)})
        if score < state["best_score"] - 1e-12:
            state.update(best_score=score, best_epoch=epoch, best_acc=vacc, since=0)
            best_weights = copy.deepcopy(model.state_dict())
            _atomic_save(best_weights, ckdir / "best.pt")
        else:
            state["since"] += 1
            if cfg.patience and state["since"] >= cfg.patience:
                state["stopped"] = True
        state["epoch"] = epoch
        state["seconds"] += time.perf_counter() - t0
        _atomic_save({"digest": digest, "model": model.state_dict(), "optimizer": opt.state_dict(),
                      "state": state, "torch_rng": torch.get_rng_state()}, last)
        done_now += 1
        bar.update(1)
    bar.close()
    model.load_state_dict(best_weights)
    lg, _, _ = _run_epoch_eval(model, _loader(ev, loaded.transform, cfg, False, seed), device)
    return SeedResult(probs=torch.softmax(lg, 1).numpy(), facts={
        "best_epoch": state["best_epoch"], "epochs_run": state["epoch"] + 1, "val_accuracy": state["best_acc"],
        "train_seconds": state["seconds"]})


def _refreeze(loaded, initial) -> None:
    """Give the caller back the model it passed in: original weights, eval mode, no gradients."""
    loaded.module.load_state_dict(initial)
    loaded.module.eval()
    for p in loaded.module.parameters():
        p.requires_grad_(False)
