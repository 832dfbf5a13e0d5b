"""The 3D-PC paper's findings with real models (issue 35): one resumable experiment on a 3D-PC build, and the
results page generated from its results folder.

    python -m eval.results_3dpc run  build=out/3dpc results=out/results_3dpc       # resumable
    python -m eval.results_3dpc cost build=out/3dpc results=out/results_3dpc       # one fine-tuning epoch, timed
    python -m eval.results_3dpc page results=out/results_3dpc out=docs/results.md build=out/3dpc  # figures in docs/img/

Settings are ``key=value`` (``infra.cli``; ``python -m eval.results_3dpc <command> --help`` lists them: e.g.
``steps=probe,layers``, ``observers=[timm:tf_efficientnet_lite0@random]``, ``progress=false``). The first
release's ``--build out/3dpc --steps probe,layers --no-progress`` spellings still work, with a warning, until
the next release. Run ids depend only on the plan's settings (:class:`ExperimentConfig`), not on how they were
spelled: a results folder written with the old spellings is resumed by the new ones.

``run`` does, for the default plan (every step skips what the results folder already holds, so a run can be
interrupted and split over sessions; ``epochs_per_invocation=N`` pauses fine-tuning after that many epochs):

1. **Embeddings** of every image of the build, once per observer (EfficientNet-Lite0 and -Lite2 with their
   ImageNet weights from pip packages, and a random-weight control of each), with the spatial mean of every
   stage ``blocks.<i>`` recorded beside the pooled features (:func:`layer_taps`) — cached by
   :mod:`eval.embeddings`.
2. **Linear probes** (:func:`eval.probe.run_probe`, the paper's protocol, 3 seeds) of the pooled features on
   depth order, VPT-basic and VPT-Strategy (a VPT-basic probe tested on the VPT-Strategy images), and of
   every stage on depth order and VPT-basic (which depth of the network carries which task).
2b. **Spatial read-out** (step ``spatial``): the same probe on the final feature map that the pooled features
   average, read on a ``spatial_grid`` × ``spatial_grid`` grid of cells (:func:`spatial_tap`) for a model and its
   random-weight control: whether what the pooled probe misses is in the network but in *where* things are.
3. **Fine-tuning** (:func:`eval.finetune.run_finetune`, the paper's settings, early stopping on the build's
   held-out validation scenes) of the pretrained models in ``finetune_models`` on VPT-basic and on depth
   order; then the VPT-basic fine-tuned model, as kept by early stopping, on VPT-Strategy
   (:class:`FinetunedTransfer`: no training, its rows are ``method=finetune, task=3dpc/vpt_strategy``).

Every trial and summary row carries the run identity of :mod:`eval.results` (model id, weights identity —
``package:<dist>==<version>:sha256=…`` or ``random:seed=N`` —, preprocessing, feature, method config digest,
seed, run id); the build's identity (sha of its ``manifest.json``) enters each run's configuration digest
and is a column of the cost ledger ``<results>/cost/*.parquet``: one row per step invocation with its wall
and CPU seconds (this process's threads and its finished worker processes), the run it advanced, the epochs
it trained and the build. ``cost`` times one training epoch of fine-tuning (and one validation pass) at the
build's image size and at the model's input size, into the same ledger.

The page (:mod:`eval.results_3dpc_page`) reads only the results folder.

Deviations from the paper's protocol, each with its reason, are listed in :data:`DEVIATIONS` (and on the
page).
"""
from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import resource
import sys
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from infra import schema as S
from infra.cli import REQUIRED

from .results_3dpc_page import COST_COLUMNS, COST_KIND, DEVIATIONS, PLAN, read_cost, refresh_validity, write_page  # noqa: F401 (re-exported)
from .runner import Method, SeedResult, run_method



def _warn(msg: str) -> None:
    """One ``warning:`` line on the current stderr (resolved at call time, not bound to a stream by logging
    configuration made elsewhere in the process)."""
    print(f"warning: {msg}", file=sys.stderr, flush=True)

TARGETS = ("depth", "vpt", "vpt_strategy")  # probe targets of the pooled features
LAYER_TARGETS = ("depth", "vpt")
FINETUNE_TARGETS = ("vpt", "depth")
# order = run order of the first probes: Lite0, its random control (needed to read any probe), then Lite2
DEFAULT_OBSERVERS = ("timm:tf_efficientnet_lite0", "timm:tf_efficientnet_lite0@random",
                     "timm:tf_efficientnet_lite2", "timm:tf_efficientnet_lite2@random")
DEFAULT_FINETUNE = ("timm:tf_efficientnet_lite0", "timm:tf_efficientnet_lite2")  # Lite2 last in the plan
STEPS = ("probe", "layers", "spatial", "finetune")

class ExperimentError(ValueError):
    """A setting or input of the experiment that cannot be used (one line for the user)."""


@dataclass(frozen=True)
class Observer:
    """A model and its weights: ``<model id>`` (pretrained) or ``<model id>@random`` (random weights with
    ``init_seed`` 0; ``@random<N>`` for seed N)."""

    model_id: str
    pretrained: bool = True
    init_seed: int = 0

    @classmethod
    def parse(cls, text: str) -> "Observer":
        mid, sep, weights = str(text).strip().partition("@")
        if not sep:
            return cls(mid, True)
        if not weights.startswith("random") or not (weights[6:] == "" or weights[6:].isdigit()):
            raise ExperimentError(f"observer {text!r}: expected '<model id>' or '<model id>@random[N]'")
        return cls(mid, False, int(weights[6:] or 0))

    def __str__(self) -> str:
        return self.model_id if self.pretrained else f"{self.model_id}@random{self.init_seed or ''}"


