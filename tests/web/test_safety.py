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


def test_static_files_are_gzipped_and_cached_pages_are_not_compressed(fresh: Any) -> None:
    plotly = fresh.get("/static/vendor/plotly-4.1.2.min.js", headers={"accept-encoding": "gzip"})
    assert plotly.headers["content-encoding"] == "gzip" and plotly.num_bytes_downloaded < 2_000_000  # of 4.8 MB
    assert plotly.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert fresh.get("/static/app.js").headers["cache-control"] == "public, max-age=3600"
    page = fresh.get("/serve", headers={"accept-encoding": "gzip"})
    assert "content-encoding" not in page.headers and "csrf_token" in page.text


def test_nan_infinity_and_huge_numbers_answer_422_naming_the_field(fresh: Any) -> None:
    for body, field in ((b'{"model": "llama3-8b", "tokens": NaN}', "tokens"),
                        (b'{"model": "llama3-8b", "tokens": 1e999}', "tokens"),
                        (b'{"model": "llama3-8b", "tokens": Infinity}', "tokens"),
                        (b'{"model": "llama3-8b", "tokens": 1e12, "max_devices": 99999999999999999999}',
                         "max_devices"),
                        (b'{"model": "llama3-8b", "tokens": 1e12, "seq_len": ' + b"9" * 5000 + b"}", "body")):
        r = fresh.post("/api/v1/plan/train", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        assert r.json()["detail"]["field"] == field
    big = fresh.post("/api/v1/memory/train", json={"model": "llama3-8b", "tp": 10**30})
    assert big.status_code == 422 and big.json()["detail"]["field"] == "tp"
    for url in ("/memory?tp=" + "9" * 40, "/memory/result?seq_len=" + "9" * 5000,
                "/compare?accelerators=h100-sxm5-80gb,h20-96gb&tokens=1e999"):
        assert fresh.get(url).status_code < 500


def test_a_long_bad_value_is_echoed_once_and_short(fresh: Any) -> None:
    r = fresh.post("/api/v1/plan/infer", json={"model": "llama3.1-8b", "qps": 1, "ttft_p99": 2, "tpot_p99": 0.1,
                                               "engine": "x" * 40})
    assert r.status_code == 422
    long = fresh.post("/api/v1/memory/train", json={"model": "llama3-8b", "recipe": "loss=" + "y" * 200_000})
    assert long.status_code in (413, 422) and len(long.content) < 4000


@pytest.mark.parametrize(("extra", "field"), [({"recipe": "loss=bogus"}, "recipe"),
                                              ({"network": "ib-ndr-9000"}, "network"),
                                              ({"provider": "no-such-cloud"}, "provider"),
                                              ({"vendor": "nvidai"}, "vendor")])
def test_a_bad_name_answers_422_before_a_job_starts(fresh: Any, extra: dict[str, str], field: str) -> None:
    r = fresh.post("/api/v1/jobs/plan/train", json={"model": "llama3-8b", "tokens": 1e12, **extra})
    assert r.status_code == 422, r.text
    assert field in r.json()["detail"]["field"]


def test_the_catalog_api_names_no_server_folder() -> None:
    from gpuplan.web.catalog_view import public_origin

    hidden = public_origin({"layer": "user", "path": "/home/ops/.config/gpuplan/catalog/quotes.yaml", "line": 3})
    assert hidden == {"layer": "user", "path": "<user>/quotes.yaml", "line": 3}
    builtin = {"layer": "builtin", "path": "<builtin>/accelerators.yaml", "line": 32}
    assert public_origin(builtin) == builtin


def test_chinese_errors_are_chinese_through_and_through(fresh: Any) -> None:
    """A validation error on a zh page says the rule and the fix in Chinese (was pydantic's English mid-sentence)."""
    cases = [({"model": "llama3-8b", "tp": 10**9}, "不大于 1000000 的数"),
             ({"model": "llama3-8b", "tp": "abc"}, "整数"), ({"model": "llama3-8b", "zz": 1}, "没有该字段")]
    for body, words in cases:
        detail = fresh.post("/api/v1/memory/train?lang=zh", json=body).json()["detail"]
        assert words in detail["message"] and "Input should" not in detail["message"], detail
        assert not any(w in detail["hint"] for w in ("send ", "remove ", "set ")), detail["hint"]
    en = fresh.post("/api/v1/memory/train?lang=en", json={"model": "llama3-8b", "tp": 10**9}).json()["detail"]
    assert "less than or equal to 1000000" in en["allowed"]
    page = fresh.get("/memory?lang=zh&tp=99999999999").text
    assert "不大于 1000000 的数" in page
