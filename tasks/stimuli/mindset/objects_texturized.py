"""MindSet texturized shapes (``mindset-vision.txt`` C.3): a shape shown only by a texture that fills it.

* ``mindset/texturized_line_drawings`` — a library object's silhouette filled with a texture of
  characters (``texture=characters``: random letters and digits in DejaVu Sans, size ``font_min``-
  ``font_max`` px, each turned by a random angle in ±``max_rotation``; the original's chars variant, which
  the authors recommend) or of short parallel lines (``texture=lines``: segments ``line_length`` px long at
  one random slope per image, on a jittered grid every ``line_spacing`` px). No outline is drawn: the shape is
  carried by where the texture stops. Condition = category. ``paper`` = the original's 36 drawings × 500
  samples, with the 36 objects of ``_objects.BAKER36`` standing in for the drawings (18,000 images), white
  texture on black as the original's defaults;
  ``imagenet16`` = the 16 ImageNet-16 categories × 5 instances × 225 samples (18,000; the 16-class OOD use);
  ``lines`` = ``paper`` with the line texture.
* ``mindset/texturized_blobs`` — unfamiliar smooth blobs (one per blob id and seed) shown filled
  (``blob``) and filled with characters (``texturized_blob``); ``set_id`` = the blob, for the similarity
  judgment "same blob texturized is closer than other blobs".

Texture elements are drawn over the whole canvas and kept where the shape is (the element's coverage times
the shape's coverage), so no ink falls outside the shape (tested) and the texture covers the whole shape.
"""
from __future__ import annotations

import dataclasses
import string

import numpy as np

from ..registry import ConfigError, Item, field
from ._objects import WHITE_ON_BLACK, ObjectsConfig, compose, library_categories, object_alpha
from .common import (SUPERSAMPLE, MindsetConfig, background_params, background_rgb, check_order, check_rgb, coverage,
                     coverage_box, glyph_atlas, item_rng, new_canvas, paint_coverage, polygon, register_mindset,
                     segment, stamp_glyphs, text_coverage, to_uint8)
from .objects_drawings import REFERENCE, object_items

CHARACTERS = string.ascii_letters + string.digits


@dataclasses.dataclass(frozen=True)
class TextureFields:
    texture: str = field("characters", "what fills the shape", choices=("characters", "lines"))
    font_min: int = field(15, "smallest character size (px)", range=(4, 200))
    font_max: int = field(20, "largest character size (px)", range=(4, 200))
    max_rotation: float = field(60.0, "characters turn by a random angle in ±this (deg)", range=(0.0, 180.0))
    line_length: float = field(7.0, "texture line length (px)", range=(1.0, 100.0))
    line_spacing: float = field(8.0, "texture grid spacing (px)", range=(2.0, 100.0))
    texture_width: float = field(1.5, "texture line width (px)", range=(0.5, 10.0))


def _stamp_glyph(tex: np.ndarray, cov: np.ndarray, cx: float, cy: float) -> int:
    """Max-composite the glyph coverage ``cov`` centred at (``cx``, ``cy``) into ``tex`` (clipped to it);
    1 when any of it lands on the canvas, else 0 (the element count)."""
    h, w = cov.shape
    r0, c0 = int(round(cy - h / 2)), int(round(cx - w / 2))
    rs, cs, re_, ce = max(r0, 0), max(c0, 0), min(r0 + h, tex.shape[0]), min(c0 + w, tex.shape[1])
    if re_ <= rs or ce <= cs:
        return 0
    block = tex[rs:re_, cs:ce]
    np.maximum(block, cov[rs - r0:re_ - r0, cs - c0:ce - c0], out=block)
    return 1