@dataclass(frozen=True)
class ExperimentConfig:
    """The plan of ``python -m eval.results_3dpc run`` (``<field>=`` on the command line; :class:`RunOptions`)."""

    observers: tuple[str, ...] = S.field(DEFAULT_OBSERVERS, "models probed: '<model id>' or '<model id>@random'",
                                         check=S.non_empty("at least one observer"))
    finetune_models: tuple[str, ...] = S.field(DEFAULT_FINETUNE, "models fine-tuned (pretrained unless @random)")
    spatial_observers: tuple[str, ...] | None = S.field(None, "models whose final feature map is also probed on a "
                                                        "grid of cells (step spatial; null: the first pretrained "
                                                        "and the first random-weight observer)")
    spatial_grid: int = S.field(3, "cells per side of the spatial read-out (step spatial)", check=S.at_least(1))
    steps: tuple[str, ...] = S.field(STEPS, "steps to run", choices=STEPS)
    probe_seeds: tuple[int, ...] = S.field((0, 1, 2), "probe seeds (the paper's 3)",
                                           check=S.non_empty("at least one seed"))
    finetune_seeds: tuple[int, ...] = S.field((0, 1, 2), "fine-tuning seeds (3, as the probes'; one before 29 Nov)",
                                              check=S.non_empty("at least one seed"))
    finetune_epochs: int = S.field(30, "most fine-tuning epochs (the paper's 30)", check=S.at_least(1))
    finetune_patience: int = S.field(3, "fine-tuning epochs without a better validation loss before stopping",
                                     check=S.at_least(0))
    finetune_workers: int = S.field(1, "fine-tuning data-loader processes", check=S.at_least(0))
    finetune_frames: int | None = S.field(8, "frames per placement kept in the fine-tuning train and validation "
                                          "splits, evenly spaced along each trajectory (null: all)")
    epochs_per_invocation: int | None = S.field(None, "fine-tuning epochs per invocation (null: to the end)")
    n_boot: int = S.field(10_000, "bootstrap resamples of the per-run CIs", check=S.at_least(100))
    batch_size: int = S.field(64, "images per extraction batch", check=S.at_least(1))
    cache_dir: str | None = S.field(None, "embedding cache (null: $VANTAGE_CACHE or ~/.cache/vantage)")

    def spatial(self) -> tuple[str, ...]:
        """The observers of step ``spatial``: ``spatial_observers``, or by default the first pretrained and the
        first random-weight entry of ``observers`` (a model and its control: Lite0 and Lite0@random)."""
        if self.spatial_observers is not None:
            return tuple(self.spatial_observers)
        kinds = {}
        for o in self.observers:
            kinds.setdefault(Observer.parse(o).pretrained, o)
        return tuple(kinds[k] for k in (True, False) if k in kinds)

    def __post_init__(self):
        S.validate_config(self)
        for text in (*self.observers, *self.finetune_models, *(self.spatial_observers or ())):
            Observer.parse(text)
        if self.finetune_frames is not None and self.finetune_frames < 1:
            raise S.not_allowed("finetune_frames", self.finetune_frames, ">= 1 or null")
        if self.epochs_per_invocation is not None and self.epochs_per_invocation < 1:
            raise S.not_allowed("epochs_per_invocation", self.epochs_per_invocation, ">= 1 or null")


def layer_taps(model_id: str) -> tuple[str, ...]:
    """The stages whose spatial-mean outputs are probed: ``blocks.<i>`` for every stage of a timm model with a
    ``blocks`` sequence (EfficientNet, MobileNet: stride and width change between stages), else the modules of
    its ``feature_info``; for a ``module:`` model, its factory's ``vantage_taps`` attribute (names of its
    sub-modules); else none. Made from the architecture alone (random weights, nothing downloaded)."""
    import importlib

    from .zoo import ModelId

    mid = ModelId.parse(model_id)
    if mid.library == "module":
        return tuple(getattr(getattr(importlib.import_module(mid.name), mid.tag)(), "vantage_taps", ()))
    if mid.library != "timm":
        return ()
    import timm

    m = timm.create_model(mid.name, pretrained=False, num_classes=0)
    blocks = getattr(m, "blocks", None)
    if blocks is not None and hasattr(blocks, "__len__"):
        return tuple(f"blocks.{i}" for i in range(len(blocks)))
    info = getattr(m, "feature_info", None)
    return tuple(i["module"] for i in info) if info else ()


@functools.lru_cache(maxsize=None)  # builds the architecture: once per model, not once per job of the plan
def spatial_tap(model_id: str, grid: int) -> str:
    """The tap of the spatial read-out (step ``spatial``): the model's final feature map, the one its pooled
    features average, read on a ``grid`` × ``grid`` grid of cells (``<module>@grid<n>``, :func:`eval.zoo.split_tap`).
    The final map is ``bn2`` for timm's EfficientNets and MobileNets (conv head, batch norm, activation: what
    ``global_pool`` averages), else the last of :func:`layer_taps`. It tells whether a linear read-out that keeps
    *where* in the image a feature responds finds what the pooled features do not (on the 3D-PC's depth items,
    the props' heights and sizes in the image)."""
    from .zoo import GRID, ModelId

    mid = ModelId.parse(model_id)
    name = None
    if mid.library == "timm":
        import timm

        m = timm.create_model(mid.name, pretrained=False, num_classes=0)
        name = "bn2" if hasattr(m, "bn2") else None
    name = name or (layer_taps(model_id) or (None,))[-1]
    if name is None:
        raise ExperimentError(f"spatial_observers: {model_id} has no known final feature map to read on a grid")
    return f"{name}{GRID}{grid}"


# --------------------------------------------------------------------------------------------- cost ledger


class Clock:
    """Wall and CPU seconds of a block: CPU = this process's user + system time (all its threads) plus that of
    its child processes reaped meanwhile (data-loader and decoding workers); ``started``: when it began (UTC,
    the ledger's ``started`` column)."""

    def __enter__(self):
        self.started = _now()
        self.wall0 = time.perf_counter()
        self.cpu0 = _cpu_seconds()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall0
        self.cpu = _cpu_seconds() - self.cpu0


def _cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def write_cost(results, row: dict) -> None:
    """Append one ledger row (``COST_COLUMNS``; missing text empty, numbers -1) as its own part."""
    from .results import write_part

    full = {c: row.get(c, "" if t == "string" else -1) for c, t in COST_COLUMNS.items()}
    df = pd.DataFrame([full]).astype(COST_COLUMNS)
    write_part(results, COST_KIND, f"{row['step']}__{uuid.uuid4().hex[:12]}", df)


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _now() -> str:
    return _utc(time.time())


def _utc(seconds: float) -> str:
    """A POSIX time as the ledger writes it (UTC, ISO 8601, whole seconds)."""
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------------- run


def build_identity(task) -> str:
    """The build's identity recorded on ledger rows: the sha of its ``manifest.json`` (``eval.tasks``)."""
    return str(task.info.get("dataset_sha", ""))


