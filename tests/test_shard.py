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


def test_generate_cli_takes_shard(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "tasks.generate", "dataset=degraded_polygons", f"out={tmp_path / 'o'}",
            "per_class=1", "size=32", "levels=[0.2]", "progress=false"]
    r = subprocess.run(base + ["shard=5/2"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("error: shard='5/2'") and "Traceback" not in r.stderr
    for s in ("0/2", "1/2", "merge/2"):
        subprocess.run(base + [f"shard={s}"], check=True, capture_output=True, env=env, cwd=ROOT)
    assert (tmp_path / "o" / "manifest.json").is_file() and not (tmp_path / "o" / ".jobs").exists()


# ---------------------------------------------------------------------------------------------- 3D-PC
TINY = ["scenes=[hydrant_01,hydrant_03]", "settings=2", "frames=4", "size=48", "human_n=0", "workers=1",
        "progress=false", "audit.enforce=false"]


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
    from render.files import package_version, package_version_reference

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
