"""Cross-site request protection.

Forms: the double-submit token (OWASP CSRF Prevention Cheat Sheet, "Signed double-submit cookie" family): every
answer without the `gpuplan_csrf` cookie sets one (32 random bytes, HttpOnly, SameSite=Strict); every page
renders it into its forms as the hidden field `csrf_token`; a form POST whose field differs from the cookie is
refused with 403 before the form is read further. Another site can make a browser send the cookie (or, with
SameSite=Strict, not even that) but cannot read it, so it cannot put the same value in the form.

API: a body must be `application/json` (415 otherwise). A cross-site page can send `text/plain` or a form without
a CORS preflight, but not `application/json`, and the app answers no preflight, so no other site can post to it.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import HTTPException, Request
from starlette.requests import cookie_parser

__all__ = ["COOKIE", "FIELD", "check_form", "cookie_header", "new_token", "token_in"]

COOKIE = "gpuplan_csrf"
FIELD = "csrf_token"
_UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_in(cookie_header: bytes | None) -> str | None:
    """The token of a request's Cookie header (None when absent or malformed)."""
    value = cookie_parser(cookie_header.decode("latin-1")).get(COOKIE, "") if cookie_header else ""
    return value if 20 <= len(value) <= 100 and all(c.isalnum() or c in "-_" for c in value) else None


def cookie_header(token: str) -> bytes:
    return f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode()


async def check_form(request: Request) -> None:
    """Router dependency of the HTML pages: an unsafe method needs the form field to equal the cookie (403)."""
    if request.method not in _UNSAFE:
        return
    cookie = request.cookies.get(COOKIE)
    sent = ""
    ctype = request.headers.get("content-type", "")
    if ctype.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await request.form()  # cached on the request: the page reads the same form
        value = form.get(FIELD)
        sent = value if isinstance(value, str) else ""
    if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
        raise HTTPException(status_code=403, detail="csrf")
