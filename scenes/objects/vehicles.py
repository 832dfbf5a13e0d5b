"""Vehicles: airplane, bicycle, boat, car, truck (model units: the vehicle's length is about 1)."""
from __future__ import annotations

import numpy as np

from . import category
import trimesh

from .shapes import box, disc, ellipsoid, prism, rod, torus, tube


def _wheels(parts, xs, r, track, width, hub=True):
    for i, x in enumerate(xs):
        for sy in (1, -1):
            parts.append((f"tyre{i}{sy}", disc(r, width, [x, sy * track / 2, r], axis="y", sections=40)))
            if hub:
                parts.append((f"hub{i}{sy}", disc(r * 0.55, width * 1.1, [x, sy * track / 2, r], axis="y", sections=32)))


@category("airplane", view=(-35, 25), description="an airliner: long fuselage, swept wings with engines, tail fin and tailplane")
def airplane(p):
    L = 1.0
    R = p.uniform("fuselage_r", 0.045, 0.06)
    span = p.uniform("wingspan", 0.8, 1.05)
    sweep = p.uniform("sweep", 0.1, 0.25)
    chord = p.uniform("wing_chord", 0.14, 0.2)
    fin_h = p.uniform("fin_h", 0.13, 0.19)
    engines = p.integer("engines_per_wing", 0, 2)
    z = 0.15
    xs = np.linspace(-L / 2, L / 2, 24)
    # fuselage radius along x: a rounded nose, a straight tube, a tail tapering upwards
    r = np.where(xs > L * 0.38, R * np.sqrt(np.clip(1 - ((xs - L * 0.38) / (L * 0.12)) ** 2, 0.01, 1)),
                 np.where(xs < -L * 0.25, R * (0.3 + 0.7 * (xs + L / 2) / (L * 0.25)), R))
    zc = z + np.where(xs < -L * 0.25, (-L * 0.25 - xs) * 0.35, 0)
    parts = [("fuselage", tube(np.stack([xs, np.zeros_like(xs), zc], 1), r, 20))]
    x0 = L * 0.05
    for sy in (1, -1):
        wing = [(x0 + chord / 2, 0), (x0 - chord / 2, 0), (x0 - sweep - chord * 0.35, sy * span / 2),
                (x0 - sweep, sy * span / 2)]
        parts.append((f"wing{sy}", prism(wing, 0.012, plane="xy", offset=z - R * 0.4)))
        tail = [(-L * 0.36, 0), (-L * 0.46, 0), (-L * 0.5, sy * span * 0.17), (-L * 0.45, sy * span * 0.17)]
        parts.append((f"tailplane{sy}", prism(tail, 0.008, plane="xy", offset=zc[2] + R * 0.1)))
        for k in range(engines):
            f = 0.3 + 0.35 * k
            ex, ey = x0 - sweep * f * 1.1 + chord * 0.3, sy * span / 2 * f
            parts.append((f"engine{sy}{k}", rod([ex - 0.08, ey, z - R * 1.3], [ex + 0.06, ey, z - R * 1.3], R * 0.45, R * 0.4, 16)))
    fin = [(-L * 0.33, zc[3] + R * 0.5), (-L * 0.47, zc[1]), (-L * 0.5, zc[1] + fin_h), (-L * 0.44, zc[1] + fin_h)]
    parts.append(("fin", prism(fin, 0.012, plane="xz")))
    return parts


