"""How scenes become pixels: cameras, the splat renderer (cpu / torch reference / gsplat)."""
from .camera import Camera, CameraError, look_at
from .splat import RenderOutput, splat

__all__ = ["Camera", "CameraError", "look_at", "RenderOutput", "splat"]
