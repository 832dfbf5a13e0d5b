"""Mesh primitives for the procedural object library: tubes swept along curves, lathed profiles, convex
prisms, ellipsoids and boxes, each a closed trimesh with outward face normals.

Conventions (the library's, written once here): units are arbitrary model units (the renderers scale every
object to a requested size in pixels); +z is up, objects stand on z = 0; +x is the object's front (an
animal's head, a vehicle's bonnet, a knife's tip); +y is its left side. Angles are in degrees.
"""
from __future__ import annotations

import math

import numpy as np
import trimesh


def _closed(vertices, faces) -> trimesh.Trimesh:
    m = trimesh.Trimesh(np.asarray(vertices, np.float64), np.asarray(faces, np.int64), process=True)
    m.fix_normals()  # outward normals: the line renderer's crease test compares signed normals
    return m


def box(extents, center=(0, 0, 0), rotation_deg: float = 0.0, axis=(0, 0, 1)) -> trimesh.Trimesh:
    """Axis-aligned box of ``extents`` (dx, dy, dz), rotated about its centre by ``rotation_deg`` around ``axis``."""
    m = trimesh.creation.box(extents=extents)
    if rotation_deg:
        m.apply_transform(trimesh.transformations.rotation_matrix(math.radians(rotation_deg), axis))
    m.apply_translation(center)
    return m


def ellipsoid(radii, center=(0, 0, 0), pitch_deg: float = 0.0, subdivisions: int = 3) -> trimesh.Trimesh:
    """Ellipsoid with semi-axes ``radii`` (x, y, z), tilted by ``pitch_deg`` about +y (positive lifts its +x end)."""
    m = trimesh.creation.icosphere(subdivisions=subdivisions)
    m.apply_scale(radii)
    if pitch_deg:
        m.apply_transform(trimesh.transformations.rotation_matrix(math.radians(-pitch_deg), [0, 1, 0]))
    m.apply_translation(center)
    return m


