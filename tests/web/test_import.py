"""Importing a plan's JSON export: the API and the history page's upload, the recomputed id, every error path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from web_cases import FormClient

from gpuplan.web.app import create_app
from gpuplan.web.plan_import import MAX_IMPORT_BYTES

IMPORT = "/api/v1/plans/import"


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A second server on a fresh, empty store."""
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('import')) / 'other.db'}"
    with FormClient(create_app(url)) as c:
        yield c


def _export(client: Any, pid: str) -> dict[str, Any]:
    r = client.get(f"/api/v1/plans/{pid}", params={"download": "1"})
    assert r.status_code == 200
    return dict(r.json())


def _main(html: str) -> str:
    """A plan page without the parts that name the time it was stored."""
    return re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?", "", html)


@pytest.mark.parametrize("kind", ["train", "infer"])
def test_round_trip_into_a_fresh_store_gives_the_same_plan_and_page(client: Any, other: Any, kind: str,
                                                                   train_plan: dict[str, Any],
                                                                   infer_plan: dict[str, Any]) -> None:
    src = (train_plan if kind == "train" else infer_plan)["plan_id"]
    doc = _export(client, src)
    r = other.post(IMPORT, json=doc)
    assert r.status_code == 201, r.text
    body = r.json()
    pid = body["plan_id"]
    # an imported plan lives in an id space of its own: it never stands in for the plan the server computes
    assert pid != src and body == {"plan_id": pid, "share_url": f"/p/{pid}", "file_plan_id": src,
                                   "id_matches": False}
    assert r.headers["location"] == f"/p/{pid}" and other.get(f"/p/{src}").status_code == 404
    again = _export(other, pid)
    differ = ("created_at", "plan_id", "share_url", "title")
    assert {k: v for k, v in again.items() if k not in differ} == {k: v for k, v in doc.items() if k not in differ}
    assert again["title"] == doc["title"] + " (imported)"
    # importing the export of an import gives the same id, and says so
    assert other.post(IMPORT, json=again).json() == {"plan_id": pid, "share_url": f"/p/{pid}", "file_plan_id": pid,
                                                    "id_matches": True}
    mine, theirs = _main(other.get(f"/p/{pid}?lang=en").text), _main(client.get(f"/p/{src}?lang=en").text)
    assert mine.replace(pid, src).replace(" (imported)", "") == theirs
    assert "web.plan.stale" not in other.get(f"/p/{pid}").text


def test_an_edited_import_never_answers_the_real_request(client: Any, other: Any,
                                                          train_plan: dict[str, Any]) -> None:
    """A hand-edited file (a cheaper recommendation) imported first must not be what a later request for the same
    inputs gets back."""
    doc = _export(client, train_plan["plan_id"])
    forged = json.loads(json.dumps(doc))
    forged["plans"][0]["cost_usd"] = 1.0
    imported = other.post(IMPORT, json=forged)
    assert imported.status_code == 201
    computed = other.post("/api/v1/plan/train", json=doc["request"]).json()
    assert computed["plan_id"] != imported.json()["plan_id"] and computed["plans"][0]["cost_usd"] != 1.0
    assert computed["plans"][0]["cost_usd"] == train_plan["plans"][0]["cost_usd"]


