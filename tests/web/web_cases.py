"""The requests the web tests share (a module of its own: `conftest` is not importable by name across folders)."""

from __future__ import annotations

import time
from typing import Any

TRAIN = {"model": "llama3-8b", "tokens": 1e12, "deadline": 30, "top": 3}
INFER = {"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05}

SYNTHETIC_BENCH = "h100-8gpu-synthetic.json"


def bench_result(bf16_tflops: float = 740.0) -> dict[str, object]:
    """The synthetic 8 x H100 bench result (tests/fixtures/bench) with gpuplan's predictions filled in (as
    `gpuplan bench` writes them) and the 8192^3 bf16 GEMM at `bf16_tflops`: a document as uploaded."""
    import json
    from pathlib import Path

    from gpuplan.bench.predict import predictor_for, ratio
    from gpuplan.bench.records import BenchResult

    path = Path(__file__).parent.parent / "fixtures" / "bench" / SYNTHETIC_BENCH
    res = BenchResult.model_validate(json.loads(path.read_text(encoding="utf-8")))
    pred, _, _ = predictor_for("h100-sxm5-80gb", "cuda", "NVIDIA H100 80GB HBM3")
    out = []
    for m in res.measurements:
        p = m.params
        value = bf16_tflops if m.name == "gemm.bf16.square8192" else m.value
        if m.benchmark == "gemm":
            guess = pred.gemm_tflops(str(p["dtype"]), int(p["m"] or 0), int(p["n"] or 0), int(p["k"] or 0))
        elif m.benchmark == "memory":
            guess = pred.memory_gbyte_s("copy")
        else:
            guess = pred.collective(str(p["kind"]), int(p["bytes_per_rank"] or 0), int(p["ranks"] or 0), "busbw")
        out.append(m.model_copy(update={"value": value, "predicted": guess, "ratio": ratio(value, guess)}))
    return dict(res.model_copy(update={"measurements": tuple(out)}).model_dump(mode="json"))


def wait_for(client: Any, job_id: str, states: tuple[str, ...], limit_s: float = 120) -> dict[str, Any]:
    """Poll the job until it is in one of `states` (the limit only stops a hung test; nothing is timed)."""
    end = time.monotonic() + limit_s
    while True:
        body: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}").json()
        if body["state"] in states:
            return body
        assert time.monotonic() < end, body
        time.sleep(0.05)


def plan_at(client: Any, r: Any) -> str:
    """The stored plan's address a form post leads to: at once when stored, else after its job is done."""
    assert r.status_code == 303, r.text
    where: str = r.headers["location"]
    if where.startswith("/jobs/"):
        job = wait_for(client, where.removeprefix("/jobs/"), ("done", "failed", "cancelled"))
        assert job["state"] == "done", job
        where = f"/p/{job['plan_id']}"
    return where


def form_client_class() -> Any:
    """TestClient that posts forms as the app's own pages do: with the CSRF cookie it was given and the same token
    in the `csrf_token` field (tests/web/test_csrf.py checks that a form without it is refused)."""
    from fastapi.testclient import TestClient

    from gpuplan.web.csrf import COOKIE, FIELD

    class FormClient(TestClient):
        def post(self, url: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if not str(url).startswith("/api/") and (kwargs.get("json") is None) and kwargs.get("content") is None:
                if not self.cookies.get(COOKIE):
                    self.get("/login")
                data = dict(kwargs.get("data") or {})
                data.setdefault(FIELD, self.cookies.get(COOKIE))
                kwargs["data"] = data
            return super().post(url, *args, **kwargs)

    return FormClient


FormClient = form_client_class()
