"""What a worker process runs: one search, its progress and its answer sent back over a pipe.

A job's process starts in `run_job` with the name of a runner (`module:function`, chosen by the server, never
by a client), the request as JSON data and the sending end of a pipe. It sends

- `("progress", {"done": i, "total": n, "search": k})` as the search goes through the accelerators (at most
  every `PROGRESS_EVERY_S`; `search` counts the searches a request makes, e.g. the growth re-plan of serving),
- then one final message: `("done", answer)`, `("input_error", {field, value, allowed, hint})` (the parent
  turns it back into an `InputError`, worded in the visitor's language) or `("crash", type name)`.

Importing this module imports the search and report modules, so a fork server that preloads it starts each
job with them in memory.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import gpuplan.advise.report_infer  # noqa: F401  (preloaded for the fork server)
import gpuplan.advise.report_train  # noqa: F401
import gpuplan.search.infer_search  # noqa: F401
import gpuplan.search.train_search  # noqa: F401
from gpuplan.errors import GpuplanError, InputError
from gpuplan.search import progress

__all__ = ["PROGRESS_EVERY_S", "RUNNERS", "run_compare", "run_infer", "run_job", "run_train"]

PROGRESS_EVERY_S = 0.2
NICE = 19
RUNNERS = {"train": "gpuplan.web.worker:run_train", "infer": "gpuplan.web.worker:run_infer",
           "compare": "gpuplan.web.worker:run_compare"}

Report = Callable[[dict[str, Any]], None]


def run_train(data: dict[str, Any], report: Report) -> Any:
    """A training plan's result and report document, packed as the store keeps them (`result_z`, `report_z`)."""
    from gpuplan.service import TrainPlanRequest, plan_train_report

    return _packed(*plan_train_report(TrainPlanRequest.model_validate(data)))


def run_infer(data: dict[str, Any], report: Report) -> Any:
    """A serving plan's result and report document, packed as the store keeps them."""
    from gpuplan.service import InferPlanRequest, plan_infer_report

    return _packed(*plan_infer_report(InferPlanRequest.model_validate(data)))


def _packed(result: dict[str, Any], doc: dict[str, Any]) -> dict[str, bytes]:
    """Encoded here, in the worker: the server process only moves the bytes into the database."""
    from gpuplan.web.store import pack_json

    return {"result_z": pack_json(result), "report_z": pack_json(doc)}


def run_compare(data: dict[str, Any], report: Report) -> Any:
    """`gpuplan compare --json`."""
    from gpuplan.service import CompareRequest
    from gpuplan.service import run_compare as compare

    return compare(CompareRequest.model_validate(data))


def _runner(name: str) -> Callable[[dict[str, Any], Report], Any]:
    module, _, func = name.partition(":")
    fn: Callable[[dict[str, Any], Report], Any] = getattr(importlib.import_module(module), func)
    return fn


def _plain(value: object) -> object:
    """A value an error names, as data that pickles and prints the same (containers of plain values kept)."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, dict) and all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        return {str(k): v for k, v in value.items()}
    return str(value)


def run_job(runner: str, data: dict[str, Any], conn: Connection) -> None:
    """The body of a worker process (see the module docstring). It lowers its own CPU priority first, so that
    the server process (pages, memory answers, /healthz) comes first when searches fill every core."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(NICE)
    state = {"search": 0, "sent": 0.0}

    def send_progress(doc: dict[str, Any]) -> None:
        conn.send(("progress", doc))

    def on_progress(done: int, total: int) -> None:
        if done == 0:
            state["search"] += 1
        now = time.monotonic()
        if now - state["sent"] >= PROGRESS_EVERY_S or done == total:
            state["sent"] = now
            send_progress({"done": done, "total": total, "search": int(state["search"])})

    try:
        with progress.reporting(on_progress):
            answer = _runner(runner)(data, send_progress)
        conn.send(("done", answer))
    except InputError as exc:
        conn.send(("input_error", {"field": exc.field, "value": _plain(exc.value), "allowed": exc.allowed,
                                   "hint": exc.hint}))
    except GpuplanError as exc:
        conn.send(("input_error", {"field": "input", "value": None, "allowed": str(exc), "hint": ""}))
    except Exception as exc:  # reported as an internal error; the parent logs the type only
        conn.send(("crash", type(exc).__name__))
    finally:
        conn.close()
