"""Uploads: the bench page (`/bench`) and `POST /api/v1/bench`, and the training form's config.json.

A bench result is read from the uploaded bytes (never a path), checked against its schema (extra keys rejected)
and shown measured vs predicted with the calibration `gpuplan calibrate` would write for it; its re-plan form
posts that calibration with the training form, so the stored plan carries it. A config.json uploaded on the
training form becomes the request's `hf_config` (its name the plan's model name).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import UploadFile

from gpuplan.bench.records import BenchResult
from gpuplan.errors import GpuplanError
from gpuplan.service.bench_upload import bench_answer, read_result, safe_name
from gpuplan.service.uploads import MAX_BENCH_BYTES, MAX_CONFIG_BYTES, TooLarge, config_name, parse_json
from gpuplan.web.api import ErrorBody
from gpuplan.web.csrf import check_form
from gpuplan.web.i18n import page_lang

__all__ = ["BODY_LIMITS", "api_router", "router", "serve_fields", "train_fields"]

router = APIRouter(include_in_schema=False, dependencies=[Depends(check_form)])  # forms carry the CSRF token
api_router = APIRouter(prefix="/api/v1", tags=["api"])
# request body limits above the app's default, per path (a multipart form adds its boundaries and headers)
BODY_LIMITS = {"/api/v1/bench": MAX_BENCH_BYTES, "/bench": MAX_BENCH_BYTES + 16 * 1024}
CONFIG_FILE = "hf_config_file"
HIST_FILES = {"input_hist_file": "input_dist", "output_hist_file": "output_dist"}
MAX_HIST_BYTES = 16 * 1024  # 256 rows of low,high,weight
TRAFFIC_FILE = "traffic_file"  # the serving form's traffic CSV (plan infer --traffic)


@api_router.post("/bench", responses={413: {"description": f"body over {MAX_BENCH_BYTES} bytes"},
                                      422: {"model": ErrorBody,
                                            "description": "not a bench result (the first key that does not follow "
                                                           "the schema, unknown keys included)"}})
async def bench_api(result: BenchResult, request: Request,
                    accelerator: str | None = Query(default=None, max_length=100,
                                                    description="catalog id to calibrate (gpuplan calibrate "
                                                                "--accelerator); default: the one the result names"),
                    ) -> dict[str, Any]:
    """A `gpuplan bench --out` result (the JSON document as the body, at most 1 MiB): `bench`, what it measured
    beside gpuplan's prediction for the same part (the headline rows of `gpuplan report --bench`); `calibration`,
    the terms `gpuplan calibrate` would write for it (null with `calibration_error` for a CPU run or a result
    without a catalog part), to send as `calibration` with `POST /api/v1/plan/train`; `terms`, each measured
    term beside the value the server's estimates use today. Nothing is stored or written."""
    answer: dict[str, Any] = await run_in_threadpool(bench_answer, result, "bench-result.json", accelerator,
                                                     page_lang(request))
    return answer


async def _read_upload(up: UploadFile, limit: int) -> bytes:
    """At most `limit` + 1 bytes of an uploaded file (one more tells it is over the limit)."""
    data: bytes = await up.read(limit + 1)
    return data


def _render(request: Request, status: int = 200, **extra: Any) -> HTMLResponse:
    from gpuplan.web.render import models_list, render

    ctx: dict[str, Any] = {"answer": None, "error": None, "models": models_list(), "values": {},
                           "limit_kib": MAX_BENCH_BYTES // 1024} | extra
    return render(request, "bench.html", status=status, **ctx)


@router.get("/bench", response_class=HTMLResponse)
async def bench_page(request: Request) -> HTMLResponse:
    return _render(request)


@router.post("/bench", response_class=HTMLResponse)
async def bench_upload(request: Request) -> Response:
    """The uploaded result measured vs predicted, its calibration and the re-plan form."""
    from gpuplan.web.views_uploads import bench_view

    lang = page_lang(request)
    form = await request.form()
    up = form.get("result")
    accelerator = str(form.get("accelerator") or "").strip()[:100] or None
    values = {"accelerator": accelerator or ""}
    try:
        if not isinstance(up, UploadFile) or not up.filename:
            from gpuplan.errors import InputError

            raise InputError(field="result", value=None, allowed="a gpuplan bench result JSON file",
                             hint="choose the file gpuplan bench --out wrote")
        result = read_result(await _read_upload(up, MAX_BENCH_BYTES))
        answer = await run_in_threadpool(bench_answer, result, safe_name(up.filename), accelerator, lang)
    except GpuplanError as exc:
        from gpuplan.web.render import form_error as _form_error

        return _render(request, status=413 if isinstance(exc, TooLarge) else 422, values=values,
                       error=_form_error(exc, lang))
    return _render(request, answer=bench_view(answer, lang), values=values,
                   calibration_json=json.dumps(answer["calibration"], separators=(",", ":"))
                   if answer["calibration"] else "")


async def train_fields(request: Request) -> dict[str, Any]:
    """The training form's fields; an uploaded config.json read into `hf_config`, its name into `model`
    (TooLarge over 64 KiB, InputError naming the key the parser misses)."""
    form = await request.form()
    fields: dict[str, Any] = {k: v for k, v in form.items() if not isinstance(v, UploadFile)}
    up = form.get(CONFIG_FILE)
    if isinstance(up, UploadFile) and up.filename:
        cfg = parse_json(await _read_upload(up, MAX_CONFIG_BYTES), "hf_config", MAX_CONFIG_BYTES,
                         "a Hugging Face config.json")
        fields["model"] = await run_in_threadpool(config_name, cfg, safe_name(up.filename, "config.json"))
        fields["hf_config"] = cfg
    return fields


async def serve_fields(request: Request) -> dict[str, Any]:
    """The serving form's fields; an uploaded length-histogram CSV becomes the inline bins of `input_dist` or
    `output_dist` (the upload's bytes are read, never a path; TooLarge over 16 KiB, InputError naming the file's
    field otherwise)."""
    from gpuplan.search.infer_traffic import MAX_TRAFFIC_BYTES
    from gpuplan.service.uploads import histogram_bins, traffic_rows

    form = await request.form()
    fields: dict[str, Any] = {k: v for k, v in form.items() if not isinstance(v, UploadFile)}
    for name, target in HIST_FILES.items():
        up = form.get(name)
        if isinstance(up, UploadFile) and up.filename:
            fields[target] = histogram_bins(await _read_upload(up, MAX_HIST_BYTES), name, MAX_HIST_BYTES)
    up = form.get(TRAFFIC_FILE)
    if isinstance(up, UploadFile) and up.filename:  # a day's or week's rates: the curve sets the rate, not qps
        fields["traffic"] = traffic_rows(await _read_upload(up, MAX_TRAFFIC_BYTES), TRAFFIC_FILE, MAX_TRAFFIC_BYTES)
        fields.pop("qps", None)
    return fields
