"""Generate a 2D stimulus dataset.

    python -m tasks.generate dataset=<name> out=<dir> [seed=0] [workers=2] [overwrite=true] [param=value ...]
    python -m tasks.generate --list

Parameters use Hydra's override syntax (``levels=[0.1,0.5]``, ``antialias=true``) and are checked against
the generator's typed config; ``--list`` shows every dataset with its parameters, defaults and ranges.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from tasks.stimuli import GENERATORS, ConfigError, describe, write_dataset

    if not argv or "--list" in argv or "-h" in argv or "--help" in argv:
        print(__doc__ if not argv or "--list" not in argv else "")
        for name in sorted(GENERATORS):
            print(describe(GENERATORS[name]))
        return 0
    from omegaconf import OmegaConf

    try:
        kv = OmegaConf.to_container(OmegaConf.from_dotlist(argv), resolve=True)
    except Exception as e:  # noqa: BLE001 - report the user's syntax error plainly
        print(f"cannot parse arguments {argv}: {e}", file=sys.stderr)
        return 2
    try:
        name = kv.pop("dataset")
        out = kv.pop("out")
    except KeyError as e:
        print(f"missing {e.args[0]}=...; usage: python -m tasks.generate dataset=<name> out=<dir> [param=value]",
              file=sys.stderr)
        return 2
    opts = {k: kv.pop(k) for k in ("seed", "workers", "overwrite") if k in kv}
    try:
        path = write_dataset(name, out, kv, **opts)
    except ConfigError as e:
        print(f"invalid configuration: {e}", file=sys.stderr)
        return 2
    print(f"wrote {name} to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
