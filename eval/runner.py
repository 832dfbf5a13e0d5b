"""One evaluation runner over the trial schema, and the registry of evaluation methods.

Every method (linear probe, fine-tuning, and the zero-shot methods to come: similarity judgments,
decoders, OOD scores, diffusion or VLM classifiers) is a :class:`Method` registered with
:func:`register_method` in the file that defines it. The runner (:func:`run_method`) does what all of them
share, in one place:

1. the evaluation items (the task's ``eval_splits``) and, for a method that trains, the check that the
   train and val splits are not empty;
2. the configuration digest (method settings + the method's own provenance + task + caller's extras) and,
   per seed, the ``run_id``; a seed whose run is already in the results folder is skipped (resumable);
3. per seed, the method's :meth:`Method.run_seed` — the only method-specific step — returning class
   probabilities for the evaluation items (or its own trial rows) and its training facts;
4. trial rows in the one trial schema (``eval.results.TRIAL_DTYPES``; the same as human trials from
   ``eval.humans``), a per-split summary with bootstrap CIs, both appended atomically (trials first).

Contract of a method (a class; one instance per run, built by the caller with the task and model):

* ``name`` (the registry key and CLI command), ``Config`` (frozen dataclass of its settings, whose
  ``seeds``, ``n_boot`` and ``ci`` fields the runner reads), ``trains`` (needs train/val splits);
* ``feature`` — what the ``feature`` column records (``pooled``, a tap, ``finetuned``, ``zero-shot``...);
* ``digest_fields()`` — what besides the settings determines the results (embedding key, model identity);
* ``identity()`` — the run-identity columns (``weights``, ``preprocess``) for every trial row;
* ``run_seed(seed, rid)`` — a :class:`SeedResult`, or ``None`` to pause the run (resume later);
* optional ``start(items, run)`` / ``finish()`` around the seeds (``finish`` runs even on error or pause);
  ``run`` (:class:`Run`) tells the method the model id, results folder and configuration digest.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from infra.registry import Registry

log = logging.getLogger(__name__)


@dataclass
class SeedResult:
    """What one seed of a method produced for the evaluation items (rows in ``items`` order).

    ``probs`` float [N, k]: class probabilities (response = argmax, score = its probability); or ``trials``:
    the method's own trial rows with at least ``split``, ``item_id``, ``label``, ``response``, ``score``,
    ``correct`` (the runner fills observer, task, method, seed, run id and identity). ``facts``: training
    facts for the summary (``best_epoch``, ``epochs_run``, ``val_accuracy``, ``train_seconds``); a method
    that does not train leaves them out and gets -1, 0, NaN and the measured seconds.
    """

    probs: np.ndarray | None = None
    trials: pd.DataFrame | None = None
    facts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """What the runner tells a method before its seeds (e.g. where fine-tuning keeps its checkpoints)."""

    model_id: str
    results_dir: str
    digest: str


class Method:
    """Base of the method contract (module docstring); subclasses set the class attributes."""

    name: ClassVar[str] = ""
    Config: ClassVar[type] = object
    trains: ClassVar[bool] = True
    cli_usage: ClassVar[str] = ""  # set by register_method(cli=...): the generic command's --help line
    uses_model: ClassVar[bool] = True  # set by register_method(uses_model=...): the command asks for model=
    feature: str = "pooled"

    def __init__(self, task, cfg):
        self.task, self.cfg = task, cfg

    def digest_fields(self) -> dict:
        return {}

    def identity(self) -> dict:
        return {}

    def start(self, items: pd.DataFrame, run: Run) -> None:
        self.items, self.run = items, run

    def run_seed(self, seed: int, rid: str) -> SeedResult | None:
        raise NotImplementedError

    def finish(self) -> None:
        pass


# Built-in methods live in their own modules (imported by the ``eval.methods`` package); a new method is one
# module in ``eval/methods/`` (found by discovery, see ``eval/methods/__init__.py``).
METHODS: Registry[type[Method]] = Registry("evaluation method", key="method", discover=("eval.methods",))


def register_method(name: str, *, cli: str = "", uses_model: bool = True):
    """Class decorator: register an evaluation method under ``name`` (its CLI command and config section).

    ``cli``: a one-line usage for ``python -m eval --help``; given, the method gets the generic command
    ``python -m eval <name>`` (``eval.cli.method_job``: task + settings + model → :func:`run_method`) unless a
    command of that name is registered by hand; its settings section ``<name>.*`` is the method's ``Config``,
    ranges checked automatically. ``uses_model``: whether the command asks for ``model=`` (and the shared
    model settings); a method that uses none is built as ``cls(task, cfg)``, one that does as
    ``cls(task, cfg, loaded_model)``."""

    def deco(cls: type[Method]) -> type[Method]:
        METHODS.register(name, cls)
        cls.name = name
        cls.cli_usage = cli
        cls.uses_model = uses_model
        return cls

    return deco


def method_digest(cfg) -> str:
    """Digest of a method config's settings that change predictions (not the seed list or CI settings)."""
    from .results import config_digest

    return config_digest({k: v for k, v in asdict(cfg).items() if k not in ("seeds", "n_boot", "ci")})


def task_clusters(task, items: pd.DataFrame):
    """The bootstrap unit per item: the 3D-PC placement (``group`` = scene/setting; its frames share one
    VPT label, so they are not independent), else ``None`` (items resampled independently)."""
    return items["group"].to_numpy() if getattr(task, "kind", "") == "threedpc" else None


