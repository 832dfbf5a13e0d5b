"""The 3D-PC props: an observer (the green camera) and a target (the red ball), as trimesh meshes.

Conventions
* Positions in world metres (+z up). Props rest on the ground by default (``position[2]`` is the
  height of the prop's centre).
* The observer's viewing direction is given by ``yaw_deg`` (azimuth from +x towards +y) and
  ``pitch_deg`` (elevation, positive up). Its *eye* — where line of sight is measured from — is the
  centre of the lens's front face.
* ``size`` is the observer's body width and the target's diameter (edge length for a cube), in metres.

Shapes and colours are options so that shortcut controls are possible: ``shape="arrow"`` for the
observer (an arrow pointing in the viewing direction), ``shape="cube"`` for the target, any RGB.
Meshes carry vertex colours with Lambert shading from the scene light baked in (same light as the
catalogue scenes), so that they render identically in any renderer.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import trimesh

from .camera import cross3
from .surface import LIGHT_DIR

GREEN = (0.1, 0.75, 0.15)
RED = (0.85, 0.08, 0.06)
LENS_COLOR = (0.08, 0.08, 0.09)       # the camera's lens barrel
LENS_RING_COLOR = (0.82, 0.82, 0.8)   # and the ring at its front
# the barrel's length in units of the camera's size (its width): 0.6 since issue 10's second blind rating
# (was 0.4): raters misread the facing of cameras turned away from the viewer, whose short barrel is
# foreshortened to a stub
LENS_LENGTH = 0.6
AMBIENT = 0.45
ARROW_SCALE = 1.6


def _rotation(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """Rotation taking local +x (forward), +y (left), +z (up) to the world viewing frame (a fresh array)."""
    return _rotation_cached(float(yaw_deg), float(pitch_deg)).copy()


@functools.lru_cache(maxsize=4096)
def _rotation_cached(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """:func:`_rotation`, computed once per angle pair: an observer's eye, forward and camera each ask for it,
    about ten times per candidate placement."""
    yaw, pitch = math.radians(yaw_deg), math.radians(pitch_deg)
    fwd = np.array([math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), math.sin(pitch)])
    left = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
    up = cross3(fwd, left)
    return np.stack([fwd, left, up], axis=1)


def shade_vertices(mesh: trimesh.Trimesh, rgb, light_dir=LIGHT_DIR, ambient: float = AMBIENT) -> trimesh.Trimesh:
    """Bake Lambert shading into per-vertex colours (uint8 RGBA)."""
    light = np.asarray(light_dir, float)
    light /= np.linalg.norm(light)
    shade = ambient + (1 - ambient) * np.clip(mesh.vertex_normals @ light, 0, None)
    col = np.clip(np.asarray(rgb, float)[None, :] * shade[:, None], 0, 1)
    rgba = np.concatenate([np.round(col * 255), np.full((len(col), 1), 255)], 1).astype(np.uint8)
    mesh.visual = trimesh.visual.ColorVisuals(mesh, vertex_colors=rgba)
    return mesh


@dataclasses.dataclass(frozen=True)
class Observer:
    """The green camera (or arrow): an observer with a position, a viewing direction and a field of view."""

    position: tuple[float, float, float]
    yaw_deg: float
    pitch_deg: float = 0.0
    size: float = 0.24
    color: tuple[float, float, float] = GREEN
    shape: str = "camera"
    fov_deg: float = 60.0

    def __post_init__(self):
        object.__setattr__(self, "position", tuple(float(v) for v in self.position))
        object.__setattr__(self, "color", tuple(float(v) for v in self.color))
        if self.shape not in ("camera", "arrow"):
            raise ValueError(f"observer shape={self.shape!r}; one of 'camera', 'arrow'")
        if not self.size > 0 or not 0 < self.fov_deg < 180:
            raise ValueError(f"observer size must be > 0 and fov_deg in (0, 180); got {self.size}, {self.fov_deg}")

    @property
    def rotation(self) -> np.ndarray:
        return _rotation(self.yaw_deg, self.pitch_deg)

    @property
    def forward(self) -> np.ndarray:
        return self.rotation[:, 0]

    @property
    def eye(self) -> np.ndarray:
        """Centre of the lens front (camera) or the arrow tip: the point line of sight starts from."""
        return np.asarray(self.position, float) + self.forward * self._front_offset()

    def _front_offset(self) -> float:
        s = self.size
        return 0.5 * 0.6 * s + LENS_LENGTH * s if self.shape == "camera" else 0.6 * ARROW_SCALE * s

    def camera(self, width: int, height: int, look_at=None, fov_deg: float | None = None):
        """A pinhole camera at the eye, looking forward (or at ``look_at``)."""
        from scenes.camera import Camera

        target = self.eye + self.forward if look_at is None else np.asarray(look_at, float)
        up = (0.0, 0.0, 1.0)
        if abs(np.dot((target - self.eye) / np.linalg.norm(target - self.eye), up)) > 0.999:
            up = tuple(self.rotation[:, 2])
        return Camera.from_fov(width, height, fov_deg or self.fov_deg).looking_at(self.eye, target, up)

    def mesh(self) -> trimesh.Trimesh:
        """The prop's mesh in world coordinates (cached per prop: treat as read-only)."""
        return _cached_mesh(self)

    def _build_mesh(self) -> trimesh.Trimesh:
        s = self.size
        if self.shape == "camera":
            # body (depth 0.6 s along forward, width s, height 0.65 s), lens barrel LENS_LENGTH s long in
            # front, a viewfinder hump on top: the barrel makes the viewing direction obvious from any side.
            # The barrel is near-black and its front ring light grey (LENS_COLOR, LENS_RING_COLOR), as on a
            # real camera: in green on green (until issue 10's blind ratings) raters misread the facing of
            # cameras 17-23 px tall.
            body = trimesh.creation.box(extents=[0.6 * s, s, 0.65 * s])
            lens = trimesh.creation.cylinder(radius=0.22 * s, height=LENS_LENGTH * s, sections=32)
            lens.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0]))
            lens.apply_translation([0.3 * s + 0.5 * LENS_LENGTH * s, 0, 0])
            ring = trimesh.creation.cylinder(radius=0.25 * s, height=0.06 * s, sections=32)
            ring.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0]))
            ring.apply_translation([0.3 * s + (LENS_LENGTH - 0.03) * s, 0, 0])
            hump = trimesh.creation.box(extents=[0.3 * s, 0.3 * s, 0.15 * s])
            hump.apply_translation([0, 0, 0.4 * s])
            parts = [shade_vertices(m, self.color) for m in (body, hump)]
            parts.append(shade_vertices(lens, LENS_COLOR))
            parts.append(shade_vertices(ring, LENS_RING_COLOR))
        else:
            s = ARROW_SCALE * s  # an arrow as long as 1.6 body widths reads at the same distance
            shaft = trimesh.creation.cylinder(radius=0.08 * s, height=0.7 * s, sections=24)
            shaft.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0]))
            shaft.apply_translation([-0.25 * s, 0, 0])
            head = trimesh.creation.cone(radius=0.22 * s, height=0.5 * s, sections=24)
            head.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0]))
            head.apply_translation([0.1 * s, 0, 0])
            parts = [shade_vertices(m, self.color) for m in (shaft, head)]
        m = trimesh.util.concatenate(parts)
        t = np.eye(4)
        t[:3, :3] = self.rotation
        t[:3, 3] = self.position
        m.apply_transform(t)
        return m

    def base_offset(self) -> float:
        """Height of ``position`` above the prop's lowest point when level: rest it on the ground at z = this."""
        return 0.325 * self.size if self.shape == "camera" else 0.22 * ARROW_SCALE * self.size

    def bounding_radius(self) -> float:
        """Bounding radius around ``position`` (for collision checks): the shape's radius at size 1 times
        ``size`` (rotation- and position-invariant, so no mesh is built per prop)."""
        return _unit_radius(self.shape) * self.size

    def to_row(self, prefix: str = "observer_") -> dict:
        x, y, z = map(float, self.position)
        return {f"{prefix}x": x, f"{prefix}y": y, f"{prefix}z": z, f"{prefix}yaw_deg": float(self.yaw_deg),
                f"{prefix}pitch_deg": float(self.pitch_deg), f"{prefix}size": float(self.size),
                f"{prefix}fov_deg": float(self.fov_deg), f"{prefix}shape": self.shape}


