"""Named, sourced, user-overridable terms: the override rule every data file of terms shares.

Lives at the package root (not under estimate/) so that workload data (engine profiles) and
estimators can both use it without an upward import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel

from gpuplan.errors import unknown_name

__all__ = ["override_terms"]

T = TypeVar("T", bound=BaseModel)


def override_terms(terms: Mapping[str, T], overrides: Mapping[str, float], *, label: str,
                   check: Callable[[str, float], None] | None = None) -> dict[str, T]:
    """`terms` with each override's value set and marked `overridden` (source "user override").

    Shared by every calibration file (these terms, the link terms); unknown names raise
    InputError with close matches; `check` may reject a value.
    """
    out = dict(terms)
    for name, value in overrides.items():
        if name not in out:
            raise unknown_name(label, name, out)
        if check is not None:
            check(name, float(value))
        out[name] = out[name].model_copy(update={"value": float(value), "overridden": True,
                                                 "source": "user override"})
    return out
