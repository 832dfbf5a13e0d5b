"""The one writer every 2D generator uses.

Output folder::

    <condition>/<item_id>.png         one folder per condition
    annotations.parquet / .csv        file_name, dataset, condition, item_id, set_id, seed + generator columns
                                      (+ skipped: reason for an unusable input, sha256 of the PNG)
    config.json                       the resolved configuration (dataset, seed, every parameter)
    manifest.json                     package version, counts per condition, skipped inputs, sha256 per image

Work is cut into shards of consecutive items; each shard writes its images and then its rows
(``.shards/NNNNN.parquet``, written under a temporary name and renamed: the shard's completion mark).
A shard is complete when its rows file exists and every image it lists exists with the row's sha256; a
re-run renders the other shards whole (identically: rendering is deterministic), so a deleted, truncated
or modified image is repaired, and the shard, not the image, is the unit of atomicity. The folder is
claimed through ``infra.outputs.output_folder`` (lock, marked ``config.json``, overwrite deletes only what
the records list); the tables and manifest are written atomically, the manifest last. Items are a
deterministic function of (config, seed), and shards are assembled in order, so the output does not
depend on the number of workers.

Across machines (``shard="i/n"``, CLI ``shard=i/n``): job i renders the writer shards k with k mod n = i
into its own folder ``<out>/.jobs/<i>-of-<n>/`` (claimed like any output folder, so jobs share no lock)
and writes ``job.json`` there last; ``shard="merge/n"`` checks every job (its ``job.json``: same
configuration, its shards; every shard complete with every image's sha256), refusing with each job's
problem and command before touching anything, then moves the images and rows files into ``<out>`` and
writes the tables and the manifest. The result is byte-identical to a one-machine run (tested).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from infra.files import package_version, write_table
from infra.images import DEFLATE_MODES, png_bytes
from infra.outputs import mark_owned, output_folder, OutputError
from infra.files import atomic_write_bytes
from infra.cli import parse_part

from .registry import GENERATORS, ConfigError, Item, get_generator, make_config

log = logging.getLogger(__name__)
STANDARD_COLUMNS = ["file_name", "dataset", "condition", "item_id", "set_id", "seed"]


class SkipItem(Exception):
    """Raised by a generator's ``render`` for an input it cannot use (unreadable file, not an image)."""


# The PNG encoder lives with the other file writers (infra/images.py); re-exported for callers here.
__all__ = ["SkipItem", "png_bytes", "write_dataset", "shard_problems", "parse_job"]
JOB_MANIFEST = "job.json"


