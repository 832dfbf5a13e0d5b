"""A renderable scene: Gaussians plus what the tasks need around them.

``Scene`` is what every consumer (trajectory CLI, props and labels, dataset builders) receives, whether
it came from the procedural catalogue or from a file:

* ``gaussians``  — the splats (:class:`~scenes.gaussians.GaussianScene`).
* ``trajectory`` — the reference viewer trajectory (:class:`~scenes.trajectory.OrbitTrajectory`).
* ``background`` — RGB in [0, 1] behind everything.
* ``meshes``     — exact source geometry by role ("object", "ground", "backdrop") for procedural
  scenes; for captures loaded from files only what was added to them (the "ground" disc of
  scenes/capture.py): their surfaces are proxy meshes built from the Gaussians (:meth:`Scene.occluders`,
  :meth:`Scene.object_mesh`).
* ``metadata``   — JSON-serialisable facts (catalogue name, category, instance, seed, source file).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .gaussians import GaussianScene, SceneError
from .trajectory import OrbitTrajectory


@dataclasses.dataclass
class Scene:
    name: str
    gaussians: GaussianScene
    trajectory: OrbitTrajectory
    background: tuple[float, float, float] = (0.0, 0.0, 0.0)
    meshes: dict[str, Any] = dataclasses.field(default_factory=dict)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    _occluders: Any = dataclasses.field(default=None, init=False, repr=False, compare=False)
    _object_mesh: Any = dataclasses.field(default=None, init=False, repr=False, compare=False)

    @property
    def exact(self) -> bool:
        """True for scenes whose geometry is known exactly (procedural: an "object" mesh); False for captures,
        whose surfaces are proxies built from the Gaussians (scenes/proxy.py)."""
        return "object" in self.meshes

    def occluders(self):
        """Geometry for line-of-sight ray casting: the exact meshes, or (scenes from files) a proxy mesh built
        from the file's Gaussians (cached, scenes/proxy.py) plus any mesh added to the capture (its ground disc)."""
        if self._occluders is None:
            if self.exact:
                self._occluders = self.collision_mesh()
            else:
                import trimesh

                from .proxy import proxy_mesh_for

                parts = [proxy_mesh_for(self)] + list(self.meshes.values())
                self._occluders = parts[0] if len(parts) == 1 else trimesh.util.concatenate(parts)
        return self._occluders

    def object_mesh(self):
        """The central object's surface: the exact mesh, or (captures) a proxy of the Gaussians inside its bounds
        (:func:`scenes.proxy.object_proxy_for`); what props must not collide with."""
        if "object" in self.meshes:
            return self.meshes["object"]
        if self._object_mesh is None:
            from .proxy import object_proxy_for

            self._object_mesh = object_proxy_for(self)
        return self._object_mesh

    @property
    def object_bounds(self) -> np.ndarray:
        """[[xmin, ymin, zmin], [xmax, ymax, zmax]] of the central object (m)."""
        if "object" in self.meshes:
            return np.asarray(self.meshes["object"].bounds)
        b = self.metadata.get("object_bounds")
        if b is None:
            raise SceneError(f"{self.name}: object bounds unknown (no object mesh and no 'object_bounds' metadata)")
        return np.asarray(b, float)

    def collision_mesh(self):
        """All exact geometry as one trimesh (procedural scenes only)."""
        import trimesh

        if not self.exact:
            raise SceneError(f"{self.name}: no exact meshes (scene loaded from a file)")
        return trimesh.util.concatenate(list(self.meshes.values()))

    def sidecar(self) -> dict[str, Any]:
        """What a ``.ply`` cannot hold: trajectory, background, object bounds, metadata."""
        meta = dict(self.metadata)
        if "object" in self.meshes:
            meta["object_bounds"] = np.asarray(self.meshes["object"].bounds).tolist()
        return {"name": self.name, "trajectory": self.trajectory.to_dict(), "background": list(self.background),
                "metadata": meta}


def default_orbit(means: np.ndarray, opacities: np.ndarray | None = None,
                  scales: np.ndarray | None = None) -> OrbitTrajectory:
    """A reference orbit for a scene with no recorded path: around the opacity-weighted centre of the
    central 50% of Gaussians, at 2.5× their spread, +z up. The spread is at least 3× the median largest
    standard deviation (``scales``, activated, metres), so a scene of one or a few Gaussians is seen from
    outside them."""
    pts = np.asarray(means, float)
    if opacities is not None:
        pts = pts[np.asarray(opacities) > 0.5] if (np.asarray(opacities) > 0.5).sum() > 10 else pts
    lo, hi = np.percentile(pts, 25, axis=0), np.percentile(pts, 75, axis=0)
    centre = np.median(pts, axis=0)
    floor = 3.0 * float(np.median(np.max(scales, axis=1))) if scales is not None and len(scales) else 0.0
    spread = float(max(np.max(hi - lo), floor, 1e-3))
    return OrbitTrajectory(target=tuple(map(float, centre)), radius=2.5 * spread,
                           height=float(centre[2] + 1.0 * spread), radius_amp=0.0, height_amp=0.0)
