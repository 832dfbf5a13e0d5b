"""The procedural scene catalogue: the embedded default scenes (no downloads needed).

40 scenes = 10 CO3D categories × 4 instances, named ``<category>_<NN>`` (``bench_01`` … ``umbrella_04``).
Instances 01-03 are meant for the basic tasks (01-02 train, 03 test), 04 for VPT-Strategy. A scene is a
central object (``objects.py``) on a textured ground disc inside a cylindrical backdrop, built as
meshes and converted to flat surface Gaussians (``scenes/surface.py``). Everything is deterministic
in (category, instance, seed). The source meshes are kept: they are the exact geometry for ray casting.
"""
from __future__ import annotations

import functools
import math
import re

import numpy as np
import trimesh

from ..gaussians import SceneError
from ..surface import LIGHT_DIR, Part, parts_to_gaussians
from ..scene import Scene
from ..trajectory import OrbitTrajectory
from .objects import OBJECTS

CATEGORIES = ("bench", "car", "chair", "couch", "hydrant", "laptop", "motorcycle", "plant", "suitcase", "umbrella")
INSTANCES = (1, 2, 3, 4)
GROUND_RADIUS = 6.5
BACKDROP_HEIGHT = 5.0
SKY = (0.72, 0.8, 0.9)

_NAME = re.compile(r"^([a-z]+)_(\d{2})$")


def catalogue_names() -> list[str]:
    return [f"{c}_{i:02d}" for c in CATEGORIES for i in INSTANCES]


def parse_name(name: str) -> tuple[str, int]:
    m = _NAME.match(name)
    if not m or m.group(1) not in CATEGORIES or int(m.group(2)) not in INSTANCES:
        raise SceneError(
            f"unknown catalogue scene {name!r}; names are <category>_<01..04> with category one of "
            f"{', '.join(CATEGORIES)} (e.g. bench_01), or pass a path to a .ply file"
        )
    return m.group(1), int(m.group(2))


# ---------------------------------------------------------------------- textures
def _smooth_noise(rng: np.random.Generator, n_waves: int = 12, scale: float = 1.0):
    """A smooth random field f(xy [N,2]) in about [-1, 1]: a sum of plane waves with random directions."""
    ang = rng.uniform(0, 2 * math.pi, n_waves)
    freq = rng.uniform(0.5, 3.0, n_waves) / scale
    phase = rng.uniform(0, 2 * math.pi, n_waves)
    dirs = np.stack([np.cos(ang), np.sin(ang)], 1) * freq[:, None]

    def f(xy):
        return np.sin(xy @ dirs.T * 2 * math.pi + phase).sum(1) / math.sqrt(n_waves / 2)

    return f


GROUNDS = ("grass", "paving", "planks", "gravel")


def ground_color_fn(kind: str, rng: np.random.Generator):
    noise_lo, noise_hi = _smooth_noise(rng, scale=2.0), _smooth_noise(rng, 16, scale=0.25)
    if kind == "grass":
        a, b = np.array([0.33, 0.36, 0.18]), np.array([0.45, 0.4, 0.24])

        def f(p, n):
            t = np.clip(0.5 + 0.35 * noise_lo(p[:, :2]) + 0.15 * noise_hi(p[:, :2]), 0, 1)[:, None]
            return a * (1 - t) + b * t
    elif kind == "paving":
        tile = rng.uniform(0.4, 0.6)
        base = np.array(rng.choice([[0.62, 0.6, 0.56], [0.55, 0.5, 0.45], [0.6, 0.55, 0.5]]))

        def f(p, n):
            u, v = p[:, 0] / tile, p[:, 1] / tile
            grout = (np.minimum(u % 1, 1 - u % 1) < 0.04) | (np.minimum(v % 1, 1 - v % 1) < 0.04)
            checker = ((np.floor(u) + np.floor(v)) % 2)[:, None] * 0.08
            shade = 0.06 * noise_hi(p[:, :2])[:, None]
            return np.where(grout[:, None], base * 0.55, base * (0.92 + checker + shade))
    elif kind == "planks":
        w = rng.uniform(0.18, 0.25)
        base = np.array(rng.choice([[0.6, 0.42, 0.26], [0.5, 0.34, 0.2], [0.7, 0.55, 0.38]]))
        ang = rng.uniform(0, math.pi)
        d = np.array([math.cos(ang), math.sin(ang)])

        def f(p, n):
            across = p[:, :2] @ d / w
            gap = np.minimum(across % 1, 1 - across % 1) < 0.05
            plank = np.floor(across)
            tone = 0.85 + 0.15 * np.sin(plank * 12.9898) ** 2
            grain = 0.05 * noise_hi(p[:, :2] * np.array([1.0, 6.0]))
            return np.where(gap[:, None], base * 0.45, base * (tone + grain)[:, None])
    elif kind == "gravel":
        base = np.array([0.55, 0.52, 0.48])

        def f(p, n):
            speck = np.sin(p[:, 0] * 91.7 + np.sin(p[:, 1] * 57.3) * 3) * np.sin(p[:, 1] * 83.1)
            t = 0.85 + 0.1 * noise_lo(p[:, :2]) + 0.08 * speck
            return base * t[:, None]
    else:
        raise SceneError(f"unknown ground kind {kind!r}; one of {GROUNDS}")
    return f


