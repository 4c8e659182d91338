"""One app per test session on a fresh SQLite file; one training and one serving plan computed once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra is not installed (pip install -e '.[web]')")
pytest.importorskip("sqlalchemy", reason="the web extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from gpuplan.web.app import create_app  # noqa: E402

TRAIN = {"model": "llama3-8b", "tokens": 1e12, "deadline": 30, "top": 3}
INFER = {"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05}


@pytest.fixture(scope="session")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{Path(tmp_path_factory.mktemp('web')) / 'plans.db'}"


@pytest.fixture(scope="session")
def client(db_url: str) -> Any:
    with TestClient(create_app(db_url)) as c:
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
