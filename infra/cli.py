"""How Vantage's command-line programs end: ``error: <what, where, which value>`` and exit 2 for bad input,
one line and exit 130 for Ctrl-C, never a traceback unless asked for (``--debug`` or
``HYDRA_FULL_ERROR=1``, for developers).

``run_hydra(config_name, job)`` composes ``configs/<config_name>.yaml`` with the command line's
overrides itself, so a mistyped key or value is an ``error:`` line too, and calls ``job(cfg_dict)``;
arguments meant for Hydra itself (``--help``, ``--cfg job``, ``--multirun`` …) go to ``hydra.main``.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 1


def debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("HYDRA_FULL_ERROR", "") == "1"


def _interrupted(e: BaseException) -> bool:
    """Ctrl-C, also when numba or a C extension turned it into a ``SystemError``."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _one_line(e: BaseException) -> str:
    msg = str(e).strip() or type(e).__name__
    return " ".join(line.strip() for line in msg.splitlines() if line.strip())


def _composition_error(e: BaseException) -> str:
    """One line for a failed Hydra composition, with the reason OmegaConf gave (Hydra's own message says only
    which override failed, e.g. a value of the wrong type for a structured config's field)."""
    msg = _one_line(e)
    cause = str(e.__cause__ or "").strip()
    first = cause.splitlines()[0].strip() if cause else ""
    return f"{msg}: {first}" if first and first not in msg else msg


def run_guarded(job: Callable[[], object], debug: bool = False,
                user_errors: tuple[type[BaseException], ...] = (ValueError, OSError, RuntimeError)) -> int:
    """Run ``job()``; map what it raises to an exit status and one line on stderr. Returns 0 on success."""
    try:
        job()
        return 0
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the CLI boundary: every failure becomes one line
        if debug:
            raise
        if _interrupted(e):
            print("interrupted (Ctrl-C); finished work is kept — run the same command again to resume",
                  file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(e, user_errors):
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"error: internal error ({type(e).__name__}: {_one_line(e)}); please report it with the output "
              "of the same command run with --debug", file=sys.stderr)
        return EXIT_INTERNAL


def compose(config_name: str, overrides: list[str]) -> dict:
    """``configs/<config_name>.yaml`` with ``overrides`` (Hydra syntax), resolved, as a plain dict."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
    d = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    d.pop("hydra", None)
    return d


def check_overrides(config_name: str, overrides: list[str]) -> None:
    """Raise ``ValueError`` (one line, naming the argument) if ``overrides`` do not compose with
    ``configs/<config_name>.yaml``; values are not resolved (mandatory ``???`` fields may stay unset)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="configs", version_base=None):
            hydra_compose(config_name=config_name, overrides=list(overrides))
    except Exception as e:  # noqa: BLE001 - Hydra/OmegaConf parse and composition errors
        raise ValueError(f"{_composition_error(e)} (arguments: {' '.join(overrides) or 'none'})") from None
    finally:
        GlobalHydra.instance().clear()


def added_keys(config_name: str, overrides: list[str], config_module: str = "configs") -> list[str]:
    """The ``+key=value`` overrides that add a top-level setting ``configs/<config_name>.yaml`` does not have
    (Hydra accepts any such key, so a job that reads only the settings it knows would ignore a mistyped one;
    a CLI whose job takes no extra settings refuses them with this)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    plus = [a for a in overrides if a.startswith("+") and not a.startswith("++") and "=" in a]
    if not plus:
        return []
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=config_module, version_base=None):
            known = set(hydra_compose(config_name=config_name))
    finally:
        GlobalHydra.instance().clear()
    return [a for a in plus if a[1:].split("=", 1)[0].split(".", 1)[0] not in known]


def run_hydra(config_name: str, job: Callable[[dict], str | None], argv: list[str] | None = None) -> None:
    """The entry point of a Hydra CLI; exits with the status of :func:`run_guarded`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    if any(a.startswith("-") for a in argv):  # Hydra's own flags (--help, --cfg, --multirun, …)
        import hydra
        from omegaconf import OmegaConf

        def _task(cfg) -> None:
            code = run_guarded(lambda: _print(job(OmegaConf.to_container(cfg, resolve=True))), debug)
            if code:
                raise SystemExit(code)

        sys.argv = [sys.argv[0], *argv]
        hydra.main(version_base=None, config_path="pkg://configs", config_name=config_name)(_task)()
        return
    holder: dict = {}

    def _compose() -> None:
        try:
            holder["cfg"] = compose(config_name, argv)
        except Exception as e:  # noqa: BLE001 - Hydra/OmegaConf parse and composition errors
            raise ValueError(f"{_composition_error(e)} (arguments: {' '.join(argv) or 'none'})") from e

    code = run_guarded(_compose, debug)
    if code:
        raise SystemExit(code)
    logging.basicConfig(stream=sys.stdout, level=logging.INFO,
                        format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    code = run_guarded(lambda: _print(job(holder["cfg"])), debug)
    if code:
        raise SystemExit(code)


def _print(msg) -> None:
    if msg:
        print(msg)


def fail(msg: str) -> None:
    """End a CLI on bad input: ``error: <msg>`` on stderr, exit 2."""
    print(f"error: {msg}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def plain_config(cfg, help_command: str) -> dict:
    """A Hydra config as a resolved plain dict; a missing mandatory setting ends the CLI with ``error:``
    naming it and ``help_command`` (e.g. ``python -m eval --help``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import MissingMandatoryValue

    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as e:
        fail(f"missing required setting {e.full_key}= (see {help_command})")


def parse_part(spec, error: type[Exception] = ValueError, done: str = "parts are done") -> tuple[int | None, int]:
    """A ``shard=`` value of a command split over jobs: ``"i/n"`` → (i, n) with 0 ≤ i < n; ``"merge/n"`` →
    (None, n). Anything else raises ``error`` naming the value and the two accepted forms (``done`` ends the
    sentence about when to merge)."""
    import re

    m = re.fullmatch(r"\s*(\d+|merge)\s*/\s*(\d+)\s*", str(spec))
    if not m or int(m.group(2)) < 1 or (m.group(1) != "merge" and int(m.group(1)) >= int(m.group(2))):
        raise error(f"shard={spec!r}: must be i/n with 0 <= i < n (e.g. shard=0/4), or merge/n once all n {done}")
    return (None if m.group(1) == "merge" else int(m.group(1))), int(m.group(2))
