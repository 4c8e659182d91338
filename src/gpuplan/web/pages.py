"""The HTML pages, rendered on the server in the visitor's language; htmx fetches the memory answer as a fragment.

Forms post to the same service functions the API calls; a plan's page is `/p/<id>`, rendered from the stored
result only. Chart data travels as JSON in a `<script type="application/json">` block that static/app.js
draws with plotly.js (no inline script, so the CSP can forbid it).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ValidationError

from gpuplan.errors import GpuplanError, InputError
from gpuplan.i18n import tr
from gpuplan.render.traffic_text import traffic_lines
from gpuplan.service import (
    CompareRequest,
    InferPlanRequest,
    MemoryTrainRequest,
    TrainPlanRequest,
    catalog_version,
    cli_command,
    request_of,
    run_memory_train,
)
from gpuplan.service.checks import input_error_from_validation
from gpuplan.web import catalog_view, views
from gpuplan.web.csrf import check_form
from gpuplan.web.i18n import page_lang
from gpuplan.web.plans import run_compare_job, start_plan
from gpuplan.web.render import error_page, form_error, models_list, render
from gpuplan.web.store import ID_PATTERN
from gpuplan.web.views_quotes import quotes_view, with_quotes

__all__ = ["error_page", "router"]

router = APIRouter(include_in_schema=False, dependencies=[Depends(check_form)])  # forms carry the CSRF token
MAX_FIELDS = 60
JSON_FIELDS = ("hf_config", "calibration", "user_catalog")


def _request_from(cls: type[BaseModel], data: dict[str, Any], lang: str = "en") -> Any:
    """A request model from form or query fields: empty fields are left out, checkboxes are booleans, lists split."""
    fields = cls.model_fields
    clean: dict[str, Any] = {}
    for key, value in list(data.items())[:MAX_FIELDS]:
        if key not in fields or key == "kind" or value in ("", None):
            continue
        ann = str(fields[key].annotation)
        if key in JSON_FIELDS and isinstance(value, str):  # a hidden field carrying uploaded content as JSON
            clean[key] = _json_field(key, value)
        elif ann == "<class 'bool'>":
            clean[key] = value in ("on", "true", "1", True)
        elif "list" in ann and isinstance(value, list):  # rows an upload was read into (traffic)
            clean[key] = value
        elif "list" in ann:
            clean[key] = [v for v in str(value).split(",") if v]
        else:
            clean[key] = value
    for key, f in fields.items():  # an unchecked checkbox sends nothing
        if str(f.annotation) == "<class 'bool'>" and key not in clean and f"{key}__present" in data:
            clean[key] = False
    try:
        return cls.model_validate(clean)
    except ValidationError as exc:
        raise input_error_from_validation(exc, lang=lang) from None


def _json_field(key: str, value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise InputError(field=key, value=value[:80], allowed="JSON", hint=exc.msg) from None


def _frameworks() -> list[tuple[str, str]]:
    from gpuplan.workload.frameworks import load_frameworks

    return [(p.id, p.name) for p in load_frameworks().values()]


def _engines() -> tuple[str, ...]:
    from gpuplan.workload.engines import engine_ids

    return engine_ids()


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> HTMLResponse:
    recent = request.app.state.store.recent(10)
    return render(request, "home.html", recent=recent)


@router.get("/train", response_class=HTMLResponse)
async def train_form(request: Request) -> HTMLResponse:
    return render(request, "train.html", models=models_list(), frameworks=_frameworks(),
                  values=dict(request.query_params), error=None)


@router.post("/train", response_class=HTMLResponse)
async def train_submit(request: Request) -> Response:
    from gpuplan.service.uploads import TooLarge
    from gpuplan.web.uploads import train_fields

    lang = page_lang(request)
    form: dict[str, Any] = {}
    try:
        form = await train_fields(request)
        req = _request_from(TrainPlanRequest, await with_quotes(form), lang)
        return await _start(request, req, _private(form))
    except GpuplanError as exc:
        return render(request, "train.html", status=413 if isinstance(exc, TooLarge) else 422, models=models_list(),
                      frameworks=_frameworks(), values=form, error=form_error(exc, lang))
    except HTTPException as exc:
        return render(request, "train.html", status=exc.status_code, headers=exc.headers, models=models_list(),
                      frameworks=_frameworks(), values=form, error=tr("web.job.busy", lang))


@router.get("/serve", response_class=HTMLResponse)
async def serve_form(request: Request) -> HTMLResponse:
    return render(request, "serve.html", models=models_list(), engines=_engines(), values=dict(request.query_params),
                  error=None)


@router.post("/serve", response_class=HTMLResponse)
async def serve_submit(request: Request) -> Response:
    from gpuplan.service.uploads import TooLarge
    from gpuplan.web.uploads import serve_fields

    form: dict[str, Any] = {}
    lang = page_lang(request)
    try:
        form = await serve_fields(request)
        req = _request_from(InferPlanRequest, await with_quotes(form), lang)
        return await _start(request, req, _private(form))
    except GpuplanError as exc:
        return render(request, "serve.html", status=413 if isinstance(exc, TooLarge) else 422, models=models_list(),
                      engines=_engines(), values=form, error=form_error(exc, lang))
    except HTTPException as exc:
        return render(request, "serve.html", status=exc.status_code, headers=exc.headers, models=models_list(),
                      engines=_engines(), values=form, error=tr("web.job.busy", lang))


async def _start(request: Request, req: TrainPlanRequest | InferPlanRequest, private: bool = False) -> Response:
    """The plan's page when it is stored already, else the page of the job that computes it."""
    job = await start_plan(request.app, req, private)
    where = f"/p/{job.plan_id}" if job.state == "done" and job.plan_id else f"/jobs/{job.id}"
    return RedirectResponse(where, status_code=303)


