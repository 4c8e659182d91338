"""Saved plans: immutable, addressed by the hash of canonical inputs and versions, SQLite in WAL mode, migrations."""

from __future__ import annotations

import zlib
from importlib import resources
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from gpuplan.web.store import Store, database_url, plan_id


def test_ids_hash_inputs_and_both_versions() -> None:
    a = plan_id('{"model":"x"}', "0.1.0", "abc")
    assert len(a) == 16 and int(a, 16) >= 0
    assert a == plan_id('{"model":"x"}', "0.1.0", "abc")
    assert len({a, plan_id('{"model":"y"}', "0.1.0", "abc"), plan_id('{"model":"x"}', "0.2.0", "abc"),
                plan_id('{"model":"x"}', "0.1.0", "abd")}) == 4


def test_a_plan_never_changes(tmp_path: Path) -> None:
    s = Store(f"sqlite:///{tmp_path / 'p.db'}")
    first = s.put("0123456789abcdef", "train", {"m": 1}, {"r": 1}, gpuplan_version="v", catalog_version="c",
                  title="one")
    second = s.put("0123456789abcdef", "train", {"m": 2}, {"r": 2}, gpuplan_version="v", catalog_version="c",
                   title="two")
    assert second.result == first.result == {"r": 1} and s.get("0123456789abcdef").title == "one"
    assert [p.id for p in s.recent()] == ["0123456789abcdef"]


@pytest.mark.parametrize("bad", ["", "../../etc/passwd", "0123456789ABCDEF", "0123456789abcdef0", "' OR 1=1 --"])
def test_malformed_ids_find_nothing(tmp_path: Path, bad: str) -> None:
    assert Store(f"sqlite:///{tmp_path / 'p.db'}").get(bad) is None


def test_sqlite_runs_in_wal_mode_with_the_migrated_schema(tmp_path: Path) -> None:
    s = Store(f"sqlite:///{tmp_path / 'p.db'}")
    with s.engine.connect() as c:
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0002"
    assert {"id", "request_json", "result_z", "catalog_version", "report_z"} <= {
        col["name"] for col in inspect(s.engine).get_columns("plan")}
    Store(s.url)  # opening again migrates nothing and keeps the rows


def test_a_0001_database_is_upgraded_and_keeps_its_plans(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config

    s = Store(f"sqlite:///{tmp_path / 'p.db'}")
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


def test_database_url_default_and_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUPLAN_DATABASE_URL", raising=False)
    monkeypatch.setenv("GPUPLAN_DATA_DIR", str(tmp_path / "data"))
    assert database_url() == f"sqlite:///{tmp_path / 'data' / 'gpuplan.db'}" and (tmp_path / "data").is_dir()
    monkeypatch.setenv("GPUPLAN_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    assert Store().url.endswith("other.db")
