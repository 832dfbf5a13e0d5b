"""MindSet lightness illusions (``mindset-vision.txt`` C.2.6-C.2.8): the "colour picker" training set
(grayscale shapes), the lightness-contrast display and Adelson's checker-shadow scene, each with a small
white arrow marking the target pixel.

The marker (:func:`arrow`): a white arrow pointing straight down whose tip touches the top edge of the
target pixel (row ``target_y``, column ``target_x``; the pixel is [x, x+1) × [y, y+1)), so the arrow never
covers the pixel it marks: its value in the PNG is the surface's own (``target_value``, read from the
final image). At ``arrow_size`` 1 the arrow is 11 px tall and 6 px wide.

* ``grayscale_shapes`` — 20 overlapping shapes (circle, ellipse, circle sector, circle segment, rectangle,
  rounded rectangle, heptagon, irregular polygon) of random position, size, rotation and grey; the target is
  drawn uniformly among the pixels whose 3 × 3 neighbourhood has one grey (the label is not an edge blend).
  Shapes are rasterised by PIL at 4 × 4 supersampling and box-averaged (the original's library; the labels
  are read from the result).
* ``lightness_contrast`` — a grey square (``square_grey`` 200) on a uniform background swept 0..240 step 20,
  the arrow on a grid of positions: a colour picker shows the effect if its estimate of the same square grey
  falls as the background lightens.
* ``adelson_checker_shadow`` — the checker-shadow scene ray cast from a 3D description (:class:`AdelsonScene`:
  a 5 × 5 checkerboard on the plane z = 0, a cylinder standing on it, a directional light and ambient light,
  Lambertian shading, hard shadows, 3 × 3 rays per pixel). The floor's irradiance is ``ambient`` in shadow
  and ``ambient + sun`` in light, and the light and dark checks' albedos are in the ratio (ambient + sun) /
  ambient, so the lit dark check A and the shadowed light check B have the same radiance exactly: equal
  pixel values, recorded (``patch_a_value``, ``patch_b_value``) and measured by the tests. The arrow visits a
  grid of positions over the whole canvas (step ``arrow_step`` px); the condition names what it points at.
  ``arrow_grid=original`` (``paper``): the original's targets, x and y = step, 2·step, … < canvas (44 × 44 =
  1,936 at 224 px, step 5), so in the first two rows the arrow is cut by the top edge (the original's 11 px
  arrow leaves the canvas there too), the target pixel itself always on the canvas;
  ``arrow_grid=inside`` (preset ``clean``): only rows where the whole arrow is on the canvas and columns 4 px
  from the sides. ``target_images`` adds an image pointing at the centre pixel of check A and of check B
  when the grid misses them (``clean`` and ``lite``; not ``paper``: the original has none).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, background_params, background_rgb, item_rng, new_canvas, paint, polygon,
                     register_mindset, to_uint8)

ARROW_GREY = 255


# ============================================================================================ the marker
def arrow_points(target_x: int, target_y: int, size: float = 1.0) -> np.ndarray:
    """[7, 2] vertices (x, y) of the marker for pixel (row target_y, column target_x): tip at the middle of
    the pixel's top edge, head 6 × 5 px, shaft 1.5 × 6 px, times ``size``."""
    xt, yt = target_x + 0.5, float(target_y)
    hw, hh, sw, sl = 3.0 * size, 5.0 * size, 0.75 * size, 6.0 * size
    return np.array([(xt, yt), (xt + hw, yt - hh), (xt + sw, yt - hh), (xt + sw, yt - hh - sl),
                     (xt - sw, yt - hh - sl), (xt - sw, yt - hh), (xt - hw, yt - hh)])


def arrow_height(size: float) -> int:
    """Rows above the target pixel the marker occupies (a target must have at least this many above it)."""
    return int(math.ceil(11.0 * size)) + 1


def draw_arrow(img: np.ndarray, target_x: int, target_y: int, size: float, antialias: bool) -> None:
    """Paint the marker on a float canvas [H, W, C] (in place; C = 1 or 3); the target pixel is never touched."""
    paint(img, polygon(arrow_points(target_x, target_y, size)), (ARROW_GREY,) * img.shape[2], antialias)


