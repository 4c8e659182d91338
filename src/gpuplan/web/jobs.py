"""Plan searches in a bounded pool of worker processes: one process per running job, with progress, cancel and a
time limit.

`JobPool(slots, time_limit)` runs at most `slots` jobs at once; one more is refused with 429 and Retry-After
(never a queue that times out). Each job gets a fresh process from a fork server that has the search modules
loaded (spawn where there is no fork server), so a search never holds up the event loop: `/healthz` and stored
plans answer while every worker is busy. A job past its time limit, or cancelled, has its process terminated
at once, which frees its slot. Jobs live in the memory of the server process that runs them and are
forgotten `KEEP_S` seconds after they end. Identical plan requests running at once share one job.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Literal

from fastapi import HTTPException

from gpuplan.errors import InputError
from gpuplan.web import worker

__all__ = ["JOB_ID_PATTERN", "KEEP_S", "Job", "JobPool", "State"]

JOB_ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
KEEP_S = 600.0
MAX_KEPT = 1000
POLL_S = 0.05
State = Literal["queued", "running", "done", "failed", "cancelled"]
log = logging.getLogger("gpuplan.web")


@dataclass
class Job:
    """One search: its state, progress and, once it ends, its answer or error."""

    id: str
    kind: str
    key: str | None = None  # the plan id it will store (plans), None for answers that are not stored
    data: dict[str, Any] | None = None  # the request (the job page links back to its form with it)
    state: State = "queued"
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    progress: dict[str, Any] | None = None
    answer: Any = None
    plan_id: str | None = None
    error: InputError | None = None  # bad input found by the search; `failure` says why otherwise
    failure: str | None = None
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    on_done: Callable[[Job], Any] | None = None
    proc: Any = None

    def elapsed_s(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return round(end - (self.started if self.started is not None else self.created), 3)


def _context() -> Any:
    """A fork server with the worker module preloaded where the platform has one, else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["gpuplan.web.worker"])
        return ctx
    return multiprocessing.get_context("spawn")


