"""MindSet NAP vs MP, 3D geons (``mindset-vision.txt`` C.1.8; Kayaert, Biederman & Vogels, 2003; Amir,
Biederman & Hayworth, 2012): geons as real 3D shapes, each varied along one dimension from a singular
(nonaccidental) value to two non-singular ones, rendered ``shaded``, ``outline`` and ``silhouette``.

A geon is a cross-section swept along an axis (trimesh, see :func:`geon_mesh`), with three dimensions that
have a singular value:

* ``axis``          — the axis's bend (total turning angle, deg): 0 = straight;
* ``taper``         — end-to-start size ratio of the cross-section: 1 = constant size;
* ``cross_section`` — the square cross-section's edges bowed outwards (sagitta / half side): 0 = straight.

For one item the ``reference`` has an intermediate value, ``nap`` the singular value and ``mp`` a value
beyond the reference, **solved so the MP change has the same pixel magnitude as the NAP change**: the
number of silhouette pixels (antialiased coverage, in the item's shared frame) that differ from the
reference, found by bisection; both magnitudes are columns (``pixel_change`` of each image against its
reference, in px of silhouette coverage) — the original stimuli equated the two changes in the same spirit
(Kayaert et al. matched them in pixel and Gabor-jet space).

Rendering: orthographic rays (trimesh ray casting, embree when installed) on a 3 × 3 sub-pixel grid;
``shaded`` = Lambert shading from a light above-left-front (grey 0.2-0.95 of ``object_color``), the visible
side of each face lit; ``outline`` = lines ``line_width`` px wide where the sub-samples change object/background,
where the surface normal turns by more than 30° (the square's edges, the end caps' rims) or where depth
jumps (self-occlusion), no shading; ``silhouette`` = the object's coverage filled. The frame (scale, centre) is
fitted to the reference and shared by the item's three geons. ``paper`` draws 22 items shaded, the first 9 of
them as outlines and the first 20 as silhouettes (``items_per_rendering``): 153 images, the original's counts
(its ``amir_geons`` folders NAPvsMP, NAPvsMP_no_shades, NAPvsMP_silhouettes). Conditions ``<rendering>_<role>``;
``set_id`` = item × rendering (the triplet a similarity judgment compares). ``source=<folder>`` uses a
user's copy of the original geon images of one rendering instead (``<folder>/{reference,NAP,MP}/``).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, check_rgb, item_rng, new_canvas,
                     place_image, register_mindset, rgb_columns, source_images, to_uint8)

RENDERINGS = ("shaded", "outline", "silhouette")
ROLES = ("reference", "nap", "mp")
DIMENSIONS = {  # singular (NAP) value, reference value, the MP search interval beyond the reference
    "axis": {"nap": 0.0, "reference": 45.0, "mp_limit": 180.0, "unit": "deg of bend"},
    "taper": {"nap": 1.0, "reference": 0.7, "mp_limit": 0.15, "unit": "end/start size ratio"},
    "cross_section": {"nap": 0.0, "reference": 0.2, "mp_limit": 0.9, "unit": "edge sagitta / half side"},
}
# the item list: (dimension, cross-section, length, the other dimensions' fixed values); 22 items, as many as the
# original's shaded set (its outline and silhouette sets hold 9 and 20: ITEMS_PER_RENDERING)
ITEMS = [(dim, cs, length, base)
         for dim in ("axis", "taper") for cs in ("circle", "square") for length, base in ((3.0, {}), (4.2, {}))] + \
        [("cross_section", "square", length, base)
         for length, base in ((3.0, {}), (4.2, {}), (3.0, {"axis": 45.0}), (3.6, {"taper": 0.6}))] + \
        [("axis", cs, 3.6, {"taper": 0.6}) for cs in ("circle", "square")] + \
        [("taper", cs, 3.6, {"axis": 45.0}) for cs in ("circle", "square")] + \
        [("cross_section", "square", 4.2, {"axis": 45.0}), ("cross_section", "square", 4.2, {"taper": 0.6})] + \
        [(dim, cs, 2.4, {}) for cs in ("circle", "square") for dim in ("axis", "taper")]
ITEMS_PER_RENDERING = (22, 9, 20)  # the original's amir_geons NAPvsMP, NAPvsMP_no_shades, NAPvsMP_silhouettes
VIEW_ELEVATION, VIEW_AZIMUTH = 28.0, -32.0  # deg: a generic viewpoint (no accidental alignments)
DEPTH_JUMP = 0.3  # object units (cross-section radius 1): neighbouring sub-samples this far apart in depth
# lie on two surfaces (one part occludes another); a grazing surface changes by < 0.1 between sub-samples
LIGHT = np.array([-0.45, 0.55, 0.70])  # world direction towards the light (x right, y up, z to the viewer)


@dataclasses.dataclass(frozen=True)
class GeonConfig(MindsetConfig):
    items: tuple = field(tuple(range(len(ITEMS))), f"geon items (0-{len(ITEMS) - 1}; see ITEMS)",
                         range=(0, len(ITEMS) - 1))
    renderings: tuple = field(RENDERINGS, "renderings to make", choices=RENDERINGS)
    items_per_rendering: tuple = field(ITEMS_PER_RENDERING, "most items drawn in each rendering, in the order "
                                       "shaded, outline, silhouette: the first ones of items (the original's "
                                       "asset folders hold 22 shaded, 9 outline and 20 silhouette items)",
                                       range=(0, len(ITEMS)))
    object_longest_side: float = field(170.0, "the reference geon's longest projected side (px)",
                                       range=(8.0, 4096.0))
    line_width: float = field(2.0, "outline width (px)", range=(0.5, 20.0))
    object_color: tuple = field((255, 255, 255), "RGB 0-255 of the object (lit colour, lines, silhouette)",
                                range=(0, 255))
    source: str = field("", "'' = procedural geons; or a folder of the original images of one rendering, "
                        "<folder>/{reference,NAP,MP}/<name>.png (e.g. amir_geons/cropped/NAPvsMP), labelled "
                        "with the one rendering in renderings=")

    def __post_init__(self):
        super().__post_init__()
        check_rgb("object_color", self.object_color)
        if len(self.items_per_rendering) != len(RENDERINGS):
            raise ConfigError(f"items_per_rendering={list(self.items_per_rendering)}: give {len(RENDERINGS)} numbers, "
                              f"one per rendering in the order {', '.join(RENDERINGS)}")
        if self.source and len(self.renderings) != 1:
            raise ConfigError(f"source={self.source!r} holds one rendering: set renderings to one of "
                              f"{', '.join(RENDERINGS)} (got {list(self.renderings)})")
        if self.object_longest_side > 0.85 * self.canvas_size:
            raise ConfigError(f"object_longest_side={self.object_longest_side} leaves no room for the MP change "
                              f"on canvas_size={self.canvas_size}; use at most {0.85 * self.canvas_size:.0f}")


# ---------------------------------------------------------------------------------------------- geometry
def cross_section(kind: str, bulge: float, n: int = 96) -> np.ndarray:
    """[n, 2] closed cross-section (unit size): a circle of radius 1, or a square of half side 1 whose edges
    are circular arcs bowed outwards by ``bulge`` (sagitta / half side; 0 = straight edges)."""
    if kind == "circle":
        a = 2 * np.pi * np.arange(n) / n
        return np.stack([np.cos(a), np.sin(a)], 1)
    per = n // 4
    corners = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], float)
    pts = []
    for i in range(4):
        a, b = corners[i], corners[(i + 1) % 4]
        t = np.arange(per) / per
        p = a[None] + t[:, None] * (b - a)[None]
        out = (a + b) / 2 / np.linalg.norm((a + b) / 2)  # outward normal of the edge
        p = p + out[None] * bulge * (1 - (2 * t - 1) ** 2)[:, None]  # parabolic bow: sagitta at the midpoint
        pts.append(p)
    return np.concatenate(pts)


def geon_mesh(cs: str, length: float, bend_deg: float = 0.0, taper: float = 1.0, bulge: float = 0.0,
              rings: int = 48):
    """A trimesh geon: ``cs`` cross-section (unit size) swept along an axis of arc length ``length`` bent by
    ``bend_deg`` in the x-y plane (about its middle), scaled linearly from 1 to ``taper`` along the axis;
    both ends capped. Centred at its vertices' mean."""
    import trimesh

    sec = cross_section(cs, bulge)
    m = len(sec)
    t = np.linspace(0, 1, rings)
    beta = np.deg2rad(bend_deg)
    if abs(beta) < 1e-9:
        p = np.stack([length * (t - 0.5), np.zeros_like(t), np.zeros_like(t)], 1)
        tang = np.tile([1.0, 0, 0], (rings, 1))
    else:
        R = length / beta
        phi = beta * (t - 0.5)
        p = np.stack([R * np.sin(phi), R * (1 - np.cos(phi)), np.zeros_like(t)], 1)
        tang = np.stack([np.cos(phi), np.sin(phi), np.zeros_like(t)], 1)
    n1 = np.stack([-tang[:, 1], tang[:, 0], np.zeros(rings)], 1)
    n2 = np.tile([0, 0, 1.0], (rings, 1))
    s = 1 + (taper - 1) * t
    verts = (p[:, None, :] + s[:, None, None] * (sec[None, :, 0, None] * n1[:, None, :]
                                                 + sec[None, :, 1, None] * n2[:, None, :])).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(rings - 1), np.arange(m), indexing="ij")
    a, b = (i * m + j).ravel(), (i * m + (j + 1) % m).ravel()
    side = np.concatenate([np.stack([a, b, b + m], 1), np.stack([a, b + m, a + m], 1)])
    start, end = len(verts), len(verts) + 1
    verts = np.concatenate([verts, p[:1], p[-1:]])
    jj = np.arange(m)
    caps = np.concatenate([np.stack([np.full(m, start), (jj + 1) % m, jj], 1),
                           np.stack([np.full(m, end), (rings - 1) * m + jj, (rings - 1) * m + (jj + 1) % m], 1)])
    mesh = trimesh.Trimesh(verts, np.concatenate([side, caps]), process=False)
    mesh.apply_translation(-verts.mean(0))
    return mesh


