"""Plan searches in worker processes: the job resource (lifecycle, progress, cancel, time limit), 429 when every
worker is busy, /healthz while they are, bad job ids, and the form -> progress -> plan flow of the pages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_cases import FormClient, wait_for

from gpuplan.web.app import create_app

SLOW = {"train": "slow_job:run", "infer": "slow_job:run", "compare": "slow_job:run"}
ENDED = ("done", "failed", "cancelled")


@pytest.fixture()
def slow(tmp_path: Path) -> Iterator[Any]:
    """An app on an empty store whose one worker runs the stand-in search, stopped after 60 s."""
    app = create_app(f"sqlite:///{tmp_path / 'p.db'}", slots=1, time_limit=60)
    app.state.jobs.runners = dict(SLOW)
    with FormClient(app) as c:
        yield c


def test_a_plan_job_runs_to_the_stored_plan(client: Any) -> None:
    req = {"model": "llama3-8b", "tokens": 2e11, "deadline": 25, "top": 2}
    r = client.post("/api/v1/jobs/plan/train", json=req)
    assert r.status_code == 202 and r.headers["location"] == r.json()["status_url"]
    start = r.json()
    assert start["state"] in ("queued", "running") and start["plan_id"] is None and len(start["job_id"]) == 32
    done = wait_for(client, start["job_id"], ENDED)
    assert done["state"] == "done" and done["error"] is None and done["elapsed_s"] > 0
    assert done["progress"]["done"] == done["progress"]["total"] > 0 and done["progress"]["fraction"] == 1.0
    assert done["share_url"] == f"/p/{done['plan_id']}"
    assert client.get(done["share_url"]).status_code == 200
    sync = client.post("/api/v1/plan/train", json=req).json()  # the synchronous API answers from the store
    assert sync["plan_id"] == done["plan_id"] and sync["plans"]
    again = client.post("/api/v1/jobs/plan/train", json=req).json()  # stored: a job that is done at once
    assert again["state"] == "done" and again["plan_id"] == done["plan_id"] and again["job_id"] != start["job_id"]


def test_a_search_that_finds_no_plan_fails_with_the_cli_error(client: Any) -> None:
    r = client.post("/api/v1/jobs/plan/train", json={"model": "llama3-70b", "tokens": 1e13, "deadline": 0.01,
                                                      "max_devices": 8})
    failed = wait_for(client, r.json()["job_id"], ENDED)
    assert failed["state"] == "failed" and failed["error"]["field"] == "constraints"
    assert "at least one feasible plan" in failed["error"]["message"]


def test_bad_input_answers_at_once_without_a_job(client: Any) -> None:
    r = client.post("/api/v1/jobs/plan/infer", json={"model": "llama3.1-8b", "qps": -1, "ttft_p99": 2,
                                                      "tpot_p99": 0.05})
    assert r.status_code == 422 and r.json()["detail"]["field"] == "qps"
    assert client.get("/healthz").json()["busy"] == 0


def test_cancel_stops_the_worker_and_frees_the_slot(slow: Any) -> None:
    job = slow.post("/api/v1/jobs/plan/train", json={"model": "llama3-8b", "tokens": 1e12}).json()
    running = wait_for(slow, job["job_id"], ("running",) + ENDED)
    assert running["state"] == "running"
    while slow.get(f"/api/v1/jobs/{job['job_id']}").json()["progress"] is None:
        time.sleep(0.05)
    proc = slow.app.state.jobs.get(job["job_id"]).proc
    r = slow.delete(f"/api/v1/jobs/{job['job_id']}")
    assert r.status_code == 200 and r.json()["state"] == "cancelled" and r.json()["error"]["field"] == "job"
    proc.join(10)
    assert not proc.is_alive()
    assert slow.get("/healthz").json()["busy"] == 0
    assert slow.delete(f"/api/v1/jobs/{job['job_id']}").json()["state"] == "cancelled"  # cancelling again: as it is
    nxt = slow.post("/api/v1/jobs/plan/train", json={"model": "llama3-8b", "tokens": 1e12})
    assert nxt.status_code == 202 and nxt.json()["job_id"] != job["job_id"]
    slow.delete(f"/api/v1/jobs/{nxt.json()['job_id']}")


def test_time_limit_fails_the_job_and_frees_the_worker(tmp_path: Path) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'p.db'}", slots=1, time_limit=0.5)
    app.state.jobs.runners = dict(SLOW)
    with FormClient(app) as c:
        job = c.post("/api/v1/jobs/plan/infer", json={"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2,
                                                      "tpot_p99": 0.05}).json()
        failed = wait_for(c, job["job_id"], ENDED)
        assert failed["state"] == "failed" and failed["error"]["field"] == "time_limit"
        assert "0.5 s" in failed["error"]["allowed"] and "--time-limit" in failed["error"]["hint"]
        assert not app.state.jobs.get(job["job_id"]).proc.is_alive() and c.get("/healthz").json()["busy"] == 0
        r = c.post("/api/v1/plan/train", json={"model": "llama3-8b", "tokens": 1e12}, params={"lang": "zh"})
        assert r.status_code == 422 and r.json()["detail"]["field"] == "time_limit"
        assert "秒" in r.json()["detail"]["allowed"]


def test_full_pool_answers_429_and_health_still_answers(slow: Any) -> None:
    first = slow.post("/api/v1/jobs/plan/train", json={"model": "llama3-8b", "tokens": 1e12}).json()
    wait_for(slow, first["job_id"], ("running",))
    same = slow.post("/api/v1/jobs/plan/train", json={"model": "llama3-8b", "tokens": 1e12})
    assert same.status_code == 202 and same.json()["job_id"] == first["job_id"]  # one search for the same request
    for path, body in (("/api/v1/jobs/plan/train", {"model": "llama3-8b", "tokens": 2e12}),
                       ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": 3e12}),
                       ("/api/v1/compare", {"model": "llama3-8b", "tokens": 1e12,
                                            "accelerators": ["h100-sxm5-80gb", "h20-96gb"]})):
        r = slow.post(path, json=body)
        assert r.status_code == 429 and r.headers["retry-after"] == "2", path
    health = slow.get("/healthz")
    assert health.status_code == 200 and health.json()["busy"] == health.json()["slots"] == 1
    page = slow.post("/train?lang=en", data={"model": "llama3-8b", "tokens": "4e12"})
    assert page.status_code == 429 and 'id="form-error"' in page.text and "busy" in page.text
    slow.delete(f"/api/v1/jobs/{first['job_id']}")


@pytest.mark.parametrize("bad", ["xyz", "0123456789ABCDEF0123456789abcdef", "..%2F..%2Fetc%2Fpasswd", "0" * 33])
def test_malformed_job_ids_are_422_in_the_error_shape(fresh: Any, bad: str) -> None:
    for method in ("get", "delete"):
        r = getattr(fresh, method)(f"/api/v1/jobs/{bad}")
        assert r.status_code in (404, 422), r.text
        if r.status_code == 422:
            assert set(r.json()["detail"]) == {"field", "value", "allowed", "hint", "message"}
            assert r.json()["detail"]["field"] == "job_id"
    assert fresh.get(f"/jobs/{bad}").status_code == 404


def test_unknown_job_is_404_in_the_error_shape(fresh: Any) -> None:
    r = fresh.get("/api/v1/jobs/" + "0" * 32, params={"lang": "zh"})
    assert r.status_code == 404 and r.json()["detail"]["field"] == "job_id" and "没有该任务" in r.json()["detail"][
        "message"]
    assert fresh.delete("/api/v1/jobs/" + "f" * 32).status_code == 404


def test_form_shows_progress_and_cancel_then_the_plan(fresh: Any) -> None:
    r = fresh.post("/train?lang=en", data={"model": "llama3-8b", "tokens": "3e11", "deadline": "28"},
                   follow_redirects=False)
    assert r.status_code == 303
    where = r.headers["location"]
    if where.startswith("/jobs/"):
        job_id = where.split("/")[2]
        page = fresh.get(where)
        assert page.status_code in (200, 303)
        wait_for(fresh, job_id, ENDED)
        frag = fresh.get(f"/jobs/{job_id}/status")
        assert frag.headers["hx-redirect"].startswith("/p/") and 'id="job-plan"' in frag.text
        done = fresh.get(where, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == frag.headers["hx-redirect"]
        where = done.headers["location"]
    assert fresh.get(where).status_code == 200
    again = fresh.post("/train", data={"model": "llama3-8b", "tokens": "3e11", "deadline": "28"},
                       follow_redirects=False)
    assert again.headers["location"] == where  # stored: straight to the plan


def test_cancel_from_the_page_links_back_to_the_filled_in_form(slow: Any) -> None:
    r = slow.post("/serve?lang=zh", data={"model": "llama3.1-8b", "qps": "7", "ttft_p99": "2", "tpot_p99": "0.05"},
                  follow_redirects=False)
    job_id = r.headers["location"].split("/")[2]
    wait_for(slow, job_id, ("running",))
    page = slow.get(f"/jobs/{job_id}?lang=zh").text
    assert 'id="job-cancel"' in page and 'hx-get="/jobs/' in page and 'id="job-progress"' in page
    assert "取消" in page
    r = slow.post(f"/jobs/{job_id}/cancel", follow_redirects=False)
    assert r.status_code == 303
    page = slow.get(f"/jobs/{job_id}?lang=en").text
    assert 'data-state="cancelled"' in page and "hx-get" not in page and "the search was cancelled" in page
    assert 'href="/serve?model=llama3.1-8b' in page and "qps=7.0" in page
