"""Import a plan's JSON export: `POST /api/v1/plans/import` (the document as the body) and the upload on `/history`.

The document is the one `GET /api/v1/plans/<id>?download=1` gives: the plan's id and share link, `kind`,
`request`, `gpuplan_version`, `catalog_version`, `title`, `created_at` and the result's own keys. It is checked
key by key (unknown keys rejected, the request read as the request model of its kind, the result rendered once
as its page renders it) and stored as a plan. The id is never taken from the file: a new plan gets a random
share id, and its request key is computed from the canonical request, the two versions and a digest of the
result, in a key space of its own (the word `imported` enters the hash), so an imported file can neither claim
another plan's id nor stand in for the plan that the server computes for the same request (a hand-edited result
would otherwise answer later requests); importing the same file again gives the plan it made the first time.
The file's own `plan_id` is only reported beside it (`file_plan_id`, `id_matches`). The imported result is kept
as the file gives it (it is not recomputed); its title says it was imported, and its page offers the recompute
button when the versions differ from the server's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.datastructures import UploadFile

from gpuplan.errors import GpuplanError, InputError
from gpuplan.service import canonical_json, request_of
from gpuplan.service.uploads import TooLarge, parse_json
from gpuplan.web.api import ERRORS
from gpuplan.web.csrf import check_form
from gpuplan.web.i18n import page_lang
from gpuplan.web.store import ID_PATTERN, SavedPlan, new_plan_id, plan_id

__all__ = ["BODY_LIMITS", "MAX_IMPORT_BYTES", "api_router", "import_plan", "router"]

MAX_IMPORT_BYTES = 2 * 1024 * 1024
API_PATH, PAGE_PATH = "/api/v1/plans/import", "/history/import"
BODY_LIMITS = {API_PATH: MAX_IMPORT_BYTES, PAGE_PATH: MAX_IMPORT_BYTES + 16 * 1024}
FILE_FIELD = "plan_file"

IMPORTED = " (imported)"  # the title of an imported plan says so
META = ("plan_id", "share_url", "kind", "request", "gpuplan_version", "catalog_version", "title", "created_at")
RESULT_KEYS = {
    "train": ("candidates_evaluated", "plans", "pareto", "best_per_hardware", "layout_family", "rejected",
              "hardware_considered", "recommended", "not_recommended", "findings", "tco", "buy_option"),
    "infer": ("model", "load", "slo", "engine", "router", "candidates_evaluated", "simulated", "plans", "rejected",
              "hardware_considered", "best_unloaded", "terms", "engine_terms", "kv_dtype", "recommended",
              "not_recommended", "what_if_rdma", "what_if_rdma_all", "what_if_pd_all", "what_if_pd",
              "parts_without_plan", "what_if_engine", "what_if_setting", "recommended_disaggregated", "findings",
              "engine_default", "length_split"),
}
HINT = "import the file a plan page's Download JSON gave (GET /api/v1/plans/<id>?download=1), unchanged"

router = APIRouter(include_in_schema=False, dependencies=[Depends(check_form)])  # forms carry the CSRF token
api_router = APIRouter(prefix="/api/v1", tags=["api"])


def _text(doc: Mapping[str, Any], key: str, limit: int, required: bool = True) -> str:
    value = doc.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > limit:
        raise InputError(field=key, value=value if isinstance(value, (str, int, float)) else type(value).__name__,
                         allowed=f"text of 1 to {limit} characters", hint=HINT)
    return value


def _check_keys(doc: Any) -> str:
    if not isinstance(doc, Mapping):
        raise InputError(field="body", value=type(doc).__name__, allowed="a JSON object (a gpuplan plan export)",
                         hint=HINT)
    kind = doc.get("kind")
    if kind not in RESULT_KEYS:
        raise InputError(field="kind", value=kind if isinstance(kind, str) else None, allowed="train, infer",
                         hint=HINT)
    allowed = (*META, *RESULT_KEYS[kind])
    for key in doc:
        if key not in allowed:
            raise InputError(field=str(key)[:80], value=None, allowed="the keys of a plan export: "
                             + ", ".join(allowed), hint=HINT)
    for key in ("request", "gpuplan_version", "catalog_version", "plans"):
        if key not in doc:
            raise InputError(field=key, value=None, allowed="present (required field)", hint=HINT)
    return str(kind)


def _check_result(kind: str, request: Mapping[str, Any], result: dict[str, Any]) -> None:
    """The result rendered once as its page renders it: a document that does not read as a plan is refused
    here (422) instead of breaking its page later."""
    from gpuplan.web import views

    if not isinstance(result.get("plans"), list):
        raise InputError(field="plans", value=type(result.get("plans")).__name__, allowed="a list of plans",
                         hint=HINT)
    try:
        views.recommendation(result, "en", kind)
        views.findings(result, "en")
        if kind == "train":
            from gpuplan.web.views_uploads import scenario

            views.train_rows(result, "en")
            views.pareto_chart(result, "en")
            scenario(dict(request), "en", result)
        else:
            from gpuplan.web.marks import marked_infer_rows

            marked_infer_rows(result, "en")
            views.infer_chart(result, "en")
    except Exception:  # any shape the views cannot read (the exception's name is not shown: it is ours, not theirs)
        raise InputError(field="plans", value=None, allowed="the result of a gpuplan plan, as its JSON export "
                         "holds it", hint=HINT) from None


def import_plan(store: Any, doc: Any) -> tuple[SavedPlan, str | None]:
    """Check an exported plan document and store it; the stored plan and the file's own id (None if absent).
    InputError naming the first field that does not follow the export's schema."""
    kind = _check_keys(doc)
    gpuplan_version = _text(doc, "gpuplan_version", 40)
    cat_version = _text(doc, "catalog_version", 40)
    title = _text(doc, "title", 200, required=False)
    file_id = doc.get("plan_id")
    if file_id is not None and not (isinstance(file_id, str) and ID_PATTERN.match(file_id)):
        raise InputError(field="plan_id", value=str(file_id)[:40], allowed="16 hex digits, or left out", hint=HINT)
    raw = doc["request"]
    if not isinstance(raw, Mapping):
        raise InputError(field="request", value=type(raw).__name__, allowed="a JSON object (the plan's inputs)",
                         hint=HINT)
    if raw.get("kind", kind) != kind:
        raise InputError(field="request.kind", value=str(raw.get("kind"))[:20], allowed=kind, hint=HINT)
    try:
        req = request_of(kind, raw)
    except InputError as exc:
        raise InputError(field=f"request.{exc.field}", value=exc.value, allowed=exc.allowed, hint=HINT) from None
    result = {k: doc[k] for k in RESULT_KEYS[kind] if k in doc}
    request = req.model_dump(mode="json")
    _check_result(kind, request, result)
    digest = hashlib.sha256(json.dumps(result, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    key = plan_id(f"{canonical_json(req)}\nimported {digest}", gpuplan_version, cat_version)
    from gpuplan.web.plans import title_of

    found = store.find(key)
    if found is not None:  # the same file again: the plan it made the first time
        return store.get(found), file_id
    name = title or title_of(req)
    saved = store.put(new_plan_id(), kind, request, result, gpuplan_version=gpuplan_version,
                      catalog_version=cat_version, title=name if name.endswith(IMPORTED) else f"{name}{IMPORTED}",
                      request_key=key)
    return saved, file_id


@api_router.post(
    "/plans/import", status_code=201,
    responses=ERRORS | {413: {"description": f"body over {MAX_IMPORT_BYTES} bytes"}},
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "description": "a plan's JSON export, unchanged"}}}}})
async def import_api(request: Request) -> Response:
    """Store a plan's JSON export (the document `GET /plans/<id>?download=1` gives, at most 2 MiB). The id is
    computed from the request and versions as for a computed plan (the file's `plan_id` is not trusted:
    `file_plan_id` and `id_matches` report it); 201 with `plan_id` and `share_url`, Location the plan's page."""
    body = await request.body()
    try:
        doc = parse_json(body, "body", MAX_IMPORT_BYTES, "a gpuplan plan export")
        saved, file_id = await run_in_threadpool(import_plan, request.app.state.store, doc)
    except TooLarge as exc:
        from gpuplan.service.checks import error_fields as error_detail

        return JSONResponse({"detail": error_detail(exc, page_lang(request))}, status_code=413)
    return JSONResponse({"plan_id": saved.id, "share_url": f"/p/{saved.id}", "file_plan_id": file_id,
                         "id_matches": file_id == saved.id}, status_code=201, headers={"Location": f"/p/{saved.id}"})


@router.post(PAGE_PATH, response_class=HTMLResponse)
async def import_page(request: Request) -> Response:
    """The history page's upload: the plan's page when it is stored, the history page with the error otherwise."""
    from gpuplan.web.pages import history_page
    from gpuplan.web.render import form_error as _form_error
    from gpuplan.web.render import render

    lang = page_lang(request)
    try:
        form = await request.form()
        up = form.get(FILE_FIELD)
        if not isinstance(up, UploadFile) or not up.filename:
            raise InputError(field=FILE_FIELD, value=None, allowed="a gpuplan plan JSON file", hint=HINT)
        data: bytes = await up.read(MAX_IMPORT_BYTES + 1)
        doc = parse_json(data, FILE_FIELD, MAX_IMPORT_BYTES, "a gpuplan plan export")
        saved, _ = await run_in_threadpool(import_plan, request.app.state.store, doc)
    except GpuplanError as exc:
        return render(request, "history.html", status=413 if isinstance(exc, TooLarge) else 422,
                      import_error=_form_error(exc, lang), **history_page(request))
    return RedirectResponse(f"/p/{saved.id}?lang={lang}", status_code=303)
