"""Procedural models of the ten 3D-PC / CO3D categories, built from trimesh primitives.

Each builder ``f(rng) -> list[Part]`` returns the object standing on the ground plane z = 0, centred on
the z axis, its front facing −y, with its largest horizontal extent scaled to roughly 1.2-1.7 m so that
a prop ball of ~0.15 m can hide behind it (CO3D scenes are up to scale anyway). Proportions and colours
vary with ``rng``. Colours avoid saturated red and bright green, the colours of the props.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import trimesh

from infra.registry import Registry

from ..surface import Part

OBJECTS: Registry[Callable[[np.random.Generator], list[Part]]] = Registry("catalogue object builder")


def register(name: str):
    return OBJECTS.register(name)


# ---------------------------------------------------------------------- primitives
def _place(mesh, center=(0, 0, 0), rotation=None):
    if rotation is not None:
        mesh.apply_transform(rotation)
    mesh.apply_translation(center)
    return mesh


def box(extents, center, rotation=None):
    return _place(trimesh.creation.box(extents=extents), center, rotation)


def cylinder(radius, height, center, axis="z", sections=32):
    m = trimesh.creation.cylinder(radius=radius, height=height, sections=sections)
    rot = {"z": None, "x": trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0]),
           "y": trimesh.transformations.rotation_matrix(math.pi / 2, [1, 0, 0])}[axis]
    return _place(m, center, rot)


def frustum(r_bottom, r_top, height, center, sections=32):
    """A truncated cone along z (a pot, a hydrant base)."""
    m = trimesh.creation.cylinder(radius=1.0, height=height, sections=sections)
    v = m.vertices.copy()
    top = v[:, 2] > 0
    v[:, :2] *= np.where(top, r_top, r_bottom)[:, None]
    m = trimesh.Trimesh(v, m.faces, process=False)
    m.fix_normals()
    return _place(m, center)


def ellipsoid(radii, center, subdivisions=3, rotation=None):
    m = trimesh.creation.icosphere(subdivisions=subdivisions)
    m.apply_scale(radii)
    return _place(m, center, rotation)


def torus(major, minor, center, axis="y"):
    m = trimesh.creation.torus(major_radius=major, minor_radius=minor, major_sections=48, minor_sections=16)
    rot = {"z": None, "x": trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0]),
           "y": trimesh.transformations.rotation_matrix(math.pi / 2, [1, 0, 0])}[axis]
    return _place(m, center, rot)


def rot(angle_deg, axis):
    return trimesh.transformations.rotation_matrix(math.radians(angle_deg), axis)


def pick(rng, palette):
    c = np.asarray(palette[rng.integers(len(palette))], float)
    return tuple(np.clip(c * rng.uniform(0.9, 1.1), 0, 1))


WOOD = [(0.55, 0.36, 0.2), (0.42, 0.27, 0.15), (0.68, 0.5, 0.32), (0.35, 0.22, 0.12)]
METAL = [(0.25, 0.25, 0.27), (0.6, 0.6, 0.62), (0.15, 0.15, 0.17)]
PAINT = [(0.15, 0.3, 0.6), (0.85, 0.7, 0.15), (0.8, 0.8, 0.82), (0.2, 0.2, 0.22), (0.5, 0.3, 0.55), (0.9, 0.55, 0.15)]
FABRIC = [(0.35, 0.4, 0.55), (0.6, 0.5, 0.4), (0.45, 0.3, 0.4), (0.3, 0.3, 0.32), (0.7, 0.65, 0.55)]
DARK = (0.08, 0.08, 0.09)


# ---------------------------------------------------------------------- categories
@register("bench")
def bench(rng):
    length, depth, seat_h = rng.uniform(1.4, 1.8), rng.uniform(0.45, 0.6), rng.uniform(0.42, 0.5)
    wood, iron = pick(rng, WOOD), pick(rng, METAL)
    parts = []
    n_slats = 4
    for i in range(n_slats):
        y = -depth / 2 + (i + 0.5) * depth / n_slats
        parts.append(Part(box([length, depth / n_slats * 0.85, 0.04], [0, y, seat_h]), wood, name="seat"))
    back_tilt = rot(rng.uniform(8, 18), [1, 0, 0])
    # three back boards edge to edge (0.145 m tall, 0.14 m apart): a closed backrest, so a ball behind it is
    # hidden from the whole lens aperture (with gaps it is only ever 'partial' and no VPT-Strategy path exists)
    for i in range(3):
        z = seat_h + 0.12 + i * 0.14
        parts.append(Part(box([length, 0.04, 0.145], [0, 0, 0], back_tilt).apply_translation([0, depth / 2 + 0.02 + (z - seat_h) * 0.2, z]), wood, name="back"))
    for sx in (-1, 1):
        x = sx * (length / 2 - 0.1)
        parts.append(Part(box([0.06, 0.06, seat_h], [x, -depth / 2 + 0.05, seat_h / 2]), iron, name="leg"))
        parts.append(Part(box([0.06, 0.06, seat_h + 0.5], [x, depth / 2 + 0.02, (seat_h + 0.5) / 2]), iron, name="leg"))
        parts.append(Part(box([0.06, depth + 0.1, 0.05], [x, 0, seat_h + 0.22]), iron, name="armrest"))
        parts.append(Part(box([0.05, 0.05, 0.22], [x, -depth / 2 + 0.05, seat_h + 0.11]), iron, name="armpost"))
    return parts


@register("car")
def car(rng):
    length, width = rng.uniform(1.6, 1.9), rng.uniform(0.75, 0.85)
    body_h, wheel_r = rng.uniform(0.3, 0.38), rng.uniform(0.15, 0.18)
    paint = pick(rng, PAINT)
    glass = (0.15, 0.2, 0.28)
    z0 = wheel_r * 0.9
    cabin_l = length * rng.uniform(0.5, 0.6)
    cabin_x = rng.uniform(-0.12, 0.02) * length
    parts = [
        Part(box([length, width, body_h], [0, 0, z0 + body_h / 2]), paint, name="body"),
        Part(box([cabin_l, width * 0.86, 0.26], [cabin_x, 0, z0 + body_h + 0.13]), glass, name="windows"),
        Part(box([cabin_l * 0.92, width * 0.88, 0.04], [cabin_x, 0, z0 + body_h + 0.27]), paint, name="roof"),
    ]
    for sx in (-1, 1):
        for sy in (-1, 1):
            x, y = sx * length * 0.32, sy * width / 2
            parts.append(Part(cylinder(wheel_r, 0.12, [x, y, wheel_r], axis="y"), DARK, name="tyre"))
            parts.append(Part(cylinder(wheel_r * 0.55, 0.125, [x, y, wheel_r], axis="y"), (0.7, 0.7, 0.72), name="hub"))
        parts.append(Part(box([0.03, 0.14, 0.07], [length / 2 + 0.01, sx * width * 0.33, z0 + body_h * 0.7]), (1.0, 0.95, 0.75), shade=False, name="headlight"))
        parts.append(Part(box([0.03, 0.14, 0.06], [-length / 2 - 0.01, sx * width * 0.33, z0 + body_h * 0.7]), (0.95, 0.5, 0.1), shade=False, name="taillight"))
    parts.append(Part(box([0.04, width * 0.9, 0.08], [length / 2 + 0.02, 0, z0 + 0.05]), (0.3, 0.3, 0.32), name="bumper"))
    return parts


@register("chair")
def chair(rng):
    w, d, seat_h = rng.uniform(0.8, 1.0), rng.uniform(0.75, 0.95), rng.uniform(0.6, 0.75)
    back_h = rng.uniform(0.7, 0.9)
    wood, cushion = pick(rng, WOOD), pick(rng, FABRIC)
    leg_r = 0.04
    parts = [Part(box([w, d, 0.06], [0, 0, seat_h]), wood, name="seat"),
             Part(box([w * 0.9, d * 0.9, 0.05], [0, 0, seat_h + 0.055]), cushion, name="cushion")]
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(Part(cylinder(leg_r, seat_h, [sx * (w / 2 - 0.06), sy * (d / 2 - 0.06), seat_h / 2]), wood, name="leg"))
        parts.append(Part(box([0.06, 0.06, back_h], [sx * (w / 2 - 0.05), d / 2 - 0.04, seat_h + back_h / 2]), wood, name="post"))
    parts.append(Part(box([w - 0.06, 0.06, back_h * 0.85], [0, d / 2 - 0.04, seat_h + back_h * 0.5]), cushion, name="backrest"))
    parts.append(Part(box([w - 0.04, d - 0.04, 0.12], [0, 0, seat_h - 0.09]), wood, name="apron"))
    return parts


@register("couch")
def couch(rng):
    length, depth = rng.uniform(1.5, 1.8), rng.uniform(0.75, 0.9)
    fabric = pick(rng, FABRIC)
    darker = tuple(np.asarray(fabric) * 0.8)
    base_h, seat_h = 0.28, rng.uniform(0.42, 0.48)
    arm_w = rng.uniform(0.12, 0.18)
    parts = [
        Part(box([length, depth, base_h], [0, 0, 0.08 + base_h / 2]), darker, name="base"),
        Part(box([length, 0.2, rng.uniform(0.75, 0.9)], [0, depth / 2 - 0.1, 0.08 + 0.4]), fabric, name="back"),
    ]
    n_cush = 2 + int(rng.integers(2))
    inner = length - 2 * arm_w
    for i in range(n_cush):
        x = -inner / 2 + (i + 0.5) * inner / n_cush
        parts.append(Part(box([inner / n_cush * 0.96, depth - 0.22, seat_h - base_h - 0.06],
                              [x, -0.1, 0.08 + base_h + (seat_h - base_h - 0.06) / 2]), fabric, name="cushion"))
    for sx in (-1, 1):
        parts.append(Part(box([arm_w, depth, 0.62], [sx * (length / 2 - arm_w / 2), 0, 0.08 + 0.31]), fabric, name="arm"))
        for sy in (-1, 1):
            parts.append(Part(cylinder(0.03, 0.08, [sx * (length / 2 - 0.08), sy * (depth / 2 - 0.08), 0.04]), DARK, name="foot"))
    return parts


@register("hydrant")
def hydrant(rng):
    s = rng.uniform(1.0, 1.25)
    paint = pick(rng, [(0.9, 0.75, 0.1), (0.15, 0.35, 0.75), (0.75, 0.75, 0.78), (0.95, 0.5, 0.1)])
    cap = pick(rng, [(0.8, 0.8, 0.82), (0.2, 0.2, 0.22), (0.9, 0.9, 0.9)])
    r = 0.2 * s
    h = 0.7 * s
    parts = [
        Part(frustum(r * 1.6, r * 1.3, 0.08 * s, [0, 0, 0.04 * s]), paint, name="flange"),
        Part(cylinder(r, h, [0, 0, 0.08 * s + h / 2]), paint, name="barrel"),
        Part(cylinder(r * 1.25, 0.07 * s, [0, 0, 0.08 * s + h]), paint, name="rim"),
        Part(ellipsoid([r * 1.05, r * 1.05, r * 0.8], [0, 0, 0.08 * s + h + 0.03 * s]), cap, name="dome"),
        Part(cylinder(r * 0.3, 0.12 * s, [0, 0, 0.08 * s + h + r * 0.8]), cap, name="nut"),
        Part(cylinder(r * 0.45, r * 2.9, [0, 0, 0.08 * s + h * 0.68], axis="x"), paint, name="side_nozzles"),
        Part(cylinder(r * 0.6, r * 1.0, [0, -r * 0.9, 0.08 * s + h * 0.55], axis="y"), paint, name="pumper"),
        Part(cylinder(r * 0.35, 0.05 * s, [0, -r * 1.42, 0.08 * s + h * 0.55], axis="y"), cap, name="pumper_cap"),
    ]
    for sx in (-1, 1):
        parts.append(Part(cylinder(r * 0.32, 0.05 * s, [sx * r * 1.48, 0, 0.08 * s + h * 0.68], axis="x"), cap, name="nozzle_cap"))
    return parts


@register("laptop")
def laptop(rng):
    w, d = rng.uniform(1.3, 1.6), rng.uniform(0.9, 1.05)
    t = 0.05
    shell = pick(rng, [(0.75, 0.75, 0.78), (0.2, 0.2, 0.22), (0.55, 0.55, 0.6)])
    screen_col = pick(rng, [(0.2, 0.35, 0.6), (0.1, 0.15, 0.3), (0.3, 0.5, 0.7)])
    open_deg = rng.uniform(100, 125)
    parts = [
        Part(box([w, d, t], [0, 0, t / 2]), shell, name="base"),
        Part(box([w * 0.88, d * 0.42, 0.01], [0, d * 0.05, t + 0.004]), (0.12, 0.12, 0.13), name="keyboard"),
        Part(box([w * 0.3, d * 0.22, 0.008], [0, -d * 0.32, t + 0.002]), tuple(np.asarray(shell) * 0.85), name="touchpad"),
    ]
    hinge = rot(-(open_deg - 90), [1, 0, 0])
    lid = box([w, t * 0.8, d], [0, 0, d / 2])
    lid.apply_transform(hinge)
    lid.apply_translation([0, d / 2, t])
    parts.append(Part(lid, shell, name="lid"))
    scr = box([w * 0.9, 0.01, d * 0.85], [0, -t * 0.42, d / 2 + 0.01])
    scr.apply_transform(hinge)
    scr.apply_translation([0, d / 2, t])
    parts.append(Part(scr, screen_col, shade=False, name="screen"))
    return parts


@register("motorcycle")
def motorcycle(rng):
    L = rng.uniform(1.5, 1.75)
    wr = rng.uniform(0.26, 0.3)
    paint = pick(rng, PAINT)
    chrome = (0.72, 0.72, 0.75)
    wx = L / 2 - wr
    parts = []
    for x in (-wx, wx):
        parts.append(Part(torus(wr - 0.05, 0.05, [x, 0, wr]), DARK, name="tyre"))
        parts.append(Part(cylinder(wr - 0.09, 0.02, [x, 0, wr], axis="y"), (0.45, 0.45, 0.47), name="wheel_disc"))
        parts.append(Part(cylinder(0.06, 0.12, [x, 0, wr], axis="y"), chrome, name="hub"))
    # fork from front wheel to handlebar
    fork = cylinder(0.025, 0.75, [0, 0, 0])
    fork.apply_transform(rot(-25, [0, 1, 0]))
    for sy in (-1, 1):
        f = fork.copy()
        f.apply_translation([wx - 0.15, sy * 0.07, wr + 0.34])
        parts.append(Part(f, chrome, name="fork"))
    parts += [
        Part(cylinder(0.02, 0.65, [wx - 0.3, 0, wr + 0.7], axis="y"), DARK, name="handlebar"),
        Part(ellipsoid([0.28, 0.16, 0.13], [wx - 0.55, 0, wr + 0.45]), paint, name="tank"),
        Part(box([0.5, 0.24, 0.08], [-0.05, 0, wr + 0.42], rot(4, [0, 1, 0])), DARK, name="seat"),
        Part(box([0.45, 0.22, 0.3], [0.05, 0, wr + 0.1]), (0.35, 0.35, 0.38), name="engine"),
        Part(box([L * 0.55, 0.08, 0.06], [-0.1, 0, wr + 0.3], rot(-8, [0, 1, 0])), paint, name="frame"),
        Part(box([0.4, 0.2, 0.12], [-wx + 0.12, 0, wr + 0.36]), paint, name="tail"),
        Part(cylinder(0.04, 0.7, [-0.3, 0.16, wr - 0.05], axis="x"), chrome, name="exhaust"),
        Part(ellipsoid([0.06, 0.09, 0.09], [wx - 0.18, 0, wr + 0.62]), (1.0, 0.95, 0.75), shade=False, name="headlight"),
    ]
    return parts


@register("plant")
def plant(rng):
    pot_r = rng.uniform(0.3, 0.38)
    pot_h = rng.uniform(0.45, 0.6)
    pot = pick(rng, [(0.7, 0.4, 0.25), (0.85, 0.85, 0.8), (0.3, 0.35, 0.45), (0.55, 0.45, 0.35)])
    leaf_cols = [(0.18, 0.35, 0.15), (0.25, 0.4, 0.12), (0.12, 0.3, 0.22), (0.3, 0.42, 0.2)]
    parts = [
        Part(frustum(pot_r * 0.75, pot_r, pot_h, [0, 0, pot_h / 2]), pot, name="pot"),
        Part(cylinder(pot_r * 0.95, 0.02, [0, 0, pot_h - 0.02]), (0.25, 0.17, 0.1), name="soil"),
    ]
    n_leaves = int(rng.integers(18, 26))
    for _ in range(n_leaves):
        az = rng.uniform(0, 2 * math.pi)
        el = rng.uniform(15, 80)
        length = rng.uniform(0.35, 0.55)
        # a leaf: a flattened ellipsoid pointing outwards and upwards from the soil
        leaf = ellipsoid([length / 2, 0.07, 0.015], [0, 0, 0], subdivisions=2)
        leaf.apply_transform(rot(-el, [0, 1, 0]))
        leaf.apply_transform(rot(math.degrees(az), [0, 0, 1]))
        dirn = np.array([math.cos(az) * math.cos(math.radians(el)), math.sin(az) * math.cos(math.radians(el)), math.sin(math.radians(el))])
        leaf.apply_translation(np.array([0, 0, pot_h]) + dirn * length / 2 * 0.9)
        parts.append(Part(leaf, pick(rng, leaf_cols), name="leaf", spacing=0.01, two_sided=True))
    parts.append(Part(ellipsoid([0.25, 0.25, 0.2], [0, 0, pot_h + 0.18]), pick(rng, leaf_cols), name="foliage"))
    return parts


@register("suitcase")
def suitcase(rng):
    w, d, h = rng.uniform(0.75, 0.9), rng.uniform(0.38, 0.48), rng.uniform(1.05, 1.25)
    shell = pick(rng, [(0.15, 0.22, 0.45), (0.45, 0.3, 0.55), (0.55, 0.55, 0.58), (0.9, 0.55, 0.15), (0.2, 0.2, 0.22)])
    z0 = 0.07
    parts = [Part(box([w, d, h], [0, 0, z0 + h / 2]), shell, name="shell")]
    for i in range(4):
        x = -w / 2 + (i + 1) * w / 5
        parts.append(Part(box([0.04, d + 0.02, h * 0.9], [x, 0, z0 + h / 2]), tuple(np.asarray(shell) * 0.8), name="ridge"))
    parts.append(Part(box([w + 0.01, d + 0.01, 0.03], [0, 0, z0 + h * 0.5]), (0.3, 0.3, 0.32), name="zip"))
    for sx in (-1, 1):
        parts.append(Part(cylinder(0.018, 0.45, [sx * w * 0.3, d / 2 - 0.05, z0 + h + 0.22]), (0.6, 0.6, 0.62), name="handle_rod"))
        for sy in (-1, 1):
            parts.append(Part(cylinder(0.035, 0.03, [sx * (w / 2 - 0.06), sy * (d / 2 - 0.06), 0.035], axis="x"), DARK, name="wheel"))
    parts.append(Part(box([w * 0.6 + 0.04, 0.05, 0.05], [0, d / 2 - 0.05, z0 + h + 0.45]), DARK, name="handle"))
    parts.append(Part(box([0.22, 0.05, 0.04], [0, 0, z0 + h + 0.03]), DARK, name="top_handle"))
    return parts


@register("umbrella")
def umbrella(rng):
    """An open umbrella resting on the ground on its canopy rim, shaft and handle sticking up."""
    R = rng.uniform(0.75, 0.9)
    ch = R * rng.uniform(0.55, 0.7)
    i, j = rng.choice(len(PAINT), 2, replace=False)
    cols = [np.asarray(PAINT[i]), np.asarray(PAINT[j])]
    canopy = trimesh.creation.cone(radius=R, height=ch, sections=64)
    canopy.update_faces(canopy.face_normals[:, 2] > -0.99)  # drop the base cap: a canopy is an open shell
    canopy.remove_unreferenced_vertices()
    n_seg = 8
    ribs = []
    for k in range(n_seg):
        a = 2 * math.pi * (k + 0.5) / n_seg
        rib = trimesh.creation.cylinder(radius=0.012, segment=[[0, 0, ch], [R * math.cos(a), R * math.sin(a), 0]], sections=8)
        ribs.append(rib)
    shaft = cylinder(0.015, R * 1.5, [0, 0, ch - R * 0.75 + 0.1])
    handle = torus(0.06, 0.018, [0.06, 0, ch - R * 1.5 + 0.1], axis="y")
    tip = cylinder(0.02, 0.12, [0, 0, ch + 0.06])
    tilt = rot(rng.uniform(35, 55), [1, 0, 0]) @ rot(rng.uniform(0, 360), [0, 0, 1])
    pieces = [canopy, shaft, handle, tip, *ribs]
    for m in pieces:
        m.apply_transform(tilt)
    lift = -min(m.bounds[0, 2] for m in pieces)
    for m in pieces:
        m.apply_translation([0, 0, lift])
    origin = np.array([0, 0, lift])
    basis = tilt[:3, :3]

    def canopy_color(p, n):
        # colour alternates by panel around the (tilted) shaft axis
        q = (p - origin) @ basis
        seg = np.floor((np.arctan2(q[:, 1], q[:, 0]) + math.pi) / (2 * math.pi) * n_seg).astype(int) % 2
        return np.where(seg[:, None] == 0, cols[0], cols[1])

    rib = trimesh.util.concatenate(ribs)
    return [Part(canopy, canopy_color, two_sided=True, name="canopy", spacing=0.01),
            Part(rib, (0.15, 0.15, 0.16), name="ribs", spacing=0.006),
            Part(shaft, (0.2, 0.2, 0.22), name="shaft"),
            Part(tip, (0.2, 0.2, 0.22), name="tip"),
            Part(handle, pick(rng, WOOD), name="handle")]
