"""Household objects: bottle, chair, clock, keyboard, knife, oven."""
from __future__ import annotations

import numpy as np

from . import category
from .shapes import box, disc, lathe, prism, rod, torus, tube


@category("bottle", view=(0, 8), description="a bottle: a lathed body, shoulder, long neck and lip")
def bottle(p):
    R = p.uniform("body_r", 0.14, 0.2)
    H = p.uniform("body_h", 0.45, 0.6)
    shoulder = p.uniform("shoulder_h", 0.1, 0.22)
    neck_r = p.uniform("neck_r", 0.045, 0.06)
    neck_h = p.uniform("neck_h", 0.15, 0.28)
    ts = np.linspace(0, 1, 8)[1:-1]
    # a smooth shoulder (cosine blend from body radius to neck radius)
    sh = [(neck_r + (R - neck_r) * (0.5 + 0.5 * np.cos(np.pi * t)), H + shoulder * t) for t in ts]
    prof = [(0, 0), (R * 0.95, 0), (R, 0.02), (R, H)] + sh + [(neck_r, H + shoulder), (neck_r, H + shoulder + neck_h),
                                                            (neck_r * 1.25, H + shoulder + neck_h), (neck_r * 1.25, H + shoulder + neck_h + 0.03),
                                                            (0, H + shoulder + neck_h + 0.03)]
    parts = [("bottle", lathe(prof, 48))]
    return parts


@category("chair", view=(35, 18), description="a chair: seat, four legs, backrest with posts and slats (some with arms)")
def chair(p):
    w = p.uniform("seat_w", 0.42, 0.5)
    d = p.uniform("seat_d", 0.4, 0.48)
    h = p.uniform("seat_h", 0.42, 0.48)
    back = p.uniform("back_h", 0.4, 0.55)
    slats = p.integer("slats", 0, 4)
    arms = p.choice("arms", (False, False, True))
    lean = p.uniform("back_lean_deg", 0, 12)
    t = 0.03
    parts = [("seat", box([d, w, 0.04], [0, 0, h]))]
    for sx in (1, -1):
        for sy in (1, -1):
            parts.append((f"leg{sx}{sy}", box([t, t, h - 0.02], [sx * (d / 2 - t), sy * (w / 2 - t), (h - 0.02) / 2])))
    off = np.tan(np.radians(lean)) * back
    bx = -d / 2 + t / 2
    for sy in (1, -1):
        parts.append((f"post{sy}", rod([bx, sy * (w / 2 - t), h], [bx - off, sy * (w / 2 - t), h + back], t * 0.6, t * 0.6, 8)))
    parts.append(("top_rail", rod([bx - off, -w / 2 + t, h + back - 0.04], [bx - off, w / 2 - t, h + back - 0.04], 0.035, 0.035, 8)))
    if slats == 0:
        parts.append(("backrest", box([0.025, w - 2 * t, back * 0.55], [bx - off * 0.6, 0, h + back * 0.6], rotation_deg=-lean, axis=(0, 1, 0))))
    for k in range(slats):
        y = -w / 2 + t + (k + 1) * (w - 2 * t) / (slats + 1)
        parts.append((f"slat{k}", rod([bx - off * 0.1, y, h + 0.03], [bx - off * 0.9, y, h + back - 0.05], 0.012, 0.012, 6)))
    for name, z in (("rail_front", 0.12), ("rail_back", 0.12)):
        x = d / 2 - t if name == "rail_front" else -d / 2 + t
        parts.append((name, rod([x, -w / 2 + t, z], [x, w / 2 - t, z], 0.012, 0.012, 6)))
    if arms:
        for sy in (1, -1):
            parts.append((f"arm{sy}", box([d * 0.9, 0.04, 0.03], [0, sy * (w / 2), h + 0.22])))
            parts.append((f"arm_post{sy}", rod([d / 2 - t, sy * w / 2, h], [d / 2 - t, sy * w / 2, h + 0.22], 0.015, 0.015, 6)))
    return parts