def load_tasks(build) -> dict:
    from .tasks import TaskError, load_task

    try:
        tasks = {t: load_task(build, t) for t in TARGETS}
    except TaskError as e:
        raise ExperimentError(str(e)) from None
    if tasks["vpt"].kind != "threedpc":
        raise ExperimentError(f"build={build}: not a 3D-PC build (no metadata.parquet + manifest.json)")
    return tasks


ITEMS = "items"  # <results>/items.parquet: the evaluation images' metadata and cues (for the page's analyses)
ITEM_COLUMNS = ("file_name", "scene", "setting", "frame", "split", "vpt_label", "depth_label", "vpt_reason",
                "depth_gap", "ball_height_px", "observer_height_px", "in_human", "in_strategy")


def item_table(build) -> pd.DataFrame:
    """Per evaluation image (test, human and VPT-Strategy frames) of ``build``: ``ITEM_COLUMNS`` present in its
    metadata, the shortcut audit's per-frame cues (``tasks.threedpc.shortcuts.shortcut_cues``: layout, sizes,
    the observer's orientation, visibility) and ``image_aim_deg``, the angle in the image between the
    observer's projected viewing direction and the direction from it to the ball (a 2D reading of "the lens
    points at the ball"). ``item_id`` = ``file_name``."""
    from tasks.threedpc import shortcuts as SC

    md = pd.read_parquet(Path(build) / "metadata.parquet")
    md = md[md["file_name"].fillna("").astype(str) != ""]
    md = md[(md["split"] == "test") | md["in_human"].astype(bool) | md["in_strategy"].astype(bool)].reset_index(drop=True)
    out = md[[c for c in ITEM_COLUMNS if c in md]].copy()
    out.insert(0, "item_id", out["file_name"].astype(str))
    try:
        cues = SC.shortcut_cues(md)
        k, w2c, _, _ = SC._cameras(md)
        obs = md[["observer_x", "observer_y", "observer_z"]].to_numpy(float)
        fwd = SC._forward(md["observer_yaw_deg"].to_numpy(float), md["observer_pitch_deg"].to_numpy(float))
        uv_o, _ = SC.project(k, w2c, obs)
        uv_f, _ = SC.project(k, w2c, obs + 0.1 * fwd)  # a point 10 cm along the lens axis
        uv_b, _ = SC.project(k, w2c, md[["ball_x", "ball_y", "ball_z"]].to_numpy(float))
        a, b = uv_f - uv_o, uv_b - uv_o
        cos = (a * b).sum(1) / np.clip(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12, None)
        cues["image_aim_deg"] = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    except (KeyError, AttributeError) as e:  # a build without camera or prop columns (e.g. a minimal fixture),
        # or a shortcut module whose helpers changed: the page's cue table is then left out, the runs go on
        _warn(f"no shortcut cues for {build}: {type(e).__name__}: {e}")
        cues = pd.DataFrame(index=md.index)
    return pd.concat([out, cues.add_prefix("cue_")], axis=1)


def write_items(build, results) -> Path:
    """``<results>/items.parquet`` from :func:`item_table`, written atomically once per build (rewritten when
    the build's identity differs)."""
    from infra.files import atomic_write_bytes

    path = Path(results) / f"{ITEMS}.parquet"
    sha = build_identity(load_tasks(build)["vpt"])
    if path.is_file() and pd.read_parquet(path, columns=["build"])["build"].eq(sha).all():
        return path
    df = item_table(build).assign(build=sha)
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())
    return path


def _load(obs: Observer, taps=(), fast: bool = False, device: str = "cpu"):
    from .zoo import WeightsSpec, load_model

    return load_model(obs.model_id, WeightsSpec(pretrained=obs.pretrained, init_seed=obs.init_seed),
                      "shorter_side", tuple(taps), device, fast=fast)


@dataclass(frozen=True)
class Job:
    """One unit of the plan: a probe run (``kind="probe"``: observer, target, feature, seed), a fine-tuning
    run (``"finetune"``: observer, target, seed) or the VPT-Strategy test of an observer's VPT-basic
    fine-tuned models (``"transfer"``)."""

    kind: str
    observer: str
    target: str = ""
    feature: str = "pooled"
    seed: int = 0


def plan(cfg: ExperimentConfig, taps: dict | None = None) -> list[Job]:
    """The plan's jobs in the order they run, most important first, so that whatever an interrupted session
    finished is the most useful part: (1) pooled probes on depth and VPT-basic, first seed, of every observer
    except the second and later random-weight controls; (2) their other seeds and VPT-Strategy probes; (3)
    fine-tuning of the first ``finetune_models`` entry on VPT-basic and its VPT-Strategy test; (4) the pooled
    probes of the remaining random controls; (5) per-layer probes (``taps``: observer → stage names); (6) the
    spatial read-out of ``spatial_observers`` (:func:`spatial_tap`: the final map on a grid, a cache entry of its
    own); (7) the first model's fine-tuning on depth; (8) the other fine-tuned models."""
    jobs: list[Job] = []
    steps, seeds = set(cfg.steps), cfg.probe_seeds
    # random-weight controls after the first come after the first fine-tuning (one control suffices early on)
    randoms = [o for o in cfg.observers if not Observer.parse(o).pretrained]
    early = [o for o in cfg.observers if o not in randoms[1:]]
    late = randoms[1:]

    def pooled(observers):
        out = [Job("probe", o, t, "pooled", seeds[0]) for o in observers for t in ("depth", "vpt")]
        return out + [Job("probe", o, t, "pooled", s) for s in seeds for o in observers for t in TARGETS
                      if not (s == seeds[0] and t != "vpt_strategy")]

    def tune(obs, targets):
        out = []
        for t in targets:
            out += [Job("finetune", obs, t, "finetuned", s) for s in cfg.finetune_seeds]
            if t == "vpt":
                out.append(Job("transfer", obs, "vpt_strategy", "finetuned"))
        return out

    if "probe" in steps:
        jobs += pooled(early)
    tuners = list(cfg.finetune_models) if "finetune" in steps else []
    if tuners:
        jobs += tune(tuners[0], ("vpt",))
    if "probe" in steps:
        jobs += pooled(late)
    if "layers" in steps:
        jobs += [Job("probe", o, t, tap, s) for s in seeds for o in cfg.observers for tap in (taps or {}).get(o, ())
                 for t in LAYER_TARGETS]
    if "spatial" in steps:
        jobs += [Job("probe", o, t, spatial_tap(Observer.parse(o).model_id, cfg.spatial_grid), s)
                 for o in cfg.spatial() for s in seeds for t in LAYER_TARGETS]
    if tuners:
        jobs += tune(tuners[0], ("depth",))
        for o in tuners[1:]:
            jobs += tune(o, FINETUNE_TARGETS)
    return jobs


