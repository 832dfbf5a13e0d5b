"""Export a catalogue scene to an INRIA 3DGS ``.ply`` (plus a JSON sidecar with its trajectory).

    python -m scenes.export name=bench_01 out=bench_01.ply
    python -m scenes.export --list

The sidecar ``<out>.json`` holds what the format cannot: the reference trajectory, the background
colour, the object's bounds and the catalogue metadata. ``render.trajectory scene=<out>`` reads it.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def export_scene(name: str, out: str | os.PathLike, seed: int = 0) -> Path:
    from .catalogue import build
    from .ply import write_ply

    scene = build(name, seed)
    out = Path(out)
    write_ply(scene.gaussians, out)
    from render.files import atomic_write_text

    atomic_write_text(out.with_name(out.name + ".json"), json.dumps(scene.sidecar(), indent=2))
    return out


def main() -> None:
    if "--list" in sys.argv[1:]:
        from .catalogue import catalogue_names

        print("\n".join(catalogue_names()))
        return
    import hydra
    from omegaconf import OmegaConf

    @hydra.main(version_base=None, config_path="pkg://configs", config_name="export")
    def _run(cfg) -> None:
        kw = OmegaConf.to_container(cfg, resolve=True)
        path = export_scene(kw["name"], kw["out"], kw["seed"])
        print(f"wrote {path} and {path}.json")

    _run()


if __name__ == "__main__":
    main()