def _frames(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotation-minimising frames (double reflection, Wang et al. 2008) along a polyline [N, 3]:
    two unit normals per point, so a swept tube does not twist."""
    t = np.gradient(points, axis=0)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    ref = np.array([0, 0, 1.0]) if abs(t[0, 2]) < 0.9 else np.array([1.0, 0, 0])
    u = np.empty_like(points)
    u[0] = np.cross(t[0], ref)
    u[0] /= np.linalg.norm(u[0])
    for i in range(len(points) - 1):
        v1 = points[i + 1] - points[i]
        c1 = v1 @ v1
        if c1 < 1e-18:
            u[i + 1] = u[i]
            continue
        r_l = u[i] - (2 / c1) * (v1 @ u[i]) * v1
        t_l = t[i] - (2 / c1) * (v1 @ t[i]) * v1
        v2 = t[i + 1] - t_l
        c2 = v2 @ v2
        u[i + 1] = r_l - (2 / c2) * (v2 @ r_l) * v2 if c2 > 1e-18 else r_l
        u[i + 1] /= np.linalg.norm(u[i + 1])
    return u, np.cross(t, u)


def tube(points, radii, sections: int = 16, cap: bool = True) -> trimesh.Trimesh:
    """A tube swept along the polyline ``points`` [N, 3] with radius ``radii`` (scalar or [N]) at each
    point; closed with flat caps. Limbs, tails, trunks, frame tubes, handles."""
    p = np.asarray(points, np.float64)
    r = np.broadcast_to(np.asarray(radii, np.float64), (len(p),))
    u, w = _frames(p)
    ang = np.linspace(0, 2 * math.pi, sections, endpoint=False)
    ring = np.cos(ang)[None, :, None] * u[:, None] + np.sin(ang)[None, :, None] * w[:, None]
    verts = (p[:, None] + r[:, None, None] * ring).reshape(-1, 3)
    n, s = len(p), sections
    faces = []
    for i in range(n - 1):
        for j in range(s):
            a, b = i * s + j, i * s + (j + 1) % s
            c, d = a + s, b + s
            faces += [[a, b, d], [a, d, c]]
    if cap:
        verts = np.vstack([verts, p[0], p[-1]])
        c0, c1 = len(verts) - 2, len(verts) - 1
        faces += [[c0, (j + 1) % s, j] for j in range(s)]
        faces += [[c1, (n - 1) * s + j, (n - 1) * s + (j + 1) % s] for j in range(s)]
    return _closed(verts, faces)


def rod(a, b, radius: float, radius_b: float | None = None, sections: int = 16) -> trimesh.Trimesh:
    """A straight (optionally tapered) tube from point ``a`` to ``b``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    rb = radius if radius_b is None else radius_b
    return tube(np.stack([a, (a + b) / 2, b]), [radius, (radius + rb) / 2, rb], sections)


def bezier(p0, p1, p2, n: int = 12) -> np.ndarray:
    """Points [n, 3] of the quadratic Bézier curve with control points p0, p1, p2 (tails, trunks, necks)."""
    t = np.linspace(0, 1, n)[:, None]
    p0, p1, p2 = (np.asarray(p, float) for p in (p0, p1, p2))
    return (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t ** 2 * p2


def lathe(profile, sections: int = 48, center=(0, 0, 0)) -> trimesh.Trimesh:
    """Solid of revolution about +z from ``profile`` [(radius, z), ...] running bottom to top, first and
    last radius 0 (closed). Bottles, wheels' hubs, knobs, bells."""
    m = trimesh.creation.revolve(np.asarray(profile, np.float64), sections=sections)
    m.fix_normals()
    m.apply_translation(center)
    return m


def prism(polygon, thickness: float, plane: str = "xz", offset: float = 0.0) -> trimesh.Trimesh:
    """A convex polygon [(a, b), ...] (any winding) in the ``plane`` ("xz": side profile, extruded along y;
    "xy": plan, extruded along z; "yz": front profile, extruded along x), extruded symmetrically to
    ``thickness`` about ``offset`` along the third axis. Fins, wings, sails, blades, car profiles."""
    poly = np.asarray(polygon, np.float64)
    hull = trimesh.convex.convex_hull(_embed(poly, plane, offset - thickness / 2).tolist()
                                      + _embed(poly, plane, offset + thickness / 2).tolist())
    return hull


def _embed(poly: np.ndarray, plane: str, depth: float) -> np.ndarray:
    a, b = poly[:, 0], poly[:, 1]
    d = np.full(len(poly), depth)
    return {"xz": np.stack([a, d, b], 1), "xy": np.stack([a, b, d], 1), "yz": np.stack([d, a, b], 1)}[plane]


def torus(major: float, minor: float, center=(0, 0, 0), axis: str = "y", sections: int = 48) -> trimesh.Trimesh:
    """A ring of radius ``major`` and tube radius ``minor`` whose hole faces ``axis`` (wheels: "y")."""
    m = trimesh.creation.torus(major_radius=major, minor_radius=minor, major_sections=sections, minor_sections=10)
    if axis != "z":
        m.apply_transform(trimesh.transformations.rotation_matrix(
            math.pi / 2, [1, 0, 0] if axis == "y" else [0, 1, 0]))
    m.apply_translation(center)
    return m


def disc(radius: float, thickness: float, center=(0, 0, 0), axis: str = "y", sections: int = 48) -> trimesh.Trimesh:
    """A short cylinder (wheel, clock face, burner) whose flat faces look along ``axis``."""
    m = trimesh.creation.cylinder(radius=radius, height=thickness, sections=sections)
    if axis != "z":
        m.apply_transform(trimesh.transformations.rotation_matrix(
            math.pi / 2, [1, 0, 0] if axis == "y" else [0, 1, 0]))
    m.apply_translation(center)
    return m
