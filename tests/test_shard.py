"""Builds across machines (issue 19): a build cut into n jobs (``shard=i/n``) and merged (``shard=merge/n``)
is byte-identical to the one-machine build; a merge refuses missing, foreign or damaged shards before it
touches anything. The 3D-PC builds run behind ``-m slow`` (minutes on 2 cores), with Hydra's joblib launcher
and submitit's local executor."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.stimuli import write_dataset
from tasks.stimuli.registry import ConfigError

ROOT = Path(__file__).resolve().parents[1]
GEN = dict(name="degraded_polygons", params={"per_class": 3, "levels": [0.2, 0.5], "size": 48,
                                             "classes": ["triangle", "square", "hexagon"]}, shard_size=4,
           progress=False)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path → bytes), the lock file aside."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "whole"
    write_dataset(out=out, **GEN)
    return tree(out)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_sharded_generate_is_byte_identical(whole, tmp_path, n):
    out = tmp_path / "sharded"
    for i in reversed(range(n)):  # any order
        write_dataset(out=out, shard=f"{i}/{n}", **GEN)
        assert not (out / "manifest.json").exists()  # a job writes no table or manifest
    write_dataset(out=out, shard=f"merge/{n}", **GEN)
    got = tree(out)
    assert len(whole) > 30 and got.keys() == whole.keys()
    assert all(got[k] == whole[k] for k in whole)
    write_dataset(out=out, shard=f"merge/{n}", **GEN)  # merging again is harmless
    assert tree(out) == whole


def test_generate_merge_refuses_missing_or_damaged_jobs(tmp_path):
    out = tmp_path / "sharded"
    write_dataset(out=out, shard="0/3", **GEN)
    write_dataset(out=out, shard="2/3", **GEN)
    with pytest.raises(ConfigError, match=r"job 1/3: .*job.json missing"):
        write_dataset(out=out, shard="merge/3", **GEN)
    assert not (out / "manifest.json").exists() and (out / ".jobs" / "0-of-3" / "job.json").exists()
    write_dataset(out=out, shard="1/3", **GEN)
    victim = next((out / ".jobs" / "2-of-3").rglob("*.png"))
    victim.write_bytes(victim.read_bytes()[:-7])
    with pytest.raises(ConfigError, match=r"job 2/3: .*sha256"):
        write_dataset(out=out, shard="merge/3", **GEN)
    other = dict(GEN, params={**GEN["params"], "size": 64})
    with pytest.raises(ConfigError, match="job 0/3: made with a different configuration"):
        write_dataset(out=out, shard="merge/3", **other)
    for bad in ("3/3", "1/0", "x/2", "merge", "-1/2"):
        with pytest.raises(ConfigError, match="shard="):
            write_dataset(out=tmp_path / "bad", shard=bad, **GEN)


def test_generate_cli_takes_shard(tmp_path, python_m):
    """The refusal forked from a warm server (tests/conftest.py: python_m), the shards in new interpreters."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "tasks.generate", "dataset=degraded_polygons", f"out={tmp_path / 'o'}",
            "per_class=1", "size=32", "levels=[0.2]", "progress=false"]
    r = python_m(*base[2:], "shard=5/2", env=env, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("error: shard='5/2'") and "Traceback" not in r.stderr
    for s in ("0/2", "1/2", "merge/2"):
        subprocess.run(base + [f"shard={s}"], check=True, capture_output=True, env=env, cwd=ROOT)
    assert (tmp_path / "o" / "manifest.json").is_file() and not (tmp_path / "o" / ".jobs").exists()


# ---------------------------------------------------------------------------------------------- 3D-PC
TINY = ["scenes=[hydrant_01,hydrant_03]", "settings=2", "depth_settings=2", "frames=4", "size=48", "human_n=0", "workers=1",
        "progress=false", "audit.enforce=false",
        "allow_unvalidated=true"]  # settings=2: one not-visible setting per scene, no facing-away share


def _cfg(out: Path, extra=()):
    from tasks.threedpc.config import compose_config

    return compose_config([*TINY, f"out={out}", *extra])


def test_threedpc_shard_spec_and_merge_refusal(tmp_path):
    from tasks.threedpc.config import ConfigError as BuildError
    from tasks.threedpc.shard import merge_shards, parse_shard, shard_scenes

    assert parse_shard("1/4") == (1, 4) and parse_shard("merge/4") == (None, 4)
    for bad in ("4/4", "a/2", "1/0", "merge"):
        with pytest.raises(BuildError, match="shard="):
            parse_shard(bad)
    cfg = _cfg(tmp_path / "o")
    assert shard_scenes(cfg, 0, 2) + shard_scenes(cfg, 1, 2) == sorted(cfg.scenes, key=list(cfg.scenes).index)
    with pytest.raises(BuildError, match=r"(?s)cannot merge 2 of 2 shard\(s\).*shard 0/2: .*shard.json: missing"):
        merge_shards(cfg, 2, progress=False)
    assert not (tmp_path / "o" / "manifest.json").exists()


def _threedpc(args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "tasks.threedpc", *args], capture_output=True, text=True, env=env,
                       cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.fixture(scope="module")
def threedpc_whole(tmp_path_factory):
    out = tmp_path_factory.mktemp("tpc") / "whole"
    _threedpc([*TINY, f"out={out}"])
    return tree(out)


@pytest.mark.slow
def test_threedpc_sharded_build_is_byte_identical(threedpc_whole, tmp_path):
    out = tmp_path / "sharded"
    for i in (1, 0):
        _threedpc([*TINY, f"out={out}", f"shard={i}/2"])
    victim = next((out / ".shards" / "1-of-2").rglob("*.png"))
    good = victim.read_bytes()
    victim.write_bytes(b"damaged")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "tasks.threedpc", *TINY, f"out={out}", "shard=merge/2"],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 2 and "shard 1/2" in r.stderr and "content differs" in r.stderr
    victim.write_bytes(good)
    _threedpc([*TINY, f"out={out}", "shard=merge/2"])
    assert tree(out) == threedpc_whole