def _render_items(args) -> tuple[int, list[dict]]:
    """A shard's images, written; returns its rows. Runs in the workers, so it imports no pandas (~1 s per
    process): the parent writes the rows file (:func:`_write_rows`), after the images, as before."""
    name, cfg, seed, index, items, out, compress_level = args
    gen = GENERATORS[name]
    out = Path(out)
    rows = []
    made: set[str] = set()
    for it in items:
        if it.condition not in made:
            (out / it.condition).mkdir(parents=True, exist_ok=True)
            made.add(it.condition)
        base = {"file_name": f"{it.condition}/{it.item_id}.png", "dataset": name, "condition": it.condition,
                "item_id": it.item_id, "set_id": it.set_id, "seed": seed,
                **{k: v for k, v in it.params.items() if not k.startswith("_")}}  # "_" keys: private to render
        try:
            img, extra = gen.render(cfg, it)
        except SkipItem as e:
            log.warning("skipped %s: %s", it.item_id, e)
            rows.append({**base, "file_name": "", "skipped": str(e), "sha256": ""})
            continue
        data = png_bytes(img, compress_level, deflate=gen.png_deflate)
        # written in place: the shard is the unit of atomicity (its rows file, written last by temp name and
        # rename, marks it complete; an interrupted shard is re-rendered whole, identically). One file
        # creation instead of two metadata operations per image matters on disks where that is the limit.
        # os.open on a plain string: 3 system calls instead of 6, and no pathlib parsing (~30 us per image)
        fd = os.open(f"{out}/{base['file_name']}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        rows.append({**base, **extra, "skipped": "", "sha256": hashlib.sha256(data).hexdigest()})
    return index, rows


def _pieces(jobs: list[tuple], workers: int) -> list[tuple]:
    """The shards' jobs for the pool, each tagged (shard, piece, pieces); the last ``workers`` shards are cut
    in ``workers`` pieces, so the workers run out of work within a fraction of a shard of each other (a whole
    shard left to one worker at the end idles the others). A shard's rows file is still written once, when
    all of its pieces are back."""
    out = []
    for i, (name, cfg, seed, index, items, folder, level) in enumerate(jobs):
        n = workers if i >= len(jobs) - workers and len(items) >= 2 * workers else 1
        cut = [len(items) * p // n for p in range(n + 1)]
        out += [(name, cfg, seed, (index, p, n), items[cut[p]:cut[p + 1]], folder, level) for p in range(n)]
    return out


def _write_rows(out: Path, index: int, rows: list[dict]):
    """The shard's rows file: temp name + rename, its completion mark. Plain rows (:func:`_arrow_table`) are
    written typed, by pyarrow alone, and returned as an Arrow table; others as pandas makes them (None)."""
    shard = out / ".shards" / f"{index:05d}.parquet"
    tmp = shard.with_name(f".{shard.name}.tmp{os.getpid()}")
    table = _arrow_table(rows)
    try:
        if table is not None:
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            import pandas as pd

            pd.DataFrame(rows).to_parquet(tmp, index=False)
        os.replace(tmp, shard)
    except BaseException:  # a full disk or Ctrl-C leaves no temporary file behind
        tmp.unlink(missing_ok=True)
        raise
    return table


def _table(rows):
    """Explicit dtypes: standard columns as strings (seed int64); numbers float64/int64; the rest strings."""
    df = rows
    dtypes: dict[str, Any] = {c: "string" for c in STANDARD_COLUMNS}
    dtypes["seed"] = "int64"
    for c in df.columns:
        if c in dtypes:
            continue
        kind = df[c].dtype.kind
        dtypes[c] = {"f": "float64", "i": "int64", "u": "int64", "b": "boolean"}.get(kind, "string")
    return df.astype(dtypes)


_CSV_SPECIAL = (",", '"', "\n", "\r")


class _Absent:
    """A column's value in a row that lacks it (:func:`_arrow_table`)."""


_ABSENT = _Absent()


def _arrow_table(rows: list[dict]):
    """The typed table of ``rows`` as an Arrow table with the pandas metadata, made without pandas: the fast
    twin of ``pa.Table.from_pandas(_table(pd.DataFrame(rows)), preserve_index=False)`` (tested equal, schema
    metadata included, so ``pd.read_parquet`` of either gives the same frame). Importing pandas costs a run
    ~0.3 s of CPU, taken from its rendering workers. Only for plain rows, else None (the pandas path): at
    least one row; in each column every value a str, or every one an integer (not a bool) within int64, or
    every one a number (floats then; NaN becomes null, as pandas writes it); a column some rows lack (columns
    in order of first appearance, as pandas orders them) null there, and integers then floats (pandas' NaN); the standard
    columns in every row, strings, ``seed`` an integer; no string or column name that CSV must quote; pandas 3
    installed (the layout of its string columns and metadata, which this path writes; pandas 2 takes the pandas
    path)."""
    import numpy as np

    if not rows or not _pandas_version().startswith("3."):
        return None
    keys = list(rows[0])
    ragged = any(list(r) != keys for r in rows)
    if ragged:  # some rows lack a column, or list them in another order
        keys = list(dict.fromkeys(k for r in rows for k in r))
    if (len(keys) < 2 or not all(isinstance(k, str) for k in keys)  # one column: pandas quotes an empty value
            or any(c in k for k in keys for c in _CSV_SPECIAL)):
        return None
    kinds, cols = [], []
    for k in keys:
        values = [r.get(k, _ABSENT) for r in rows] if ragged else [r[k] for r in rows]
        types = set(map(type, values))
        absent = _Absent in types
        if absent:
            if k in STANDARD_COLUMNS:
                return None
            types.discard(_Absent)
        if types == {str}:
            if any(c in v for v in values if v is not _ABSENT for c in _CSV_SPECIAL):
                return None
            values = [None if v is _ABSENT else v for v in values] if absent else values
            kind = "string"
        elif all(issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_)) for t in types):
            present = [v for v in values if v is not _ABSENT] if absent else values
            if min(present) < -(2**63) or max(present) >= 2**63:
                return None
            if absent:  # pandas: integers with a missing value are floats, NaN where missing
                values, kind = [float("nan") if v is _ABSENT else float(v) for v in values], "float64"
            else:
                values, kind = [int(v) for v in values], "int64"
        elif all(issubclass(t, (float, np.floating, int, np.integer)) and not issubclass(t, (bool, np.bool_))
                 for t in types):  # floats, or integers and floats: pandas makes them all floats
            values = [float("nan") if v is _ABSENT else float(v) for v in values]
            kind = "float64"
        else:
            return None
        if k in STANDARD_COLUMNS and kind != ("int64" if k == "seed" else "string"):
            return None
        kinds.append(kind)
        cols.append(values)
    import pyarrow as pa

    arrays = [_arrow_array(v, kind) for v, kind in zip(cols, kinds, strict=True)]
    schema = pa.schema([pa.field(k, a.type) for k, a in zip(keys, arrays, strict=True)],
                       metadata={"pandas": _pandas_metadata(keys, kinds)})
    return pa.Table.from_arrays(arrays, schema=schema)