def backdrop_color_fn(rng: np.random.Generator):
    sky_top, sky_low = np.array([0.45, 0.62, 0.85]), np.array(SKY)
    skyline = _smooth_noise(rng, 10, scale=0.15)
    wall = np.array(rng.choice([[0.45, 0.42, 0.38], [0.35, 0.4, 0.45], [0.5, 0.45, 0.4], [0.3, 0.34, 0.3]]))
    n_blocks = int(rng.integers(10, 20))
    heights = rng.uniform(0.8, 2.6, n_blocks)
    tints = rng.uniform(0.7, 1.15, n_blocks)

    def f(p, n):
        theta = np.arctan2(p[:, 1], p[:, 0])
        z = p[:, 2]
        block = np.floor((theta + math.pi) / (2 * math.pi) * n_blocks).astype(int) % n_blocks
        top = heights[block] + 0.15 * skyline(np.stack([theta, np.zeros_like(theta)], 1))
        t = np.clip((z - 1.0) / (BACKDROP_HEIGHT - 1.0), 0, 1)[:, None]
        sky = sky_low * (1 - t) + sky_top * t
        windows = ((np.floor(z / 0.35) + np.floor(theta * 40)) % 3 == 0)[:, None] * 0.12
        build = wall * tints[block][:, None] * (1 - windows)
        return np.where((z < top)[:, None], build, sky)

    return f


# ---------------------------------------------------------------------- building
def _disc(radius_in: float, radius_out: float) -> trimesh.Trimesh:
    if radius_in <= 0:
        m = trimesh.creation.cylinder(radius=radius_out, height=1e-3, sections=96)
        m.update_faces(m.face_normals[:, 2] > 0.99)  # keep the top face only
        m.remove_unreferenced_vertices()
        m.apply_translation([0, 0, -0.5e-3])
        return m
    m = trimesh.creation.annulus(r_min=radius_in, r_max=radius_out, height=1e-3, sections=96)
    m.update_faces(m.face_normals[:, 2] > 0.99)
    m.remove_unreferenced_vertices()
    m.apply_translation([0, 0, -0.5e-3])
    return m


def _backdrop() -> trimesh.Trimesh:
    m = trimesh.creation.cylinder(radius=GROUND_RADIUS, height=BACKDROP_HEIGHT, sections=128)
    m.update_faces(np.abs(m.face_normals[:, 2]) < 0.5)  # the wall only
    m.remove_unreferenced_vertices()
    m.invert()  # normals face the centre
    m.apply_translation([0, 0, BACKDROP_HEIGHT / 2])
    return m


