"""Human trial tables, read into the same schema as the models' (``eval.results.TRIAL_DTYPES``).

* :func:`load_model_vs_human` — the model-vs-human format (Geirhos et al., 2021): one CSV per observer and
  dataset, ``<dataset>_subject-XX_session_N.csv`` with columns ``subj, session|Session, trial, rt,
  object_response, category, condition, imagename``. ``object_response`` ``na`` (no answer in time) counts
  as an error. ``item_id`` is the image id: the last two ``_`` fields of ``imagename`` (without extension)
  when they start with ``n0`` (ImageNet synset + number), else the last field; with the condition it aligns
  trials between observers. The trials model-vs-human released for its models (``<dataset>_<model>_session-1.csv``,
  ``subj`` = the model's name; in its ``raw-data`` folders beside the human files) are read as model
  observers, by model-vs-human's own rule (an observer is human when ``subj`` starts with ``subject-``):
  ``model_id`` = ``subj``, ``method`` = ``released``, ``weights`` = ``released:model-vs-human``. On the
  datasets model-vs-human treats as one condition (``eval.stats.single_condition_datasets``: cue-conflict,
  edge, silhouette, sketch, stylized) the condition is read as ``0`` for every observer (the released model
  files carry ``NaN`` there, the human files ``0``). ``path`` may be a list of such paths (e.g. the human
  and the model folders).
* :func:`load_3dpc_humans` — per-trial responses of a 3D-PC experiment: a CSV (or a folder of CSVs, e.g. one
  per participant) with a subject column, an image column, a response column and optionally a label
  column. Column names, a response code map (e.g. ``{left: 0, right: 1}``) and ``invert`` (the released
  files' inverted VPT polarity) are parameters. Images are matched to a task's items by path suffix, so
  absolute paths, release-relative paths and bare file names work when unambiguous; the label comes from
  the task (the build's label), and a disagreeing label column is reported as an error.
* ``trials`` — a table already in the trial schema (Parquet or CSV).

Each format is a reader registered with :func:`register_format` (``humans_format=<name>`` in
``python -m eval stats``); :func:`load_humans` dispatches, and every reader returns rows conformed to the
one trial schema, so statistics treat human observers and models alike.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from infra.registry import Registry

from .results import conform

MVH_COLUMNS = {"subj", "trial", "object_response", "category", "condition", "imagename"}
# humans: <dataset>_subject-01_session_1.csv; released model trials: <dataset>_<model>_session-1.csv (a model
# name may hold "_", a dataset name does not)
_MVH_NAME = re.compile(r"^(?P<dataset>[^_]+)_(?P<subject>.+)_session[_-](?P<session>\d+)\.csv$")


class HumanDataError(ValueError):
    pass


# name -> reader(path, c) -> trial table; c: the stats settings (task, target, ...)
HUMAN_FORMATS: Registry = Registry("human-data format", key="humans_format")


def register_format(name: str):
    """Decorator for a human-data reader ``reader(path, c) -> trial table`` (``c``: the stats settings)."""

    def deco(reader):
        return HUMAN_FORMATS.register(name, reader)

    return deco


def load_humans(path: str | Path, fmt: str, c: dict | None = None) -> pd.DataFrame:
    """Human trials at ``path`` read by the reader registered as ``fmt``, in the trial schema."""
    return HUMAN_FORMATS[fmt](path, dict(c or {}))  # an unknown name: "did you mean" and the known formats


def mvh_image_id(imagename: str) -> str:
    stem = Path(str(imagename)).stem
    parts = stem.split("_")
    if len(parts) >= 2 and parts[-2].startswith("n0"):
        return "_".join(parts[-2:])
    return parts[-1]


def load_model_vs_human(path, dataset: str | None = None) -> pd.DataFrame:
    """Trials of every observer CSV under ``path`` (a dataset folder, the folder of dataset folders, one
    file, or a list of these), as a trial table with ``task`` = the dataset name; human observers get
    ``method`` = ``human``, released model trials are model observers (module docstring)."""
    from .stats import SINGLE_CONDITION_CODE, single_condition_datasets

    paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]
    files = []
    for p in paths:
        found = [p] if p.is_file() else sorted(p.rglob("*.csv"))
        if not found:
            raise HumanDataError(f"{p}: no CSV files" if p.exists() else f"{p}: no such file or folder")
        files += found
    single = single_condition_datasets()
    frames = []
    for f in files:
        m = _MVH_NAME.match(f.name)
        if not m:
            raise HumanDataError(f"{f}: file name does not follow <dataset>_subject-XX_session_N.csv (humans) or "
                                 "<dataset>_<model>_session-N.csv (released model trials)")
        if dataset and m["dataset"] != dataset:
            continue
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        df.columns = [c.strip().lower() for c in df.columns]
        missing = MVH_COLUMNS - set(df.columns)
        if missing:
            raise HumanDataError(f"{f}: missing columns {sorted(missing)}")
        resp = df["object_response"].str.strip()
        label = df["category"].str.strip()
        subj = df["subj"].str.strip()
        human = subj.str.startswith("subject-")
        if human.any() and not human.all():
            raise HumanDataError(f"{f}: holds both human (subject-NN) and model observers in column subj; "
                                 "model-vs-human keeps one observer per file")
        is_h = bool(human.all())
        cond = df["condition"].str.strip()
        if m["dataset"] in single:
            cond = pd.Series(SINGLE_CONDITION_CODE, index=df.index)
        frames.append(pd.DataFrame({
            "observer": subj, "observer_type": "human" if is_h else "model", "model_id": "" if is_h else subj,
            "task": m["dataset"], "split": "test", "method": "human" if is_h else "released", "seed": 0,
            "item_id": [mvh_image_id(x) for x in df["imagename"]],
            "condition": cond, "label": label, "response": resp, "score": np.nan,
            "correct": (resp == label).to_numpy(),
            "run_id": f"{'human' if is_h else 'released'}__{m['dataset']}__{m['subject']}",
            "weights": "" if is_h else "released:model-vs-human",
            "trial": pd.to_numeric(df["trial"], errors="coerce"),
            "rt": pd.to_numeric(df.get("rt", pd.Series([np.nan] * len(df))), errors="coerce"),
        }))
    if not frames:
        raise HumanDataError(f"{', '.join(map(str, paths))}: no files for dataset {dataset!r}")
    return conform(pd.concat(frames, ignore_index=True), "trials")


def load_3dpc_humans(path: str | Path, task, subject_col: str = "subject", image_col: str = "image",
                     response_col: str = "response", label_col: str | None = None,
                     response_map: dict | None = None, invert: bool = False, split: str = "human") -> pd.DataFrame:
    """Per-trial human responses of a 3D-PC experiment as a trial table aligned with ``task``'s items."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("*.csv"))
    if not files:
        raise HumanDataError(f"{path}: no CSV files")
    items = task.items[task.items["split"] == split] if split else task.items
    items = items.drop_duplicates("item_id")
    by_suffix: dict[str, list[str]] = {}
    for iid in items["item_id"]:
        parts = str(iid).split("/")
        for k in range(1, len(parts) + 1):
            by_suffix.setdefault("/".join(parts[-k:]), []).append(iid)
    label_of = dict(zip(items["item_id"], items["label_name"]))
    frames = []
    for f in files:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        for col in (subject_col, image_col, response_col) + ((label_col,) if label_col else ()):
            if col not in df.columns:
                raise HumanDataError(f"{f}: no column {col!r} (columns: {list(df.columns)})")
        ids = []
        for row, img in enumerate(df[image_col]):
            key = str(img).replace("\\", "/").strip()
            cands = None
            parts = key.split("/")
            for k in range(len(parts), 0, -1):
                cands = by_suffix.get("/".join(parts[-k:]))
                if cands:
                    break
            if not cands:
                raise HumanDataError(f"{f}, row {row + 2}: image {img!r} is not in task {task.name} (split {split})")
            if len(set(cands)) > 1:
                raise HumanDataError(f"{f}, row {row + 2}: image {img!r} matches several items, e.g. {cands[:2]}")
            ids.append(cands[0])
        resp = df[response_col].str.strip()
        if response_map:
            unknown = set(resp) - set(map(str, response_map))
            if unknown:
                raise HumanDataError(f"{f}: responses {sorted(unknown)} not in response_map {response_map}")
            resp = resp.map({str(k): str(v) for k, v in response_map.items()})
        if invert:
            bad = set(resp) - {"0", "1"}
            if bad:
                raise HumanDataError(f"{f}: invert=true needs 0/1 responses, found {sorted(bad)}")
            resp = resp.map({"0": "1", "1": "0"})
        labels = pd.Series([label_of[i] for i in ids])
        if label_col:
            given = df[label_col].str.strip()
            if invert:
                given = given.map({"0": "1", "1": "0"}).fillna(given)
            mismatch = (given.to_numpy() != labels.to_numpy())
            if mismatch.any():
                r = int(np.argmax(mismatch))
                raise HumanDataError(f"{f}, row {r + 2}: column {label_col!r} says {given.iloc[r]!r} but the task's "
                                     f"label of {ids[r]} is {labels.iloc[r]!r} (polarity? try invert=true)")
        frames.append(pd.DataFrame({
            "observer": df[subject_col].str.strip(), "observer_type": "human", "model_id": "", "task": task.name,
            "split": split, "method": "human", "seed": 0, "item_id": ids, "condition": "",
            "label": labels.to_numpy(), "response": resp.to_numpy(), "score": np.nan,
            "correct": resp.to_numpy() == labels.to_numpy(), "run_id": f"human__{f.stem}",
        }))
    return conform(pd.concat(frames, ignore_index=True), "trials")


@register_format("model-vs-human")
def _mvh_reader(path, c: dict) -> pd.DataFrame:
    return load_model_vs_human(path)


@register_format("3dpc")
def _threedpc_reader(path, c: dict) -> pd.DataFrame:
    from .tasks import load_task

    if not c.get("task"):
        raise ValueError("humans_format=3dpc needs task=<the 3D-PC build the images come from>")
    task = load_task(c["task"], c.get("target") or "vpt")
    return load_3dpc_humans(path, task, **(c.get("humans_options") or {}))


@register_format("trials")
def _trials_reader(path, c: dict) -> pd.DataFrame:
    p = Path(path)
    return conform(pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p), "trials")