def _view_rotation() -> np.ndarray:
    """World-from-object rotation of the generic view (elevation about x, then azimuth about y)."""
    e, a = np.deg2rad(VIEW_ELEVATION), np.deg2rad(VIEW_AZIMUTH)
    rx = np.array([[1, 0, 0], [0, np.cos(e), -np.sin(e)], [0, np.sin(e), np.cos(e)]])
    ry = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    return rx @ ry


def geon_params(dim: str, value: float, cs: str, length: float, base: dict) -> dict:
    kw = {"cs": cs, "length": length, "bend_deg": base.get("axis", 0.0), "taper": base.get("taper", 1.0),
          "bulge": 0.0}
    kw[{"axis": "bend_deg", "taper": "taper", "cross_section": "bulge"}[dim]] = float(value)
    return kw


@functools.lru_cache(maxsize=96)
def _cast(key: tuple, size: int, scale: float, cx: float, cy: float, k: int):
    """Orthographic ray cast of the geon ``key`` (sorted geon_params items): per sub-sample (size·k square)
    the hit mask, the visible-side world normal and the depth. Image x right, y down; world y up."""
    mesh = geon_mesh(**dict(key))
    mesh.apply_transform(np.block([[_view_rotation(), np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]]))
    n = size * k
    # rays only over the mesh's projected box (the rest cannot hit): ~3x fewer rays
    px = mesh.vertices[:, 0] * scale + cx
    py = -mesh.vertices[:, 1] * scale + cy
    c0, c1 = max(int(np.floor(px.min() * k)) - 1, 0), min(int(np.ceil(px.max() * k)) + 1, n)
    r0, r1 = max(int(np.floor(py.min() * k)) - 1, 0), min(int(np.ceil(py.max() * k)) + 1, n)
    g = (np.arange(n) + 0.5) / k  # sub-sample centres in pixels
    X, Y = np.meshgrid((g[c0:c1] - cx) / scale, -(g[r0:r1] - cy) / scale)
    far = float(np.abs(mesh.vertices).max()) * 4 + 10
    origins = np.stack([X.ravel(), Y.ravel(), np.full(X.size, far)], 1)
    dirs = np.tile([0.0, 0.0, -1.0], (len(origins), 1))
    tri = mesh.ray.intersects_first(origins, dirs)
    hit = tri >= 0
    normals = np.zeros((len(tri), 3))
    depth = np.full(len(tri), np.inf)
    fn = mesh.face_normals[tri[hit]]
    v0 = mesh.vertices[mesh.faces[tri[hit], 0]]
    with np.errstate(divide="ignore", invalid="ignore"):  # ray along -z: t = n·(v0 - o) / (n·d), n·d = -n_z
        depth[hit] = np.einsum("ij,ij->i", fn, v0 - origins[hit]) / -fn[:, 2]
    normals[hit] = fn * np.where(fn[:, 2] < 0, -1.0, 1.0)[:, None]  # the side facing the viewer (+z)
    full_hit = np.zeros((n, n), bool)
    full_n = np.zeros((n, n, 3))
    full_d = np.full((n, n), np.inf)
    full_hit[r0:r1, c0:c1] = hit.reshape(r1 - r0, c1 - c0)
    full_n[r0:r1, c0:c1] = normals.reshape(r1 - r0, c1 - c0, 3)
    full_d[r0:r1, c0:c1] = depth.reshape(r1 - r0, c1 - c0)
    return full_hit, full_n, full_d