@pytest.mark.slow
def test_threedpc_shards_with_hydra_joblib_launcher(threedpc_whole, tmp_path):
    out = tmp_path / "joblib"
    _threedpc(["--multirun", *TINY, f"out={out}", "+shard=0/2,1/2", "hydra/launcher=joblib",
               "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    _threedpc([*TINY, f"out={out}", "shard=merge/2"])
    assert tree(out) == threedpc_whole


FOUR = ["scenes=[hydrant_01,hydrant_03,chair_02,bench_01]"]  # one scene per shard at n=4


@pytest.mark.slow
def test_threedpc_four_shards_with_submitit_local_executor(tmp_path):
    """Issue 19's check: n=4 shards, each a submitit job on the local executor, merged, byte-identical to the
    one-machine build of the same config."""
    import submitit

    from tasks.threedpc.shard import run  # a library function: the job processes cannot import this test file

    _threedpc([*TINY, *FOUR, f"out={tmp_path / 'whole'}"])
    out = tmp_path / "submitit"
    cfg = _cfg(out, FOUR)
    ex = submitit.LocalExecutor(folder=str(tmp_path / "logs"))
    ex.update_parameters(timeout_min=30)
    jobs = [ex.submit(run, cfg, f"{i}/4", False) for i in range(4)]
    assert all("built shard" in j.result() for j in jobs)
    assert len(list((out / ".shards").iterdir())) == 4
    assert "merged 4 shard(s)" in run(cfg, "merge/4", progress=False)
    assert tree(out) == tree(tmp_path / "whole")


def test_two_workers_with_cut_shards_are_byte_identical(whole, tmp_path):
    """With workers the last shards are rendered in pieces and each shard's CSV lines are made as its rows
    file is written (the final table joins them): every file is the one-process run's, byte for byte."""
    from tasks.stimuli.writer import _pieces

    jobs = [("d", None, 0, k, list(range(4)), "o", 6) for k in range(5)]
    assert [j[3] for j in _pieces(jobs, 2)] == [(0, 0, 1), (1, 0, 1), (2, 0, 1), (3, 0, 2), (3, 1, 2), (4, 0, 2),
                                                (4, 1, 2)]
    assert [j[4] for j in _pieces(jobs, 2)][-2:] == [[0, 1], [2, 3]]
    out = tmp_path / "two"
    write_dataset(out=out, workers=2, **GEN)
    assert tree(out) == whole


def test_table_joined_from_shards_equals_pandas_whole_table(tmp_path, monkeypatch):
    """The final CSV joined from the shards' lines equals pandas' CSV of the whole table when every shard
    has the table's columns and dtypes, and is formatted whole when one does not (a column missing from a
    shard, integers in one shard and floats in another); the manifest from the shards' parts equals the one
    taken from the whole table."""
    import pandas as pd

    import tasks.stimuli.writer as W
    from tasks.stimuli.writer import _TableParts, _finish, _table, _write_rows

    def row(i, **extra):
        made = i % 3 != 1  # some rows skipped (no image), the others with a file and its digest
        return {"file_name": f"c{i % 2}/i{i}.png" if made else "", "dataset": "d", "condition": ["c,1", "b"][i % 2],
                "item_id": f"i{i}", "set_id": 's"q', "seed": 0, **extra, "skipped": "" if made else f"bad {i}",
                "sha256": f"{i:064x}" if made else ""}

    cases = {"same": [[row(0, x=1, f=0.1), row(1, x=2, f=1e-7)], [row(2, x=3, f=2.5e16), row(3, x=-4, f=float("nan"))]],
             "missing": [[row(0, x=1)], [row(1, x=2, y="a\nb")]],
             "int_float": [[row(0, x=1)], [row(1, x=2.5)]]}
    for case, shards in cases.items():
        out = tmp_path / case
        (out / ".shards").mkdir(parents=True)
        for k, rows in enumerate(shards):
            _write_rows(out, k, rows)
        parts = _TableParts()
        parts.add(out, 0)  # one shard formatted early, the other in _finish
        _finish(out, "d", 0, len(shards), parts)
        df = _table(pd.concat([pd.read_parquet(out / ".shards" / f"{k:05d}.parquet") for k in range(len(shards))],
                              ignore_index=True))
        want = tmp_path / f"{case}.csv"
        df.to_csv(want, index=False)
        assert (out / "annotations.csv").read_bytes() == want.read_bytes(), case
        assert not parts.parts
        manifest = (out / "manifest.json").read_bytes()
        with monkeypatch.context() as m:
            m.setattr(W, "_manifest_part", lambda df: None)  # the whole table's way
            _finish(out, "d", 0, len(shards))
        assert (out / "manifest.json").read_bytes() == manifest, case
        assert json.loads(manifest)["skipped"] == {"i1": "bad 1"} and json.loads(manifest)["images"] == len(
            [r for rows in shards for r in rows if r["file_name"]])


def test_shard_csv_lines_equal_pandas(monkeypatch):
    """The shards' CSV lines formatted in plain Python equal pandas' (the reference) on a typed table with
    awkward numbers (NaN, inf, -0.0, 1e-7, 2.5e16, 1e16, 0.1 + 0.2, big integers), and every case that
    needs quoting, missing values, other dtypes or a single column goes to pandas and still gives its text."""
    import pandas as pd

    import tasks.stimuli.writer as W

    floats = [float("nan"), float("inf"), -float("inf"), -0.0, 1e-7, 2.5e16, 1e16, 0.1 + 0.2, 123.456, 5e-324, 1.0]
    n = len(floats)
    base = {"file_name": [f"c/i{i}.png" for i in range(n)], "dataset": ["d"] * n, "condition": ["c"] * n,
            "item_id": [f"i{i}" for i in range(n)], "set_id": [" s "] * n, "seed": [2**62] * n,
            "f": floats, "k": [-(2**40), 0, 7] + [1] * (n - 3), "s": ["", "a b", "é"] + ["x"] * (n - 3)}
    fallbacks = {"comma": ("s", ["a,b"] + ["x"] * (n - 1)), "quote": ("s", ['a"b'] + ["x"] * (n - 1)),
                 "newline": ("s", ["a\nb"] + ["x"] * (n - 1)), "cr": ("s", ["a\rb"] + ["x"] * (n - 1)),
                 "missing": ("s", [None] + ["x"] * (n - 1)), "bool": ("b", [True, False] * (n // 2) + [True])}
    pandas_calls = []
    real = pd.DataFrame.to_csv
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda self, *a, **k: pandas_calls.append(1) or real(self, *a, **k))
    typed = W._table(pd.DataFrame(base))
    assert W._csv_lines(typed) == real(typed, index=False, header=False) and not pandas_calls
    for case, (col, values) in fallbacks.items():
        typed = W._table(pd.DataFrame({**base, col: values}))
        pandas_calls.clear()
        assert W._csv_lines(typed) == real(typed, index=False, header=False), case
        assert pandas_calls, case
    for typed in (pd.DataFrame({"file_name": ["", "b"]}).astype("string"), W._table(pd.DataFrame(base).head(0))):
        assert W._csv_lines(typed) == real(typed, index=False, header=False)   # one column; no rows


def test_package_version_equals_importlib_metadata(tmp_path, monkeypatch):
    """The version recorded in every output, read from the dist-info without importing importlib.metadata
    (a run's start-up), equals importlib.metadata's, installed or not."""
    from infra.files import package_version, package_version_reference

    assert package_version() == package_version_reference() != ""
    for name, version in (("vantage-9.8.7.dist-info", "9.8.7"), ("Vantage-1.2.3.dist-info", "1.2.3")):
        d = tmp_path / name
        d.mkdir(parents=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vantage\nVersion: {version}\n\nVersion: no\n")
        monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path), *sys.path])
        assert package_version() == package_version_reference() == version, name
        monkeypatch.undo()
        import shutil

        shutil.rmtree(d)


def _row(i, **extra):
    return {"file_name": f"c/i{i}.png", "dataset": "d", "condition": "c", "item_id": f"i{i}", "set_id": "é s",
            "seed": 3, **extra, "skipped": "", "sha256": f"{i:064x}"}


def test_arrow_rows_table_equals_pandas_path(tmp_path):
    """Plain rows are typed without pandas (:func:`_arrow_table`, :func:`_arrow_part`) into exactly what the pandas
    path makes of them: the same Arrow table with the same pandas metadata, the same parquet bytes, the same CSV
    text and manifest part; a rows file it wrote is recognised when read back, one pandas wrote is not; anything
    not plain goes to pandas (None)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    import tasks.stimuli.writer as W

    floats = [float("nan"), float("inf"), -0.0, 1e-7, 2.5e16, 0.1 + 0.2, 5e-324, 1.0]
    plain = {"mixed": [_row(i, k=(-1) ** i * 2**40 + i, f=floats[i % len(floats)], s=["", "a b", "é", "ü"][i % 4],
                            npi=np.int64(i), npf=np.float64(i / 3)) for i in range(20)],
             "one": [_row(0, x=1)], "nan_only": [_row(i, f=float("nan")) for i in range(3)],
             "ragged": [_row(0, x=1, s="a"), {**_row(1, f=0.5), "z": "é"}, _row(2, s="b", x=2**40), _row(3)],
             "reordered": [_row(0, x=1, y="a"), _row(1, y="b", x=2)],
             "int_float": [_row(0, x=1), _row(1, x=2.5), _row(2, x=np.int64(3))]}
    for case, rows in plain.items():
        typed = W._table(pd.DataFrame(rows))
        want = pa.Table.from_pandas(typed, preserve_index=False)
        got = W._arrow_table(rows)
        assert got is not None and got.equals(want) and got.schema.equals(want.schema, check_metadata=True), case
        pq.write_table(got, tmp_path / "a.parquet")
        typed.to_parquet(tmp_path / "b.parquet", index=False)
        assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes(), case
        _, header, lines, manifest = W._arrow_part(got)
        assert header + lines == typed.to_csv(index=False), case
        assert manifest == W._manifest_part(W._columns(typed)) and manifest[0] == len(rows), case
        assert W._is_arrow_typed(pq.read_table(tmp_path / "a.parquet")), case
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), typed)
    fallbacks = {"bool": [_row(0, b=True)], "none": [_row(0, s=None)],
                 "no_item_id": [_row(0), {k: v for k, v in _row(1).items() if k != "item_id"}],
                 "one_column": [{"file_name": "a"}],
                 "comma": [_row(0, s="a,b")], "quote": [_row(0, s='a"b')], "newline": [_row(0, s="a\nb")],
                 "cr": [_row(0, s="a\rb")], "name": [_row(0, **{"a,b": 1})], "seed_str": [{**_row(0), "seed": "0"}],
                 "set_id_int": [{**_row(0), "set_id": 1}], "big": [_row(0, x=2**63)], "list": [_row(0, x=[1])],
                 "empty": []}
    for case, rows in fallbacks.items():
        assert W._arrow_table(rows) is None, case
    pd.DataFrame(plain["one"]).to_parquet(tmp_path / "c.parquet", index=False)  # untyped, as pandas writes rows
    assert not W._is_arrow_typed(pq.read_table(tmp_path / "c.parquet"))


def test_plain_dataset_without_pandas_equals_pandas_path(tmp_path, monkeypatch):
    """A dataset whose rows are plain is written without importing pandas (a fresh process; the import is ~0.3 s
    of CPU taken from the workers) and is, file for file, what the pandas path writes (tables and manifest byte
    for byte, rows files equal as read); resuming after a lost rows file and image restores it exactly."""
    import pandas as pd

    import tasks.stimuli.writer as W

    fast = tmp_path / "fast"
    code = ("import sys; from tasks.stimuli import write_dataset; "
            f"write_dataset(out={str(fast)!r}, **{GEN!r}); print('pandas' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "False"
    monkeypatch.setattr(W, "_arrow_table", lambda rows: None)  # the reference: everything through pandas
    ref = tmp_path / "ref"
    write_dataset(out=ref, **GEN)
    a, b = tree(fast), tree(ref)
    assert a.keys() == b.keys()
    rows = [k for k in a if k.startswith(".shards/") and k.endswith(".parquet")]
    assert len(rows) > 3 and all(a[k] == b[k] for k in a if k not in rows and k != "config.json")
    for k in rows:
        pd.testing.assert_frame_equal(W._table(pd.read_parquet(fast / k)), W._table(pd.read_parquet(ref / k)))
    monkeypatch.undo()
    before = tree(fast)
    (fast / rows[1]).unlink()
    next(fast.rglob("*.png")).unlink()
    write_dataset(out=fast, **GEN)
    assert tree(fast) == before


def test_plain_shards_with_other_columns_join_as_pandas_joins_them(tmp_path, monkeypatch):
    """Plain shards whose columns or types differ (a column missing from a shard or from some of its rows,
    integers in one shard and floats in another) give, without pandas, the tables and manifest the pandas path
    gives, byte for byte."""
    import tasks.stimuli.writer as W
    from tasks.stimuli.writer import _TableParts, _finish, _write_rows

    cases = {"columns": [[_row(0, x=1)], [_row(1, x=2, y="a")], [_row(2)]],
             "int_then_float": [[_row(0, x=1)], [_row(1, x=2.5)]],
             "ragged_in_shard": [[_row(0), _row(1, x=3, y="é")], [_row(2, x=4, y="b")]],
             "same": [[_row(0, x=1, f=0.5)], [_row(1, x=2, f=float("nan"))]]}
    for case, shards in cases.items():
        made = {}
        for way in ("arrow", "pandas"):
            out = tmp_path / case / way
            (out / ".shards").mkdir(parents=True)
            with monkeypatch.context() as m:
                if way == "pandas":
                    m.setattr(W, "_arrow_table", lambda rows: None)
                parts = _TableParts()
                for k, rows in enumerate(shards):
                    table = _write_rows(out, k, rows)
                    assert (table is None) == (way == "pandas"), case
                    if k % 2 == 0:  # some shards formatted early, the others read back in _finish
                        parts.add(out, k, table)
                _finish(out, "d", 0, len(shards), parts)
            made[way] = {f: (out / f).read_bytes() for f in ("annotations.csv", "annotations.parquet", "manifest.json")}
        assert made["arrow"] == made["pandas"], case


def test_every_generator_writes_what_the_pandas_path_writes(tmp_path, monkeypatch):
    """Over every registered generator (its test configuration, shards of 4 items): the tables and manifest
    made with the pyarrow path where rows are plain are byte for byte those of the pandas path, images too;
    and the pyarrow path is taken by most of them (a path never used would be tested by nothing).

    The pandas run is given the pyarrow run's rendered shards (its rows, and its images copied) instead of
    rendering them again: rendering (``_render_items``) comes before, and does not depend on, the table path
    this test compares, and that a generator's images and rows come out the same when it is run again with
    the same seed is tested for every generator in
    tests/test_stimuli.py::test_every_generator_draws_from_the_seed_and_records_it. The pandas run still goes
    through everything after the render: rows files, table parts, the tables and the manifest."""
    import copy
    import shutil

    import tasks.stimuli.writer as W
    from tasks.stimuli.registry import GENERATORS

    def files(d: Path) -> dict[str, bytes]:
        return {k: v for k, v in tree(d).items() if k != "config.json" and not k.startswith(".shards/")}

    real, used = W._arrow_table, set()
    real_render, rendered = W._render_items, {}

    def spy(rows, name):
        table = real(rows)
        if table is not None:
            used.add(name)
        return table

    def recording(args):
        index, rows = real_render(args)
        rendered[index] = (args[5], copy.deepcopy(rows))
        return index, rows

    replayed = set()

    def replaying(args):
        index = args[3]
        replayed.add(index)
        src, rows = rendered[index]
        for r in rows:
            if r["file_name"]:
                dest = Path(args[5]) / r["file_name"]
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(src) / r["file_name"], dest)
        return index, copy.deepcopy(rows)

    for name, gen in sorted(GENERATORS.items()):
        rendered.clear()
        replayed.clear()
        monkeypatch.setattr(W, "_arrow_table", lambda rows, name=name: spy(rows, name))
        monkeypatch.setattr(W, "_render_items", recording)
        fast = write_dataset(name, tmp_path / f"{name}_a", dict(gen.test_params), progress=False, shard_size=4)
        monkeypatch.setattr(W, "_arrow_table", lambda rows: None)
        monkeypatch.setattr(W, "_render_items", replaying)
        ref = write_dataset(name, tmp_path / f"{name}_b", dict(gen.test_params), progress=False, shard_size=4)
        # every shard of the first write, and only those, was replayed by the second
        assert rendered and replayed == set(rendered) == set(range(len(rendered))), name
        assert files(fast) == files(ref), name
    assert len(used) >= 0.75 * len(GENERATORS), sorted(set(GENERATORS) - used)
