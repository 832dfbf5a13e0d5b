"""Animals: bear, cat, dog, elephant (one quadruped builder, species = parameter ranges) and bird.

Proportions are read off side views of the animals (body length = 1 model unit for the quadrupeds); each
range is wide enough that five instances differ visibly and narrow enough that the species stays
recognisable in silhouette (the check against real silhouettes is in docs/objects.md).
"""
from __future__ import annotations

import numpy as np

from . import Params, category
from .shapes import bezier, ellipsoid, prism, rod, tube

# species: parameter ranges (lo, hi) in body lengths, degrees or counts, plus the ear and extra features
SPECIES = {
    "bear": dict(body_h=(0.26, 0.32), body_w=(0.24, 0.3), leg_len=(0.36, 0.44), leg_r=(0.085, 0.105),
                 neck_len=(0.12, 0.18), neck_angle=(5, 25), head=(0.15, 0.18), snout=(0.09, 0.13),
                 tail=(0.05, 0.08), tail_lift=(0, 10), ears="round", hump=True),
    "cat": dict(body_h=(0.13, 0.16), body_w=(0.11, 0.14), leg_len=(0.36, 0.44), leg_r=(0.03, 0.038),
                neck_len=(0.12, 0.18), neck_angle=(45, 65), head=(0.11, 0.13), snout=(0.03, 0.05),
                tail=(0.55, 0.75), tail_lift=(35, 60), ears="pointed", hump=False),
    "dog": dict(body_h=(0.16, 0.2), body_w=(0.13, 0.16), leg_len=(0.42, 0.55), leg_r=(0.04, 0.05),
                neck_len=(0.2, 0.28), neck_angle=(45, 60), head=(0.11, 0.14), snout=(0.13, 0.18),
                tail=(0.3, 0.42), tail_lift=(20, 55), ears=("floppy", "pointed"), hump=False),
    "elephant": dict(body_h=(0.34, 0.4), body_w=(0.3, 0.36), leg_len=(0.5, 0.6), leg_r=(0.11, 0.13),
                     neck_len=(0.06, 0.1), neck_angle=(20, 35), head=(0.2, 0.24), snout=(0.0, 0.0),
                     tail=(0.28, 0.35), tail_lift=(-70, -55), ears="fan", hump=False),
}


def quadruped(p: Params, species: str) -> list:
    s = SPECIES[species]
    u = {k: p.uniform(k, *v) for k, v in s.items() if isinstance(v, tuple) and len(v) == 2
         and isinstance(v[0], (int, float))}
    ears = p.choice("ears", s["ears"]) if isinstance(s["ears"], tuple) else s["ears"]
    L, H, W = 0.5, u["body_h"], u["body_w"]
    z_body = u["leg_len"] + H * 0.75
    parts = [("body", ellipsoid([L, W, H], [0, 0, z_body]))]
    if s["hump"]:  # a bear's shoulder hump
        parts.append(("hump", ellipsoid([L * 0.45, W * 0.85, H * 0.85], [L * 0.35, 0, z_body + H * 0.3])))
    stride = p.uniform("stride_deg", -12, 12)  # legs swing fore/aft: a walking or standing pose
    for i, (sx, sy) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        hip = np.array([sx * L * 0.62, sy * W * 0.55, z_body - H * 0.2])
        swing = np.radians(stride * (1 if (i in (0, 3)) else -1))
        foot = np.array([hip[0] + np.sin(swing) * u["leg_len"], hip[1], 0.0])
        knee = (hip + foot) / 2 + np.array([-sx * 0.02, 0, 0])
        parts.append((f"leg{i}", tube(np.stack([hip, knee, foot + [0, 0, u["leg_r"] * 0.5]]),
                                      [u["leg_r"] * 1.25, u["leg_r"], u["leg_r"] * 0.9], 12)))
        parts.append((f"paw{i}", ellipsoid([u["leg_r"] * 1.3, u["leg_r"], u["leg_r"] * 0.6],
                                           foot + [u["leg_r"] * 0.4, 0, u["leg_r"] * 0.5], subdivisions=2)))
    a = np.radians(u["neck_angle"])
    neck0 = np.array([L * 0.8, 0, z_body + H * 0.2])
    head_c = neck0 + u["neck_len"] * np.array([np.cos(a), 0, np.sin(a)]) + [u["head"] * 0.5, 0, 0]
    r_neck = min(H, W) * (0.75 if species in ("bear", "elephant") else 0.5)
    parts.append(("neck", rod(neck0 - [L * 0.15, 0, 0], head_c, r_neck, u["head"] * 0.75, 12)))
    hd = u["head"]
    parts.append(("head", ellipsoid([hd * 1.1, hd * 0.85, hd * 0.9], head_c)))
    if u["snout"] > 0:
        tip = head_c + [hd * 0.8 + u["snout"], 0, -hd * 0.3]
        parts.append(("snout", rod(head_c + [hd * 0.5, 0, -hd * 0.15], tip, hd * 0.45, hd * 0.3, 12)))
    top = head_c + [0, 0, hd * 0.8]
    for sy in (1, -1):
        if ears == "round":
            parts.append((f"ear{sy}", ellipsoid([hd * 0.25, hd * 0.12, hd * 0.25], top + [-hd * 0.2, sy * hd * 0.55, 0],
                                                subdivisions=2)))
        elif ears == "pointed":
            base = top + [-hd * 0.1, sy * hd * 0.45, -hd * 0.1]
            parts.append((f"ear{sy}", rod(base, base + [hd * 0.05, sy * hd * 0.1, hd * 0.75], hd * 0.3, hd * 0.02, 8)))
        elif ears == "floppy":
            parts.append((f"ear{sy}", ellipsoid([hd * 0.35, hd * 0.1, hd * 0.6],
                                                head_c + [-hd * 0.3, sy * hd * 0.85, -hd * 0.2], subdivisions=2)))
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
    lift = np.radians(u["tail_lift"])
    t0 = np.array([-L * 0.95, 0, z_body + H * 0.3])
    tl = u["tail"]
    t2 = t0 + tl * np.array([-np.cos(lift), 0, np.sin(lift)])
    # a cat's tail leaves level and curls up (a hook); the others bend gently
    mid = t0 + [-tl * 0.55, 0, 0.0] if species == "cat" else (t0 + t2) / 2 + [-tl * 0.1, 0, 0]
    r_tail = 0.025 if species != "elephant" else 0.018
    parts.append(("tail", tube(bezier(t0, mid, t2, 10), np.linspace(r_tail * (1.8 if species == "dog" else 1), r_tail * 0.7, 10), 8)))
    return parts


@category("bear", view=(20, 10), description="a bear: heavy body with a shoulder hump, thick legs, round ears, short tail")
def bear(p):
    return quadruped(p, "bear")


@category("cat", view=(20, 10), description="a cat: slender body, thin legs, small round head, pointed ears, long raised tail")
def cat(p):
    return quadruped(p, "cat")


@category("dog", view=(20, 10), description="a dog: long legs, raised head with a long snout, floppy or pointed ears, tail")
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
