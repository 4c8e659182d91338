"""The FastAPI application: middleware (body limit, security headers, language cookie), error mapping, routes.

Errors: `InputError` and request validation answer 422 with field, value, allowed, hint and the CLI's line;
any other error answers 500 with a fixed text (never a stack trace); logs never hold request bodies.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpuplan.errors import GpuplanError, InputError
from gpuplan.i18n import LANGS, tr
from gpuplan.service.checks import error_fields, rule_text
from gpuplan.web import csrf
from gpuplan.web.i18n import page_lang
from gpuplan.web.render import error_page, render

__all__ = ["DEFAULT_TIME_LIMIT_S", "MAX_BODY_BYTES", "app_from_env", "create_app"]

MAX_BODY_BYTES = 256 * 1024
DEFAULT_TIME_LIMIT_S = 120.0
log = logging.getLogger("gpuplan.web")

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                    (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"),
                    (b"cross-origin-opener-policy", b"same-origin")]


class Guard:
    """Pure ASGI middleware: 413 past the body limit (declared or streamed; `limits` raises it for named paths,
    the uploads), security headers on every answer, the `lang` cookie set when `?lang=` names a catalog language."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY_BYTES, limits: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.max_body = max_body
        self.limits = dict(limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        limit = self.limits.get(scope.get("path", ""), self.max_body)
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _too_large(scope, receive, send, limit)
            return
        lang = _query_lang(scope.get("query_string", b""))
        method, path = scope.get("method", ""), scope.get("path", "")
        if path.startswith("/api/") and method in ("POST", "PUT", "PATCH") and not _json_body(headers):
            await _not_json(scope, receive, send)
            return
        # pages and their forms carry the CSRF token; API calls, static files and probes need none
        page = not path.startswith(("/api/", "/static/", "/healthz", "/openapi.json"))
        token = csrf.token_in(headers.get(b"cookie")) if page else ""
        fresh_token = page and token is None
        if page:
            scope.setdefault("state", {})["csrf"] = token = token or csrf.new_token()
        if declared is None and scope.get("method") in ("POST", "PUT", "PATCH"):
            # no declared length (chunked): read the body here, up to the limit, and hand it on whole
            chunks, seen, more = [], 0, True
            while more:
                msg = await receive()
                if msg["type"] != "http.request":
                    break
                chunks.append(msg.get("body", b""))
                seen += len(chunks[-1])
                if seen > limit:
                    await _too_large(scope, receive, send, limit)
                    return
                more = bool(msg.get("more_body"))
            body = b"".join(chunks)
            sent = False

            async def replay() -> Message:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            receive = replay

        async def send_with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                hs = list(msg.get("headers") or [])
                hs += SECURITY_HEADERS
                if path.startswith("/static/"):
                    hs.append((b"cache-control", _cache_control(path)))
                if lang:
                    hs.append((b"set-cookie", f"lang={lang}; Path=/; Max-Age=31536000; SameSite=Lax".encode()))
                if fresh_token and token:
                    hs.append((b"set-cookie", csrf.cookie_header(token)))
                msg = {**msg, "headers": hs}
            await send(msg)

        await self.app(scope, receive, send_with_headers)


def _cache_control(path: str) -> bytes:
    """Vendored files carry their version in their name and never change: a year, immutable. The app's own
    script and styles change with a release: an hour, then revalidated (StaticFiles answers ETag/304)."""
    if path.startswith("/static/vendor/"):
        return b"public, max-age=31536000, immutable"
    return b"public, max-age=3600"


def _json_body(headers: Mapping[bytes, bytes]) -> bool:
    """The API takes JSON only: a body's content type is application/json (any charset), or there is no body."""
    ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if ctype == b"application/json":
        return True
    return not ctype and headers.get(b"content-length", b"0") == b"0" and b"transfer-encoding" not in headers


async def _not_json(scope: Scope, receive: Receive, send: Send) -> None:
    resp = JSONResponse({"detail": {"field": "content-type", "value": None, "allowed": "application/json",
                                    "hint": "send the body as JSON with the header Content-Type: application/json",
                                    "message": "the API takes JSON bodies only"}}, status_code=415,
                        headers={k.decode(): v.decode() for k, v in SECURITY_HEADERS})
    await resp(scope, receive, send)


def _query_lang(qs: bytes) -> str | None:
    for part in qs.decode("latin-1").split("&"):
        k, _, v = part.partition("=")
        if k == "lang" and v in LANGS:
            return v
    return None


async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int = MAX_BODY_BYTES) -> None:
    resp = JSONResponse({"detail": {"field": "body", "value": None, "allowed": f"at most {limit} bytes",
                                    "hint": "send a smaller body: split the upload or trim the file",
                                    "message": "request body too large"}}, status_code=413,
                        headers={k.decode(): v.decode() for k, v in SECURITY_HEADERS})
    await resp(scope, receive, send)


def _from_validation(exc: RequestValidationError, lang: str = "en") -> InputError:
    first = exc.errors()[0] if exc.errors() else {}
    if first.get("type") == "json_invalid":  # the body is not JSON: say where, not a bare position as the field
        pos = next((p for p in first.get("loc", ()) if isinstance(p, int)), None)
        why = (first.get("ctx") or {}).get("error", "decode error")
        return InputError(field="body", value=f"character {pos}" if pos is not None else None,
                          allowed=tr("web.valid.json", lang), hint=tr("web.valid.json_hint", lang, why=why))
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    value = first.get("input")
    if isinstance(value, dict):
        value = None
    field = ".".join(loc) or "body"
    kind = str(first.get("type", ""))
    return InputError(field=field, value=value, allowed=rule_text(first, lang),
                      hint=tr(f"web.valid.hint.{_hint_kind(kind)}", lang, field=field))


