"""Proxy collision meshes for splat scenes without source geometry (trained scenes loaded from files).

Line of sight needs surfaces to cast rays against. For a scene from a ``.ply`` we build one from the
Gaussians: an opacity-weighted density on a voxel grid, smoothed by each Gaussian's own extent, then
marching cubes at a fixed fraction of the typical density of occupied voxels.

Density: every Gaussian with opacity ≥ ``min_opacity`` deposits its opacity into the voxel holding its
centre; the grid is then blurred with a Gaussian of σ = ``blur_voxels`` voxels. The iso-level is
``threshold`` × the median density over voxels that received a deposit (default 0.25): a surface
sampled by splats forms a shell a voxel or two thick, and the iso-surface wraps it. Thin open shells
therefore become thin closed slabs — what ray casting needs.

The grid covers ``bounds`` (default: the object's bounds from the scene sidecar grown by ``margin``,
else the 2nd-98th percentile box of the Gaussians), with ``resolution`` voxels along its longest side.
The result is cached in ``$VANTAGE_CACHE/proxy/`` (:func:`cache_dir`) under a digest of what it depends on
(the file's sha256, its canonical transform, the parameters); a change of any rebuilds it.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from infra.files import cache_dir as infra_cache_dir

PROXY_VERSION = "1"


@dataclasses.dataclass(frozen=True)
class ProxyParams:
    resolution: int = 160
    threshold: float = 0.25
    blur_voxels: float = 1.0
    min_opacity: float = 0.2
    margin: float = 1.5


def proxy_mesh(gaussians, bounds: np.ndarray | None = None, params: ProxyParams = ProxyParams()):
    """Build a closed trimesh approximating the opaque surfaces of ``gaussians`` (world frame)."""
    import trimesh
    from scipy.ndimage import gaussian_filter
    from skimage.measure import marching_cubes

    g = gaussians.in_world()
    op = g.opacities
    keep = op >= params.min_opacity
    pts, w = g.means[keep].astype(np.float64), op[keep].astype(np.float64)
    if len(pts) < 10:
        raise ValueError(f"{gaussians.source}: fewer than 10 Gaussians with opacity >= {params.min_opacity}")
    if bounds is None:
        bounds = np.stack([np.percentile(pts, 2, axis=0), np.percentile(pts, 98, axis=0)])
    lo, hi = np.asarray(bounds, float)
    voxel = float(np.max(hi - lo)) / params.resolution
    shape = np.maximum(np.ceil((hi - lo) / voxel).astype(int), 1) + 3  # one empty layer each side
    origin = lo - voxel * 1.5
    idx = np.floor((pts - origin) / voxel).astype(int)
    inside = np.all((idx >= 1) & (idx < shape - 1), axis=1)
    grid = np.zeros(shape, np.float64)
    np.add.at(grid, tuple(idx[inside].T), w[inside])
    occupied = grid > 0
    if not occupied.any():
        raise ValueError(f"{gaussians.source}: no Gaussians inside the proxy bounds {lo.tolist()}..{hi.tolist()}")
    level = params.threshold * float(np.median(grid[occupied]))
    dens = gaussian_filter(grid, params.blur_voxels, mode="constant")
    verts, faces, _, _ = marching_cubes(dens, level=level)
    mesh = trimesh.Trimesh(verts * voxel + origin + 0.5 * voxel, faces, process=True)
    mesh.metadata["proxy"] = {"voxel": voxel, "level": level, **dataclasses.asdict(params)}
    return mesh


def cache_dir() -> Path:
    """Where proxy meshes are cached: ``$VANTAGE_CACHE/proxy`` (default ``~/.cache/vantage/proxy``). Not next to
    the scene file: captures are often read from folders the user cannot write (a shared data set)."""
    return infra_cache_dir("proxy")


def _cached(key: dict, build):
    """The mesh ``build()`` makes, cached under the sha256 of ``key`` (rebuilt when the entry is missing or
    unreadable; a cache that cannot be written is skipped, never an error)."""
    import hashlib

    import trimesh

    from infra.files import atomic_write_bytes, atomic_write_text

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    cache, meta = cache_dir() / f"{digest}.ply", cache_dir() / f"{digest}.json"
    if cache.exists() and meta.exists():
        try:
            if json.loads(meta.read_text()) == key:
                return trimesh.load(cache, force="mesh", process=False)
        except (ValueError, OSError):
            pass  # unreadable cache: rebuild
    mesh = build()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(cache, mesh.export(file_type="ply"))
        atomic_write_text(meta, json.dumps(key, sort_keys=True))
    except OSError:
        pass
    return mesh


def _file_key(scene) -> dict:
    """What the proxy of a scene from a file depends on besides the parameters: the file (its sha256 when the
    loader recorded it, else size and modification time), the canonical transform, the Gaussians' count."""
    src = scene.metadata.get("file")
    key: dict = {"version": PROXY_VERSION, "file": str(src), "gaussians": len(scene.gaussians)}
    if scene.metadata.get("file_sha256"):
        key["sha256"] = scene.metadata["file_sha256"]
    elif src and os.path.exists(src):
        st = os.stat(src)
        key.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
    if "canonical" in scene.metadata:
        key["transform"] = scene.metadata["canonical"]["transform"]
    return key


