"""Task datasets for evaluation: a folder Vantage (or the user) made, read as one table of trials.

``load_task(path, target=...)`` returns a :class:`TaskData` whose ``items`` table has one row per
(image, split): ``item_id`` (the image path relative to the dataset folder — the key that aligns models
and humans), ``path`` (absolute), ``label`` (int class index), ``label_name`` (string), ``split``
(``train``, ``val``, ``test`` and evaluation-only subsets such as ``human`` or ``strategy``), ``group``
(the unit held out together: setting, pair or source image). An image may appear in several evaluation
splits (the 3D-PC human subset is part of the test split).

Layouts are registered with :func:`register_layout` (contract: :class:`Layout`: ``detect`` and ``load``);
the first whose ``detect`` accepts the folder reads it, so a new layout is one decorated function.
Registered here, in detection order:

* **3D-PC build** (``metadata.parquet`` + ``manifest.json`` from ``python -m tasks.threedpc``): targets
  ``vpt`` (1 = the green camera sees the ball), ``depth`` (1 = the ball is further than the camera) and
  ``vpt_strategy`` (trained on VPT-basic, tested on the VPT-Strategy sequences). Splits come from the build
  (validation held out by setting); evaluation splits ``test``, ``human`` (+ ``strategy``).
* **2D generator output** (``annotations.parquet`` from ``python -m tasks.generate``): ``target`` names the
  column to predict (e.g. ``shape_class``, ``condition``), ``conditions`` optionally keeps only some
  conditions; train/val/test are assigned by a stable hash of
  ``set_id`` (or ``item_id``), so the images of one pair or source never straddle splits.
* **ImageFolder** (``<split>/<class>/<image>`` with splits ``train``, ``val`` and ``test``): e.g. the
  3D-PC's ``vpt/`` view. Without a ``val`` folder, 15% of the training images (by hash) become validation.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from infra.registry import Registry, where

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"}
THREEDPC_TARGETS = ("vpt", "depth", "vpt_strategy")
TRAIN_SPLITS = ("train", "val")


class TaskError(ValueError):
    """A dataset folder or target that cannot be used as a task."""


@dataclass
class TaskData:
    root: Path
    name: str  # e.g. "3dpc/vpt"
    kind: str  # threedpc | generated | imagefolder
    items: pd.DataFrame
    classes: list[str]
    eval_splits: tuple[str, ...]
    info: dict = field(default_factory=dict)
    dataset_images: list[str] = field(default_factory=list)  # every image of the folder, any target/split

    def split(self, name: str) -> pd.DataFrame:
        return self.items[self.items["split"] == name].reset_index(drop=True)

    def image_ids(self) -> list[str]:
        """What embeddings are computed for: every image of the dataset folder (sorted), not only this
        task's, so one cache entry serves every target, split and method on the same folder."""
        return sorted(set(self.dataset_images) | set(self.items["item_id"]))

    def image_files(self) -> tuple[list[str], list[str]]:
        """``image_ids()`` and the matching file paths."""
        ids = self.image_ids()
        return ids, [str(self.root / i) for i in ids]

    def counts(self) -> dict:
        return {s: {str(k): int(v) for k, v in g["label"].value_counts().sort_index().items()}
                for s, g in self.items.groupby("split")}


@dataclass(frozen=True)
class Layout:
    """A dataset layout: ``detect(folder) -> bool`` (cheap: looks at file names only) and
    ``load(folder, target, val_fraction, test_fraction, split_seed, conditions) -> TaskData`` (raises
    :class:`TaskError` naming the folder, the setting and the fix)."""

    name: str  # also TaskData.kind
    description: str  # what detect looks for, shown when no layout matches
    detect: Callable[[Path], bool]
    load: Callable[..., TaskData]


LAYOUTS: Registry[Layout] = Registry("dataset layout", origin=lambda lay: where(lay.load))  # detection order = registration order: the most specific layout first


def register_layout(name: str, description: str, detect: Callable[[Path], bool]):
    """Decorator for a layout's ``load`` function (contract: :class:`Layout`)."""

    def deco(load):
        LAYOUTS.register(name, Layout(name, description, detect, load))
        return load

    return deco


def detect_layout(root: str | Path) -> Layout:
    """The first registered layout that recognises ``root``; none is an error listing what each expects."""
    root = Path(root)
    if not root.is_dir():
        raise TaskError(f"task={root}: no such folder")
    for layout in LAYOUTS.values():
        if layout.detect(root):
            return layout
    forms = [lay.description for lay in LAYOUTS.values()]
    expected = ", ".join(forms[:-1]) + ", or " + forms[-1] if len(forms) > 1 else forms[0]
    raise TaskError(f"task={root}: not a recognised dataset (expected {expected})")


