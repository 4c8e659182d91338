"""`/login`: a browser signs in with the team's shared token (GPUPLAN_AUTH=token:..., web/auth.py)."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gpuplan.i18n import tr
from gpuplan.web.auth import SESSION_COOKIE, safe_next, session_value
from gpuplan.web.csrf import check_form
from gpuplan.web.i18n import page_lang
from gpuplan.web.render import render

__all__ = ["router"]

router = APIRouter(include_in_schema=False, dependencies=[Depends(check_form)])


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request) -> HTMLResponse:
    return render(request, "login.html", next=safe_next(request.query_params.get("next")), error=None,
                  mode=getattr(request.app.state.auth, "mode", None))


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    auth = request.app.state.auth
    form = await request.form()
    target = safe_next(str(form.get("next") or ""))
    token = str(form.get("token") or "")
    if auth is None or auth.mode != "token":
        return RedirectResponse(target, status_code=303)
    if not hmac.compare_digest(token.encode(), auth.secret.encode()):
        return render(request, "login.html", status=401, next=target, mode=auth.mode,
                      error=tr("web.login.wrong", page_lang(request)))
    resp = RedirectResponse(target, status_code=303)
    secure = "; Secure" if request.url.scheme == "https" else ""
    resp.headers.append("set-cookie", f"{SESSION_COOKIE}={session_value(auth.secret)}; Path=/; HttpOnly; "
                                      f"SameSite=Strict; Max-Age=2592000{secure}")
    return resp
