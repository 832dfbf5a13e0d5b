"""Hydra entry points of ``python -m experiment serve|export`` (thin: parse, call one library function)."""
from __future__ import annotations

import os
import secrets
import sys

USAGE = """usage: python -m experiment <command> [key=value ...]

commands:
  serve    run a dataset as a web experiment   task=<dataset dir> design=<name> [db=sqlite:///x.db|postgresql://...]
           [host=127.0.0.1] [port=8000] [design.n_test=40 ...]
  export   database -> trial tables            db=<url> out=<results dir> [study=<design name>]

designs: configs/experiment/design/ (3dpc_vpt, 3dpc_depth, generated); then: python -m eval stats results=<out>
secrets: VANTAGE_ADMIN_TOKEN (admin pages and export; printed when generated), VANTAGE_STUDY_SECRET (pseudonyms)
"""


def _fail(msg: str) -> None:
    from infra.cli import fail

    fail(msg)


def _container(cfg) -> dict:
    from infra.cli import plain_config

    return plain_config(cfg, "python -m experiment --help")


def serve_job(cfg) -> None:
    from .design import DesignError, design_from_config
    from .study import StudyError, open_study

    c = _container(cfg)
    try:
        design = design_from_config(c["design"])
        study = open_study(c["task"], design, c["db"], os.environ.get("VANTAGE_STUDY_SECRET") or None)
    except (DesignError, StudyError, ValueError) as e:  # ValueError: a database URL of an unsupported kind
        _fail(str(e))
    import uvicorn

    from .app import create_app

    token = os.environ.get("VANTAGE_ADMIN_TOKEN") or secrets.token_urlsafe(24)
    if not os.environ.get("VANTAGE_ADMIN_TOKEN"):
        print(f"admin token (set VANTAGE_ADMIN_TOKEN to choose one): {token}", file=sys.stderr)
    app = create_app(study, token, c.get("limits") or {})
    p = design.url_params
    print(f"study {design.name}: {len(study.stim.test)} test images of {study.stim.task}; participants open "
          f"http://{c['host']}:{c['port']}/?{p['participant']}=...&{p['study']}=...&{p['session']}=...", flush=True)
    uvicorn.run(app, host=c["host"], port=int(c["port"]), log_level=c.get("log_level", "warning"),
                access_log=False)


def export_job(cfg) -> None:
    from .export import export

    c = _container(cfg)
    try:
        n = export(c["db"], c["out"], c.get("study"), bool(c.get("include_incomplete")))
    except Exception as e:  # noqa: BLE001 - a bad URL or unreadable database is user input
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(e, (SQLAlchemyError, ValueError, OSError)):
            msg = str(e).splitlines()[0]
            _fail(msg if msg.startswith("db=") else f"db={c['db']}: {msg}")
        raise
    print(f"wrote {n['participants']} participant trial table(s) ({n['trials']} trials; {n['skipped']} already "
          f"present) to {c['out']}/trials; next: python -m eval stats results={c['out']} split=<design split>")


def main(argv: list[str] | None = None) -> None:
    import hydra

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return
    command, rest = argv[0], argv[1:]
    jobs = {"serve": serve_job, "export": export_job}
    if command not in jobs:
        from infra.registry import suggest

        _fail(f"unknown command {command!r}; {suggest(command, list(jobs))}commands: serve, export")
    if any(a in ("-h", "--help", "help") for a in rest):
        from infra.cli import hydra_help

        lines = [ln.strip() for ln in USAGE.split("commands:")[1].split("\n\n")[0].strip().split("\n  ")]
        print(hydra_help(command, "usage: python -m experiment " + next(ln for ln in lines if ln.startswith(command)),
                         config_module="configs.experiment"))
        return
    from infra.cli import added_keys, check_overrides

    if not any(a.startswith("-") for a in rest):  # a mistyped key is an error: line, not Hydra's exit 1
        try:
            check_overrides(command, rest, "configs.experiment")
        except ValueError as e:
            _fail(str(e))

    try:
        extra = added_keys(command, [a for a in rest if not a.startswith("-")], "configs.experiment")
    except Exception:  # noqa: BLE001 - a composition error is reported by Hydra's own run below
        extra = []
    if extra:  # the jobs read only the settings they know: a '+key' they do not would be ignored silently
        _fail(f"unknown setting(s) {' '.join(extra)}: python -m experiment {command} has no such setting "
              f"(see python -m experiment --help)")
    sys.argv = [f"python -m experiment {command}"] + rest
    try:
        hydra.main(version_base=None, config_path="pkg://configs/experiment", config_name=command)(jobs[command])()
    except SystemExit:
        raise