@dataclasses.dataclass(frozen=True)
class Target:
    """The red ball (or cube). ``size`` is the diameter (cube: edge length), metres."""

    position: tuple[float, float, float]
    size: float = 0.18
    color: tuple[float, float, float] = RED
    shape: str = "ball"

    def __post_init__(self):
        object.__setattr__(self, "position", tuple(float(v) for v in self.position))
        object.__setattr__(self, "color", tuple(float(v) for v in self.color))
        if self.shape not in ("ball", "cube"):
            raise ValueError(f"target shape={self.shape!r}; one of 'ball', 'cube'")
        if not self.size > 0:
            raise ValueError(f"target size must be > 0, got {self.size}")

    @property
    def center(self) -> np.ndarray:
        return np.asarray(self.position, float)

    @property
    def bounding_radius(self) -> float:
        return self.size / 2 if self.shape == "ball" else self.size * math.sqrt(3) / 2

    def mesh(self) -> trimesh.Trimesh:
        """The prop's mesh in world coordinates (cached per prop: treat as read-only)."""
        return _cached_mesh(self)

    def _build_mesh(self) -> trimesh.Trimesh:
        if self.shape == "ball":
            m = trimesh.creation.icosphere(subdivisions=4, radius=self.size / 2)
        else:
            m = trimesh.creation.box(extents=[self.size] * 3)
        m = shade_vertices(m, self.color)
        m.apply_translation(self.position)
        return m

    def facing_points(self, eye: np.ndarray, n: int = 256, seed: int = 0) -> np.ndarray:
        """Points on the target surface facing ``eye``, spread uniformly over its silhouette as seen from
        ``eye`` (so each point stands for an equal share of the target's image area)."""
        eye = np.asarray(eye, float)
        c = self.center
        view = c - eye
        dist = np.linalg.norm(view)
        view /= dist
        helper = np.array([0, 0, 1.0]) if abs(view[2]) < 0.9 else np.array([1.0, 0, 0])
        a = np.cross(view, helper)
        a /= np.linalg.norm(a)
        b = np.cross(view, a)
        # deterministic low-discrepancy disc (Vogel spiral), shrunk slightly so rays hit the front face
        k = np.arange(n) + 0.5
        r = np.sqrt(k / n) * 0.97
        phi = k * math.pi * (3 - math.sqrt(5)) + seed
        if self.shape == "ball":
            rad = self.size / 2
            off = (r * np.cos(phi))[:, None] * a + (r * np.sin(phi))[:, None] * b
            depth = np.sqrt(np.clip(1 - r**2, 0, None))[:, None]
            return c + rad * (off - depth * view)
        # cube: cast a denser spiral over the bounding disc, keep the rays that hit the cube (its true
        # silhouette) and take an even subset of them (spiral order is uniform in area)
        mesh = trimesh.creation.box(extents=[self.size] * 3)
        mesh.apply_translation(c)
        m = 4 * n
        k = np.arange(m) + 0.5
        r = np.sqrt(k / m)
        phi = k * math.pi * (3 - math.sqrt(5)) + seed
        targets = c + self.bounding_radius * ((r * np.cos(phi))[:, None] * a + (r * np.sin(phi))[:, None] * b)
        dirs = targets - eye
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        locs, idx, _ = mesh.ray.intersects_location(np.tile(eye, (m, 1)), dirs, multiple_hits=False)
        hits = locs[np.argsort(idx)]
        return hits[np.linspace(0, len(hits) - 1, n).round().astype(int)]

    def to_row(self, prefix: str = "ball_") -> dict:
        x, y, z = map(float, self.position)
        return {f"{prefix}x": x, f"{prefix}y": y, f"{prefix}z": z, f"{prefix}size": float(self.size),
                f"{prefix}shape": self.shape}


