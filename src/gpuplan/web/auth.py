"""Optional access control for a team: `GPUPLAN_AUTH` (unset: open, as on a laptop's loopback).

* `GPUPLAN_AUTH=token:SECRET` - a shared token. The API takes `Authorization: Bearer SECRET`; a browser signs in
  once on `/login` (the token typed into a form with its CSRF field) and keeps an HttpOnly, SameSite=Strict
  session cookie holding HMAC-SHA256(SECRET, "gpuplan session"), never the token itself.
* `GPUPLAN_AUTH=proxy:HEADER` - single sign-on (OIDC) done by a reverse proxy in front of the app (oauth2-proxy,
  Pomerium, a cloud load balancer): every request must carry the header the proxy sets for a signed-in user
  (e.g. `X-Forwarded-User`, `X-Auth-Request-Email`). The proxy must strip that header from clients' requests and
  be the only way to reach the app (docs/web.md, "Access control").

`/healthz`, `/static/*` and `/login` stay open. A refused API request answers 401 JSON; a page redirects to
`/login` (token mode) or answers 401 (proxy mode).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote

from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gpuplan.service.access import AuthConfig, auth_from_env

__all__ = ["SESSION_COOKIE", "AuthConfig", "AuthGate", "auth_from_env", "safe_next", "session_value"]

SESSION_COOKIE = "gpuplan_session"
OPEN_PREFIXES = ("/healthz", "/static/", "/login")


def session_value(secret: str) -> str:
    return hmac.new(secret.encode(), b"gpuplan session", hashlib.sha256).hexdigest()


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path on this site only (never `//host` or a scheme)."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


class AuthGate:
    """Pure ASGI middleware enforcing an AuthConfig."""

    def __init__(self, app: ASGIApp, config: AuthConfig) -> None:
        self.app = app
        self.config = config

    def allowed(self, headers: dict[bytes, bytes]) -> bool:
        c = self.config
        if c.mode == "proxy":
            return bool(headers.get(c.header.encode(), b"").strip())
        bearer = headers.get(b"authorization", b"").decode("latin-1")
        if bearer.startswith("Bearer ") and hmac.compare_digest(bearer[7:].strip().encode(), c.secret.encode()):
            return True
        session = cookie_parser(headers.get(b"cookie", b"").decode("latin-1")).get(SESSION_COOKIE, "")
        return bool(session) and hmac.compare_digest(session.encode(), session_value(c.secret).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.allowed(headers):
            await self.app(scope, receive, send)
            return
        resp: Response
        if path.startswith("/api/") or path == "/openapi.json" or self.config.mode == "proxy":
            hint = ("send the header Authorization: Bearer <the team's token>" if self.config.mode == "token"
                    else "sign in through the team's proxy")
            resp = JSONResponse({"detail": {"field": "authorization", "value": None, "allowed": "a signed-in user",
                                            "hint": hint, "message": "sign-in required"}}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"} if self.config.mode == "token" else None)
        else:
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            resp = RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
        await resp(scope, receive, send)
