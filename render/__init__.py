"""How scenes become pixels: the splat renderer (cpu / torch reference / gsplat), meshes, compositing,
image files. Cameras are geometry and live one layer down, in :mod:`scenes.camera`."""
from .splat import RenderOutput, splat, splat_frames

__all__ = ["RenderOutput", "splat", "splat_frames"]