def frame(cfg: GeonConfig, cs: str, length: float, dim: str, base: dict) -> tuple[float, float, float]:
    """(scale px per unit, centre x, centre y) fitting the reference geon's projection to
    ``object_longest_side`` px, centred (shared by the item's three geons)."""
    ref = geon_mesh(**geon_params(dim, DIMENSIONS[dim]["reference"], cs, length, base))
    v = ref.vertices @ _view_rotation().T
    lo, hi = v[:, :2].min(0), v[:, :2].max(0)
    scale = cfg.object_longest_side / float(max(hi - lo))
    mid = (lo + hi) / 2
    return scale, cfg.canvas_size / 2 - mid[0] * scale, cfg.canvas_size / 2 + mid[1] * scale


def silhouette(cfg: GeonConfig, params: dict, fr, k: int = 3) -> np.ndarray:
    """float [H, W] coverage of the geon's silhouette."""
    hit, _, _ = _cast(tuple(sorted(params.items())), cfg.canvas_size, *fr, k)
    n = cfg.canvas_size
    return hit.reshape(n, k, n, k).mean(axis=(1, 3))


def pixel_change(cfg: GeonConfig, a: dict, b: dict, fr, k: int = 3) -> float:
    """Silhouette pixels (coverage on a k × k sub-pixel grid) that differ between geons ``a`` and ``b`` in
    frame ``fr``."""
    return float(np.abs(silhouette(cfg, a, fr, k) - silhouette(cfg, b, fr, k)).sum())


