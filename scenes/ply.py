"""The old home of Vantage's PLY code, kept so existing imports work: the parser now lives in
:mod:`scenes.formats.ply`, the INRIA reader/writer in :mod:`scenes.formats.inria`, the gsplat checkpoint
reader in :mod:`scenes.formats.gsplat`, and :func:`load_scene_file` is the format registry's
:func:`scenes.formats.read_scene_file` (any registered format, chosen by content, then suffix)."""
from __future__ import annotations

from .formats import read_scene_file as load_scene_file
from .formats.gsplat import read_gsplat_checkpoint
from .formats.inria import read_ply, write_ply
from .formats.ply import read_elements, read_header, read_vertices

__all__ = ["load_scene_file", "read_gsplat_checkpoint", "read_ply", "write_ply", "read_vertices", "read_header",
           "read_elements"]