def _object_parts(name: str, seed: int):
    """The first steps of :func:`build`, which make the object: (category, instance, the scene's generator
    after them, the object's parts, their meshes joined). :func:`build` goes on from here with the same
    generator; :func:`object_mesh` stops here."""
    category, instance = parse_name(name)
    rng = np.random.default_rng([seed, CATEGORIES.index(category), instance])
    parts = OBJECTS[category](rng)
    # random yaw so that instances of a category face different ways
    yaw = trimesh.transformations.rotation_matrix(rng.uniform(0, 2 * math.pi), [0, 0, 1])
    for p in parts:
        p.mesh.apply_transform(yaw)
    obj = trimesh.util.concatenate([p.mesh for p in parts])
    return category, instance, rng, parts, obj


def object_mesh(name: str, seed: int = 0) -> trimesh.Trimesh:
    """``build(name, seed).meshes["object"]`` without the rest of the scene (the Gaussians: ~0.7 s of a
    build): for silhouettes and footprints. The same steps as :func:`build` (:func:`_object_parts`), so the
    same mesh (tests/test_render_equivalence.py compares them)."""
    return _object_parts(name, seed)[-1]


@functools.lru_cache(maxsize=8)
def build(name: str, seed: int = 0, density: float = 1.0) -> Scene:
    """Build catalogue scene ``name`` (e.g. ``"bench_01"``); deterministic in (name, seed, density).

    ``density`` multiplies the number of Gaussians per square metre (1.0 ≈ 200-270k Gaussians, dense
    enough for 256×256; use more for larger images). Results are cached per process: treat the
    returned scene as read-only.
    """
    if not density > 0:
        raise SceneError(f"density must be > 0, got {density}")
    category, instance, rng, parts, obj = _object_parts(name, seed)
    spacing_scale = 1.0 / math.sqrt(density)
    ground_kind = GROUNDS[int(rng.integers(len(GROUNDS)))]
    ground_fn = ground_color_fn(ground_kind, rng)
    ground_in, ground_out = _disc(0, 3.2), _disc(3.2, GROUND_RADIUS)
    backdrop = _backdrop()
    env = [
        Part(ground_in, ground_fn, spacing=0.022, name="ground"),
        Part(ground_out, ground_fn, spacing=0.04, name="ground"),
        Part(backdrop, backdrop_color_fn(rng), spacing=0.06, shade=False, name="backdrop"),
    ]
    light = np.asarray(LIGHT_DIR, float) / np.linalg.norm(LIGHT_DIR)
    intersector = trimesh.ray.ray_triangle.RayMeshIntersector(obj) if not trimesh.ray.has_embree else \
        trimesh.ray.ray_pyembree.RayMeshIntersector(obj)

    def shadow(points, normals):
        origins = points + normals * 2e-3 + light * 2e-3
        hit = intersector.intersects_any(origins, np.tile(light, (len(points), 1)))
        return np.where(hit, 0.0, 1.0)

    for p in parts + env:
        p.spacing *= spacing_scale
    gaussians = parts_to_gaussians(parts + env, rng, light_dir=light, shadow_fn=shadow, source=f"catalogue:{name}")
    lo, hi = obj.bounds
    extent = float(max(np.max(hi[:2] - lo[:2]), hi[2] - lo[2]))
    centre = ((lo + hi) / 2).tolist()
    target = (centre[0], centre[1], float(min(centre[2], 0.6)))
    traj = OrbitTrajectory(
        target=target,
        radius=float(max(2.0, 1.55 * extent) * rng.uniform(0.95, 1.1)),
        height=float(rng.uniform(1.2, 1.7)),
        radius_amp=float(rng.uniform(0.08, 0.15)),
        height_amp=float(rng.uniform(0.2, 0.4)),
        start_deg=float(rng.uniform(0, 360)),
        wobble=float(rng.choice([1.0, 2.0, 3.0])),
        phase_r=float(rng.uniform(0, 2 * math.pi)),
        phase_h=float(rng.uniform(0, 2 * math.pi)),
    )
    meshes = {"object": obj, "ground": trimesh.util.concatenate([ground_in, ground_out]), "backdrop": backdrop}
    meta = {"catalogue": name, "category": category, "instance": instance, "seed": seed, "density": density,
            "ground": ground_kind}
    return Scene(name, gaussians, traj, SKY, meshes, meta)
