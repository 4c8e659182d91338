"""An optional progress hook for the plan searches: nothing happens unless a caller sets a callback.

The web app's worker processes set one (`reporting`) to show how far a search has got; the searches wrap
their outer loop in `each`, which calls the callback with (items done, items in all) before each item and
once at the end. Without a callback `each` is the plain iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["Callback", "each", "reporting"]

T = TypeVar("T")
Callback = Callable[[int, int], None]
_callback: ContextVar[Callback | None] = ContextVar("gpuplan_search_progress", default=None)


@contextmanager
def reporting(callback: Callback) -> Iterator[None]:
    """Calls `callback(done, total)` from every search loop run inside the block."""
    token = _callback.set(callback)
    try:
        yield
    finally:
        _callback.reset(token)


def each(items: Collection[T]) -> Iterator[T]:
    """The items of a search's outer loop, reporting (done, total) to the callback when one is set."""
    cb = _callback.get()
    if cb is None:
        yield from items
        return
    total = len(items)
    for i, item in enumerate(items):
        cb(i, total)
        yield item
    cb(total, total)