@functools.lru_cache(maxsize=None)
def _unit_radius(shape: str) -> float:
    unit = Observer((0.0, 0.0, 0.0), 0.0, 0.0, 1.0, shape=shape)
    return float(np.linalg.norm(unit._build_mesh().vertices, axis=1).max())


@functools.lru_cache(maxsize=None)
def _unit_cylinder(sections: int) -> trimesh.Trimesh:
    return trimesh.creation.cylinder(radius=1.0, height=1.0, sections=sections)


def _cylinder(radius: float, height: float, center, sections: int = 24) -> trimesh.Trimesh:
    """A z-axis cylinder (a scaled copy of a cached unit cylinder: trimesh's own is slow to build)."""
    m = _unit_cylinder(sections).copy()
    m.apply_transform(np.diag([radius, radius, height, 1.0]))
    m.apply_translation(center)
    return m


@functools.lru_cache(maxsize=64)
def _cached_mesh(prop) -> trimesh.Trimesh:
    return prop._build_mesh()


@functools.lru_cache(maxsize=64)
def surface_samples(prop, n: int = 400) -> np.ndarray:
    """``n`` points spread over the prop's surface (deterministic; cached per prop)."""
    return trimesh.sample.sample_surface(prop.mesh(), n, seed=0)[0]


# ---------------------------------------------------------------------- supports
SUPPORT_KINDS = ("pedestal", "box")
SUPPORT_COLORS = ((0.55, 0.52, 0.48), (0.42, 0.3, 0.2), (0.62, 0.6, 0.58), (0.3, 0.32, 0.35), (0.7, 0.62, 0.5))
SHADOW_COLOR = (0.05, 0.05, 0.05)


