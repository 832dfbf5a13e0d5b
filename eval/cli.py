"""Hydra entry points of ``python -m eval <command>`` (importable so that launchers can pickle them).

Commands: ``probe``, ``finetune``, ``stats`` (Hydra, ``--multirun`` sweeps through any launcher:
``hydra/launcher=joblib`` on one machine, ``hydra/launcher=submitit_slurm`` or the example
``hydra/launcher=vantage_slurm`` on a cluster) and ``zoo`` (lists zoo configs). ``zoo=<name>`` with
``--multirun`` and no ``model=`` sweeps every model of that list. Commands are registered with
:func:`command`; a new evaluation method registers its class in ``eval.runner.METHODS`` (in its own module)
and its command in a module of its own listed in :data:`COMMAND_MODULES` (config ``configs/eval_<name>.yaml``;
the settings section ``<name>`` is the method's dataclass, ``@command(..., settings="<module>:<Config>")``,
registered as the Hydra structured config ``method/<name>``).
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger("eval")


@dataclass(frozen=True)
class Command:
    """A ``python -m eval <name>`` command: ``run(cfg)`` under Hydra with config ``eval_<name>`` (sweeps,
    launchers), or ``run(argv)`` directly when ``hydra`` is false."""

    name: str
    usage: str  # the line after the name in --help
    run: Callable
    hydra: bool = True
    settings: str = ""  # "<module>:<dataclass>" behind the config section <name>: (a Hydra structured config)
    required: tuple[str, ...] = ()  # fields of that section the command line must set


COMMANDS: dict[str, Command] = {}


def command(name: str, usage: str, hydra: bool = True, settings: str = "", required: tuple[str, ...] = ()):
    """Decorator registering a command (an evaluation method's CLI registers under the method's name).
    ``settings="<module>:<Dataclass>"``: the dataclass whose fields are the config section ``<name>:``; it is
    registered as the Hydra structured config ``method/<name>`` before composing (``configs/eval_<name>.yaml``
    composes it with ``- /method@<name>: <name>`` and restates none of its defaults); ``required``: its fields
    without a usable default (``???``: the command line must set them)."""

    def deco(fn):
        COMMANDS[name] = Command(name, usage, fn, hydra, settings, required)
        return fn

    return deco


def register_settings(cmd: Command) -> None:
    """Register ``cmd``'s settings dataclass as the Hydra config ``method/<name>`` (no-op without one)."""
    if not cmd.settings:
        return
    import importlib

    from tasks.schema import store_structured

    module, cls = cmd.settings.split(":")
    store_structured("method", getattr(importlib.import_module(module), cls), name=cmd.name, required=cmd.required)


def usage() -> str:
    from .zoo import SOURCES

    lines = "\n".join(f"  {c.name:<10} {c.usage}" for c in COMMANDS.values())
    return f"""usage: python -m eval <command> [key=value ...] [--multirun]

commands:
{lines}

model ids: {' | '.join(s.syntax for s in SOURCES.values())}
sweeps:    python -m eval probe --multirun model=timm:a,timm:b task=... out=... hydra/launcher=joblib
           python -m eval probe --multirun zoo=tests pretrained=false task=... out=...
"""


def _fail(msg: str) -> None:
    from infra.cli import fail

    fail(msg)


# switches of configs/eval/common.yaml (and the commands' own): Python's truthiness would read "maybe" as on
BOOL_SETTINGS = ("pretrained", "fast", "progress")


def _container(cfg) -> dict:
    from infra.cli import plain_config

    c = plain_config(cfg, "python -m eval --help")
    for key in BOOL_SETTINGS:
        if key in c and not isinstance(c[key], bool):
            _fail(f"{key}={c[key]!r} is not allowed (true or false)")
    out = c.get("out")
    if isinstance(out, str) and os.path.exists(out) and not os.path.isdir(out):  # every command's results folder
        _fail(f"out={out}: exists and is not a folder; choose another out= (a results folder)")
    return c


