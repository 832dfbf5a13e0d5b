"""The 3D-PC's categories the 16-class set lacks (Linsley et al., 2024: bench, couch, hydrant, laptop,
motorcycle, plant, suitcase, umbrella; car and chair are shared with the 16 classes): line-drawing models
of the same objects as the splat scenes' coloured ones in ``scenes/catalogue/objects.py`` (separate code:
these are closed meshes with recorded parameters, drawn by ``render/drawing.py``).

Model units; the longest dimension is about 1. Conventions of :mod:`scenes.objects.shapes`: +z up, standing
on z = 0, +x the object's front (where one sits on a bench or couch, the laptop's keyboard edge, the
hydrant's pumper nozzle, the motorcycle's front wheel). ``tests/test_objects.py`` measures each category's
defining geometry (a bench's seat and backrest on legs, an umbrella's canopy wider than its pole is long, ...).
"""
from __future__ import annotations

import numpy as np

from . import category
from .shapes import box, disc, ellipsoid, lathe, prism, rod, torus, tube


@category("bench", view=(50, 18), description="a park bench: a long seat of slats and a backrest of slats on two "
          "cast side frames with legs and armrests")
def bench(p):
    L = 1.0  # along y
    D = p.uniform("seat_depth", 0.24, 0.3)
    h = p.uniform("seat_h", 0.26, 0.3)
    back = p.uniform("back_h", 0.2, 0.28)
    lean = np.radians(p.uniform("back_lean_deg", 8, 18))
    n_seat = p.integer("seat_slats", 3, 5)
    n_back = p.integer("back_slats", 2, 3)
    arms = p.choice("armrests", (True, True, False))
    parts = []
    for k in range(n_seat):
        x = D / 2 - (k + 0.5) * D / n_seat
        parts.append((f"seat_slat{k}", box([D / n_seat * 0.8, L, 0.025], [x, 0, h])))
    # the backrest's slats follow the back posts, leaning back from the rear of the seat
    for k in range(n_back):
        t = 0.3 + 0.7 * (k + 0.5) / n_back
        x, z = -D / 2 - np.sin(lean) * back * t, h + 0.02 + np.cos(lean) * back * t
        parts.append((f"back_slat{k}", box([0.02, L, back * 0.7 / n_back], [x, 0, z], rotation_deg=np.degrees(lean),
                                           axis=(0, 1, 0))))
    for sy in (1, -1):
        y = sy * (L / 2 - 0.06)
        # side frame: front leg, rear leg continuing into the back post, a rail under the seat
        parts.append((f"front_leg{sy}", box([0.03, 0.03, h], [D / 2 - 0.03, y, h / 2])))
        top = np.array([-D / 2 - np.sin(lean) * back, y, h + np.cos(lean) * back])
        parts.append((f"rear_leg{sy}", tube(np.stack([[-D / 2 + 0.02, y, 0.0], [-D / 2, y, h], top]), 0.018, 8)))
        parts.append((f"rail{sy}", box([D, 0.03, 0.025], [0, y, h - 0.03])))
        if arms:
            parts.append((f"armrest{sy}", box([D * 0.85, 0.035, 0.025], [0.0, y, h + 0.14])))
            parts.append((f"arm_post{sy}", box([0.025, 0.025, 0.14], [D / 2 - 0.04, y, h + 0.07])))
    return parts


@category("couch", view=(50, 18), description="a couch: a long upholstered base with seat cushions, a tall back, "
          "two arms and short feet")