class _ArrowConfigMixin:
    def _check_arrow(self):
        if arrow_height(self.arrow_size) + 4 > self.canvas_size:
            raise ConfigError(f"arrow_size={self.arrow_size}: the marker does not fit a canvas_size="
                              f"{self.canvas_size} canvas; lower it")


# ============================================================================================ grayscale shapes
SHAPE_TYPES = ("circle", "ellipse", "sector", "segment", "rectangle", "rounded_rectangle", "heptagon",
               "irregular_polygon")


@dataclasses.dataclass(frozen=True)
class GrayscaleShapesConfig(MindsetConfig, _ArrowConfigMixin):
    num_samples: int = field(5000, "images", range=(0, 10_000_000))
    num_shapes: int = field(20, "overlapping shapes per image", range=(1, 200))
    shape_size: tuple = field((0.05, 0.35), "[min, max] shape radius (fraction of canvas_size)", range=(0.01, 1.0))
    arrow_size: float = field(1.0, "marker scale (1 = 11 px tall)", range=(0.3, 5.0))

    def __post_init__(self):
        super().__post_init__()
        if len(self.shape_size) != 2 or self.shape_size[0] > self.shape_size[1]:
            raise ConfigError(f"shape_size={list(self.shape_size)!r}: must be [min, max] with min <= max")
        self._check_arrow()


def _shape_outline(kind: str, cx: float, cy: float, r: float, rot: float, rng) -> np.ndarray:
    """[N, 2] polygon (x, y) of one random shape of radius ~r centred at (cx, cy), rotated by rot radians."""
    if kind in ("circle", "ellipse"):
        t = np.linspace(0, 2 * np.pi, 72, endpoint=False)
        a, b = (r, r) if kind == "circle" else (r, r * rng.uniform(0.3, 0.9))
        pts = np.stack([a * np.cos(t), b * np.sin(t)], 1)
    elif kind == "sector":
        span = rng.uniform(0.3, 1.7) * np.pi
        t = np.linspace(-span / 2, span / 2, 48)
        pts = np.concatenate([[[0.0, 0.0]], np.stack([r * np.cos(t), r * np.sin(t)], 1)])
    elif kind == "segment":
        span = rng.uniform(0.5, 1.6) * np.pi
        t = np.linspace(-span / 2, span / 2, 48)
        pts = np.stack([r * np.cos(t), r * np.sin(t)], 1)
    elif kind in ("rectangle", "rounded_rectangle"):
        w, h = r, r * rng.uniform(0.3, 1.0)
        if kind == "rectangle":
            pts = np.array([(-w, -h), (w, -h), (w, h), (-w, h)])
        else:
            c = min(w, h) * rng.uniform(0.2, 0.5)
            q = np.linspace(0, np.pi / 2, 10)
            corners = [(w - c, h - c, 0), (-w + c, h - c, 1), (-w + c, -h + c, 2), (w - c, -h + c, 3)]
            pts = np.concatenate([np.stack([x + c * np.cos(q + k * np.pi / 2), y + c * np.sin(q + k * np.pi / 2)], 1)
                                  for x, y, k in corners])
    elif kind == "heptagon":
        t = 2 * np.pi * np.arange(7) / 7
        pts = np.stack([r * np.cos(t), r * np.sin(t)], 1)
    else:  # irregular: 3-10 vertices at sorted random angles and radii (star-shaped, so simple)
        n = int(rng.integers(3, 11))
        t = np.sort(rng.uniform(0, 2 * np.pi, n))
        rad = r * rng.uniform(0.4, 1.0, n)
        pts = np.stack([rad * np.cos(t), rad * np.sin(t)], 1)
    c, s = math.cos(rot), math.sin(rot)
    return np.stack([cx + c * pts[:, 0] - s * pts[:, 1], cy + s * pts[:, 0] + c * pts[:, 1]], 1)


