"""Splats and opaque meshes in one image, by the Unity Gaussian Splatting rule.

Opaque meshes are drawn first (colour + depth buffer); splats are then composited front to back over
the mesh colour, each Gaussian tested against the mesh depth at the pixel with the depth of its centre
and never writing depth:

    keep Gaussian i at pixel p only if z_i <= D(p);   final(p) = C(p) + (1 - A(p)) * B(p)

where D is the mesh depth (inf where no mesh) and B the mesh colour (the background where no mesh).
The `cpu` and `torch` splat backends apply the rule exactly (``splat(..., depth_limit=D, background=B)``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from scenes.camera import Camera
from .meshes import MeshLayer, render_meshes, render_meshes_raycast
from .splat import RenderOutput, splat, to_uint8


@dataclasses.dataclass
class Composite:
    """``image``: final RGB float32 [H,W,3]; ``splats``: the splat pass (its ``alpha`` is the opacity the
    splats in front of the meshes accumulate); ``layer``: the mesh pass."""

    image: np.ndarray
    splats: RenderOutput
    layer: MeshLayer

    def image_uint8(self) -> np.ndarray:
        return to_uint8(self.image)

    def mesh_visible(self, k: int, alpha_max: float = 0.5) -> np.ndarray:
        """Pixels where mesh ``k`` is the front mesh and the splats in front of it stay below ``alpha_max``."""
        return (self.layer.index == k) & (self.splats.alpha < alpha_max)


def render_mesh_layer(meshes: list, camera: Camera, method: str = "pyrender") -> MeshLayer:
    if method == "pyrender":
        return render_meshes(meshes, camera)
    if method == "raycast":
        return render_meshes_raycast(meshes, camera)
    raise ValueError(f"mesh renderer {method!r}; one of 'pyrender', 'raycast'")


def composite(gaussians, camera: Camera, meshes: list, background=(0.0, 0.0, 0.0), backend: str = "cpu",
              mesh_renderer: str = "pyrender") -> Composite:
    """Render ``meshes`` (opaque, vertex-coloured trimesh) into the splat scene ``gaussians``."""
    return composite_layer(gaussians, camera, render_mesh_layer(meshes, camera, mesh_renderer), background, backend)


def composite_layer(gaussians, camera: Camera, layer: MeshLayer, background=(0.0, 0.0, 0.0),
                    backend: str = "cpu") -> Composite:
    """:func:`composite` with the mesh pass ``layer`` already rendered (for ``camera``): callers that decide
    from the mesh pass alone whether a frame is worth splatting (tasks/labels.py) render it once."""
    bg = np.broadcast_to(np.asarray(background, np.float32), (camera.height, camera.width, 3)) \
        if np.asarray(background).shape == (3,) else np.asarray(background, np.float32)
    base = np.where(layer.mask[..., None], layer.rgb, bg)
    if backend == "auto":
        backend = "cpu"  # the depth test needs a backend with a per-pixel depth limit
    out = splat(gaussians, camera, background=base, depth_limit=layer.depth, backend=backend)
    return Composite(out.rgb, out, layer)