def couch(p):
    L = 1.0  # along y
    D = p.uniform("depth", 0.42, 0.5)
    base_h = p.uniform("base_h", 0.14, 0.18)
    back_h = p.uniform("back_h", 0.45, 0.55)
    arm_h = p.uniform("arm_h", 0.3, 0.36)
    arm_w = p.uniform("arm_w", 0.08, 0.12)
    n = p.integer("cushions", 2, 3)
    feet = 0.04
    parts = [("base", box([D, L, base_h], [0, 0, feet + base_h / 2])),
             ("back", box([0.12, L, back_h - feet], [-D / 2 + 0.06, 0, feet + (back_h - feet) / 2]))]
    inner = L - 2 * arm_w
    cush_h = 0.08
    for k in range(n):
        y = -inner / 2 + (k + 0.5) * inner / n
        parts.append((f"cushion{k}", box([D - 0.14, inner / n * 0.97, cush_h], [0.07 - 0.005, y, feet + base_h + cush_h / 2])))
        parts.append((f"back_cushion{k}", box([0.08, inner / n * 0.97, back_h * 0.45],
                                              [-D / 2 + 0.16, y, feet + base_h + cush_h + back_h * 0.22], rotation_deg=10,
                                              axis=(0, 1, 0))))
    for sy in (1, -1):
        y = sy * (L / 2 - arm_w / 2)
        parts.append((f"arm{sy}", box([D, arm_w, arm_h - feet], [0, y, feet + (arm_h - feet) / 2])))
        parts.append((f"arm_roll{sy}", rod([-D / 2, y, arm_h], [D / 2, y, arm_h], arm_w / 2, arm_w / 2, 16)))
        for sx in (1, -1):
            parts.append((f"foot{sx}{sy}", disc(0.025, feet, [sx * (D / 2 - 0.05), sy * (L / 2 - 0.05), feet / 2], axis="z",
                                                sections=12)))
    return parts


@category("hydrant", view=(30, 10), description="a fire hydrant: a flanged barrel with a domed cap and top nut, two "
          "side hose nozzles and a large front pumper nozzle with caps")
def hydrant(p):
    R = p.uniform("barrel_r", 0.13, 0.17)
    H = p.uniform("barrel_h", 0.55, 0.68)
    nz = p.uniform("nozzle_h", 0.6, 0.75)  # height of the nozzles as a fraction of the barrel
    flange = 0.06
    parts = [("flange", lathe([(0, 0), (R * 1.5, 0), (R * 1.5, flange * 0.5), (R * 1.15, flange), (0, flange)], 32)),
             ("barrel", disc(R, H, [0, 0, flange + H / 2], axis="z", sections=32)),
             ("rim", disc(R * 1.25, 0.05, [0, 0, flange + H], axis="z", sections=32))]
    top = flange + H + 0.025
    parts.append(("cap", lathe([(0, 0), (R * 1.1, 0), (R * 1.05, R * 0.35), (R * 0.8, R * 0.7), (R * 0.4, R * 0.9), (0, R * 0.92)],
                               32, center=(0, 0, top))))
    parts.append(("nut", disc(R * 0.28, R * 0.35, [0, 0, top + R * 0.95], axis="z", sections=5)))
    z = flange + H * nz
    for sy in (1, -1):
        parts.append((f"hose_nozzle{sy}", rod([0, 0, z], [0, sy * R * 1.6, z], R * 0.38, R * 0.38, 16)))
        parts.append((f"hose_cap{sy}", disc(R * 0.3, R * 0.25, [0, sy * R * 1.7, z], axis="y", sections=5)))
    zp = flange + H * (nz - 0.18)
    parts.append(("pumper", rod([0, 0, zp], [R * 1.55, 0, zp], R * 0.55, R * 0.55, 20)))
    parts.append(("pumper_cap", disc(R * 0.42, R * 0.3, [R * 1.65, 0, zp], axis="x", sections=5)))
    return parts


@category("laptop", view=(40, 28), description="an open laptop: a thin base with a keyboard and touchpad, the lid "
          "hinged at its rear edge with a screen")