def test_history_page_upload_redirects_to_the_plan(client: Any, other: Any, train_plan: dict[str, Any]) -> None:
    page = other.get("/history?lang=zh").text
    assert "导入方案" in page and 'name="plan_file"' in page
    doc = _export(client, train_plan["plan_id"])
    r = other.post("/history/import?lang=en", files={"plan_file": ("plan.json", json.dumps(doc), "application/json")},
                   follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"].startswith("/p/") and train_plan["plan_id"] not in r.headers["location"]
    assert other.get(r.headers["location"]).status_code == 200


def test_id_is_recomputed_and_other_versions_offer_recompute(client: Any, other: Any,
                                                            train_plan: dict[str, Any]) -> None:
    doc = _export(client, train_plan["plan_id"]) | {"catalog_version": "0ld0ld0ld0ld"}
    r = other.post(IMPORT, json=doc)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["file_plan_id"] == train_plan["plan_id"] and body["id_matches"] is False
    assert body["plan_id"] != train_plan["plan_id"]
    page = other.get(f"/p/{body['plan_id']}?lang=en").text
    assert 'class="stale"' in page and "Recompute with the current catalog" in page
    # a forged id in the file changes nothing: the id comes from the inputs, versions and result
    plain = other.post(IMPORT, json=_export(client, train_plan["plan_id"])).json()["plan_id"]
    forged = _export(client, train_plan["plan_id"]) | {"plan_id": "0123456789abcdef"}
    r = other.post(IMPORT, json=forged)
    assert r.status_code == 201 and r.json()["plan_id"] == plain
    assert other.get("/p/0123456789abcdef").status_code == 404


def _detail(r: Any) -> dict[str, Any]:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert set(detail) == {"field", "value", "allowed", "hint", "message"}
    return dict(detail)


def test_errors_name_the_field(client: Any, other: Any, train_plan: dict[str, Any],
                               infer_plan: dict[str, Any]) -> None:
    doc = _export(client, train_plan["plan_id"])
    post = other.post
    assert _detail(post(IMPORT, content=b"{not json", headers={"content-type": "application/json"}))[
        "field"] == "body"
    assert _detail(post(IMPORT, content=b"", headers={"content-type": "application/json"}))["field"] == "body"
    assert _detail(post(IMPORT, json=[1, 2]))["field"] == "body"
    assert _detail(post(IMPORT, json=doc | {"extra_key": 1}))["field"] == "extra_key"
    assert _detail(post(IMPORT, json=doc | {"kind": "memory"}))["allowed"] == "train, infer"
    assert _detail(post(IMPORT, json={k: v for k, v in doc.items() if k != "request"}))["field"] == "request"
    assert _detail(post(IMPORT, json={k: v for k, v in doc.items() if k != "plans"}))["field"] == "plans"
    bad_req = doc | {"request": doc["request"] | {"no_such_option": 1}}
    assert _detail(post(IMPORT, json=bad_req))["field"] == "request.no_such_option"
    bad_value = doc | {"request": doc["request"] | {"method": "sideways"}}
    assert _detail(post(IMPORT, json=bad_value))["field"] == "request.method"
    assert _detail(post(IMPORT, json=doc | {"request": "llama"}))["field"] == "request"
    assert _detail(post(IMPORT, json=doc | {"plans": {"a": 1}}))["field"] == "plans"
    assert _detail(post(IMPORT, json=doc | {"plans": [{"accelerator": "x"}]}))["field"] == "plans"
    assert _detail(post(IMPORT, json=doc | {"gpuplan_version": ""}))["field"] == "gpuplan_version"
    assert _detail(post(IMPORT, json=doc | {"catalog_version": "x" * 41}))["field"] == "catalog_version"
    assert _detail(post(IMPORT, json=doc | {"plan_id": "../etc"}))["field"] == "plan_id"
    serving = _export(client, infer_plan["plan_id"])
    assert _detail(post(IMPORT, json=serving | {"kind": "train"}))["field"] in ("request.kind", "model")
    # nothing was stored by any of these
    assert len(other.get("/history").text) > 0


def test_too_large_is_413_in_the_error_shape(other: Any) -> None:
    big = b'{"kind": "train", "pad": "' + b"x" * MAX_IMPORT_BYTES + b'"}'
    r = other.post(IMPORT, content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["detail"]["field"] == "body"
    r = other.post("/history/import", files={"plan_file": ("p.json", big, "application/json")})
    assert r.status_code == 413


def test_history_page_errors_are_shown_in_the_page_language(other: Any) -> None:
    r = other.post("/history/import?lang=en", files={"plan_file": ("p.json", b"[1]", "application/json")})
    assert r.status_code == 422 and 'id="import-error"' in r.text and "plan export" in r.text
    r = other.post("/history/import?lang=zh", data={"x": "1"})
    assert r.status_code == 422 and 'id="import-error"' in r.text and "plan_file" in r.text
    assert "导入方案" in r.text
