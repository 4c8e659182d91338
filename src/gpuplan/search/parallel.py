"""Work the planner may run ahead of its own loop in other processes, results taken in the loop's order.

The inference planner verifies candidate fleets one after another, and whether it verifies the next one depends
on what the earlier ones gave (enough plans found, two already on that part). Each verification is a pure
function of its candidate (simulations with fixed seeds), so it can be computed early: `Ahead` computes the
candidates the loop will probably ask for next in worker processes while the loop consumes results in order. The
loop's decisions, and so the plan, are exactly those of the sequential run (tests/search/test_parallel.py); a
result computed for a candidate the loop then skips is discarded.

Workers are forked (POSIX `fork`): they inherit the candidates, step-cost models and load already in memory, so
nothing large is pickled on the way in; only the small result records come back. Where `fork` is unavailable,
inside a worker, or with one job, everything runs in the caller's process. The number of jobs is a process-wide
setting (`set_jobs`): the `gpuplan` command sets it from GPUPLAN_JOBS or the CPU count; a library caller or the
web app (threads, where forking is unsafe) keeps the default of one.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Generic, TypeVar, cast

from gpuplan.errors import InputError

__all__ = ["Ahead", "jobs", "jobs_from_env", "set_jobs"]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

_JOBS = 1
_FN: Callable[[Any], Any] | None = None  # the function the forked workers run (set before they fork)
_IN_WORKER = False


def set_jobs(n: int) -> None:
    """How many processes the planner may use (1: all in this process)."""
    global _JOBS
    if not isinstance(n, int) or n < 1:
        raise InputError(field="GPUPLAN_JOBS", value=n, allowed="a positive integer", hint="unset it to use every CPU")
    _JOBS = n


def jobs() -> int:
    return _JOBS


def jobs_from_env(environ: dict[str, str] | None = None) -> int:
    """GPUPLAN_JOBS if set (a positive integer), else the CPUs this process may run on (at most 8)."""
    env = os.environ if environ is None else environ
    raw = env.get("GPUPLAN_JOBS")
    if raw is None or raw.strip() == "":
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not on Linux
            cpus = os.cpu_count() or 1
        return max(1, min(cpus, 8))
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(field="GPUPLAN_JOBS", value=raw, allowed="a positive integer",
                         hint="e.g. GPUPLAN_JOBS=1 to plan in one process; unset it to use every CPU")
    return n


class _Failed:
    """A worker's call raised: the caller runs it again itself, so the error surfaces there as it is."""


_FAILED = _Failed()


def _run(key: Any) -> Any:
    assert _FN is not None
    try:
        return _FN(key)
    except Exception:  # noqa: BLE001 - re-raised by the caller's own run of the same call
        return _FAILED


def _mark_worker() -> None:
    global _IN_WORKER
    _IN_WORKER = True


class Ahead(Generic[K, R]):
    """`get(key)` returns `fn(key)`; `hint(keys)` lets up to `jobs` of the keys the caller expects to ask for
    next be computed meanwhile in forked workers. Use as a context manager (the workers stop on exit)."""

    def __init__(self, fn: Callable[[K], R], n_jobs: int | None = None) -> None:
        self.fn = fn
        n = jobs() if n_jobs is None else n_jobs
        can_fork = "fork" in multiprocessing.get_all_start_methods()
        self.n = n if (n > 1 and can_fork and not _IN_WORKER and _FN is None) else 1
        self.pool: ProcessPoolExecutor | None = None
        self.pending: dict[K, Future[R]] = {}
        self.done: dict[K, R] = {}

    def __enter__(self) -> Ahead[K, R]:
        global _FN
        if self.n > 1:
            _FN = self.fn  # inherited by the workers, which fork on the first submit below
            self.pool = ProcessPoolExecutor(max_workers=self.n, mp_context=multiprocessing.get_context("fork"),
                                            initializer=_mark_worker)
        return self

    def __exit__(self, *exc: object) -> None:
        global _FN
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
            _FN = None

    def hint(self, keys: Iterable[K]) -> None:
        """Start computing the first keys not yet started, keeping at most `n` running."""
        if self.pool is None:
            return
        for key in keys:
            if len(self.pending) >= self.n:
                break
            if key in self.pending or key in self.done:
                continue
            self.pending[key] = self.pool.submit(_run, key)

    def get(self, key: K) -> R:
        if key in self.done:
            return self.done[key]
        fut = self.pending.pop(key, None)
        if fut is None and self.pool is not None:  # not started ahead: the workers run it (the caller only waits)
            fut = self.pool.submit(_run, key)
        result: Any = fut.result() if fut is not None else _FAILED
        if isinstance(result, _Failed):
            result = self.fn(key)
        self.done[key] = result
        # results of keys the caller skipped stay in `done` (never asked for again) or running: let them finish
        for k in [k for k, f in self.pending.items() if f.done()]:
            r = self.pending.pop(k).result()
            if not isinstance(r, _Failed):
                self.done[k] = r
        return cast(R, result)
