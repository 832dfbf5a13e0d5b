"""Mesh objects drawn as psychophysics stimuli: line drawings, filled silhouettes and shaded images.

CPU only. A mesh is projected orthographically (so "longest side in pixels" is exact) and rasterised into a
depth buffer and a face-index buffer at ``supersample``× resolution (compiled z-buffer; the plain NumPy
twin :func:`rasterize_reference` is the specification it is tested against). From those buffers:

* silhouette — coverage of the object, box-averaged down to the output grid (antialiased);
* line drawing — the silhouette outline plus internal lines where neighbouring pixels show different faces
  and either the depth jumps (an occluding contour) or the face normals differ by more than
  ``crease_deg`` (a crease: box edges, where a leg meets a body). Lines are drawn with a constant stroke
  width: sub-pixels within ``stroke_px / 2`` of an edge pixel are ink (a Euclidean distance transform with
  a one-sub-pixel soft threshold, box-averaged: strokes are antialiased, equally wide everywhere, and a
  straight stroke's ink integrates to exactly ``stroke_px`` across — tested);
* shaded — Lambert shading of the face normals under a light from the upper left front, plus ambient.

Views: ``azimuth_deg`` turns the camera about the vertical axis, counter-clockwise seen from above (0 =
looking at the object's left side from −y, with the object's front (+x) to the right of the image; 90 =
looking at its front from +x; −90 = at its back); ``inclination_deg`` is the camera's elevation above the horizontal (0 = side view, 90 = top
view). Outputs are float32 [H, W] coverage or intensity in [0, 1] (1 = ink / object); images are
composed from them by the dataset generators. Image rows go down, columns right; pixel (r, c) covers
[c, c+1) × [r, r+1) and is sampled at its centre.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from infra.images import to_uint8
from infra.schema import field


class DrawingError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class View:
    """Camera direction and framing: the object's longest projected side spans ``longest_side`` pixels,
    centred in a ``canvas`` (height, width) image."""

    azimuth_deg: float = 0.0
    inclination_deg: float = 0.0
    longest_side: float = 200.0
    canvas: tuple[int, int] = (224, 224)

    def __post_init__(self):
        h, w = self.canvas
        if not (-90.0 <= self.inclination_deg <= 90.0):
            raise DrawingError(f"inclination_deg={self.inclination_deg}: must be in [-90, 90] (0 = side view, 90 = top view)")
        if not (1 <= h <= 4096 and 1 <= w <= 4096):
            raise DrawingError(f"canvas={self.canvas}: height and width must be in [1, 4096] pixels")
        if not (1.0 <= self.longest_side <= max(h, w)):
            raise DrawingError(f"longest_side={self.longest_side}: must be in [1, {max(h, w)}] pixels (the canvas is {h}×{w})")

    def rotation(self) -> np.ndarray:
        """World -> camera rotation [3, 3]: rows are image right, image down, depth (away from the camera)."""
        az, inc = math.radians(self.azimuth_deg), math.radians(self.inclination_deg)
        right = np.array([math.cos(az), math.sin(az), 0.0])
        to_cam = np.array([math.sin(az) * math.cos(inc), -math.cos(az) * math.cos(inc), math.sin(inc)])
        up = np.cross(to_cam, right)
        return np.stack([right, -up, -to_cam])


def project(vertices: np.ndarray, view: View, scale_factor: float = 1.0) -> np.ndarray:
    """Vertices [N, 3] (model units) -> [N, 3] (column, row, depth) in pixels of a canvas ``scale_factor``
    times the view's canvas; the projected bounding box is centred and its longest side is
    ``view.longest_side × scale_factor``."""
    cam = np.asarray(vertices, np.float64) @ view.rotation().T
    lo, hi = cam[:, :2].min(0), cam[:, :2].max(0)
    extent = float((hi - lo).max())
    if extent <= 0:
        raise DrawingError("the object has no extent in this view")
    s = view.longest_side * scale_factor / extent
    h, w = view.canvas
    centre = np.array([w, h]) * scale_factor / 2
    out = cam * s
    out[:, :2] += centre - (lo + hi) / 2 * s
    return out


@functools.cache
def _kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def raster(tri, H, W, depth, face):
        for f in range(tri.shape[0]):
            x0, y0, z0 = tri[f, 0, 0], tri[f, 0, 1], tri[f, 0, 2]
            x1, y1, z1 = tri[f, 1, 0], tri[f, 1, 1], tri[f, 1, 2]
            x2, y2, z2 = tri[f, 2, 0], tri[f, 2, 1], tri[f, 2, 2]
            area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
            if area == 0.0:
                continue
            c0 = max(int(math.floor(min(x0, x1, x2) - 0.5)), 0)
            c1 = min(int(math.ceil(max(x0, x1, x2) - 0.5)), W - 1)
            r0 = max(int(math.floor(min(y0, y1, y2) - 0.5)), 0)
            r1 = min(int(math.ceil(max(y0, y1, y2) - 0.5)), H - 1)
            for r in range(r0, r1 + 1):
                py = r + 0.5
                for c in range(c0, c1 + 1):
                    px = c + 0.5
                    w0 = ((x1 - px) * (y2 - py) - (x2 - px) * (y1 - py)) / area
                    w1 = ((x2 - px) * (y0 - py) - (x0 - px) * (y2 - py)) / area
                    w2 = 1.0 - w0 - w1
                    if w0 < 0.0 or w1 < 0.0 or w2 < 0.0:
                        continue
                    z = w0 * z0 + w1 * z1 + w2 * z2
                    if z < depth[r, c]:
                        depth[r, c] = z
                        face[r, c] = f

    return raster


def rasterize(tri: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Z-buffer of triangles ``tri`` [F, 3, 3] (column, row, depth in pixels) on a height×width grid ->
    (depth float64 [H, W], +inf where empty; face int32 [H, W], −1 where empty). A pixel belongs to the
    nearest triangle containing its centre (edges included; ties keep the lower face index)."""
    depth = np.full((height, width), np.inf)
    face = np.full((height, width), -1, np.int32)
    _kernel()(np.ascontiguousarray(tri, np.float64), height, width, depth, face)
    return depth, face