def _memory(request: Request) -> tuple[dict[str, Any] | None, str | None]:
    values = dict(request.query_params)
    if "model" not in values:
        values["model"] = "llama3-8b"
    try:
        req = _request_from(MemoryTrainRequest, values, page_lang(request))
        result = run_memory_train(req)
    except GpuplanError as exc:
        return None, form_error(exc, page_lang(request))
    return views.memory_parts(result, page_lang(request)), None


@router.get("/memory", response_class=HTMLResponse)
async def memory_page(request: Request) -> HTMLResponse:
    mem, error = _memory(request)
    values = {"model": "llama3-8b", **dict(request.query_params)}
    return render(request, "memory.html", models=models_list(), frameworks=_frameworks(), values=values, mem=mem,
                  error=error)


@router.get("/memory/result", response_class=HTMLResponse)
async def memory_fragment(request: Request) -> HTMLResponse:
    mem, error = _memory(request)
    return render(request, "_memory_result.html", mem=mem, error=error)


@router.get("/catalog", response_class=HTMLResponse)
async def catalog_page(request: Request) -> HTMLResponse:
    q = request.query_params
    kind = q.get("kind") or "accelerators"
    try:
        min_mem = float(q["min_memory_gib"]) if q.get("min_memory_gib") else None
        doc = catalog_view.list_json(kind, vendor=q.get("vendor"), market=q.get("market"), min_memory_gib=min_mem)
        error = None
    except (GpuplanError, ValueError) as exc:
        doc, error = {"kind": kind, "count": 0, "items": []}, form_error(
            exc if isinstance(exc, GpuplanError) else InputError(field="min-memory-gib", value=q.get(
                "min_memory_gib"), allowed="a number"), page_lang(request))
    return render(request, "catalog.html", doc=doc, values=dict(q), error=error,
                  kinds=("accelerators", "servers", "networks", "instances", "storage"))


@router.get("/catalog/{kind}/{record_id}", response_class=HTMLResponse)
async def catalog_record(request: Request, kind: str, record_id: str) -> HTMLResponse:
    try:
        doc = catalog_view.show_json(kind, record_id)
    except GpuplanError as exc:
        return error_page(request, 404, form_error(exc, page_lang(request)))
    return render(request, "record.html", doc=doc)


@router.get("/history", response_class=HTMLResponse)
async def history(request: Request) -> HTMLResponse:
    return render(request, "history.html", **history_page(request))