def _file_gaussians(scene):
    """The scene's Gaussians that came from its file (world frame): not an added ground (scenes/capture.py)."""
    g = scene.gaussians.in_world()
    n = scene.metadata.get("file_gaussians")
    return g.subset(np.arange(int(n))) if n is not None and int(n) < len(g) else g


def proxy_mesh_for(scene, params: ProxyParams = ProxyParams()):
    """The proxy mesh of a scene loaded from a file (its own Gaussians, not an added ground disc), cached
    (:func:`cache_dir`; rebuilt when the file, the canonical transform or the parameters change)."""
    bounds = None
    if "object_bounds" in scene.metadata:
        b = np.asarray(scene.metadata["object_bounds"], float)
        bounds = np.stack([b[0] - params.margin, b[1] + params.margin])
        bounds[0, 2] = max(bounds[0, 2], b[0, 2] - 0.1)  # ground: just below the object's base
    if not scene.metadata.get("file"):
        return proxy_mesh(_file_gaussians(scene), bounds, params)
    key = {**_file_key(scene), "params": dataclasses.asdict(params), "bounds": None if bounds is None else bounds.tolist()}
    return _cached(key, lambda: proxy_mesh(_file_gaussians(scene), bounds, params))


def object_proxy_for(scene, params: ProxyParams = ProxyParams(resolution=128)):
    """A proxy mesh of the object alone (the file's Gaussians inside its bounds, above the ground): what props
    must not collide with and what the matched design's footprint and tube rules use for a scene without an
    exact object mesh. Cached like :func:`proxy_mesh_for`."""
    b = np.asarray(scene.object_bounds, float)
    pad = 0.1 * (b[1] - b[0]) + 0.05
    box = np.stack([b[0] - pad, b[1] + pad])
    box[0, 2] = b[0, 2] + 0.01 * (b[1, 2] - b[0, 2])  # above the ground: the object, not the floor under it

    def build():
        g = _file_gaussians(scene)
        inside = np.all((g.means >= box[0]) & (g.means <= box[1]), axis=1)
        if inside.sum() < 10:
            raise ValueError(f"{scene.name}: fewer than 10 Gaussians inside the object's bounds {b.tolist()}")
        return proxy_mesh(g.subset(np.flatnonzero(inside)), box, params)

    if not scene.metadata.get("file"):
        return build()
    key = {**_file_key(scene), "object": True, "params": dataclasses.asdict(params), "bounds": box.tolist()}
    return _cached(key, build)
