"""The access rule `GPUPLAN_AUTH` names, checked (web/auth.py enforces it; `gpuplan serve` checks it at start)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from gpuplan.errors import InputError

__all__ = ["AuthConfig", "auth_from_env"]


@dataclass(frozen=True)
class AuthConfig:
    mode: Literal["token", "proxy"]
    secret: str = ""  # token mode
    header: str = ""  # proxy mode, lower case


def auth_from_env(value: str | None = None) -> AuthConfig | None:
    """The access rule `GPUPLAN_AUTH` names (None: open); InputError naming the variable when it reads wrong."""
    raw = (os.environ.get("GPUPLAN_AUTH", "") if value is None else value).strip()
    if not raw:
        return None
    mode, _, arg = raw.partition(":")
    if mode == "token" and len(arg) >= 16:
        return AuthConfig(mode="token", secret=arg)
    if mode == "proxy" and arg and all(c.isalnum() or c == "-" for c in arg):
        return AuthConfig(mode="proxy", header=arg.lower())
    raise InputError(field="GPUPLAN_AUTH", value="<hidden>" if mode == "token" else raw[:60],
                     allowed="token:SECRET (at least 16 characters) or proxy:HEADER (e.g. proxy:X-Forwarded-User)",
                     hint="generate a token with: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
