"""Scene file formats: one registry, a reader for every common 3DGS format, writers where round trips need them.

    from scenes.formats import read_scene_file, write_scene_file, detect_format, is_scene_path, scene_suffixes

| format (``metadata["format"]``) | suffixes | recognised by | read | write | module |
|---|---|---|---|---|---|
| ``inria-3dgs-ply`` | ``.ply`` | PLY header without a ``chunk`` element | ✓ (SH 0-3) | ✓ (exact) | :mod:`.inria` |
| ``compressed-ply`` | ``.compressed.ply`` | PLY header with a ``chunk`` element | ✓ (SH 0-3) | ✓ | :mod:`.compressed_ply` |
| ``sog`` | ``.sog``, folder, ``meta.json`` | zip / folder holding ``meta.json`` | ✓ (v2, SH 0-3) | ✓ | :mod:`.sog` |
| ``splat`` | ``.splat`` | suffix (no magic number) | ✓ (DC) | ✓ | :mod:`.splat` |
| ``spz`` | ``.spz`` | gzip stream starting ``NGSP`` | ✓ (v2, v3; SH 0-3; RUB → PLY axes) | ✓ (v3, v2) | :mod:`.spz` |
| ``ksplat`` | ``.ksplat`` | suffix (no magic number) | ✓ (levels 0-2, SH 0-2) | ✓ (levels 0-1) | :mod:`.ksplat` |
| ``gsplat-checkpoint`` | ``.pt .pth .ckpt`` | torch zip (``*/data.pkl``) or legacy magic | ✓ | — | :mod:`.gsplat` |

Every reader returns the scene in the file's own frame (no canonicalisation) with ``metadata["format"]`` and
what the file declares (``sh_degree``, ``format_version``, ``antialiased``, ``generator``). Errors are
:class:`~scenes.gaussians.SceneError` naming the file and what is wrong. The PLY parser (one for all PLY
formats and CO3D point clouds) is :mod:`.ply`; shared quantisation helpers are in :mod:`.quantize`.
"""
from __future__ import annotations

from . import compressed_ply, gsplat, inria, ksplat, sog, splat, spz  # noqa: F401 - each registers its format
from .registry import (SceneFormat, detect_format, formats, get_format, is_scene_path, read_scene_file,
                       register_format, scene_suffixes, write_scene_file)

__all__ = ["SceneFormat", "register_format", "formats", "get_format", "detect_format", "read_scene_file",
           "write_scene_file", "scene_suffixes", "is_scene_path"]
