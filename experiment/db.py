"""The experiment database: three tables, one engine factory, Alembic migrations.

Tables (SQLAlchemy Core; the Alembic revisions in ``experiment/migrations`` create exactly these):

* ``studies`` — one row per study (``name`` = ``design.name``): the design as JSON and its digest, the
  dataset folder and task name, and the pseudonymisation secret (or only a check value of it when the
  secret is supplied from outside, e.g. ``VANTAGE_STUDY_SECRET``).
* ``participants`` — one row per (study, pseudonym); the pseudonym is HMAC-SHA256(secret, platform id), so
  the raw platform id is never stored and the same person maps to the same row (no second attempt). The
  session token is stored as its SHA-256; ``seed`` drives that participant's randomisation and key swap.
* ``trials`` — the participant's whole plan, written when they start (``position`` 0..n-1), each row
  answered in place by one conditional UPDATE (``response IS NULL``), so a response is written when it
  is made, exactly once. ``public_id`` is a random opaque id: the only handle the browser gets.

Times are UTC; ``rt_ms`` is the browser's reaction time (image onset to key press, ``performance.now()``),
``server_ms`` the server's time from serving the trial to receiving the answer (an upper bound of the RT).
"""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import (Boolean, Column, DateTime, Float, ForeignKey, Integer, MetaData, String, Table, Text,
                        UniqueConstraint, create_engine, event)

metadata = MetaData()

studies = Table(
    "studies", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(128), nullable=False, unique=True),
    Column("design_json", Text, nullable=False),
    Column("design_digest", String(32), nullable=False),
    Column("dataset", Text, nullable=False),
    Column("task", String(256), nullable=False),
    Column("split", String(64), nullable=False),
    Column("secret", String(128), nullable=True),  # NULL when supplied from outside
    Column("secret_check", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

participants = Table(
    "participants", metadata,
    Column("id", Integer, primary_key=True),
    Column("study_id", Integer, ForeignKey("studies.id"), nullable=False),
    Column("pseudonym", String(64), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("platform_study", String(128), nullable=False, default=""),
    Column("session_hash", String(64), nullable=False, default=""),
    Column("seed", String(24), nullable=False),  # decimal uint64 (portable across back-ends)
    Column("swap_keys", Boolean, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("consented_at", DateTime(timezone=True), nullable=True),
    Column("completed_at", DateTime(timezone=True), nullable=True),
    Column("completion_code", String(64), nullable=True),
    Column("visits", Integer, nullable=False, default=1),
    UniqueConstraint("study_id", "pseudonym", name="uq_participant_pseudonym"),
)

trials = Table(
    "trials", metadata,
    Column("id", Integer, primary_key=True),
    Column("public_id", String(32), nullable=False, unique=True),
    Column("participant_id", Integer, ForeignKey("participants.id"), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("block", String(16), nullable=False),  # practice | test | attention
    Column("item_id", Text, nullable=False),
    Column("label", String(256), nullable=False),
    Column("shown_at", DateTime(timezone=True), nullable=True),
    Column("response", String(256), nullable=True),
    Column("response_key", String(32), nullable=True),
    Column("correct", Boolean, nullable=True),
    Column("rt_ms", Float, nullable=True),
    Column("server_ms", Float, nullable=True),
    Column("responded_at", DateTime(timezone=True), nullable=True),
    UniqueConstraint("participant_id", "position", name="uq_trial_position"),
)


SCHEMES = ("sqlite:///", "postgresql://", "postgresql+psycopg://")


def make_engine(url: str, create: bool = True):
    """An engine for ``url`` (``sqlite:///file.db`` or ``postgresql://...``; psycopg 3 is used for the
    latter). SQLite runs in WAL mode with a busy timeout, so concurrent writers wait instead of failing.
    ``create=False`` (reading an existing study, e.g. ``export``): a SQLite file that does not exist is an
    error instead of a new empty database (and folder). Any other kind of URL is a ``ValueError`` naming the
    supported ones (a ``mysql://`` URL would otherwise fail on its missing driver)."""
    if not isinstance(url, str) or not url.startswith(SCHEMES):
        raise ValueError(f"db={url}: not a supported database URL; use sqlite:///<file>.db or "
                         "postgresql://<user>@<host>[:<port>]/<database>")
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            if not create and not Path(path).is_file():
                raise ValueError(f"db={url}: no such database file {path!r} (check the path; export reads an "
                                 "existing study database)")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(conn, _record):  # why: readers never block the writer; writers queue for 30 s
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
        return engine
    return create_engine(url, pool_size=10, max_overflow=30, pool_pre_ping=True)


def migrate(engine) -> None:
    """Bring the database to the newest schema revision (Alembic ``upgrade head``)."""
    import logging

    from alembic import command
    from alembic.config import Config

    logging.getLogger("alembic").setLevel(logging.WARNING)  # why: keep the CLI's output to what the user needs
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
