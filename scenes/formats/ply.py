"""The one PLY parser of Vantage: headers, elements and vertex columns of any PLY file.

Used by every PLY-based scene format (INRIA 3DGS ``.ply`` in :mod:`scenes.formats.inria`, PlayCanvas
compressed ``.ply`` in :mod:`scenes.formats.compressed_ply`) and by CO3D point clouds (:mod:`scenes.co3d`).
Binary bodies (either endianness) are read with one structured ``np.fromfile`` per element, ascii bodies
with ``np.loadtxt``; scalar properties only (list properties belong to meshes). Every problem raises
:class:`~scenes.gaussians.SceneError` naming the file and what is wrong (a header cut short, a malformed
line, a body shorter than the header declares) instead of surfacing numpy tracebacks.
Format reference: Paul Bourke's PLY description (http://paulbourke.net/dataformats/ply/).
"""
from __future__ import annotations

import dataclasses
import os
import re

import numpy as np

from ..gaussians import SceneError

_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}


@dataclasses.dataclass(frozen=True)
class PlyElement:
    """One ``element`` of a PLY header: its name, row count and scalar properties ``(name, numpy code)``."""

    name: str
    count: int
    props: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        return [p[0] for p in self.props]


@dataclasses.dataclass(frozen=True)
class PlyHeader:
    """A parsed PLY header: body format, elements in file order, byte offset of the body, comment lines."""

    format: str
    elements: tuple[PlyElement, ...]
    data_start: int
    comments: tuple[str, ...] = ()

    def element(self, name: str) -> PlyElement | None:
        return next((e for e in self.elements if e.name == name), None)


def _parse_header(f, path: str) -> PlyHeader:
    first = f.readline(64)
    if first.strip() != b"ply":
        raise SceneError(f"{path}: not a PLY file (first line is {first[:20]!r}, expected b'ply')")
    fmt = None
    elements: list[tuple[str, int, list[tuple[str, str]]]] = []
    comments: list[str] = []
    while True:
        raw = f.readline(4096)
        if not raw.endswith(b"\n") and raw.strip() != b"end_header":
            # a header line is short; no newline means the file ends inside the header (or it is not text)
            raise SceneError(f"{path}: header ends before 'end_header' (file truncated?)")
        line = raw.decode("ascii", errors="replace").strip()
        if line == "end_header":
            break
        parts = line.split()
        if not parts or parts[0] == "obj_info":
            continue
        if parts[0] == "comment":
            comments.append(line[len("comment"):].strip())
            continue
        if parts[0] == "format":
            fmt = parts[1] if len(parts) > 1 else ""
        elif parts[0] == "element":
            if len(parts) != 3 or not parts[2].isdigit():
                raise SceneError(f"{path}: malformed header line {line!r} (expected 'element <name> <count>')")
            elements.append((parts[1], int(parts[2]), []))
        elif parts[0] == "property":
            if not elements:
                raise SceneError(f"{path}: property before any element in header: {line!r}")
            if len(parts) >= 2 and parts[1] == "list":
                raise SceneError(
                    f"{path}: element '{elements[-1][0]}' has list property {parts[-1]!r}; "
                    "a 3DGS .ply holds only scalar vertex properties"
                )
            if len(parts) != 3:
                raise SceneError(f"{path}: malformed header line {line!r} (expected 'property <type> <name>')")
            if parts[1] not in _PLY_TYPES:
                raise SceneError(f"{path}: unknown PLY type {parts[1]!r} in {line!r}")
            elements[-1][2].append((parts[2], _PLY_TYPES[parts[1]]))
    if fmt not in ("binary_little_endian", "binary_big_endian", "ascii"):
        raise SceneError(f"{path}: unsupported PLY format {fmt!r}")
    return PlyHeader(fmt, tuple(PlyElement(n, c, tuple(p)) for n, c, p in elements), f.tell(), tuple(comments))


def read_header(path: str | os.PathLike) -> PlyHeader:
    """The header of the PLY file ``path`` (:class:`SceneError` naming the file when it is not a PLY header)."""
    path = str(path)
    if not os.path.exists(path):
        raise SceneError(f"{path}: no such file")
    with open(path, "rb") as f:
        return _parse_header(f, path)