def grayscale_shapes_items(cfg: GrayscaleShapesConfig, seed: int):
    for k in range(cfg.num_samples):
        rng = item_rng(seed, "shapes", k)
        # the shapes and the target are drawn at render time from this image's own generator (keeps the
        # serial items pass cheap); the background colour here, so it is a column
        yield Item("shapes", f"shapes_{k:05d}", {"num_shapes": cfg.num_shapes, "_seed": int(seed), "_k": k,
                                                 **background_params(cfg, rng)})


def random_shapes(cfg: GrayscaleShapesConfig, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """(grey, polygon [N, 2]) of each shape, in drawing order."""
    S = cfg.canvas_size
    shapes = []
    for _ in range(cfg.num_shapes):
        kind = SHAPE_TYPES[int(rng.integers(len(SHAPE_TYPES)))]
        cx, cy = rng.uniform(0, S, 2)
        r = float(rng.uniform(*cfg.shape_size)) * S
        shapes.append((int(rng.integers(0, 256)), _shape_outline(kind, cx, cy, r, rng.uniform(0, 2 * np.pi), rng)))
    return shapes


def _uniform_interior(grey: np.ndarray) -> np.ndarray:
    """Pixels whose 3 × 3 neighbourhood is a single grey (False on the border)."""
    out = np.zeros(grey.shape, bool)
    c = grey[1:-1, 1:-1]
    ok = np.ones(c.shape, bool)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            ok &= grey[1 + di:grey.shape[0] - 1 + di, 1 + dj:grey.shape[1] - 1 + dj] == c
    out[1:-1, 1:-1] = ok
    return out


def grayscale_shapes_render(cfg: GrayscaleShapesConfig, item: Item):
    from PIL import Image, ImageDraw

    S, k = cfg.canvas_size, 4 if cfg.antialias else 1
    p = item.params
    bg = background_rgb(p)
    grey = len(set(bg)) == 1  # all shapes are grey: one channel is the whole image (3x less to draw and resize)
    im = Image.new("L" if grey else "RGB", (S * k, S * k), bg[0] if grey else bg)
    draw = ImageDraw.Draw(im)
    rng = item_rng(p["_seed"], "shapes_render", p["_k"])
    for g, pts in random_shapes(cfg, rng):
        draw.polygon((pts * k).ravel().tolist(), fill=g if grey else (g, g, g))
    if k > 1:
        im = im.resize((S, S), Image.Resampling.BOX)
    arr = np.asarray(im)
    arr = arr[:, :, None] if grey else arr
    # target: uniformly among clean pixels (one colour around them) with room for the marker above
    key = arr[..., 0].astype(np.int32)
    if not grey:
        key = key * 65536 + arr[..., 1].astype(np.int32) * 256 + arr[..., 2]
    ok = _uniform_interior(key)
    ok[:arrow_height(cfg.arrow_size)] = False
    ok[:, :4] = False
    ok[:, -4:] = False
    cand = np.flatnonzero(ok)
    if not len(cand):
        from ..writer import SkipItem

        raise SkipItem("no pixel with a uniform 3 × 3 neighbourhood and room for the marker")
    idx = int(cand[rng.integers(len(cand))])
    ty, tx = divmod(idx, S)
    # the colour picker's label: the pixel's grey (on a coloured background, the mean of R, G, B rounded
    # half up; the channels are columns too)
    rgb = [int(v) for v in (arr[ty, tx] if not grey else arr[ty, tx].repeat(3))]
    value = (sum(rgb) * 2 + 3) // 6
    img = arr.astype(np.float32)
    draw_arrow(img, tx, ty, cfg.arrow_size, cfg.antialias)
    out = to_uint8(img)
    if grey:
        out = np.broadcast_to(out, (S, S, 3))
    return out, {"target_x": tx, "target_y": ty, "target_value": value, "target_r": rgb[0], "target_g": rgb[1],
                 "target_b": rgb[2]}


register_mindset(
    "grayscale_shapes", GrayscaleShapesConfig,
    "Grayscale shapes: 20 overlapping shapes of random grey, a white arrow marking one pixel — the colour "
    "picker's training set; decoder target target_value (0-255)", "mindset-vision.txt C.2.6",
    items=grayscale_shapes_items, render=grayscale_shapes_render, conditions=("shapes",),
    paper={"num_samples": 5000}, lite={"num_samples": 6}, figure="MindSet Fig. 10")


# ============================================================================================ lightness contrast
@dataclasses.dataclass(frozen=True)
class LightnessContrastConfig(MindsetConfig, _ArrowConfigMixin):
    square_grey: int = field(200, "grey of the centre square (0-255)", range=(0, 255))
    square_size: float = field(0.3, "side of the centre square (fraction of canvas_size)", range=(0.05, 0.95))
    background_min: int = field(0, "darkest background grey", range=(0, 255))
    background_max: int = field(240, "lightest background grey (inclusive)", range=(0, 255))
    background_step: int = field(20, "background grey step", range=(1, 255))
    arrow_positions: int = field(7, "arrow positions per axis (a grid over the canvas)", range=(1, 512))
    arrow_size: float = field(1.0, "marker scale (1 = 11 px tall)", range=(0.3, 5.0))

    def __post_init__(self):
        super().__post_init__()
        if self.background != "fixed" or tuple(self.background_color) != (0, 0, 0):
            raise ConfigError(f"background={self.background!r}, background_color={list(self.background_color)}: "
                              "lightness_contrast sweeps the background grey itself (background_min/max/step); "
                              "leave background and background_color at their defaults")
        if self.background_min > self.background_max:
            raise ConfigError(f"background_min={self.background_min} must be <= background_max={self.background_max}")
        self._check_arrow()


def _grid(cfg, lo_y: int, step: int | None = None, count: int | None = None) -> tuple[list[int], list[int]]:
    """Target rows (from lo_y, leaving room for the marker) and columns (4 px from the sides)."""
    S = cfg.canvas_size
    if step is not None:
        return list(range(lo_y, S - 2, step)), list(range(4, S - 4, step))
    rows = np.unique(np.round(np.linspace(lo_y, S - 5, count)).astype(int)).tolist()
    cols = np.unique(np.round(np.linspace(4, S - 5, count)).astype(int)).tolist()
    return rows, cols


def lightness_items(cfg: LightnessContrastConfig, seed: int):
    rows, cols = _grid(cfg, arrow_height(cfg.arrow_size) + 2, count=cfg.arrow_positions)
    S = cfg.canvas_size
    half = cfg.square_size * S / 2
    levels = range(cfg.background_min, cfg.background_max + 1, cfg.background_step)
    for bg in levels:
        for ty in rows:
            for tx in cols:
                on = bool(S / 2 - half <= tx + 0.5 <= S / 2 + half and S / 2 - half <= ty + 0.5 <= S / 2 + half)
                yield Item(f"background_{bg:03d}", f"background_{bg:03d}_y{ty:03d}_x{tx:03d}", {
                    "background_grey": bg, "square_grey": cfg.square_grey, "square_side": 2 * half,
                    "target_x": tx, "target_y": ty, "target_on_square": on},
                    set_id=f"arrow_y{ty:03d}_x{tx:03d}" if len(levels) > 1 else "")  # a set needs 2+ images


def lightness_render(cfg: LightnessContrastConfig, item: Item):
    from .common import rect

    p = item.params
    S = cfg.canvas_size
    img = new_canvas(S, (p["background_grey"],) * 3)
    h = p["square_side"] / 2
    paint(img, rect(S / 2 - h, S / 2 - h, S / 2 + h, S / 2 + h), (p["square_grey"],) * 3, cfg.antialias)
    value = int(to_uint8(img[p["target_y"], p["target_x"], :1])[0])
    draw_arrow(img, p["target_x"], p["target_y"], cfg.arrow_size, cfg.antialias)
    return to_uint8(img), {"target_value": value}


def _lightness_conditions():
    return tuple(f"background_{g:03d}" for g in range(0, 256))


register_mindset(
    "lightness_contrast", LightnessContrastConfig,
    "Lightness contrast: a grey square (200) on backgrounds 0..240, the arrow on a grid of positions (one set "
    "per position across backgrounds) — for the colour picker; target_value is the marked pixel's grey",
    "mindset-vision.txt C.2.7", items=lightness_items, render=lightness_render,
    conditions=_lightness_conditions(), random=False,
    paper={"background_min": 0, "background_max": 240, "background_step": 20, "arrow_positions": 7},
    lite={"background_step": 120, "arrow_positions": 3}, figure="MindSet Fig. 3 (lightness contrast panel)")


# ============================================================================================ Adelson
@dataclasses.dataclass(frozen=True)
class AdelsonScene:
    """The checker-shadow scene in world units (z up; one check = 1 unit).

    Board: ``n × n`` checks on z = 0 centred at the origin, check (i, j) covering
    x ∈ [i − n/2, i − n/2 + 1], y ∈ [j − n/2, j − n/2 + 1]; light where i + j is even. Cylinder: axis
    vertical through (cyl_x, cyl_y), radius, height. Light: direction towards the light at ``light_azimuth``
    (degrees from +x towards +y) and ``light_elevation`` above the horizon; irradiance on a horizontal surface
    ``sun`` from it plus ``ambient`` everywhere (a surface with normal n receives ambient + sun · max(0, n·l)
    / l_z when lit). Camera: pinhole at ``camera_distance`` from ``look_at``, seen from ``camera_azimuth``
    and ``camera_elevation``, vertical field of view ``fov`` degrees. Albedos: light checks ``albedo_light``,
    dark checks albedo_light · ambient / (ambient + sun), so a lit dark check and a shadowed light check have
    the same radiance (Adelson's construction). Pixel = 255 × radiance (linear).
    """

    n: int = 5
    cyl_x: float = 1.5
    cyl_y: float = -1.5
    cyl_radius: float = 0.9
    cyl_height: float = 2.2
    cyl_albedo: float = 0.55
    light_azimuth: float = -45.0
    light_elevation: float = 34.0
    ambient: float = 0.5
    sun: float = 0.5
    albedo_light: float = 0.8
    camera_azimuth: float = -135.0
    camera_elevation: float = 42.0
    camera_distance: float = 10.5
    look_at: tuple = (0.0, 0.0, 0.4)
    fov: float = 38.0

    @property
    def albedo_dark(self) -> float:
        return self.albedo_light * self.ambient / (self.ambient + self.sun)


def _cyl_hit(o, d, sc: AdelsonScene):
    """Nearest t > 1e-6 where rays o + t·d ([..., 3]) meet the cylinder (side or top cap); inf if none."""
    ox, oy = o[..., 0] - sc.cyl_x, o[..., 1] - sc.cyl_y
    dx, dy = d[..., 0], d[..., 1]
    a = dx * dx + dy * dy
    b = 2 * (ox * dx + oy * dy)
    c = ox * ox + oy * oy - sc.cyl_radius ** 2
    disc = b * b - 4 * a * c
    t = np.full(np.broadcast_shapes(np.shape(ox), np.shape(dx)), np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = np.sqrt(np.where(disc >= 0, disc, np.nan))
        for tt in ((-b - sq) / (2 * a), (-b + sq) / (2 * a)):
            z = o[..., 2] + tt * d[..., 2]
            ok = (tt > 1e-6) & (z >= 0) & (z <= sc.cyl_height)
            t = np.where(ok & (tt < t), tt, t)
        tc = (sc.cyl_height - o[..., 2]) / d[..., 2]
        px, py = ox + tc * dx, oy + tc * dy
        ok = (tc > 1e-6) & (px * px + py * py <= sc.cyl_radius ** 2)
        t = np.where(ok & (tc < t), tc, t)
    return t


def _light_dir(sc: AdelsonScene) -> np.ndarray:
    az, el = math.radians(sc.light_azimuth), math.radians(sc.light_elevation)
    return np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])


