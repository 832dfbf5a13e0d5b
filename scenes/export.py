"""Export a catalogue scene to a scene file (plus a JSON sidecar with its trajectory).

    python -m scenes.export name=bench_01 out=bench_01.ply
    python -m scenes.export name=car_02 out=car_02.splat sidecar=false
    python -m scenes.export --list

The format follows the suffix of ``out`` (any writable format of :mod:`scenes.formats`: INRIA ``.ply``,
``.compressed.ply``, ``.splat``, ``.sog``, ``.spz``, ``.ksplat``); the compressed formats quantise (see
each format's module). The sidecar ``<out>.json`` holds what the formats cannot: the reference trajectory,
the background colour, the object's bounds and the catalogue metadata. ``render.trajectory scene=<out>``
reads it; ``sidecar=false`` writes the scene file alone.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def export_scene(name: str, out: str | os.PathLike, seed: int = 0, sidecar: bool = True) -> Path:
    """Build catalogue scene ``name`` (with ``seed``) and write ``out`` (format from its suffix) and, unless
    ``sidecar`` is false, ``<out>.json``, each atomically. Checks every argument first (``ValueError`` /
    ``SceneError`` naming it)."""
    from .catalogue import build, parse_name
    from .formats import formats, write_scene_file
    from .formats.registry import SceneFormat

    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r}: must be a whole number >= 0")
    if not isinstance(sidecar, bool):
        raise ValueError(f"sidecar={sidecar!r}: must be true or false")
    parse_name(str(name))  # unknown names fail here, before any work
    out = Path(str(out))
    writable: list[SceneFormat] = [f for f in formats() if f.write is not None]
    lower = out.name.lower()
    if out.is_dir() or not any(lower.endswith(s) for f in writable for s in f.suffixes):
        others = sorted({s for f in writable for s in f.suffixes} - {".ply"})
        raise ValueError(f"out={str(out)!r}: must name a .ply file or another scene file ({', '.join(others)}) "
                         f"(e.g. out={name}.ply)")
    scene = build(name, seed)
    write_scene_file(scene.gaussians, out)
    if sidecar:
        from infra.files import atomic_write_text

        atomic_write_text(out.with_name(out.name + ".json"), json.dumps(scene.sidecar(), indent=2))
    return out


def _cli_job(kw: dict) -> str:
    unknown = sorted(set(kw) - {"name", "seed", "out", "sidecar"})
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; known: name, seed, out, sidecar")
    path = export_scene(kw["name"], kw["out"], kw["seed"], kw.get("sidecar", True))
    return f"wrote {path}" + (f" and {path}.json" if kw.get("sidecar", True) else "")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--list" in argv:
        from .catalogue import catalogue_names

        print("\n".join(catalogue_names()))
        return
    from infra.cli import run_hydra

    run_hydra("export", _cli_job, argv, usage="usage: python -m scenes.export name=<scene> out=<file.ply|.splat|.sog|...> "
              "[seed=0] [sidecar=true]   |   python -m scenes.export --list  (the catalogue names)")


if __name__ == "__main__":
    main()
