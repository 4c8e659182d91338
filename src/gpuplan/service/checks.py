"""The input checks and error texts the CLI and the web app share (one wording for a bad value, both doors).

`positive`/`positives` check numbers the way every command does; `error_line` is the one-line text of an error
in a language; `error_fields` the same error as the API's JSON detail. A value echoed back is shortened and made
JSON-safe (NaN, infinities and huge integers become text), so a bad value never turns into a server error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gpuplan.errors import InputError
from gpuplan.hardware.issues import CatalogError
from gpuplan.i18n import LANGS, default_lang, tr

__all__ = ["MAX_ECHO_CHARS", "RULE_TYPES", "error_fields", "error_line", "input_error_from_validation", "positive",
           "positives", "rule_text", "shown_value", "ui_lang"]

MAX_ECHO_CHARS = 120  # a bad value is echoed at most this long (a 200 KB value is not sent back, twice)


def shown_value(value: Any) -> str | int | float | bool | None:
    """A bad value as an error shows it: JSON-safe scalars as they are; NaN, infinities, integers past 2**53 and
    containers as text, shortened to MAX_ECHO_CHARS with the full length stated."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, int) and abs(value) <= 2**53:
        return value
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        text = "<an integer too large to show>"
    if len(text) > MAX_ECHO_CHARS:
        return f"{text[:MAX_ECHO_CHARS]}... ({len(text)} characters)"
    return text


# pydantic error types worded in every catalog language (the rest keep pydantic's English text)
RULE_TYPES = ("missing", "extra_forbidden", "literal_error", "finite_number", "less_than_equal", "greater_than_equal",
              "less_than", "greater_than", "int_parsing", "int_from_float", "float_parsing", "bool_parsing",
              "string_type", "int_type", "float_type", "list_type", "dict_type", "string_too_long",
              "string_too_short", "too_long", "too_short")


def rule_text(error: Mapping[str, Any], lang: str = "en") -> str:
    """What a pydantic error says is allowed, in `lang` (its context's bounds and choices kept)."""
    kind = str(error.get("type", ""))
    msg = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
    if lang == "en" or kind not in RULE_TYPES:
        return msg
    ctx = {k: str(v) for k, v in (error.get("ctx") or {}).items()}
    try:
        return tr(f"pydantic.{kind}", lang, **ctx)
    except (KeyError, IndexError):  # a context the text does not expect: pydantic's own words
        return msg


def input_error_from_validation(exc: ValidationError, prefix: str = "", lang: str = "en") -> InputError:
    """The first pydantic error as an InputError naming the field and the rule (the rule in `lang`)."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "input"
    return InputError(field=field, value=first.get("input"), allowed=rule_text(first, lang))


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
        value = shown_value(exc.value)
        return tr("cli.error.input", lang, field=exc.field, value=repr(value), allowed=exc.allowed, hint=hint)
    if isinstance(exc, CatalogError) and exc.issues:
        n = len(exc.issues)
        more = tr("cli.error.catalog_more", lang, more=n - 1) if n > 1 else ""
        return tr("cli.error.catalog", lang, n=n, first=str(exc.issues[0]), more=more)
    return tr("cli.error.other", lang, text=str(exc))


def error_fields(exc: Exception, lang: str = "en") -> dict[str, Any]:
    """field, value, allowed, hint and the one-line message of an InputError (or another error), JSON-safe."""
    if isinstance(exc, InputError):
        return {"field": exc.field, "value": shown_value(exc.value), "allowed": exc.allowed, "hint": exc.hint,
                "message": error_line(exc, lang)}
    return {"field": "input", "value": None, "allowed": "", "hint": "", "message": error_line(exc, lang)}


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