def rasterize_reference(tri: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain NumPy twin of :func:`rasterize` (per triangle, all pixel centres of its bounding box at once)."""
    depth = np.full((height, width), np.inf)
    face = np.full((height, width), -1, np.int32)
    for f, t in enumerate(np.asarray(tri, np.float64)):
        (x0, y0, z0), (x1, y1, z1), (x2, y2, z2) = t
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if area == 0:
            continue
        c0, c1 = max(int(np.floor(t[:, 0].min() - 0.5)), 0), min(int(np.ceil(t[:, 0].max() - 0.5)), width - 1)
        r0, r1 = max(int(np.floor(t[:, 1].min() - 0.5)), 0), min(int(np.ceil(t[:, 1].max() - 0.5)), height - 1)
        if c1 < c0 or r1 < r0:
            continue
        py, px = np.mgrid[r0:r1 + 1, c0:c1 + 1] + 0.5
        w0 = ((x1 - px) * (y2 - py) - (x2 - px) * (y1 - py)) / area
        w1 = ((x2 - px) * (y0 - py) - (x0 - px) * (y2 - py)) / area
        w2 = 1 - w0 - w1
        z = w0 * z0 + w1 * z1 + w2 * z2
        win = (w0 >= 0) & (w1 >= 0) & (w2 >= 0) & (z < depth[r0:r1 + 1, c0:c1 + 1])
        depth[r0:r1 + 1, c0:c1 + 1][win] = z[win]
        face[r0:r1 + 1, c0:c1 + 1][win] = f
    return depth, face


@dataclasses.dataclass(frozen=True)
class Buffers:
    """The supersampled buffers one view of a mesh gives: depth and face index [H·s, W·s], face normals in
    camera coordinates [F, 3], the supersampling factor and the view."""

    depth: np.ndarray
    face: np.ndarray
    normals: np.ndarray
    supersample: int
    view: View


def buffers(mesh, view: View, supersample: int = 3) -> Buffers:
    """Rasterise ``mesh`` (anything with ``vertices`` [N, 3] and ``faces`` [F, 3]) in ``view``."""
    if not (1 <= supersample <= 8):
        raise DrawingError(f"supersample={supersample}: must be in [1, 8]")
    v = project(mesh.vertices, view, supersample)
    faces = np.asarray(mesh.faces)
    h, w = view.canvas
    depth, face = rasterize(v[faces], h * supersample, w * supersample)
    n = np.asarray(mesh.face_normals, np.float64) @ view.rotation().T
    return Buffers(depth, face, n, supersample, view)


def _downsample(a: np.ndarray, s: int) -> np.ndarray:
    h, w = a.shape[0] // s, a.shape[1] // s
    return a.reshape(h, s, w, s).mean(axis=(1, 3), dtype=np.float64).astype(np.float32)


def silhouette(b: Buffers) -> np.ndarray:
    """Coverage of the object [H, W] float32 in [0, 1] (box average of the supersampled mask)."""
    return _downsample((b.face >= 0).astype(np.float32), b.supersample)


def edge_mask(b: Buffers, crease_deg: float = 40.0, depth_jump_px: float = 2.0) -> np.ndarray:
    """Edge pixels [H·s, W·s] bool of the supersampled grid: object pixels next to background, or next to
    another face across a depth jump larger than ``depth_jump_px`` output pixels (an occluding contour,
    marked on the nearer side) or a normal change larger than ``crease_deg`` (a crease)."""
    f, d = b.face, b.depth
    cos_t = math.cos(math.radians(crease_deg))
    jump = depth_jump_px * b.supersample
    edge = np.zeros(f.shape, bool)
    for axis in (0, 1):
        fa = f[:-1] if axis == 0 else f[:, :-1]
        fb = f[1:] if axis == 0 else f[:, 1:]
        ra, ca = np.nonzero(fa != fb)  # only pairs that show different faces can carry a line
        rb, cb = (ra + 1, ca) if axis == 0 else (ra, ca + 1)
        ga, gb = f[ra, ca], f[rb, cb]
        da, db = d[ra, ca], d[rb, cb]
        ina, inb = ga >= 0, gb >= 0
        both = ina & inb
        crease = both & ((b.normals[np.maximum(ga, 0)] * b.normals[np.maximum(gb, 0)]).sum(-1) < cos_t)
        with np.errstate(invalid="ignore"):
            occl = both & (np.abs(da - db) > jump)
        # the line belongs to the object (silhouette) or to the nearer surface (occluding contour)
        mark_a = (ina & ~inb) | crease | (occl & (da <= db))
        mark_b = (inb & ~ina) | (occl & (db < da))
        edge[ra[mark_a], ca[mark_a]] = True
        edge[rb[mark_b], cb[mark_b]] = True
    return edge


def edge_mask_reference(b: Buffers, crease_deg: float = 40.0, depth_jump_px: float = 2.0) -> np.ndarray:
    """Plain twin of :func:`edge_mask`: every neighbouring pixel pair, one at a time."""
    f, d = b.face, b.depth
    cos_t = math.cos(math.radians(crease_deg))
    jump = depth_jump_px * b.supersample
    edge = np.zeros(f.shape, bool)
    H, W = f.shape
    for r in range(H):
        for c in range(W):
            for r2, c2 in ((r + 1, c), (r, c + 1)):
                if r2 >= H or c2 >= W or f[r, c] == f[r2, c2]:
                    continue
                a, o = f[r, c], f[r2, c2]
                if a < 0 or o < 0:  # silhouette: the object's pixel
                    edge[(r, c) if a >= 0 else (r2, c2)] = True
                    continue
                if float(b.normals[a] @ b.normals[o]) < cos_t:
                    edge[r, c] = True
                if abs(d[r, c] - d[r2, c2]) > jump:
                    edge[(r, c) if d[r, c] <= d[r2, c2] else (r2, c2)] = True
    return edge


def strokes(edges: np.ndarray, supersample: int, stroke_px: float) -> np.ndarray:
    """Constant-width strokes [H, W] float32 in [0, 1] from a supersampled edge mask: ink within
    ``stroke_px / 2`` output pixels of an edge pixel, antialiased by box-averaging the supersampled ink."""
    from scipy import ndimage

    if not (0.25 <= stroke_px <= 50):
        raise DrawingError(f"stroke_px={stroke_px}: must be in [0.25, 50] pixels")
    if not edges.any():
        return np.zeros((edges.shape[0] // supersample, edges.shape[1] // supersample), np.float32)
    dist = ndimage.distance_transform_edt(~edges)
    # soft threshold: ink falls from 1 to 0 over one sub-pixel at distance R = half the stroke, so a
    # straight line's ink integrates to exactly 2R sub-pixels across (a hard threshold gives only odd counts)
    ink = np.clip(stroke_px * supersample / 2 + 0.5 - dist, 0.0, 1.0)
    return _downsample(ink.astype(np.float32), supersample)


def line_drawing(b: Buffers, stroke_px: float = 2.0, crease_deg: float = 40.0) -> np.ndarray:
    """Outline + internal feature lines [H, W] float32 in [0, 1] (1 = ink), constant stroke width."""
    return strokes(edge_mask(b, crease_deg), b.supersample, stroke_px)


def shaded(b: Buffers, light=(-0.5, -0.6, -0.62), ambient: float = 0.3) -> np.ndarray:
    """Lambert shading [H, W] float32 in [0, 1] (0 where empty; multiply by coverage to compose).
    ``light`` points from the object towards the light in camera coordinates (right, down, depth)."""
    lv = np.asarray(light, np.float64)
    lv /= np.linalg.norm(lv)
    lam = np.clip(b.normals @ lv, 0, None)
    val = np.where(b.face >= 0, ambient + (1 - ambient) * lam[np.maximum(b.face, 0)], 0.0)
    return _downsample(val.astype(np.float32), b.supersample)


def contact_sheet(size: int = 128, stroke_px: float = 1.5, instances: int | None = None,
                  categories: list[str] | None = None) -> np.ndarray:
    """uint8 [rows, cols] grey sheet of library instances in their canonical view: one row per category
    (``categories``, default all), each instance as line drawing then filled silhouette (black on white)."""
    from scenes.objects import N_INSTANCES, build
    from scenes.objects import categories as all_categories

    rows = []
    for c in categories or all_categories():
        tiles = []
        for i in range(1, (instances or N_INSTANCES) + 1):
            m = build(c, i)
            b = buffers(m.mesh, View(*m.view, longest_side=size * 0.9, canvas=(size, size)))
            tiles += [1 - line_drawing(b, stroke_px), 1 - silhouette(b), np.ones((size, 8), np.float32)]
        rows.append(np.concatenate(tiles, 1))
    return to_uint8(np.concatenate(rows, 0))


@dataclasses.dataclass(frozen=True)
class SheetOptions:
    out: str | None = field(None, "the PNG to write")
    sheet: str | None = field(None, "older name of out= (the docs' --sheet x.png)")
    size: int = field(128, "tile size in pixels", range=(32, 512))
    group: str | None = field(None, "only this group of categories (scenes.objects.GROUPS; default: all)")
    new: bool = field(False, "only the categories outside the 16-class ImageNet set")


def main(argv=None) -> int:
    """``python -m render.drawing out=docs/img/objects_sheet.png [group=imagenet16 | new=true]``: the
    library's contact sheet (all categories, one group, or the categories outside the 16 ImageNet ones);
    ``--sheet x.png --group g --new`` work too."""
    from infra.cli import run_options

    return run_options("render.drawing", "usage: python -m render.drawing out=<png> [size=128] [group=<name>] "
                       "[new=true]   (contact sheet of the procedural object library)", SheetOptions, _sheet_job, argv)


def _sheet_job(o: SheetOptions) -> str:
    from infra.images import save_png
    from scenes.objects import GROUPS, category_names

    out = o.out or o.sheet
    if out is None:
        raise ValueError("out= is required (the PNG to write; e.g. out=objects_sheet.png)")
    if o.out and o.sheet and o.out != o.sheet:
        raise ValueError(f"out={o.out!r} and sheet={o.sheet!r}: give one of them (sheet= is the older name of out=)")
    if o.group is not None and o.group not in GROUPS:
        raise ValueError(f"group={o.group!r}: unknown; one of {', '.join(GROUPS)}")
    cats = category_names(o.group)
    if o.new:
        cats = [c for c in cats if c not in category_names("imagenet16")]
    save_png(out, contact_sheet(o.size, categories=cats))
    return f"wrote {out}"


if __name__ == "__main__":
    raise SystemExit(main())
