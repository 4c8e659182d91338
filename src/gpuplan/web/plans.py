"""Compute a plan once per canonical request and versions, in a bounded number of slots, and store it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, HTTPException
from fastapi.concurrency import run_in_threadpool

from gpuplan.service import (
    InferPlanRequest,
    TrainPlanRequest,
    canonical_json,
    catalog_version,
    plan_infer_report,
    plan_train_report,
    request_of,
)
from gpuplan.web.store import SavedPlan, plan_id

T = TypeVar("T")

__all__ = ["Slots", "compute_and_store", "in_slot", "report_of", "saved_json", "title_of"]


class Slots:
    """At most `n` plan searches at once; the next one gets 429 with Retry-After instead of a queue that times out."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.busy = 0
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        async with self._lock:
            if self.busy >= self.n:
                raise HTTPException(429, "every planner slot is busy: try again shortly", headers={"Retry-After": "2"})
            self.busy += 1

    def give(self) -> None:
        self.busy -= 1


def title_of(req: TrainPlanRequest | InferPlanRequest) -> str:
    if isinstance(req, TrainPlanRequest):
        extra = f", {req.deadline:g} days" if req.deadline else ""
        return f"train {req.model}, {req.tokens:.3g} tokens, {req.method}{extra}"
    return f"serve {req.model}, {req.qps:g} req/s, p99 TTFT {req.ttft_p99:g} s, TPOT {req.tpot_p99 * 1e3:g} ms"


async def compute_and_store(app: FastAPI, req: TrainPlanRequest | InferPlanRequest) -> SavedPlan:
    """The stored plan for `req` on this gpuplan and catalog version, computed now when there is none."""
    from gpuplan import __version__

    store = app.state.store
    cat_v = await run_in_threadpool(catalog_version)
    pid = plan_id(canonical_json(req), __version__, cat_v)
    saved: SavedPlan | None = await run_in_threadpool(store.get, pid)
    if saved is not None:
        return saved
    result, report = await _plan(app, req)
    out: SavedPlan = await run_in_threadpool(
        lambda: store.put(pid, req.kind, req.model_dump(mode="json"), result, gpuplan_version=__version__,
                          catalog_version=cat_v, title=title_of(req), report=report))
    return out


async def in_slot(app: FastAPI, fn: Callable[[Any], T], req: Any) -> T:
    """`fn(req)` in a worker thread, in one of the app's planner slots (429 when all are busy)."""
    slots: Slots = app.state.slots
    await slots.take()
    try:
        return await run_in_threadpool(fn, req)
    finally:
        slots.give()


async def _plan(app: FastAPI, req: TrainPlanRequest | InferPlanRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """The CLI's --json and the report document, computed in one of the app's planner slots."""
    fn = plan_train_report if isinstance(req, TrainPlanRequest) else plan_infer_report
    return await in_slot(app, fn, req)


async def report_of(app: FastAPI, saved: SavedPlan) -> dict[str, Any]:
    """The report document of a stored plan. A plan stored before reports were kept gets it computed now, only
    while the gpuplan and catalog versions are those it was planned with (then the same inputs give the same
    plan); otherwise 409: it has to be recomputed as a new plan."""
    from gpuplan import __version__

    store = app.state.store
    doc: dict[str, Any] | None = await run_in_threadpool(store.report, saved.id)
    if doc is not None:
        return doc
    cat_v = await run_in_threadpool(catalog_version)
    if (saved.gpuplan_version, saved.catalog_version) != (__version__, cat_v):
        raise HTTPException(409, "this plan was stored before its report was kept and gpuplan or the catalog has "
                                 "changed since: recompute it with the current catalog (the button on its page)")
    _, doc = await _plan(app, request_of(saved.kind, saved.request))
    await run_in_threadpool(store.set_report, saved.id, doc)
    return doc


def saved_json(saved: SavedPlan, with_request: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"plan_id": saved.id, "share_url": f"/p/{saved.id}"}
    if with_request:
        out |= {"kind": saved.kind, "request": saved.request, "gpuplan_version": saved.gpuplan_version,
                "catalog_version": saved.catalog_version, "title": saved.title,
                "created_at": saved.created_at.isoformat()}
    return out | saved.result