def numbered(names: list[str], prefix: str) -> list[str]:
    """The names ``<prefix><digits>`` among ``names``, ordered by their number (``f_rest_10`` after ``f_rest_9``)."""
    pat = re.compile(re.escape(prefix) + r"(\d+)$")
    found = sorted((int(m.group(1)), n) for n in names if (m := pat.match(n)))
    return [n for _, n in found]


def read_elements(path: str | os.PathLike, header: PlyHeader | None = None) -> dict[str, np.ndarray]:
    """Every element of a PLY file as a structured array ``{element name: array [count]}``, in file order.

    Binary bodies (either endianness) are read with one ``np.fromfile`` per element; ascii bodies with
    ``np.loadtxt`` (as float64 columns). A body shorter than the header declares raises :class:`SceneError`
    naming the element and the byte counts.
    """
    path = str(path)
    if header is None:
        header = read_header(path)
    out: dict[str, np.ndarray] = {}
    with open(path, "rb") as f:
        f.seek(header.data_start)
        if header.format == "ascii":
            for e in header.elements:
                dtype = np.dtype([(n, "f8") for n, _ in e.props])
                if e.count == 0:
                    out[e.name] = np.zeros(0, dtype)
                    continue
                table = np.loadtxt(f, dtype=np.float64, ndmin=2, max_rows=e.count)
                if table.shape != (e.count, len(e.props)):
                    raise SceneError(f"{path}: ascii body of element '{e.name}' has shape {table.shape}, "
                                     f"header says ({e.count}, {len(e.props)})")
                rows = np.zeros(e.count, dtype)
                for i, (n, _) in enumerate(e.props):
                    rows[n] = table[:, i]
                out[e.name] = rows
            return out
        endian = "<" if header.format == "binary_little_endian" else ">"
        dtypes = [np.dtype([(n, endian + t) for n, t in e.props]) for e in header.elements]
        need = sum(e.count * d.itemsize for e, d in zip(header.elements, dtypes))
        f.seek(0, os.SEEK_END)
        have = f.tell() - header.data_start
        f.seek(header.data_start)
        offset = 0
        for e, dtype in zip(header.elements, dtypes):
            size = e.count * dtype.itemsize
            if have < offset + size:
                left = max(have - offset, 0)
                what = "vertices" if e.name == "vertex" else f"'{e.name}' rows"
                whole = f"; the body needs {need} bytes in all, the file has {have}" if len(header.elements) > 1 else ""
                raise SceneError(
                    f"{path}: truncated: header declares {e.count} {what} ({size} bytes) but only {left} bytes "
                    f"of data follow ({left // max(dtype.itemsize, 1)} complete {what}){whole}"
                )
            out[e.name] = np.fromfile(f, dtype=dtype, count=e.count)
            offset += size
    return out


def read_vertices(path: str | os.PathLike, required: list[str], what: str = "a 3DGS .ply",
                  needs: str | None = None) -> tuple[list[str], dict[str, np.ndarray], int]:
    """The ``vertex`` element of a PLY file as columns: ``(names in header order, {name: array [N]}, N)``.

    The one PLY parser of Vantage (3DGS scenes, compressed PLY scenes through :func:`read_elements`, and CO3D
    point clouds): binary (either endianness) via one structured ``np.fromfile``, ascii via ``np.loadtxt``;
    scalar properties only. ``required`` names the properties the caller needs; every problem raises
    :class:`SceneError` naming the file and the fix.
    """
    path = str(path)
    header = read_header(path)
    if [e.name for e in header.elements] != ["vertex"]:
        raise SceneError(
            f"{path}: expected exactly one element 'vertex', found {[e.name for e in header.elements]}; "
            f"this looks like a mesh or point cloud, not {what}"
        )
    vertex = header.elements[0]
    names = vertex.names
    missing = [n for n in required if n not in names]
    if missing:
        raise SceneError(
            f"{path}: vertex properties {missing} missing; found: {', '.join(names)}. "
            f"{what[0].upper() + what[1:]} needs {needs or ' '.join(required)}"
        )
    arr = read_elements(path, header)["vertex"]
    return names, {n: arr[n] for n in names}, vertex.count