@category("clock", view=(90, 0), description="a clock: round face with rim, hour marks and two hands (some an alarm clock with bells and feet)")
def clock(p):
    # the face looks along +x (the front), so the canonical view is azimuth 90 (camera on the +x side)
    R = p.uniform("face_r", 0.4, 0.5)
    kind = p.choice("kind", ("wall", "alarm"))
    hour = p.uniform("hour", 0, 12)
    minute = p.uniform("minute", 0, 60)
    z = R + (0.12 if kind == "alarm" else 0.0)
    c = np.array([0, 0, z])
    parts = [("case", disc(R, 0.08, c, axis="x", sections=64)),
             ("rim", torus(R, 0.03, c + [0.04, 0, 0], axis="x", sections=64))]
    for k in range(12):
        a = 2 * np.pi * k / 12
        r0, r1 = R * (0.78 if k % 3 else 0.7), R * 0.88
        parts.append((f"mark{k}", rod(c + [0.045, r0 * np.sin(a), r0 * np.cos(a)], c + [0.045, r1 * np.sin(a), r1 * np.cos(a)],
                                      0.012 if k % 3 else 0.02, None, 6)))
    for name, ang, length, wdt in (("hour_hand", hour / 12, 0.5, 0.022), ("minute_hand", minute / 60, 0.78, 0.014)):
        a = 2 * np.pi * ang
        parts.append((name, rod(c + [0.05, 0, 0], c + [0.05, R * length * np.sin(a), R * length * np.cos(a)], wdt, wdt * 0.6, 6)))
    parts.append(("pin", disc(0.03, 0.03, c + [0.055, 0, 0], axis="x", sections=16)))
    if kind == "alarm":
        for sy in (1, -1):
            a = np.radians(38)
            bc = c + [0, sy * (R + 0.04) * np.sin(a), (R + 0.04) * np.cos(a)]
            parts.append((f"bell{sy}", lathe([(0, 0), (0.14, 0), (0.13, 0.06), (0.09, 0.11), (0, 0.13)], 32, center=bc - [0, 0, 0.02])))
            foot = c + [0, sy * R * np.sin(np.radians(40)), -R * np.cos(np.radians(40))]
            parts.append((f"foot{sy}", rod(foot, foot + [0, sy * 0.08, -0.11], 0.025, 0.02, 8)))
        parts.append(("handle", tube([c + [0, -0.12, R * 0.95], c + [0, -0.1, R + 0.1], c + [0, 0.1, R + 0.1],
                                      c + [0, 0.12, R * 0.95]], 0.018, 8)))
    return parts


@category("keyboard", view=(-12, 80), description="a desktop computer keyboard seen from above: a case with "
          "rows of keys, a space bar, often a numeric pad, and a palm rest")
def keyboard(p):
    # the case is a low wedge (the rear edge raised by its feet); keys are small boxes on its top, so the
    # line drawing shows the grid of keys from the canonical (near top) view; +x = the keyboard's right
    L = 1.0
    rows = p.integer("rows", 5, 6)
    numpad = p.choice("numpad", (True, True, False))
    key_d = p.uniform("key_area_depth", 0.3, 0.36)
    rest_d = p.uniform("palm_rest_depth", 0.13, 0.2)
    T = p.uniform("height", 0.035, 0.05)
    D = key_d + 0.04
    y0 = rest_d / 2  # the key case's centre, so the whole keyboard is centred on y = 0
    parts = [("case", prism([(y0 - D / 2, 0), (y0 + D / 2, 0), (y0 + D / 2, T * 1.3), (y0 - D / 2, T * 0.8)], L, plane="yz"))]
    yr = y0 - D / 2 - rest_d / 2
    parts.append(("palm_rest", prism([(yr - rest_d / 2 + 0.02, 0), (yr + rest_d / 2, 0), (yr + rest_d / 2, T * 0.7),
                                      (yr - rest_d / 2 + 0.03, T * 0.6), (yr - rest_d / 2, T * 0.3)], L * 0.96, plane="yz")))
    keys_w = L * (0.78 if numpad else 0.95)
    pitch = key_d / rows
    n_cols = 14
    kw = (keys_w - 0.04) / (n_cols + 1.0)
    x0 = -L / 2 + 0.02
    top = lambda y: T * 0.8 + (T * 0.5) * (y - (y0 - D / 2)) / D  # noqa: E731  (the case's top surface)
    for r in range(rows):
        y = y0 + D / 2 - 0.02 - pitch * (r + 0.5)
        z = top(y) + 0.008
        if r == rows - 1:  # bottom row: modifiers and the space bar
            parts.append((f"space{r}", box([kw * 6, pitch * 0.78, 0.016], [x0 + kw * 7.5, y, z])))
            for k in (0, 1.3, 12.5, 13.8):
                parts.append((f"mod{r}_{k}", box([kw * 1.15, pitch * 0.78, 0.016], [x0 + kw * (k + 0.65), y, z])))
            continue
        shift = (r % 3) * kw * 0.3
        for k in range(n_cols):
            parts.append((f"key{r}_{k}", box([kw * 0.82, pitch * 0.78, 0.016], [x0 + shift + kw * (k + 0.5), y, z])))
    if numpad:
        for r in range(rows):
            y = y0 + D / 2 - 0.02 - pitch * (r + 0.5)
            for k in range(4):
                parts.append((f"pad{r}_{k}", box([kw * 0.82, pitch * 0.78, 0.016],
                                                 [L / 2 - 0.02 - kw * (4 - k - 0.5), y, top(y) + 0.008])))
    return parts


@category("knife", view=(-30, 90), description="a kitchen knife lying on a table, seen from above: a chef's knife "
          "(curved edge, pointed tip) or a cleaver (tall rectangular blade), bolster, handle with rivets")