def run_experiment(build, results, cfg: ExperimentConfig, progress: bool = True) -> dict:
    """Run the plan (:func:`plan`) on ``build`` into ``results``; finished runs are skipped. Returns
    ``{"probe_runs": n, "finetune_runs": n, "paused": bool, "left": n}``: runs present after this call, and
    fine-tuning runs (or their VPT-Strategy tests) left to another process (:func:`run_lock`)."""
    from tqdm.auto import tqdm

    tasks = load_tasks(build)
    Path(results).mkdir(parents=True, exist_ok=True)
    write_items(build, results)
    taps = {o: layer_taps(Observer.parse(o).model_id) for o in cfg.observers}
    write_plan(results, cfg, taps)
    jobs = plan(cfg, taps)
    out = {"probe_runs": 0, "finetune_runs": 0, "paused": False, "left": 0}
    probes = _Prober(tasks, results, cfg, taps, progress)
    tuners = _Tuner(tasks, results, cfg, progress)
    bar = tqdm(jobs, desc="3D-PC results", unit="run", disable=not progress)
    for job in bar:
        bar.set_postfix_str(f"{job.kind} {job.observer} {job.target} {job.feature} seed {job.seed}")
        if job.kind == "probe":
            probes.run(job)
            out["probe_runs"] += 1
        elif job.kind == "finetune":
            state = tuners.finetune(job)
            if state == "paused":
                out["paused"] = True
                break
            out["finetune_runs"] += state == "done"
            out["left"] += state == "busy"
        else:
            n = tuners.transfer(job)
            out["finetune_runs"] += n
            out["left"] += n == 0
    bar.close()
    return out


def write_plan(results, cfg: ExperimentConfig, taps: dict) -> dict:
    """Merge this invocation's plan into ``<results>/plan.json`` (union of observers, fine-tuned models, steps
    and seeds over every invocation; each observer's stages), so the page can show every planned cell, run
    or not. Written atomically."""
    from infra.files import atomic_write_text

    path = Path(results) / PLAN
    old = json.loads(path.read_text()) if path.is_file() else {}

    def union(key, new):
        return list(dict.fromkeys([*old.get(key, []), *new]))

    merged = {"observers": union("observers", cfg.observers), "finetune_models": union("finetune_models",
              cfg.finetune_models if "finetune" in cfg.steps else ()), "steps": union("steps", cfg.steps),
              "probe_seeds": union("probe_seeds", cfg.probe_seeds),
              "finetune_seeds": union("finetune_seeds", cfg.finetune_seeds),
              "taps": {**old.get("taps", {}), **({o: list(t) for o, t in taps.items()} if "layers" in cfg.steps
                                                  else {})}}
    if "spatial" in cfg.steps or "spatial" in old:  # absent from plans made before the step
        merged["spatial"] = {**old.get("spatial", {}), **({o: spatial_tap(Observer.parse(o).model_id, cfg.spatial_grid)
                                                           for o in cfg.spatial()} if "spatial" in cfg.steps else {})}
    if merged != old:
        atomic_write_text(path, json.dumps(merged, indent=1) + "\n")
    return merged


def run_keys(build, results, cfg: ExperimentConfig) -> list[tuple[Job, str]]:
    """(job, run id) of every probe and fine-tuning job of the plan, in plan order, as :func:`run_experiment`
    computes them to skip finished runs (the VPT-Strategy tests, whose ids name their source runs, are left
    out). Extracts the observers' embeddings that are not cached yet (a probe's run id holds their cache key)."""
    tasks = load_tasks(build)
    taps = {o: layer_taps(Observer.parse(o).model_id) for o in cfg.observers}
    probes, tuners = _Prober(tasks, results, cfg, taps, False), _Tuner(tasks, results, cfg, False)
    return [(j, probes.rid(j) if j.kind == "probe" else tuners.rid(j)) for j in plan(cfg, taps) if j.kind != "transfer"]


EXTRA = {"experiment": "results_3dpc"}  # in every run's configuration digest: these runs are this experiment's


def _run_id(method, model_id: str, seed: int, name: str | None = None) -> str:
    """The run id ``eval.runner.run_method`` gives ``method``'s run of ``seed`` (to skip it or find its files)."""
    from .results import run_id
    from .runner import run_digest

    return run_id(name or method.name, method.task.name, model_id, seed, run_digest(method, EXTRA))


