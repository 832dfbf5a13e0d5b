"""Builds across machines: a 3D-PC build cut into ``n`` shards of scenes, one job each, and a merge.

    python -m tasks.threedpc out=<dir> [config ...] shard=0/4     # on machine (or Slurm task) 0
    ...                                                            # ... 1/4, 2/4, 3/4, in any order, at once
    python -m tasks.threedpc out=<dir> [config ...] shard=merge/4  # once all have finished

Shard ``i`` builds the scenes ``cfg.scenes[i::n]`` with the *whole* configuration (so each scene's split,
its randomness — from (seed, scene name) only — and its images are those of the unsharded build) into its
own folder ``<out>/.shards/<i>-of-<n>/`` (claimed like any output folder: lock, config stamp, resume), and
writes ``shard.json`` there last: the shard, its scenes and the sha256 of every file it wrote. Jobs never
write to the same folder, so they need no shared lock (only a shared file system).

``merge`` checks every shard's manifest — present, made with this configuration, listing the expected
scenes, every file present with its sha256 — and refuses (naming each shard, its problem and the command
that rebuilds it) before touching anything; then it moves the scene folders into ``<out>`` (a rename on
the same file system), removes the emptied shard folders and runs the ordinary build, which finds every
scene complete and only assembles (metadata, views, manifest, audit). The result is byte-identical to the
unsharded build (tested). A merge run again after success finds the scenes in place and re-assembles.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from infra.cli import parse_part

from .config import BuildConfig, ConfigError

SHARD_MANIFEST = "shard.json"
SHARD_KIND = "tasks.threedpc.shard"


def parse_shard(spec) -> tuple[int | None, int]:
    """``"i/n"`` → (i, n) with 0 ≤ i < n; ``"merge/n"`` → (None, n). Raises ConfigError otherwise."""
    return parse_part(spec, ConfigError, "shards are built")


def shard_dir(out: str | os.PathLike, i: int, n: int) -> Path:
    return Path(out) / ".shards" / f"{i}-of-{n}"


def shard_scenes(cfg: BuildConfig, i: int, n: int) -> list[str]:
    """Shard i's scenes: every n-th scene of the configuration, from the i-th."""
    return list(cfg.scenes)[i::n]


def _sha256(path: Path) -> str:
    from infra.files import sha256_file

    return sha256_file(path)


def _scene_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _identity(cfg: BuildConfig, i: int, n: int) -> dict:
    return {"shard": f"{i}/{n}", "build": cfg.identity()}


