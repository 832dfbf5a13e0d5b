"""``python -m scenes.frame``: show (and optionally write) the canonical frame Vantage estimates for a scene file.

    python -m scenes.frame scene=statue.sog                       # print the estimate (JSON)
    python -m scenes.frame scene=statue.sog frame.object_height_m=1.8 write=true   # -> statue.sog.json
    python -m scenes.frame scene=statue.sog write=true out=my/statue.sog.json      # folder not writable

The sidecar it writes holds the estimate as explicit ``frame`` hints (``up``, ``ground``, ``center``,
``object_height_m``, ``category``, ``ground_mode``) and the full record (``canonical``: transform, sources,
evidence) for reading. Loading the scene with that sidecar beside it gives the same frame; edit any hint (e.g.
``up``) to change it. Every later load reads the sidecar's ``frame`` first (``scenes/capture.py``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def frame_sidecar(scene_file: str, frame: dict | None = None) -> dict:
    """The sidecar for ``scene_file``: its estimated canonical frame as explicit hints, plus the full record."""
    from .load import load_scene

    sc = load_scene(scene_file, frame=frame or None)
    can = sc.metadata.get("canonical")
    if can is None:
        raise ValueError(f"scene={scene_file!r}: not a scene file (a catalogue scene is canonical already)")
    if can.get("estimated") is False:
        raise ValueError(f"scene={scene_file!r}: no canonical frame: {can['reason']}")
    hints = {"up": can["up_file"], "ground": can["ground_file"], "center": can["center_file"],
             "object_height_m": can["object_height_m"], "ground_mode": "added" if can["add_ground"] else "captured"}
    if sc.metadata.get("frame_hints", {}).get("category"):
        hints["category"] = sc.metadata["frame_hints"]["category"]
    if (frame or {}).get("object_radius") is not None:
        hints["object_radius"] = frame["object_radius"]
    return {"name": sc.name, "frame": hints, "canonical": can}


def _cli_job(kw: dict) -> str:
    from infra.files import atomic_write_text

    from .gaussians import SceneError

    unknown = sorted(set(kw) - {"scene", "write", "out", "frame"})
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; known: scene, write, out, frame")
    if not isinstance(kw["write"], bool):
        raise ValueError(f"write={kw['write']!r}: must be true or false")
    frame = {k: v for k, v in (kw.get("frame") or {}).items() if v is not None and not (k == "ground_mode" and v == "auto")}
    try:
        side = frame_sidecar(str(kw["scene"]), frame)
    except SceneError as e:
        raise ValueError(str(e)) from None
    text = json.dumps(side, indent=2)
    if not kw["write"]:
        return text
    out = Path(kw["out"] or str(kw["scene"]) + ".json")
    if out.exists():
        try:
            old = json.loads(out.read_text())
        except ValueError:
            raise ValueError(f"out={str(out)!r} exists and is not JSON; remove it or choose another out=") from None
        if "trajectory" in old:  # scenes.export's sidecar: keep its other keys, add the frame
            side = {**old, **side}
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(side, indent=2))
    return f"{text}\nwrote {out}"


def main(argv: list[str] | None = None) -> None:
    from infra.cli import run_hydra

    run_hydra("frame", _cli_job, list(sys.argv[1:] if argv is None else argv),
              usage="usage: python -m scenes.frame scene=<file> [write=true] [out=<sidecar.json>] [frame.<hint>=...]")


if __name__ == "__main__":
    main()
