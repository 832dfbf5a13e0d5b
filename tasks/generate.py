"""Generate a 2D stimulus dataset.

    python -m tasks.generate dataset=<name> out=<dir> [seed=0] [workers=2] [overwrite=true] [progress=false]
                             [shard=i/n | shard=merge/n]   (one job of n, or the merge; see the README)
                             [preset=<name>] [param=value ...]
    python -m tasks.generate --list                       every dataset with its parameters, defaults, ranges
    python -m tasks.generate dataset=<name> --help        one dataset's parameters

Parameters use Hydra's override grammar (``levels=[0.1,0.5]``, ``antialias=true``; ``infra.cli``) and are
checked against the generator's typed config (unknown ones with "did you mean"). The datasets are the
registry ``tasks.stimuli.GENERATORS``: a new generator is one new module in ``tasks/stimuli/``.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from infra.cli import REQUIRED
from infra.schema import at_least, field


@dataclass(frozen=True)
class GenerateOptions:
    """The options every dataset has (its own parameters follow ``dataset=``)."""

    dataset: str = field(REQUIRED, "a registered generator (python -m tasks.generate --list)")
    out: str = field(REQUIRED, "the dataset folder to write")
    seed: int = field(0, "dataset seed (every random draw flows from it)", check=at_least(0))
    workers: int = field(1, "processes rendering images", range=(1, 1024))
    overwrite: bool = field(False, "replace a finished dataset made with other settings")
    progress: bool = field(True, "progress bar")
    shard: str | None = field(None, "i/n: job i of n (0 <= i < n); merge/n: merge the n finished parts")
    preset: str | None = field(None, "a named parameter set of the dataset (e.g. paper, lite)")


USAGE = __doc__.split("\n\n")[1]


def main(argv: list[str] | None = None) -> int:
    from infra.cli import debug_requested, run_guarded, wants_help

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    if "--list" in argv:
        from tasks.stimuli import GENERATORS, describe

        for name in sorted(GENERATORS):
            print(describe(GENERATORS[name]))
        return 0
    if not argv or wants_help(argv):
        return run_guarded(lambda: print(_help([a for a in argv if a not in ("-h", "--help", "help")])), debug)
    return run_guarded(lambda: _run(argv), debug)


def _help(argv: list[str]) -> str:
    """The usage and common options; with ``dataset=<name>`` also that dataset's parameters, else the list of
    datasets (one line each)."""
    from infra.cli import format_help, option_rows, parse_overrides
    from tasks.stimuli import describe
    from tasks.stimuli.registry import GENERATORS, get_generator

    name = parse_overrides(argv).get("dataset") if argv else None
    if name:
        more = "parameters of " + describe(get_generator(name))
    else:
        more = "datasets (dataset=<name> --help for one's parameters):\n" + "\n".join(
            f"  {n:<34} {GENERATORS[n].description.split(' [')[0][:80]}" for n in sorted(GENERATORS))
    return format_help("usage: " + USAGE.strip(), option_rows(GenerateOptions), more)


def _run(argv: list[str]) -> None:
    import dataclasses

    from infra.cli import build_options, parse_overrides
    from tasks.stimuli import write_dataset

    kv = parse_overrides(argv)
    common = {f.name for f in dataclasses.fields(GenerateOptions)}
    opts = build_options(GenerateOptions, {k: v for k, v in kv.items() if k in common},
                         "python -m tasks.generate --help")
    params = {k: v for k, v in kv.items() if k not in common}
    if opts.preset is not None:
        params["preset"] = opts.preset
    path = write_dataset(opts.dataset, opts.out, params, seed=opts.seed, workers=opts.workers,
                         overwrite=opts.overwrite, progress=opts.progress, shard=opts.shard)
    print(f"wrote {opts.dataset} to {path}")


if __name__ == "__main__":
    raise SystemExit(main())
