"""The page a plan form leads to while its search runs: progress that htmx polls, a Cancel button, then the plan.

`/jobs/<id>` shows the job; its `#job-status` fragment (`/jobs/<id>/status`) asks again every second while the
job runs and, once the plan is stored, answers with `HX-Redirect` to `/p/<id>` (without JavaScript the page
refreshes itself and redirects). A failed or cancelled job shows why and links back to its filled-in form.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gpuplan.web.csrf import check_form
from gpuplan.web.i18n import page_lang
from gpuplan.web.jobs import Job, JobPool
from gpuplan.web.jobs_api import status_json

__all__ = ["router"]

router = APIRouter(include_in_schema=False, dependencies=[Depends(check_form)])  # forms carry the CSRF token
FORMS = {"train": "/train", "infer": "/serve"}


def _view(request: Request, job: Job) -> dict[str, Any]:
    pool: JobPool = request.app.state.jobs
    status = status_json(job, pool, page_lang(request))
    form = FORMS.get(job.kind, "/")
    if job.data:
        form += "?" + urlencode({k: v if not isinstance(v, list) else ",".join(map(str, v))
                                 for k, v in job.data.items() if v is not None and k != "kind"})
    return {"job": status, "form_url": form, "ended": job.state not in ("queued", "running")}


def _job(request: Request, job_id: str) -> Job | None:
    pool: JobPool = request.app.state.jobs
    return pool.get(job_id)


def _missing(request: Request, job_id: str) -> HTMLResponse:
    from gpuplan.i18n import tr
    from gpuplan.web.render import error_page

    return error_page(request, 404, tr("web.job.unknown", page_lang(request), id=job_id[:40]))


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: str) -> Response:
    from gpuplan.web.render import render

    job = _job(request, job_id)
    if job is None:
        return _missing(request, job_id)
    if job.state == "done" and job.plan_id:
        return RedirectResponse(f"/p/{job.plan_id}", status_code=303)
    return render(request, "job.html", **_view(request, job))


@router.get("/jobs/{job_id}/status", response_class=HTMLResponse)
async def job_fragment(request: Request, job_id: str) -> Response:
    from gpuplan.web.render import render

    job = _job(request, job_id)
    if job is None:
        return _missing(request, job_id)
    resp = render(request, "_job_status.html", **_view(request, job))
    if job.state == "done" and job.plan_id:
        resp.headers["HX-Redirect"] = f"/p/{job.plan_id}"
    return resp


@router.post("/jobs/{job_id}/cancel", response_class=HTMLResponse)
async def job_cancel(request: Request, job_id: str) -> Response:
    job = _job(request, job_id)
    if job is None:
        return _missing(request, job_id)
    pool: JobPool = request.app.state.jobs
    pool.cancel(job)
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)