@category("bicycle", view=(0, 5), description="a bicycle: two spoked wheels, diamond frame, fork, handlebar, saddle, pedals")
def bicycle(p):
    R = p.uniform("wheel_r", 0.3, 0.36)
    base = p.uniform("wheelbase", 0.95, 1.1)
    seat_h = p.uniform("seat_h", 0.85, 1.0)
    bar_h = p.uniform("bar_h", 0.85, 1.05)
    tube_r = p.uniform("tube_r", 0.014, 0.022)
    spokes = p.integer("spokes", 8, 16)
    rear, front = np.array([-base / 2, 0, R]), np.array([base / 2, 0, R])
    parts = []
    for name, c in (("rear", rear), ("front", front)):
        parts.append((f"{name}_tyre", torus(R, 0.022, c, axis="y")))
        parts.append((f"{name}_hub", disc(0.03, 0.06, c, axis="y", sections=16)))
        for k in range(spokes):
            a = 2 * np.pi * k / spokes
            parts.append((f"{name}_spoke{k}", rod(c, c + R * np.array([np.cos(a), 0, np.sin(a)]), 0.004, 0.004, 5)))
    bb = np.array([-base * 0.08, 0, R * 0.85])  # bottom bracket
    seat = np.array([-base * 0.2, 0, seat_h - 0.05])
    head_top = np.array([base * 0.32, 0, bar_h - 0.12])
    head_bot = head_top + (front - head_top) * 0.3
    for name, a, b in (("down_tube", bb, head_bot), ("top_tube", seat - [0.0, 0, 0.08], head_top),
                       ("seat_tube", bb, seat), ("chain_stay", bb, rear), ("seat_stay", seat - [0, 0, 0.08], rear),
                       ("fork", head_bot, front), ("head_tube", head_bot, head_top)):
        parts.append((name, rod(a, b, tube_r, tube_r, 10)))
    stem = np.array([head_top[0] - 0.02, 0, bar_h])
    parts.append(("stem", rod(head_top, stem, tube_r, tube_r, 10)))
    parts.append(("handlebar", rod(stem + [0, -0.25, 0], stem + [0, 0.25, 0], 0.014, 0.014, 10)))
    for sy in (1, -1):
        parts.append((f"grip{sy}", rod(stem + [0, sy * 0.25, 0], stem + [-0.1, sy * 0.27, 0.0], 0.018, 0.018, 10)))
    parts.append(("saddle", ellipsoid([0.13, 0.06, 0.03], seat + [0.0, 0, 0.03], subdivisions=2)))
    parts.append(("chainring", disc(0.1, 0.015, bb + [0, 0.05, 0], axis="y", sections=32)))
    crank = p.uniform("crank_deg", 0, 180)
    a = np.radians(crank)
    for sy in (1, -1):
        end = bb + [sy * 0.17 * np.cos(a), sy * 0.08, sy * 0.17 * np.sin(a)]
        parts.append((f"crank{sy}", rod(bb + [0, sy * 0.06, 0], end, 0.012, 0.012, 8)))
        parts.append((f"pedal{sy}", box([0.09, 0.05, 0.02], end + [0, sy * 0.03, 0])))
    return parts


@category("boat", view=(-30, 15), description="a boat: a pointed hull with either a mast and sails or a cabin")
def boat(p):
    L = 1.0
    beam = p.uniform("beam", 0.24, 0.32)
    depth = p.uniform("hull_depth", 0.12, 0.18)
    # ImageNet's boats (the 16-class mapping) are a canoe, a fireboat, a lifeboat, a speedboat and one
    # sailing boat (yawl): one boat in four is a sailboat (whose triangle of sails the real-silhouette check
    # calls a bird: docs/objects.md)
    kind = p.choice("kind", ("motorboat", "sailboat", "motorboat", "motorboat"))
    # hull: convex hull of deck outline (pointed bow at +x, transom at -x) and a narrower keel line
    deck = [(x, y) for x, y in ((-L / 2, beam * 0.4), (-L * 0.1, beam / 2), (L * 0.25, beam * 0.4), (L / 2, 0))]
    pts = [(x, s * y, depth) for x, y in deck for s in (1, -1)]
    pts += [(-L * 0.46, s * beam * 0.25, depth * 0.25) for s in (1, -1)] + [(L * 0.3, 0, 0.0), (-L * 0.3, 0, 0.0)]
    parts = [("hull", trimesh.convex.convex_hull(np.asarray(pts)))]
    if kind == "sailboat":
        mast_h = p.uniform("mast_h", 0.9, 1.2)
        mx = L * 0.08
        parts.append(("mast", rod([mx, 0, depth], [mx, 0, depth + mast_h], 0.012, 0.009, 10)))
        boom = depth + 0.08
        parts.append(("boom", rod([mx, 0, boom], [-L * 0.38, 0, boom], 0.01, 0.01, 8)))
        parts.append(("mainsail", prism([(mx - 0.02, boom + 0.02), (-L * 0.37, boom + 0.02), (mx - 0.02, depth + mast_h * 0.97)], 0.006)))
        parts.append(("jib", prism([(mx + 0.03, depth + mast_h * 0.8), (mx + 0.03, depth + 0.06), (L * 0.45, depth + 0.03)], 0.006, offset=0.0)))
    else:
        cab_l = p.uniform("cabin_len", 0.3, 0.45)
        cab_h = p.uniform("cabin_h", 0.12, 0.18)
        cx = -L * 0.05
        parts.append(("cabin", prism([(cx - cab_l / 2, depth), (cx + cab_l / 2, depth), (cx + cab_l / 2 - cab_h * 0.6, depth + cab_h),
                                      (cx - cab_l / 2, depth + cab_h)], beam * 0.7)))
        parts.append(("windscreen", prism([(cx + cab_l / 2 - 0.01, depth + 0.02), (cx + cab_l / 2 - cab_h * 0.55, depth + cab_h - 0.02),
                                           (cx + cab_l / 2 - cab_h * 0.55 - 0.03, depth + cab_h - 0.02), (cx + cab_l / 2 - 0.04, depth + 0.02)], beam * 0.72)))
        parts.append(("rail", rod([-L * 0.45, 0, depth + 0.05], [-L * 0.45, 0, depth + 0.05 + cab_h * 0.5], 0.008, 0.008, 6)))
    return parts