def in_shadow(x, y, sc: AdelsonScene) -> np.ndarray:
    """Whether floor points (x, y, 0) are in the cylinder's shadow (their ray to the light meets it)."""
    o = np.stack(np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float), np.zeros(np.shape(x))), -1)
    return np.isfinite(_cyl_hit(o, np.broadcast_to(_light_dir(sc), o.shape), sc))


def _camera(sc: AdelsonScene):
    """The look-at camera of the scene: eye position, unit forward, right and up vectors (+z is world up) and
    tan(fov / 2), for rays through image positions u (right) and v (up) in [-1, 1]."""
    az, el = math.radians(sc.camera_azimuth), math.radians(sc.camera_elevation)
    target = np.asarray(sc.look_at, float)
    eye = target + sc.camera_distance * np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az),
                                                  math.sin(el)])
    fwd = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    return eye, fwd, right, up, math.tan(math.radians(sc.fov) / 2)


@functools.lru_cache(maxsize=4)
def render_adelson(sc: AdelsonScene, size: int, background: tuple, ss: int = 3):
    """Ray cast the scene: (image float32 [size, size] 0-255 grey, label map int8 [size, size] from each
    pixel's centre ray: 0 background, 1 light check lit, 2 light check shadowed, 3 dark check lit,
    4 dark check shadowed, 5 cylinder). ``ss`` × ``ss`` rays per pixel, averaged (ss odd: the middle ray is
    the pixel centre's). The background is drawn in ``background`` (grey)."""
    eye, fwd, right, up, tan = _camera(sc)
    off = (np.arange(ss) + 0.5) / ss
    u = ((np.arange(size)[:, None] + off[None, :]).ravel() / size * 2 - 1) * tan   # columns → right
    v = (1 - (np.arange(size)[:, None] + off[None, :]).ravel() / size * 2) * tan   # rows → up
    d = fwd + u[None, :, None] * right + v[:, None, None] * up                     # [rows·ss, cols·ss, 3]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    o = np.broadcast_to(eye, d.shape)
    L = _light_dir(sc)
    t_cyl = _cyl_hit(o, d, sc)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_floor = np.where(d[..., 2] < 0, -eye[2] / d[..., 2], np.inf)
    p = eye + t_floor[..., None] * np.where(np.isfinite(t_floor)[..., None], d, 0)
    half = sc.n / 2
    on_board = np.isfinite(t_floor) & (np.abs(p[..., 0]) <= half) & (np.abs(p[..., 1]) <= half) & (t_floor < t_cyl)
    i = np.clip(np.floor(p[..., 0] + half), 0, sc.n - 1).astype(int)
    j = np.clip(np.floor(p[..., 1] + half), 0, sc.n - 1).astype(int)
    light = (i + j) % 2 == 0
    shadow = on_board & in_shadow(p[..., 0], p[..., 1], sc)
    # irradiance: ambient + sun in light (n·l / l_z = 1 exactly on the floor), ambient in shadow
    e_floor = np.where(shadow, sc.ambient, sc.ambient + sc.sun)
    rad = np.where(light, sc.albedo_light, sc.albedo_dark) * e_floor
    hit_cyl = np.isfinite(t_cyl) & ~on_board
    q = eye + np.where(hit_cyl, t_cyl, 0)[..., None] * d
    nx, ny = q[..., 0] - sc.cyl_x, q[..., 1] - sc.cyl_y
    top = q[..., 2] >= sc.cyl_height - 1e-9
    nrm = np.where(top[..., None], [0.0, 0.0, 1.0], np.stack([nx, ny, np.zeros_like(nx)], -1) / sc.cyl_radius)
    ndotl = np.clip(nrm @ L, 0, None)
    rad_cyl = sc.cyl_albedo * (sc.ambient + sc.sun * ndotl / L[2])
    value = np.where(on_board, 255.0 * rad, np.where(hit_cyl, 255.0 * np.clip(rad_cyl, 0, 1), float(background)))
    img = value.reshape(size, ss, size, ss).mean(axis=(1, 3)).astype(np.float32)
    c = ss // 2
    lab = np.zeros(on_board.shape, np.int8)
    lab[on_board] = np.where(light, np.where(shadow, 2, 1), np.where(shadow, 4, 3))[on_board]
    lab[hit_cyl] = 5
    return img, lab[c::ss, c::ss].copy()