@dataclasses.dataclass(frozen=True)
class Support:
    """A stand a prop rests on, with contact: its top face at ``top`` is the prop's lowest point.

    kind: ``"pedestal"`` (a column of diameter ``0.5 × width`` on a round foot plate, with a top plate of
        diameter ``width``) or ``"box"`` (a crate ``width`` × ``width`` × its height).
    xy: centre on the ground (world metres); ``bottom``/``top``: z of its lowest point / top face (m).
    The support stands on a surface at z = ``bottom`` (the ground, z = 0, in catalogue and aligned CO3D
    scenes). ``shadow`` adds a dark disc 2 mm thick around its foot (a cheap contact shadow; not an
    occluder). Supports are part of the scene, not props: they are splatted and ray-cast like the object.
    """

    kind: str
    xy: tuple[float, float]
    bottom: float
    top: float
    width: float
    yaw_deg: float = 0.0
    color: tuple[float, float, float] = SUPPORT_COLORS[0]
    shadow: bool = True

    def __post_init__(self):
        object.__setattr__(self, "xy", tuple(float(v) for v in self.xy))
        object.__setattr__(self, "color", tuple(float(v) for v in self.color))
        if self.kind not in SUPPORT_KINDS:
            raise ValueError(f"support kind={self.kind!r}; one of {SUPPORT_KINDS}")
        if not self.top > self.bottom or not self.width > 0:
            raise ValueError(f"support needs top > bottom and width > 0; got bottom={self.bottom}, top={self.top}, "
                             f"width={self.width}")

    @property
    def height(self) -> float:
        return self.top - self.bottom

    def parts(self) -> list[tuple[trimesh.Trimesh, tuple[float, float, float]]]:
        """[(mesh in world coordinates, rgb)], occluding parts only (no shadow)."""
        x, y = self.xy
        h, w = self.height, self.width
        if self.kind == "box":
            m = trimesh.creation.box(extents=[w, w, h])
            m.apply_transform(trimesh.transformations.rotation_matrix(math.radians(self.yaw_deg), [0, 0, 1]))
            m.apply_translation([x, y, self.bottom + h / 2])
            return [(m, self.color)]
        foot, col, cap = (_cylinder(r, ch, [x, y, z], n) for r, ch, z, n in self.pillar_cylinders())
        dark = tuple(float(c) * 0.8 for c in self.color)
        return [(foot, dark), (col, self.color), (cap, self.color)]

    def pillar_cylinders(self) -> list[tuple[float, float, float, int]]:
        """A pedestal's foot, column and cap: (radius, height, centre z, sections) each (m)."""
        h, w = self.height, self.width
        plate = min(0.02, h / 4)
        return [(0.5 * w, plate, self.bottom + plate / 2, 32), (0.18 * w, h - 2 * plate, self.bottom + h / 2, 24),
                (0.5 * w, plate, self.top - plate / 2, 32)]

    def mesh(self) -> trimesh.Trimesh:
        """The occluding geometry as one mesh (world coordinates; cached per support: treat as read-only)."""
        return _cached_support_mesh(self)

    def shadow_mesh(self) -> trimesh.Trimesh:
        """A dark disc 2 mm thick on the surface under the support (1.5 × its footprint radius)."""
        r = 0.75 * self.width * (1.2 if self.kind == "box" else 1.0)
        return _cylinder(r, 0.002, [self.xy[0], self.xy[1], self.bottom + 0.001], 32)

    def to_row(self, prefix: str) -> dict:
        return {f"{prefix}support_kind": self.kind, f"{prefix}support_height": float(self.height),
                f"{prefix}support_bottom": float(self.bottom), f"{prefix}support_width": float(self.width),
                f"{prefix}support_yaw_deg": float(self.yaw_deg)}

    @staticmethod
    def from_row(row: dict, prefix: str, xy) -> "Support | None":
        """The support recorded by :meth:`to_row` under ``prefix`` (None for ``kind == "ground"``)."""
        if row[f"{prefix}support_kind"] == "ground":
            return None
        bottom = float(row[f"{prefix}support_bottom"])
        return Support(row[f"{prefix}support_kind"], xy, bottom, bottom + float(row[f"{prefix}support_height"]),
                       float(row[f"{prefix}support_width"]), float(row[f"{prefix}support_yaw_deg"]))


