"""Body limit, security headers, no stack traces (the worker pool's 429 is in test_jobs.py)."""

from __future__ import annotations

from typing import Any

import pytest
from web_cases import FormClient

from gpuplan.web.app import MAX_BODY_BYTES, create_app


def test_body_over_the_limit_is_413(fresh: Any) -> None:
    big = b'{"model": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'
    r = fresh.post("/api/v1/memory/train", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["detail"]["field"] == "body"


def test_streamed_body_over_the_limit_is_413(fresh: Any) -> None:
    def chunks() -> Any:
        for _ in range(5):
            yield b" " * (MAX_BODY_BYTES // 2)

    r = fresh.post("/api/v1/memory/train", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


@pytest.mark.parametrize("url", ["/", "/api/v1/models", "/p/0000000000000000", "/static/app.js", "/healthz"])
def test_security_headers_everywhere(fresh: Any, url: str) -> None:
    h = fresh.get(url).headers
    assert "script-src 'self'" in h["content-security-policy"] and "unsafe-eval" not in h["content-security-policy"]
    assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
    assert "server" not in h or "uvicorn" not in h["server"].lower()


def test_a_crash_answers_500_without_a_stack_trace(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuplan.web.api as api

    def boom(_req: Any) -> None:
        raise RuntimeError("secret internal detail /home/user/file.py")

    monkeypatch.setattr(api, "run_memory_train", boom)
    with FormClient(create_app(db_url), raise_server_exceptions=False) as c:
        r = c.post("/api/v1/memory/train", json={"model": "llama3-8b"})
        assert r.status_code == 500 and r.json() == {"detail": "internal error"}
        assert "secret" not in r.text and "Traceback" not in r.text
