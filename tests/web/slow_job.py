"""A stand-in search for the job tests: reports progress and runs until it is stopped (cancel, time limit).

It runs in the worker processes, so it is named by module path (`slow_job:run`) like the real runners."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def run(data: dict[str, Any], report: Callable[[dict[str, Any]], None]) -> Any:
    for i in range(600):
        report({"done": i, "total": 600, "search": 1})
        time.sleep(0.1)
    raise RuntimeError("never reached in the tests: the job is cancelled or runs out of time first")
