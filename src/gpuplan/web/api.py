"""The JSON API under /api/v1: the CLI's `--json` documents for the same inputs, and saved plans.

POST /plan/train and /plan/infer answer with the CLI's document plus `plan_id` and `share_url` (the plan is
stored; the same inputs on the same versions answer from the store). POST /memory/train answers at once and
stores nothing. Bad input: 422 with the field, the value, what is allowed and a hint, as the CLI words it.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from gpuplan.service import (
    CompareRequest,
    InferPlanRequest,
    MemoryTrainRequest,
    TrainPlanRequest,
    cli_command,
    plans_csv,
    request_of,
    run_memory_train,
)
from gpuplan.web import catalog_view
from gpuplan.web.i18n import page_lang
from gpuplan.web.plans import plan_answer, report_of, run_compare_job, saved_json
from gpuplan.web.store import SavedPlan

__all__ = ["router"]



class ErrorDetail(BaseModel):
    field: str
    value: Any = None
    allowed: str
    hint: str = ""
    message: str


class ErrorBody(BaseModel):
    detail: ErrorDetail


class PlanAnswer(BaseModel):
    """The CLI's `--json` document (its keys vary by command) plus where the stored plan lives."""

    model_config = ConfigDict(extra="allow")
    plan_id: str
    share_url: str


ERRORS: dict[int | str, dict[str, Any]] = {422: {"model": ErrorBody, "description": "bad input, as the CLI words it"}}
# every operation: bad input is 422 in this shape (FastAPI's own validation shape is never sent)
router = APIRouter(prefix="/api/v1", tags=["api"], responses=ERRORS)
PRIVATE = Query(default=False, description="keep the plan out of the listings (/, /history): "
                                                   "only its share link opens it")
BUSY: dict[int | str, dict[str, Any]] = {
    429: {"description": "every worker is busy: try again after Retry-After seconds"}}


@router.post("/plan/train", response_model=PlanAnswer, responses=ERRORS | BUSY)
async def plan_train(req: TrainPlanRequest, request: Request, private: bool = PRIVATE) -> Response:
    """`gpuplan plan train --json` for these options, stored as an immutable plan."""
    return await _answer(request, req, private)


@router.post("/plan/infer", response_model=PlanAnswer, responses=ERRORS | BUSY)
async def plan_infer(req: InferPlanRequest, request: Request, private: bool = PRIVATE) -> Response:
    """`gpuplan plan infer --json` for these options (a rate and lengths), stored as an immutable plan."""
    return await _answer(request, req, private)


async def _answer(request: Request, req: TrainPlanRequest | InferPlanRequest, private: bool) -> Response:
    pid, body = await plan_answer(request.app, req, page_lang(request), private)
    return Response(body, media_type="application/json", headers={"Location": f"/p/{pid}"})


@router.post("/memory/train", responses=ERRORS)
async def memory_train(req: MemoryTrainRequest) -> dict[str, Any]:
    """`gpuplan memory train --json` for these options."""
    return run_memory_train(req)  # a closed form of about a millisecond: no thread hop


def _stored(request: Request, plan_id: str) -> SavedPlan:
    saved: SavedPlan | None = request.app.state.store.get(plan_id)
    if saved is None:
        raise HTTPException(404, "no such plan")
    return saved


def _attachment(name: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{name}"'}


@router.post("/compare", responses=ERRORS | BUSY)
async def compare(req: CompareRequest, request: Request) -> dict[str, Any]:
    """`gpuplan compare --json`: 2-4 accelerators for one training job (`tokens`) or serving load (`qps`, the SLO),
    each with its best plan, 80% band and confidence, memory headroom, porting risk and findings (not stored)."""
    return await run_compare_job(request.app, req, page_lang(request))


@router.get("/plans/{plan_id}", response_model=PlanAnswer, responses={404: {"description": "no such plan"}})
async def get_plan(plan_id: str, request: Request) -> JSONResponse:
    """A stored plan as computed (never recomputed), with its inputs and versions: the JSON export."""
    saved = _stored(request, plan_id)
    return JSONResponse(saved_json(saved, with_request=True),
                        headers=_attachment(f"gpuplan-{saved.id}.json") if request.query_params.get("download")
                        else None)


ExportFormat = Literal["html", "md", "csv", "json", "cli"]
EXPORT_TYPES = {"html": "text/html; charset=utf-8", "md": "text/markdown; charset=utf-8",
                "csv": "text/csv; charset=utf-8", "cli": "text/plain; charset=utf-8"}


@router.get("/plans/{plan_id}/export/{fmt}", response_class=Response,
            responses={200: {"content": {t.split(";")[0]: {} for t in EXPORT_TYPES.values()}
                                        | {"application/json": {}}},
                       404: {"description": "no such plan"},
                       409: {"description": "stored before reports were kept, on other versions: recompute it"}})
async def export_plan(plan_id: str, fmt: ExportFormat, request: Request) -> Response:
    """A stored plan as a file: `html` the self-contained report of `--report plan.html` (charts inline, works
    offline), `md` its Markdown, `csv` the ranked plans, `json` the stored plan, `cli` the command that
    reproduces it. Reports are in the request's language (`?lang=zh|en`, the cookie, Accept-Language)."""
    saved = _stored(request, plan_id)
    name = f"gpuplan-{saved.id}"
    if fmt == "json":
        return JSONResponse(saved_json(saved, with_request=True), headers=_attachment(f"{name}.json"))
    if fmt == "cli":
        return Response(cli_command(request_of(saved.kind, saved.request), page_lang(request)) + "\n",
                        media_type=EXPORT_TYPES[fmt])
    if fmt == "csv":
        return Response(plans_csv(saved.kind, saved.result), media_type=EXPORT_TYPES[fmt],
                        headers=_attachment(f"{name}.csv"))
    from gpuplan.render.report_io import render_report

    doc = await report_of(request.app, saved, page_lang(request))
    text = await run_in_threadpool(render_report, doc, fmt, page_lang(request))
    return Response(text, media_type=EXPORT_TYPES[fmt], headers=_attachment(f"{name}.{fmt}"))


@router.get("/validation")
async def validation() -> dict[str, Any]:
    """The shipped cross-validation result: coverage of the 80% bands, accuracy per part, per source (`sources`:
    each source's rows held out together) and per class (the rows behind them are left out)."""
    from gpuplan.estimate.uncertainty import accuracy_data, source_accuracy

    data = accuracy_data()
    return {**{k: v for k, v in data.items() if k not in ("rows", "entries")}, "sources": source_accuracy(data)}


@router.get("/catalog/{kind}")
async def catalog_list(kind: str, vendor: str | None = None, market: str | None = None,
                       min_memory_gib: float | None = None) -> dict[str, Any]:
    """`gpuplan catalog list KIND --json` with its filters."""
    return catalog_view.list_json(kind, vendor=vendor, market=market, min_memory_gib=min_memory_gib)


@router.get("/catalog/{kind}/{record_id}")
async def catalog_show(kind: str, record_id: str) -> dict[str, Any]:
    """`gpuplan catalog show ID --json`: every value with its source, confidence and date."""
    return catalog_view.show_json(kind, record_id)


@router.get("/models")
async def models() -> dict[str, Any]:
    """The model presets (gpuplan model list)."""
    return catalog_view.models_json()
