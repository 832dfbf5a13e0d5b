"""Render a scene along its reference viewer trajectory (or along recorded cameras) to PNG frames, with
optional props and per-frame labels: an application (scene + props + labels + files), so it lives in
``tasks``; the user's command stays ``python -m render.trajectory`` (a thin CLI over this module)::

    python -m render.trajectory scene=bench_01 frames=50 size=256 out=out/bench_01

Output folder::

    frame_0000.png …        RGB, 8-bit, clamped to [0, 1] before quantisation
    cameras.csv / .parquet  frame, file_name, width, height, fx, fy, cx, cy, w2c_00 … w2c_33 (row-major,
                            OpenCV world-to-camera) — enough for any tool to re-render a frame
    run.json                the resolved configuration, scene metadata and package version
    labels.csv / .parquet   with props: one row per frame, labels and the numbers behind them
                            (schema in docs/threedpc.md, "Labels table")

Every file is written under a temporary name and renamed, so an interrupted run never leaves a
half-written frame; re-running the same configuration renders only the missing frames.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from infra.files import package_version, write_table
from infra.images import save_frame_png
from infra.outputs import output_folder
from scenes.camera import Camera

__all__ = ["read_cameras", "render_trajectory", "validate_options"]

BACKGROUND_HELP = "an RGB triple in [0, 1], e.g. background=[0.5,0.5,0.5]"


def register_configs() -> None:
    """Register the Hydra config groups ``configs/props/*.yaml`` compose (``prop_style``, ``label_rules``,
    whose defaults are the dataclasses; :func:`tasks.placement.register_configs`). Call before composing
    ``trajectory``."""
    from .placement import register_configs as register_prop_configs

    register_prop_configs()


CAMERA_SIZE = (8, 8192)  # pixels per side, as render.trajectory's size=


def read_cameras(path: str | os.PathLike) -> list[Camera]:
    """Cameras from a ``cameras.csv``/``.parquet`` written by this module (or any tool using its columns).

    Every row is checked before anything is rendered (``ValueError`` naming the file, row, column and value):
    ``width``/``height`` whole numbers of pixels in [8, 8192] (``32.7`` is not truncated to 32), finite
    intrinsics, and a w2c whose bottom row is ``[0, 0, 0, 1]`` (a rigid world-to-camera transform; any
    other bottom row would be ignored by the renderer, which reads only the top 3x4)."""
    import numpy as np
    import pandas as pd

    path = str(path)
    try:
        df = pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)
    except (ValueError, OSError, pd.errors.ParserError) as e:  # EmptyDataError is a ValueError
        raise ValueError(f"cameras={path}: not a camera table ({' '.join(str(e).split())})") from None
    need = ["width", "height", "fx", "fy", "cx", "cy"] + [f"w2c_{i}{j}" for i in range(4) for j in range(4)]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: camera columns missing: {missing}")
    cams = []
    for i, row in df.iterrows():
        for col in ("width", "height"):
            v = row[col]
            ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and \
                float(v).is_integer() and CAMERA_SIZE[0] <= v <= CAMERA_SIZE[1]
            if not ok:
                if _is_number(v) and not isinstance(v, bool):  # as the user wrote it: 32.7, 100000 (not np.float64)
                    v = int(v) if float(v).is_integer() else float(v)
                raise ValueError(f"{path}: row {i}: {col}={v!r}: must be a whole number of pixels in "
                                 f"[{CAMERA_SIZE[0]}, {CAMERA_SIZE[1]}]")
        try:
            vals = {c: float(row[c]) for c in need}
        except (TypeError, ValueError):
            bad = next(c for c in need if not _is_number(row[c]))
            raise ValueError(f"{path}: row {i}: {bad}={row[bad]!r} is not a number") from None
        bad = [c for c, v in vals.items() if not np.isfinite(v)]
        if bad:
            raise ValueError(f"{path}: row {i}: {bad[0]}={vals[bad[0]]!r}: camera values must be finite numbers")
        bottom = [vals[f"w2c_3{j}"] for j in range(4)]
        if not np.allclose(bottom, [0.0, 0.0, 0.0, 1.0], atol=1e-9):
            raise ValueError(f"{path}: row {i}: w2c bottom row is {bottom}, must be [0, 0, 0, 1] (w2c_30..w2c_33 "
                             "of a world-to-camera rotation + translation)")
        try:
            cams.append(Camera.from_row(row))
        except ValueError as e:
            raise ValueError(f"{path}: row {i}: {e}") from e
    return cams


def _is_number(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def render_trajectory(scene: str = "bench_01", out: str | os.PathLike = "out/trajectory", frames: int = 50,
                      size: int = 256, seed: int = 0, fov_deg: float | None = None, backend: str = "auto",
                      background: tuple[float, float, float] | None = None, cameras: str | None = None,
                      overwrite: bool = False, progress: bool = True, props: dict | None = None,
                      frame: dict | None = None) -> Path:
    """Render ``scene`` along its reference trajectory; returns the output folder. See module docstring.

    ``props`` (a ``configs/props/*.yaml`` mapping) inserts the green camera and red ball and writes a
    labels table (``labels.csv`` / ``labels.parquet``): one row per frame with the viewer's camera, the
    props' poses and sizes, ray-cast and rendered visible fractions, depth gap, labels, reason codes,
    the label-rule version and the seed.

    ``frame`` (scene files only): what to use instead of the canonical frame's estimates (keys of
    :class:`scenes.canonical.FrameHints`: ``up``, ``ground``, ``center``, ``object_height_m``, ``object_radius``,
    ``category``, ``ground_mode``, ``transform``); unset keys (None) are estimated. The estimate is recorded in
    ``run.json`` (``scene_metadata.canonical``).
    """
    import dataclasses

    from scenes.load import load_scene

    validate_options(frames=frames, size=size, seed=seed, fov_deg=fov_deg, backend=backend,
                     background=background, cameras=cameras, overwrite=overwrite, progress=progress, props=props,
                     frame=frame)
    props = dict(props or {"mode": "none"})
    frame = frame_overrides(frame)
    cams = read_cameras(cameras) if cameras else None  # checked before the (slower) scene load
    if cams is not None and not cams:
        raise ValueError(f"cameras={cameras}: the table has no rows")
    sc = load_scene(str(scene), seed=seed, frame=frame or None)
    if cams is None:
        traj = sc.trajectory if fov_deg is None else dataclasses.replace(sc.trajectory, fov_deg=float(fov_deg))
        cams = traj.cameras(frames, size, size)
    bg = tuple(map(float, background)) if background is not None else tuple(sc.background)
    config: dict[str, Any] = {"scene": str(scene), "seed": seed, "frames": len(cams), "size": size,
                              "fov_deg": fov_deg, "background": list(bg), "cameras": cameras, "props": props}
    if frame:
        config["frame"] = frame
    out = Path(out)
    rows_dir = out / ".rows"

    placement, vpt, rules = None, {}, None
    if props.get("mode", "none") != "none":
        from .labels import vpt_label
        from .placement import placement_from_config, staged_scene

        placement, rules, _ = placement_from_config(sc, props)
        # the placement's stands are part of the scene: splatted in every frame and occluders of every label
        sc = staged_scene(dataclasses.replace(sc, background=bg), placement)
        vpt = vpt_label(sc, placement.observer, placement.target, rules, support=placement.target_support)

    run = {"config": config, "backend": backend, "scene_metadata": sc.metadata,
           "trajectory": sc.trajectory.to_dict(), "vantage_version": package_version()}
    if rules is not None:
        from .labels import LABEL_RULE_VERSION

        run["label_rules"] = {"version": LABEL_RULE_VERSION, **dataclasses.asdict(rules)}
    with output_folder(out, "render.trajectory", config, overwrite=overwrite, stamp="run.json", config_key="config",
                       stamp_extra={k: v for k, v in run.items() if k != "config"},
                       owned=lambda o: (_written(o, rows_dir), [rows_dir]),
                       temps=lambda o: [*o.glob(".*.tmp*"), *rows_dir.glob(".*.tmp*")]):
        _render_frames(out, rows_dir, sc, cams, bg, backend, props, seed, placement, vpt, rules, progress)
    return out


def _written(out: Path, rows_dir: Path) -> list[Path]:
    """What a previous run wrote: frames recorded in its rows files or cameras table, and the tables."""
    files = [out / f"{stem}{ext}" for stem in ("cameras", "labels") for ext in (".csv", ".parquet")]
    files += [out / f"frame_{p.stem}.png" for p in rows_dir.glob("*.json")]
    try:
        import pandas as pd

        files += [out / str(n) for n in pd.read_parquet(out / "cameras.parquet")["file_name"]]
    except (OSError, ValueError, KeyError):
        pass
    return files + list(rows_dir.glob("*.json"))


def _render_frames(out, rows_dir, sc, cams, bg, backend, props, seed, placement, vpt, rules, progress) -> None:
    import json as _json

    from tqdm import tqdm

    from render.splat import splat
    from infra.files import atomic_write_bytes
    from scenes.trajectory import cameras_table

    rows_dir.mkdir(exist_ok=True)
    names = [f"frame_{i:04d}.png" for i in range(len(cams))]
    todo = [i for i, n in enumerate(names) if not ((out / n).exists() and (rows_dir / f"{i:04d}.json").exists())]
    for i in tqdm(todo, desc=f"render {sc.name}", unit="frame", disable=not progress):
        row: dict[str, Any] = {"frame": i, "file_name": names[i], "scene": sc.name, "seed": int(props.get("seed", seed)),
                               **cams[i].as_row()}
        if placement is None:
            img = splat(sc.gaussians, cams[i], background=bg, backend=backend).image_uint8()
        else:
            from .labels import label_frame

            img, labels = label_frame(sc, placement, cams[i], vpt, rules, backend=backend)
            row.update(placement.to_row())
            row.update(labels)
        save_frame_png(out / names[i], img)
        atomic_write_bytes(rows_dir / f"{i:04d}.json", _json.dumps(row).encode())
    write_table(cameras_table(cams, names), out / "cameras")
    if placement is not None:
        from .labels import labels_table

        rows = [_json.loads((rows_dir / f"{i:04d}.json").read_text()) for i in range(len(cams))]
        write_table(labels_table(rows), out / "labels")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def frame_overrides(frame: dict | None) -> dict:
    """The set keys of a ``frame`` configuration (None = estimate; ``ground_mode: auto`` is the default)."""
    return {k: v for k, v in dict(frame or {}).items() if v is not None and not (k == "ground_mode" and v == "auto")}


def validate_options(*, frames, size, seed, fov_deg, backend, background, cameras, overwrite, progress,
                     props, frame=None) -> None:
    """Check every option before anything is loaded, rendered or written; ``ValueError`` names the
    option, its value and what is allowed. No defaults here: they are :func:`render_trajectory`'s (and
    ``configs/trajectory.yaml`` mirrors them, checked by tests/test_configs.py)."""
    from render.splat import BACKENDS

    if not _is_int(frames) or not 1 <= frames <= 100_000:
        raise ValueError(f"frames={frames!r}: must be a whole number in [1, 100000]")
    if not _is_int(size) or not 8 <= size <= 8192:
        raise ValueError(f"size={size!r}: must be a whole number of pixels in [8, 8192]")
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed={seed!r}: must be a whole number >= 0")
    if fov_deg is not None and (isinstance(fov_deg, bool) or not isinstance(fov_deg, (int, float))
                                or not 1 <= fov_deg <= 170):
        raise ValueError(f"fov_deg={fov_deg!r}: must be null (the scene's) or degrees in [1, 170]")
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: one of {', '.join(BACKENDS)}")
    if backend == "gsplat":
        from render.splat import resolve_backend

        resolve_backend(backend)  # no CUDA: fails here, before anything is written
    if background is not None:
        ok = isinstance(background, (list, tuple)) and len(background) == 3 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in background)
        if not ok:
            raise ValueError(f"background={background!r}: must be null or {BACKGROUND_HELP}")
    if cameras is not None and not os.path.isfile(str(cameras)):
        raise ValueError(f"cameras={cameras!r}: no such file (a cameras.csv/.parquet written by render.trajectory)")
    for name, v in (("overwrite", overwrite), ("progress", progress)):
        if not isinstance(v, bool):
            raise ValueError(f"{name}={v!r}: must be true or false")
    if props is not None and not isinstance(props, dict):
        raise ValueError(f"props={props!r}: must be a props configuration (props=none|sample|explicit)")
    mode = (props or {}).get("mode", "none")
    if mode not in ("none", "sample", "explicit"):
        raise ValueError(f"props.mode={mode!r}: one of none, sample, explicit")
    if mode == "sample":
        from .placement import sample_choice

        sample_choice(props)
    if frame is not None and not isinstance(frame, dict):
        raise ValueError(f"frame={frame!r}: must be a mapping of frame settings (frame.up=-y frame.object_height_m=1.2 …)")
    if frame_overrides(frame):
        from scenes.canonical import FrameHints

        FrameHints.from_dict(frame_overrides(frame), where="frame")
