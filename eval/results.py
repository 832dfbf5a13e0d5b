"""Result tables: one schema for humans and models; append-only, parallel-safe writes.

Trial table (one row per observer × image × run; ``TRIAL_DTYPES``):
``observer`` (model id or human subject id), ``observer_type`` (``model`` | ``human``), ``model_id``
(empty for humans), ``task``, ``split``, ``method`` (``probe``, ``finetune``, ``human``, ...), ``seed``,
``item_id`` (image path relative to its dataset: the alignment key), ``condition`` (empty when none),
``label`` and ``response`` (class names as strings), ``score`` (the model's probability of its response;
NaN for humans), ``correct``, ``run_id``; the run identity ``weights`` (``file:sha256=…``, ``random:seed=N``,
``pretrained:<id>`` or ``package:<name>==<version>:sha256=…``), ``preprocess`` (mode, input size,
interpolation, crop), ``feature`` (``pooled`` or a tap), ``method_config`` (digest of the method's
settings that change predictions) — empty for humans; and ``cluster``, the unit that items are
resampled by in bootstrap CIs (the 3D-PC placement ``scene/setting``; empty = items are independent).
Statistics treat one ``model_id`` with different identities as different observers (:func:`label_runs`).

Summary table (one row per model × task × method × seed × split; ``SUMMARY_DTYPES``): counts, accuracy and
balanced accuracy with bootstrap CIs over items, training facts (best epoch, validation accuracy, seconds),
the configuration digest and ``run_id``.

A results folder holds ``trials/<run_id>.parquet`` and ``summary/<run_id>.parquet``. Each part is written
to a temporary file and *linked* into place (``os.link`` fails if the name exists), so parallel jobs never
overwrite or interleave each other's rows, a reader never sees half a file, and a finished run is never
rewritten (re-running it is a no-op: runs are resumable by ``run_id``).
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

TRIAL_DTYPES = {
    "observer": "string", "observer_type": "string", "model_id": "string", "task": "string",
    "split": "string", "method": "string", "seed": "int64", "item_id": "string", "condition": "string",
    "label": "string", "response": "string", "score": "float64", "correct": "boolean", "run_id": "string",
    "weights": "string", "preprocess": "string", "feature": "string", "method_config": "string",
    "cluster": "string",
}
IDENTITY = ("weights", "preprocess", "feature", "method_config")  # with model_id: what a result is of
SUMMARY_DTYPES = {
    "model_id": "string", "task": "string", "method": "string", "seed": "int64", "split": "string",
    "n": "int64", "accuracy": "float64", "accuracy_ci_low": "float64", "accuracy_ci_high": "float64",
    "balanced_accuracy": "float64", "balanced_accuracy_ci_low": "float64",
    "balanced_accuracy_ci_high": "float64", "chance": "float64", "feature": "string",
    "best_epoch": "int64", "epochs_run": "int64", "val_accuracy": "float64", "train_seconds": "float64",
    "config_digest": "string", "run_id": "string", "weights": "string", "preprocess": "string",
    "method_config": "string", "ci_unit": "string",
}
KINDS = ("trials", "summary")


class ResultsError(ValueError):
    pass


def config_digest(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_id(method: str, task: str, model_id: str, seed: int, digest: str) -> str:
    from infra.files import safe_name

    return f"{safe_name(method)}__{safe_name(task)}__{safe_name(model_id)}__seed{seed}__{digest}"


def conform(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """``df`` with exactly the schema's columns, order and dtypes (missing optional text → empty)."""
    dtypes = TRIAL_DTYPES if kind == "trials" else SUMMARY_DTYPES
    df = df.copy()
    for col, dt in dtypes.items():
        if col not in df:
            if dt == "string":
                df[col] = ""
            else:
                raise ResultsError(f"{kind} table lacks required column {col!r}")
    extra = [c for c in df.columns if c not in dtypes]
    df = df[list(dtypes) + extra]
    return df.astype(dtypes)


def part_path(results: str | Path, kind: str, rid: str) -> Path:
    if kind not in KINDS:
        raise ResultsError(f"kind={kind!r}: allowed {KINDS}")
    return Path(results) / kind / f"{rid}.parquet"


def run_done(results: str | Path, rid: str) -> bool:
    return all(part_path(results, k, rid).is_file() for k in KINDS)