def history_page(request: Request) -> dict[str, Any]:
    """One page of the listed plans (`?page=N`, PAGE_SIZE a page, newest first; private plans are not listed)."""
    from gpuplan.web.store import PAGE_SIZE

    store = request.app.state.store
    raw = request.query_params.get("page", "1")
    page = int(raw) if raw.isdigit() and 0 < len(raw) < 7 else 1
    pages = max(1, -(-store.count_listed() // PAGE_SIZE))
    page = min(max(page, 1), pages)
    return {"recent": store.recent(PAGE_SIZE, (page - 1) * PAGE_SIZE), "page": page, "pages": pages}


def _private(form: dict[str, Any]) -> bool:
    return str(form.get("private", "")) in ("on", "true", "1")


def _command(saved: Any, lang: str = "en") -> str | None:
    """The CLI command of a stored plan (None when its request no longer reads on this gpuplan version)."""
    try:
        return cli_command(request_of(saved.kind, saved.request), lang)
    except GpuplanError:
        return None


@router.get("/p/{plan_id}", response_class=HTMLResponse)
async def plan_page(request: Request, plan_id: str) -> HTMLResponse:
    from gpuplan import __version__

    if not ID_PATTERN.match(plan_id):
        return error_page(request, 404, "no such plan")
    saved = request.app.state.store.get(plan_id)
    if saved is None:
        return error_page(request, 404, "no such plan")
    lang = page_lang(request)
    stale = saved.gpuplan_version != __version__ or saved.catalog_version != catalog_version()
    common = {"saved": saved, "stale": stale, "rec": views.recommendation(saved.result, lang, saved.kind),
              "findings": views.findings(saved.result, lang),
              "command": _command(saved, lang), "quotes": quotes_view(saved.request, saved.result)}
    if saved.kind == "train":
        from gpuplan.web.views_uploads import scenario

        return render(request, "plan_train.html", rows=views.train_rows(saved.result, lang),
                      chart=views.pareto_chart(saved.result, lang),
                      scenario=scenario(saved.request, lang, saved.result), **common)
    from gpuplan.web.marks import marked_infer_rows

    traffic = saved.result.get("purchase_mix") is not None  # plan infer --traffic: schedule and mix
    return render(request, "plan_infer.html", rows=marked_infer_rows(saved.result, lang),
                  chart=views.infer_chart(saved.result, lang),
                  traffic_lines=traffic_lines(saved.result, lang) if traffic else None,
                  traffic_chart=views.traffic_chart(saved.result, lang) if traffic else None, **common)


TRAIN_ONLY = ("tokens", "seq_len", "method", "precision", "deadline", "budget", "framework", "recipe")
SERVE_ONLY = ("qps", "ttft_p99", "tpot_p99", "input_len", "output_len", "engine")


def _accelerators() -> list[str]:
    return [str(a["id"]) for a in catalog_view.list_json("accelerators")["items"]]


@router.get("/compare", response_class=HTMLResponse)
async def compare_page(request: Request) -> HTMLResponse:
    """2-4 accelerators for one training job or serving load; the form answers on the same page (a GET, so the
    address is the share link)."""
    q = request.query_params
    values: dict[str, Any] = {k: v for k, v in q.items() if k != "accelerators"}
    picked = [a for v in q.getlist("accelerators") for a in v.split(",") if a.strip()]
    values["accelerators"] = ",".join(picked)
    job = "serve" if values.get("job") == "serve" else "train"
    ctx: dict[str, Any] = {"models": models_list(), "engines": _engines(), "accs": _accelerators(), "values": values,
                           "frameworks": _frameworks(), "picked": picked, "job": job, "error": None, "view": None,
                           "doc": None}
    if "accelerators" not in q:
        return render(request, "compare.html", **ctx)
    lang = page_lang(request)
    fields = {k: v for k, v in values.items() if k not in (SERVE_ONLY if job == "train" else TRAIN_ONLY)}
    try:
        req = _request_from(CompareRequest, fields, page_lang(request))
        doc = await run_compare_job(request.app, req, lang)
    except GpuplanError as exc:
        return render(request, "compare.html", status=422, **(ctx | {"error": form_error(exc, lang)}))
    except HTTPException as exc:
        if exc.status_code != 429:
            raise
        return render(request, "compare.html", status=429, headers=exc.headers,
                      **(ctx | {"error": tr("web.job.busy", lang)}))
    from gpuplan.web.marks import mark_compare

    view = mark_compare(doc, views.compare_view(doc, lang), lang)
    return render(request, "compare.html", **(ctx | {"doc": doc, "view": view}))


@router.get("/compare/plans", response_class=HTMLResponse)
async def compare_plans(request: Request) -> HTMLResponse:
    """Two saved plans side by side (`?plan=ID&plan=ID`): the headline of each and a diff of their inputs."""
    ids = request.query_params.getlist("plan")
    lang = page_lang(request)
    if len(ids) != 2 or ids[0] == ids[1]:
        return error_page(request, 422, form_error(InputError(
            field="plan", value=",".join(ids), allowed="two different saved plan ids",
            hint="tick two plans on the saved plans page"), lang))
    store = request.app.state.store
    pair = [store.get(i) for i in ids]
    if any(p is None for p in pair):
        return error_page(request, 404, "no such plan")
    return render(request, "compare_plans.html", pair=views.plan_pair(pair[0], pair[1], lang))


@router.get("/validation", response_class=HTMLResponse)
async def validation_page(request: Request) -> HTMLResponse:
    """Accuracy per part and per class from the shipped cross-validation result."""
    from gpuplan.estimate.uncertainty import accuracy_data

    return render(request, "validation.html", v=views.validation_view(accuracy_data(), page_lang(request)))