def target_checks(sc: AdelsonScene) -> tuple[tuple[int, int], tuple[int, int]]:
    """Adelson's two targets: B, the light check wholly in shadow nearest the board's centre; A, the dark
    check wholly in light nearest B (the pair a viewer compares). Checks as (i, j); found by sampling each
    check's area on a 21 × 21 grid."""
    t = np.linspace(0.02, 0.98, 21)
    half = sc.n / 2
    full_shadow, full_light = [], []
    for i in range(sc.n):
        for j in range(sc.n):
            xs, ys = np.meshgrid(i - half + t, j - half + t)
            sh = in_shadow(xs, ys, sc)
            cyl = np.hypot(xs - sc.cyl_x, ys - sc.cyl_y) <= sc.cyl_radius + 0.05  # under the cylinder: hidden
            if cyl.any():
                continue
            if sh.all() and (i + j) % 2 == 0:
                full_shadow.append((i, j))
            if not sh.any() and (i + j) % 2 == 1:
                full_light.append((i, j))
    if not full_shadow or not full_light:
        raise ConfigError("adelson_checker_shadow: the scene has no light check wholly in shadow or no dark check "
                          "wholly in light; change the cylinder or the light")
    c = (sc.n - 1) / 2
    b = min(full_shadow, key=lambda q: (q[0] - c) ** 2 + (q[1] - c) ** 2)
    a = min(full_light, key=lambda q: (q[0] - b[0]) ** 2 + (q[1] - b[1]) ** 2)
    return a, b