def knife(p):
    # ImageNet's "knife" of the 16-class mapping is the cleaver (class 499); chef's knives are what most
    # photos of knives show. The knife lies flat (blade in the x-y plane, edge towards -y, tip +x), as a
    # knife is seen on a table or in a hand: the canonical view looks down on it, turned 30 degrees.
    kind = p.choice("kind", ("chef", "cleaver", "chef"))
    blade_l = p.uniform("blade_len", 0.58, 0.68) if kind == "chef" else p.uniform("blade_len", 0.52, 0.6)
    blade_h = blade_l * (p.uniform("blade_h", 0.2, 0.27) if kind == "chef" else p.uniform("blade_h", 0.36, 0.46))
    handle_l = p.uniform("handle_len", 0.3, 0.38)
    handle_h = blade_h * (p.uniform("handle_h", 0.5, 0.65) if kind == "chef" else p.uniform("handle_h", 0.26, 0.34))
    t = 0.012
    if kind == "chef":
        belly = p.uniform("belly", 0.35, 0.6)  # the front fraction over which the edge curves up to the tip
        ts = np.linspace(0, 1, 12)
        edge = [(blade_l * u, -blade_h / 2 + blade_h * 0.92 * max(0.0, (u - (1 - belly)) / belly) ** 2) for u in ts]
        # the spine runs straight, then drops towards the tip
        spine = [(0, blade_h / 2), (blade_l * 0.6, blade_h / 2), (blade_l * 0.85, blade_h * 0.38)]
        outline = spine + edge[::-1]
        parts = [("blade", prism(outline, t, plane="xy", offset=t / 2))]
        hy = blade_h / 2 - handle_h * 0.55  # the handle sits nearer the spine than the edge
    else:
        round_ = p.uniform("corner", 0.03, 0.08)
        outline = [(0, -blade_h / 2), (blade_l - round_, -blade_h / 2), (blade_l, -blade_h / 2 + round_),
                   (blade_l, blade_h / 2 - round_ * 0.5), (blade_l - round_ * 0.5, blade_h / 2), (0, blade_h / 2)]
        parts = [("blade", prism(outline, t, plane="xy", offset=t / 2))]
        hy = blade_h / 2 - handle_h * 0.9
    ht = 0.035
    parts.append(("bolster", box([0.035, handle_h * 1.15, ht * 1.1], [-0.0175, hy, ht * 0.55])))
    x0 = -0.035
    handle = [(x0, hy - handle_h / 2), (x0 - handle_l * 0.85, hy - handle_h * 0.45), (x0 - handle_l, hy - handle_h * 0.3),
              (x0 - handle_l - 0.015, hy + handle_h * 0.05), (x0 - handle_l, hy + handle_h * 0.5), (x0, hy + handle_h / 2)]
    parts.append(("handle", prism(handle, ht, plane="xy", offset=ht / 2)))
    for k in range(3):
        x = x0 - handle_l * (0.18 + 0.3 * k)
        parts.append((f"rivet{k}", disc(handle_h * 0.12, ht * 1.1, [x, hy, ht / 2], axis="z", sections=12)))
    return parts


@category("oven", view=(55, 15), description="a kitchen range: a box with a glass door and handle, control knobs and burners on top")
def oven(p):
    W = p.uniform("width", 0.6, 0.75)
    H = p.uniform("height", 0.8, 0.9)
    D = p.uniform("depth", 0.55, 0.65)
    knobs = p.integer("knobs", 4, 6)
    # the front faces +x
    parts = [("body", box([D, W, H], [0, 0, H / 2]))]
    dz0, dz1 = H * 0.12, H * 0.72
    parts.append(("door", box([0.03, W * 0.9, dz1 - dz0], [D / 2 + 0.015, 0, (dz0 + dz1) / 2])))
    parts.append(("window", box([0.02, W * 0.6, (dz1 - dz0) * 0.5], [D / 2 + 0.035, 0, (dz0 + dz1) / 2 + 0.02])))
    parts.append(("handle", rod([D / 2 + 0.07, -W * 0.38, dz1 - 0.05], [D / 2 + 0.07, W * 0.38, dz1 - 0.05], 0.015, 0.015, 10)))
    for sy in (1, -1):
        parts.append((f"handle_post{sy}", rod([D / 2 + 0.03, sy * W * 0.36, dz1 - 0.05], [D / 2 + 0.075, sy * W * 0.36, dz1 - 0.05], 0.01, 0.01, 6)))
    parts.append(("drawer", box([0.02, W * 0.9, H * 0.07], [D / 2 + 0.01, 0, H * 0.06])))
    panel_z = H * 0.84
    parts.append(("panel", box([0.02, W * 0.96, H * 0.1], [D / 2 + 0.01, 0, panel_z])))
    for k in range(knobs):
        y = -W * 0.4 + W * 0.8 * (k + 0.5) / knobs
        parts.append((f"knob{k}", disc(0.025, 0.03, [D / 2 + 0.035, y, panel_z], axis="x", sections=16)))
    for sx in (1, -1):
        for sy in (1, -1):
            parts.append((f"burner{sx}{sy}", disc(W * 0.12, 0.02, [sx * D * 0.22, sy * W * 0.23, H + 0.01], axis="z", sections=32)))
    if p.choice("backsplash", (True, False)):
        parts.append(("backsplash", box([0.03, W, 0.12], [-D / 2 + 0.015, 0, H + 0.06])))
    return parts