# the column kinds of :func:`_arrow_table` and their Arrow types (as ``str(pyarrow type)`` names them)
_ARROW_TYPES = {"string": "large_string", "int64": "int64", "float64": "double"}


def _pandas_metadata(keys: list, kinds: list) -> str:
    """The pandas metadata (JSON) pandas writes for a typed frame with these columns (kinds "string", "int64",
    "float64"), as :func:`_arrow_table` stores it and :func:`_is_arrow_typed` recognises it."""
    import pyarrow as pa

    return json.dumps({"index_columns": [], "column_indexes": [], "columns": [
        {"name": k, "field_name": k, "pandas_type": "object" if kind == "string" else kind, "numpy_type": kind,
         "metadata": None} for k, kind in zip(keys, kinds, strict=True)],
        "attributes": {}, "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": _pandas_version()})


@functools.lru_cache(maxsize=1)
def _pandas_version() -> str:
    """The installed pandas version, read without importing pandas."""
    return package_version("pandas")


def _arrow_array(values: list, kind: str):
    """An Arrow array of Python ints ("int64"), floats ("float64"; NaN becomes null, as pandas writes it) or
    strs ("string": large_string; None becomes null), built from its buffers: ``pa.array`` would import
    pandas (to recognise pandas objects), which is what this path avoids."""
    import numpy as np
    import pyarrow as pa

    n = len(values)
    if kind == "int64":
        return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.array(values, np.int64))])
    if kind == "float64":
        data = np.array(values, np.float64)
        null = np.isnan(data)
        if not null.any():
            return pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(data)])
        data[null] = 0.0
        valid = np.packbits(~null, bitorder="little")
        return pa.Array.from_buffers(pa.float64(), n, [pa.py_buffer(valid), pa.py_buffer(data)],
                                     null_count=int(null.sum()))
    valid = None
    if any(v is None for v in values):  # null where a row lacks the column
        null = np.array([v is None for v in values])
        valid = pa.py_buffer(np.packbits(~null, bitorder="little"))
        values = ["" if v is None else v for v in values]
    text = "".join(values)
    if text.isascii():  # one byte per character
        data, lengths = text.encode("ascii"), [len(v) for v in values]
    else:
        encoded = [v.encode("utf-8") for v in values]
        data, lengths = b"".join(encoded), [len(e) for e in encoded]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), n, [valid, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=-1 if valid is None else int(null.sum()))


