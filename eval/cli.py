"""Hydra entry points of ``python -m eval <command>`` (importable so that launchers can pickle them).

Commands: ``probe``, ``finetune``, ``stats`` (Hydra, ``--multirun`` sweeps through any launcher:
``hydra/launcher=joblib`` on one machine, ``hydra/launcher=submitit_slurm`` or the example
``hydra/launcher=vantage_slurm`` on a cluster) and ``zoo`` (lists zoo configs). ``zoo=<name>`` with
``--multirun`` and no ``model=`` sweeps every model of that list. Commands are registered with
:func:`command` (the registry :data:`COMMANDS`, which imports :data:`COMMAND_MODULES` when listed; :func:`load_commands`
adds the modules of the ``eval.methods`` package). A new evaluation method is ONE module in ``eval/methods/``:
``@register_method("<name>", cli="<usage>", uses_model=...)`` on its class gives it the generic command
:func:`method_job` (task + validated settings + model if it uses one → ``run_method``) under a config made
here when there is no ``configs/eval_<name>.yaml`` (:func:`method_config_node`). Every command's settings
section ``<name>`` is the method's dataclass (a Hydra structured config ``method/<name>``), its declared ranges
checked for every method before any work (:func:`method_settings`); ``python -m eval <name> --help`` lists
every setting with its default, help and allowed values.
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable

from infra.registry import Registry, where

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


# Modules that define further commands with :func:`command` (one line per method family; imported when the
# registry is listed, so their commands appear in --help). Hydra's launchers pickle the job function by its
# module, so a command defined in such a module sweeps like the built-in ones. New methods need no line here:
# the modules of the ``eval.methods`` package are discovered.
COMMAND_MODULES: tuple[str, ...] = (
    "eval.cli_report",
    "eval.cli_methods",  # ood, decoder, similarity (issue 15)
    "eval.cli_zeroshot",
)
COMMANDS: Registry[Command] = Registry("command", origin=lambda c: where(c.run),
                                       discover=COMMAND_MODULES)


def command(name: str, usage: str, hydra: bool = True, settings: str = "", required: tuple[str, ...] = ()):
    """Decorator registering a command (an evaluation method's CLI registers under the method's name).
    ``settings="<module>:<Dataclass>"``: the dataclass whose fields are the config section ``<name>:``; it is
    registered as the Hydra structured config ``method/<name>`` before composing (``configs/eval_<name>.yaml``
    composes it with ``- /method@<name>: <name>`` and restates none of its defaults); ``required``: its fields
    without a usable default (``???``: the command line must set them)."""

    def deco(fn):
        COMMANDS.register(name, Command(name, usage, fn, hydra, settings, required))
        return fn

    return deco


def register_settings(cmd: Command) -> None:
    """Register ``cmd``'s settings dataclass as the Hydra config ``method/<name>`` (no-op without one)."""
    if not cmd.settings:
        return
    import importlib

    from infra.schema import store_structured

    module, cls = cmd.settings.split(":")
    store_structured("method", getattr(importlib.import_module(module), cls), name=cmd.name, required=cmd.required)
    if cmd.run is method_job:
        _store_method_config(cmd.name)


def settings_class(cmd: Command) -> type | None:
    """The dataclass behind ``cmd``'s settings section (None: the command has none)."""
    if not cmd.settings:
        return None
    import importlib

    module, cls = cmd.settings.split(":")
    return getattr(importlib.import_module(module), cls)


def method_config_node(name: str, uses_model: bool) -> dict:
    """The Hydra config ``eval_<name>`` of a method that has no YAML: the shared task / results settings (and
    the model settings of ``configs/eval/common.yaml`` only if the method uses a model), then its settings
    section ``<name>`` (the structured config ``method/<name>``)."""
    hydra = {"run": {"dir": "."}, "output_subdir": None, "sweep": {"dir": "${out}/sweeps/${now:%Y-%m-%d_%H-%M-%S}"}}
    defaults = (["eval/common", {"zoo": None}] if uses_model else []) + [
        "_self_", {f"/method@{name}": name}, {"override hydra/job_logging": "stdout"}]
    own = {} if uses_model else {
        "task": "???", "target": None, "conditions": None, "val_fraction": 0.15, "test_fraction": 0.25,
        "split_seed": 0, "out": "???", "device": "cpu", "progress": True}
    return {"defaults": defaults, **own, "hydra": hydra}


def _store_method_config(name: str) -> None:
    import importlib.resources

    if importlib.resources.files("configs").joinpath(f"eval_{name}.yaml").is_file():
        return
    from hydra.core.config_store import ConfigStore

    from .methods import get_method

    ConfigStore.instance().store(name=f"eval_{name}", node=method_config_node(name, get_method(name).uses_model))


def method_settings(c: dict, name: str):
    """The method ``name``'s ``Config`` from the config section ``c[name]``, checked against the ranges and
    choices its fields declare (``infra.schema``; errors name ``<name>.<field>``); lists become tuples where the
    field is a tuple."""
    import dataclasses

    from infra.schema import make_section

    from .methods import get_method

    cls = get_method(name).Config
    values = dict(c.get(name) or {})
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        if isinstance(values.get(f.name), list) and (isinstance(default, tuple) or t.startswith("tuple")):
            values[f.name] = tuple(values[f.name])
    return make_section(cls, values, name)


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

    name = _running_command()
    c = plain_config(cfg, f"python -m eval {name or '<command>'} --help")
    for key in BOOL_SETTINGS:
        if key in c and not isinstance(c[key], bool):
            _fail(f"{key}={c[key]!r} is not allowed (true or false)")
    out = c.get("out")
    if isinstance(out, str) and os.path.exists(out) and not os.path.isdir(out):  # every command's results folder
        _fail(f"out={out}: exists and is not a folder; choose another out= (a results folder)")
    if name and name in c:  # every method's declared ranges, whether or not its job checks them itself
        from .runner import METHODS

        if name in METHODS:
            try:
                method_settings(c, name)
            except (ValueError, TypeError) as e:
                _fail(str(e))
    return c