def build_shard(cfg: BuildConfig, i: int, n: int, progress: bool = True) -> Path:
    """Build shard ``i`` of ``n`` into :func:`shard_dir` and write its ``shard.json``; returns the folder."""
    from tqdm import tqdm

    from infra.outputs import output_folder, OutputError
    from infra.pool import run_jobs

    from .build import _init_worker, _job, _temps, build_scene, preflight

    sub = shard_dir(cfg.out, i, n)
    scfg = dataclasses.replace(cfg, out=str(sub))
    preflight(scfg)
    names = shard_scenes(cfg, i, n)

    def owned(folder: Path):
        return [p for p in folder.rglob("*") if p.is_file() and p.name != ".lock"], []

    try:
        with output_folder(sub, SHARD_KIND, _identity(cfg, i, n), overwrite=cfg.overwrite, owned=owned,
                           temps=_temps):
            (sub / SHARD_MANIFEST).unlink(missing_ok=True)  # written again last, when the shard is complete
            bar = tqdm(total=len(names), desc=f"3D-PC shard {i}/{n}", unit="scene", disable=not progress)
            finals = {}
            if cfg.workers == 1 or len(names) <= 1:
                for name in names:
                    finals[name] = build_scene(scfg, name)
                    bar.update(1)
            else:
                threads = max(1, (os.cpu_count() or 1) // cfg.workers)
                jobs = [(scfg, name, None) for name in names]
                for name, final in zip(names, run_jobs(_job, jobs, cfg.workers, _init_worker, (threads,), ordered=True)):
                    finals[name] = Path(final)
                    bar.update(1)
            bar.close()
            manifest = {"shard": i, "of": n, "identity": _identity(cfg, i, n),
                        "scenes": {name: str(finals[name].relative_to(sub)) for name in names},
                        "files": {str(p.relative_to(sub)): _sha256(p) for name in names
                                  for p in _scene_files(finals[name])}}
            from infra.files import atomic_write_text

            atomic_write_text(sub / SHARD_MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    except OutputError as e:
        raise ConfigError(str(e)) from None
    return sub


def shard_problems(cfg: BuildConfig, i: int, n: int) -> list[str]:
    """Why shard ``i`` of ``n`` cannot be merged ([] when it can, or when its scenes are already merged)."""
    from .build import scene_problems

    sub = shard_dir(cfg.out, i, n)
    path = sub / SHARD_MANIFEST
    if not path.is_file():
        if not sub.exists() and _merged(cfg, i, n):
            return []
        return [f"{path}: missing (shard not built or not finished)"]
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return [f"{path}: unreadable ({e})"]
    if m.get("identity") != json.loads(json.dumps(_identity(cfg, i, n), default=list)):
        return [f"{path}: built with a different configuration or shard count"]
    if sorted(m.get("scenes", {})) != sorted(shard_scenes(cfg, i, n)):
        return [f"{path}: lists scenes {sorted(m.get('scenes', {}))}, expected {sorted(shard_scenes(cfg, i, n))}"]
    problems = []
    for rel, digest in m.get("files", {}).items():
        p = sub / rel
        if not p.is_file():
            if not (Path(cfg.out) / rel).is_file():  # moved by an interrupted merge: checked there below
                problems.append(f"{rel}: missing")
        elif _sha256(p) != digest:
            problems.append(f"{rel}: content differs from {SHARD_MANIFEST}")
    for rel in m.get("scenes", {}).values():
        dst = Path(cfg.out) / rel
        if not (sub / rel).exists() and scene_problems(dst, Path(cfg.out)):
            problems.append(f"{rel}: neither in the shard nor complete in out")
    return problems


def _merged(cfg: BuildConfig, i: int, n: int) -> bool:
    """True when every scene of shard i is complete in ``out`` already (an earlier merge moved it)."""
    from .build import load_build_scene, scene_dir, scene_problems

    for name in shard_scenes(cfg, i, n):
        if scene_problems(scene_dir(cfg, load_build_scene(cfg, name), cfg.split_of(name)), Path(cfg.out)):
            return False
    return True


def merge_shards(cfg: BuildConfig, n: int, progress: bool = True) -> Path:
    """Check all ``n`` shards, move their scenes into ``cfg.out``, assemble (see module docstring)."""
    from .build import build, scene_problems

    out = Path(cfg.out)
    problems = {i: shard_problems(cfg, i, n) for i in range(n)}
    bad = {i: p for i, p in problems.items() if p}
    if bad:
        lines = [f"shard {i}/{n}: {'; '.join(p[:3])}{' …' if len(p) > 3 else ''} (rebuild it: python -m "
                 f"tasks.threedpc out={cfg.out} <same config> shard={i}/{n})" for i, p in bad.items()]
        raise ConfigError(f"cannot merge {len(bad)} of {n} shard(s) into {out}:\n  " + "\n  ".join(lines))
    for i in range(n):
        sub = shard_dir(out, i, n)
        if not (sub / SHARD_MANIFEST).is_file():
            continue  # merged earlier
        m = json.loads((sub / SHARD_MANIFEST).read_text())
        for rel in m["scenes"].values():
            src, dst = sub / rel, out / rel
            if not src.exists():
                continue
            if dst.exists():
                if scene_problems(dst, out):
                    raise ConfigError(f"{dst}: an incomplete scene folder is in the way of shard {i}/{n}'s; "
                                      "remove it and merge again")
                shutil.rmtree(src)  # the same scene, built deterministically, is already in place
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
        _remove_shard_folder(sub)
    shards = out / ".shards"
    if shards.is_dir() and not any(shards.iterdir()):
        shards.rmdir()
    return build(cfg, progress=progress)


def _remove_shard_folder(sub: Path) -> None:
    """Remove an emptied shard folder: its records and the folders the moves left empty, nothing else."""
    for name in (SHARD_MANIFEST, "config.json", ".lock"):
        (sub / name).unlink(missing_ok=True)
    for d in sorted((p for p in sub.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass
    try:
        sub.rmdir()
    except OSError:
        pass


def run(cfg: BuildConfig, spec, progress: bool = True) -> str:
    """The CLI's ``shard=`` argument: build one shard or merge them; returns the message to print."""
    i, n = parse_shard(spec)
    if i is None:
        out = merge_shards(cfg, n, progress)
        return f"merged {n} shard(s) and wrote the 3D-PC to {out} (see {out}/summary.md)"
    sub = build_shard(cfg, i, n, progress)
    return (f"built shard {i}/{n} ({len(shard_scenes(cfg, i, n))} scene(s)) in {sub}; when all {n} are built: "
            f"python -m tasks.threedpc <same arguments> shard=merge/{n}")