LABEL_NAMES = {0: "background", 1: "light_check_lit", 2: "light_check_shadow", 3: "dark_check_lit",
               4: "dark_check_shadow", 5: "cylinder"}
ADELSON_CONDITIONS = ("target_a", "target_b", *LABEL_NAMES.values())


@dataclasses.dataclass(frozen=True)
class AdelsonConfig(MindsetConfig, _ArrowConfigMixin):
    arrow_step: int = field(5, "distance between arrow positions (px), a grid over the canvas", range=(1, 512))
    arrow_size: float = field(1.0, "marker scale (1 = 11 px tall)", range=(0.3, 5.0))
    arrow_grid: str = field("original", "original: targets at step, 2·step, ... < canvas on both axes (the arrow "
                            "cut by the top edge in the first rows, as the original); inside: only where the whole "
                            "arrow is on the canvas", choices=("original", "inside"))
    target_images: bool = field(True, "add an image pointing at the centre pixel of check A and of check B "
                                "where the grid misses them")
    light_elevation: float = field(34.0, "light elevation above the board (degrees); above ~48 the shadow is too "
                                   "short to cover a whole light check", range=(20.0, 60.0))
    camera_elevation: float = field(42.0, "camera elevation (degrees)", range=(15.0, 80.0))
    rays_per_pixel_side: int = field(3, "antialiasing: rays per pixel side (odd: the middle ray labels the pixel)",
                                     choices=(1, 3, 5, 7))

    def __post_init__(self):
        super().__post_init__()
        if self.background != "fixed" or len(set(self.background_color)) != 1:
            raise ConfigError(f"background={self.background!r}, background_color={list(self.background_color)}: the "
                              "checker-shadow image is grey with one fixed background grey; use background=fixed and "
                              "a grey background_color [g, g, g]")
        self._check_arrow()
        try:
            target_checks(self.scene())
        except ConfigError as e:
            raise ConfigError(f"light_elevation={self.light_elevation}: {e}") from None

    def scene(self) -> AdelsonScene:
        return AdelsonScene(light_elevation=self.light_elevation, camera_elevation=self.camera_elevation)


