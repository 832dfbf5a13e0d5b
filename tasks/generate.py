"""Generate a 2D stimulus dataset.

    python -m tasks.generate dataset=<name> out=<dir> [seed=0] [workers=2] [overwrite=true] [progress=false]
                             [shard=i/n | shard=merge/n]   (one job of n, or the merge; see the README)
                             [param=value ...]
    python -m tasks.generate --list

Parameters use Hydra's override syntax (``levels=[0.1,0.5]``, ``antialias=true``) and are checked against
the generator's typed config; ``--list`` shows every dataset with its parameters, defaults and ranges.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from tasks.stimuli import GENERATORS, describe, write_dataset

    if not argv or "--list" in argv or "-h" in argv or "--help" in argv:
        print(__doc__ if not argv or "--list" not in argv else "")
        for name in sorted(GENERATORS):
            print(describe(GENERATORS[name]))
        return 0
    from infra.cli import debug_requested, run_guarded

    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    return run_guarded(lambda: _run(argv, write_dataset), debug)


def _run(argv: list[str], write_dataset) -> None:
    from omegaconf import OmegaConf

    try:
        kv = OmegaConf.to_container(OmegaConf.from_dotlist(argv), resolve=True)
    except Exception as e:  # noqa: BLE001 - report the user's syntax error plainly
        raise ValueError(f"cannot parse arguments {argv}: {e}") from None
    try:
        name = kv.pop("dataset")
        out = kv.pop("out")
    except KeyError as e:
        raise ValueError(f"missing {e.args[0]}=...; usage: python -m tasks.generate dataset=<name> out=<dir> "
                         "[param=value]") from None
    opts = {k: kv.pop(k) for k in ("seed", "workers", "overwrite", "progress", "shard") if k in kv}
    path = write_dataset(name, out, kv, **opts)
    print(f"wrote {name} to {path}")


if __name__ == "__main__":
    raise SystemExit(main())
