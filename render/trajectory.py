"""Render a scene along its reference viewer trajectory (or along recorded cameras) to PNG frames.

CLI (Hydra; configuration in ``configs/trajectory.yaml``)::

    python -m render.trajectory scene=bench_01 frames=50 size=256 out=out/bench_01

Output folder::

    frame_0000.png …        RGB, 8-bit, clamped to [0, 1] before quantisation
    cameras.csv / .parquet  frame, file_name, width, height, fx, fy, cx, cy, w2c_00 … w2c_33 (row-major,
                            OpenCV world-to-camera) — enough for any tool to re-render a frame
    run.json                the resolved configuration, scene metadata and package version
    labels.csv / .parquet   with props: one row per frame, labels and the numbers behind them
                            (schema in docs/ARCHITECTURE.md)

Every file is written under a temporary name and renamed, so an interrupted run never leaves a
half-written frame; re-running the same configuration renders only the missing frames.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


from .camera import Camera
from .files import atomic_write_bytes, package_version, save_png, write_table


class OutputConflict(RuntimeError):
    pass


def read_cameras(path: str | os.PathLike) -> list[Camera]:
    """Cameras from a ``cameras.csv``/``.parquet`` written by this module (or any tool using its columns)."""
    import pandas as pd

    path = str(path)
    df = pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)
    need = ["width", "height", "fx", "fy", "cx", "cy"] + [f"w2c_{i}{j}" for i in range(4) for j in range(4)]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: camera columns missing: {missing}")
    cams = []
    for i, row in df.iterrows():
        try:
            cams.append(Camera.from_row(row))
        except ValueError as e:
            raise ValueError(f"{path}: row {i}: {e}") from e
    return cams


def render_trajectory(scene: str = "bench_01", out: str | os.PathLike = "out/trajectory", frames: int = 50,
                      size: int = 256, seed: int = 0, fov_deg: float | None = None, backend: str = "auto",
                      background: tuple[float, float, float] | None = None, cameras: str | None = None,
                      overwrite: bool = False, progress: bool = True, props: dict | None = None) -> Path:
    """Render ``scene`` along its reference trajectory; returns the output folder. See module docstring.

    ``props`` (a ``configs/props/*.yaml`` mapping) inserts the green camera and red ball and writes a
    labels table (``labels.csv`` / ``labels.parquet``): one row per frame with the viewer's camera, the
    props' poses and sizes, ray-cast and rendered visible fractions, depth gap, labels, reason codes,
    the label-rule version and the seed.
    """
    import dataclasses

    from tqdm import tqdm

    from scenes.scene import load_scene
    from scenes.trajectory import cameras_table

    from . import splat

    if frames < 1 or size < 1:
        raise ValueError(f"frames and size must be positive, got frames={frames}, size={size}")
    props = dict(props or {"mode": "none"})
    sc = load_scene(str(scene), seed=seed)
    if cameras:
        cams = read_cameras(cameras)
    else:
        traj = sc.trajectory if fov_deg is None else dataclasses.replace(sc.trajectory, fov_deg=float(fov_deg))
        cams = traj.cameras(frames, size, size)
    bg = tuple(map(float, background)) if background is not None else tuple(sc.background)
    config: dict[str, Any] = {"scene": str(scene), "seed": seed, "frames": len(cams), "size": size,
                              "fov_deg": fov_deg, "background": list(bg), "cameras": cameras, "props": props}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows_dir = out / ".rows"
    run_file = out / "run.json"
    if run_file.exists():
        previous = json.loads(run_file.read_text()).get("config")
        if previous != config:
            if not overwrite:
                raise OutputConflict(
                    f"{out}: holds frames made with a different configuration ({previous}); "
                    "choose another out= or pass overwrite=true"
                )
            for p in [*out.glob("frame_*.png"), *rows_dir.glob("*.json")]:
                p.unlink()

    placement, vpt, rules = None, {}, None
    if props.get("mode", "none") != "none":
        from tasks.labels import vpt_label
        from tasks.placement import placement_from_config

        placement, rules, _ = placement_from_config(sc, props)
        sc = dataclasses.replace(sc, background=bg)
        vpt = vpt_label(sc, placement.observer, placement.target, rules)

    run = {"config": config, "backend": backend, "scene_metadata": sc.metadata,
           "trajectory": sc.trajectory.to_dict(), "vantage_version": package_version()}
    if rules is not None:
        from tasks.labels import LABEL_RULE_VERSION

        run["label_rules"] = {"version": LABEL_RULE_VERSION, **dataclasses.asdict(rules)}
    atomic_write_bytes(run_file, json.dumps(run, indent=2, default=str).encode())

    rows_dir.mkdir(exist_ok=True)
    names = [f"frame_{i:04d}.png" for i in range(len(cams))]
    todo = [i for i, n in enumerate(names) if not ((out / n).exists() and (rows_dir / f"{i:04d}.json").exists())]
    for i in tqdm(todo, desc=f"render {sc.name}", unit="frame", disable=not progress):
        row: dict[str, Any] = {"frame": i, "file_name": names[i], "scene": sc.name, "seed": int(props.get("seed", seed)),
                               **cams[i].as_row()}
        if placement is None:
            img = splat(sc.gaussians, cams[i], background=bg, backend=backend).image_uint8()
        else:
            from tasks.labels import label_frame

            img, labels = label_frame(sc, placement, cams[i], vpt, rules, backend=backend)
            row.update(placement.to_row())
            row.update(labels)
        save_png(out / names[i], img)
        atomic_write_bytes(rows_dir / f"{i:04d}.json", json.dumps(row).encode())
    write_table(cameras_table(cams, names), out / "cameras")
    if placement is not None:
        from tasks.labels import labels_table

        rows = [json.loads((rows_dir / f"{i:04d}.json").read_text()) for i in range(len(cams))]
        write_table(labels_table(rows), out / "labels")
    return out


def main() -> None:
    import hydra
    from omegaconf import OmegaConf

    @hydra.main(version_base=None, config_path="pkg://configs", config_name="trajectory")
    def _run(cfg) -> None:
        kw = OmegaConf.to_container(cfg, resolve=True)
        out = render_trajectory(**kw)
        extra = " and labels.csv" if kw.get("props", {}).get("mode", "none") != "none" else ""
        print(f"wrote {kw['frames'] if not kw.get('cameras') else 'recorded'} frames, cameras.csv{extra} to {out}")

    _run()


if __name__ == "__main__":
    main()
