"""Saved plans: immutable, addressed by the hash of canonical inputs and versions, SQLite in WAL mode, migrations;
on SQLite always and on PostgreSQL when a server is given (db_backends.py)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from db_backends import BACKENDS, database
from sqlalchemy import inspect, text

from gpuplan.web.store import Store, _sqlite_pragmas, database_url, plan_id


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from database(request.param, tmp_path)


def test_ids_hash_inputs_and_both_versions() -> None:
    a = plan_id('{"model":"x"}', "0.1.0", "abc")
    assert len(a) == 16 and int(a, 16) >= 0
    assert a == plan_id('{"model":"x"}', "0.1.0", "abc")
    assert len({a, plan_id('{"model":"y"}', "0.1.0", "abc"), plan_id('{"model":"x"}', "0.2.0", "abc"),
                plan_id('{"model":"x"}', "0.1.0", "abd")}) == 4


def test_a_plan_never_changes(url: str) -> None:
    s = Store(url)
    first = s.put("0123456789abcdef", "train", {"m": 1}, {"r": 1}, gpuplan_version="v", catalog_version="c",
                  title="one")
    second = s.put("0123456789abcdef", "train", {"m": 2}, {"r": 2}, gpuplan_version="v", catalog_version="c",
                   title="two")
    assert second.result == first.result == {"r": 1} and s.get("0123456789abcdef").title == "one"
    assert [p.id for p in s.recent()] == ["0123456789abcdef"]


@pytest.mark.parametrize("bad", ["", "../../etc/passwd", "0123456789ABCDEF", "0123456789abcdef0", "' OR 1=1 --"])
def test_malformed_ids_find_nothing(url: str, bad: str) -> None:
    assert Store(url).get(bad) is None


def test_sqlite_runs_in_wal_mode_with_the_migrated_schema(tmp_path: Path) -> None:
    s = Store(f"sqlite:///{tmp_path / 'p.db'}")
    with s.engine.connect() as c:
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0003"
    assert {"id", "request_json", "result_z", "catalog_version", "report_z"} <= {
        col["name"] for col in inspect(s.engine).get_columns("plan")}
    Store(s.url)  # opening again migrates nothing and keeps the rows


def test_the_migrated_schema_on_every_backend(url: str) -> None:
    s = Store(url)
    with s.engine.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0003"
    assert {"id", "kind", "request_json", "result_z", "gpuplan_version", "catalog_version", "title", "created_at",
            "report_z", "request_key", "private"} == {col["name"] for col in inspect(s.engine).get_columns("plan")}
    assert "ix_plan_created_at" in {ix["name"] for ix in inspect(s.engine).get_indexes("plan")}
    s.put("00000000000000aa", "train", {"m": 1}, {"r": 1}, gpuplan_version="v", catalog_version="c", title="x" * 300,
          report={"kind": "train"})
    again = Store(url)  # opening again migrates nothing and keeps the rows
    got = again.get("00000000000000aa")
    assert got is not None and got.title == "x" * 200 and got.created_at.tzinfo is not None
    assert again.report("00000000000000aa") == {"kind": "train"}


def test_a_0001_database_is_upgraded_and_keeps_its_plans(url: str) -> None:
    from alembic import command
    from alembic.config import Config

    s = Store(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("gpuplan.web") / "migrations"))
    with s.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0001")
    with s.engine.begin() as conn:
        conn.execute(text("INSERT INTO plan VALUES ('00000000000000ff', 'train', '{}', :z, 'v', 'c', 't', "
                          "'2025-01-01 00:00:00')"), {"z": zlib.compress(b'{"r": 1}')})
    again = Store(s.url)
    assert again.get("00000000000000ff").result == {"r": 1} and again.report("00000000000000ff") is None
    again.set_report("00000000000000ff", {"kind": "train"})
    again.set_report("00000000000000ff", {"kind": "other"})  # kept once, never changed
    assert again.report("00000000000000ff") == {"kind": "train"}
    # 0003: the old id (a hash of the inputs) is the row's request key, and the row stays listed
    assert again.find("00000000000000ff") == "00000000000000ff" and again.find("00000000000000ff", True) is None
    assert [p.id for p in again.recent()] == ["00000000000000ff"]


def test_listings_read_columns_page_and_leave_private_plans_out(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuplan.web.store as store_mod

    s = Store(url)
    for i in range(5):
        s.put(f"{i:016x}", "train", {"m": i}, {"r": i}, gpuplan_version="v", catalog_version="c", title=f"t{i}",
              request_key=f"{i:016x}"[::-1], private=i == 2)

    def no_unpack(_blob: bytes) -> dict[str, object]:
        raise AssertionError("a listing unpacked a stored result")

    monkeypatch.setattr(store_mod, "unpack_json", no_unpack)
    assert [p.title for p in s.recent(2)] == ["t4", "t3"] and [p.title for p in s.recent(2, 2)] == ["t1", "t0"]
    assert s.count_listed() == 4 and "t2" not in [p.title for p in s.recent(10)]
    assert s.find(f"{2:016x}"[::-1]) is None and s.find(f"{2:016x}"[::-1], private=True) == f"{2:016x}"


def test_database_url_default_and_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUPLAN_DATABASE_URL", raising=False)
    monkeypatch.setenv("GPUPLAN_DATA_DIR", str(tmp_path / "data"))
    assert database_url() == f"sqlite:///{tmp_path / 'data' / 'gpuplan.db'}" and (tmp_path / "data").is_dir()
    monkeypatch.setenv("GPUPLAN_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    assert Store().url.endswith("other.db")


def _open(url: str) -> int:
    return len(Store(url).recent())


def test_server_processes_opening_a_new_database_together_migrate_once(url: str) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as ex:  # workers starting at once
        assert list(ex.map(_open, [url] * 4)) == [0, 0, 0, 0]
    with Store(url).engine.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == ["0003"]


def test_a_new_sqlite_file_switches_to_wal_once_another_process_lets_go_of_its_write_lock(tmp_path: Path) -> None:
    """Regression (CI, 2026-12-06): SQLite answers "database is locked" at once, without its busy wait, when a
    connection asks for WAL while another holds the write lock (as a server process migrating the new file
    does); the switch must wait for the lock instead of failing the process that opened second."""
    import sqlite3
    import threading

    path = tmp_path / "plans.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    opener = sqlite3.connect(path)
    try:
        _sqlite_pragmas(opener, None)
        assert opener.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert opener.execute("PRAGMA busy_timeout").fetchone() == (5000,)
    finally:
        release.join()
        opener.close()
        holder.close()


def test_the_app_plans_stores_and_shows_on_every_backend(url: str) -> None:
    from web_cases import INFER, FormClient

    from gpuplan.web.app import create_app

    with FormClient(create_app(url, slots=1)) as c:
        first = c.post("/api/v1/plan/infer", json=INFER)
        assert first.status_code == 200, first.text
        pid = first.json()["plan_id"]
        assert c.post("/api/v1/plan/infer", json=INFER).json()["plan_id"] == pid  # answered from the store
        stored = c.get(f"/api/v1/plans/{pid}").json()
        assert stored["plans"] == first.json()["plans"] and stored["created_at"].endswith("+00:00")
        assert c.get(f"/p/{pid}").status_code == 200 and pid in c.get("/history").text
        assert c.get(f"/api/v1/plans/{pid}/export/csv").text.startswith("rank,")


def test_the_api_answer_is_built_from_the_stored_bytes(url: str) -> None:
    import json

    s = Store(url)
    s.put("00000000000000a1", "train", {}, {"plans": [1, 2], "x": "中"}, gpuplan_version="v", catalog_version="c",
          title="t")
    s.put("00000000000000a2", "train", {}, {}, gpuplan_version="v", catalog_version="c", title="t")
    assert json.loads(s.answer_json("00000000000000a1") or b"") == {
        "plan_id": "00000000000000a1", "share_url": "/p/00000000000000a1", "plans": [1, 2], "x": "中"}
    assert json.loads(s.answer_json("00000000000000a2") or b"") == {"plan_id": "00000000000000a2",
                                                                      "share_url": "/p/00000000000000a2"}
    assert s.answer_json("00000000000000a3") is None and s.answer_json("../etc") is None
