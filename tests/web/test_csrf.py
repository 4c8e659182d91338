"""Cross-site requests (issue 38): forms need the CSRF token, the API takes JSON only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gpuplan.web.app import create_app
from gpuplan.web.csrf import COOKIE, FIELD

SERVE = {"model": "llama3.1-8b", "qps": "5", "ttft_p99": "2", "tpot_p99": "0.05"}


@pytest.fixture()
def raw(db_url: str) -> Any:
    """A client that sends forms as another site would: no token unless the test adds one."""
    with TestClient(create_app(db_url)) as c:
        yield c


def test_a_page_sets_an_httponly_strict_token_and_renders_it_into_its_forms(raw: Any) -> None:
    r = raw.get("/serve?lang=en")
    cookie = r.headers["set-cookie"]
    assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    token = raw.cookies.get(COOKIE)
    assert token and len(token) >= 40 and f'name="{FIELD}" value="{token}"' in r.text
    assert raw.get("/serve").headers.get("set-cookie", "").count(COOKIE) == 0  # kept, not renewed per page


@pytest.mark.parametrize("path", ["/serve", "/train", "/history/import", "/bench", "/jobs/0123456789abcdef/cancel"])
def test_a_form_without_the_token_is_refused(raw: Any, path: str) -> None:
    raw.get("/")
    r = raw.post(f"{path}?lang=zh", data=SERVE, follow_redirects=False)
    assert r.status_code == 403 and "请刷新页面" in r.text
    forged = raw.post(path, data={**SERVE, FIELD: "x" * 43}, follow_redirects=False)
    assert forged.status_code == 403


def test_the_token_from_another_browser_does_not_pass(raw: Any, db_url: str) -> None:
    with TestClient(create_app(db_url)) as other:
        other.get("/")
        stolen_shape = other.cookies.get(COOKIE)
    raw.get("/")
    assert raw.post("/serve", data={**SERVE, FIELD: stolen_shape}, follow_redirects=False).status_code == 403


def test_a_form_with_its_token_goes_through(raw: Any) -> None:
    raw.get("/serve")
    r = raw.post("/serve", data={**SERVE, FIELD: raw.cookies.get(COOKIE)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(("/p/", "/jobs/"))


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x"])
def test_the_api_takes_json_only(raw: Any, ctype: str) -> None:
    body = json.dumps({"model": "llama3-8b", "tokens": 1e12}).encode()
    for path in ("/api/v1/plans/import", "/api/v1/plan/train", "/api/v1/memory/train"):
        r = raw.post(path, content=body, headers={"content-type": ctype})
        assert r.status_code == 415, (path, r.text)
        assert r.json()["detail"]["field"] == "content-type"
    assert raw.post("/api/v1/memory/train", content=b'{"model": "llama3-8b"}',
                    headers={"content-type": "application/json; charset=utf-8"}).status_code == 200