def laptop(p):
    W = 1.0  # along y
    D = p.uniform("depth", 0.64, 0.72)
    t = p.uniform("thickness", 0.025, 0.035)
    angle = p.uniform("open_deg", 100, 125)  # between the base and the lid
    parts = [("base", box([D, W, t], [0, 0, t / 2]))]
    # keys: a grid on the rear part of the base, a touchpad in front of them
    rows, cols = 5, 13
    kx0, kx1 = -D / 2 + 0.06, D * 0.08
    kw, kd = (W - 0.12) / cols, (kx1 - kx0) / rows
    for r in range(rows):
        for c in range(cols):
            parts.append((f"key{r}_{c}", box([kd * 0.78, kw * 0.8, 0.006], [kx0 + (r + 0.5) * kd, -W / 2 + 0.06 + (c + 0.5) * kw, t + 0.003])))
    parts.append(("touchpad", box([D * 0.26, W * 0.3, 0.004], [D * 0.3, 0, t + 0.002])))
    a = np.pi - np.radians(angle)  # the lid's angle above the horizontal, measured from behind
    lid_dir = np.array([-np.cos(a), 0, np.sin(a)])  # from the hinge, up and back
    n_front = np.array([np.sin(a), 0, np.cos(a)])  # the screen's normal, towards the user
    hinge = np.array([-D / 2, 0, t])
    tilt = -(angle - 90)
    lid_t = t * 0.8
    parts.append(("lid", box([lid_t, W, D], hinge + lid_dir * D / 2 - n_front * lid_t / 2, rotation_deg=tilt, axis=(0, 1, 0))))
    # the screen stands 0.008 proud of the lid, so its rim draws as a solid line (thinner, it drew as dots)
    parts.append(("screen", box([0.008, W * 0.9, D * 0.84], hinge + lid_dir * D * 0.52 + n_front * 0.004, rotation_deg=tilt,
                                axis=(0, 1, 0))))
    return parts


@category("motorcycle", view=(15, 8), description="a motorcycle: two spoked wheels, a raked front fork to the "
          "handlebar, fuel tank, seat, engine block, exhaust pipe and mudguards")
def motorcycle(p):
    r = p.uniform("wheel_r", 0.16, 0.19)
    base = p.uniform("wheelbase", 0.6, 0.68)
    rake = np.radians(p.uniform("rake_deg", 22, 32))
    seat_h = p.uniform("seat_h", 0.4, 0.46)
    bar_h = p.uniform("bar_h", 0.52, 0.6)
    spokes = p.integer("spokes", 0, 1) * 10  # 0: cast wheels (discs), 10: spoked
    rear, front = np.array([-base / 2, 0, r]), np.array([base / 2, 0, r])
    parts = []
    for name, c in (("rear", rear), ("front", front)):
        parts.append((f"{name}_tyre", torus(r - 0.03, 0.03, c, axis="y", sections=40)))
        parts.append((f"{name}_hub", disc(0.035, 0.07, c, axis="y", sections=16)))
        if spokes:
            for k in range(spokes):
                ang = 2 * np.pi * k / spokes
                parts.append((f"{name}_spoke{k}", rod(c, c + (r - 0.05) * np.array([np.cos(ang), 0, np.sin(ang)]), 0.004, 0.004, 5)))
        else:
            parts.append((f"{name}_wheel", disc(r - 0.045, 0.02, c, axis="y", sections=40)))
        parts.append((f"{name}_mudguard", tube([c + (r + 0.025) * np.array([np.cos(t), 0, np.sin(t)]) for t in
                                                np.radians(np.linspace(20, 160, 9) if name == "front" else np.linspace(30, 170, 9))],
                                               0.012, 8)))
    head = front + np.array([-np.sin(rake), 0, np.cos(rake)]) * (bar_h - r)  # top of the fork
    for sy in (1, -1):
        parts.append((f"fork{sy}", rod(front + [0, sy * 0.04, 0], head + [0, sy * 0.04, 0], 0.014, 0.014, 10)))
    parts.append(("handlebar", tube(np.stack([head + [-0.06, -0.17, 0.05], head + [0, -0.12, 0.03], head + [0, 0.12, 0.03],
                                              head + [-0.06, 0.17, 0.05]]), 0.012, 8)))
    parts.append(("headlight", lathe([(0, 0), (0.05, 0), (0.055, 0.03), (0, 0.05)], 20, center=(0, 0, 0))
                  .apply_transform(_turn_to_x()).apply_translation(head + [0.03, 0, -0.07])))
    tank_c = np.array([base * 0.12, 0, seat_h + 0.04])
    parts.append(("tank", ellipsoid([0.14, 0.08, 0.065], tank_c, pitch_deg=-8)))
    parts.append(("seat", box([0.26, 0.12, 0.04], [-base * 0.2, 0, seat_h], rotation_deg=3, axis=(0, 1, 0))))
    parts.append(("tail", prism([(-base * 0.32, seat_h - 0.03), (-base * 0.58, seat_h + 0.02), (-base * 0.58, seat_h + 0.05),
                                 (-base * 0.3, seat_h + 0.02)], 0.1)))
    parts.append(("frame", tube(np.stack([head + [0, 0, -0.04], tank_c + [0, 0, -0.05], [-base * 0.2, 0, seat_h - 0.04],
                                          rear + [0, 0, 0.03]]), 0.02, 10)))
    parts.append(("engine", box([0.22, 0.14, 0.16], [base * 0.02, 0, r + 0.06], rotation_deg=-10, axis=(0, 1, 0))))
    parts.append(("exhaust", tube(np.stack([[base * 0.08, 0.07, r - 0.02], [-base * 0.05, 0.1, r - 0.06], [-base * 0.45, 0.1, r - 0.02]]),
                                  0.022, 12)))
    parts.append(("swingarm", rod([base * -0.02, 0.0, r], rear, 0.015, 0.015, 8)))
    return parts


