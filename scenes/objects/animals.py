"""Animals: bear, cat, dog, elephant, tiger, wolf (one quadruped builder, species = parameter ranges and
poses), bird, and Baker & Elder's (2022) bunny, frog, lizard and turtle (their own body plans).

Proportions are read off side views of the animals (body length = 1 model unit for the quadrupeds); each
range is wide enough that five instances differ visibly and narrow enough that the species stays
recognisable in silhouette. The check against real silhouettes (the 16 ImageNet-16 categories) is in
docs/objects.md; the other animals' geometry is measured in tests/test_objects.py.
"""
from __future__ import annotations

import numpy as np

from . import Params, category
from .shapes import bezier, ellipsoid, lathe, prism, rod, torus, tube

# species: parameter ranges (lo, hi) in body lengths (rump to chest = 1), degrees or counts. ``body_h``/``body_w``
# are the torso's half height/width, ``leg_len`` the shoulder height above the ground minus the torso,
# ``hock`` how far the hind leg bends back at the hock (0 = a column, as an elephant's or a bear's; 1 = a
# digitigrade cat's or dog's), ``poses`` what the instance may be doing, ``view`` the canonical view.
SPECIES = {
    "bear": dict(body_h=(0.27, 0.32), body_w=(0.25, 0.3), leg_len=(0.26, 0.32), leg_r=(0.085, 0.1),
                 neck_len=(0.08, 0.12), neck_angle=(-10, 10), head=(0.15, 0.18), snout=(0.1, 0.13),
                 tail=(0.05, 0.07), tail_lift=(-10, 10), ears="round", hump=True, hock=0.15, poses=("standing",)),
    "cat": dict(body_h=(0.16, 0.19), body_w=(0.15, 0.18), leg_len=(0.3, 0.36), leg_r=(0.038, 0.045),
                neck_len=(0.06, 0.1), neck_angle=(40, 60), head=(0.14, 0.16), snout=(0.03, 0.045),
                tail=(0.6, 0.75), tail_lift=(30, 60), ears="pointed", hump=False, hock=1.0,
                poses=("lying", "loaf")),
    "dog": dict(body_h=(0.18, 0.21), body_w=(0.17, 0.2), leg_len=(0.4, 0.5), leg_r=(0.045, 0.055),
                neck_len=(0.18, 0.24), neck_angle=(45, 60), head=(0.12, 0.14), snout=(0.14, 0.19),
                tail=(0.3, 0.42), tail_lift=(20, 50), ears=("floppy", "pointed"), hump=False, hock=1.0,
                poses=("standing",)),
    "elephant": dict(body_h=(0.34, 0.4), body_w=(0.3, 0.36), leg_len=(0.5, 0.6), leg_r=(0.11, 0.13),
                     neck_len=(0.06, 0.1), neck_angle=(20, 35), head=(0.2, 0.24), snout=(0.0, 0.0),
                     tail=(0.28, 0.35), tail_lift=(-70, -55), ears="fan", hump=False, hock=0.0, poses=("standing",)),
    "tiger": dict(body_h=(0.15, 0.18), body_w=(0.13, 0.16), leg_len=(0.24, 0.3), leg_r=(0.055, 0.065),
                  neck_len=(0.1, 0.14), neck_angle=(10, 25), head=(0.13, 0.15), snout=(0.06, 0.08),
                  tail=(0.5, 0.6), tail_lift=(-35, -20), ears="round", hump=False, hock=1.0, poses=("standing",)),
    "wolf": dict(body_h=(0.16, 0.19), body_w=(0.13, 0.15), leg_len=(0.44, 0.52), leg_r=(0.045, 0.055),
                 neck_len=(0.16, 0.22), neck_angle=(15, 35), head=(0.12, 0.14), snout=(0.16, 0.2),
                 tail=(0.42, 0.52), tail_lift=(-60, -40), ears="pointed", hump=False, hock=1.0, poses=("standing",)),
}


