"""Usage errors of the command line (missing option, bad choice, bad number) as one line in the locale's language.

typer/click report these before any gpuplan code runs, in English and in a box. `GpuplanGroup` (the `cls` of the
top-level app) runs the command in click's non-standalone mode, catches the usage error and prints one line
through the catalog's error frame on stderr, with click's exit code 2; stdout stays clean for --json.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from gpuplan.cli.common import err_console, ui_lang
from gpuplan.i18n import tr

__all__ = ["GpuplanGroup", "lang_from_args", "usage_line"]

# click's exception classes, found through the public typer.BadParameter (typer >= 0.22 vendors click)
_MRO = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
UsageError: type[Exception] = _MRO["UsageError"]
ClickException: type[Exception] = _MRO["ClickException"]

_PREFIX = r"(?:Value error, )?"
# click's and typer's value messages -> (catalog key, named groups)
_DETAILS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(_PREFIX + r"(?P<value>.+?) is not a valid integer\b.*$", re.S), "cli.usage.not_int"),
    (re.compile(_PREFIX + r"(?P<value>.+?) is not a valid float\b.*$", re.S), "cli.usage.not_float"),
    (re.compile(_PREFIX + r"(?P<value>.+?) is not a valid boolean\b.*$", re.S), "cli.usage.not_bool"),
    (re.compile(_PREFIX + r"(?P<value>.+?) is not one of (?P<choices>.+?)\.?$", re.S), "cli.usage.not_choice"),
    (re.compile(_PREFIX + r"(?P<value>.+?) is not in the range (?P<range>.+?)\.?$", re.S), "cli.usage.out_of_range"),
    (re.compile(r"(?:File|Directory|Path) (?P<path>.+?) does not exist\.?$", re.S), "cli.usage.no_path"),
)
_EXTRA_ARGS = re.compile(r"Got unexpected extra arguments?(?:\(s\))? \((?P<args>.*)\)$", re.S)
_OTHER: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"No such command (?P<name>.+?)\.(?: Did you mean (?P<names>.+?)\?)?$", re.S),
     "cli.usage.no_such_command"),
    (_EXTRA_ARGS, "cli.usage.extra_args"),
    (re.compile(r"Option (?P<name>.+?) requires an argument\.$", re.S), "cli.usage.needs_value"),
)


_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _match(text: str, table: tuple[tuple[re.Pattern[str], str], ...], lang: str) -> str | None:
    for pattern, key in table:
        m = pattern.match(text.strip())
        if m:
            groups = {k: v for k, v in m.groupdict().items() if k != "names"}
            line = tr(key, lang, **groups)
            if m.groupdict().get("names"):
                line += tr("cli.usage.did_you_mean", lang, names=m["names"])
            return line
    return None


# typer >= 0.22 coerces values with pydantic: the error's type -> catalog key (value and bound from the error)
_PYDANTIC = {"int_parsing": "cli.usage.not_int", "int_from_float": "cli.usage.not_int", "int_type": "cli.usage.not_int",
             "float_parsing": "cli.usage.not_float", "float_type": "cli.usage.not_float",
             "bool_parsing": "cli.usage.not_bool", "bool_type": "cli.usage.not_bool",
             "less_than_equal": "cli.usage.le", "greater_than_equal": "cli.usage.ge",
             "less_than": "cli.usage.lt", "greater_than": "cli.usage.gt"}


def _pydantic_detail(exc: Exception, lang: str) -> str | None:
    """The value error of typer's pydantic coercion (the BadParameter's cause) in `lang`, when it is a known kind."""
    errors = getattr(exc.__cause__, "errors", None)
    if not callable(errors):
        return None
    first = errors()[0]
    key = _PYDANTIC.get(str(first.get("type", "")))
    if key is None:
        return None
    bound = next(iter((first.get("ctx") or {}).values()), "")
    return tr(key, lang, value=repr(first.get("input")), bound=bound)


def _param_name(exc: Exception) -> str:
    """The option or argument as click names it: '--model' / '-m', or 'CASES'."""
    hint = getattr(exc, "param_hint", None)
    if hint is not None:
        return hint if isinstance(hint, str) else " / ".join(repr(x) for x in hint)
    param = getattr(exc, "param", None)
    if param is None:
        return ""
    if getattr(param, "param_type_name", "") == "argument":
        return repr(str(getattr(param, "name", "") or "").upper())
    return " / ".join(repr(o) for o in getattr(param, "opts", ()))


def usage_line(exc: Exception, lang: str) -> str:
    """The one-line text of a click usage error in `lang` (unknown click wording is kept, inside the frame)."""
    name = _param_name(exc)
    message = str(getattr(exc, "message", "") or exc)
    cls = type(exc).__name__
    if cls == "MissingParameter":
        kind = getattr(exc, "param_type", None) or getattr(getattr(exc, "param", None), "param_type_name", "")
        key = {"option": "cli.usage.missing_option", "argument": "cli.usage.missing_argument"}.get(
            str(kind), "cli.usage.missing_parameter")
        text = tr(key, lang, name=name)
    elif cls == "BadParameter" or (name and hasattr(exc, "param")):
        detail = _pydantic_detail(exc, lang) or _match(message, _DETAILS, lang) or message.strip().rstrip(".")
        text = tr("cli.usage.bad_value", lang, name=name, detail=detail) if name else detail
    elif cls == "NoSuchOption":
        text = tr("cli.usage.no_such_option", lang, name=repr(getattr(exc, "option_name", "")))
        possible = getattr(exc, "possibilities", None)
        if possible:
            text += tr("cli.usage.did_you_mean", lang, names=", ".join(repr(p) for p in sorted(possible)))
    else:
        text = _match(message, _OTHER, lang) or message.strip()
        extra = _EXTRA_ARGS.match(message.strip())
        if extra and {a.strip(" '\"").lower() for a in extra["args"].split()} <= _BOOL_WORDS:
            text += tr("cli.usage.switch_hint", lang)  # `--domestic-only true`: a switch takes no value
        possible = getattr(exc, "possibilities", None)  # click >= 8.4 NoSuchCommand
        if possible and "Did you mean" not in message:
            text += tr("cli.usage.did_you_mean", lang, names=", ".join(repr(p) for p in sorted(possible)))
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        text = tr("cli.usage.see_help", lang, text=text, command=ctx.command_path)
    return tr("cli.error.other", lang, text=text)


def lang_from_args(args: Sequence[str]) -> str:
    """The --lang value among raw arguments when it is a catalog language, else the locale's."""
    value: str | None = None
    for i, arg in enumerate(args):
        if arg == "--lang" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--lang="):
            value = arg.partition("=")[2]
    return ui_lang(value)


class GpuplanGroup(TyperGroup):
    """The top-level group: click usage errors as one translated line on stderr, exit code 2."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except UsageError as exc:
            code = int(getattr(exc, "exit_code", 2))
            if type(exc).__name__ == "NoArgsIsHelpError":  # the help is already printed (typer's own rule)
                if self.rich_markup_mode is None:
                    exc.show()  # type: ignore[attr-defined]
                sys.exit(code)
            raw = list(sys.argv[1:] if args is None else args)
            err_console.print(usage_line(exc, lang_from_args(raw)), markup=False, highlight=False, soft_wrap=True,
                              style="red")
            sys.exit(code)
        except ClickException as exc:  # e.g. a file click could not open: same frame, click's exit code
            raw = list(sys.argv[1:] if args is None else args)
            text = exc.format_message()  # type: ignore[attr-defined]
            err_console.print(tr("cli.error.other", lang_from_args(raw), text=text), markup=False, highlight=False,
                              soft_wrap=True, style="red")
            sys.exit(int(getattr(exc, "exit_code", 1)))
        except typer.Abort:
            err_console.print("Aborted!", markup=False, highlight=False)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)
