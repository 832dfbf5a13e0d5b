"""CLI: ``python -m tasks.threedpc out=<dir> [preset=small] [scenes=[...]] [seed=0] [progress=false] ...``
(Hydra). Bad input ends with ``error: ...`` and exit 2 before anything is rendered or written."""
from __future__ import annotations

import sys


def _job(kw: dict) -> str:
    from .build import build
    from .config import config_from_dict
    from .shortcuts import ShortcutAuditFailed

    shard = kw.pop("shard", None)  # shard=i/n | merge/n: builds across machines (tasks/threedpc/shard.py)
    progress = kw.pop("progress", True)
    if not isinstance(progress, bool):
        raise ValueError(f"progress={progress!r}: must be true or false")
    try:
        if shard is not None:
            from .shard import run

            return run(config_from_dict(kw), shard, progress)
        out = build(config_from_dict(kw), progress=progress)
    except ShortcutAuditFailed as e:  # not bad input: the build is written and kept, its audit failed (exit 1)
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    return f"wrote the 3D-PC to {out} (see {out}/summary.md)"


def main(argv: list[str] | None = None) -> None:
    from infra.cli import run_hydra

    from .config import register_configs

    register_configs()  # the config groups whose defaults are dataclasses (prop_style, label_rules, audit, preset)
    argv = list(sys.argv[1:] if argv is None else argv)
    argv = ["+" + a if a.startswith("shard=") else a for a in argv]  # not a config field: appended
    from tasks.labels import LabelRules
    from tasks.placement import PropStyle

    from .config import BuildConfig
    from .shortcuts import AuditConfig

    sections = {"": BuildConfig, "style": PropStyle, "rules": LabelRules, "audit": AuditConfig}
    run_hydra("threedpc", _job, argv, sections=sections, usage="usage: python -m tasks.threedpc out=<dir> [preset=small] [scenes=[...]] "
              "[seed=0] [progress=false] [shard=i/n | shard=merge/n] [key=value ...]  (build the 3D-PC)")


if __name__ == "__main__":
    main()