@functools.lru_cache(maxsize=64)
def solve_mp(cfg: GeonConfig, index: int) -> tuple[float, float, float]:
    """(MP value, NAP pixel change, MP pixel change) of item ``index``: bisection between the reference value
    and the dimension's limit for the value whose silhouette change equals the NAP change (the change grows
    monotonically with the distance from the reference)."""
    dim, cs, length, base = ITEMS[index]
    d = DIMENSIONS[dim]
    fr = frame(cfg, cs, length, dim, base)
    ref = geon_params(dim, d["reference"], cs, length, base)
    nap = geon_params(dim, d["nap"], cs, length, base)
    target, target_1 = pixel_change(cfg, ref, nap, fr), pixel_change(cfg, ref, nap, fr, k=1)
    def change(v, k):
        return pixel_change(cfg, ref, geon_params(dim, v, cs, length, base), fr, k)

    lo, hi = d["reference"], d["mp_limit"]
    for _ in range(9):  # coarse, at 1 sample per pixel (fast) ...
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if change(mid, 1) < target_1 else (lo, mid)
    # ... then at 3 × 3 samples (the rendered images' sampling) in a bracket around it
    w = abs(d["mp_limit"] - d["reference"]) / 64 * np.sign(d["mp_limit"] - d["reference"])
    lo, hi = max(lo - w, d["reference"]) if w > 0 else min(lo - w, d["reference"]), hi + w
    if not change(lo, 3) <= target <= change(hi, 3):
        lo, hi = d["reference"], d["mp_limit"]
    for _ in range(7):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if change(mid, 3) < target else (lo, mid)
    mp = (lo + hi) / 2
    return mp, target, pixel_change(cfg, ref, geon_params(dim, mp, cs, length, base), fr)


# ---------------------------------------------------------------------------------------------- rendering
def _dilate(mask: np.ndarray, radius: float) -> np.ndarray:
    from scipy import ndimage

    r = int(np.ceil(radius))
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    return ndimage.binary_dilation(mask, structure=(xx ** 2 + yy ** 2) <= radius ** 2 + 1e-9)


