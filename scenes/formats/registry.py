"""The one registry of scene file formats: what each is called, how it is recognised, read and written.

A format registers one :class:`SceneFormat` (in the module that implements it, with
:func:`register_format`); :mod:`scenes.formats` imports every built-in format module, so the registry is
complete as soon as the package is imported. Adding a format touches one new module and one import line.

Recognition is by content first, suffix second (:func:`detect_format`): every format's ``sniff`` looks at
the first bytes of the file (magic numbers, the PLY header, zip member names; a folder gets ``b""``) and
says whether the file is of its kind. Sniffers are mutually exclusive by construction (a PLY with a
``chunk`` element is a compressed PLY, any other PLY an INRIA one; a zip holding ``meta.json`` is SOG,
one holding ``*/data.pkl`` a torch checkpoint). Formats without a magic number (antimatter15 ``.splat``)
are chosen by suffix when no sniffer claims the file; the reader then checks the content (size, version
bytes) and says what is wrong.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.registry import Registry, suggest, where

from ..gaussians import GaussianScene, SceneError

__all__ = ["SceneFormat", "register_format", "formats", "get_format", "detect_format", "read_scene_file",
           "write_scene_file", "scene_suffixes", "is_scene_path"]

HEAD_BYTES = 4096  # what a sniffer sees of a file


@dataclasses.dataclass(frozen=True)
class SceneFormat:
    """One scene file format.

    ``name``: the registry key (also ``metadata["format"]`` of every scene read from such a file).
    ``suffixes``: lower-case file suffixes with the dot (``".compressed.ply"`` may be longer than one dot).
    ``sniff(path, head) -> bool``: is this file (or folder, ``head == b""``) of this format? ``head`` is the
    first :data:`HEAD_BYTES` bytes. Must not raise for files of other formats.
    ``read(path) -> GaussianScene``: the scene in the file's own frame (no canonicalisation), ``source`` =
    the path, ``metadata`` = ``{"format": name, ...what the file declares}``; errors are
    :class:`SceneError` naming the file and what is wrong.
    ``write(scene, path, **options) -> Path`` (optional): atomic (whole file or nothing).
    ``folder``: the format may also be a folder (unzipped SOG).
    ``file_names``: exact file names that name the format whatever their suffix (SOG's ``meta.json``).
    """

    name: str
    suffixes: tuple[str, ...]
    description: str
    sniff: Callable[[Path, bytes], bool]
    read: Callable[[Path], GaussianScene]
    write: Callable[..., Path] | None = None
    folder: bool = False
    file_names: tuple[str, ...] = ()


_FORMATS: Registry[SceneFormat] = Registry("scene format", key="format", origin=lambda f: where(f.read))


def register_format(fmt: SceneFormat) -> SceneFormat:
    """Add ``fmt`` to the registry; a second format of the same name is an error (not a silent override)."""
    bad = [s for s in fmt.suffixes if not s.startswith(".") or s != s.lower()]
    if bad:
        raise ValueError(f"scene format {fmt.name!r}: suffixes {bad} must be lower case and start with '.'")
    return _FORMATS.register(fmt.name, fmt)


def formats() -> list[SceneFormat]:
    """Every registered format, in registration order."""
    return list(_FORMATS.values())


def _listing(writable: bool = False) -> str:
    return ", ".join(f"{f.name} ({' '.join(f.suffixes)})" for f in _FORMATS.values() if f.write or not writable)


def get_format(name: str) -> SceneFormat:
    """The format called ``name``; an unknown name lists the known ones and suggests the closest."""
    if name in _FORMATS:
        return _FORMATS[name]
    raise SceneError(f"unknown scene format {name!r}; {suggest(name, list(_FORMATS))}known formats: {_listing()}")


def scene_suffixes() -> tuple[str, ...]:
    """Every suffix a scene file may have (lower case, with the dot), longest first."""
    return tuple(sorted({s for f in _FORMATS.values() for s in f.suffixes}, key=lambda s: (-len(s), s)))


def _by_suffix(path: Path) -> SceneFormat | None:
    """The format whose exact file name, else whose longest suffix, matches ``path``'s name."""
    name = path.name.lower()
    exact = [f for f in _FORMATS.values() if name in f.file_names]
    if exact:
        return exact[0]
    best = None
    for f in _FORMATS.values():
        for s in f.suffixes:
            if name.endswith(s) and (best is None or len(s) > best[0]):
                best = (len(s), f)
    return best[1] if best else None


def _head(path: Path) -> bytes:
    if path.is_dir():
        return b""
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError as e:
        raise SceneError(f"{path}: cannot be read ({e.strerror or e})") from e


def detect_format(path: str | os.PathLike) -> SceneFormat:
    """The format of the scene file (or SOG folder) ``path``: by content, else by suffix.

    Raises :class:`SceneError` when the path does not exist or nothing recognises it (naming the known
    formats).
    """
    path = Path(path)
    if not path.exists():
        if _by_suffix(path) is None:
            raise SceneError(f"{path}: unknown scene file type (suffix {path.suffix or 'none'!r}) and no such file; "
                             f"known formats: {_listing()}")
        raise SceneError(f"{path}: no such file")
    head = _head(path)
    for f in _FORMATS.values():
        if (f.folder or not path.is_dir()) and f.sniff(path, head):
            return f
    by_suffix = _by_suffix(path)
    if by_suffix is not None and (by_suffix.folder or not path.is_dir()):
        return by_suffix
    if path.is_dir():
        raise SceneError(f"{path}: is a folder but not a scene (an unzipped SOG folder holds meta.json); "
                         f"known formats: {_listing()}")
    raise SceneError(f"{path}: unknown scene file type (suffix {path.suffix or 'none'!r}, first bytes "
                     f"{head[:8]!r}); known formats: {_listing()}")


def read_scene_file(path: str | os.PathLike) -> GaussianScene:
    """Read the scene file (or SOG folder) ``path`` with the reader of its :func:`detect_format`.

    The scene is in the file's own frame; ``metadata["format"]`` is the format's name (plus what the file
    declares, e.g. ``sh_degree``, ``antialiased``, ``format_version``).
    """
    fmt = detect_format(path)
    scene = fmt.read(Path(path))
    scene.metadata = {**scene.metadata, "format": fmt.name}
    return scene


def write_scene_file(scene: GaussianScene, path: str | os.PathLike, format: str | None = None,
                     **options: Any) -> Path:
    """Write ``scene`` to ``path`` as ``format`` (default: from the suffix, longest match first), atomically.

    ``options`` go to the format's writer (e.g. ``sort=False`` for the compressed formats). Writers store the
    scene's own frame; ``world_transform`` is not part of any format (it is the caller's to keep, as
    :func:`scenes.formats.inria.write_ply` documents).
    """
    path = Path(path)
    fmt = get_format(format) if format is not None else _by_suffix(path)
    if fmt is None:
        raise SceneError(f"{path}: cannot tell the scene format from the suffix {path.suffix or 'none'!r}; "
                         f"writable formats: {_listing(writable=True)}")
    if fmt.write is None:
        raise SceneError(f"{path}: format {fmt.name!r} can be read but not written; "
                         f"writable formats: {_listing(writable=True)}")
    return fmt.write(scene, path, **options)


def is_scene_path(spec: str | os.PathLike) -> bool:
    """Does the CLI string ``spec`` name a scene file or an unzipped SOG folder (rather than e.g. a catalogue
    name or a CO3D spec)?

    True for a known scene suffix or file name (SOG's ``meta.json``), whether or not the file exists (so
    that a missing file is reported as such), and for an existing file or folder that some format's sniffer
    recognises.
    """
    path = Path(str(spec))
    if _by_suffix(path) is not None:
        return True
    if not path.exists():
        return False
    try:
        head = _head(path)
    except SceneError:
        return False
    return any((f.folder or not path.is_dir()) and f.sniff(path, head) for f in _FORMATS.values())
