"""Check a dataset folder against its own records: ``python -m tasks.verify <dir> [<dir> ...]``.

For a 3D-PC build (``tasks.threedpc``) and a generated 2D dataset (``tasks.generate``):

* every image the manifest lists exists and has the manifest's sha256;
* every row of the metadata / annotations table that names an image has it on disk and in the manifest;
* every image file in the dataset's image folders has a row (no unexplained files);
* (3D-PC) every ImageFolder view file is the same content as its source image.

Exit status: 0 when everything matches, 1 when damage was found (each problem on its own line), 2 for a
folder that is not a Vantage dataset. A re-run of the same build command repairs what this reports.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from infra.schema import field as sfield


@dataclass
class Report:
    root: Path
    kind: str
    images: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class NotADataset(ValueError):
    pass


def _hash(path: Path) -> str:
    from infra.files import sha256_file

    return sha256_file(path)


def _check_hashes(root: Path, listed: dict[str, str], rep: Report) -> None:
    for rel, digest in sorted(listed.items()):
        p = root / rel
        if not p.is_file():
            rep.problems.append(f"{rel}: listed in manifest.json but missing")
        elif _hash(p) != digest:
            rep.problems.append(f"{rel}: content differs from manifest.json (sha256)")
    rep.images = len(listed)


def _check_records(root: Path, listed: dict[str, str], table, table_name: str, on_disk: set[str],
                   rep: Report) -> None:
    """The checks both dataset kinds share: the manifest's images exist with their sha256, and the manifest,
    the table's ``file_name`` column and the image files on disk name the same set of images."""
    _check_hashes(root, listed, rep)
    rows = {str(f) for f in table["file_name"].fillna("") if f}
    for f in sorted(rows - set(listed)):
        rep.problems.append(f"{f}: a {table_name} row names it but manifest.json does not")
    for f in sorted(set(listed) - rows):
        rep.problems.append(f"{f}: in manifest.json but has no {table_name} row")
    for f in sorted(on_disk - rows - set(listed)):
        rep.problems.append(f"{f}: image file with no {table_name} row")


def verify(root: str | Path) -> Report:
    """Verify the dataset in ``root``; see the module docstring. Raises :class:`NotADataset`."""
    import pandas as pd

    root = Path(root)
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except FileNotFoundError:
        raise NotADataset(f"{root}: no manifest.json (not a finished tasks.threedpc or tasks.generate output)") from None
    except ValueError as e:
        raise NotADataset(f"{root / 'manifest.json'}: not valid JSON ({e})") from None
    if isinstance(manifest.get("images"), dict) and (root / "metadata.parquet").is_file():
        rep = Report(root, "3D-PC build")
        listed = manifest["images"]
        meta = pd.read_parquet(root / "metadata.parquet")
        on_disk = {str(p.relative_to(root)) for p in (root / "images").rglob("*.png")} if (root / "images").is_dir() else set()
        _check_records(root, listed, meta, "metadata", on_disk, rep)
        from tasks.threedpc.assemble import VIEWS, _flat

        sources = {}
        for r in meta[meta["file_name"].fillna("") != ""].itertuples():
            sources[_flat(r)] = str(r.file_name)
        for v in VIEWS:
            for p in sorted((root / v).rglob("*.png")) if (root / v).is_dir() else []:
                src = sources.get(p.name)
                if src is None:
                    rep.problems.append(f"{p.relative_to(root)}: view file with no metadata row")
                elif src in listed and _hash(p) != listed[src]:
                    rep.problems.append(f"{p.relative_to(root)}: differs from its source {src}")
        return rep
    if isinstance(manifest.get("sha256"), dict) and (root / "annotations.parquet").is_file():
        rep = Report(root, f"generated dataset {manifest.get('dataset', '?')}")
        ann = pd.read_parquet(root / "annotations.parquet")
        on_disk = {str(p.relative_to(root)) for p in root.glob("*/*.png") if not p.parent.name.startswith(".")}
        _check_records(root, manifest["sha256"], ann, "annotations", on_disk, rep)
        return rep
    raise NotADataset(f"{root}: manifest.json is not one of a 3D-PC build (images + metadata.parquet) or a "
                      "generated dataset (sha256 + annotations.parquet)")


USAGE = "usage: python -m tasks.verify <dir> [<dir> ...]   (or dirs=[a,b])  (exit 0 ok, 1 damage, 2 not a dataset)"


@dataclass(frozen=True)
class VerifyOptions:
    dirs: tuple[str, ...] = sfield((), "dataset folders to check (3D-PC builds or generated 2D datasets)",
                                   check=(lambda v: len(v) >= 1, "at least one folder"))


def _job(o: VerifyOptions) -> int:
    reports = []
    for d in o.dirs:
        if not Path(d).is_dir():
            raise NotADataset(f"{d}: no such folder")
        reports.append(verify(d))
    code = 0
    for rep in reports:
        if rep.ok:
            print(f"ok: {rep.root} ({rep.kind}): {rep.images} images match manifest.json; every row has its "
                  "file and every file its row")
        else:
            code = 1
            print(f"DAMAGED: {rep.root} ({rep.kind}): {len(rep.problems)} problem(s); run the same build "
                  "command again to repair")
            for p in rep.problems:
                print(f"  {p}")
    return code


def main(argv: list[str] | None = None) -> int:
    from infra.cli import run_options

    return run_options("tasks.verify", USAGE, VerifyOptions, _job, argv, positional=("dirs",), more=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