class _Prober:
    """Probe jobs: each observer's embeddings (pooled + every stage, extracted once: the stages are always
    tapped so that one cache entry serves the pooled and the per-layer probes) loaded on first use; one probe
    run per job; a ledger row per step that did work."""

    def __init__(self, tasks, results, cfg, taps, progress):
        self.tasks, self.results, self.cfg, self.taps, self.progress = tasks, results, cfg, taps, progress
        self.build = build_identity(tasks["vpt"])
        self.loaded = {}  # (observer, taps) -> (loaded, identity, embeddings), kept: jobs alternate between them

    def taps_of(self, job: Job) -> tuple[str, ...]:
        """The taps of the cache entry a job reads: the spatial read-out (``<module>@grid<n>``) has an entry of
        its own (adding it to the stages' entry would change that entry's key, and so every earlier run id);
        every other feature reads the observer's pooled + stages entry."""
        from .zoo import GRID

        return (job.feature,) if GRID in job.feature else tuple(self.taps.get(job.observer, ()))

    def embeddings(self, obs_text: str, taps: tuple[str, ...] | None = None):
        from .embeddings import get_embeddings

        taps = tuple(self.taps.get(obs_text, ())) if taps is None else tuple(taps)
        if (obs_text, taps) in self.loaded:
            return self.loaded[obs_text, taps]
        obs = Observer.parse(obs_text)
        from .embeddings import CHUNK, default_cache_dir

        loaded = _load(obs, taps, fast=True)
        ident = loaded.run_identity()
        # chunks an interrupted invocation left (eval.embeddings resumes them): not this invocation's cost
        folder = Path(self.cfg.cache_dir or default_cache_dir()) / loaded.model_id.slug
        before = {d.name: len(list(d.glob("chunk_*.npz"))) for d in folder.glob("*.partial")} if folder.is_dir() else {}
        with Clock() as c:
            emb = get_embeddings(loaded, *self.tasks["vpt"].image_files(), self.cfg.cache_dir, self.cfg.batch_size,
                                 progress=self.progress)
        if not emb.from_cache:
            n = len(emb.item_ids)
            resumed = min(n, CHUNK * before.get(f"{emb.key[:24]}.partial", 0))
            write_cost(self.results, {"step": "embeddings", "model_id": obs.model_id, "weights": ident["weights"],
                                      "feature": ",".join(["pooled", *loaded.taps]), "build": self.build,
                                      "images": n - resumed, "size": int(loaded.data_config["input_size"][-1]),
                                      "wall_s": c.wall, "cpu_s": c.cpu, "threads": _threads(), "started": c.started,
                                      "note": f"resumed after {resumed} images extracted earlier" if resumed else ""})
        self.loaded[obs_text, taps] = (loaded, ident, emb)
        return loaded, ident, emb

    def rid(self, job: Job) -> str:
        """The run id of a probe job; it needs the embeddings' cache key: they are loaded (from the cache once
        extracted)."""
        from .probe import ProbeConfig, ProbeMethod

        _, ident, emb = self.embeddings(job.observer, self.taps_of(job))
        pcfg = ProbeConfig(seeds=(job.seed,), n_boot=self.cfg.n_boot)
        return _run_id(ProbeMethod(self.tasks[job.target], pcfg, emb, job.feature, ident),
                       Observer.parse(job.observer).model_id, job.seed)

    def run(self, job: Job) -> None:
        from .probe import ProbeConfig, run_probe
        from .results import run_done

        task = self.tasks[job.target]
        obs = Observer.parse(job.observer)
        pcfg = ProbeConfig(seeds=(job.seed,), n_boot=self.cfg.n_boot)
        loaded, ident, emb = self.embeddings(job.observer, self.taps_of(job))
        rid = self.rid(job)
        if run_done(self.results, rid):
            return
        with Clock() as c:
            summ = run_probe(task, emb, obs.model_id, pcfg, self.results, feature=job.feature, progress=False,
                             identity=ident, config_extra=EXTRA)
        write_cost(self.results, {"step": "probe", "run_id": rid, "model_id": obs.model_id,
                                  "weights": ident["weights"], "task": task.name, "feature": job.feature,
                                  "seed": job.seed, "build": self.build, "images": len(task.split("train")),
                                  "epochs": int(summ["epochs_run"].iloc[0]), "wall_s": c.wall, "cpu_s": c.cpu,
                                  "threads": _threads(), "started": c.started})


def finetune_config(cfg: ExperimentConfig, seeds: tuple[int, ...]):
    """The paper's fine-tuning settings (``eval.finetune.FinetuneConfig`` defaults) with this plan's epochs,
    patience, loader workers and ``seeds``."""
    from .finetune import FinetuneConfig

    return FinetuneConfig(epochs=cfg.finetune_epochs, patience=cfg.finetune_patience, seeds=tuple(seeds),
                          num_workers=cfg.finetune_workers, n_boot=cfg.n_boot)


def thin_task(task, frames: int | None, splits=("train", "val")):
    """``task`` with at most ``frames`` images per placement (its ``group``) in ``splits``, evenly spaced in
    item order (frame order along the placement's camera trajectory: neighbouring frames are nearly the same
    view, so a spaced subset keeps most of what an epoch shows at a fraction of its cost); other splits
    untouched. The thinning enters ``task.info`` and so every run's configuration digest. ``None``: ``task``."""
    from dataclasses import replace as dc_replace

    if frames is None:
        return task
    items = task.items
    keep = np.ones(len(items), bool)
    for split in splits:
        sel = items.index[items["split"] == split]
        for _, idx in items.loc[sel].sort_values("item_id").groupby("group", sort=False).groups.items():
            idx = np.asarray(idx)
            if len(idx) > frames:
                pick = np.unique(np.round(np.linspace(0, len(idx) - 1, frames)).astype(int))
                drop = np.setdiff1d(np.arange(len(idx)), pick)
                keep[items.index.get_indexer(idx[drop])] = False
    return dc_replace(task, items=items[keep].reset_index(drop=True),
                      info={**task.info, "finetune_frames_per_placement": int(frames), "thinned": list(splits)})


@contextlib.contextmanager
def run_lock(results, rid: str):
    """An exclusive, non-blocking lock on ``<results>/checkpoints/<rid>.lock`` (``fcntl.flock``, released when
    the process ends): yields True if this process holds it, False if another invocation (e.g. a second
    ``run steps=finetune`` started beside a probing one) is training the run."""
    import fcntl

    path = Path(results) / "checkpoints" / f"{rid}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _epochs_done(results, rid: str) -> int:
    """Epochs a fine-tuning run has finished (from its checkpoint; 0 before its first)."""
    from .finetune import load_checkpoint

    last = Path(results) / "checkpoints" / rid / "last.pt"
    return int(load_checkpoint(last)["state"]["epoch"]) + 1 if last.is_file() else 0


