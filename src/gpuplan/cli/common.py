"""Shared CLI plumbing: one-line errors with exit code 2 (framed in the --lang language), JSON output, the console,
the `--lang` option."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from gpuplan.errors import InputError
from gpuplan.hardware.issues import CatalogError
from gpuplan.i18n import LANGS, default_lang, help_text, tr

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


def input_error_from_validation(exc: ValidationError, prefix: str = "") -> InputError:
    """The first pydantic error as an InputError naming the field and the rule."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "input"
    msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    return InputError(field=field, value=first.get("input"), allowed=msg)


def ui_lang(lang: str | None) -> str:
    """The language for human-facing text: `lang` when it is a catalog language, else the locale's.

    Never raises (an invalid --lang is reported by resolve_lang, in the locale's language)."""
    return lang if lang in LANGS else default_lang()


def error_line(exc: Exception, lang: str) -> str:
    """The one-line error text in `lang`: the frame is translated; field, value, allowed and hint are kept."""
    if isinstance(exc, ValidationError):
        exc = input_error_from_validation(exc)
    if isinstance(exc, InputError):
        hint = tr("cli.error.hint", lang, hint=exc.hint) if exc.hint else ""
        return tr("cli.error.input", lang, field=exc.field, value=repr(exc.value), allowed=exc.allowed, hint=hint)
    if isinstance(exc, CatalogError) and exc.issues:
        n = len(exc.issues)
        more = tr("cli.error.catalog_more", lang, more=n - 1) if n > 1 else ""
        return tr("cli.error.catalog", lang, n=n, first=str(exc.issues[0]), more=more)
    return tr("cli.error.other", lang, text=str(exc))


def fail(exc: Exception, lang: str | None = None) -> NoReturn:
    """Print one line naming the problem (framed in `lang`, default the locale's) and exit with code 2."""
    err_console.print(error_line(exc, ui_lang(lang)), markup=False, highlight=False, soft_wrap=True, style="red")
    raise typer.Exit(code=2)


def positive(field: str, value: float | None, lang: str = "en", *, integer: bool = False,
             zero_ok: bool = False) -> None:
    """InputError naming `field` unless `value` is a finite number > 0 (a whole number >= 1 when `integer`;
    >= 0 with `zero_ok`); None passes: the option was left out."""
    if value is None:
        return
    low_ok = value >= 0 if zero_ok else value > 0
    if not math.isfinite(value) or not low_ok or (integer and value != int(value)):
        key = ("cli.allowed.count" if integer else "cli.allowed.nonnegative") if zero_ok else (
            "cli.allowed.whole" if integer else "cli.allowed.positive")
        language = ui_lang(lang)
        raise InputError(field=field, value=value, allowed=tr(key, language),
                         hint=tr("cli.hint.nonnegative" if zero_ok else "cli.hint.positive", language, field=field))


def positives(lang: str, *checks: tuple[str, float | None, bool]) -> None:
    """`positive` for each (field, value, integer) in order: the first bad one raises."""
    for field, value, integer in checks:
        positive(field, value, lang, integer=integer)


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