def draw(cfg: GeonConfig, params: dict, fr, rendering: str, bg, k: int = 3) -> np.ndarray:
    hit, normals, depth = _cast(tuple(sorted(params.items())), cfg.canvas_size, *fr, k)
    n = cfg.canvas_size
    img = new_canvas(n, bg)
    colour = np.asarray(cfg.object_color, np.float32)
    if rendering == "silhouette":
        a = hit.astype(np.float32)
        layer = np.broadcast_to(colour, (n * k, n * k, 3))
    elif rendering == "shaded":
        lam = np.clip(normals @ (LIGHT / np.linalg.norm(LIGHT)), 0, 1)
        a = hit.astype(np.float32)
        layer = (0.2 + 0.75 * lam)[..., None] * colour
    else:
        edge = np.zeros_like(hit)
        for axis in (0, 1):
            h2 = np.roll(hit, -1, axis)
            n2 = np.roll(normals, -1, axis)
            d2 = np.roll(depth, -1, axis)
            both = hit & h2
            crease = both & ((normals * n2).sum(-1) < np.cos(np.deg2rad(30)))
            with np.errstate(invalid="ignore"):  # inf - inf off the object; masked by ``both``
                jump = both & (np.abs(depth - d2) > DEPTH_JUMP)
            e = (hit != h2) | crease | jump
            e[-1 if axis == 0 else slice(None), slice(None) if axis == 0 else -1] = False
            edge |= e
        a = _dilate(edge, cfg.line_width * k / 2).astype(np.float32)
        layer = np.broadcast_to(colour, (n * k, n * k, 3))
    if not cfg.antialias:
        k_img = (a.reshape(n, k, n, k).mean(axis=(1, 3)) >= 0.5).astype(np.float32)
        lay = layer.reshape(n, k, n, k, 3).mean(axis=(1, 3))
        img += k_img[..., None] * (lay - img)
        return to_uint8(img)
    # premultiplied box filter: the mean colour of the covered sub-samples, weighted by coverage
    cov = a.reshape(n, k, n, k).mean(axis=(1, 3))
    prem = (a[..., None] * layer).reshape(n, k, n, k, 3).mean(axis=(1, 3))
    img = img * (1 - cov[..., None]) + prem
    return to_uint8(img)


def items(cfg: GeonConfig, seed: int):
    if cfg.source:  # a user's copy of the original stimuli (one rendering)
        rendering = cfg.renderings[0]
        for role, stem, path in source_images(cfg.source, ROLES):
            rng = item_rng(seed, stem, role)
            yield Item(f"{rendering}_{role}", f"{rendering}_{role}_{stem}",
                       {"rendering": rendering, "role": role, "source_file": stem, "_path": path,
                        **background_params(cfg, rng)}, f"{rendering}_{stem}")
        return
    cap = dict(zip(RENDERINGS, cfg.items_per_rendering))
    for pos, idx in enumerate(cfg.items):
        dim, cs, length, base = ITEMS[idx]
        for rendering in cfg.renderings:
            if pos >= cap[rendering]:
                continue
            rng = item_rng(seed, idx, rendering)
            bg = background_params(cfg, rng)
            for role in ROLES:
                yield Item(f"{rendering}_{role}", f"{rendering}_{role}_{idx:02d}",
                           {"item": idx, "rendering": rendering, "role": role, "dimension": dim,
                            "cross_section": cs, "length": length, "base_bend_deg": base.get("axis", 0.0),
                            "base_taper": base.get("taper", 1.0), "value_unit": DIMENSIONS[dim]["unit"],
                            **rgb_columns("object", cfg.object_color), **bg},
                           f"{rendering}_{idx:02d}")


def render(cfg: GeonConfig, item: Item):
    p = item.params
    if cfg.source:
        return place_image(p["_path"], cfg.canvas_size, cfg.object_longest_side, background_rgb(p)), {}
    dim, cs, length, base = ITEMS[p["item"]]
    d = DIMENSIONS[dim]
    mp, nap_change, mp_change = solve_mp(cfg, p["item"])
    value = {"reference": d["reference"], "nap": d["nap"], "mp": mp}[p["role"]]
    fr = frame(cfg, cs, length, dim, base)
    img = draw(cfg, geon_params(dim, value, cs, length, base), fr, p["rendering"], background_rgb(p))
    change = {"reference": 0.0, "nap": nap_change, "mp": mp_change}[p["role"]]
    return img, {"value": float(value), "reference_value": float(d["reference"]), "pixel_change": change,
                 "scale_px_per_unit": fr[0]}


register_mindset("nap_vs_mp_geons", GeonConfig,
                 "NAP vs MP, 3D geons (axis bend, taper, cross-section edges): reference / NAP / MP of equal "
                 "silhouette pixel change, shaded / outline / silhouette",
                 "mindset-vision.txt C.1.8; Kayaert, Biederman & Vogels 2003", items=items, render=render,
                 conditions=[f"{r}_{o}" for r in RENDERINGS for o in ROLES],
                 paper={"items": list(range(len(ITEMS))), "renderings": list(RENDERINGS),
                        "items_per_rendering": list(ITEMS_PER_RENDERING)}, lite={"items": [6, 8]},
                 random=False,
                 figure="procedural geons (trimesh), after Amir, Biederman & Hayworth 2012")