def _rounded_tube(a, b, r0: float, r1: float, sections: int = 12):
    """A tube from ``a`` tapering from radius ``r0`` to ``r1``, ending at ``b`` in a half-sphere of radius
    ``r1`` (a muzzle, a limb's end): smooth, so the line drawing draws no ring at its end."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = b - a
    n = d / np.linalg.norm(d)
    end = b - n * r1  # the centre of the rounded end
    th = np.radians([0, 30, 55, 75, 88])
    pts = [a, (a + end) / 2, end] + [end + n * r1 * np.sin(t) for t in th[1:]]
    radii = [r0, (r0 + r1) / 2, r1] + [max(r1 * np.cos(t), r1 * 0.05) for t in th[1:]]
    return tube(np.stack(pts), radii, sections)


def quadruped(p: Params, species: str) -> list:
    """A four-legged mammal of ``species``: torso of two ellipsoids (chest, hips), legs of tubes (upper arm
    and forearm; thigh, knee forward, hock behind for digitigrade species), neck, head with a rounded muzzle,
    ears by species, tail. Poses: ``standing`` (legs swing by ``stride_deg``), ``lying`` (belly on the ground,
    front legs stretched forward, hind legs folded beside the hips, head up, tail on the ground) and
    ``loaf`` (lying with the front paws tucked in). Sitting (torso raised on the haunches) was tried for
    cats and dogs: the real-silhouette check calls every sitting animal a bird (docs/objects.md)."""
    s = SPECIES[species]
    u = {k: p.uniform(k, *v) for k, v in s.items() if isinstance(v, tuple) and len(v) == 2
         and isinstance(v[0], (int, float))}
    ears = p.choice("ears", s["ears"]) if isinstance(s["ears"], tuple) else s["ears"]
    pose = p.choice("pose", s["poses"]) if len(s["poses"]) > 1 else s["poses"][0]
    H, W, lr, hd = u["body_h"], u["body_w"], u["leg_r"], u["head"]
    lying, loaf = pose in ("lying", "loaf"), pose == "loaf"
    parts = []
    if lying:
        tilt = p.uniform("lie_deg", 0, 8)
        hips = np.array([-0.22, 0.0, H * 0.92])
    else:
        tilt = 0.0
        hips = np.array([-0.22, 0.0, u["leg_len"] + H * 0.85])
    axis = np.array([np.cos(np.radians(tilt)), 0, np.sin(np.radians(tilt))])
    chest = hips + axis * 0.44 + np.array([0, 0, H * 0.05])
    parts.append(("hips", ellipsoid([0.3, W * 0.93, H * 0.93], hips, pitch_deg=tilt)))
    parts.append(("chest", ellipsoid([0.32, W, H], chest, pitch_deg=tilt)))
    if s["hump"]:  # a bear's shoulder hump
        parts.append(("hump", ellipsoid([0.18, W * 0.8, H * 0.8], chest + [0.0, 0, H * 0.45])))
    # ---- legs
    stride = p.uniform("stride_deg", -12, 12) if pose == "standing" else 0.0
    for sy in (1, -1):
        y = sy * W * 0.6
        if lying:
            # front legs stretched forward along the ground, hind legs folded beside the hips
            sh = chest + [0.1, y - chest[1], -H * 0.3]
            paw = np.array([chest[0] + (0.2 if loaf else 0.32), y * (0.7 if loaf else 1), lr * 0.9])
            parts.append((f"arm{sy}", tube(np.stack([sh, (sh + paw) / 2 + [0, 0, -H * 0.2], paw]), [lr * 1.7, lr * 1.2, lr * 0.9], 12)))
            parts.append((f"front_paw{sy}", ellipsoid([lr * 1.35, lr, lr * 0.65], paw + [lr * 0.6, 0, -lr * 0.2], subdivisions=2)))
        else:
            # front leg: upper arm from the shoulder to the elbow, forearm to the wrist, paw
            sh = chest + axis * 0.1 + [0, y - chest[1], -H * 0.3]
            foot = np.array([sh[0] + 0.02, y, 0.0])
            sw = np.radians(stride * sy)
            foot[0] += np.sin(sw) * sh[2]
            elbow = sh + (foot - sh) * 0.45 + [-0.03, 0, 0]
            wrist = foot + [0, 0, lr * 1.1]
            parts.append((f"arm{sy}", tube(np.stack([sh, elbow, wrist]), [lr * 1.7, lr * 1.15, lr * 0.85], 12)))
            parts.append((f"front_paw{sy}", ellipsoid([lr * 1.35, lr, lr * 0.65], foot + [lr * 0.45, 0, lr * 0.6], subdivisions=2)))
        if lying:
            # the hind leg folded on the ground: a big thigh beside the hips, the foot forward along the ground
            thigh = hips + [0.06, y * 1.05 - hips[1], -H * 0.35]
            parts.append((f"thigh{sy}", ellipsoid([0.2, W * 0.42, H * 0.62], thigh, pitch_deg=25)))
            heel = np.array([hips[0] - 0.12, y * 1.1, lr * 0.9])
            toe = np.array([hips[0] + 0.14, y * 1.1, lr * 0.8])
            parts.append((f"hind_foot{sy}", tube(np.stack([heel, (heel + toe) / 2, toe]), [lr * 1.1, lr * 0.95, lr * 0.85], 10)))
            parts.append((f"hind_paw{sy}", ellipsoid([lr * 1.35, lr, lr * 0.65], toe + [lr * 0.6, 0, -lr * 0.15], subdivisions=2)))
            continue
        # hind leg: thigh, knee forward, hock behind (digitigrade species), foot below
        hip = hips + [-0.08, y, -H * 0.15]
        hh = hip[2]
        sw = np.radians(-stride * sy)
        foot = np.array([hip[0] + np.sin(sw) * hh + 0.02, y, 0.0])
        knee = hip + [0.08 * s["hock"] + 0.01, 0, -hh * 0.4]
        hock = np.array([foot[0] - 0.09 * s["hock"], y, hh * 0.3])
        parts.append((f"thigh{sy}", ellipsoid([0.15, W * 0.45, H * 0.75], hip + [0.02, 0, -H * 0.35], pitch_deg=-35,
                                              subdivisions=2)))
        parts.append((f"leg{sy}", tube(np.stack([hip, knee, hock, foot + [0, 0, lr * 1.1]]),
                                       [lr * 1.8, lr * 1.25, lr * 0.95, lr * 0.85], 12)))
        parts.append((f"hind_paw{sy}", ellipsoid([lr * 1.35, lr, lr * 0.65], foot + [lr * 0.45, 0, lr * 0.6], subdivisions=2)))
    # ---- neck and head
    neck0 = chest + axis * 0.24 + [0, 0, H * 0.35 * np.cos(np.radians(tilt))]
    a = np.radians(u["neck_angle"] + (20 if lying else 0))
    head_c = neck0 + u["neck_len"] * np.array([np.cos(a), 0, np.sin(a)]) + [hd * 0.45, 0, hd * 0.2]
    r_neck = min(H, W) * (0.8 if species in ("bear", "elephant", "tiger", "cat") else 0.6)
    parts.append(("neck", rod(neck0 - axis * 0.12, head_c, r_neck, hd * 0.75, 12)))
    parts.append(("head", ellipsoid([hd * 1.05, hd * 0.9, hd * 0.88], head_c)))
    if u["snout"] > 0:
        # the muzzle tapers to a rounded nose (no flat end to draw a ring in a front view)
        base, tip = head_c + [hd * 0.4, 0, -hd * 0.1], head_c + [hd * 0.75 + u["snout"], 0, -hd * 0.3]
        parts.append(("snout", _rounded_tube(base, tip, hd * 0.5, hd * 0.3)))
    top = head_c + [0, 0, hd * 0.75]
    for sy in (1, -1):
        if ears == "round":
            parts.append((f"ear{sy}", ellipsoid([hd * 0.22, hd * 0.1, hd * 0.24], top + [-hd * 0.25, sy * hd * 0.55, -hd * 0.05],
                                                subdivisions=2)))
        elif ears == "pointed":
            base = top + [-hd * 0.15, sy * hd * 0.45, -hd * 0.2]
            parts.append((f"ear{sy}", rod(base, base + [hd * 0.05, sy * hd * 0.12, hd * 0.85], hd * 0.32, hd * 0.02, 8)))
        elif ears == "floppy":
            parts.append((f"ear{sy}", ellipsoid([hd * 0.3, hd * 0.1, hd * 0.6],
                                                head_c + [-hd * 0.35, sy * hd * 0.85, -hd * 0.3], subdivisions=2)))
        else:  # fan: an elephant's large flat ear
            parts.append((f"ear{sy}", ellipsoid([hd * 0.9, hd * 0.1, hd * 1.15],
                                                head_c + [-hd * 0.7, sy * hd * 0.85, -hd * 0.1], subdivisions=3)))
    if species == "elephant":
        curl = p.uniform("trunk_curl", -0.1, 0.25)
        t0 = head_c + [hd * 0.8, 0, -hd * 0.2]
        trunk = bezier(t0, t0 + [hd * 1.0, 0, -hd * 1.6], [t0[0] + hd * (0.6 + curl * 4), 0, 0.08 + curl], 14)
        parts.append(("trunk", tube(trunk, np.linspace(hd * 0.38, hd * 0.14, 14), 12)))
        for sy in (1, -1):
            b = head_c + [hd * 0.7, sy * hd * 0.35, -hd * 0.6]
            tusk = bezier(b, b + [hd * 0.5, 0, -hd * 0.5], b + [hd * 1.0, 0, -hd * 0.1], 8)
            parts.append((f"tusk{sy}", tube(tusk, np.linspace(hd * 0.1, hd * 0.03, 8), 8)))
    # ---- tail
    tl = u["tail"]
    rump = hips - axis * 0.28 + [0, 0, H * 0.25]
    r_tail = {"elephant": 0.018, "dog": 0.03, "wolf": 0.05, "tiger": 0.03}.get(species, 0.025)
    if lying:
        # the tail falls to the ground behind and curls forward along it, beside the feet
        pts = np.stack([rump, [rump[0] - 0.12, 0, 0.03], [rump[0] + 0.1, -W * 1.6, 0.03], [rump[0] + tl * 0.5, -W * 1.8, 0.03]])
        t = np.linspace(0, 1, 12)[:, None]
        curve = (1 - t) ** 3 * pts[0] + 3 * (1 - t) ** 2 * t * pts[1] + 3 * (1 - t) * t ** 2 * pts[2] + t ** 3 * pts[3]
        parts.append(("tail", tube(curve, np.linspace(r_tail, r_tail * 0.7, 12), 8)))
    else:
        lift = np.radians(u["tail_lift"])
        t2 = rump + tl * np.array([-np.cos(lift), 0, np.sin(lift)])
        # a cat's tail leaves level and curls up (a hook); a tiger's droops from the rump, its end rising again
        mid = rump + [-tl * 0.55, 0, 0.0] if species == "cat" else (rump + t2) / 2 + [-tl * 0.1, 0, 0]
        if species == "tiger":
            mid = rump + [-tl * 0.3, 0, -tl * 0.75]
        curve = bezier(rump, mid, t2, 10)
        n = len(curve)
        radii = np.linspace(r_tail, r_tail * 0.7, n)
        if species == "wolf":  # bushy: thickest in the middle
            radii = r_tail * (0.6 + 0.6 * np.sin(np.linspace(0.2, np.pi - 0.4, n)))
        parts.append(("tail", tube(curve, radii, 8)))
    return parts


@category("bear", view=(68, 10), description="a bear: heavy body with a shoulder hump, short thick legs, low head with a muzzle, round ears")
def bear(p):
    return quadruped(p, "bear")


@category("cat", view=(72, 10), description="a cat lying down, legs stretched forward or tucked in (a loaf), head up: round head with pointed ears, short muzzle, slim legs, long tail")
def cat(p):
    return quadruped(p, "cat")


@category("dog", view=(79, 10), description="a dog standing, seen from the front left: long muzzle, floppy or pointed ears, long legs bent at the hock, tail")
def dog(p):
    return quadruped(p, "dog")


@category("elephant", view=(20, 10), description="an elephant: massive body, column legs, trunk, fan ears, tusks")
def elephant(p):
    return quadruped(p, "elephant")


@category("bird", view=(10, 5), description="a perching bird: upright body, round head, beak, long tail, folded wings, thin legs on a branch")
def bird(p):
    L = p.uniform("body_len", 0.3, 0.38)
    Hh = p.uniform("body_h", 0.1, 0.125)
    tilt = p.uniform("tilt_deg", 35, 60)
    beak = p.uniform("beak_len", 0.04, 0.1)
    tail = p.uniform("tail_len", 0.2, 0.3)
    head = p.uniform("head_r", 0.065, 0.08)
    leg = p.uniform("leg_len", 0.04, 0.07)
    t = np.radians(tilt)
    fwd = np.array([np.cos(t), 0, np.sin(t)])
    c = np.array([0, 0, 0.03 + leg + Hh * 0.9 + L * 0.35 * np.sin(t) * 0.5])
    parts = [("body", ellipsoid([L / 2, Hh * 0.85, Hh], c, pitch_deg=tilt))]
    hc = c + fwd * L * 0.42 + [head * 0.35, 0, head * 0.55]
    parts.append(("head", ellipsoid([head * 1.1, head * 0.9, head], hc, subdivisions=3)))
    parts.append(("beak", rod(hc + [head * 0.85, 0, -head * 0.05], hc + [head * 0.85 + beak, 0, -head * 0.3], head * 0.38, 0.003, 8)))
    # the tail continues the body's axis backwards and a little further down, widening to its tip
    back = c - fwd * L * 0.38
    td = -np.array([np.cos(t - 0.25), 0, np.sin(t - 0.25)])
    nrm = np.array([-td[2], 0, td[0]])
    end = back + td * tail
    parts.append(("tail", prism([(back + nrm * 0.025)[[0, 2]], (back - nrm * 0.025)[[0, 2]],
                                 (end - nrm * 0.045)[[0, 2]], (end + nrm * 0.045)[[0, 2]]], 0.05)))
    for sy in (1, -1):
        parts.append((f"wing{sy}", ellipsoid([L * 0.48, 0.02, Hh * 0.75], c - fwd * L * 0.12 + [0, sy * Hh * 0.8, 0],
                                             pitch_deg=tilt - 8, subdivisions=2)))
        hip = c + [0.0, sy * 0.03, -Hh * 0.7]
        parts.append((f"leg{sy}", rod(hip, [hip[0] + 0.015, sy * 0.03, 0.045], 0.008, 0.006, 6)))
    parts.append(("branch", rod([-0.22, 0, 0.03], [0.2, 0, 0.025], 0.018, 0.014, 10)))
    return parts


# ---------------------------------------------------------------------------------------------------------
# Baker & Elder's (2022) other animals: tiger and wolf share the quadruped builder; bunny, frog, lizard and
# turtle have their own body plans. Side views, as Baker & Elder's silhouettes show them.

@category("tiger", view=(20, 8), description="a tiger: long low muscular body, thick legs, broad head with round "
          "ears, long tail hanging and curling up at its end, stripes")
def tiger(p):
    parts = quadruped(p, "tiger")
    return parts + _stripes(parts, p.integer("stripes", 7, 10))


@category("wolf", view=(20, 8), description="a wolf: long legs, deep chest, long muzzle, pointed upright ears, bushy "
          "tail hanging down")
def wolf(p):
    return quadruped(p, "wolf")


def _stripes(parts, n: int) -> list:
    """A tiger's stripes: thin bands lying on the flanks of the torso ellipsoids (chest, hips), from the back
    down towards the belly, so the line drawing draws each as a pair of lines."""
    import trimesh

    out = []
    for name, m in parts:
        if name not in ("chest", "hips"):
            continue
        lo, hi = m.bounds
        c, r = (lo + hi) / 2, (hi - lo) / 2
        for k in range(n // 2 + (name == "chest")):
            x = c[0] + r[0] * (-0.7 + 1.4 * (k + 0.5) / (n // 2 + 1))
            for sy in (1, -1):
                pts = []
                for t in np.linspace(0.15, 0.85, 8):  # angle from the top of the back down the flank
                    a = t * np.pi * 0.75
                    z, yy = c[2] + r[2] * np.cos(a), r[1] * np.sin(a)
                    s = max(0.0, 1 - ((x - c[0]) / r[0]) ** 2)
                    pts.append([x + 0.02 * np.sin(3 * t), sy * yy * np.sqrt(s) * 1.01, c[2] + (z - c[2]) * np.sqrt(s)])
                pts = np.array(pts)
                if np.ptp(pts[:, 2]) > 1e-3:
                    out.append((f"stripe_{name}{k}{sy}", tube(pts, np.linspace(0.012, 0.004, len(pts)), 6)))
    return [(n_, m) for n_, m in out if isinstance(m, trimesh.Trimesh)]


@category("bunny", view=(20, 8), description="a rabbit crouching: egg-shaped body with big haunches, round head, "
          "long upright ears, small front paws, long hind feet, puff of a tail")
def bunny(p):
    L = p.uniform("body_len", 0.5, 0.58)  # the body ellipsoid's length (the whole rabbit is about 1)
    H = p.uniform("body_h", 0.36, 0.42)
    hd = p.uniform("head", 0.13, 0.15)
    ear = p.uniform("ear_len", 0.32, 0.42)
    ear_lean = p.uniform("ear_lean_deg", 5, 35)  # back from the vertical
    lop = p.choice("ears", ("upright", "upright", "one_down"))
    c = np.array([-0.05, 0, H * 0.5])
    parts = [("body", ellipsoid([L / 2, L * 0.3, H / 2], c, pitch_deg=12)),
             ("haunch1", ellipsoid([L * 0.28, 0.06, H * 0.3], c + [-L * 0.12, L * 0.2, -H * 0.12], pitch_deg=20)),
             ("haunch-1", ellipsoid([L * 0.28, 0.06, H * 0.3], c + [-L * 0.12, -L * 0.2, -H * 0.12], pitch_deg=20))]
    head_c = c + [L * 0.45, 0, H * 0.42]
    parts.append(("head", ellipsoid([hd * 1.25, hd * 0.95, hd], head_c, pitch_deg=-15)))
    parts.append(("muzzle", ellipsoid([hd * 0.5, hd * 0.55, hd * 0.45], head_c + [hd * 1.0, 0, -hd * 0.35], subdivisions=2)))
    for sy in (1, -1):
        base = head_c + [-hd * 0.3, sy * hd * 0.35, hd * 0.7]
        lean = np.radians(ear_lean + (70 if (lop == "one_down" and sy == -1) else 0))
        tip = base + ear * np.array([-np.sin(lean), sy * 0.08, np.cos(lean)])
        mid = (base + tip) / 2
        parts.append((f"ear{sy}", tube(np.stack([base, base + (mid - base) * 0.5, mid, mid + (tip - mid) * 0.6, tip]),
                                       hd * np.array([0.28, 0.38, 0.4, 0.33, 0.08]), 12)))
        # hind foot: long, flat on the ground under the haunch
        parts.append((f"hind_foot{sy}", ellipsoid([L * 0.3, 0.04, 0.035], [c[0] - L * 0.05, sy * L * 0.22, 0.035])))
        paw = np.array([c[0] + L * 0.42, sy * 0.06, 0.0])
        parts.append((f"front_leg{sy}", _rounded_tube(c + [L * 0.33, sy * 0.06, -H * 0.15], paw + [0.03, 0, 0.03], 0.04, 0.03)))
    parts.append(("tail", ellipsoid([0.06, 0.06, 0.06], c + [-L * 0.5, 0, H * 0.05], subdivisions=2)))
    return parts


@category("frog", view=(25, 15), description="a frog sitting: squat wide body tilted up, wide head with bulging "
          "eyes, folded hind legs with long toes, short front legs")
def frog(p):
    L = p.uniform("body_len", 0.5, 0.58)
    W = p.uniform("body_w", 0.2, 0.26)
    tilt = p.uniform("tilt_deg", 15, 30)
    eye = p.uniform("eye_r", 0.05, 0.065)
    c = np.array([0.0, 0, 0.16])
    parts = [("body", ellipsoid([L / 2, W, 0.12], c, pitch_deg=tilt))]
    fwd = np.array([np.cos(np.radians(tilt)), 0, np.sin(np.radians(tilt))])
    head_c = c + fwd * L * 0.42 + [0, 0, 0.02]
    parts.append(("head", ellipsoid([0.13, W * 0.92, 0.09], head_c, pitch_deg=tilt * 0.5)))
    for sy in (1, -1):
        parts.append((f"eye{sy}", ellipsoid([eye, eye, eye * 0.9], head_c + [-0.01, sy * W * 0.5, 0.075], subdivisions=2)))
        # hind leg folded: thigh forward along the side, shin back, long foot forward on the ground
        hip = c - fwd * L * 0.35 + [0, sy * W * 0.6, -0.04]
        knee = np.array([c[0] + 0.05, sy * (W + 0.08), 0.08])
        ankle = np.array([c[0] - L * 0.42, sy * (W + 0.05), 0.04])
        toe = np.array([c[0] + 0.02, sy * (W + 0.16), 0.015])
        parts.append((f"thigh{sy}", tube(np.stack([hip, (hip + knee) / 2, knee]), [0.07, 0.065, 0.045], 12)))
        parts.append((f"shin{sy}", tube(np.stack([knee, (knee + ankle) / 2, ankle]), [0.045, 0.04, 0.03], 10)))
        parts.append((f"hind_foot{sy}", tube(np.stack([ankle, (ankle + toe) / 2, toe]), [0.03, 0.025, 0.02], 8)))
        for k, ang in enumerate((-35, 0, 35)):  # long toes fanning forward from the foot
            d = np.radians(ang)
            parts.append((f"toe{sy}{k}", rod(toe, toe + 0.09 * np.array([np.cos(d), np.sin(d), 0]) + [0, 0, -0.005], 0.012, 0.006, 6)))
        sh = head_c - fwd * 0.12 + [0, sy * W * 0.6, -0.08]
        hand = np.array([sh[0] + 0.06, sy * (W * 0.8), 0.015])
        parts.append((f"arm{sy}", tube(np.stack([sh, (sh + hand) / 2 + [0.03, 0, 0], hand]), [0.035, 0.028, 0.022], 10)))
        parts.append((f"hand{sy}", ellipsoid([0.04, 0.04, 0.012], hand + [0.02, 0, -0.003], subdivisions=2)))
    return parts


@category("lizard", view=(15, 35), description="a lizard seen from above and the side: long low body, pointed "
          "head, four short legs splayed sideways with toes, a tail longer than the body curving on the ground")
def lizard(p):
    Lb = p.uniform("body_len", 0.36, 0.42)
    R = p.uniform("body_r", 0.045, 0.06)
    tail = p.uniform("tail_len", 0.5, 0.6)  # the whole lizard (snout to tail tip) is about 1.1 units
    bend = p.uniform("tail_bend", -0.2, 0.2)
    head = p.uniform("head_len", 0.1, 0.13)
    z = R * 1.1
    spine = np.stack([np.linspace(-Lb / 2, Lb / 2, 9), np.zeros(9), np.full(9, z)], 1)
    parts = [("body", tube(spine, R * np.sqrt(np.clip(1 - np.linspace(-0.95, 0.95, 9) ** 2 * 0.6, 0.05, 1)), 14))]
    hc = np.array([Lb / 2 + head * 0.4, 0, z + 0.005])
    parts.append(("head", _rounded_tube(hc - [head * 0.5, 0, 0], hc + [head * 0.7, 0, -0.01], R * 0.95, R * 0.35)))
    t = np.linspace(0, 1, 14)
    tail_pts = np.stack([-Lb / 2 + R * 0.3 - tail * t, bend * tail * np.sin(np.pi * t * 0.9), z * (1 - t) + 0.01 * t], 1)
    parts.append(("tail", tube(tail_pts, R * 0.75 * (1 - t) + 0.004, 10)))
    for i, x in enumerate((Lb * 0.3, -Lb * 0.32)):
        for sy in (1, -1):
            hip = np.array([x, sy * R * 0.7, z])
            knee = np.array([x + (0.04 if i == 0 else -0.05), sy * (R + 0.08), z + 0.02])
            foot = np.array([x + (0.07 if i == 0 else -0.02), sy * (R + 0.11), 0.01])
            parts.append((f"leg{i}{sy}", tube(np.stack([hip, knee, foot]), [R * 0.5, R * 0.35, R * 0.28], 8)))
            for k, a in enumerate((-50, 0, 50)):
                d = np.radians(a + (0 if i == 0 else 180) + sy * 20)
                parts.append((f"toe{i}{sy}{k}", rod(foot, foot + 0.04 * np.array([np.cos(d), sy * abs(np.sin(d)) + 0.3 * sy, 0]),
                                                    0.006, 0.003, 5)))
    return parts


@category("turtle", view=(30, 25), description="a turtle: a domed shell with a rim, head on a neck in front, four legs "
          "(a tortoise's stumpy feet or a sea turtle's flippers), short tail")
def turtle(p):
    kind = p.choice("kind", ("tortoise", "sea_turtle"))
    L = p.uniform("shell_len", 0.6, 0.7)
    W = L * p.uniform("shell_w", 0.75, 0.85) / 2
    H = L * (p.uniform("shell_h", 0.3, 0.4) if kind == "tortoise" else p.uniform("shell_h", 0.2, 0.26))
    z0 = 0.08 if kind == "tortoise" else 0.04
    # the shell: an upper half-ellipsoid (lathed profile, scaled to an oval) over a flat plastron
    prof = [(0, 0)] + [(np.sin(a), H / (L / 2) * np.cos(a)) for a in np.linspace(np.pi / 2, 0, 10)]
    shell = lathe(prof, 48)
    shell.apply_scale([L / 2, W, L / 2])
    shell.apply_translation([0, 0, z0])
    parts = [("shell", shell), ("rim", torus(1.0, 0.04, (0, 0, 0), axis="z", sections=48)
                                       .apply_scale([L / 2, W, 0.5]).apply_translation([0, 0, z0]))]
    neck0 = np.array([L * 0.4, 0, z0 + H * 0.25])
    head_c = neck0 + [0.12, 0, 0.06 if kind == "tortoise" else 0.0]
    parts.append(("neck", rod(neck0 - [0.05, 0, 0], head_c, 0.045, 0.04, 12)))
    parts.append(("head", ellipsoid([0.075, 0.05, 0.045], head_c + [0.04, 0, 0.0])))
    for sx, name in ((1, "front"), (-1, "hind")):
        for sy in (1, -1):
            hip = np.array([sx * L * 0.28, sy * W * 0.75, z0 + 0.02])
            if kind == "tortoise":
                foot = hip + [sx * 0.03, sy * 0.07, -z0 - 0.02]
                parts.append((f"{name}_leg{sy}", _rounded_tube(hip, foot + [0, 0, 0.01], 0.05, 0.045)))
            else:  # flippers: flat paddles, the front ones long, broad at the base and swept back
                ln, base = (0.3, 0.07) if sx == 1 else (0.14, 0.05)
                x0, y0 = hip[0], hip[1]
                outline = [(x0 + base, y0), (x0 - base, y0), (x0 - ln * 0.15, y0 + sy * ln * 0.9),
                           (x0 + ln * 0.1, y0 + sy * ln), (x0 + ln * 0.25, y0 + sy * ln * 0.6)]
                parts.append((f"{name}_flipper{sy}", prism(outline, 0.02, plane="xy", offset=z0)))
    parts.append(("tail", rod([-L * 0.45, 0, z0 + 0.02], [-L * 0.45 - 0.07, 0, z0], 0.025, 0.008, 8)))
    return parts
