"""Issue 20 points 1-3 and 6: nothing lost, nothing silent — repair, one output-folder guard, safe
overwrite, verify. Each test fails on the code before the issue (see docs/reliability.md)."""
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tasks.stimuli import ConfigError, write_dataset

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
POLY = {"per_class": 4, "levels": [0.3], "classes": ["triangle", "square"]}
SMALL = dict(scenes=["hydrant_01", "couch_03"], settings=2, depth_settings=2, frames=4, size=48, val_settings=0, human_n=0,
             strategy_steps=4, workers=1,
             allow_unvalidated=True)  # settings=2: one not-visible setting per scene, no facing-away share


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _images(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*.png"))}


@pytest.fixture(scope="module")
def small3d(tmp_path_factory, tiny_3dpc):
    """A copy of the session's TINY build (tests/conftest.py) that these tests damage and repair."""
    import shutil

    out = tmp_path_factory.mktemp("rel3d") / "b"
    shutil.copytree(tiny_3dpc, out)
    return out


def _cfg(out, **kw):
    from conftest import TINY_3DPC
    from tasks.threedpc import config_from_dict

    return config_from_dict({**TINY_3DPC, "out": str(out), **kw})


# ------------------------------------------------------------------- 1. complete means complete
def test_3dpc_deleted_and_modified_images_are_rebuilt_views_kept(small3d):
    from tasks.threedpc import build
    from tasks.verify import verify

    manifest = json.loads((small3d / "manifest.json").read_text())
    names = sorted(n for n in manifest["images"] if "/hydrant_02/" in n)  # one basic scene is rebuilt
    assert len(names) >= 4
    before = _images(small3d)
    views_before = sorted(str(p.relative_to(small3d)) for p in (small3d / "vpt").rglob("*.png"))
    (small3d / names[0]).unlink()
    (small3d / names[-1]).write_bytes(b"not the image")
    rep = verify(small3d)
    assert not rep.ok and any("missing" in p for p in rep.problems) and any("differs" in p for p in rep.problems)
    build(_cfg(small3d), progress=False)
    assert _images(small3d) == before, "the deleted and the modified image are rebuilt byte-identically"
    assert sorted(str(p.relative_to(small3d)) for p in (small3d / "vpt").rglob("*.png")) == views_before
    assert json.loads((small3d / "manifest.json").read_text())["images"] == manifest["images"]
    assert verify(small3d).ok


def test_3dpc_assemble_checks_sources_before_touching_views(small3d):
    from tasks.threedpc import ConfigError as TConfigError
    from tasks.threedpc.assemble import assemble

    name = sorted(json.loads((small3d / "manifest.json").read_text())["images"])[1]
    views = sorted(str(p.relative_to(small3d)) for p in small3d.glob("*/*/*/*.png") if not str(p).startswith(str(small3d / "images")))
    kept = (small3d / name).read_bytes()
    (small3d / name).unlink()
    try:
        with pytest.raises(TConfigError, match=rf"missing \({name}\).*views were left untouched"):
            assemble(_cfg(small3d))
        after = sorted(str(p.relative_to(small3d)) for p in small3d.glob("*/*/*/*.png") if not str(p).startswith(str(small3d / "images")))
        assert after == views, "the ImageFolder views are intact"
    finally:
        (small3d / name).write_bytes(kept)


def test_generate_deleted_or_corrupted_png_is_rerendered(tmp_path):
    a = write_dataset("degraded_polygons", tmp_path / "a", POLY, seed=1, shard_size=5, progress=False)
    before = _images(a)
    names = sorted(before)
    (a / names[0]).unlink()
    (a / names[6]).write_bytes(before[names[6]][:-3] + b"xyz")  # same size, different bytes
    write_dataset("degraded_polygons", a, POLY, seed=1, shard_size=5, progress=False)
    assert _images(a) == before


def test_generate_kill_and_resume_is_byte_identical(tmp_path):
    ref = write_dataset("degraded_polygons", tmp_path / "ref", {**POLY, "per_class": 30}, seed=1, shard_size=4,
                        progress=False)
    code = (f"from tasks.stimuli import write_dataset; write_dataset('degraded_polygons', {str(tmp_path / 'k')!r}, "
            f"{ {**POLY, 'per_class': 30}!r}, seed=1, shard_size=4, progress=False)")
    p = subprocess.Popen([sys.executable, "-c", code], env=ENV)
    shards = tmp_path / "k" / ".shards"
    t0 = time.time()
    while not (shards.is_dir() and len(list(shards.glob("*.parquet"))) >= 2) and time.time() - t0 < 60:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (tmp_path / "k" / "manifest.json").exists(), "killed mid-run"
    write_dataset("degraded_polygons", tmp_path / "k", {**POLY, "per_class": 30}, seed=1, shard_size=4, progress=False)
    assert _images(tmp_path / "k") == _images(ref)
    assert (tmp_path / "k" / "annotations.parquet").read_bytes() == (ref / "annotations.parquet").read_bytes()


# ------------------------------------------------------------------- 2. one guard: lock, temps
def test_second_run_into_a_locked_folder_is_refused(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(out / '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, str(os.getpid()).encode()); print('locked', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for cmd in (["tasks.generate", "dataset=degraded_polygons", f"out={out}", "per_class=2", "levels=[0.3]"],
                    ["render.trajectory", "scene=plant_02", "frames=1", "size=16", f"out={out}"]):
            r = subprocess.run([sys.executable, "-m", *cmd], env=ENV, capture_output=True, text=True, timeout=120)
            assert r.returncode == 2, r.stderr
            assert f"out={out} is in use by PID {holder.pid}" in r.stderr and "Traceback" not in r.stderr
        assert not list(out.glob("*.png")) and not (out / "config.json").exists()
    finally:
        holder.kill()
        holder.wait()
    # released when the holder dies (no stale lock): the run goes ahead
    write_dataset("degraded_polygons", out, {**POLY, "per_class": 1}, progress=False)
    with open(out / ".lock") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # and released again after the run


def test_only_temporaries_of_dead_processes_are_removed(tmp_path, small3d):
    from tasks.threedpc import build

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = _dead_pid()
    try:
        scene_parent = next((small3d / "images").glob("*/*"))
        live_tmp = scene_parent / f".other_01.tmp{live.pid}"
        dead_tmp = scene_parent / f".other_02.tmp{dead}"
        for d in (live_tmp, dead_tmp):
            d.mkdir()
            (d / "f000.png").write_bytes(b"half")
        build(_cfg(small3d), progress=False)
        assert live_tmp.is_dir(), "a running build's temporary scene folder is left alone"
        assert not dead_tmp.exists(), "a dead build's is removed"

        a = write_dataset("degraded_polygons", tmp_path / "g", POLY, progress=False)
        lt, dt = a / ".shards" / f".00000.parquet.tmp{live.pid}", a / ".shards" / f".00000.parquet.tmp{dead}"
        lt.write_bytes(b"x")
        dt.write_bytes(b"x")
        write_dataset("degraded_polygons", a, POLY, progress=False)
        assert lt.exists() and not dt.exists()
    finally:
        live.kill()
        live.wait()
        import shutil

        shutil.rmtree(live_tmp, ignore_errors=True)


def test_stamp_is_marked_and_atomic(tmp_path):
    a = write_dataset("degraded_polygons", tmp_path / "a", POLY, seed=3, progress=False)
    stamp = json.loads((a / "config.json").read_text())
    assert stamp["_vantage"]["output"] == "tasks.generate" and stamp["seed"] == 3
    assert not [p for p in a.iterdir() if ".tmp" in p.name]


# ------------------------------------------------------------------- 3. overwrite: only Vantage's files
def test_generate_overwrite_keeps_files_vantage_did_not_write(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    a = write_dataset("degraded_polygons", out, POLY, seed=1, progress=False)
    cond = sorted(p for p in a.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    (cond / "my_photo.png").write_bytes(b"mine")
    old = set(pd.read_parquet(a / "annotations.parquet").file_name)
    with pytest.raises(ConfigError, match="different configuration .*differs in: config.per_class.*files it did not write are kept"):
        write_dataset("degraded_polygons", out, {**POLY, "per_class": 2}, seed=1, progress=False)
    write_dataset("degraded_polygons", out, {**POLY, "per_class": 2, "levels": [0.2]}, seed=1, overwrite=True,
                  progress=False)
    assert (out / "notes.txt").read_text() == "my notes" and (cond / "my_photo.png").read_bytes() == b"mine"
    new = set(pd.read_parquet(out / "annotations.parquet").file_name)
    assert not any((out / f).exists() for f in old - new), "the previous run's images are gone"
    assert all((out / f).exists() for f in new)


def test_foreign_config_json_is_never_overwritten(tmp_path):
    out = tmp_path / "project"
    out.mkdir()
    (out / "config.json").write_text('{"my": "experiment"}')
    (out / "data.png").write_bytes(b"mine")
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="config.json was not written by Vantage"):
            write_dataset("degraded_polygons", out, POLY, overwrite=overwrite, progress=False)
    assert (out / "config.json").read_text() == '{"my": "experiment"}' and (out / "data.png").read_bytes() == b"mine"


def test_3dpc_overwrite_keeps_foreign_files(small3d, tmp_path):
    """Last test on the module's build: overwrite it with another configuration (two scenes, another seed),
    foreign files included."""
    from tasks.threedpc import build, config_from_dict

    scene = next((small3d / "images").glob("*/*/*"))
    (scene / "README.txt").write_text("my notes on this scene")
    (small3d / "images" / "mine.png").write_bytes(b"mine")
    (small3d / "analysis.csv").write_text("a,b\n")
    old = set(json.loads((small3d / "manifest.json").read_text())["images"])
    build(config_from_dict({**SMALL, "out": str(small3d), "seed": 5, "overwrite": True}), progress=False)
    assert (scene / "README.txt").read_text() == "my notes on this scene"
    assert (small3d / "images" / "mine.png").read_bytes() == b"mine" and (small3d / "analysis.csv").exists()
    new = json.loads((small3d / "manifest.json").read_text())
    assert new["seed"] == 5
    assert not any((small3d / f).exists() for f in old - set(new["images"]))
    # settings=2 lies outside the validated range (no facing-away setting): built only with allow_unvalidated,
    # and both the manifest and the summary say so
    assert [o.split(":")[0] for o in new["outside_validated_range"]] == [
        "out_of_view_fraction=0.4 makes 0 of the 1 not-visible settings per scene face away (0.00), outside [0.33, 0.60]"]
    assert "**Outside the validated range**" in (small3d / "summary.md").read_text()


# ------------------------------------------------------------------- 6. verify
def test_verify_generated_dataset(tmp_path, capsys):
    from tasks.verify import main

    a = write_dataset("degraded_polygons", tmp_path / "a", POLY, seed=1, progress=False)
    assert main([str(a)]) == 0 and "ok:" in capsys.readouterr().out
    names = sorted(pd.read_parquet(a / "annotations.parquet").file_name)
    (a / names[0]).write_bytes(b"zeroed")
    (a / names[1]).unlink()
    (a / names[2]).parent.joinpath("unlisted.png").write_bytes(b"x")
    assert main([str(a)]) == 1
    out = capsys.readouterr().out
    assert f"{names[0]}: content differs" in out and f"{names[1]}: listed in manifest.json but missing" in out
    assert "unlisted.png: image file with no annotations row" in out
    assert main([str(tmp_path)]) == 2 and "no manifest.json" in capsys.readouterr().err


def test_verify_3dpc_reports_manifest_image_without_metadata_row(small3d, tmp_path):
    """A dropped metadata row is damage in a 3D-PC build as in a generated set (the 3D-PC branch missed it)."""
    import shutil

    from tasks.verify import verify

    copy = tmp_path / "b"
    shutil.copytree(small3d, copy)
    meta = pd.read_parquet(copy / "metadata.parquet")
    named = meta[meta["file_name"].fillna("") != ""]
    dropped = str(named["file_name"].iloc[0])
    meta.drop(index=named.index[0]).to_parquet(copy / "metadata.parquet")
    rep = verify(copy)
    assert f"{dropped}: in manifest.json but has no metadata row" in rep.problems
