"""Shared CLI plumbing: one-line errors with exit code 2, JSON output, the console."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from gpuplan.errors import InputError

__all__ = ["console", "fail", "input_error_from_validation", "print_json"]

console = Console()
err_console = Console(stderr=True)


def input_error_from_validation(exc: ValidationError, prefix: str = "") -> InputError:
    """The first pydantic error as an InputError naming the field and the rule."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "input"
    msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    return InputError(field=field, value=first.get("input"), allowed=msg)


def fail(exc: Exception) -> NoReturn:
    """Print one line naming the problem and exit with code 2."""
    if isinstance(exc, ValidationError):
        exc = input_error_from_validation(exc)
    err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def print_json(obj: Any) -> None:
    """One JSON object on stdout (no rich markup, no wrapping)."""
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")

