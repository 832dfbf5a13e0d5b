"""A trained capture from a file, as a :class:`scenes.scene.Scene` in the canonical frame.

``load_capture(path)`` is what :func:`scenes.load.load_scene` does with a scene file (any format of
``scenes.formats``): read the Gaussians in the file's frame, gather what is known about the capture (its
cameras, the user's hints), estimate the canonical frame (:mod:`scenes.canonical`), bake the similarity into
the Gaussians, drop floaters, and add a ground disc where no ground was captured, so that props never float.

Where the hints come from, later ones winning key by key:

1. the sidecar ``<file>.json`` (``scenes.export`` writes one; a user can write one): its ``frame`` mapping
   (:class:`scenes.canonical.FrameHints` keys: ``up``, ``ground``, ``center``, ``object_height_m``,
   ``object_radius``, ``category``, ``ground_mode``, ``transform``). A sidecar with a ``trajectory`` and no
   ``frame`` is Vantage's own export: the file is already canonical (identity transform).
2. the caller's overrides (``render.trajectory frame.up=-y …``; per scene in a 3D-PC build,
   ``scene_frames={file: {…}}``).

Cameras: an INRIA ``cameras.json`` next to the file or up to two folders above it (the INRIA trainer's
``<model>/cameras.json`` beside ``<model>/point_cloud/iteration_N/point_cloud.ply``).

The scene's ``metadata`` records the file, its format and sha256, the hints and the whole estimate
(``canonical``: the 4×4 file → canonical transform, the source of every quantity, plane and cluster evidence),
so every output made from it says how the scene was placed. ``python -m scenes.frame <file>`` prints the
estimate and can write it as a sidecar to edit.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np

from infra.files import sha256_path

from .canonical import (CANONICAL_VERSION, CATEGORY_HEIGHTS_M, CanonicalFrame, FrameHints, FrameUnknown,
                        canonical_orbit, estimate_frame)
from .gaussians import GaussianScene, SceneError
from .scene import Scene, default_orbit
from .trajectory import OrbitTrajectory

GROUND_COLOR_KIND = "paving"   # the added ground's texture (scenes.catalogue.ground_color_fn)


def sidecar_path(path: str | os.PathLike) -> Path:
    return Path(str(path) + ".json")


def read_sidecar(path: str | os.PathLike) -> dict:
    """The JSON sidecar ``<file>.json`` of a scene file ({} when there is none)."""
    side = sidecar_path(path)
    if not side.exists():
        return {}
    try:
        info = json.loads(side.read_text())
    except (OSError, ValueError) as e:
        raise SceneError(f"{side}: unreadable scene sidecar ({type(e).__name__}: {e})") from None
    if not isinstance(info, dict):
        raise SceneError(f"{side}: a scene sidecar is a JSON object, got {type(info).__name__}")
    return info


def scene_name(path: str | os.PathLike) -> str:
    """A scene's name from its file: the file name without format suffixes (``guitar.compressed.ply`` →
    ``guitar``); a folder's own name (an unzipped SOG)."""
    name = Path(path).name
    for suffix in (".ply", ".splat", ".ksplat", ".spz", ".sog", ".pt", ".pth", ".ckpt", ".compressed"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name or Path(path).name


def guess_category(name: str) -> str | None:
    """A category of :data:`scenes.canonical.CATEGORY_HEIGHTS_M` named by a word of the scene's name
    (``statue_narcissus`` → statue, ``hydrant_416_57046`` → hydrant), or None."""
    for word in re.split(r"[^a-z]+", name.lower()):
        if word in CATEGORY_HEIGHTS_M:
            return word
        if word.endswith("s") and word[:-1] in CATEGORY_HEIGHTS_M:
            return word[:-1]
    return None


def read_inria_cameras(path: str | os.PathLike):
    """Cameras of an INRIA 3DGS ``cameras.json`` (list of {width, height, position, rotation, fx, fy}; rotation =
    camera-to-world rotation, rows; OpenCV axes) as :class:`scenes.camera.Camera` in the scene file's frame."""
    from .camera import Camera

    path = Path(path)
    try:
        items = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SceneError(f"{path}: unreadable cameras file ({type(e).__name__}: {e})") from None
    if not isinstance(items, list) or not items:
        raise SceneError(f"{path}: expected a non-empty JSON list of cameras")
    cams = []
    for i, c in enumerate(items):
        try:
            r = np.asarray(c["rotation"], float)
            pos = np.asarray(c["position"], float)
            w2c = np.eye(4)
            w2c[:3, :3] = r.T
            w2c[:3, 3] = -r.T @ pos
            cams.append(Camera(int(c["width"]), int(c["height"]), float(c["fx"]), float(c["fy"]),
                               int(c["width"]) / 2, int(c["height"]) / 2, w2c))
        except (KeyError, TypeError, ValueError) as e:
            raise SceneError(f"{path}: camera {i}: need width, height, fx, fy, position [3] and rotation [3][3] "
                             f"({type(e).__name__}: {e})") from None
    return cams


def find_cameras(path: str | os.PathLike):
    """(cameras, the file they came from) for a scene file: an INRIA ``cameras.json`` beside it or up to two
    folders above it; (None, None) when there is none."""
    p = Path(path).resolve()
    for folder in list(p.parents)[:3]:
        f = folder / "cameras.json"
        if f.is_file():
            return read_inria_cameras(f), str(f)
    return None, None


def ground_disc(frame: CanonicalFrame, radius: float, object_base: np.ndarray | None, seed: int = 0):
    """The ground added under a capture without one: a flat disc at z = 0 (mesh, for line of sight and props) and
    its surface Gaussians (for the images), textured like the catalogue's paving, darkened near the object's
    base (a contact shadow: ``object_base`` = its Gaussians' ground-plane positions within 3 cm of the ground)
    so the object stands on it rather than floating over it."""
    import trimesh

    from .catalogue import LIGHT_DIR, ground_color_fn
    from .surface import Part, parts_to_gaussians

    rng = np.random.default_rng([seed, 0x6D])
    texture = ground_color_fn(GROUND_COLOR_KIND, rng)
    tree = None
    if object_base is not None and len(object_base) >= 3:
        from scipy.spatial import cKDTree

        tree = cKDTree(np.asarray(object_base, float)[:, :2])
    reach = 0.08 + 0.15 * float(np.max(np.asarray(frame.object_bounds)[1, :2]))

    def colour(points, normals):
        rgb = texture(points, normals)
        if tree is not None:
            d, _ = tree.query(points[:, :2], k=1, workers=-1)
            rgb = rgb * (1.0 - 0.45 * np.exp(-np.asarray(d) / reach))[:, None]
        return rgb

    inner = min(3.2, radius)
    parts = []
    for r0, r1, spacing in ((0.0, inner, 0.022), (inner, radius, 0.04)):
        if r1 <= r0:
            continue
        m = trimesh.creation.annulus(r_min=r0, r_max=r1, height=1e-3, sections=96) if r0 > 0 else \
            trimesh.creation.cylinder(radius=r1, height=1e-3, sections=96)
        m.update_faces(m.face_normals[:, 2] > 0.99)
        m.remove_unreferenced_vertices()
        m.apply_translation([0, 0, -0.5e-3])
        parts.append(Part(m, colour, spacing=spacing, name="ground"))
    g = parts_to_gaussians(parts, rng, light_dir=LIGHT_DIR, source="added ground")
    return trimesh.util.concatenate([p.mesh for p in parts]), g


def load_capture(path: str | os.PathLike, frame: dict | None = None, seed: int = 0) -> Scene:
    """A scene file (any format ``scenes.formats`` reads) in the canonical frame; ``frame``: hints overriding
    the sidecar's (see the module docstring). Raises :class:`SceneError` naming the file and what is wrong."""
    from .formats import read_scene_file

    path = str(path)
    g = read_scene_file(path)
    if len(g) == 0:
        raise SceneError(f"{path}: no Gaussians (0 vertices); a scene needs at least one")
    side = read_sidecar(path)
    name = str(side.get("name") or scene_name(path))
    background = tuple(float(v) for v in side.get("background", (0.0, 0.0, 0.0)))
    meta = {**side.get("metadata", {}), "file": path}
    if "format" in g.metadata:
        meta["format"] = g.metadata["format"]
    if "trajectory" in side and not side.get("frame") and not frame:
        # Vantage's own export: the file is in the canonical frame already
        try:
            traj = OrbitTrajectory(**{k: tuple(v) if isinstance(v, list) else v for k, v in side["trajectory"].items()})
        except (KeyError, TypeError, ValueError) as e:
            raise SceneError(f"{sidecar_path(path)}: malformed scene sidecar ({type(e).__name__}: {e})") from None
        return Scene(name, g.in_world() if g.world_transform is not None else g, traj, background, metadata=meta)
    hints_dict = {**(side.get("frame") or {}), **(frame or {})}
    hints = FrameHints.from_dict(hints_dict, where=f"{path}: frame")
    category = hints.category or guess_category(name)
    if category and not hints.category:
        hints = FrameHints.from_dict({**hints_dict, "category": category}, where=f"{path}: frame")
    cameras, cam_file = (None, None) if hints.transform is not None else find_cameras(path)
    g0 = g.in_world() if g.world_transform is not None else g
    try:
        fr, keep = estimate_frame(g0, cameras, hints)
    except FrameUnknown as e:
        # too little to go on (a handful of Gaussians, a test scene): render it in the file's own frame, around
        # its Gaussians; props and labels refuse it (no object bounds), naming this reason
        meta.update({"category": category or name, "canonical": {"version": CANONICAL_VERSION, "estimated": False,
                                                                 "reason": str(e)},
                     "frame_hints": hints.to_dict(), "file_gaussians": len(g0), "file_sha256": sha256_path(path)})
        return Scene(name, g0, default_orbit(g0.means, g0.opacities, g0.scales), background, metadata=meta)
    kept = g0.subset(np.flatnonzero(keep))
    kept.world_transform = fr.transform
    world = kept.in_world()
    world.source = path
    n_file = len(world)
    meshes = {}
    traj = canonical_orbit(fr, cameras)
    if fr.add_ground:
        radius = float(max(4.0, 2.0 * traj.radius))
        z = world.means[:, 2]
        base = world.means[(z < 0.03) & (world.opacities > 0.35)]
        disc, gd = ground_disc(fr, radius, base, seed)
        world = GaussianScene.concatenate([world, gd.with_sh_degree(world.sh_degree)], source=path)
        meshes["ground"] = disc
    meta.update({"category": category or name, "object_bounds": np.asarray(fr.object_bounds).tolist(),
                 "canonical": fr.to_dict(), "frame_hints": hints.to_dict(), "file_gaussians": n_file,
                 "file_sha256": sha256_path(path)})
    if cam_file:
        meta["cameras_file"] = cam_file
    if fr.add_ground:
        meta["added_ground"] = {"radius_m": round(radius, 4), "texture": GROUND_COLOR_KIND,
                                "gaussians": len(world) - n_file}
    return Scene(name, world, traj, background, meshes, meta)


__all__ = ["find_cameras", "ground_disc", "guess_category", "load_capture", "read_inria_cameras", "read_sidecar",
           "scene_name", "sidecar_path"]