def load_task(path: str | Path, target: str | None = None, val_fraction: float = 0.15,
              test_fraction: float = 0.25, split_seed: int = 0, conditions=None) -> TaskData:
    """The task in folder ``path``, read by the registered layout that recognises it."""
    if not Path(path).is_dir():
        raise TaskError(f"task={path}: no such folder")
    return detect_layout(path).load(Path(path), target, val_fraction, test_fraction, split_seed, conditions)


@register_layout("threedpc", "a 3D-PC build with metadata.parquet",
                 lambda root: (root / "metadata.parquet").is_file() and (root / "manifest.json").is_file())
def _threedpc(root: Path, target: str | None, val_fraction=None, test_fraction=None, split_seed=None,
              conditions=None) -> TaskData:
    """``python -m tasks.threedpc`` output (splits from the build; the fractions do not apply)."""
    target = target or "vpt"
    if target not in THREEDPC_TARGETS:
        raise TaskError(f"target={target!r}: a 3D-PC build has targets {', '.join(THREEDPC_TARGETS)}")
    meta = pd.read_parquet(root / "metadata.parquet")
    need = {"file_name", "split", "vpt_label", "depth_label", "in_vpt", "in_depth", "in_human", "in_strategy",
            "scene", "setting"}
    missing = need - set(meta.columns)
    if missing:
        raise TaskError(f"{root / 'metadata.parquet'}: missing columns {sorted(missing)}")
    group = meta["scene"].astype(str) + "/s" + meta["setting"].astype(str)
    rows = []
    label_col = "depth_label" if target == "depth" else "vpt_label"
    member = "in_depth" if target == "depth" else "in_vpt"
    for split in ("train", "val", "test"):
        sel = meta[member].astype(bool) & (meta["split"] == split)
        rows.append(_rows(meta[sel], label_col, split, group[sel]))
    # a task's own human set (in_human_vpt / in_human_depth, builds since 29 Nov), else the one both tasks share
    own = "in_human_depth" if target == "depth" else "in_human_vpt"
    sel = meta[own if own in meta else "in_human"].astype(bool)
    rows.append(_rows(meta[sel], label_col, "human", group[sel]))
    eval_splits = ["test", "human"]
    if target == "vpt_strategy":
        sel = meta["in_strategy"].astype(bool)
        rows.append(_rows(meta[sel], "vpt_label", "strategy", group[sel]))
        eval_splits = ["strategy"]
    items = pd.concat(rows, ignore_index=True)
    items["path"] = [str(root / f) for f in items["item_id"]]
    names = ["0", "1"]  # the build's label polarity (docs/ARCHITECTURE.md), as in its ImageFolder views
    items["label_name"] = [names[i] for i in items["label"]]
    manifest = json.loads((root / "manifest.json").read_text())
    info = {"dataset_sha": manifest_digest(manifest)}
    images = meta.loc[meta["file_name"].fillna("").astype(str) != "", "file_name"].astype(str).tolist()
    return TaskData(root, f"3dpc/{target}", "threedpc", _finish(items), names, tuple(eval_splits), info, images)


def _rows(df: pd.DataFrame, label_col: str, split: str, group) -> pd.DataFrame:
    lab = df[label_col]
    if lab.isna().any():
        bad = df.loc[lab.isna(), "file_name"].iloc[0]
        raise TaskError(f"{label_col} is missing for a selected image ({bad}, split {split})")
    return pd.DataFrame({"item_id": df["file_name"].astype(str).to_numpy(), "label": lab.astype(int).to_numpy(),
                         "split": split, "group": np.asarray(group, dtype=object)})


def _finish(items: pd.DataFrame) -> pd.DataFrame:
    items = items.astype({"item_id": "string", "label": "int64", "split": "string", "group": "string",
                          "label_name": "string", "path": "string"})
    return items[["item_id", "path", "label", "label_name", "split", "group"]]


def manifest_digest(manifest: dict) -> str:
    """A build's identity: the first 16 hex digits of the sha256 of its ``manifest.json`` (keys sorted), recorded
    as ``dataset_sha`` on every run (``eval.results_3dpc.build_identity``)."""
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:16]