def texture_alpha(cfg, size: int, rng: np.random.Generator, where: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """A texture over the ``size``² canvas (float32 coverage) and its annotation columns. Elements whose box
    misses the bounding box of ``where > 0`` (the shape it will fill) are drawn from ``rng`` but neither
    rendered nor counted; elements that meet that box but not the shape itself are counted but not rendered
    (they would be multiplied by 0): so the texture is exact wherever ``where > 0`` and may be blank
    elsewhere. :func:`texture_alpha_reference` renders every counted element (tests compare the two)."""
    tex = np.zeros((size, size), np.float32)
    if where is not None and (where > 0).any():
        occ = where > 0
        rows, cols = np.nonzero(occ)
        box = (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)
        sat = np.zeros((size + 1, size + 1), np.int64)  # summed-area table of the shape's pixels
        sat[1:, 1:] = occ.cumsum(0).cumsum(1)
    else:
        box, sat = (0, size, 0, size), None

    def misses(ya, yb, xa, xb) -> bool:
        """No shape pixel in rows [ya, yb) × columns [xa, xb) (clipped to the canvas)."""
        if sat is None:
            return False
        ya, yb = min(max(int(np.floor(ya)), 0), size), min(max(int(np.ceil(yb)), 0), size)
        xa, xb = min(max(int(np.floor(xa)), 0), size), min(max(int(np.ceil(xb)), 0), size)
        if yb <= ya or xb <= xa:
            return True
        return sat[yb, xb] - sat[ya, xb] - sat[yb, xa] + sat[ya, xa] == 0

    if cfg.texture == "characters":
        return _characters(cfg, size, rng, box, sat)
    slope = float(rng.uniform(0, 180))
    d = np.array([np.cos(np.radians(slope)), np.sin(np.radians(slope))]) * cfg.line_length / 2
    s = cfg.line_spacing
    centres = []
    for y in np.arange(s / 2, size, s):
        for x in np.arange(s / 2, size, s):
            c = np.array([x, y]) + rng.uniform(-s / 4, s / 4, 2)
            reach = cfg.line_length / 2 + cfg.texture_width
            if c[1] + reach < box[0] or c[1] - reach > box[1] or c[0] + reach < box[2] or c[0] - reach > box[3]:
                continue
            centres.append(c)
    n = 0
    if centres:
        cs = np.array(centres)
        covs, boxes = butt_segments_coverage(cs - d, cs + d, cfg.texture_width, size,
                                             lambda r0, r1, c0, c1: misses(r0, r1, c0, c1))
        for cov, (r0, r1, c0, c1) in zip(covs, boxes):
            if r1 <= r0 or c1 <= c0:
                continue
            n += 1
            if cov is not None:
                block = tex[r0:r1, c0:c1]
                np.maximum(block, cov, out=block)
    return tex, {"texture": "lines", "n_elements": n, "line_slope_deg": round(slope, 4)}


def _characters(cfg, size: int, rng: np.random.Generator, box, sat) -> tuple[np.ndarray, dict]:
    """The character texture of :func:`texture_alpha`: the elements are drawn from ``rng`` one by one (the
    stream of :func:`texture_alpha_reference`), then the ones that may touch the shape are turned and stamped
    in one compiled pass (:func:`common.stamp_glyphs`, PIL's pixels bit for bit) into a uint8 canvas: the max
    of coverages u / 255 is the max of the u, so the float texture is the reference's exactly."""
    step = (cfg.font_min + cfg.font_max) / 2 * 0.9
    sizes = tuple(range(cfg.font_min, cfg.font_max + 1))
    atlas = glyph_atlas(tuple(CHARACTERS), sizes, "DejaVuSans")
    glyphs, turns, xs, ys = [], [], [], []
    for y in np.arange(-step / 2, size + step, step):
        for x in np.arange(-step / 2, size + step, step):
            ch = int(rng.integers(len(CHARACTERS)))
            font = int(rng.integers(cfg.font_min, cfg.font_max + 1))
            turn = float(rng.uniform(-cfg.max_rotation, cfg.max_rotation))
            cx, cy = x + rng.uniform(-step / 4, step / 4), y + rng.uniform(-step / 4, step / 4)
            reach = font * 1.5  # a turned glyph's half-diagonal is below 1.5 em
            if cy + reach < box[0] or cy - reach > box[1] or cx + reach < box[2] or cx - reach > box[3]:
                continue
            glyphs.append(ch * len(sizes) + font - cfg.font_min)
            turns.append(turn)
            xs.append(cx)
            ys.append(cy)
    tex = np.zeros((size, size), np.uint8)
    n = 0
    if glyphs:
        g, cx, cy = np.array(glyphs, np.int64), np.array(xs), np.array(ys)
        keep = np.ones(len(g), bool)
        if sat is not None:
            # the turned, cropped glyph's block lies within m px of its centre: half of its unturned image's
            # width + height (the turned box's extent), + 0.5 for the placement's rounding and + 2.5 to spare
            # (measured: every glyph, 4-120 px, any angle, fits with >= 1 px left over)
            m = (atlas.w[g] + atlas.h[g]) / 2 + 3
            ya, yb, xa, xb = (np.clip(np.floor(cy - m), 0, size).astype(np.int64),
                              np.clip(np.ceil(cy + m), 0, size).astype(np.int64),
                              np.clip(np.floor(cx - m), 0, size).astype(np.int64),
                              np.clip(np.ceil(cx + m), 0, size).astype(np.int64))
            empty = (yb <= ya) | (xb <= xa) | (sat[yb, xb] - sat[ya, xb] - sat[yb, xa] + sat[ya, xa] == 0)
            # its block meets the canvas (it holds the centre) but no pixel of the shape: counted, not drawn
            skip = empty & (cx > 0) & (cx < size) & (cy > 0) & (cy < size)
            n += int(skip.sum())
            keep = ~skip
        idx = np.flatnonzero(keep)
        n += stamp_glyphs(tex, atlas, g[idx], [turns[i] for i in idx], cx[idx], cy[idx])
    return tex.astype(np.float32) / 255.0, {"texture": "characters", "n_elements": n}


_BATCH_SAMPLES = 1 << 21


def butt_segments_coverage(p0: np.ndarray, p1: np.ndarray, width: float, size: int, skip=None):
    """Coverage of many butt-capped segments ``p0[i] -> p1[i]`` ([m, 2] x, y) of one ``width``: for each, its
    :func:`coverage` block and (r0, r1, c0, c1), computed in array passes over all of them with the very
    samples and arithmetic of ``coverage(segment(p0[i], p1[i], width, "butt"), size)`` (tests compare). A
    block is ``None`` when ``skip(r0, r1, c0, c1)`` says it is not needed."""
    k = SUPERSAMPLE
    ax, ay, bx, by = p0[:, 0], p0[:, 1], p1[:, 0], p1[:, 1]
    dx, dy = bx - ax, by - ay
    length = np.hypot(dx, dy)
    h = width / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        ux, uy = dx / length, dy / length
    ux, uy = np.where(length > 0, ux, 0.0), np.where(length > 0, uy, 0.0)
    c0 = np.maximum(np.floor(np.minimum(ax, bx) - h).astype(int), 0)
    r0 = np.maximum(np.floor(np.minimum(ay, by) - h).astype(int), 0)
    c1 = np.minimum(np.floor(np.maximum(ax, bx) + h).astype(int) + 1, size)
    r1 = np.minimum(np.floor(np.maximum(ay, by) + h).astype(int) + 1, size)
    boxes = list(zip(r0.tolist(), r1.tolist(), c0.tolist(), c1.tolist()))
    covs = [None] * len(boxes)
    todo = [i for i, (a, b, c, e) in enumerate(boxes) if b > a and e > c and length[i] > 0
            and not (skip and skip(a, b, c, e))]
    for i, (a, b, c, e) in enumerate(boxes):  # a zero-length butt segment covers nothing
        if b > a and e > c and length[i] == 0 and not (skip and skip(a, b, c, e)):
            covs[i] = np.zeros((b - a, e - c), np.float32)
    if not todo:
        return covs, boxes
    H = int(max(r1[i] - r0[i] for i in todo))
    W = int(max(c1[i] - c0[i] for i in todo))
    off = (np.arange(k) + 0.5) / k
    jx, jy = np.arange(W * k), np.arange(H * k)
    per = max(1, _BATCH_SAMPLES // (H * W * k * k))
    for start in range(0, len(todo), per):
        idx = np.array(todo[start:start + per])
        x = ((c0[idx, None] + jx // k) + off[jx % k])[:, None, :]
        y = ((r0[idx, None] + jy // k) + off[jy % k])[:, :, None]
        ax_, ay_ = ax[idx, None, None], ay[idx, None, None]
        ux_, uy_ = ux[idx, None, None], uy[idx, None, None]
        t = (x - ax_) * ux_ + (y - ay_) * uy_
        nn = (x - ax_) * -uy_ + (y - ay_) * ux_
        inside = (t >= -0.0) & (t <= length[idx, None, None] + 0.0) & (np.abs(nn) <= h)
        cov = inside.reshape(len(idx), H, k, W, k).mean(axis=(2, 4), dtype=np.float32)
        for j, i in enumerate(idx):
            a, b, c, e = boxes[i]
            covs[i] = cov[j, :b - a, :e - c]
    return covs, boxes


def texture_alpha_reference(cfg, size: int, rng: np.random.Generator,
                            where: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Plain twin of :func:`texture_alpha`: every counted element rendered (tests compare the two where
    ``where > 0``)."""
    tex = np.zeros((size, size), np.float32)
    if where is not None and (where > 0).any():
        rows, cols = np.nonzero(where > 0)
        box = (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)
    else:
        box = (0, size, 0, size)
    if cfg.texture == "characters":
        step = (cfg.font_min + cfg.font_max) / 2 * 0.9
        n = 0
        for y in np.arange(-step / 2, size + step, step):
            for x in np.arange(-step / 2, size + step, step):
                ch = CHARACTERS[int(rng.integers(len(CHARACTERS)))]
                font = int(rng.integers(cfg.font_min, cfg.font_max + 1))
                turn = float(rng.uniform(-cfg.max_rotation, cfg.max_rotation))
                cx, cy = x + rng.uniform(-step / 4, step / 4), y + rng.uniform(-step / 4, step / 4)
                reach = font * 1.5  # a turned glyph's half-diagonal is below 1.5 em
                if cy + reach < box[0] or cy - reach > box[1] or cx + reach < box[2] or cx - reach > box[3]:
                    continue
                n += _stamp_glyph(tex, text_coverage(ch, font, "DejaVuSans", turn), cx, cy)
        return tex, {"texture": "characters", "n_elements": n}
    slope = float(rng.uniform(0, 180))
    d = np.array([np.cos(np.radians(slope)), np.sin(np.radians(slope))]) * cfg.line_length / 2
    s = cfg.line_spacing
    n = 0
    for y in np.arange(s / 2, size, s):
        for x in np.arange(s / 2, size, s):
            c = np.array([x, y]) + rng.uniform(-s / 4, s / 4, 2)
            reach = cfg.line_length / 2 + cfg.texture_width
            if c[1] + reach < box[0] or c[1] - reach > box[1] or c[0] + reach < box[2] or c[0] - reach > box[3]:
                continue
            cov, (r0, c0) = coverage(segment(c - d, c + d, cfg.texture_width, "butt"), size)
            if cov.size:
                block = tex[r0:r0 + cov.shape[0], c0:c0 + cov.shape[1]]
                np.maximum(block, cov, out=block)
                n += 1
    return tex, {"texture": "lines", "n_elements": n, "line_slope_deg": round(slope, 4)}


def _check_texture(cfg) -> None:
    check_order(cfg, "font_min", "font_max", strict=False)


# ---------------------------------------------------------------------------------------------- drawings
@dataclasses.dataclass(frozen=True)
class TexturizedConfig(ObjectsConfig, TextureFields):
    samples: int = field(225, "texturized images per object", range=(1, 100_000))

    def __post_init__(self):
        super().__post_init__()
        _check_texture(self)


def _items(cfg: TexturizedConfig, seed: int):
    for base in object_items(cfg, seed):
        for k in range(cfg.samples):
            yield Item(base.condition, f"{base.item_id}_{k:05d}", {**base.params, "sample": k, "_seed": int(seed)},
                       set_id=base.item_id if cfg.samples > 1 else "")


def _render(cfg: TexturizedConfig, item):
    p = item.params
    shape = object_alpha(cfg, p, "silhouette")
    tex, extra = texture_alpha(cfg, cfg.canvas_size, item_rng(p["_seed"], "texture", item.item_id), shape)
    return compose(cfg, p, tex * shape), extra


register_mindset("texturized_line_drawings", TexturizedConfig, "object shapes shown only by a texture of characters "
                 "or short lines filling them", REFERENCE, items=_items, render=_render,
                 conditions=library_categories(None),
                 paper={"object_set": "baker36", "samples": 500, "texture": "characters", **WHITE_ON_BLACK},
                 lite={"instances": 1, "samples": 1, "categories": ("bicycle", "elephant")},
                 presets={"lines": {"object_set": "baker36", "samples": 500, "texture": "lines", **WHITE_ON_BLACK},
                          "imagenet16": {"object_set": "grid", "categories": library_categories("imagenet16"),
                                         "instances": 5, "samples": 225, "texture": "characters"}})


# ---------------------------------------------------------------------------------------------- blobs
@dataclasses.dataclass(frozen=True)
class BlobConfig(MindsetConfig, TextureFields):
    n_blobs: int = field(10, "blob shapes", range=(1, 1000))
    samples: int = field(5, "texturized images per blob", range=(1, 100_000))
    blob_size: float = field(150.0, "blob diameter (px)", range=(10.0, 2000.0))
    ink_color: tuple = field((255, 255, 255), "RGB 0-255 of the blob / texture", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        _check_texture(self)
        check_rgb("ink_color", self.ink_color)
        if self.blob_size > self.canvas_size:
            raise ConfigError(f"blob_size={self.blob_size} is out of range [10, canvas_size={self.canvas_size}]")


def blob_points(seed: int, blob: int, size: float, centre: float) -> np.ndarray:
    """[128, 2] outline of blob ``blob``: radius 1 + four random harmonics (orders 2-5), diameter ``size``."""
    rng = item_rng(seed, "blob", blob)
    t = np.linspace(0, 2 * np.pi, 128, endpoint=False)
    r = 1 + sum(rng.uniform(0.05, 0.2) * np.cos(k * t + rng.uniform(0, 2 * np.pi)) for k in range(2, 6))
    r = r / r.max() * size / 2
    return np.stack([centre + r * np.cos(t), centre + r * np.sin(t)], 1)


def _blob_items(cfg: BlobConfig, seed: int):
    for b in range(cfg.n_blobs):
        rng = item_rng(seed, "bg", b)
        p = {"blob_id": b, "blob_size": float(cfg.blob_size), **background_params(cfg, rng), "_seed": int(seed)}
        yield Item("blob", f"blob_{b:03d}", {**p, "sample": -1}, set_id=f"blob_{b:03d}")
        for k in range(cfg.samples):
            yield Item("texturized_blob", f"blob_{b:03d}_tex_{k:04d}", {**p, "sample": k}, set_id=f"blob_{b:03d}")


def _blob_render(cfg: BlobConfig, item):
    p = item.params
    size = cfg.canvas_size
    pts = blob_points(p["_seed"], p["blob_id"], cfg.blob_size, size / 2)
    cov, (r0, c0) = coverage(polygon(pts), size, cfg.antialias)
    shape = np.zeros((size, size), np.float32)
    shape[r0:r0 + cov.shape[0], c0:c0 + cov.shape[1]] = cov
    extra = {}
    if item.condition == "texturized_blob":
        tex, extra = texture_alpha(cfg, size, item_rng(p["_seed"], "texture", item.item_id), shape)
        shape = tex * shape
    img = new_canvas(size, background_rgb(p))
    paint_coverage(img, shape, (0, 0), cfg.ink_color)
    return to_uint8(img), extra


register_mindset("texturized_blobs", BlobConfig, "unfamiliar blobs filled, and filled with a texture of characters",
                 "mindset-vision.txt C.3", items=_blob_items, render=_blob_render,
                 conditions=("blob", "texturized_blob"), paper={"n_blobs": 10, "samples": 5},
                 lite={"n_blobs": 2, "samples": 1})
