"""Shared CLI plumbing: one-line errors with exit code 2 (framed in the --lang language), JSON output, the console,
the `--lang` option."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

from gpuplan.i18n import help_text
from gpuplan.service.checks import error_line, input_error_from_validation, positive, positives, ui_lang

__all__ = ["LANG_OPT", "console", "error_line", "fail", "flag", "input_error_from_validation", "note", "positive",
           "positives", "print_json", "ui_lang", "warn"]

LANG_OPT = typer.Option(None, "--lang", help=help_text("help.common.lang"))


def flag(default: bool | None, *decls: str, **kwargs: Any) -> Any:
    """A boolean option written as a bare switch (`--json`, `--domestic-only`, `--x/--no-x`): shown without the
    `<bool>` metavar typer prints by default, which invites `--domestic-only true` (an "unexpected extra
    argument" error)."""
    return typer.Option(default, *decls, metavar="", **kwargs)

console = Console()
err_console = Console(stderr=True)


def fail(exc: Exception, lang: str | None = None) -> NoReturn:
    """Print one line naming the problem (framed in `lang`, default the locale's) and exit with code 2."""
    err_console.print(error_line(exc, ui_lang(lang)), markup=False, highlight=False, soft_wrap=True, style="red")
    raise typer.Exit(code=2)


def warn(text: str | None) -> None:
    """One warning line on stderr (nothing for None), so --json output on stdout stays clean."""
    if text:
        err_console.print(text, markup=False, highlight=False, soft_wrap=True, style="yellow")


def note(text: str | None) -> None:
    """One informational line on stderr (nothing for None), e.g. which part an alias chose."""
    if text:
        err_console.print(text, markup=False, highlight=False, soft_wrap=True, style="dim")


def print_json(obj: Any) -> None:
    """One JSON object on stdout (no rich markup, no wrapping)."""
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")

