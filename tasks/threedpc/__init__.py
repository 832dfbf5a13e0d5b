"""The 3D perception challenge (3D-PC) dataset builder: ``python -m tasks.threedpc out=<dir> ...``."""
from .build import build, build_scene
from .config import BuildConfig, ConfigError, config_from_dict

__all__ = ["BuildConfig", "ConfigError", "build", "build_scene", "config_from_dict"]
