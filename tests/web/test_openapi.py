"""The OpenAPI schema says what the API sends (regressions from the schemathesis run in test_fuzz.py)."""

from __future__ import annotations

from typing import Any


def test_every_422_is_the_error_shape_the_api_sends(fresh: Any) -> None:
    spec = fresh.get("/openapi.json").json()
    seen = 0
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if "422" in op["responses"]:
                ref = op["responses"]["422"]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (method, path)
                seen += 1
    assert seen >= 10 and "HTTPValidationError" not in spec.get("components", {}).get("schemas", {})
    r = fresh.get("/api/v1/catalog/nope")  # what a 422 looks like: field, value, allowed, hint, message
    assert r.status_code == 422 and set(r.json()["detail"]) == {"field", "value", "allowed", "hint", "message"}


def test_the_json_export_is_documented(fresh: Any, train_plan: dict[str, Any]) -> None:
    spec = fresh.get("/openapi.json").json()
    documented = spec["paths"]["/api/v1/plans/{plan_id}/export/{fmt}"]["get"]["responses"]["200"]["content"]
    r = fresh.get(f"/api/v1/plans/{train_plan['plan_id']}/export/json")
    assert r.status_code == 200 and r.headers["content-type"].split(";")[0] in documented


def test_jobs_and_busy_answers_are_documented(fresh: Any) -> None:
    paths = fresh.get("/openapi.json").json()["paths"]
    assert {"get", "delete"} <= set(paths["/api/v1/jobs/{job_id}"])
    assert "202" in paths["/api/v1/jobs/plan/infer"]["post"]["responses"]
    for path in ("/api/v1/plan/train", "/api/v1/plan/infer", "/api/v1/compare", "/api/v1/jobs/plan/train"):
        assert "429" in paths[path]["post"]["responses"], path


def test_a_body_that_does_not_decode_is_422_in_the_error_shape(fresh: Any) -> None:
    r = fresh.post("/api/v1/plan/infer", content=b"\xff\xfe{\x16\xa0", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]["field"] == "body" and "UTF-8" in r.json()["detail"]["allowed"]


def test_405_names_every_method_of_the_path(fresh: Any) -> None:
    r = fresh.request("OPTIONS", "/api/v1/jobs/" + "0" * 32)
    assert r.status_code == 405 and {"GET", "DELETE"} <= set(r.headers["allow"].split(", "))
    r = fresh.request("TRACE", "/healthz")
    assert r.status_code == 405 and "GET" in r.headers["allow"].split(", ") and "Traceback" not in r.text