class _Tuner:
    """Fine-tuning jobs (resumable from their checkpoints; a ledger row per invocation with the epochs it
    trained) and VPT-Strategy tests of the VPT-basic fine-tuned models."""

    def __init__(self, tasks, results, cfg, progress):
        self.tasks = {t: thin_task(task, cfg.finetune_frames) for t, task in tasks.items()}
        self.results, self.cfg, self.progress = results, cfg, progress
        self.build = build_identity(tasks["vpt"])
        self.current = None

    def load(self, obs_text: str):
        if not (self.current and self.current[0] == obs_text):
            self.current = (obs_text, _load(Observer.parse(obs_text)))
        return self.current[1]

    def rid(self, job: Job) -> str:
        from .finetune import FinetuneMethod

        fcfg = finetune_config(self.cfg, (job.seed,))
        return _run_id(FinetuneMethod(self.tasks[job.target], fcfg, self.load(job.observer)),
                       Observer.parse(job.observer).model_id, job.seed)

    def finetune(self, job: Job) -> str:
        """Run (or resume) one fine-tuning run: ``"done"``, ``"paused"`` (by ``epochs_per_invocation``) or
        ``"busy"`` (another process holds its lock)."""
        from .finetune import run_finetune
        from .results import run_done

        rid = self.rid(job)
        if run_done(self.results, rid):
            return "done"
        loaded, task, obs = self.load(job.observer), self.tasks[job.target], Observer.parse(job.observer)
        with run_lock(self.results, rid) as mine:
            if not mine:  # another invocation is training this run: leave it to it, go on with the plan
                _warn(f"fine-tuning run {rid} is being trained by another process; skipped")
                return "busy"
            before = _epochs_done(self.results, rid)
            with Clock() as c:
                summ = run_finetune(task, loaded, obs.model_id, finetune_config(self.cfg, (job.seed,)), self.results,
                                    config_extra=EXTRA, epochs_per_invocation=self.cfg.epochs_per_invocation,
                                    progress=self.progress)
            after = _epochs_done(self.results, rid)
        write_cost(self.results, {"step": "finetune", "run_id": rid, "model_id": obs.model_id,
                                  "weights": loaded.run_identity()["weights"], "task": task.name,
                                  "feature": "finetuned", "seed": job.seed, "build": self.build,
                                  "epochs": after - before, "images": len(task.split("train")),
                                  "size": int(loaded.data_config["input_size"][-1]), "wall_s": c.wall,
                                  "cpu_s": c.cpu, "threads": _threads(), "started": c.started,
                                  "note": "paused" if summ is None else f"finished after {after} epochs"})
        return "done" if summ is not None else "paused"

    def transfer(self, job: Job) -> int:
        """The VPT-basic fine-tuned models (every ``finetune_seeds`` run, all finished) on VPT-Strategy; returns the
        runs present, 0 when a source run is not finished (left to the process training it)."""
        from .results import part_path, run_done

        loaded, obs = self.load(job.observer), Observer.parse(job.observer)
        sources = {}
        for seed in self.cfg.finetune_seeds:
            rid = self.rid(Job("finetune", job.observer, "vpt", "finetuned", seed))
            if not run_done(self.results, rid):  # trained by another invocation (run_lock): a later run tests it
                _warn(f"fine-tuning run {rid} is not finished; its VPT-Strategy test waits for a later run")
                return 0
            sources[seed] = (rid, pd.read_parquet(part_path(self.results, "summary", rid)).iloc[0].to_dict())
        strat = self.tasks["vpt_strategy"]
        method = FinetunedTransfer(strat, finetune_config(self.cfg, self.cfg.finetune_seeds), loaded, sources,
                                   self.results)
        todo = [s for s in self.cfg.finetune_seeds
                if not run_done(self.results, _run_id(method, obs.model_id, s, "finetune"))]
        if todo:
            with Clock() as c:
                run_method(method, obs.model_id, self.results, run_method_name="finetune", config_extra=EXTRA,
                           progress=False)
            write_cost(self.results, {"step": "transfer", "run_id": ",".join(
                _run_id(method, obs.model_id, s, "finetune") for s in todo), "model_id": obs.model_id,
                "weights": loaded.run_identity()["weights"], "task": strat.name, "feature": "finetuned",
                "build": self.build, "images": len(strat.split("strategy")) * len(todo), "wall_s": c.wall,
                "cpu_s": c.cpu, "threads": _threads(), "started": c.started})
        return len(self.cfg.finetune_seeds)


class FinetunedTransfer(Method):
    """A VPT-basic fine-tuned model (the weights early stopping kept, ``<results>/checkpoints/<run>/best.pt``)
    evaluated on another task's evaluation items without training (the paper's VPT-Strategy test). ``sources``:
    per seed, the fine-tuning run id and its summary row (training facts are copied from it); the source runs
    are part of this run's configuration digest."""

    name = "finetune_transfer"
    trains = False
    feature = "finetuned"

    def __init__(self, task, cfg, loaded, sources: dict, results):
        super().__init__(task, cfg)
        self.loaded, self.sources, self.results = loaded, dict(sources), Path(results)

    def digest_fields(self) -> dict:
        return {"model": self.loaded.identity(), "source_runs": {str(s): r for s, (r, _) in sorted(self.sources.items())}}

    def identity(self) -> dict:
        return self.loaded.run_identity()

    def start(self, items, run) -> None:
        super().start(items, run)
        self.initial = copy.deepcopy(self.loaded.module.state_dict())

    def finish(self) -> None:
        from .finetune import _refreeze

        _refreeze(self.loaded, self.initial)

    def run_seed(self, seed: int, rid: str) -> SeedResult:
        import torch

        from .finetune import _build, _loader, _run_epoch_eval, load_checkpoint

        if seed not in self.sources:
            raise ExperimentError(f"no fine-tuning run of seed {seed} to evaluate on {self.task.name}")
        src, facts = self.sources[seed]
        best = self.results / "checkpoints" / src / "best.pt"
        if not best.is_file():
            raise ExperimentError(f"{best}: the fine-tuned weights of run {src} are missing; remove "
                                  f"{self.results / 'summary' / (src + '.parquet')} to fine-tune again")
        self.loaded.module.load_state_dict(self.initial)
        model = _build(self.loaded, len(self.task.classes), self.cfg.dropout)
        model.load_state_dict(load_checkpoint(best, "fine-tuned best-epoch weights"))  # the one safe loader
        lg, _, _ = _run_epoch_eval(model, _loader(self.items, self.loaded.transform, self.cfg, False, seed))
        return SeedResult(probs=torch.softmax(lg, 1).numpy(), facts={
            k: facts[k] for k in ("best_epoch", "epochs_run", "val_accuracy", "train_seconds")})


# ----------------------------------------------------------------------------------- fine-tuning epoch cost


