"""Saved plans: immutable rows addressed by a random share id, found again by a hash of the canonical request plus
the gpuplan and catalog versions (`request_key`: the same inputs on the same versions answer from the store, but
nobody can compute a plan's address from its inputs).

SQLite in the user data folder by default (`GPUPLAN_DATA_DIR`, else `XDG_DATA_HOME/gpuplan`, else
`~/.local/share/gpuplan`), in WAL mode; any SQLAlchemy URL through `GPUPLAN_DATABASE_URL` (PostgreSQL with
psycopg 3: `postgresql+psycopg://...`). The schema is made and upgraded by the Alembic migrations in
`web/migrations` when the store opens. A stored result is never recomputed: `/p/<id>` shows what was computed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sqlite3
import threading
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Boolean, DateTime, LargeBinary, String, Text, create_engine, event, func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, deferred, mapped_column

__all__ = ["ID_PATTERN", "PAGE_SIZE", "Listed", "PlanRow", "SavedPlan", "Store", "database_url", "new_plan_id",
           "pack_json", "plan_id", "unpack_json"]

ID_PATTERN = re.compile(r"^[0-9a-f]{16}$")
PAGE_SIZE = 50  # plans per page of /history
KEEP_IN_MEMORY = 256  # stored plans kept in memory by each server process (they never change)
MIGRATION_LOCK = 0x6770_7570_6C61_6E  # a PostgreSQL advisory lock key of gpuplan's own ("gpuplan")


class Base(DeclarativeBase):
    pass


class PlanRow(Base):
    __tablename__ = "plan"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    request_json: Mapped[str] = mapped_column(Text)
    result_z: Mapped[bytes] = mapped_column(LargeBinary)
    gpuplan_version: Mapped[str] = mapped_column(String(40))
    catalog_version: Mapped[str] = mapped_column(String(40))
    title: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # the report document (`--report`) for the HTML and Markdown exports; loaded only when asked for
    report_z: Mapped[bytes | None] = deferred(mapped_column(LargeBinary, nullable=True))
    request_key: Mapped[str | None] = mapped_column(String(16), nullable=True)  # plan_id() of the inputs
    private: Mapped[bool] = mapped_column(Boolean, default=False)  # left out of the listings


@dataclass(frozen=True)
class SavedPlan:
    id: str
    kind: str
    request: dict[str, Any]
    result: dict[str, Any]
    gpuplan_version: str
    catalog_version: str
    title: str
    created_at: datetime


@dataclass(frozen=True)
class Listed:
    """A plan as the listing pages show it: read from columns, never from the stored result."""

    id: str
    kind: str
    title: str
    created_at: datetime


def new_plan_id() -> str:
    """A share id: 64 random bits as 16 hex digits (secrets), not derived from anything a visitor knows."""
    return secrets.token_hex(8)


def plan_id(canonical_request: str, gpuplan_version: str, catalog_version: str) -> str:
    """The request key: 16 hex digits of SHA-256 over the canonical request and both versions."""
    text = "\n".join((canonical_request, gpuplan_version, catalog_version))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _data_dir() -> Path:
    if os.environ.get("GPUPLAN_DATA_DIR"):
        return Path(os.environ["GPUPLAN_DATA_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gpuplan"


def database_url() -> str:
    """`GPUPLAN_DATABASE_URL`, else a SQLite file `gpuplan.db` in the user data folder (made if missing)."""
    url = os.environ.get("GPUPLAN_DATABASE_URL")
    if url:
        return url
    folder = _data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'gpuplan.db'}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """Wait up to 5 s for a lock, and use the write-ahead log. Switching a new file to WAL needs the exclusive
    lock, and SQLite answers "database is locked" at once, without waiting, where another process holds the
    write lock (it would otherwise deadlock): server processes opening a new database together meet that, so
    the switch is retried until the deadline."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=5000")
    deadline = time.monotonic() + 10.0
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    cur.close()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision, in one transaction that server processes starting
    together on a new database take in turn: PostgreSQL through an advisory lock, SQLite through BEGIN
    IMMEDIATE (Python's sqlite3 would otherwise run each CREATE TABLE on its own)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("gpuplan.web") / "migrations"))
    if engine.dialect.name == "sqlite":
        engine = _sqlite_transactional(engine)
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    finally:
        if engine.dialect.name == "sqlite":
            engine.dispose()


def _sqlite_transactional(engine: Engine) -> Engine:
    """An engine on the same SQLite file whose transactions start with BEGIN IMMEDIATE and hold DDL too."""
    out = create_engine(engine.url)

    def connect(dbapi_conn: Any, record: Any) -> None:
        _sqlite_pragmas(dbapi_conn, record)
        dbapi_conn.isolation_level = None  # the driver's own BEGIN handling off; the one below instead

    def begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    event.listen(out, "connect", connect)
    event.listen(out, "begin", begin)
    return out


class Store:
    """The plan table behind one engine."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or database_url()
        self.engine = create_engine(self.url)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        migrate(self.engine)
        self._recent: OrderedDict[str, SavedPlan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, pid: str) -> SavedPlan | None:
        """The stored plan (None when there is none); plans never change, so the last ones read are kept in
        memory and a page view of a recent plan does not read the database."""
        if not ID_PATTERN.match(pid):
            return None
        with self._lock:
            hit = self._recent.get(pid)
            if hit is not None:
                self._recent.move_to_end(pid)
                return hit
        with Session(self.engine) as s:
            row = s.get(PlanRow, pid)
            saved = None if row is None else _saved(row)
        if saved is not None:
            with self._lock:
                self._recent[pid] = saved
                while len(self._recent) > KEEP_IN_MEMORY:
                    self._recent.popitem(last=False)
        return saved

    def find(self, request_key: str, private: bool = False) -> str | None:
        """The id of a stored plan with these inputs and versions (the oldest; private ones only for a private
        request, so a private plan's address is never handed to another request)."""
        with Session(self.engine) as s:
            return s.scalar(select(PlanRow.id).where(PlanRow.request_key == request_key, PlanRow.private == private)
                            .order_by(PlanRow.created_at).limit(1))

    def put(self, pid: str, kind: str, request: dict[str, Any], result: dict[str, Any], *, gpuplan_version: str,
            catalog_version: str, title: str, report: dict[str, Any] | None = None, request_key: str | None = None,
            private: bool = False) -> SavedPlan:
        """Store a plan once; an id already stored keeps its first row (plans never change)."""
        self.put_packed(pid, kind, request, pack_json(result), None if report is None else pack_json(report),
                        gpuplan_version=gpuplan_version, catalog_version=catalog_version, title=title,
                        request_key=request_key, private=private)
        saved = self.get(pid)
        assert saved is not None
        return saved

    def put_packed(self, pid: str, kind: str, request: dict[str, Any], result_z: bytes, report_z: bytes | None, *,
                   gpuplan_version: str, catalog_version: str, title: str, request_key: str | None = None,
                   private: bool = False) -> None:
        """`put` with the result and report already packed (`pack_json`, done in the worker process that
        computed them, so the server process never encodes them)."""
        with Session(self.engine) as s:
            if s.get(PlanRow, pid) is not None:
                return
            s.add(PlanRow(id=pid, kind=kind, request_json=json.dumps(request, sort_keys=True), result_z=result_z,
                          gpuplan_version=gpuplan_version, catalog_version=catalog_version, title=title[:200],
                          created_at=datetime.now(timezone.utc), report_z=report_z,
                          request_key=request_key or pid, private=private))
            try:
                s.commit()
            except Exception:  # another request stored the same id first
                s.rollback()
                if s.get(PlanRow, pid) is None:
                    raise

    def answer_json(self, pid: str) -> bytes | None:
        """The API's answer for a stored plan (`plan_id`, `share_url`, then the stored result) as JSON text,
        built from the stored bytes without decoding them."""
        if not ID_PATTERN.match(pid):
            return None
        with Session(self.engine) as s:
            blob = s.scalar(select(PlanRow.result_z).where(PlanRow.id == pid))
        if blob is None:
            return None
        body = zlib.decompress(blob).strip()
        head = json.dumps({"plan_id": pid, "share_url": f"/p/{pid}"}).encode()
        return head if body == b"{}" else head[:-1] + b", " + body[1:]

    def report(self, pid: str) -> dict[str, Any] | None:
        """The stored report document of a plan (None when the plan or its report is missing)."""
        if not ID_PATTERN.match(pid):
            return None
        with Session(self.engine) as s:
            blob = s.scalar(select(PlanRow.report_z).where(PlanRow.id == pid))
            return None if blob is None else unpack_json(blob)

    def set_report(self, pid: str, report: dict[str, Any]) -> None:
        """Keep the report of a plan stored before reports were (only where none is stored: plans never change)."""
        with Session(self.engine) as s:
            row = s.get(PlanRow, pid)
            if row is not None and row.report_z is None:
                row.report_z = pack_json(report)
                s.commit()

    def recent(self, limit: int = PAGE_SIZE, offset: int = 0) -> list[Listed]:
        """The newest plans that are not private, from the id, kind, title and time columns alone (a listing
        never reads or unpacks a stored result)."""
        cols = (PlanRow.id, PlanRow.kind, PlanRow.title, PlanRow.created_at)
        with Session(self.engine) as s:
            rows = s.execute(select(*cols).where(PlanRow.private.is_(False))
                             .order_by(PlanRow.created_at.desc(), PlanRow.id).limit(limit).offset(offset)).all()
        return [Listed(id=r[0], kind=r[1], title=r[2], created_at=_utc(r[3])) for r in rows]

    def count_listed(self) -> int:
        with Session(self.engine) as s:
            return int(s.scalar(select(func.count()).select_from(PlanRow).where(PlanRow.private.is_(False))) or 0)


def pack_json(doc: dict[str, Any]) -> bytes:
    """A document as stored: JSON, zlib-compressed."""
    return zlib.compress(json.dumps(doc).encode(), 6)


def unpack_json(blob: bytes) -> dict[str, Any]:
    return dict(json.loads(zlib.decompress(blob)))


def _saved(row: PlanRow) -> SavedPlan:
    return SavedPlan(id=row.id, kind=row.kind, request=json.loads(row.request_json),
                     result=unpack_json(row.result_z), gpuplan_version=row.gpuplan_version,
                     catalog_version=row.catalog_version, title=row.title, created_at=_utc(row.created_at))


def _utc(when: datetime) -> datetime:
    """Stored times are UTC; SQLite gives them back without a zone, PostgreSQL with one: always with one."""
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)