def write_part(results: str | Path, kind: str, rid: str, df: pd.DataFrame) -> bool:
    """Write one part ``results/<kind>/<rid>.parquet`` (trials and summary conformed to their schema; other
    kinds — decoder predictions, similarity distances — as given), written to a temporary name and linked
    into place; returns False (and writes nothing) if that part already exists (parts are never replaced)."""
    if kind in KINDS:
        final, df = part_path(results, kind, rid), conform(df, kind)
    else:
        final = Path(results) / kind / f"{rid}.parquet"
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.stem}.{uuid.uuid4().hex}.tmp")
    df.to_parquet(tmp, index=False)
    try:
        os.link(tmp, final)  # atomic, and refuses to replace an existing part
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def read_results(results: str | Path, kind: str = "trials", columns: list[str] | None = None,
                 exclude_tasks=()) -> pd.DataFrame:
    """All parts of ``kind`` in a results folder, concatenated (empty table with the schema if none).

    ``columns`` (schema columns to keep; default all, extra columns included) and ``exclude_tasks`` (rows whose
    ``task`` is one of these are skipped) are applied while reading. The parts are read in one pyarrow dataset
    scan over their unified schema (a zoo sweep has over a thousand small parts; reading them one by one with
    pandas took ~5x longer); when that scan fails (an unreadable part, columns whose types cannot be unified)
    the parts are read one by one as :func:`read_results_parts` does, which names the bad part."""
    parts = _parts(results, kind, columns)
    if not parts:
        return _empty(kind, columns)
    try:
        table = _scan(parts, columns, exclude_tasks)
    except Exception:  # noqa: BLE001 - the reference reader says which part is at fault
        return read_results_parts(results, kind, columns, exclude_tasks)
    return _conform_columns(table.to_pandas(), kind, columns)


def read_results_parts(results: str | Path, kind: str = "trials", columns: list[str] | None = None,
                       exclude_tasks=()) -> pd.DataFrame:
    """Reference twin of :func:`read_results`: each part with pandas, concatenated, then selected."""
    parts = _parts(results, kind, columns)
    if not parts:
        return _empty(kind, columns)
    frames = []
    for p in parts:
        try:
            frames.append(pd.read_parquet(p))
        except Exception as e:  # noqa: BLE001
            raise ResultsError(f"cannot read result part {p}: {e}") from None
    df = pd.concat(frames, ignore_index=True)
    if exclude_tasks and "task" in df:
        df = df[~df["task"].isin(list(exclude_tasks))].reset_index(drop=True)
    return _conform_columns(df, kind, columns)


def _parts(results, kind, columns=None) -> list[Path]:
    if kind not in KINDS:
        raise ResultsError(f"kind={kind!r}: allowed {KINDS}")
    dtypes = TRIAL_DTYPES if kind == "trials" else SUMMARY_DTYPES
    unknown = [c for c in columns or () if c not in dtypes]
    if unknown:
        raise ResultsError(f"columns={unknown}: not in the {kind} schema ({', '.join(dtypes)})")
    folder = Path(results) / kind
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def _empty(kind, columns) -> pd.DataFrame:
    dtypes = TRIAL_DTYPES if kind == "trials" else SUMMARY_DTYPES
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in dtypes.items() if columns is None or c in columns})