def _profile_body(parts, L, W, zs, xs, name="body"):
    """A vehicle body: the convex side profile (x, z) extruded to width W."""
    parts.append((name, prism(list(zip(xs, zs)), W)))


@category("car", view=(30, 12), description="a car: low body with bonnet and boot, glass cabin, four wheels")
def car(p):
    L = 1.0
    W = p.uniform("width", 0.36, 0.42)
    r = p.uniform("wheel_r", 0.08, 0.095)
    body_h = p.uniform("body_h", 0.13, 0.17)
    roof = p.uniform("roof_h", 0.1, 0.14)
    cab = p.uniform("cabin_len", 0.42, 0.56)
    style = p.choice("style", ("sedan", "hatchback"))
    z0 = r * 0.55
    zt = z0 + body_h
    parts = []
    _profile_body(parts, L, W, [z0, z0, zt * 0.9, zt, zt, zt * 0.85], [-L / 2, L / 2, L / 2, L * 0.3, -L * 0.4, -L / 2])
    back = -L * (0.42 if style == "hatchback" else 0.28)
    front = back + cab
    parts.append(("cabin", prism([(back - (0.02 if style == "hatchback" else 0.08), zt), (front + 0.1, zt),
                                  (front - 0.02, zt + roof), (back + 0.04, zt + roof)], W * 0.86)))
    parts.append(("windscreen", prism([(front + 0.085, zt + 0.005), (front - 0.015, zt + roof - 0.012),
                                       (front - 0.03, zt + roof - 0.012), (front + 0.065, zt + 0.005)], W * 0.88)))
    parts.append(("side_window", prism([(back + 0.02, zt + 0.015), (front + 0.05, zt + 0.015), (front - 0.025, zt + roof - 0.02),
                                        (back + 0.05, zt + roof - 0.02)], W * 0.88)))
    _wheels(parts, [L * 0.32, -L * 0.31], r, W * 0.9, 0.06)
    for sy in (1, -1):
        parts.append((f"headlight{sy}", box([0.02, 0.07, 0.03], [L / 2, sy * W * 0.33, z0 + body_h * 0.7])))
    return parts


@category("truck", view=(35, 12), description="a lorry: tall cab with windscreen, long box trailer body, six wheels")
def truck(p):
    L = 1.0
    W = p.uniform("width", 0.28, 0.34)
    r = p.uniform("wheel_r", 0.06, 0.075)
    cab_l = p.uniform("cab_len", 0.18, 0.24)
    # box trucks stand about half as tall as they are long (e.g. 7 m long, 3.5 m tall)
    cab_h = p.uniform("cab_h", 0.36, 0.42)
    cargo_h = p.uniform("cargo_h", 0.44, 0.52)
    kind = p.choice("kind", ("box", "tipper"))
    z0 = r * 1.2
    parts = [("chassis", box([L * 0.98, W * 0.8, 0.05], [0, 0, z0]))]
    parts.append(("cab", prism([(L / 2 - cab_l, z0), (L / 2, z0), (L / 2, z0 + cab_h * 0.55), (L / 2 - cab_l * 0.25, z0 + cab_h),
                                (L / 2 - cab_l, z0 + cab_h)], W)))
    parts.append(("windscreen", prism([(L / 2 + 0.003, z0 + cab_h * 0.6), (L / 2 - cab_l * 0.22, z0 + cab_h * 0.95),
                                       (L / 2 - cab_l * 0.6, z0 + cab_h * 0.95), (L / 2 - cab_l * 0.6, z0 + cab_h * 0.6)], W * 1.02)))
    cargo_l = L - cab_l - 0.03
    x1 = L / 2 - cab_l - 0.03
    if kind == "box":
        parts.append(("cargo", box([cargo_l, W * 1.04, cargo_h], [x1 - cargo_l / 2, 0, z0 + 0.03 + cargo_h / 2])))
    else:
        h = cargo_h * 0.6
        parts.append(("cargo", prism([(x1 - cargo_l, z0 + 0.03), (x1, z0 + 0.03), (x1 + 0.02, z0 + 0.03 + h), (x1 - cargo_l - 0.01, z0 + 0.03 + h)], W)))
    parts.append(("bumper", box([0.03, W * 0.95, 0.05], [L / 2, 0, z0 - 0.01])))
    _wheels(parts, [L / 2 - cab_l * 0.55, -L * 0.15, -L * 0.33], r, W * 0.85, 0.05)
    return parts