class JobPool:
    """At most `slots` searches at once, each in its own process, each stopped after `time_limit` seconds."""

    def __init__(self, slots: int, time_limit: float, runners: dict[str, str] | None = None) -> None:
        self.slots = slots
        self.time_limit = time_limit
        self.runners = dict(runners or worker.RUNNERS)
        self.jobs: dict[str, Job] = {}
        self._by_key: dict[str, Job] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ctx = _context()

    @property
    def busy(self) -> int:
        return sum(1 for j in self.jobs.values() if j.state in ("queued", "running"))

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id) if JOB_ID_PATTERN.match(job_id) else None

    def running_for(self, key: str) -> Job | None:
        job = self._by_key.get(key)
        return job if job is not None and job.state in ("queued", "running") else None

    def done_job(self, kind: str, plan_id: str) -> Job:
        """A job that ended as it began: the plan was stored already (no process, no slot)."""
        job = Job(id=secrets.token_hex(16), kind=kind, key=plan_id, state="done", plan_id=plan_id)
        job.started = job.finished = job.created
        job.ended.set()
        self._keep(job)
        return job

    def submit(self, kind: str, data: dict[str, Any], key: str | None = None,
               on_done: Callable[[Job], Any] | None = None) -> Job:
        """Start a job for `data` with the runner of `kind`; the running one for the same `key` if there is one;
        429 with Retry-After when every slot is busy. `on_done(job)` (a coroutine function) runs in the server
        when the answer is in, before the job counts as done (e.g. to store the plan)."""
        if key is not None and (same := self.running_for(key)) is not None:
            return same
        if self.busy >= self.slots:
            raise HTTPException(429, "every planner slot is busy: try again shortly", headers={"Retry-After": "2"})
        job = Job(id=secrets.token_hex(16), kind=kind, key=key, data=data, on_done=on_done)
        self._keep(job)
        if key is not None:
            self._by_key[key] = job
        task = asyncio.get_running_loop().create_task(self._run(job, self.runners[kind], data))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    def cancel(self, job: Job) -> None:
        """Stop a queued or running job now (its process is terminated); an ended job stays as it ended."""
        if job.state in ("queued", "running"):
            self._end(job, "cancelled", failure="cancelled")
            _stop(job.proc)

    async def close(self) -> None:
        """Stop every job (the server is shutting down)."""
        for job in list(self.jobs.values()):
            self.cancel(job)
        loop = asyncio.get_running_loop()
        mine = [t for t in self._tasks if t.get_loop() is loop]  # a test client may have run others on its own loop
        if mine:
            await asyncio.gather(*mine, return_exceptions=True)

    def _keep(self, job: Job) -> None:
        now = time.monotonic()
        old = [j.id for j in self.jobs.values() if j.finished is not None and now - j.finished > KEEP_S]
        for jid in old:
            del self.jobs[jid]
        while len(self.jobs) >= MAX_KEPT:  # the oldest ended job goes first
            ended = [j for j in self.jobs.values() if j.finished is not None]
            if not ended:
                break
            del self.jobs[min(ended, key=lambda j: j.finished or 0.0).id]
        self.jobs[job.id] = job

    def _end(self, job: Job, state: State, failure: str | None = None) -> None:
        if job.state not in ("queued", "running"):
            return
        job.state, job.failure, job.finished = state, failure, time.monotonic()
        job.ended.set()

    async def _run(self, job: Job, runner: str, data: dict[str, Any]) -> None:
        recv, send = self._ctx.Pipe(duplex=False)
        try:
            job.proc = self._ctx.Process(target=worker.run_job, args=(runner, data, send), daemon=True)
            await asyncio.to_thread(job.proc.start)
            send.close()
            if job.state != "queued":  # cancelled while it started
                _stop(job.proc)
                return
            job.state, job.started = "running", time.monotonic()
            msg = await self._watch(job, recv)
            if msg is not None:
                await self._finish(job, msg)
        except Exception as exc:  # never leaves a job running; the type only, as for every internal error
            log.error("job %s failed: %s", job.id, type(exc).__name__)
            self._end(job, "failed", failure="internal error")
        finally:
            _stop(job.proc)
            recv.close()
            if job.proc is not None:
                await asyncio.to_thread(job.proc.join, 5)
            if job.key is not None and self._by_key.get(job.key) is job:
                del self._by_key[job.key]

    async def _watch(self, job: Job, recv: Connection) -> tuple[str, Any] | None:
        """Progress messages until the final one; None when the job was cancelled, timed out or its process died."""
        while job.state == "running":
            if job.started is not None and time.monotonic() - job.started > self.time_limit:
                _stop(job.proc)
                if job.proc is not None:  # reaped before the job reads as failed: a failed job holds no process
                    await asyncio.to_thread(job.proc.join, 5)
                self._end(job, "failed", failure="time_limit")
                return None
            if not recv.poll():
                await asyncio.sleep(POLL_S)
                continue
            try:
                kind, body = await asyncio.to_thread(recv.recv)
            except (EOFError, OSError):
                self._end(job, "failed", failure="internal error")
                return None
            if kind == "progress":
                job.progress = body
                continue
            return kind, body
        return None

    async def _finish(self, job: Job, msg: tuple[str, Any]) -> None:
        kind, body = msg
        if kind == "input_error":
            job.error = InputError(**body)
            self._end(job, "failed", failure="input")
        elif kind == "done":
            job.answer = body
            if job.on_done is not None:
                await job.on_done(job)
            self._end(job, "done")
        else:
            log.error("job %s: the worker failed with %s", job.id, body)
            self._end(job, "failed", failure="internal error")


def _stop(proc: Any) -> None:
    if proc is not None and proc.is_alive():
        proc.kill()
