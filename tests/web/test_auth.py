"""Optional access control (GPUPLAN_AUTH, issue 38): a shared token or a single-sign-on proxy's header."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from gpuplan.errors import InputError
from gpuplan.service.access import auth_from_env
from gpuplan.web.app import create_app
from gpuplan.web.auth import SESSION_COOKIE, safe_next
from gpuplan.web.csrf import COOKIE

TOKEN = "team-token-0123456789abcdef"


@pytest.fixture()
def locked(db_url: str) -> Any:
    with TestClient(create_app(db_url, auth=f"token:{TOKEN}"), follow_redirects=False) as c:
        yield c


def test_the_api_needs_the_bearer_token(locked: Any) -> None:
    r = locked.post("/api/v1/memory/train", json={"model": "llama3-8b"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert r.json()["detail"]["field"] == "authorization" and "content-security-policy" in r.headers
    wrong = locked.post("/api/v1/memory/train", json={"model": "llama3-8b"}, headers={"authorization": "Bearer x"})
    assert wrong.status_code == 401
    ok = locked.post("/api/v1/memory/train", json={"model": "llama3-8b"},
                     headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    assert locked.get("/healthz").status_code == 200 and locked.get("/static/app.css").status_code == 200


def test_a_browser_signs_in_once_and_keeps_a_session_not_the_token(locked: Any) -> None:
    r = locked.get("/history?page=2")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=%2Fhistory%3Fpage%3D2"
    page = locked.get(r.headers["location"])
    assert page.status_code == 200 and 'name="token"' in page.text
    form = {"csrf_token": locked.cookies.get(COOKIE), "next": "/history?page=2"}
    bad = locked.post("/login", data=form | {"token": "guess"})
    assert bad.status_code == 401 and SESSION_COOKIE not in bad.headers.get("set-cookie", "")
    good = locked.post("/login", data=form | {"token": TOKEN})
    assert good.status_code == 303 and good.headers["location"] == "/history?page=2"
    cookie = good.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
    assert locked.get("/history").status_code == 200
    no_csrf = locked.post("/login", data={"token": TOKEN})
    assert no_csrf.status_code == 403


def test_proxy_mode_needs_the_proxy_s_header(db_url: str) -> None:
    with TestClient(create_app(db_url, auth="proxy:X-Forwarded-User"), follow_redirects=False) as c:
        assert c.get("/").status_code == 401 and c.get("/api/v1/models").status_code == 401
        assert c.get("/", headers={"x-forwarded-user": "ana@example.com"}).status_code == 200


@pytest.mark.parametrize("bad", ["token:short", "basic:x", "proxy:", "proxy:X Forwarded"])
def test_a_bad_setting_names_the_variable(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError) as err:
        auth_from_env(bad)
    assert err.value.field == "GPUPLAN_AUTH" and "short" not in str(err.value.value)
    from gpuplan.cli.main import app

    monkeypatch.setenv("GPUPLAN_AUTH", bad)
    r = CliRunner().invoke(app, ["serve", "--port", "8123"])
    assert r.exit_code == 2 and "GPUPLAN_AUTH" in r.output


def test_sign_in_only_sends_back_to_this_site() -> None:
    assert safe_next("//evil.example/x") == "/" and safe_next("https://evil.example") == "/"
    assert safe_next("/\\evil") == "/" and safe_next("/p/0123456789abcdef") == "/p/0123456789abcdef"
    assert auth_from_env("") is None