def trial_rows(items: pd.DataFrame, probs: np.ndarray, classes: list[str], *, observer: str, task: str,
               method: str, seed: int, rid: str, identity: dict | None = None,
               clusters: np.ndarray | None = None) -> pd.DataFrame:
    """One trial row per evaluated item; ``identity`` fills the run-identity columns (``weights``,
    ``preprocess``, ``feature``, ``method_config``), ``clusters`` the bootstrap unit per item."""
    resp = probs.argmax(1)
    rows = pd.DataFrame({"split": items["split"].to_numpy(), "item_id": items["item_id"].to_numpy(),
                         "label": items["label_name"].to_numpy(),
                         "response": np.asarray(classes, dtype=object)[resp],
                         "score": probs[np.arange(len(resp)), resp], "correct": resp == items["label"].to_numpy()})
    return _run_columns(rows, items, observer=observer, task=task, method=method, seed=seed, rid=rid,
                        identity=identity, clusters=clusters)


def _run_columns(rows: pd.DataFrame, items: pd.DataFrame, *, observer, task, method, seed, rid, identity,
                 clusters) -> pd.DataFrame:
    """``rows`` (one per item, in ``items`` order) with the columns every model trial row carries."""
    ident = {k: str((identity or {}).get(k, "")) for k in ("weights", "preprocess", "feature", "method_config")}
    cond = items["condition"].to_numpy() if "condition" in items else ""
    return pd.DataFrame({**ident, "cluster": "" if clusters is None else np.asarray(clusters, dtype=object),
        "observer": observer, "observer_type": "model", "model_id": observer, "task": task,
        "split": rows["split"].to_numpy(), "method": method, "seed": seed, "item_id": rows["item_id"].to_numpy(),
        "condition": rows["condition"].to_numpy() if "condition" in rows else cond,
        "label": rows["label"].to_numpy(), "response": rows["response"].to_numpy(),
        "score": rows["score"].to_numpy(), "correct": rows["correct"].to_numpy(), "run_id": rid,
    })


def summary_rows(trials: pd.DataFrame, classes: list[str], *, n_boot: int, ci: float, seed: int,
                 extra: dict) -> pd.DataFrame:
    from . import stats

    rows = []
    for split, g in trials.groupby("split", sort=False):
        rows.append({"split": split, **stats.accuracy_summary(g, n_boot, ci, seed), "chance": 1.0 / len(classes),
                     "weights": g["weights"].iloc[0], "preprocess": g["preprocess"].iloc[0],
                     "method_config": g["method_config"].iloc[0], **extra})
    return pd.DataFrame(rows)


def run_digest(method: Method, config_extra: dict | None = None) -> str:
    """The configuration digest of ``method``'s runs (its settings, its own provenance, the task and the caller's
    extras): the last part of each seed's run id (:func:`eval.results.run_id`), so a caller can find a run
    (done? its checkpoints?) before running it."""
    from . import results as R

    task = method.task
    return R.config_digest({method.name: asdict(method.cfg), **method.digest_fields(), "task": task.name,
                            "task_info": task.info, **(config_extra or {})})


def run_method(method: Method, model_id: str, results_dir, *, run_method_name: str | None = None,
               config_extra: dict | None = None, progress: bool = True) -> pd.DataFrame | None:
    """Run ``method`` for each of its config's seeds on its task and append trial and summary parts to
    ``results_dir`` (steps in the module docstring). ``run_method_name`` is the ``method`` column and run
    id prefix (default: the registered name). Returns this model's summary rows for the seeds, or ``None``
    if the method paused the run."""
    from tqdm.auto import tqdm

    from . import results as R

    task, cfg = method.task, method.cfg
    name = run_method_name or method.name
    if method.trains:
        tr, va = task.split("train"), task.split("val")
        if tr.empty or va.empty:
            raise ValueError(f"task {task.name}: needs non-empty train and val splits (have {task.counts()})")
    ev = task.items[task.items["split"].isin(task.eval_splits)].reset_index(drop=True)
    digest = run_digest(method, config_extra)
    identity = {**method.identity(), "feature": method.feature, "method_config": method_digest(cfg)}
    out = []
    method.start(ev, Run(model_id, str(results_dir), digest))
    try:
        for seed in tqdm(cfg.seeds, desc=f"{name} {model_id} on {task.name}", unit="seed", disable=not progress,
                         leave=False):
            rid = R.run_id(name, task.name, model_id, seed, digest)
            if R.run_done(results_dir, rid):
                log.info("run %s exists; skipped", rid)
                out.append(pd.read_parquet(R.part_path(results_dir, "summary", rid)))
                continue
            t0 = time.perf_counter()
            res = method.run_seed(seed, rid)
            if res is None:
                return None
            kw = dict(observer=model_id, task=task.name, method=name, seed=seed, rid=rid, identity=identity,
                      clusters=task_clusters(task, ev))
            if res.probs is not None:
                trials = trial_rows(ev, res.probs, task.classes, **kw)
            else:
                trials = _run_columns(res.trials, ev, **kw)
            facts = {"best_epoch": -1, "epochs_run": 0, "val_accuracy": float("nan"),
                     "train_seconds": time.perf_counter() - t0, **res.facts}
            summ = summary_rows(trials, task.classes, n_boot=cfg.n_boot, ci=cfg.ci, seed=seed, extra={
                "model_id": model_id, "task": task.name, "method": name, "seed": seed, "feature": method.feature,
                **facts, "config_digest": digest, "run_id": rid})
            R.write_part(results_dir, "trials", rid, trials)  # trials first: a summary implies its trials exist
            R.write_part(results_dir, "summary", rid, summ)
            out.append(R.conform(summ, "summary"))
    finally:
        method.finish()
    return pd.concat(out, ignore_index=True)