def _turn_to_x() -> np.ndarray:
    """4x4 transform turning +z to +x (a lathed part that should face forwards)."""
    import trimesh

    return trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0])


@category("plant", view=(20, 15), description="a potted plant: a tapered pot with a rim, long leaves arching up "
          "and out of it")
def plant(p):
    R = p.uniform("pot_r", 0.16, 0.21)
    H = p.uniform("pot_h", 0.28, 0.36)
    n = p.integer("leaves", 9, 14)
    leaf_l = p.uniform("leaf_len", 0.45, 0.6)
    parts = [("pot", lathe([(0, 0), (R * 0.72, 0), (R, H * 0.9), (R * 1.08, H * 0.9), (R * 1.08, H), (0, H)], 40))]
    rng = p.rng  # each leaf's direction and length jitter: drawn from the instance's generator, not recorded one by one
    for k in range(n):
        az = 2 * np.pi * (k + rng.uniform(-0.3, 0.3)) / n
        el = np.radians(rng.uniform(35, 80))
        ln = leaf_l * rng.uniform(0.7, 1.0)
        d = np.array([np.cos(az) * np.cos(el), np.sin(az) * np.cos(el), np.sin(el)])
        p0 = np.array([0, 0, H * 0.95]) + d * 0.02
        # a leaf arches: it rises along d, then bends outwards and down
        p1 = p0 + d * ln * 0.6
        p2 = p1 + np.array([np.cos(az), np.sin(az), 0]) * ln * 0.35 + [0, 0, -ln * 0.15]
        t = np.linspace(0, 1, 9)[:, None]
        curve = (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t ** 2 * p2
        width = 0.035 * np.sin(np.linspace(0.15, np.pi - 0.1, 9)) + 0.004
        parts.append((f"leaf{k}", _ribbon(curve, width, np.array([-np.sin(az), np.cos(az), 0]))))
    return parts


def _ribbon(curve, width, side, thickness: float = 0.006):
    """A thin leaf blade along ``curve`` [N, 3], ``width`` [N] to each side along ``side``: the union of the
    convex hulls of consecutive segments (a bent blade is not convex)."""
    import trimesh

    c = np.asarray(curve, float)
    w = np.asarray(width, float)[:, None] * side
    up = np.cross(np.gradient(c, axis=0), side)
    up *= thickness / (np.linalg.norm(up, axis=1, keepdims=True) + 1e-12)
    pieces = []
    for i in range(len(c) - 1):
        seg = slice(i, i + 2)
        q = np.concatenate([c[seg] + w[seg], c[seg] - w[seg], c[seg] + w[seg] + up[seg], c[seg] - w[seg] + up[seg]])
        pieces.append(trimesh.convex.convex_hull(q))
    return trimesh.util.concatenate(pieces)


@category("suitcase", view=(35, 15), description="a trolley suitcase: an upright rounded box with ribs, a zip line, "
          "a top handle, an extended telescopic handle and wheels")
def suitcase(p):
    W = p.uniform("width", 0.55, 0.65)  # along y
    D = p.uniform("depth", 0.26, 0.32)  # along x
    H = p.uniform("height", 0.8, 0.9)
    pull = p.uniform("handle_out", 0.18, 0.35)  # how far the telescopic handle is pulled out
    z0 = 0.05
    parts = [("shell", box([D, W, H], [0, 0, z0 + H / 2]))]
    for k in range(3):
        y = -W / 2 + (k + 1) * W / 4
        parts.append((f"rib{k}", box([D + 0.02, 0.03, H * 0.88], [0, y, z0 + H / 2])))
    parts.append(("zip", box([0.02, W + 0.01, H + 0.01], [0, 0, z0 + H / 2])))
    parts.append(("top_handle", tube(np.stack([[0, -0.08, z0 + H], [0, -0.07, z0 + H + 0.04], [0, 0.07, z0 + H + 0.04],
                                               [0, 0.08, z0 + H]]), 0.012, 8)))
    for sy in (1, -1):
        y = sy * W * 0.3
        parts.append((f"pull_rod{sy}", rod([-D / 2 - 0.02, y, z0 + H * 0.5], [-D / 2 - 0.02, y, z0 + H + pull], 0.012, 0.012, 8)))
        for sx in (1, -1):
            parts.append((f"wheel{sx}{sy}", disc(0.03, 0.025, [sx * (D / 2 - 0.04), sy * (W / 2 - 0.04), 0.03], axis="y",
                                                 sections=16)))
    parts.append(("pull_grip", box([0.04, W * 0.6 + 0.03, 0.035], [-D / 2 - 0.02, 0, z0 + H + pull])))
    return parts


@category("umbrella", view=(30, 12), description="an open umbrella standing on its pole: a ribbed canopy wider than "
          "the pole is long, a tip on top, a hooked handle below")
def umbrella(p):
    R = p.uniform("canopy_r", 0.5, 0.6)
    ch = p.uniform("canopy_h", 0.18, 0.26)
    ribs = p.integer("ribs", 8, 10)
    pole = p.uniform("pole_len", 0.7, 0.85)  # from the handle's top to the canopy's apex
    hook = p.uniform("hook_r", 0.05, 0.07)
    z_hook = hook + 0.018  # the hook rests on the ground
    apex = z_hook + pole
    # the canopy: a shell of ``ribs`` flat panels (lathed with as many sections), so its ribs draw as creases
    prof = [(0, apex - 0.012)] + [(R * np.sin(t), apex - ch * (1 - np.cos(t)) - 0.012) for t in np.linspace(0.15, np.pi / 2, 6)] \
        + [(R, apex - ch - 0.012)] + [(R * np.sin(t) * 0.98, apex - ch * (1 - np.cos(t))) for t in np.linspace(np.pi / 2, 0.15, 6)] \
        + [(0, apex)]
    parts = [("canopy", lathe(prof, ribs))]
    parts.append(("tip", rod([0, 0, apex - 0.01], [0, 0, apex + 0.07], 0.012, 0.006, 8)))
    parts.append(("pole", rod([0, 0, z_hook], [0, 0, apex], 0.011, 0.011, 8)))
    arc = [np.array([hook - hook * np.cos(t), 0, z_hook - hook * np.sin(t)]) for t in np.linspace(0, np.pi, 10)]
    parts.append(("handle", tube(np.stack([np.array([0, 0, z_hook + 0.03])] + arc), 0.018, 10)))
    return parts
