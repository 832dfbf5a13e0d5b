"""``python -m eval report results=<dir> [task=<dataset dir>] [zoo=<list>]``: the HTML results report
(:mod:`eval.html_report`; ``eval stats`` writes it too)."""
from __future__ import annotations

from .cli import _container, _fail, command


@command("report", "HTML report: tables and figures     results=<dir> [task=<dataset dir>] [zoo=<name>]")
def report_job(cfg) -> None:
    from .html_report import build_report

    c = _container(cfg)
    try:
        page = build_report(c)
    except (ValueError, FileNotFoundError) as e:
        _fail(str(e))
    print(f"wrote the report {page}")