def _arrow_part(table) -> tuple:
    """(table, header line, CSV lines, manifest part) of a typed Arrow table from :func:`_arrow_table`: the
    text and counts the pandas path gives (pandas writes int64 as ``str``, float64 as ``repr``, null empty)."""
    cols, raw = [], {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        values = raw[name] = col.to_pylist()
        if col.type == "int64":
            values = [str(v) for v in values]
        elif col.type == "double":
            values = ["" if v is None or v != v else repr(v) for v in values]
        elif col.null_count:
            values = ["" if v is None else v for v in values]
        cols.append(values)
    lines = os.linesep.join(map(",".join, zip(*cols))) + os.linesep if cols and len(table) else ""
    header = ",".join(table.column_names) + os.linesep
    return table, header, lines, _manifest_part(raw)


def _is_arrow_typed(table) -> bool:
    """Whether a rows file read back by pyarrow is one :func:`_arrow_table` wrote with the libraries installed
    now: its columns' types are its kinds, the standard columns typed as it types them, no name CSV must quote,
    and the pandas metadata the one it writes for them. Others are read through pandas."""
    by_type = {t: k for k, t in _ARROW_TYPES.items()}
    names = table.column_names
    kinds = [by_type.get(str(f.type)) for f in table.schema]
    return (len(table) > 0 and len(names) >= 2 and None not in kinds
            and all(kind == ("int64" if c == "seed" else "string")
                    for c, kind in zip(names, kinds, strict=True) if c in STANDARD_COLUMNS)
            and not any(ch in c for c in names for ch in _CSV_SPECIAL)
            and (table.schema.metadata or {}).get(b"pandas") == _pandas_metadata(names, kinds).encode())


class _TableParts:
    """The final table's pieces, made shard by shard as the rows files are written — in the parent, while
    the workers render the next shards, so little is left for after the last one: each rows file read back
    (what :func:`_finish` would read), typed, and its CSV lines. Pandas formats a CSV value by value
    (repr of a float, str of an integer or string, the same quoting), so the lines of the shards joined
    equal the whole table's ``to_csv`` wherever a shard's columns and dtypes are the whole table's; where
    they are not (a column missing from a shard, integers in one and floats in another), :func:`_finish`
    formats the whole table (tested both ways). Likewise the shard's part of the manifest (images, counts
    per condition, skipped inputs, sha256 per image), from its rows as read, when every value it uses is a
    string (always, for the writer's own columns; else :func:`_finish` takes them from the whole table)."""

    def __init__(self):
        self.parts: dict[int, tuple] = {}

    def add(self, out: Path, k: int, table=None) -> None:
        """Shard ``k``'s part: from its Arrow ``table`` as written (:func:`_write_rows`: no pandas at all), else
        from its rows file (a resumed run or a merge): an Arrow part when :func:`_arrow_table` wrote it, else
        through pandas."""
        f = out / ".shards" / f"{k:05d}.parquet"
        if table is None:
            import pyarrow.parquet as pq

            try:
                read = pq.read_table(f)
            except (OSError, ValueError):
                read = None  # read by pandas below, which raises the error a reader expects
            table = read if read is not None and _is_arrow_typed(read) else None
        if table is not None:
            self.parts[k] = ("arrow", *_arrow_part(table))
            return
        import pandas as pd

        df = pd.read_parquet(f)
        typed = _table(df)
        self.parts[k] = ("pandas", df, typed.dtypes, _csv_lines(typed), _manifest_part(_columns(df)))

    def get(self, out: Path, k: int) -> tuple:
        if k not in self.parts:  # rendered by an earlier run or another job
            self.add(out, k)
        return self.parts.pop(k)


def _csv_lines(typed) -> str:
    """``typed.to_csv(index=False, header=False)`` (the reference twin, tested equal, and the fallback) for a
    table typed by :func:`_table`, formatted column by column in plain Python where that is sure to give
    pandas' text: int64 as ``str``, float64 as ``repr`` (NaN empty), strings as they are — when every string
    is a ``str`` needing no quotes (no comma, quote, CR or LF) and there are two columns or more. Otherwise,
    or for any other dtype, pandas formats it. ≈ 3 instead of ≈ 9 ms per 1,000-row shard of polygons."""
    import pandas as pd

    if len(typed.columns) < 2 or not len(typed):
        return typed.to_csv(index=False, header=False)
    cols = []
    for c in typed.columns:
        dtype, values = typed[c].dtype, typed[c].tolist()
        if dtype == "float64":
            cols.append(["" if x != x else repr(x) for x in values])
        elif dtype == "int64":
            cols.append([str(x) for x in values])
        elif isinstance(dtype, pd.StringDtype) and all(type(x) is str for x in values):
            text = "".join(values)
            if "," in text or '"' in text or "\n" in text or "\r" in text:
                return typed.to_csv(index=False, header=False)
            cols.append(values)
        else:
            return typed.to_csv(index=False, header=False)
    return os.linesep.join(map(",".join, zip(*cols))) + os.linesep  # pandas' default line end


_MANIFEST_COLUMNS = ("file_name", "condition", "item_id", "skipped", "sha256")


def _columns(df) -> dict:
    """The columns :func:`_manifest_part` reads, as lists, from a pandas frame."""
    return {c: df[c].tolist() for c in _MANIFEST_COLUMNS if c in df.columns}


def _manifest_part(columns: dict) -> tuple | None:
    """(images, Counter of conditions, {item_id: skipped}, {file_name: sha256}) of some rows (``columns``:
    name -> list of values), as :func:`_finish` computes them from the whole table; None when a value is not a
    string."""
    from collections import Counter

    try:
        fn, cond, iid, skip, sha = (columns[c] for c in _MANIFEST_COLUMNS)
    except KeyError:
        return None
    if not all(type(x) is str for col in (fn, cond, iid, skip, sha) for x in col):
        return None
    made = [i for i, f in enumerate(fn) if f != ""]
    return (len(made), Counter(cond[i] for i in made), {iid[i]: skip[i] for i, f in enumerate(fn) if f == ""},
            {fn[i]: sha[i] for i in made})


def _pool_context(module: str, warm=None):
    """Worker processes, started as cheaply as is safe:

    * ``fork`` of this process (Linux) when it runs no other thread and has loaded no library that keeps
      native threads (pyarrow: the rows files and tables are written here, after the workers have
      started) — ``warm()`` is called first (the generator's first image: its compiled kernels are loaded
      once, here, and every worker inherits them), so a worker costs no import at all;
    * otherwise forked from a fork server that imported the writer and the generator's module once (NumPy,
      the generator's compiled kernels), so N workers cost one import instead of N;
    * plain ``spawn`` where there is neither (Windows)."""
    import multiprocessing as mp
    import sys
    import threading

    methods = mp.get_all_start_methods()
    # Linux only: on macOS system libraries are not fork-safe (Python's default there is spawn)
    if (sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1
            and "pyarrow" not in sys.modules):
        if warm is not None:
            warm()
        return mp.get_context("fork")
    if "forkserver" not in methods:
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    # numba too: generators import it lazily (inside their kernels' factories), ~0.6 s per worker otherwise
    ctx.set_forkserver_preload(["__main__", __name__, module, "numba"])
    return ctx


def _warm(gen, cfg, item) -> None:
    """Render one item and discard it: loads what rendering needs (compiled kernels) before workers fork."""
    with contextlib.suppress(SkipItem):
        gen.render(cfg, item)


class _Progress:
    """A tqdm bar without tqdm's monitor thread (a thread would rule out forking the workers), or nothing."""

    def __init__(self, total: int, desc: str, enabled: bool):
        self.bar = None
        if enabled:
            from tqdm import tqdm

            class Bar(tqdm):
                monitor_interval = 0

            self.bar = Bar(total=total, desc=desc, unit="img")

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def parse_job(spec) -> tuple[int | None, int]:
    """``"i/n"`` → (i, n) with 0 ≤ i < n; ``"merge/n"`` → (None, n). Raises ConfigError otherwise."""
    return parse_part(spec, ConfigError, "jobs are done")


def job_dir(out: Path, i: int, n: int) -> Path:
    return Path(out) / ".jobs" / f"{i}-of-{n}"


def write_dataset(name: str, out: str | os.PathLike, params: dict | None = None, seed: int = 0, workers: int = 1,
                  overwrite: bool = False, shard_size: int = 500, compress_level: int = 6, progress: bool = True,
                  shard: str | None = None) -> Path:
    """Generate dataset ``name`` into ``out``; returns the folder. ``shard``: None (everything here),
    ``"i/n"`` (job i of n: only its part, see module docstring) or ``"merge/n"``."""
    for key, v, lo in (("seed", seed, 0), ("workers", workers, 1), ("shard_size", shard_size, 1)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise ConfigError(f"{key}={v!r}: must be a whole number >= {lo}")
    for key, v in (("overwrite", overwrite), ("progress", progress)):
        if not isinstance(v, bool):
            raise ConfigError(f"{key}={v!r}: must be true or false")
    gen = get_generator(name)
    cfg = make_config(gen, dict(params or {}))
    out = Path(out)
    resolved = {"dataset": name, "seed": int(seed), "config": json.loads(json.dumps(dataclasses.asdict(cfg), default=list)),
                **({"preset": params["preset"]} if params and "preset" in params else {})}
    items: list[Item] = list(gen.items(cfg, int(seed)))
    if not items:  # checked before the folder is stamped: an empty dataset is a configuration mistake
        empty = [k for k, v in dataclasses.asdict(cfg).items() if isinstance(v, (list, tuple)) and not v
                 and k in (params or {})]
        why = f"{', '.join(f'{k}=[]' for k in empty)}: give at least one value" if empty else \
            "check the parameters (python -m tasks.generate --list)"
        raise ConfigError(f"dataset {name!r}: these parameters make no images ({why})")
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise RuntimeError(f"generator {name!r} produced duplicate item ids")
    shards = [items[i:i + shard_size] for i in range(0, len(items), shard_size)]
    job, n_jobs = parse_job(shard) if shard is not None else (0, 1)
    mine = [k for k in range(len(shards)) if k % n_jobs == job] if job is not None else []
    target = out if shard is None else job_dir(out, job, n_jobs) if job is not None else out
    kind = "tasks.generate" if shard is None or job is None else "tasks.generate.job"
    identity = resolved if kind == "tasks.generate" else {"job": f"{job}/{n_jobs}", "shard_size": shard_size, **resolved}
    if job is None:
        _check_jobs(out, n_jobs, len(shards), identity_of=lambda i: {"job": f"{i}/{n_jobs}", "shard_size": shard_size,
                                                                     **resolved}, name=name)
    with contextlib.ExitStack() as claimed:
        try:
            claimed.enter_context(output_folder(target, kind, identity, overwrite=overwrite, owned=_owned,
                                                temps=lambda o: [*o.glob(".*.tmp*"), *(o / ".shards").glob(".*.tmp*")]))
        except OutputError as e:
            raise ConfigError(str(e)) from None
        out_final = out
        out = target
        (out / ".shards").mkdir(exist_ok=True)
        mark_owned(out / ".shards")
        if job is None:
            _move_jobs(out_final, n_jobs)
        todo = []
        for k in mine if shard is not None else range(len(shards)):
            problems = shard_problems(out, k)
            if problems and problems != ["not rendered"]:
                log.warning("re-rendering shard %d: %s", k, "; ".join(problems[:5]))
            if problems:
                todo.append(k)
        jobs = [(name, cfg, int(seed), k, shards[k], str(out), compress_level) for k in todo]
        bar = _Progress(sum(len(shards[k]) for k in todo), name, progress)
        parts = _TableParts() if shard is None or job is None else None
        if workers <= 1 or len(jobs) <= 1:
            for j in jobs:
                index, rows = _render_items(j)
                table = _write_rows(out, index, rows)
                if parts is not None:
                    parts.add(out, index, table)
                bar.update(len(rows))
        else:
            from infra.pool import run_jobs

            ctx = _pool_context(gen.module, warm=lambda: _warm(gen, cfg, jobs[0][4][0]))
            done: dict[int, dict[int, list]] = {}
            for (index, piece, n_pieces), rows in run_jobs(_render_items, _pieces(jobs, workers), workers,
                                                           mp_context=ctx):
                bar.update(len(rows))
                done.setdefault(index, {})[piece] = rows
                if len(done[index]) < n_pieces:
                    continue
                got = done.pop(index)
                rows = [r for p in range(n_pieces) for r in got[p]]  # the shard's rows, in item order
                table = _write_rows(out, index, rows)
                if parts is not None:
                    parts.add(out, index, table)
        bar.close()
        if shard is None or job is None:
            _finish(out, name, seed, len(shards), parts, png_deflate=gen.png_deflate)
        else:
            atomic_write_bytes(out / JOB_MANIFEST, json.dumps({"identity": identity, "shards": mine}).encode())
    return out


def _check_jobs(out: Path, n: int, n_shards: int, identity_of, name: str) -> None:
    """Before a merge: every job's ``job.json`` (same configuration) and every one of its shards complete
    (or already merged into ``out``). Raises ConfigError listing each bad job and the command to redo it."""
    bad = []
    for i in range(n):
        d = job_dir(out, i, n)
        mine = [k for k in range(n_shards) if k % n == i]
        if not (d / JOB_MANIFEST).is_file():
            if not d.exists() and all(not shard_problems(out, k) for k in mine):
                continue  # merged earlier
            bad.append(f"job {i}/{n}: {d / JOB_MANIFEST} missing (job not run or not finished)")
            continue
        try:
            m = json.loads((d / JOB_MANIFEST).read_text())
        except (OSError, ValueError) as e:
            bad.append(f"job {i}/{n}: {JOB_MANIFEST} unreadable ({e})")
            continue
        if m.get("identity") != json.loads(json.dumps(identity_of(i), default=list)) or m.get("shards") != mine:
            bad.append(f"job {i}/{n}: made with a different configuration, shard_size or job count")
            continue
        probs = [p for k in mine for p in shard_problems(d, k) if not (p == "not rendered" and not shard_problems(out, k))]
        if probs:
            bad.append(f"job {i}/{n}: {'; '.join(probs[:3])}")
    if bad:
        raise ConfigError(f"cannot merge into {out}:\n  " + "\n  ".join(
            f"{b} (redo it: python -m tasks.generate dataset={name} out={out} <same parameters> shard=<job>/{n})"
            for b in bad))


def _move_jobs(out: Path, n: int) -> None:
    """Move every checked job's images and rows files into ``out``; remove the emptied job folders."""
    import pandas as pd

    for i in range(n):
        d = job_dir(out, i, n)
        if not (d / JOB_MANIFEST).is_file():
            continue
        for k in json.loads((d / JOB_MANIFEST).read_text())["shards"]:
            rows = d / ".shards" / f"{k:05d}.parquet"
            if not rows.is_file():
                continue  # moved by an earlier, interrupted merge
            for f in pd.read_parquet(rows, columns=["file_name"])["file_name"]:
                if f and (d / f).is_file():
                    (out / f).parent.mkdir(parents=True, exist_ok=True)
                    os.replace(d / f, out / f)
            os.replace(rows, out / ".shards" / rows.name)  # last: the shard's completion mark
        from infra.outputs import remove_owned

        (d / JOB_MANIFEST).unlink()
        (d / "config.json").unlink(missing_ok=True)
        (d / ".lock").unlink(missing_ok=True)
        remove_owned(d, [], [d / ".shards"])
        for sub in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                sub.rmdir()
        with contextlib.suppress(OSError):
            d.rmdir()
    with contextlib.suppress(OSError):
        (out / ".jobs").rmdir()


def shard_problems(out: Path, k: int) -> list[str]:
    """Why shard ``k`` of the dataset in ``out`` is not complete ([] when it is): no rows file
    (``["not rendered"]``), an unreadable one, or a listed image missing or with a sha256 other than its
    row's (a deleted or damaged PNG)."""
    f = out / ".shards" / f"{k:05d}.parquet"
    if not f.is_file():
        return ["not rendered"]  # decided without pandas (~0.5-1 s to import): a fresh run need not wait for it
    import pandas as pd

    from infra.files import sha256_file

    try:
        rows = pd.read_parquet(f, columns=["file_name", "sha256"])
    except (OSError, ValueError, KeyError) as e:
        return [f"{f.name}: unreadable ({type(e).__name__})"]
    problems = []
    for name, digest in zip(rows.file_name, rows.sha256, strict=True):
        if not name:
            continue
        p = out / name
        if not p.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(p) != digest:
            problems.append(f"{name}: content differs from its row's sha256")
    return problems


def _owned(out: Path):
    """What an earlier run wrote into ``out`` (deleted by overwrite=true; nothing else is)."""
    import pandas as pd

    files = [out / n for n in ("manifest.json", "annotations.csv", "annotations.parquet")]
    try:
        files += [out / f for f in json.loads((out / "manifest.json").read_text()).get("sha256", {})]
    except (OSError, ValueError):
        pass
    for shard in sorted((out / ".shards").glob("*.parquet")):
        try:
            files += [out / f for f in pd.read_parquet(shard, columns=["file_name"])["file_name"] if f]
        except (OSError, ValueError, KeyError):
            pass
    return files, [out / ".shards"]


def _finish(out: Path, name: str, seed, n_shards: int, parts: _TableParts | None = None,
            png_deflate: str = "default") -> None:
    """The tables and the manifest, from every shard's rows file (``parts``: those already read and
    formatted while the workers ran; the others are read here); ``png_deflate``: the generator's PNG mode."""
    from collections import Counter

    parts = parts if parts is not None else _TableParts()
    pieces = [parts.get(out, k) for k in range(n_shards)]
    arrow = all(p[0] == "arrow" for p in pieces)
    if arrow and not all(p[1].schema.equals(pieces[0][1].schema, check_metadata=True) for p in pieces):
        # plain shards with other columns or types: the whole table typed again from their rows (a null is a
        # value the row lacked), as pandas types the shards joined
        rows = [{k: _ABSENT if v is None else v for k, v in r.items()} for p in pieces for r in p[1].to_pylist()]
        whole = _arrow_table(rows)
        arrow = whole is not None
        if arrow:
            pieces = [("arrow", *_arrow_part(whole))]
    if arrow:
        # every shard plain, with one schema: the table and its CSV joined from the shards' without pandas
        import pyarrow as pa

        table = pa.concat_tables([p[1] for p in pieces])
        write_table(table, out / "annotations", pieces[0][2] + "".join(p[3] for p in pieces))
        pieces = [p[4] for p in pieces]
        df = None  # made from the table only if a shard's manifest part could not be
    else:
        import pandas as pd

        def as_pandas(p):  # an Arrow part as the pandas path's (read_parquet of its file gives that frame)
            frame = p[1].to_pandas()
            return "pandas", frame, frame.dtypes, p[3], p[4]

        pieces = [as_pandas(p) if p[0] == "arrow" else p for p in pieces]
        df = _table(pd.concat([p[1] for p in pieces], ignore_index=True))
        csv = None
        if all(p[2].equals(df.dtypes) for p in pieces):  # same columns and dtypes: the shards' lines are the table's
            csv = df.head(0).to_csv(index=False) + "".join(p[3] for p in pieces)
        write_table(df, out / "annotations", csv)
        pieces = [p[4] for p in pieces]
    if all(p is not None for p in pieces):  # the shards' parts (their rows in order: later rows win, as here)
        counts, skipped, sha256 = Counter(), {}, {}
        for _, c, sk, sh in pieces:
            counts.update(c)
            skipped.update(sk)
            sha256.update(sh)
        images = sum(p[0] for p in pieces)
        counts = {k: counts[k] for k in sorted(counts)}
    else:
        df = df if df is not None else _table(table.to_pandas())
        made = df[df.file_name != ""]
        images = len(made)
        counts = {str(k): int(v) for k, v in made.condition.value_counts().sort_index().items()}
        skipped = {str(r.item_id): str(r.skipped) for r in df[df.file_name == ""].itertuples()}
        sha256 = dict(zip(made.file_name, made.sha256, strict=True))
    manifest = {"dataset": name, "vantage_version": package_version(),
                "png_deflate": DEFLATE_MODES[png_deflate],
                "seed": int(seed),
                "images": int(images), "counts": counts, "skipped": skipped, "sha256": sha256}
    atomic_write_bytes(out / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
