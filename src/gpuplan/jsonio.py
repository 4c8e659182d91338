"""Read a JSON file a user names: an unreadable file or invalid JSON is an InputError naming the file, the
field it was given for, what is allowed and where the JSON breaks (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuplan.errors import InputError

__all__ = ["read_json"]


def read_json(path: Path | str, *, field: str, allowed: str) -> Any:
    """The parsed content of `path` (`~` expanded)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(field=field, value=str(p), allowed=allowed, hint=str(reason)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(field=field, value=str(p), allowed=allowed,
                         hint=f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