def prop_bottom(prop) -> float:
    """z of the prop's lowest point (m): where a support's top face must be for contact."""
    return float(prop.mesh().bounds[0, 2])


@functools.lru_cache(maxsize=64)
def _cached_support_mesh(support: Support) -> trimesh.Trimesh:
    """The support's mesh: its shape built once at xy = (0, 0) (cached by shape), then moved to ``xy``.
    Bit-identical to :func:`support_mesh_reference` (building the parts in place): every part is placed by
    one translation whose x, y are 0 at the origin, and v + 0 + x == v + x exactly in floating point (tested).
    Why: a VPT-Strategy scan moves the supports to 121 positions per attempt, and building three trimesh
    cylinders each time was ~40% of a strategy scene's CPU."""
    x, y = support.xy
    origin = _origin_support_mesh(dataclasses.replace(support, xy=(0.0, 0.0)))
    return trimesh.Trimesh(vertices=origin.vertices + np.array([x, y, 0.0]), faces=origin.faces, process=False)


@functools.lru_cache(maxsize=256)
def _origin_support_mesh(support: Support) -> trimesh.Trimesh:
    if support.kind == "box":
        return support_mesh_reference(support)
    return _pillar_mesh(support)


def _transformed(v: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``Trimesh.apply_transform``'s arithmetic on bare vertices: its identity shortcut (a matrix within 1e-8
    of the identity leaves the vertices as they are), else ``transform_points``."""
    if trimesh.util.allclose(matrix, np.eye(4), 1e-8):
        return v
    return trimesh.transformations.transform_points(v, matrix=matrix)


def _pillar_mesh(support: Support) -> trimesh.Trimesh:
    """A pillar support's mesh from bare arrays: the three cylinders of :meth:`Support.parts` (foot, column,
    cap) placed with the same transforms as :func:`_cylinder` and stacked as ``trimesh.util.concatenate`` stacks
    them, without building four Trimesh objects (3.5 ms a support, ~20% of a build's placement sampling; the
    matched design draws a new support for most candidates, so the shape cache rarely hits). Bit-identical
    to :func:`support_mesh_reference` (tests/test_placement_design.py)."""
    x, y = support.xy
    verts, faces, n = [], [], 0
    for radius, height, z, sections in support.pillar_cylinders():
        unit = _unit_cylinder(sections)
        move = np.eye(4)
        move[:3, 3] = np.asarray([x, y, z], dtype=np.float64)
        v = _transformed(_transformed(unit.vertices, np.diag([radius, radius, height, 1.0])), move)
        verts.append(v)
        faces.append(unit.faces + n)
        n += len(v)
    return trimesh.Trimesh(vertices=np.vstack(verts), faces=np.vstack(faces), process=False)


def support_mesh_reference(support: Support) -> trimesh.Trimesh:
    """The plain twin of :meth:`Support.mesh`: the parts built in place and concatenated."""
    return trimesh.util.concatenate([m for m, _ in support.parts()])