def _load(c: dict, task_kind: str = "", extraction_only: bool = False):
    """The model of a job. ``extraction_only``: the job only extracts features (probe, decoder), so the
    ``fast`` setting applies; jobs that train the module or hook arbitrary layers (fine-tuning, similarity)
    always get the plain module (folded batch norms would neither train nor expose conv outputs as before)."""
    from .zoo import WeightsSpec, load_model, resolve_preprocess

    weights = WeightsSpec(pretrained=bool(c["pretrained"]) and not c["weights"], file=c["weights"],
                          init_seed=int(c["init_seed"]))
    return load_model(c["model"], weights, resolve_preprocess(c["preprocess"], task_kind),
                      tuple(c.get("taps") or ()), c["device"], c["hub"], c.get("model_kwargs") or {},
                      fast=extraction_only and bool(c.get("fast", True)))


def _task(c: dict):
    from .tasks import load_task

    return load_task(c["task"], c["target"], c["val_fraction"], c["test_fraction"], c["split_seed"],
                     c.get("conditions"))


def _provenance(c: dict) -> dict:
    return {"zoo": (c.get("zoo") or {}).get("name")}


def _prepare(c: dict, method: str):
    """Task, method config (the registered method's ``Config`` from the config section of its name) and model
    of a method's job; any setting error exits with its message."""
    from .methods import get_method
    from .tasks import TaskError
    from .zoo import WeightsUnavailable, ZooError

    try:
        config_cls = get_method(method).Config
        task = _task(c)
        settings = dict(c[method])
        settings["seeds"] = tuple(settings["seeds"])
        return task, config_cls(**settings), _load(c, task.kind, extraction_only=method == "probe")
    except (ZooError, WeightsUnavailable, TaskError, ValueError, TypeError) as e:
        _fail(str(e))


@command("probe", "linear probe on cached embeddings   model=<id> task=<dataset dir> out=<results dir>",
         settings="eval.probe:ProbeConfig")
def probe_job(cfg) -> None:
    from .embeddings import EmbeddingError, get_embeddings
    from .probe import run_probe, seed_summary

    c = _container(cfg)
    task, pcfg, loaded = _prepare(c, "probe")
    if c["feature"] != "pooled" and c["feature"] not in loaded.taps:
        _fail(f"feature={c['feature']!r}: must be 'pooled' or one of taps={list(loaded.taps)}")
    try:
        emb = get_embeddings(loaded, *task.image_files(), c["cache_dir"], c["batch_size"],
                             c["dtype"], c["device"], c["progress"])
        summ = run_probe(task, emb, c["model"], pcfg, c["out"], feature=c["feature"],
                         config_extra=_provenance(c), progress=c["progress"], identity=loaded.run_identity())
    except (EmbeddingError, ValueError) as e:
        _fail(str(e))
    for _, r in seed_summary(summ, pcfg.ci).iterrows():
        print(f"{r.model_id} {r.task} {r.split}: accuracy {r.accuracy_mean:.3f} "
              f"[{r.accuracy_ci_low:.3f}, {r.accuracy_ci_high:.3f}] over {r.seeds} seeds "
              f"(embeddings {'cached' if emb.from_cache else 'computed'})")


@command("finetune", "fine-tune a whole model             model=<id> task=<dataset dir> out=<results dir>",
         settings="eval.finetune:FinetuneConfig")
def finetune_job(cfg) -> None:
    from .finetune import run_finetune
    from .probe import seed_summary

    c = _container(cfg)
    task, fcfg, loaded = _prepare(c, "finetune")
    try:
        summ = run_finetune(task, loaded, c["model"], fcfg, c["out"],
                            epochs_per_invocation=c["epochs_per_invocation"], config_extra=_provenance(c),
                            progress=c["progress"], device=c["device"])
    except (ValueError, RuntimeError) as e:
        _fail(str(e))
    if summ is None:
        print(f"paused after {c['epochs_per_invocation']} epoch(s); run the same command again to resume")
        return
    for _, r in seed_summary(summ, fcfg.ci).iterrows():
        print(f"{r.model_id} {r.task} {r.split}: accuracy {r.accuracy_mean:.3f} over {r.seeds} seed(s)")