def _adelson_base(cfg: AdelsonConfig):
    sc = cfg.scene()
    ss = cfg.rays_per_pixel_side if cfg.antialias else 1
    img, lab = render_adelson(sc, cfg.canvas_size, cfg.background_color[0], ss)
    return sc, img, lab


@functools.lru_cache(maxsize=4)
def _targets(cfg: AdelsonConfig):
    """Checks A and B, and the check index seen at each pixel centre."""
    sc = cfg.scene()
    return (*target_checks(sc), check_index_map(sc, cfg.canvas_size))


def check_index_map(sc: AdelsonScene, S: int) -> np.ndarray:
    """int [S, S] check index i·n + j seen at each pixel centre (−1 off the board or behind the cylinder)."""
    eye, fwd, right, up, tan = _camera(sc)
    u = ((np.arange(S) + 0.5) / S * 2 - 1) * tan
    v = (1 - (np.arange(S) + 0.5) / S * 2) * tan
    d = fwd + u[None, :, None] * right + v[:, None, None] * up
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d[..., 2] < 0, -eye[2] / d[..., 2], np.inf)
    o = np.broadcast_to(eye, d.shape)
    vis = np.isfinite(t) & (t < _cyl_hit(o, d, sc))
    p = eye + np.where(vis, t, 0)[..., None] * d
    half = sc.n / 2
    on = vis & (np.abs(p[..., 0]) <= half) & (np.abs(p[..., 1]) <= half)
    i = np.clip(np.floor(p[..., 0] + half), 0, sc.n - 1).astype(int)
    j = np.clip(np.floor(p[..., 1] + half), 0, sc.n - 1).astype(int)
    return np.where(on, i * sc.n + j, -1)


