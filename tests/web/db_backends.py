"""The databases the storage tests run on: SQLite always, PostgreSQL when GPUPLAN_TEST_POSTGRES_URL names a server
(.ci/run starts one with .ci/postgres.sh); each test gets a database of its own, dropped afterwards."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["BACKENDS", "POSTGRES_ENV", "database"]

POSTGRES_ENV = "GPUPLAN_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", "postgresql"]


def database(backend: str, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database's URL on `backend` (a skip naming the reason when PostgreSQL is not there)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'plans.db'}"
        return
    server = os.environ.get(POSTGRES_ENV)
    if not server:
        pytest.skip(f"no PostgreSQL server: set {POSTGRES_ENV} (.ci/run starts one with .ci/postgres.sh)")
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[web]')")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"gpuplan_t_{secrets.token_hex(6)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
