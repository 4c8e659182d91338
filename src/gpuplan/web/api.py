"""The JSON API under /api/v1: the CLI's `--json` documents for the same inputs, and saved plans.

POST /plan/train and /plan/infer answer with the CLI's document plus `plan_id` and `share_url` (the plan is
stored; the same inputs on the same versions answer from the store). POST /memory/train answers at once and
stores nothing. Bad input: 422 with the field, the value, what is allowed and a hint, as the CLI words it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from gpuplan.service import InferPlanRequest, MemoryTrainRequest, TrainPlanRequest, run_memory_train
from gpuplan.web import catalog_view
from gpuplan.web.plans import compute_and_store, saved_json

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["api"])


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


@router.post("/plan/train", response_model=PlanAnswer, responses=ERRORS)
async def plan_train(req: TrainPlanRequest, request: Request) -> JSONResponse:
    """`gpuplan plan train --json` for these options, stored as an immutable plan."""
    saved = await compute_and_store(request.app, req)
    return JSONResponse(saved_json(saved), headers={"Location": f"/p/{saved.id}"})


@router.post("/plan/infer", response_model=PlanAnswer, responses=ERRORS)
async def plan_infer(req: InferPlanRequest, request: Request) -> JSONResponse:
    """`gpuplan plan infer --json` for these options (a rate and lengths), stored as an immutable plan."""
    saved = await compute_and_store(request.app, req)
    return JSONResponse(saved_json(saved), headers={"Location": f"/p/{saved.id}"})


@router.post("/memory/train", responses=ERRORS)
async def memory_train(req: MemoryTrainRequest) -> dict[str, Any]:
    """`gpuplan memory train --json` for these options."""
    return await run_in_threadpool(run_memory_train, req)


@router.get("/plans/{plan_id}", response_model=PlanAnswer, responses={404: {"description": "no such plan"}})
async def get_plan(plan_id: str, request: Request) -> JSONResponse:
    """A stored plan as computed (never recomputed), with its inputs and versions: the JSON export."""
    saved = request.app.state.store.get(plan_id)
    if saved is None:
        raise HTTPException(404, "no such plan")
    return JSONResponse(saved_json(saved, with_request=True),
                        headers={"Content-Disposition": f'attachment; filename="gpuplan-{saved.id}.json"'}
                        if request.query_params.get("download") else None)


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