def measure_epoch(build, results, model: str = DEFAULT_FINETUNE[0], sizes: tuple[int, ...] = (),
                  target: str = "vpt", batch_size: int = 16, workers: int = 1, max_batches: int | None = None,
                  progress: bool = True) -> pd.DataFrame:
    """Time one training epoch of fine-tuning (the paper's batch 16, AdamW lr 5e-5, dropout 0.7; the steps of
    ``eval.finetune``'s training loop) and one validation pass, at each image size in ``sizes`` (default: the
    build's image size and the model's input size; images resized by their shorter side, no crop). Each
    measurement is a ledger row (``step`` = ``epoch_train`` / ``epoch_val``); returns them."""
    import torch
    import torch.nn.functional as F
    from tqdm.auto import tqdm

    from .finetune import FinetuneConfig, _build, _loader, _run_epoch_eval
    from .zoo import shorter_side_transform

    tasks = load_tasks(build)
    task = tasks[target]
    obs = Observer.parse(model)
    loaded = _load(obs)
    native = int(loaded.data_config["input_size"][-1])
    build_size = int(json.loads((Path(build) / "config.json").read_text())["size"])
    sizes = tuple(sizes) or tuple(dict.fromkeys((build_size, native)))
    fcfg = FinetuneConfig(batch_size=batch_size, num_workers=workers, seeds=(0,))
    tr, va = task.split("train"), task.split("val")
    if max_batches is not None:
        tr, va = tr.iloc[:max_batches * batch_size], va.iloc[:max_batches * batch_size]
    initial = copy.deepcopy(loaded.module.state_dict())
    rows = []
    for size in sizes:
        transform = shorter_side_transform({**loaded.data_config, "input_size": (3, size, size)})
        loaded.module.load_state_dict(initial)
        torch.manual_seed(0)
        net = _build(loaded, len(task.classes), fcfg.dropout)
        opt = torch.optim.AdamW(net.parameters(), lr=fcfg.lr, weight_decay=fcfg.weight_decay)
        net.train()
        with Clock() as c:
            for x, y in tqdm(_loader(tr, transform, fcfg, True, 0), desc=f"epoch at {size} px", unit="batch",
                             disable=not progress, leave=False):
                if len(y) < 2:
                    continue
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(net(x), y).backward()
                opt.step()
        base = {"model_id": obs.model_id, "weights": loaded.run_identity()["weights"], "task": task.name,
                "feature": "finetuned", "build": build_identity(task), "size": size, "threads": _threads(),
                "started": c.started, "note": f"build images {build_size} px, model input {native} px"}
        rows.append({**base, "step": "epoch_train", "images": len(tr), "epochs": 1, "wall_s": c.wall, "cpu_s": c.cpu})
        with Clock() as c:
            _run_epoch_eval(net, _loader(va, transform, fcfg, False, 0))
        rows.append({**base, "step": "epoch_val", "images": len(va), "epochs": 1, "wall_s": c.wall, "cpu_s": c.cpu,
                     "started": c.started})
    loaded.module.load_state_dict(initial)
    for r in rows:
        write_cost(results, r)
    return pd.DataFrame(rows)


def record_build_time(results, build, time_file) -> dict:
    """A ledger row ``step=build`` from the report of ``/usr/bin/time -v python -m tasks.threedpc out=<build>``
    (GNU time's "User time", "System time", "Elapsed (wall clock) time"; the build's process pool workers are
    its children, so their CPU is included)."""
    text = Path(time_file).read_text()
    found = {}
    for line in text.splitlines():
        key, _, value = line.strip().rpartition(": ")
        found[key] = value.strip()
    try:
        cpu = float(found["User time (seconds)"]) + float(found["System time (seconds)"])
        wall = 0.0
        for part in found["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":"):
            wall = wall * 60 + float(part)
    except (KeyError, ValueError):
        raise ExperimentError(f"{time_file}: not a GNU time -v report (needs User time, System time and Elapsed "
                              "lines; run the build as /usr/bin/time -v python -m tasks.threedpc ... 2> <file>)") from None
    tasks = load_tasks(build)
    row = {"step": "build", "build": build_identity(tasks["vpt"]), "images": len(tasks["vpt"].dataset_images),
           "size": int(json.loads((Path(build) / "config.json").read_text())["size"]), "wall_s": wall, "cpu_s": cpu,
           "started": _utc(Path(time_file).stat().st_mtime - wall),  # the report is written as the build ends
           "note": f"GNU time -v; max RSS {int(found.get('Maximum resident set size (kbytes)', 0)) // 1024} MB"}
    write_cost(results, row)
    return row


# ------------------------------------------------------------------------------------------------- CLI
# The one entry mechanism of infra.cli: a first word (run | cost | page), then key=value settings declared below
# (--help lists them). The argparse spellings of the first release (--build out/3dpc --steps probe,layers
# --no-progress ...) still work, with a warning, until the next release: infra.cli reads --key value as
# key=value, and 'a,b' of a list setting as [a, b]; only --no-progress and --finetune-frames all need a word.


@dataclass(frozen=True)
class _BuildAndResults:
    build: str = S.field(REQUIRED, "a 3D-PC build (python -m tasks.threedpc out=...)")
    results: str = S.field(REQUIRED, "results folder (appended to; finished runs are skipped)")


@dataclass(frozen=True)
class RunOptions(ExperimentConfig, _BuildAndResults):
    """``python -m eval.results_3dpc run``: ``build``, ``results``, the plan's settings (:class:`ExperimentConfig`,
    whose values alone make the run ids) and ``progress``."""

    progress: bool = S.field(True, "progress bars")

    def experiment(self) -> ExperimentConfig:
        import dataclasses

        return ExperimentConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(ExperimentConfig)})


@dataclass(frozen=True)
class CostOptions(_BuildAndResults):
    """``python -m eval.results_3dpc cost``: one fine-tuning epoch timed (:func:`measure_epoch`), or the build's
    own cost from its GNU time report (:func:`record_build_time`)."""

    model: str = S.field(DEFAULT_FINETUNE[0], "model fine-tuned: '<model id>' or '<model id>@random'")
    sizes: tuple[int, ...] = S.field((), "image sizes in px (default []: the build's and the model's input size)",
                                     range=(8, 4096))
    workers: int = S.field(1, "fine-tuning data-loader processes", check=S.at_least(0))
    max_batches: int | None = S.field(None, "time only this many batches, >= 1 (a smoke test; null: the epoch)")
    build_time: str | None = S.field(None, "instead: record the build's cost from its /usr/bin/time -v report")
    progress: bool = S.field(True, "progress bars")

    def __post_init__(self):
        S.validate_config(self)
        Observer.parse(self.model)
        if self.max_batches is not None and self.max_batches < 1:
            raise S.not_allowed("max_batches", self.max_batches, ">= 1 or null")


