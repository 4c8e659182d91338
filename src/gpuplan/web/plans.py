"""Compute a plan once per canonical request and versions, in the app's pool of worker processes, and store it."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.concurrency import run_in_threadpool

from gpuplan.errors import InputError
from gpuplan.i18n import tr
from gpuplan.service import (
    CompareRequest,
    InferPlanRequest,
    TrainPlanRequest,
    canonical_json,
    catalog_version,
    request_of,
)
from gpuplan.service.run import check_plan_infer, check_plan_train
from gpuplan.web.jobs import Job, JobPool
from gpuplan.web.store import SavedPlan, new_plan_id, plan_id, unpack_json

__all__ = ["job_error", "plan_answer", "report_of", "run_compare_job", "saved_json", "start_plan", "title_of"]

PlanRequest = TrainPlanRequest | InferPlanRequest


def title_of(req: PlanRequest) -> str:
    if isinstance(req, TrainPlanRequest):
        extra = f", {req.deadline:g} days" if req.deadline else ""
        return f"train {req.model}, {req.tokens:.3g} tokens, {req.method}{extra}"
    rate = f"{req.qps:g} req/s" if req.qps is not None else (
        f"traffic peak {max(r.qps for r in req.traffic):g} req/s" if req.traffic else "no rate")
    return f"serve {req.model}, {rate}, p99 TTFT {req.ttft_p99:g} s, TPOT {req.tpot_p99 * 1e3:g} ms"


def _check(req: PlanRequest) -> None:
    if isinstance(req, TrainPlanRequest):
        check_plan_train(req)
    else:
        check_plan_infer(req)


async def start_plan(app: FastAPI, req: PlanRequest, private: bool = False) -> Job:
    """A job that ends with `req`'s plan stored: one that is done already when a plan for the same inputs and
    versions is in the store, the running one for the same request, or a new one (429 when every slot is busy).
    A new plan gets a random share id; a `private` one is left out of the listings. Bad numbers and names answer
    at once (InputError), before any search."""
    from gpuplan import __version__

    await run_in_threadpool(_check, req)
    store = app.state.store
    cat_v = await run_in_threadpool(catalog_version)
    key = plan_id(canonical_json(req), __version__, cat_v)
    pool: JobPool = app.state.jobs
    found: str | None = await run_in_threadpool(store.find, key, private)
    if found is not None:
        return pool.done_job(req.kind, found)

    async def keep(job: Job) -> None:
        packed = job.answer
        pid = new_plan_id()
        await run_in_threadpool(
            lambda: store.put_packed(pid, req.kind, req.model_dump(mode="json"), packed["result_z"],
                                     packed["report_z"], gpuplan_version=__version__, catalog_version=cat_v,
                                     title=title_of(req), request_key=key, private=private))
        job.plan_id, job.answer = pid, None

    return pool.submit(req.kind, req.model_dump(mode="json"), key=f"{key}:{'private' if private else 'listed'}",
                       on_done=keep)


def job_error(job: Job, lang: str, time_limit: float) -> Exception | None:
    """Why an ended job has no answer, as the error the API raises (None when it is done): the search's own
    InputError, the time limit as one (422), cancel as 409, anything else as an internal error (500)."""
    if job.state == "done":
        return None
    if job.error is not None:
        return job.error
    if job.failure == "time_limit":
        return InputError(field="time_limit", value=time_limit,
                          allowed=tr("web.job.time_limit_allowed", lang, s=f"{time_limit:g}"),
                          hint=tr("web.job.time_limit_hint", lang))
    if job.state == "cancelled":
        return HTTPException(409, {"field": "job", "value": job.id, "allowed": "", "hint": "",
                                   "message": tr("web.job.cancelled", lang)})
    return RuntimeError("the worker process failed")


async def _wait(app: FastAPI, job: Job, lang: str) -> Job:
    await job.ended.wait()
    err = job_error(job, lang, app.state.jobs.time_limit)
    if err is not None:
        raise err
    return job


async def plan_answer(app: FastAPI, req: PlanRequest, lang: str = "en", private: bool = False) -> tuple[str, bytes]:
    """The plan id and the API's JSON answer for `req`: from the store, computed now when it is not there."""
    job = await _wait(app, await start_plan(app, req, private), lang)
    body: bytes | None = await run_in_threadpool(app.state.store.answer_json, job.plan_id)
    if job.plan_id is None or body is None:
        raise RuntimeError("a finished plan is missing from the store")
    return job.plan_id, body


async def run_compare_job(app: FastAPI, req: CompareRequest, lang: str = "en") -> dict[str, Any]:
    """`gpuplan compare --json` computed in a worker process (429 when every slot is busy)."""
    pool: JobPool = app.state.jobs
    job = await _wait(app, pool.submit("compare", req.model_dump(mode="json")), lang)
    out: dict[str, Any] = job.answer
    return out


async def report_of(app: FastAPI, saved: SavedPlan, lang: str = "en") -> dict[str, Any]:
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
    req = request_of(saved.kind, saved.request)
    pool: JobPool = app.state.jobs
    job = await _wait(app, pool.submit(req.kind, req.model_dump(mode="json")), lang)
    doc = unpack_json(job.answer["report_z"])
    await run_in_threadpool(store.set_report, saved.id, doc)
    return doc


def saved_json(saved: SavedPlan, with_request: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"plan_id": saved.id, "share_url": f"/p/{saved.id}"}
    if with_request:
        out |= {"kind": saved.kind, "request": saved.request, "gpuplan_version": saved.gpuplan_version,
                "catalog_version": saved.catalog_version, "title": saved.title,
                "created_at": saved.created_at.isoformat()}
    return out | saved.result
