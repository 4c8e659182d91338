"""One app per test session on a fresh SQLite file; one training and one serving plan computed once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="gpuplan's web dependencies are not installed (pip install -e .)")
pytest.importorskip("sqlalchemy", reason="gpuplan's web dependencies are not installed (pip install -e .)")

from web_cases import (  # noqa: F401  (re-exported for the fixtures below)
    INFER,
    TRAIN,
    FormClient,  # noqa: E402
)

from gpuplan.web.app import create_app  # noqa: E402


@pytest.fixture(scope="session")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{Path(tmp_path_factory.mktemp('web')) / 'plans.db'}"


@pytest.fixture(scope="session")
def client(db_url: str) -> Any:
    with FormClient(create_app(db_url)) as c:
        yield c


@pytest.fixture(scope="session")
def train_plan(client: Any) -> dict[str, Any]:
    r = client.post("/api/v1/plan/train", json=TRAIN)
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture(scope="session")
def infer_plan(client: Any) -> dict[str, Any]:
    r = client.post("/api/v1/plan/infer", json=INFER)
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture()
def fresh(client: Any) -> Any:
    """The session's client without cookies (the language comes from the request alone)."""
    client.cookies.clear()
    return client