def _hint_kind(kind: str) -> str:
    """The fix for a pydantic error type (pydantic docs, 'Validation Errors'): every 4xx names one."""
    if kind in ("missing", "extra_forbidden"):
        return kind
    if kind.endswith(("_parsing", "_type")):
        return "type"
    if kind in ("literal_error", "enum"):
        return "choice"
    if kind.startswith(("greater_than", "less_than")) or kind in ("multiple_of", "finite_number"):
        return "range"
    if kind.startswith(("too_short", "too_long", "string_too")):
        return "length"
    return "other"


def create_app(database_url: str | None = None, slots: int = 2, time_limit: float = DEFAULT_TIME_LIMIT_S,
               auth: str | None = None) -> FastAPI:
    """The whole app; `database_url` defaults to GPUPLAN_DATABASE_URL or the SQLite file in the data folder;
    `slots` worker processes run searches, each stopped after `time_limit` seconds; `auth` (default
    GPUPLAN_AUTH) is the access rule of web/auth.py."""
    from gpuplan import __version__
    from gpuplan.web import api, job_pages, jobs_api, login, pages, plan_import, uploads
    from gpuplan.web.auth import AuthGate, auth_from_env
    from gpuplan.web.jobs import JobPool
    from gpuplan.web.store import Store

    pool = JobPool(slots, time_limit)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await pool.close()

    # /api/docs is served below from vendored Swagger UI (FastAPI's own page loads it from a CDN, which the CSP
    # blocks and which is unreachable offline)
    app = FastAPI(title="gpuplan", version=__version__, docs_url=None, redoc_url=None, lifespan=lifespan,
                  description="Which GPU servers or cloud instances to rent or buy for LLM training and serving. "
                              "The API answers with the same JSON as the CLI's --json.")
    access = auth_from_env(auth)
    if access is not None:  # inside Guard: a refusal still gets the security headers
        app.add_middleware(AuthGate, config=access)
    app.add_middleware(Guard, limits=uploads.BODY_LIMITS | plan_import.BODY_LIMITS)
    app.state.auth = access
    app.state.store = Store(database_url)
    app.state.jobs = pool
    static = resources.files("gpuplan.web") / "static"
    # static files gzip-compressed (plotly is 4.8 MB, 1.4 MB gzipped); pages are not (their CSRF token beside
    # reflected input would invite BREACH-style guessing)
    app.mount("/static", GZipMiddleware(StaticFiles(directory=str(static)), minimum_size=1024), name="static")
    app.include_router(api.router)
    app.include_router(uploads.api_router)
    app.include_router(plan_import.api_router)
    app.include_router(jobs_api.router)
    app.include_router(pages.router)
    app.include_router(uploads.router)
    app.include_router(job_pages.router)
    app.include_router(plan_import.router)
    app.include_router(login.router)

    @app.get("/api/docs", include_in_schema=False)
    async def api_docs(request: Request) -> HTMLResponse:
        return render(request, "api_docs.html")

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, Any]:
        """Liveness: answers while every worker process is busy."""
        return {"status": "ok", "version": __version__, "busy": pool.busy, "slots": pool.slots,
                "time_limit_s": pool.time_limit}

    @app.exception_handler(GpuplanError)
    async def on_input(request: Request, exc: GpuplanError) -> Response:
        return _error(request, exc, 422)

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> Response:
        return _error(request, _from_validation(exc, page_lang(request)), 422)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        api = request.url.path.startswith("/api/")
        if api and exc.status_code == 400:  # a body that does not decode: bad input like any other
            return _error(request, InputError(field="body", value=None, allowed="a JSON object in UTF-8",
                                              hint="the body is not valid JSON, or holds a number too long to read "
                                                   "(past 4,300 digits)"), 422)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method of the path, not only those of the first route that matched it
            headers["Allow"] = ", ".join(_methods(app, request))
        if api or exc.status_code == 429:
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)
        message = str(exc.detail)
        if exc.status_code == 403 and exc.detail == "csrf":
            message = tr("web.csrf", page_lang(request))
        page = error_page(request, exc.status_code, message)
        page.headers.update(headers)
        return page

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": "internal error"}, status_code=500)
        return error_page(request, 500, "internal error")

    return app


def app_from_env() -> FastAPI:
    """The app for uvicorn's workers (`gpuplan serve` starts them with `--factory`): the worker count and time limit
    come from GPUPLAN_SLOTS and GPUPLAN_TIME_LIMIT."""
    import os

    return create_app(slots=int(os.environ.get("GPUPLAN_SLOTS", "2")),
                      time_limit=float(os.environ.get("GPUPLAN_TIME_LIMIT", DEFAULT_TIME_LIMIT_S)))


def _methods(app: FastAPI, request: Request) -> list[str]:
    from starlette.routing import Match, Route

    found: set[str] = set()
    todo = list(app.routes)
    while todo:
        route = todo.pop()
        inner = getattr(route, "original_router", None)  # an included router: its own routes
        if inner is not None:
            todo += inner.routes
        elif isinstance(route, Route) and route.methods and route.matches(request.scope)[0] != Match.NONE:
            found |= route.methods
    return sorted(found)


def _error(request: Request, exc: Exception, status: int) -> Response:
    lang = page_lang(request)
    detail = error_fields(exc, lang)
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": detail}, status_code=status)
    resp: HTMLResponse = error_page(request, status, detail["message"])
    return resp