@dataclass(frozen=True)
class PageOptions:
    """``python -m eval.results_3dpc page``: the results page and its figures (:func:`write_page`)."""

    results: str = S.field(REQUIRED, "results folder of python -m eval.results_3dpc run")
    out: str = S.field("docs/results.md", "the page (Markdown)")
    img: str | None = S.field(None, "figure folder (null: <out's folder>/img)")
    n_boot: int = S.field(10_000, "bootstrap resamples of the page's CIs", check=S.at_least(100))
    build: str | None = S.field(None, "the 3D-PC build the runs used (null: no comparison with the build's "
                                "no-network baselines, its shortcut audit)")


@dataclass(frozen=True)
class ValidityOptions:
    """``python -m eval.results_3dpc validity``: the page's validity section alone (:func:`refresh_validity`)."""

    page: str = S.field("docs/results.md", "the results page to update (its validity_sweep.md beside it)")


def _validity_job(o: ValidityOptions) -> str:
    return f"rewrote the validity section of {refresh_validity(o.page)}"


def _run_job(o: RunOptions) -> str:
    if not Path(o.build).is_dir():
        raise ExperimentError(f"build={o.build}: no such folder (a 3D-PC build: python -m tasks.threedpc out=...)")
    out = run_experiment(o.build, o.results, o.experiment(), progress=o.progress)
    state = ("paused (run the same command again to resume)" if out["paused"] else
             f"{out['left']} fine-tuning step(s) left to another process; run again when it ends"
             if out["left"] else "complete")
    return f"{out['probe_runs']} probe runs, {out['finetune_runs']} fine-tuning runs in {o.results}: {state}"


def _cost_job(o: CostOptions) -> str:
    if not Path(o.build).is_dir():
        raise ExperimentError(f"build={o.build}: no such folder (a 3D-PC build: python -m tasks.threedpc out=...)")
    if o.build_time:
        r = record_build_time(o.results, o.build, o.build_time)
        return f"build: {r['wall_s'] / 60:.1f} min wall, {r['cpu_s'] / 60:.1f} CPU-min ({r['images']} images)"
    rows = measure_epoch(o.build, o.results, o.model, o.sizes, workers=o.workers, max_batches=o.max_batches,
                         progress=o.progress)
    return "\n".join(f"{r.step} at {r['size']} px: {r.images} images, {r.wall_s / 60:.1f} min wall, "
                     f"{r.cpu_s / 60:.1f} CPU-min" for _, r in rows.iterrows())


def _page_job(o: PageOptions) -> str:
    return f"wrote {write_page(o.results, o.out, o.img, n_boot=o.n_boot, build=o.build)}"


COMMANDS = {  # name -> (settings, job, what it does, its usage line)
    "run": (RunOptions, _run_job, "probes, per-layer probes, fine-tuning, VPT-Strategy (resumable)",
            "build=<build> results=<folder> [steps=[probe,layers,finetune]] [observers=[...]] ..."),
    "cost": (CostOptions, _cost_job, "time one fine-tuning epoch at the build's and the model's image size",
             "build=<build> results=<folder> [model=<id>] [sizes=[...]] | build_time=<time -v report>"),
    "page": (PageOptions, _page_job, "the results page and its figures from a results folder",
             "results=<folder> [out=docs/results.md] [img=<folder>]"),
    "validity": (ValidityOptions, _validity_job, "the page's validity section alone, from validity_sweep.md beside it",
                 "[page=docs/results.md]"),
}
PROG = "python -m eval.results_3dpc"
USAGE = f"""usage: {PROG} <command> [key=value ...]

commands:
""" + "\n".join(f"  {name:<8} {what}\n        {line}" for name, (_, _, what, line) in COMMANDS.items()) + f"""

{PROG} <command> --help lists the command's settings with their defaults. A list is [a,b] or a,b.
Deprecated (removed in the next release): the option spellings of the first release, --build <build>
--results <folder> --steps probe,layers --no-progress ... (a warning names the new spelling)."""


def _legacy(argv: list[str]) -> tuple[list[str], list[str]]:
    """(arguments with the first release's spellings made ``key=value``, the deprecated ones seen): ``--no-progress``
    -> ``progress=false``, ``--finetune-frames all`` -> ``finetune_frames=null``; other ``--key value`` /
    ``--key=value`` forms are read by :func:`infra.cli.parse_overrides` as they are."""
    out, seen, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--no-progress":
            out.append("progress=false")
            seen.append(a)
        elif a.startswith("--") and a not in ("--help", "--debug"):
            key, eq, val = a.partition("=")
            if not eq and i + 1 < len(argv) and "=" not in argv[i + 1]:
                val, i = argv[i + 1], i + 1
            elif not eq:
                val = ""
            seen.append(key)
            name = key[2:].replace("-", "_")
            if name == "finetune_frames" and val.strip().lower() in ("all", "none"):
                val = "null"
            out.append(f"{name}={val}" if val or eq else a)
        else:
            out.append(a)
        i += 1
    return out, seen


def main(argv: list[str] | None = None) -> int:
    """``python -m eval.results_3dpc <run|cost|page> [key=value ...]`` (infra.cli): ``--help`` lists the commands,
    ``<command> --help`` its settings (exit 0); bad input is one ``error:`` line (exit 2)."""
    from infra.cli import HELP_FLAGS, fail, run_options
    from infra.registry import suggest

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in HELP_FLAGS:
        print(USAGE)
        return 0
    if not argv or argv[0] not in COMMANDS:
        got = f"unknown command {argv[0]!r}; {suggest(argv[0], list(COMMANDS))}" if argv else "missing command; "
        fail(f"{got}commands: {', '.join(COMMANDS)} (see {PROG} --help)")
    command, rest = argv[0], argv[1:]
    cls, job, _, line = COMMANDS[command]
    rest, old = _legacy(rest)
    if old:
        _warn(f"{' '.join(dict.fromkeys(old))}: deprecated spelling (removed in the next release); write "
              f"{PROG} {command} {' '.join(a for a in rest if a not in ('--debug',))}")
    code = run_options(f"eval.results_3dpc {command}", f"usage: {PROG} {command} {line}", cls, job, rest,
                       more=COMMANDS[command][2])
    if code:
        raise SystemExit(code)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
