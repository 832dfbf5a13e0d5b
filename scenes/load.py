"""One entry point for every scene: ``load_scene(spec)`` picks the loader by what ``spec`` names.

Dispatch lives here, above the loaders (catalogue, CO3D, captures from scene files) and the ``Scene`` type they
build, so every import in ``scenes`` points one way (``load -> catalogue/co3d/capture -> scene``) and none
has to be deferred into a function to dodge a cycle.
"""
from __future__ import annotations

import json
import os

from .capture import load_capture
from .catalogue import build
from .co3d import load_co3d_scene
from .formats import is_scene_path
from .gaussians import SceneError
from .scene import Scene

__all__ = ["is_file_spec", "load_scene"]

SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def is_file_spec(spec: str) -> bool:
    """True when ``spec`` names a file or folder (a scene file of any format, an unzipped SOG, a CO3D scene
    spec) rather than a catalogue scene: a scene path (``scenes.formats.is_scene_path``), a path separator, a
    spec suffix, or an existing path."""
    spec = str(spec)
    return is_scene_path(spec) or os.path.sep in spec or spec.lower().endswith(SPEC_SUFFIXES) or os.path.exists(spec)


_CACHE: dict = {}


def load_scene(spec: str, seed: int = 0, frame: dict | None = None) -> Scene:
    """Resolve ``spec``: a catalogue name (``bench_01``), a scene file in any format of ``scenes.formats``
    (INRIA/compressed ``.ply``, ``.splat``, ``.sog`` or an unzipped SOG folder, ``.spz``, gsplat ``.pt``, …) or a
    CO3D scene spec (``.yaml``/``.json``, see ``scenes/co3d.py``).

    A scene file is moved into the canonical frame (+z up, ground at z = 0, object at the origin, metres;
    ``scenes/capture.py``); ``frame`` overrides the estimate (keys of :class:`scenes.canonical.FrameHints`).
    Scenes from files are cached per process by (path, size, modification time, ``frame``), like the
    catalogue's: treat the returned scene as read-only.
    """
    spec = str(spec)
    if spec.lower().endswith(SPEC_SUFFIXES) and not is_scene_path(spec):
        return load_co3d_scene(spec)
    if is_file_spec(spec):
        if not os.path.exists(spec):
            raise SceneError(f"{spec}: no such file")
        st = os.stat(spec)
        key = (os.path.realpath(spec), st.st_size, st.st_mtime_ns, json.dumps(frame or {}, sort_keys=True, default=str),
               seed)
        side = spec + ".json"
        if os.path.exists(side):
            key += (os.stat(side).st_mtime_ns,)
        if key not in _CACHE:
            if len(_CACHE) >= 4:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = load_capture(spec, frame, seed)
        return _CACHE[key]
    if frame:
        raise SceneError(f"{spec}: frame overrides apply to scene files only (a catalogue scene is canonical)")
    return build(spec, seed)
