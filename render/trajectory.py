"""``python -m render.trajectory``: the user's command for rendering a scene along its trajectory.

A thin CLI (Hydra; configuration in ``configs/trajectory.yaml``) over
:func:`tasks.trajectory.render_trajectory`, which holds the work (scene + props + labels + files). This is
one of the declared CLI entry modules that may import a higher layer (``tests/test_layers.py``,
``CLI_ENTRY_MODULES``): the command keeps its name while the application lives in ``tasks``.

    python -m render.trajectory scene=bench_01 frames=50 size=256 out=out/bench_01
"""
from __future__ import annotations


def _cli_job(kw: dict) -> str:
    import inspect

    from tasks.trajectory import render_trajectory

    known = list(inspect.signature(render_trajectory).parameters)
    unknown = sorted(set(kw) - set(known))
    if unknown:  # e.g. +colour=red: Hydra adds any key given with '+'
        raise ValueError(f"unknown setting(s) {unknown}; known: {', '.join(known)}")
    out = render_trajectory(**kw)
    extra = " and labels.csv" if (kw.get("props") or {}).get("mode", "none") != "none" else ""
    return f"wrote {kw['frames'] if not kw.get('cameras') else 'recorded'} frames, cameras.csv{extra} to {out}"


def main(argv: list[str] | None = None) -> None:
    from tasks.trajectory import register_configs

    from infra.cli import run_hydra

    register_configs()  # configs/props/*.yaml compose prop_style and label_rules, whose defaults are dataclasses
    run_hydra("trajectory", _cli_job, argv, usage="usage: python -m render.trajectory scene=<name|file> "
              "[frames=50] [size=256] [out=<dir>] [key=value ...]  (a scene's frames along its trajectory)")


if __name__ == "__main__":
    main()