def _running_command() -> str:
    """The ``eval_<name>`` config Hydra is running (``""`` outside a Hydra job)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return str(HydraConfig.get().job.config_name or "").removeprefix("eval_")
    except Exception:  # noqa: BLE001 - called outside hydra.main (tests calling a job directly)
        return ""


def weights_of(c: dict):
    """The weights a job's ``pretrained``/``weights``/``init_seed`` keys ask for (a ``weights=`` file wins over
    ``pretrained``)."""
    from .zoo import WeightsSpec

    return WeightsSpec(pretrained=bool(c["pretrained"]) and not c["weights"], file=c["weights"],
                       init_seed=int(c["init_seed"]))


def _load(c: dict, task_kind: str = "", extraction_only: bool = False):
    """The model of a job. ``extraction_only``: the job only extracts features (probe, decoder), so the
    ``fast`` setting applies; jobs that train the module or hook arbitrary layers (fine-tuning, similarity)
    always get the plain module (folded batch norms would neither train nor expose conv outputs as before)."""
    from .zoo import load_model, resolve_preprocess

    return load_model(c["model"], weights_of(c), resolve_preprocess(c["preprocess"], task_kind),
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


def method_job(cfg) -> None:
    """The generic command of a method registered with ``cli=``: task, the method's validated settings, the
    model if it uses one, then ``run_method`` (resumable; trial and summary rows in ``out``)."""
    from .methods import get_method
    from .probe import seed_summary
    from .runner import run_method
    from .tasks import TaskError
    from .zoo import WeightsUnavailable, ZooError

    name = _running_command()
    c = _container(cfg)
    cls = get_method(name)
    try:
        task = _task(c)
        mcfg = method_settings(c, name)
        args = (task, mcfg, _load(c, task.kind)) if cls.uses_model else (task, mcfg)
        summ = run_method(cls(*args), c["model"] if cls.uses_model else name, c["out"],
                          config_extra=_provenance(c), progress=c["progress"])
    except (ZooError, WeightsUnavailable, TaskError, ValueError, TypeError) as e:
        _fail(str(e))
    if summ is None:
        print("paused; run the same command again to resume")
        return
    for _, r in seed_summary(summ, getattr(mcfg, "ci", 0.95)).iterrows():
        print(f"{r.model_id} {r.task} {r.split}: accuracy {r.accuracy_mean:.3f} "
              f"[{r.accuracy_ci_low:.3f}, {r.accuracy_ci_high:.3f}] over {r.seeds} seed(s)")


@command("zoo", "list zoo configs, or one list       python -m eval zoo [name]", hydra=False)
def zoo_command(args: list[str]) -> None:
    from .zoo import ZooError, load_zoo, zoo_names

    if any(a in ("-h", "--help", "help") for a in args):
        print("usage: python -m eval zoo [name] [--ids]\n\n  (no name)  every zoo list with its number of models\n"
              "  name       the models of configs/zoo/<name>.yaml, one per line with their settings\n"
              "  --ids      only the ids, comma-separated (for model=<ids> --multirun)")
        return
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


def load_commands() -> Registry[Command]:
    """Every registered command: the built-in ones here, those of :data:`COMMAND_MODULES`, and the generic
    command of every method registered with ``cli=`` (``eval.methods`` and its discovered modules)."""
    import importlib

    from infra.registry import package_modules

    COMMANDS.load_all()
    found = package_modules(("eval.methods",))  # eval/methods/*.py; not the built-in methods (pandas, torch: slow)
    if not found:
        return COMMANDS
    for module in found:
        importlib.import_module(module)
    from .runner import METHODS

    for name in METHODS.loaded():
        cls = METHODS[name]
        if cls.cli_usage and name not in COMMANDS:
            COMMANDS.register(name, Command(name, cls.cli_usage, method_job,
                                            settings=f"{cls.Config.__module__}:{cls.Config.__qualname__}"))
    return COMMANDS


def command_help(cmd: Command) -> str:
    """``python -m eval <name> --help``: the usage and every setting (defaults, help, allowed values)."""
    from infra.cli import hydra_help

    cls = settings_class(cmd)
    return hydra_help(f"eval_{cmd.name}", f"usage: python -m eval {cmd.name} {cmd.usage.strip()}",
                      sections={cmd.name: cls} if cls else None,
                      more="sweeps: add --multirun and comma-separated values (see python -m eval --help)")


def main(argv: list[str] | None = None) -> None:
    import hydra

    load_commands()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        _fail(COMMANDS.unknown_message(name))
    cmd = COMMANDS[name]
    if not cmd.hydra:
        cmd.run(rest)
        return
    register_settings(cmd)
    if any(a in ("-h", "--help", "help") for a in rest):
        print(command_help(cmd))
        return
    try:
        rest = expand_zoo(rest)
    except ValueError as e:
        _fail(str(e))
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
              f"(see python -m eval {name} --help)")
    sys.argv = [f"python -m eval {name}"] + rest
    try:
        hydra.main(version_base=None, config_path="pkg://configs", config_name=f"eval_{name}")(cmd.run)()
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C); finished work is kept — run the same command again to resume", file=sys.stderr)
        raise SystemExit(130) from None
