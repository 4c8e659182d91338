"""Typed errors that the CLI turns into one clear line and exit code 2.

Every error names the field, the value it got, what is allowed and, for names,
the closest matches (difflib), so a user can fix the input without reading code.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

__all__ = ["GpuplanError", "InputError", "closest", "unknown_name"]


class GpuplanError(Exception):
    """Base class of every error gpuplan raises on purpose."""


class InputError(GpuplanError, ValueError):
    """A user-supplied value is invalid.

    Attributes mirror the message so that tools (and tests) can read them.
    """

    def __init__(self, *, field: str, value: object, allowed: str, hint: str = "") -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.hint = hint
        msg = f"{field}={value!r} is invalid: allowed {allowed}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The closest matches of `name` among `choices` (case-insensitive)."""
    pool = list(choices)
    lowered = {c.lower(): c for c in pool}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


def unknown_name(field: str, value: str, choices: Iterable[str],
                 aliases: Mapping[str, str] | None = None) -> InputError:
    """An InputError for a name not in `choices`, with close matches as the hint.

    `aliases` (other name -> its canonical choice, e.g. a catalog's 'h20' -> 'h20-96gb') are matched too and
    suggested by their canonical name, so 'h2o' gets "Did you mean h20-96gb?"."""
    pool = sorted(choices)
    if aliases:
        names = {c.lower(): c for c in pool} | {a.lower(): c for a, c in aliases.items() if c in pool}
        hits = difflib.get_close_matches(value.lower(), list(names), n=6, cutoff=0.5)
        near = list(dict.fromkeys(names[h] for h in hits))[:3]
    else:
        near = closest(value, pool)
    hint = f"Did you mean {', '.join(near)}?" if near else f"choose one of the {len(pool)} names listed"
    shown = ", ".join(pool) if len(pool) <= 30 else ", ".join(pool[:30]) + f", ... ({len(pool)} in all)"
    return InputError(field=field, value=value, allowed=f"one of: {shown}", hint=hint)
