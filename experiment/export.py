"""Database → trial tables in the one trial schema (``eval.results.TRIAL_DTYPES``), ready for ``eval stats``.

``export(db_url, out)`` writes, per study and per completed participant, ``<out>/trials/human__<study>__<
pseudonym>.parquet`` (linked into place by ``eval.results.write_part``: re-exporting adds new participants
and never rewrites a written one) and ``<out>/humans/<study>_participants.csv|parquet`` (one row per
participant: completion, trials answered, attention-check accuracy, visits).

Rows: ``observer`` = the pseudonym (HMAC of the platform id under the study secret), ``observer_type``
``human``, ``task`` = the dataset's task name (e.g. ``3dpc/vpt``, as models' rows), ``split`` = the design's
split, ``method`` ``human``, ``item_id`` = the image path relative to the dataset folder, ``condition``
empty (as models' rows; the item id already names the condition folder), ``label``/``response`` class
names (``na`` = no answer before the deadline, an error), ``correct``; extra columns ``trial`` (position in
the test block, 1-based), ``rt`` (seconds, as model-vs-human files) and ``rt_ms``. Only test trials are
exported: practice trials and attention checks are in the participants table.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import and_, select

from . import db as D


def trial_table(engine, study: str | None = None, include_incomplete: bool = False) -> pd.DataFrame:
    """Answered test trials of ``study`` (default: every study) in the trial schema, ordered by observer
    and trial."""
    from eval.results import conform

    S, P, T = D.studies, D.participants, D.trials
    q = (select(S.c.name, S.c.task, S.c.split, P.c.pseudonym, P.c.completed_at, T.c.position, T.c.item_id,
                T.c.label, T.c.response, T.c.correct, T.c.rt_ms)
         .select_from(T.join(P, T.c.participant_id == P.c.id).join(S, P.c.study_id == S.c.id))
         .where(and_(T.c.block == "test", T.c.response.is_not(None))).order_by(S.c.name, P.c.pseudonym, T.c.position))
    if study:
        q = q.where(S.c.name == study)
    if not include_incomplete:
        q = q.where(P.c.completed_at.is_not(None))
    with engine.connect() as c:
        rows = pd.DataFrame(c.execute(q).mappings().all())
    if rows.empty:
        from eval.results import TRIAL_DTYPES

        empty = pd.DataFrame({k: pd.Series(dtype=v) for k, v in TRIAL_DTYPES.items()})
        return empty.assign(trial=pd.Series(dtype="int64"), rt=pd.Series(dtype="float64"),
                            rt_ms=pd.Series(dtype="float64"), study=pd.Series(dtype="string"))
    rows["trial"] = rows.groupby(["name", "pseudonym"]).cumcount() + 1
    df = pd.DataFrame({
        "observer": rows["pseudonym"], "observer_type": "human", "model_id": "", "task": rows["task"],
        "split": rows["split"], "method": "human", "seed": 0, "item_id": rows["item_id"], "condition": "",
        "label": rows["label"], "response": rows["response"], "score": np.nan,
        "correct": rows["correct"].astype(bool), "run_id": "human__" + rows["name"] + "__" + rows["pseudonym"],
        "trial": rows["trial"].astype("int64"), "rt": rows["rt_ms"].astype("float64") / 1000.0,
        "rt_ms": rows["rt_ms"].astype("float64"), "study": rows["name"].astype("string"),
    })
    return conform(df, "trials")


def participant_table(engine, study: str | None = None) -> pd.DataFrame:
    """One row per participant: ``study``, ``observer``, ``completed``, ``test_answered``, ``test_total``,
    ``practice_accuracy``, ``attention_checks``, ``attention_accuracy``, ``visits``, ``platform_study``."""
    S, P, T = D.studies, D.participants, D.trials
    q = (select(S.c.name, P.c.pseudonym, P.c.completed_at, P.c.visits, P.c.platform_study, T.c.block,
                T.c.response, T.c.correct)
         .select_from(T.join(P, T.c.participant_id == P.c.id).join(S, P.c.study_id == S.c.id)))
    if study:
        q = q.where(S.c.name == study)
    with engine.connect() as c:
        t = pd.DataFrame(c.execute(q).mappings().all())
    cols = ["study", "observer", "completed", "test_answered", "test_total", "practice_accuracy",
            "attention_checks", "attention_accuracy", "visits", "platform_study"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for (name, ps), g in t.groupby(["name", "pseudonym"], sort=True):
        def acc(block):
            b = g[(g["block"] == block) & g["response"].notna()]
            return float(b["correct"].astype(bool).mean()) if len(b) else float("nan")
        test = g[g["block"] == "test"]
        out.append({"study": name, "observer": ps, "completed": bool(g["completed_at"].notna().iloc[0]),
                    "test_answered": int(test["response"].notna().sum()), "test_total": len(test),
                    "practice_accuracy": acc("practice"), "attention_checks": int((g["block"] == "attention").sum()),
                    "attention_accuracy": acc("attention"), "visits": int(g["visits"].iloc[0]),
                    "platform_study": str(g["platform_study"].iloc[0])})
    return pd.DataFrame(out, columns=cols)


def export(db_url: str, out: str | Path, study: str | None = None, include_incomplete: bool = False) -> dict:
    """Write the trial parts and participants tables (see the module docstring); returns counts
    ``{"participants": written parts, "skipped": parts already present, "trials": rows written}``."""
    from eval.results import write_part
    from infra.files import safe_name, write_table

    engine = D.make_engine(db_url, create=False)  # a mistyped path is an error, not a new empty database
    D.migrate(engine)  # an old database is brought to the current schema before reading
    out = Path(out)
    trials = trial_table(engine, study, include_incomplete)
    written = skipped = rows = 0
    for rid, g in trials.groupby("run_id", sort=True):
        if write_part(out, "trials", rid, g.drop(columns=["study"])):
            written += 1
            rows += len(g)
        else:
            skipped += 1
    parts = participant_table(engine, study)
    (out / "humans").mkdir(parents=True, exist_ok=True)
    for name, g in parts.groupby("study"):
        write_table(g.reset_index(drop=True), out / "humans" / f"{safe_name(name)}_participants")
    engine.dispose()
    return {"participants": written, "skipped": skipped, "trials": rows}
