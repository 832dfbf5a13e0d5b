"""What exists in 3D: Gaussian scenes, their file formats and the procedural scene catalogue."""
from .gaussians import GaussianScene, SceneError

__all__ = ["GaussianScene", "SceneError"]
