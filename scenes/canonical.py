"""The canonical frame of a trained capture: +z up, the ground (or the object's support) at z = 0, the object
centred on the origin, metres.

Trained Gaussian-splat scenes come in whatever frame their capture pipeline chose: COLMAP/INRIA and the
viewers that read their files (PlayCanvas, SuperSplat, Luma) keep the reconstruction's frame, in which the
up direction is roughly −y (image up of the first camera), the units are arbitrary and the object sits
anywhere. The 3D-PC's props, label rules and viewer paths are metric and assume +z up with the ground at
z = 0, so every scene loaded from a file is moved into that frame first (:func:`estimate_frame`), and the
4×4 similarity from the file's frame to it is recorded with the scene.

How each quantity is found (each can be given instead, :class:`FrameHints`; the source of each is recorded):

* **up** — (1) the user's ``up``; (2) the capture's cameras (INRIA ``cameras.json``, a gsplat checkpoint's
  ``camtoworlds``, a CO3D sequence): the mean of the cameras' up vectors (−y of each camera), replaced by the
  normal of a captured ground plane within 25° of it (a hand-held camera's mean up is a few degrees off
  gravity; a floor is not); (3) without cameras, a **captured ground**: the largest plane (RANSAC over the
  opaque Gaussians, refined by least squares) holding at least ``ground_min_share`` of them with nearly
  everything else on one side of it (``one_sided``) and the rest of the scene standing over it and rising from
  it, within ``ground_within_deg`` of the convention prior — or at any angle when it is unmistakable (≥ 99% of
  the rest above it, ≥ 20% of the Gaussians on it; how a randomly rotated scene is recovered): a flat object
  (a guitar, body and neck in one plane) also makes a large, nearly one-sided plane; (4) else a
  **support plane** (a plinth's floor, the sliver of ground a cut-out kept): a one-sided plane within 30° of
  the convention prior; (5) else the **convention prior**: −y, the frame of COLMAP, INRIA 3DGS and the
  formats derived from them (``scenes.formats``).
* **ground** — the offset of the captured ground or support plane; without one, the base of the object
  (the 0.2th percentile of its heights). ``ground_kind`` says which: ``captured`` (a plane wide enough for the
  props to stand on), ``support`` (a plane, but too small: a ground disc is added at its height) or ``base``
  (no plane: a disc is added at the object's base).
* **object** — the opaque Gaussians above the ground, voxelised, split into connected components; the object
  is the component nearest the cameras' common look-at point (or ``center``, or the centre of everything
  above the ground). Its height sets the scale and its bounds are the scene's ``object_bounds``.
* **scale** — ``object_height_m`` (given, else a typical height of the scene's ``category``
  (:data:`CATEGORY_HEIGHTS_M`), else 1 m) divided by the object's height in file units.
* **floaters** — Gaussians in small isolated clusters (fewer than ``floater_min_share`` of the opaque ones in
  a connected component of the occupancy grid, or outside the 0.1-99.9th percentile box) are dropped: they
  are training artefacts in free space that would otherwise hide a prop or block a line of sight.

The frame's horizontal axes: canonical +x is the file's +x projected on the ground plane (its +z when +x is
nearly vertical); centre = the middle of the object's horizontal extent (1st-99th percentiles).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .gaussians import GaussianScene, SceneError

CANONICAL_VERSION = "1"

# Typical heights (m) of the objects of CO3D / the 3D-PC's categories and of the shared real captures'
# kinds, used when a scene's ``category`` is known and no ``object_height_m`` is given. Round figures of
# common instances (a fire hydrant ~0.75 m, a dining chair ~0.9 m, a sofa ~0.85 m, an open laptop ~0.24 m,
# a cabin suitcase ~0.55 m, a floor-standing guitar on its stand ~1.05 m, ...): a prop's size relative to the
# object is what the images show, and ±20% on it changes no label rule's meaning.
CATEGORY_HEIGHTS_M: dict[str, float] = {
    "bench": 0.85, "car": 1.5, "chair": 0.9, "couch": 0.85, "hydrant": 0.75, "laptop": 0.24,
    "motorcycle": 1.1, "plant": 0.6, "suitcase": 0.55, "umbrella": 1.0, "teddybear": 0.35, "toaster": 0.2,
    "bicycle": 1.0, "backpack": 0.45, "ball": 0.22, "bottle": 0.3, "vase": 0.35, "toilet": 0.75,
    "tv": 0.6, "guitar": 1.05, "statue": 1.0,
}
DEFAULT_HEIGHT_M = 1.0

AXES = {"+x": (1.0, 0.0, 0.0), "-x": (-1.0, 0.0, 0.0), "+y": (0.0, 1.0, 0.0), "-y": (0.0, -1.0, 0.0),
        "+z": (0.0, 0.0, 1.0), "-z": (0.0, 0.0, -1.0)}
CONVENTION_UP = AXES["-y"]
GROUND_KINDS = ("auto", "captured", "added")


def _vector(value, where: str) -> tuple[float, float, float] | None:
    if value is None:
        return None
    if isinstance(value, str):
        v = value.strip().lower()
        v = v if v[:1] in "+-" else "+" + v
        if v not in AXES:
            raise SceneError(f"{where}={value!r}: an axis (+x, -x, +y, -y, +z, -z) or [x, y, z]")
        return AXES[v]
    try:
        vec = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        raise SceneError(f"{where}={value!r}: an axis (+x, -x, +y, -y, +z, -z) or three numbers [x, y, z]") from None
    if len(vec) != 3 or not all(math.isfinite(x) for x in vec):
        raise SceneError(f"{where}={value!r}: need three finite numbers [x, y, z]")
    return vec


@dataclasses.dataclass(frozen=True)
class FrameHints:
    """What the user states about a capture instead of letting it be estimated (file-frame quantities in
    the file's units; sizes in metres). Every field is optional.

    up: the up direction in the file's frame (``"-y"``, ``"+z"``, … or ``[x, y, z]``).
    ground: where the ground (or the object's support) is, as its offset along the unit ``up`` in the file's
        frame (the plane ``up · p = ground``).
    center: a point of the object in the file's frame (picks the object among the clusters; the origin is
        put under the object's horizontal centre).
    object_height_m: the object's height in metres (sets the scale).
    object_radius: the object's horizontal half-extent in metres (props keep outside it), instead of its
        measured extent.
    category: the object's kind (a key of :data:`CATEGORY_HEIGHTS_M` gives the default height).
    ground_mode: ``auto`` (a ground disc is added unless a wide ground was captured), ``captured`` (never add
        one), ``added`` (always add one).
    transform: a complete 4×4 file → canonical similarity; skips every estimate (``scenes.export`` writes the
        identity for Vantage's own scenes).
    """

    up: tuple[float, float, float] | None = None
    ground: float | None = None
    center: tuple[float, float, float] | None = None
    object_height_m: float | None = None
    object_radius: float | None = None
    category: str | None = None
    ground_mode: str = "auto"
    transform: tuple | None = None

    KEYS = ("up", "ground", "center", "object_height_m", "object_radius", "category", "ground_mode", "transform")

    @classmethod
    def from_dict(cls, d: dict | None, where: str = "frame") -> "FrameHints":
        """Validated hints from a mapping (a sidecar's ``frame`` or command-line overrides): errors name
        ``where.key``, the value and what is allowed."""
        d = dict(d or {})
        unknown = sorted(set(d) - set(cls.KEYS))
        if unknown:
            raise SceneError(f"{where}: unknown key(s) {unknown}; known: {', '.join(cls.KEYS)}")
        out: dict[str, Any] = {}
        out["up"] = _vector(d.get("up"), f"{where}.up")
        if out["up"] is not None and np.linalg.norm(out["up"]) < 1e-9:
            raise SceneError(f"{where}.up={d.get('up')!r}: must not be the zero vector")
        out["center"] = _vector(d.get("center"), f"{where}.center")
        for key, positive in (("ground", False), ("object_height_m", True), ("object_radius", True)):
            v = d.get(key)
            if v is None:
                out[key] = None
                continue
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise SceneError(f"{where}.{key}={d[key]!r}: must be a number") from None
            if not math.isfinite(v) or (positive and v <= 0):
                raise SceneError(f"{where}.{key}={d[key]!r}: must be a finite number{' > 0' if positive else ''}")
            out[key] = v
        cat = d.get("category")
        out["category"] = None if cat is None else str(cat)
        mode = d.get("ground_mode", "auto")
        if mode not in GROUND_KINDS:
            raise SceneError(f"{where}.ground_mode={mode!r}: one of {', '.join(GROUND_KINDS)}")
        out["ground_mode"] = mode
        t = d.get("transform")
        if t is not None:
            try:
                m = np.asarray(t, float)
            except (TypeError, ValueError):
                m = np.zeros(0)
            if m.shape != (4, 4) or not np.isfinite(m).all():
                raise SceneError(f"{where}.transform: must be a finite 4x4 matrix (rows), got {t!r:.80}")
            _similarity_scale(m, f"{where}.transform")
            out["transform"] = tuple(tuple(float(x) for x in row) for row in m)
        if out["ground"] is not None and out["up"] is None:
            raise SceneError(f"{where}.ground={out['ground']}: give up= too (the ground is an offset along it)")
        return cls(**out)

    def to_dict(self) -> dict:
        """The hints that are set (JSON)."""
        d = {k: getattr(self, k) for k in self.KEYS if getattr(self, k) is not None}
        if d.get("ground_mode") == "auto":
            d.pop("ground_mode")
        return {k: (list(map(list, v)) if k == "transform" else list(v) if isinstance(v, tuple) else v)
                for k, v in d.items()}


def _similarity_scale(m: np.ndarray, where: str) -> float:
    a = m[:3, :3]
    det = float(np.linalg.det(a))
    if det <= 0:
        raise SceneError(f"{where}: not a proper similarity (determinant {det:.3g} <= 0)")
    s = det ** (1 / 3)
    if not np.allclose(a @ a.T / s**2, np.eye(3), atol=1e-4) or not np.allclose(m[3], [0, 0, 0, 1]):
        raise SceneError(f"{where}: not a similarity (rotation x uniform scale + translation, last row 0 0 0 1)")
    return s


@dataclasses.dataclass(frozen=True)
class FrameParams:
    """Knobs of the estimation (fractions of the opaque Gaussians, of the scene's extent)."""

    solid_opacity: float = 0.35      # Gaussians at least this opaque define surfaces
    sample: int = 120_000            # opaque Gaussians used for the plane fits and the clusters (seeded)
    grid: int = 128                  # voxels along the longest side of the occupancy grid
    floater_min_share: float = 0.002  # a connected cluster with fewer opaque Gaussians than this share is a floater
    plane_tol: float = 0.006         # RANSAC inlier distance, × the scene's extent (diagonal of its 2-98% box)
    ground_min_share: float = 0.10   # a captured ground holds at least this share of the opaque Gaussians
    one_sided: float = 0.92          # share of the off-plane Gaussians on the object's side of a ground
    ground_within_deg: float = 60.0  # a ground this close to the convention prior is taken as it is
    sure_one_sided: float = 0.99     # ... a ground further from it needs nothing under it (this share above)
    sure_share: float = 0.2          # ... and this share of the opaque Gaussians
    support_within_deg: float = 30.0  # a support plane's normal is at most this far from the prior up
    cameras_ground_within_deg: float = 25.0
    ground_reach: float = 1.6        # a captured ground is wide enough when it reaches this × (object radius + 1 m)


@dataclasses.dataclass(frozen=True)
class CanonicalFrame:
    """The estimated (or given) canonical frame of one scene file; ``to_dict`` is what outputs record."""

    transform: np.ndarray            # 4×4, file frame → canonical (similarity: scale × rotation + translation)
    scale: float                     # metres per file unit
    up_file: tuple[float, float, float]
    up_source: str                   # override | cameras | cameras+ground | ground_plane | support_plane | convention
    ground_file: float               # offset of the ground along up_file (file units)
    ground_kind: str                 # captured | support | base
    add_ground: bool                 # a ground disc is added at z = 0
    center_file: tuple[float, float, float]   # the point moved to the origin (on the ground, file frame)
    center_source: str
    object_height_file: float
    object_height_m: float
    height_source: str               # override | category:<name> | default
    object_bounds: np.ndarray        # [[xmin, ymin, 0], [xmax, ymax, zmax]] canonical metres
    floaters: int                    # Gaussians dropped as floaters
    evidence: dict                   # plane shares and residuals, cluster sizes, counts

    def to_dict(self) -> dict:
        return {"version": CANONICAL_VERSION, "transform": np.asarray(self.transform).tolist(), "scale": self.scale,
                "up_file": list(self.up_file), "up_source": self.up_source, "ground_file": self.ground_file,
                "ground_kind": self.ground_kind, "add_ground": self.add_ground, "center_file": list(self.center_file),
                "center_source": self.center_source, "object_height_file": self.object_height_file,
                "object_height_m": self.object_height_m, "height_source": self.height_source,
                "object_bounds": np.asarray(self.object_bounds).tolist(), "floaters_dropped": self.floaters,
                "evidence": self.evidence}

    def apply(self, points: np.ndarray) -> np.ndarray:
        """File-frame points [N, 3] → canonical metres."""
        t = np.asarray(self.transform)
        return np.asarray(points, float) @ t[:3, :3].T + t[:3, 3]


# ---------------------------------------------------------------------- geometry helpers
def _unit(v) -> np.ndarray:
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def _angle_deg(a, b) -> float:
    return math.degrees(math.acos(float(np.clip(_unit(a) @ _unit(b), -1.0, 1.0))))


def _basis(up: np.ndarray) -> np.ndarray:
    """Rows: canonical x, y, z (= up) in the file frame; x = the file's +x projected (its +z if +x ~ up)."""
    z = _unit(up)
    ref = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    x = _unit(ref - (ref @ z) * z)
    return np.stack([x, np.cross(z, x), z])


def fit_plane(points: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Least-squares plane through ``points`` [n, 3]: (unit normal, offset d with n·p = d, rms distance)."""
    c = points.mean(0)
    _, _, vt = np.linalg.svd(points - c, full_matrices=False)
    n = vt[2]
    d = float(n @ c)
    return n, d, float(np.sqrt(np.mean((points @ n - d) ** 2)))


def ransac_planes(points: np.ndarray, tol: float, rng: np.random.Generator, n_planes: int = 3,
                  trials: int = 384, min_share: float = 0.03) -> list[dict]:
    """Up to ``n_planes`` dominant planes of ``points`` [n, 3] found one after another (each one's inliers
    removed before the next): each a dict with unit ``normal``, ``offset`` (n·p = offset), ``inliers`` (bool
    over ``points``), ``share`` (of all points) and ``rms`` of its inliers. Candidate planes through random
    triples are scored on a subsample of ≤ 20,000 points; the best is refined twice by least squares on its
    inliers (within ``tol``)."""
    n_all = len(points)
    alive = np.ones(n_all, bool)
    planes = []
    for _ in range(n_planes):
        idx = np.flatnonzero(alive)
        if len(idx) < 50:
            break
        sub = points[idx[rng.choice(len(idx), min(len(idx), 20_000), replace=False)]]
        tri = sub[rng.integers(len(sub), size=(trials, 3))]
        nrm = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        ln = np.linalg.norm(nrm, axis=1)
        ok = ln > 1e-12
        if not ok.any():
            break
        nrm = nrm[ok] / ln[ok, None]
        off = (nrm * tri[ok, 0]).sum(1)
        score = (np.abs(sub @ nrm.T - off) < tol).sum(0)
        best = int(np.argmax(score))
        n, d = nrm[best], off[best]
        pts = points[idx]
        for _ in range(3):
            inl = np.abs(pts @ n - d) < tol
            if inl.sum() < 3:
                break
            n, d, _ = fit_plane(pts[inl])
        # the plane's own thickness (robust: a flat floor's inliers within ``tol`` also take in the lowest
        # centimetres of what stands on it); inliers are then those within 4 robust σ (at least 2% of tol)
        dist = pts @ n - d
        sigma = 1.4826 * float(np.median(np.abs(dist[np.abs(dist) < tol]))) if (np.abs(dist) < tol).any() else tol
        inl = np.abs(dist) < max(4 * sigma, 0.02 * tol)
        if inl.sum() >= 3:
            n, d, _ = fit_plane(pts[inl])
            dist = pts @ n - d
            inl = np.abs(dist) < max(4 * sigma, 0.02 * tol)
        share = float(inl.sum()) / n_all
        if share < min_share:
            break
        mask = np.zeros(n_all, bool)
        mask[idx[inl]] = True
        rms = max(sigma, 0.005 * tol)
        planes.append({"normal": n, "offset": float(d), "inliers": mask, "share": share, "rms": rms})
        alive &= ~mask
    return planes


def _orient(plane: dict, points: np.ndarray, tol: float) -> tuple[dict, float]:
    """The plane with its normal towards the side holding most off-plane points, and that side's share."""
    h = points @ plane["normal"] - plane["offset"]
    off = np.abs(h) > 3 * tol
    if not off.any():
        return plane, 0.5
    pos = float((h[off] > 0).mean())
    if pos < 0.5:
        plane = {**plane, "normal": -plane["normal"], "offset": -plane["offset"]}
        pos = 1 - pos
    return plane, pos


def _stands_on(plane: dict, points: np.ndarray, tol: float, min_rise: float = 0.15) -> bool:
    """The points above the plane stand on it as on a ground: their centre projects inside the inliers' 5-95%
    extent along both in-plane axes, and they rise from it: their 99th-percentile height is at least
    ``min_rise`` × the inliers' extent (2-98%, longest in-plane axis). A flat face of the object itself (a
    guitar's body and neck, a table top) fails the second: what stands off it (strings, a stand's legs) is thin
    compared with the face; a captured floor carries an object about as tall as a fifth of the floor's width or
    more (0.45 on the catalogue; a flat object on a floor, rising less, falls back to the convention prior)."""
    b = _basis(plane["normal"])
    h = points @ plane["normal"] - plane["offset"]
    above = points[h > 3 * tol]
    inl = points[plane["inliers"]]
    if len(above) < 20 or len(inl) < 20:
        return False
    uv_in = inl @ b[:2].T
    c = np.median(above, 0) @ b[:2].T
    lo, hi = np.percentile(uv_in, 5, axis=0), np.percentile(uv_in, 95, axis=0)
    width = float(np.max(np.percentile(uv_in, 98, axis=0) - np.percentile(uv_in, 2, axis=0)))
    rise = float(np.percentile(h[h > 3 * tol], 99))
    return bool(np.all((c >= lo) & (c <= hi)) and rise >= min_rise * width)


def camera_up_and_focus(cameras) -> tuple[np.ndarray, np.ndarray]:
    """Mean up vector (−y of each OpenCV camera, world frame) and the point nearest every optical axis
    (least squares) of a list of :class:`scenes.camera.Camera`."""
    ups = np.array([-c.w2c[1, :3] for c in cameras])
    up = _unit(ups.mean(0))
    a, b = np.zeros((3, 3)), np.zeros(3)
    for c in cameras:
        f = _unit(c.forward)
        p = np.eye(3) - np.outer(f, f)
        a += p
        b += p @ c.center
    focus = np.linalg.lstsq(a, b, rcond=None)[0]
    return up, focus


def _voxel_index(points: np.ndarray, lo: np.ndarray, voxel: float, shape) -> np.ndarray:
    """Linear index (C order) of the voxel of ``shape`` holding each point of ``points`` [n, 3] in a grid whose
    corner is ``lo`` and whose cells are ``voxel`` wide; −1 for points outside the grid or not finite."""
    q = (np.asarray(points, np.float32) - np.asarray(lo, np.float32)) * np.float32(1.0 / voxel)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(q).all(1) & (q >= 0).all(1) & (q < np.asarray(shape, np.float32)).all(1)
    ijk = q.astype(np.int64, copy=False)
    sx, sy, sz = (int(v) for v in shape)
    lin = (ijk[:, 0] * sy + ijk[:, 1]) * sz + ijk[:, 2]
    lin[~ok] = -1
    np.minimum(lin, sx * sy * sz - 1, out=lin)
    return lin


def _components(points: np.ndarray, lo: np.ndarray, voxel: float, shape) -> tuple[np.ndarray, np.ndarray]:
    """Connected components (26-neighbourhood) of the voxels holding ``points``: (label per point (0 = outside
    the grid), point count per label)."""
    from scipy import ndimage

    idx = np.floor((points - lo) / voxel).astype(np.int64)
    inside = np.all((idx >= 0) & (idx < np.asarray(shape)), axis=1)
    occ = np.zeros(shape, bool)
    occ[tuple(idx[inside].T)] = True
    lab, n = ndimage.label(occ, structure=np.ones((3, 3, 3), bool))
    per_point = np.zeros(len(points), np.int64)
    per_point[inside] = lab[tuple(idx[inside].T)]
    counts = np.bincount(per_point, minlength=n + 1)
    counts[0] = 0
    return per_point, counts


# ---------------------------------------------------------------------- the estimate
def estimate_frame(g: GaussianScene, cameras=None, hints: FrameHints = FrameHints(),
                   params: FrameParams = FrameParams(), prior_up=CONVENTION_UP) -> tuple[CanonicalFrame, np.ndarray]:
    """The canonical frame of ``g`` (Gaussians in the file's frame) and the mask of Gaussians to keep (floaters
    dropped). ``cameras``: the capture's cameras in the file's frame, if known. Raises :class:`SceneError`
    naming the scene and what failed (too few opaque Gaussians, no object above the ground, ...)."""
    src = g.source
    op = g.opacities
    keep = np.ones(len(g), bool)
    if hints.transform is not None:
        means = g.means.astype(np.float64)
        t = np.asarray(hints.transform, float)
        s = _similarity_scale(t, f"{src}: frame.transform")
        pts = means @ t[:3, :3].T + t[:3, 3]
        up_file = tuple(_unit(t[2, :3]).tolist())
        lo, hi = np.percentile(pts[op > params.solid_opacity], [1, 99], axis=0) if (op > params.solid_opacity).any() \
            else (pts.min(0), pts.max(0))
        return CanonicalFrame(t, s, up_file, "override", float(-t[2, 3] / s), "captured", False,
                              tuple(np.linalg.solve(t[:3, :3], -t[:3, 3]).tolist()), "override",
                              float((hi[2] - max(lo[2], 0.0)) / s), float(hi[2] - max(lo[2], 0.0)), "override",
                              np.array([[lo[0], lo[1], 0.0], [hi[0], hi[1], hi[2]]]), 0, {}), keep
    solid = op >= params.solid_opacity  # GaussianScene guarantees finite means
    if solid.sum() < 100:
        raise SceneError(f"{src}: only {int(solid.sum())} Gaussians with opacity >= {params.solid_opacity}; "
                         "cannot find the object or its ground (is this a trained scene?)")
    rng = np.random.default_rng(0)
    # floaters: outside the 0.1-99.9% box (of a sample), or in small connected clusters of the occupancy grid;
    # one voxel index per Gaussian, computed once (float32 arithmetic, linear indices: ~1M Gaussians a second)
    solid_idx = np.flatnonzero(solid)
    probe = g.means[solid_idx[rng.choice(len(solid_idx), min(len(solid_idx), 200_000), replace=False)]].astype(np.float64)
    box_lo, box_hi = np.percentile(probe, 0.1, axis=0), np.percentile(probe, 99.9, axis=0)
    pad = 0.05 * (box_hi - box_lo) + 1e-9
    box_lo, box_hi = box_lo - pad, box_hi + pad
    voxel = float(np.max(box_hi - box_lo)) / params.grid
    shape = np.maximum(np.ceil((box_hi - box_lo) / voxel).astype(int), 1)
    vox = _voxel_index(g.means, box_lo, voxel, shape)          # -1 outside the grid
    from scipy import ndimage

    occ = np.zeros(int(np.prod(shape)), bool)
    sv = vox[solid_idx]
    occ[sv[sv >= 0]] = True
    lab, n_lab = ndimage.label(occ.reshape(shape), structure=np.ones((3, 3, 3), bool))
    lab = lab.ravel()
    counts = np.bincount(lab[sv[sv >= 0]], minlength=n_lab + 1)
    counts[0] = 0
    big = counts >= max(20, params.floater_min_share * len(solid_idx))
    # every Gaussian (any opacity) within two voxels of a big cluster stays (a 5×5×5 dilation, separably): the
    # faint halo trained around surfaces is not a floater
    big_vox = big[lab].reshape(shape).astype(np.uint8)
    for axis in range(3):
        big_vox = ndimage.maximum_filter1d(big_vox, 5, axis=axis, mode="constant")
    big_vox = big_vox.ravel().astype(bool)
    keep = np.zeros(len(g), bool)
    inside = vox >= 0
    keep[inside] = big_vox[vox[inside]]
    floaters = int((~keep).sum())
    core_idx = np.flatnonzero(solid & keep)
    if len(core_idx) < 100:
        raise SceneError(f"{src}: fewer than 100 opaque Gaussians left after dropping floaters")
    if len(core_idx) > params.sample:
        core_idx = np.sort(rng.choice(core_idx, params.sample, replace=False))
    core = g.means[core_idx].astype(np.float64)
    extent = float(np.linalg.norm(np.percentile(core, 98, axis=0) - np.percentile(core, 2, axis=0)))
    tol = params.plane_tol * extent
    evidence: dict[str, Any] = {"opaque": int(solid.sum()), "sample": len(core), "plane_tol_file": tol}
    planes = [] if hints.up is not None and hints.ground is not None else ransac_planes(core, tol, rng)
    oriented = []
    for p in planes:
        p, side = _orient(p, core, tol)
        oriented.append((p, side))
    evidence["planes"] = [{"normal": p["normal"].round(5).tolist(), "share": round(p["share"], 4),
                           "one_sided": round(side, 4), "rms_file": p["rms"]} for p, side in oriented]

    def ground_like(p, side):
        return side >= params.one_sided and _stands_on(p, core, tol)

    # --- up
    cam_up = focus = None
    if cameras:
        cam_up, focus = camera_up_and_focus(cameras)
        evidence["cameras"] = len(cameras)
        evidence["camera_up_file"] = cam_up.round(6).tolist()
    ground_plane = None
    if hints.up is not None:
        up, up_source = _unit(hints.up), "override"
        near = [p for p, side in oriented if _angle_deg(p["normal"], up) < 10 and side >= params.one_sided]
        ground_plane = max(near, key=lambda p: p["share"]) if near else None
    elif cam_up is not None:
        near = [p for p, side in oriented if ground_like(p, side)
                and _angle_deg(p["normal"], cam_up) < params.cameras_ground_within_deg]
        if near:
            ground_plane = max(near, key=lambda p: p["share"])
            up, up_source = _unit(ground_plane["normal"]), "cameras+ground"
        else:
            up, up_source = cam_up, "cameras"
    else:
        prior = _unit(prior_up)
        grounds = [(p, side) for p, side in oriented if p["share"] >= params.ground_min_share and ground_like(p, side)]
        # a ground within ground_within_deg of the convention refines it; one far from it must be unmistakable
        # (nothing under it): a real capture's file frame is rarely more than a camera's pitch off the convention,
        # while a flat object (a guitar's body and neck) makes a large, nearly one-sided plane at any angle
        near = [p for p, side in grounds if _angle_deg(p["normal"], prior) <= params.ground_within_deg]
        sure = [p for p, side in grounds if side >= params.sure_one_sided and p["share"] >= params.sure_share]
        if near or sure:
            ground_plane = max(near or sure, key=lambda p: p["share"])
            up, up_source = _unit(ground_plane["normal"]), "ground_plane"
        else:
            supports = [p for p, side in oriented if side >= params.one_sided
                        and _angle_deg(p["normal"], prior) < params.support_within_deg]
            if supports:
                ground_plane = max(supports, key=lambda p: p["share"])
                up, up_source = _unit(ground_plane["normal"]), "support_plane"
            else:
                up, up_source = prior, "convention"
    # --- ground offset and the object
    h = core @ up
    if hints.ground is not None:
        ground, ground_src = float(hints.ground), "override"
    elif ground_plane is not None:
        ground, ground_src = float(ground_plane["offset"]) if ground_plane["normal"] @ up > 0 else -float(ground_plane["offset"]), "plane"
    else:
        ground, ground_src = None, "base"
    b = _basis(up)
    plane_rms = float(ground_plane["rms"]) if ground_plane is not None else 0.0
    above_cut = (ground if ground is not None else -np.inf) + max(4 * plane_rms, 0.05 * tol)
    above = core[h > above_cut]
    if len(above) < 50:
        raise SceneError(f"{src}: nothing stands above the ground found at offset {ground:.4g} along up "
                         f"{np.round(up, 3).tolist()} ({up_source}); give frame.up= / frame.ground= explicitly")
    # components of what stands above the ground, on a finer grid over its own box
    a_lo, a_hi = np.percentile(above, 0.5, axis=0), np.percentile(above, 99.5, axis=0)
    a_vox = float(np.max(a_hi - a_lo)) / 96 + 1e-12
    a_lo = a_lo - 2 * a_vox
    a_shape = np.maximum(np.ceil((a_hi - a_lo) / a_vox).astype(int) + 4, 1)
    a_lab, a_counts = _components(above, a_lo, a_vox, a_shape)
    if hints.center is not None:
        focus_pt, center_source = np.asarray(hints.center, float), "override"
    elif focus is not None:
        focus_pt, center_source = focus, "cameras"
    else:
        focus_pt, center_source = np.median(above, axis=0), "median_above_ground"
    labels = np.flatnonzero(a_counts >= max(20, 0.01 * len(above)))
    if not len(labels):
        labels = np.array([int(np.argmax(a_counts))])
    # the object: the sizeable component whose points come nearest the focus (horizontally), largest on ties
    best, best_key = None, None
    for lb in labels:
        pts = above[a_lab == lb]
        d = float(np.min(np.linalg.norm((pts - focus_pt) @ b[:2].T, axis=1)))
        key = (round(d / (a_vox * 4)), -len(pts))
        if best_key is None or key < best_key:
            best, best_key = lb, key
    evidence["object_share_above_ground"] = round(float(np.mean(a_lab == best)), 4)
    evidence["components_above_ground"] = int(len(labels))
    # the object's extent from all its opaque Gaussians (not the sample): thin tops and handles are few
    full = g.means[solid & keep]
    full = full[full @ up.astype(np.float32) > above_cut].astype(np.float64)
    grid_lab = np.zeros(int(np.prod(a_shape)), np.int64)
    s_lin = _voxel_index(above, a_lo, a_vox, a_shape)
    grid_lab[s_lin[s_lin >= 0]] = a_lab[s_lin >= 0]
    f_lin = _voxel_index(full, a_lo, a_vox, a_shape)
    obj = full[(f_lin >= 0) & (grid_lab[np.maximum(f_lin, 0)] == best)]
    if len(obj) < 20:
        obj = above[a_lab == best]
    oh = obj @ up
    if ground is None:
        ground = float(np.percentile(oh, 0.2))
    top = float(np.percentile(oh, 99.95))
    height_file = top - ground
    if not height_file > 0:
        raise SceneError(f"{src}: the object has no height above the ground ({height_file:.3g} file units)")
    uv = obj @ b[:2].T
    uv_lo, uv_hi = np.percentile(uv, 0.1, axis=0), np.percentile(uv, 99.9, axis=0)
    centre_uv = (uv_lo + uv_hi) / 2
    centre_file = b[0] * centre_uv[0] + b[1] * centre_uv[1] + up * ground
    # --- scale
    if hints.object_height_m is not None:
        height_m, height_source = float(hints.object_height_m), "override"
    elif hints.category and hints.category in CATEGORY_HEIGHTS_M:
        height_m, height_source = CATEGORY_HEIGHTS_M[hints.category], f"category:{hints.category}"
    else:
        height_m, height_source = DEFAULT_HEIGHT_M, "default"
    s = height_m / height_file
    t = np.eye(4)
    t[:3, :3] = s * b
    t[:3, 3] = -s * (b @ centre_file)
    half = s * (uv_hi - uv_lo) / 2
    if hints.object_radius is not None:
        half = np.full(2, float(hints.object_radius) / math.sqrt(2))
    bounds = np.array([[-half[0], -half[1], 0.0], [half[0], half[1], height_m]])
    # --- is the ground wide enough for the props?
    ground_kind = "base" if ground_src == "base" else "support"
    if ground_plane is not None or ground_src == "override":
        gp = core[np.abs(h - ground) < max(4 * plane_rms, 0.05 * tol)] if ground_plane is not None or hints.ground is not None \
            else np.zeros((0, 3))
        reach = 0.0
        if len(gp) > 20:
            r = np.linalg.norm((gp - centre_file) @ b[:2].T, axis=1) * s
            # the ground must be there all around: the 90th percentile reach in each of 8 sectors
            ang = np.arctan2(*(((gp - centre_file) @ b[:2].T)[:, ::-1].T))
            sectors = [r[(ang >= a0) & (ang < a0 + math.pi / 4)] for a0 in np.linspace(-math.pi, math.pi, 9)[:-1]]
            reach = float(min(np.percentile(x, 90) if len(x) > 10 else 0.0 for x in sectors))
        need = params.ground_reach * (float(np.max(half)) * math.sqrt(2) + 1.0)
        evidence["ground_reach_m"], evidence["ground_reach_needed_m"] = round(reach, 4), round(need, 4)
        if reach >= need:
            ground_kind = "captured"
    add_ground = {"auto": ground_kind != "captured", "captured": False, "added": True}[hints.ground_mode]
    evidence["ground_source"] = ground_src
    frame = CanonicalFrame(t, float(s), tuple(up.tolist()), up_source, float(ground), ground_kind, bool(add_ground),
                           tuple(centre_file.tolist()), center_source, float(height_file), float(height_m),
                           height_source, bounds, floaters, evidence)
    return frame, keep


def canonical_orbit(frame: CanonicalFrame, cameras=None):
    """The reference viewer orbit of a canonicalised scene: fitted to the capture's cameras when known
    (:func:`scenes.co3d.fit_orbit` rules), else the catalogue's orbit rule for an object of this size
    (radius max(2 m, 1.55 × its largest extent), eye 1.45 m high, looking at min(half its height, 0.6 m))."""
    from .trajectory import OrbitTrajectory

    lo, hi = np.asarray(frame.object_bounds)
    extent = float(max(np.max(hi[:2] - lo[:2]), hi[2] - lo[2]))
    target = (0.0, 0.0, float(min(hi[2] / 2, 0.6)))
    if cameras:
        eyes = frame.apply(np.array([c.center for c in cameras]))
        rel = eyes[:, :2]
        az = np.degrees(np.unwrap(np.arctan2(rel[:, 1], rel[:, 0])))
        fov = float(np.median([c.fov_x_deg for c in cameras]))
        return OrbitTrajectory(target=target, radius=float(np.median(np.linalg.norm(rel, axis=1))),
                               height=float(np.median(eyes[:, 2])), radius_amp=0.0, height_amp=0.0,
                               start_deg=float(az[0]), sweep_deg=float(az[-1] - az[0]) or 360.0, fov_deg=fov)
    return OrbitTrajectory(target=target, radius=float(max(2.0, 1.55 * extent)),
                           height=float(max(1.45, 0.9 * hi[2])), radius_amp=0.08, height_amp=0.2)


__all__ = ["CATEGORY_HEIGHTS_M", "CONVENTION_UP", "CanonicalFrame", "FrameHints", "FrameParams", "camera_up_and_focus",
           "canonical_orbit", "estimate_frame", "fit_plane", "ransac_planes"]