def _scan(parts: list[Path], columns, exclude_tasks):
    """One arrow table of ``parts`` (in their order) over the union of their schemas."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    factory = ds.FileSystemDatasetFactory(pafs.LocalFileSystem(), [str(p.resolve()) for p in parts],
                                          ds.ParquetFileFormat())
    schema = factory.inspect(promote_options="permissive", fragments=None)  # every part's columns, not the first's
    dataset = factory.finish(schema)
    cols = None if columns is None else [c for c in columns if c in schema.names]
    filt = ~pc.field("task").isin(list(exclude_tasks)) if exclude_tasks and "task" in schema.names else None
    return dataset.to_table(columns=cols, filter=filt)


def _conform_columns(df: pd.DataFrame, kind: str, columns) -> pd.DataFrame:
    if columns is None:
        return conform(df, kind)
    dtypes = TRIAL_DTYPES if kind == "trials" else SUMMARY_DTYPES
    for col in columns:
        if col not in df:
            if dtypes[col] != "string":
                raise ResultsError(f"{kind} table lacks required column {col!r}")
            df[col] = ""
    return df[list(columns)].astype({c: dtypes[c] for c in columns})


def label_runs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tell apart runs of one ``model_id`` with different identities (``IDENTITY`` columns), so that they are
    never pooled: model rows get ``observer`` = the model id when the table holds one identity for it,
    else the model id followed by the identity fields that differ, e.g. ``timm:resnet18 [weights=random:seed=0]``.
    Returns the relabelled table and one row per (model_id, identity): ``observer``, the identity columns,
    ``runs`` and ``mixed`` (whether the model id has several identities here). Human rows are unchanged.

    Text forms and labels are made once per distinct (identity, run) and per distinct identity, not per trial
    row (a zoo sweep has millions); :func:`label_runs_reference` is the plain twin, row by row."""
    df = _identity_filled(df)
    cols = ["model_id", *IDENTITY]
    is_model = (df["observer_type"] == "model") if "observer_type" in df else pd.Series(True, index=df.index)
    models = df.loc[is_model, cols]
    # dropping repeated (identity, run) rows first changes neither the groups nor their distinct run counts
    ident = _identity_table(df.loc[is_model, cols + ["run_id"]].drop_duplicates().astype(str), cols)
    if len(ident):
        code = models.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
        first = models.iloc[np.unique(code, return_index=True)[1]]  # one row per distinct identity
        key = first[cols[0]].astype(str)
        for col in cols[1:]:
            key = key + "\x1f" + first[col].astype(str)
        lab = dict(zip(ident[cols].astype(str).agg("\x1f".join, axis=1), ident["observer"]))
        df.loc[is_model, "observer"] = key.map(lab).to_numpy()[code]
    return df, ident[["model_id", "observer", *IDENTITY, "runs", "mixed"]]


def _identity_filled(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with every identity field present and filled: an absent column and an empty value (<NA>) both
    read as "" (not recorded), so such rows still get an observer label instead of dropping silently out of
    every statistic (grouping skips missing keys). A model row (``observer_type``) without a ``model_id`` is an
    error."""
    df = df.copy()
    for col in IDENTITY:
        df[col] = df[col].fillna("") if col in df else ""
    if "model_id" in df and "observer_type" in df:  # (without observer_type a row may be a human's)
        bad = df.index[(df["observer_type"] == "model") & (df["model_id"].isna() | (df["model_id"].astype(str) == ""))]
        if len(bad):
            raise ResultsError(f"{len(bad)} model trial row(s) have no model_id (first: row {bad[0]}); "
                               "every model result must name its model")
    return df


def _identity_table(runs: pd.DataFrame, cols: list) -> pd.DataFrame:
    """One row per (model_id, identity) of ``runs`` (text columns ``cols`` + ``run_id``): ``runs`` (distinct
    run ids), ``observer`` (the model id, or with the identity fields that differ) and ``mixed``."""
    ident = runs.groupby(cols, as_index=False).agg(runs=("run_id", "nunique"))
    ident["observer"] = ident["model_id"]
    n_values = ident.groupby("model_id")[list(IDENTITY)].nunique()  # per model id: how many values per field
    for mid, r in n_values[(n_values > 1).any(axis=1)].iterrows():  # only model ids with several identities
        differ = [c for c in IDENTITY if r[c] > 1]
        rows = ident.index[ident["model_id"] == mid]
        ident.loc[rows, "observer"] = [mid + " [" + ", ".join(f"{c}={v[c]}" for c in differ) + "]"
                                       for _, v in ident.loc[rows].iterrows()]
    ident["mixed"] = ident.groupby("model_id")["observer"].transform("nunique") > 1
    return ident


def label_runs_reference(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The plain twin of :func:`label_runs`: every trial row's text key built and looked up."""
    df = _identity_filled(df)
    cols = ["model_id", *IDENTITY]
    models = df[df["observer_type"] == "model"] if "observer_type" in df else df
    ident = _identity_table(models[cols + ["run_id"]].astype(str), cols)
    if len(ident):
        key = df[cols[0]].astype(str)  # column-wise concatenation: a row-wise agg(join) took minutes on a zoo sweep
        for col in cols[1:]:
            key = key + "\x1f" + df[col].astype(str)
        lab = dict(zip(ident[cols].astype(str).agg("\x1f".join, axis=1), ident["observer"]))
        is_model = (df["observer_type"] == "model") if "observer_type" in df else pd.Series(True, index=df.index)
        df.loc[is_model, "observer"] = key[is_model].map(lab).to_numpy()
    return df, ident[["model_id", "observer", *IDENTITY, "runs", "mixed"]]