@command("stats", "statistics over a results folder    results=<dir> [humans=<path>] [zoo=<name>]")
def stats_job(cfg) -> None:
    from .report import run_stats

    c = _container(cfg)
    try:
        out = run_stats(c)
    except (ValueError, FileNotFoundError) as e:
        _fail(str(e))
    print(f"wrote statistics to {out} (see {out}/report.md and {out}/report.html)")


@command("zoo", "list zoo configs, or one list       python -m eval zoo [name]", hydra=False)
def zoo_command(args: list[str]) -> None:
    from .zoo import ZooError, load_zoo, zoo_names

    if not args:
        for name in zoo_names():
            print(f"{name}: {len(load_zoo(name))} models")
        return
    try:
        models = load_zoo(args[0])
    except ZooError as e:
        _fail(str(e))
    if "--ids" in args:
        print(",".join(m["id"] for m in models))
        return
    for m in models:
        extra = " ".join(f"{k}={v}" for k, v in m.items() if k != "id")
        print(f"{m['id']}  {extra}")


def expand_zoo(argv: list[str]) -> list[str]:
    """With --multirun/-m, ``zoo=<name>`` and no ``model=``, add ``model=<every id of the list>``."""
    if not any(a in ("--multirun", "-m") for a in argv) or any(a.startswith("model=") for a in argv):
        return argv
    for a in argv:
        if a.startswith("zoo="):
            from .zoo import load_zoo

            ids = [m["id"] for m in load_zoo(a.split("=", 1)[1])]
            return argv + ["model=" + ",".join(ids)]
    return argv


# Modules that define further commands with :func:`command` (one line per method family; imported by main
# before dispatch so their commands appear in --help). Hydra's launchers pickle the job function by its module,
# so a command defined in such a module sweeps like the built-in ones.
COMMAND_MODULES: tuple[str, ...] = (
    "eval.cli_report",
    "eval.cli_methods",  # ood, decoder, similarity (issue 15)
    "eval.cli_zeroshot",
)


def load_commands() -> dict[str, Command]:
    """Every registered command: the built-in ones here and those of :data:`COMMAND_MODULES`."""
    import importlib

    for mod in COMMAND_MODULES:
        importlib.import_module(mod)
    return COMMANDS


def main(argv: list[str] | None = None) -> None:
    import hydra

    load_commands()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        _fail(f"unknown command {name!r}; commands: {', '.join(COMMANDS)}")
    cmd = COMMANDS[name]
    if not cmd.hydra:
        cmd.run(rest)
        return
    try:
        rest = expand_zoo(rest)
    except ValueError as e:
        _fail(str(e))
    register_settings(cmd)
    if not any(a.startswith("-") for a in rest):  # a mistyped key is an error: line, not Hydra's exit 1
        from infra.cli import check_overrides

        try:
            check_overrides(f"eval_{name}", rest)
        except ValueError as e:
            _fail(str(e))
    from infra.cli import added_keys

    extra = added_keys(f"eval_{name}", [a for a in rest if not a.startswith("-")])
    if extra:  # the jobs read only the settings they know: a '+key' they do not would be ignored silently
        _fail(f"unknown setting(s) {' '.join(extra)}: python -m eval {name} has no such setting "
              f"(see python -m eval {name} --cfg job)")
    sys.argv = [f"python -m eval {name}"] + rest
    try:
        hydra.main(version_base=None, config_path="pkg://configs", config_name=f"eval_{name}")(cmd.run)()
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C); finished work is kept — run the same command again to resume", file=sys.stderr)
        raise SystemExit(130) from None
