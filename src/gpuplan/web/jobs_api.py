"""The job resources under /api/v1/jobs: start a plan search and get 202 at once, follow its progress, cancel it.

POST /jobs/plan/train and /jobs/plan/infer take the bodies of /plan/train and /plan/infer and answer 202 with
the job (a plan already stored answers with a job that is done). GET /jobs/<id> is its state; once done it
carries `plan_id` and `share_url`. DELETE /jobs/<id> cancels it (its worker process is terminated).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gpuplan.errors import InputError
from gpuplan.i18n import tr
from gpuplan.service import InferPlanRequest, TrainPlanRequest
from gpuplan.web.api import ERRORS, PRIVATE, ErrorBody, ErrorDetail
from gpuplan.web.i18n import page_lang
from gpuplan.web.jobs import Job, JobPool
from gpuplan.web.plans import job_error, start_plan

__all__ = ["JobStatus", "job_of", "router", "status_json"]

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=ERRORS)

JOB_ID = Path(pattern=r"^[0-9a-f]{32}$", description="a job id (32 lowercase hex digits)")


class Progress(BaseModel):
    done: int
    total: int
    search: int = 1  # which search of the request (a serving plan searches again for its growth re-plan)
    fraction: float


class JobStatus(BaseModel):
    job_id: str
    kind: str
    state: Literal["queued", "running", "done", "failed", "cancelled"]
    elapsed_s: float
    time_limit_s: float
    phase: str
    progress: Progress | None = None
    status_url: str
    plan_id: str | None = None
    share_url: str | None = None
    error: ErrorDetail | None = None


JOB_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "no such job (jobs are kept for 10 minutes after they end)"},
    422: {"model": ErrorBody, "description": "a malformed job id"}}
START_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorBody, "description": "bad input, as the CLI words it"},
    429: {"description": "every worker is busy: try again after Retry-After seconds"}}


STATE_KEYS = {"queued": "web.job.state.queued", "running": "web.job.phase.searching", "done": "web.job.state.done",
              "failed": "web.job.state.failed", "cancelled": "web.job.state.cancelled"}


def _phase(job: Job, lang: str) -> str:
    if job.state == "running" and job.progress is None:
        return tr("web.job.phase.starting", lang)
    if job.state == "running":
        return tr("web.job.phase.searching", lang)
    return tr(STATE_KEYS[job.state], lang)


def status_json(job: Job, pool: JobPool, lang: str) -> dict[str, Any]:
    """The job as GET /api/v1/jobs/<id> answers it."""
    from gpuplan.service.checks import error_fields as error_detail

    prog = None
    if job.progress is not None:
        total = int(job.progress["total"])
        prog = {"done": int(job.progress["done"]), "total": total, "search": int(job.progress.get("search", 1)),
                "fraction": round(job.progress["done"] / total, 3) if total else 1.0}
    out: dict[str, Any] = {"job_id": job.id, "kind": job.kind, "state": job.state, "elapsed_s": job.elapsed_s(),
                           "time_limit_s": pool.time_limit, "phase": _phase(job, lang), "progress": prog,
                           "status_url": f"/api/v1/jobs/{job.id}", "plan_id": job.plan_id,
                           "share_url": f"/p/{job.plan_id}" if job.plan_id else None, "error": None}
    err = job_error(job, lang, pool.time_limit) if job.state in ("failed", "cancelled") else None
    if isinstance(err, HTTPException):
        out["error"] = err.detail
    elif isinstance(err, InputError):
        out["error"] = error_detail(err, lang)
    elif err is not None:
        out["error"] = {"field": "job", "value": job.id, "allowed": "", "hint": "",
                        "message": tr("web.job.internal", lang)}
    return out


def job_of(request: Request, job_id: str) -> Job:
    """The job with this id, or 404 worded like every API error."""
    pool: JobPool = request.app.state.jobs
    job = pool.get(job_id)
    if job is None:
        lang = page_lang(request)
        raise HTTPException(404, {"field": "job_id", "value": job_id, "allowed": tr("web.job.allowed_id", lang),
                                  "hint": tr("web.job.unknown_hint", lang),
                                  "message": tr("web.job.unknown", lang, id=job_id)})
    return job


async def _start(request: Request, req: TrainPlanRequest | InferPlanRequest, private: bool) -> JSONResponse:
    job = await start_plan(request.app, req, private)
    body = status_json(job, request.app.state.jobs, page_lang(request))
    return JSONResponse(body, status_code=202, headers={"Location": body["status_url"]})


@router.post("/plan/train", status_code=202, response_model=JobStatus, responses=START_RESPONSES)
async def start_train(req: TrainPlanRequest, request: Request, private: bool = PRIVATE) -> JSONResponse:
    """Start `gpuplan plan train` for these options in a worker process; follow `status_url`."""
    return await _start(request, req, private)


@router.post("/plan/infer", status_code=202, response_model=JobStatus, responses=START_RESPONSES)
async def start_infer(req: InferPlanRequest, request: Request, private: bool = PRIVATE) -> JSONResponse:
    """Start `gpuplan plan infer` for these options in a worker process; follow `status_url`."""
    return await _start(request, req, private)


@router.get("/{job_id}", response_model=JobStatus, responses=JOB_RESPONSES)
async def get_job(request: Request, job_id: str = JOB_ID) -> dict[str, Any]:
    """A job's state (queued, running, done, failed, cancelled), elapsed seconds, progress (accelerators searched
    of all), and `plan_id` / `share_url` once done or `error` once failed."""
    return status_json(job_of(request, job_id), request.app.state.jobs, page_lang(request))


@router.delete("/{job_id}", response_model=JobStatus, responses=JOB_RESPONSES)
async def cancel_job(request: Request, job_id: str = JOB_ID) -> dict[str, Any]:
    """Cancel a queued or running job (its worker process is terminated); an ended job is left as it ended."""
    job = job_of(request, job_id)
    pool: JobPool = request.app.state.jobs
    pool.cancel(job)
    return status_json(job, pool, page_lang(request))