def hashed_split(keys, val_fraction: float, test_fraction: float, seed: int = 0) -> np.ndarray:
    """Stable split assignment from a hash of each key (so a key's images always land together)."""
    if not (0 <= val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
        raise TaskError(f"val_fraction={val_fraction}, test_fraction={test_fraction}: must be in [0,1) and sum < 1")
    u = np.array([int.from_bytes(hashlib.sha256(f"{seed}:{k}".encode()).digest()[:8], "little") / 2**64
                  for k in keys])
    return np.where(u < test_fraction, "test", np.where(u < test_fraction + val_fraction, "val", "train"))


def read_annotations(root, reader: str = "") -> pd.DataFrame:
    """The written rows of a generated dataset (``python -m tasks.generate``'s ``annotations.parquet``): rows of
    unusable inputs (``skipped`` non-empty) dropped, the pre-issue-13 column ``pair_id`` read as ``set_id``, index
    reset. ``reader`` (e.g. "decoders") names who needs it in the error when there is no such table."""
    root = Path(root)
    table = root / "annotations.parquet"
    if not table.is_file():
        who = f"{reader} read" if reader else "this reads"
        raise TaskError(f"task={root}: {who} a generated dataset (annotations.parquet); none there")
    ann = pd.read_parquet(table)
    if "skipped" in ann:  # the reason an input was unusable ("" for written images)
        ann = ann[ann["skipped"].fillna("").astype(str) == ""]
    if "set_id" not in ann and "pair_id" in ann:  # datasets written before the column was renamed (issue 13)
        ann = ann.rename(columns={"pair_id": "set_id"})
    return ann.reset_index(drop=True)


@register_layout("generated", "a generated dataset with annotations.parquet",
                 lambda root: (root / "annotations.parquet").is_file())
def _generated(root: Path, target: str | None, val_fraction: float, test_fraction: float, seed: int,
               conditions=None) -> TaskData:
    """``python -m tasks.generate`` output: splits by a stable hash of ``set_id`` (or ``item_id``)."""
    if not target:
        raise TaskError(f"task={root}: a generated 2D dataset needs target=<column> (e.g. target=condition)")
    ann = read_annotations(root)
    images = ann["file_name"].astype(str).tolist()
    if conditions:
        have = set(ann["condition"].astype(str))
        unknown = sorted(set(map(str, conditions)) - have)
        if unknown:
            raise TaskError(f"conditions={unknown}: not in {root / 'annotations.parquet'}; have {sorted(have)}")
        ann = ann[ann["condition"].astype(str).isin(set(map(str, conditions)))]
    if target not in ann.columns:
        raise TaskError(f"target={target!r}: not a column of {root / 'annotations.parquet'}; "
                        f"columns: {list(ann.columns)}")
    key = ann["set_id"].where(ann["set_id"].astype(str) != "", ann["item_id"]) if "set_id" in ann else ann["item_id"]
    key = key.astype(str)
    classes = sorted(ann[target].astype(str).unique())
    index = {c: i for i, c in enumerate(classes)}
    items = pd.DataFrame({"item_id": ann["file_name"].astype(str).to_numpy(),
                          "label": [index[str(v)] for v in ann[target]],
                          "split": hashed_split(key, val_fraction, test_fraction, seed),
                          "group": key.to_numpy()})
    items["label_name"] = [classes[i] for i in items["label"]]
    items["path"] = [str(root / f) for f in items["item_id"]]
    dataset = str(ann["dataset"].iloc[0]) if "dataset" in ann and len(ann) else root.name
    info = {"target": target, "val_fraction": val_fraction, "test_fraction": test_fraction, "split_seed": seed,
            "conditions": sorted(map(str, conditions)) if conditions else None}
    return TaskData(root, f"{dataset}/{target}", "generated", _finish(items), classes, ("test",), info, images)


@register_layout("imagefolder", "an ImageFolder with train/val/test sub-folders",
                 lambda root: any((root / s).is_dir() for s in ("train", "val", "test")))
def _imagefolder(root: Path, target=None, val_fraction=None, test_fraction=None, split_seed=None,
                 conditions=None) -> TaskData:
    """``<split>/<class>/<image>``; without ``val/``, 15% of train (by hash) becomes validation."""
    rows = []
    classes = sorted({c.name for s in ("train", "val", "test") if (root / s).is_dir()
                      for c in (root / s).iterdir() if c.is_dir()})
    if len(classes) < 2:
        raise TaskError(f"task={root}: an ImageFolder needs at least two class folders, found {classes}")
    index = {c: i for i, c in enumerate(classes)}
    for s in ("train", "val", "test"):
        stray = sorted(f.name for f in (root / s).glob("*") if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)
        if stray:  # images next to the class folders have no class: say so rather than ignore them
            raise TaskError(f"task={root}: {len(stray)} image(s) directly in {s}/ ({', '.join(stray[:3])}) belong to "
                            f"no class; move them into {s}/<class>/")
        for c in classes:
            d = root / s / c
            if not d.is_dir():
                continue
            for f in sorted(d.iterdir()):
                if f.suffix.lower() in IMAGE_SUFFIXES:
                    rows.append((f"{s}/{c}/{f.name}", index[c], s, f"{s}/{c}/{f.stem}"))
    if not rows:
        raise TaskError(f"task={root}: no images under train/val/test")
    items = pd.DataFrame(rows, columns=["item_id", "label", "split", "group"])
    if not (items["split"] == "val").any():  # early stopping needs a validation split: hold out 15% of train
        tr = items["split"] == "train"
        items.loc[tr, "split"] = hashed_split(items.loc[tr, "group"], 0.15, 0.0)
    items["label_name"] = [classes[i] for i in items["label"]]
    items["path"] = [str(root / f) for f in items["item_id"]]
    return TaskData(root, root.name, "imagefolder", _finish(items), classes, ("test",), {})
