"""Schemathesis against the app's own OpenAPI schema, served on loopback from a thread: no answer is a 5xx,
every answer's status code, content type and body are those the schema declares. A fixed seed and a small budget per
operation keep it to CI size; GPUPLAN_FUZZ_EXAMPLES and GPUPLAN_FUZZ_SEARCH_EXAMPLES raise it (docs/web.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed (pip install -e '.[dev]')")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from gpuplan.web.app import create_app  # noqa: E402

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# plan searches take a second or more in a worker process: a few examples each, the rest the full budget
SEARCHES = ("/api/v1/plan/", "/api/v1/jobs/plan/", "/api/v1/compare")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app under uvicorn in a thread on a free loopback port (one event loop, as when served), its URL."""
    import socket
    import threading
    import time

    import uvicorn

    app = create_app(f"sqlite:///{Path(tmp_path_factory.mktemp('fuzz')) / 'p.db'}", slots=2, time_limit=10)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    end = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < end
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(30)


def _known(plan_id: str, job_id: str) -> Any:
    """Values that exist on the server, drawn in place of generated ones half the time, so that cases get past
    the name checks and reach the work behind them (a preset model, a catalog kind and record, a stored plan,
    a job)."""
    from hypothesis import strategies as st

    def maybe(*values: Any) -> Any:
        return st.sampled_from([None, *values])

    return st.fixed_dictionaries({
        "model": maybe("llama3-8b", "llama3.1-8b", "qwen2.5-7b"),
        "accelerators": maybe(["h100-sxm5-80gb", "h20-96gb"], ["ascend-910b", "a100-sxm4-80gb", "h20-96gb"]),
        "accelerator": maybe("h100-sxm5-80gb", "h20-96gb"),
        "kind": maybe("accelerators", "servers", "networks", "instances", "storage"),
        "record_id": maybe("h100-sxm5-80gb", "h20-96gb"),
        "plan_id": maybe(plan_id), "job_id": maybe(job_id)})


def _apply(case: Any, known: dict[str, Any]) -> None:
    for key, value in known.items():
        if value is None:
            continue
        if isinstance(case.body, dict) and key in case.body:
            case.body[key] = value
        if case.path_parameters and key in case.path_parameters:
            case.path_parameters[key] = value


def _fuzz(base_url: str, searches: bool, examples: int, plan_id: str, job_id: str) -> list[str]:
    """Every operation of one group (plan searches or the rest) with `examples` generated cases each; the
    failures, one line per operation."""
    from hypothesis import given

    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    # NUL characters in strings, and invalid data (wrong types, out-of-range values) besides valid cases: every
    # answer still a declared 4xx, never a 5xx (NaN and 64-bit overflows: test_fuzz_values.py)
    schema.config.generation.update(allow_x00=True, modes=["positive", "negative"])
    failures: list[str] = []
    for result in schema.get_all_operations():
        op = result.ok()
        if op.path.startswith(SEARCHES) != searches:
            continue

        @given(case=op.as_strategy(), known=_known(plan_id, job_id))
        @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck), print_blob=False)
        def run(case: Any, known: dict[str, Any]) -> None:
            _apply(case, known)
            r = case.call()
            if searches and r.status_code == 429:  # every worker busy with an earlier example's search
                assert r.headers.get("retry-after") == ["2"]
                return
            case.validate_response(r, checks=CHECKS)

        try:
            run()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # hypothesis raises exception groups; every operation runs, failures are listed
            inner = getattr(exc, "exceptions", ())
            failures.append(f"{op.label}: {type(exc).__name__}: {str(exc)[:2000]} "
                            + " | ".join(str(e)[:2000] for e in inner))
    return failures


@pytest.fixture(scope="module")
def stored(served: str) -> tuple[str, str]:
    """A stored plan's id and a job's id for the cases to refer to."""
    import httpx

    body = {"model": "llama3-8b", "tokens": 1e11, "top": 2}
    job = httpx.post(f"{served}/api/v1/jobs/plan/train", json=body, timeout=120).json()
    plan = httpx.post(f"{served}/api/v1/plan/train", json=body, timeout=120).json()
    return str(plan["plan_id"]), str(job["job_id"])


def test_api_answers_as_its_schema_says(served: str, stored: tuple[str, str]) -> None:
    assert _fuzz(served, False, int(os.environ.get("GPUPLAN_FUZZ_EXAMPLES", "25")), *stored) == []


def test_plan_searches_answer_as_their_schema_says(served: str, stored: tuple[str, str]) -> None:
    assert _fuzz(served, True, int(os.environ.get("GPUPLAN_FUZZ_SEARCH_EXAMPLES", "4")), *stored) == []