def adelson_items(cfg: AdelsonConfig, seed: int):
    sc, img, lab = _adelson_base(cfg)
    a, b, checks = _targets(cfg)
    if cfg.arrow_grid == "original":
        rows = cols = list(range(cfg.arrow_step, cfg.canvas_size, cfg.arrow_step))
    else:
        rows, cols = _grid(cfg, arrow_height(cfg.arrow_size) + 2, step=cfg.arrow_step)
    positions = [(ty, tx) for ty in rows for tx in cols]
    # and the centre pixel of each target check, whatever the grid step (the comparison the dataset is for)
    for q in (a, b) if cfg.target_images else ():
        ys, xs = np.nonzero(checks == q[0] * sc.n + q[1])
        k = int(np.argmin((ys - ys.mean()) ** 2 + (xs - xs.mean()) ** 2))
        if (int(ys[k]), int(xs[k])) not in positions:
            positions.append((int(ys[k]), int(xs[k])))
    for ty, tx in positions:
        ck = int(checks[ty, tx])
        if ck == a[0] * sc.n + a[1]:
            cond = "target_a"
        elif ck == b[0] * sc.n + b[1]:
            cond = "target_b"
        else:
            cond = LABEL_NAMES[int(lab[ty, tx])]
        yield Item(cond, f"y{ty:03d}_x{tx:03d}", {"target_x": tx, "target_y": ty,
                                                  "target_check": f"{ck // sc.n}_{ck % sc.n}" if ck >= 0 else "",
                                                  "target_surface": LABEL_NAMES[int(lab[ty, tx])]})


def adelson_render(cfg: AdelsonConfig, item: Item):
    sc, base, _ = _adelson_base(cfg)
    p = item.params
    img = np.repeat(base[:, :, None], 3, axis=2)
    value = int(to_uint8(img[p["target_y"], p["target_x"], :1])[0])
    draw_arrow(img, p["target_x"], p["target_y"], cfg.arrow_size, cfg.antialias)
    a, b, _ = _targets(cfg)
    return to_uint8(img), {"target_value": value, "patch_a_check": f"{a[0]}_{a[1]}", "patch_b_check": f"{b[0]}_{b[1]}",
                           "patch_a_value": int(round(255 * sc.albedo_dark * (sc.ambient + sc.sun))),
                           "patch_b_value": int(round(255 * sc.albedo_light * sc.ambient))}


register_mindset(
    "adelson_checker_shadow", AdelsonConfig,
    "Adelson's checker shadow, ray cast from 3D (checkerboard, cylinder, directional + ambient light): checks A "
    "(dark, lit) and B (light, in shadow) have equal pixel values; the arrow on a grid over the canvas — for "
    "the colour picker", "mindset-vision.txt C.2.8; Adelson 1995", items=adelson_items, render=adelson_render,
    conditions=ADELSON_CONDITIONS, random=False,
    paper={"arrow_step": 5, "arrow_grid": "original", "target_images": False},
    lite={"arrow_step": 40, "arrow_grid": "original", "target_images": True},
    presets={"clean": {"arrow_step": 5, "arrow_grid": "inside", "target_images": True}},
    figure="Adelson's checker-shadow figure (MindSet Fig. 3, Adelson panel)")
