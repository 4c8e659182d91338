"""Run the benchmark suite, show progress, and save the result after every benchmark.

The result file is rewritten (atomically) after each benchmark, so an out-of-memory
error, an unwritable directory, a timed-out collective or Ctrl-C leaves a valid, partial
result with the error recorded (`complete: false`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gpuplan import __version__
from gpuplan.bench import collectives, compute, e2e, storage
from gpuplan.bench.backend import (
    Backend,
    BenchUnavailable,
    NotApplicable,
    detect_backend,
    is_oom,
    machine_facts,
)
from gpuplan.bench.context import BenchContext
from gpuplan.bench.predict import predictor_for
from gpuplan.bench.records import BenchmarkStatus, BenchResult, Device, Machine, Telemetry, write_result
from gpuplan.bench.telemetry import Sampler
from gpuplan.errors import GpuplanError, InputError, unknown_name
from gpuplan.workload.presets import load_model

__all__ = ["BENCHMARKS", "SuiteOptions", "run_suite"]


def _collectives(ctx: BenchContext) -> None:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:  # started by torchrun: every rank takes part in-process
        import torch.distributed as dist

        from gpuplan.bench.collectives import _init, _local_device, measure_collectives

        backend = _init(ctx.backend.kind, ctx.collective_timeout_s)
        rows = measure_collectives(_local_device(backend), collectives.default_sizes(ctx.backend.kind, ctx.quick),
                                   warmup=ctx.warmup, repeats=ctx.repeats)
        nodes = int(os.environ.get("GROUP_WORLD_SIZE", "0")) or None
        collectives.add_collective_measurements(ctx, rows, backend.dist_backend, nodes)
        dist.destroy_process_group()
        return
    rows, dist_backend, _ = collectives.launch_local(ctx)
    collectives.add_collective_measurements(ctx, rows, dist_backend, 1)


BENCHMARKS: dict[str, Callable[[BenchContext], None]] = {
    "gemm": compute.run_gemm,
    "memory": compute.run_memory,
    "transfer": compute.run_transfer,
    "d2d": compute.run_d2d,
    "collectives": _collectives,
    "storage": storage.run_storage,
    "dataloader": storage.run_dataloader,
    "train": e2e.run_train,
    "decode": e2e.run_decode,
}


@dataclass(frozen=True, kw_only=True)
class SuiteOptions:
    device: str = "auto"
    quick: bool = False
    only: tuple[str, ...] = ()
    directory: Path = Path(".")
    out: Path = Path("gpuplan-bench.json")
    accelerator: str | None = None
    model: str = "llama3.1-8b"
    tp: int | None = None
    workers: int = 2
    token_rate: float = 1e6
    collective_timeout_s: float = 120.0
    progress: bool = True

    def __post_init__(self) -> None:
        for name in self.only:
            if name not in BENCHMARKS:
                raise unknown_name("only", name, BENCHMARKS)
        if self.workers < 0:
            raise InputError(field="workers", value=self.workers, allowed="an integer >= 0")
        if not self.token_rate > 0:
            raise InputError(field="token-rate", value=self.token_rate, allowed="tokens/s > 0")
        if not self.collective_timeout_s > 0:
            raise InputError(field="timeout", value=self.collective_timeout_s, allowed="seconds > 0")


def _machine(backend: Backend) -> Machine:
    facts = machine_facts(backend)
    facts["devices"] = tuple(Device(**d) for d in facts["devices"])
    facts["world_size"] = int(os.environ.get("WORLD_SIZE", "1"))
    return Machine(**facts)


def _save_unavailable(opts: SuiteOptions, command: str, error: str) -> None:
    """A partial result when the requested device is absent: the host machine and the reason, no measurement."""
    if int(os.environ.get("RANK", "0")) != 0:
        return
    try:
        machine = _machine(detect_backend("cpu"))
    except BenchUnavailable:  # no torch at all: describe the host without it
        import platform

        machine = Machine(hostname=platform.node(), platform=platform.platform(), python=platform.python_version(),
                          backend="cpu", cpu=platform.processor() or platform.machine(), cpu_count=os.cpu_count() or 1)
    res = BenchResult(gpuplan_version=__version__, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      command=command, quick=opts.quick, complete=False, machine=machine, accelerator=None,
                      accelerator_note=f"--device {opts.device} unavailable",
                      benchmarks=(BenchmarkStatus(name="backend", status="failed", seconds=0.0, error=error),),
                      measurements=(), telemetry=None)
    with contextlib.suppress(GpuplanError):  # an unwritable --out: the device error is the one to report
        write_result(res, opts.out)


def run_suite(opts: SuiteOptions, *, command: str = "gpuplan bench") -> BenchResult:
    """Run the selected benchmarks; the result is written to `opts.out` after each one (and returned)."""
    try:
        backend = detect_backend(opts.device)
    except BenchUnavailable as exc:
        _save_unavailable(opts, command, str(exc))  # the host is described and the reason kept
        raise
    machine = _machine(backend)
    predictor, acc_id, acc_note = predictor_for(opts.accelerator, backend.kind, machine.devices[0].name)
    spec = load_model(opts.model)
    tp = opts.tp or (2 if backend.kind == "cpu" else 8)
    ctx = BenchContext(backend=backend, predictor=predictor, quick=opts.quick, model=spec, tp=tp,
                       directory=opts.directory.expanduser(), collective_timeout_s=opts.collective_timeout_s,
                       dataloader_workers=opts.workers, dataloader_token_rate=opts.token_rate)
    names = list(opts.only) or list(BENCHMARKS)
    rank = int(os.environ.get("RANK", "0"))
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and names != ["collectives"]:
        names = ["collectives"]
        ctx.note("started by torchrun: only the collectives run (the others are per node: run them without torchrun)")
    statuses: list[BenchmarkStatus] = []
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    sampler = Sampler(backend.kind, torch_mod=backend.torch)
    telemetry: Telemetry | None = None

    def result(complete: bool) -> BenchResult:
        return BenchResult(gpuplan_version=__version__, created_at=created, command=command, quick=opts.quick,
                           complete=complete, machine=machine, accelerator=acc_id, accelerator_note=acc_note,
                           benchmarks=tuple(statuses), measurements=tuple(ctx.measurements), telemetry=telemetry)

    def save(complete: bool) -> None:
        if rank == 0:
            write_result(result(complete), opts.out)

    save(False)  # fail early (unwritable --out) before any benchmark runs
    sampler.start()
    progress = _Progress(opts.progress and rank == 0, len(names), sampler)
    try:
        with progress:
            for name in names:
                progress.begin(name)
                ctx.status = progress.update
                statuses.append(_run_one(name, ctx))
                progress.done()
                save(False)
    except KeyboardInterrupt:
        statuses.append(BenchmarkStatus(name="interrupted", status="failed", seconds=0.0, error="KeyboardInterrupt"))
        telemetry = sampler.stop()
        save(False)
        raise
    telemetry = sampler.stop()
    complete = all(s.status in ("ok", "skipped") for s in statuses)
    save(complete)
    return result(complete)


def _run_one(name: str, ctx: BenchContext) -> BenchmarkStatus:
    before = len(ctx.measurements)
    notes_before = len(ctx.notes)
    t0 = time.perf_counter()
    status, error = "ok", None
    try:
        BENCHMARKS[name](ctx)
    except NotApplicable as exc:
        status, error = "skipped", str(exc)
    except (BenchUnavailable, InputError) as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - any failure is recorded; the suite goes on
        last = ctx.measurements[-1].name if len(ctx.measurements) > before else "the first size"
        if is_oom(exc):
            error = f"out of memory after {last}: {str(exc).splitlines()[0][:300]}"
        else:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            error = (f"{type(exc).__name__} after {last}: {str(exc).splitlines()[0][:300] if str(exc) else ''} "
                     f"({Path(frame.filename).name}:{frame.lineno})")
        status = "failed"
        ctx.backend.free()
    made = len(ctx.measurements) - before
    if status == "failed" and made:
        status = "partial"
    return BenchmarkStatus(name=name, status=status, seconds=round(time.perf_counter() - t0, 3), error=error,
                           measurements=made, notes=tuple(ctx.notes[notes_before:]))


class _Progress:
    """A rich progress bar on stderr: one step per benchmark, the latest figure and telemetry line."""

    def __init__(self, enabled: bool, total: int, sampler: Sampler) -> None:
        self.enabled = enabled
        self.sampler = sampler
        self.name = ""
        self._p: object | None = None
        self._task: object | None = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._p = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                               console=Console(stderr=True), transient=not sys.stderr.isatty())
            self._task = self._p.add_task("gpuplan bench", total=total)

    def __enter__(self) -> _Progress:
        if self._p is not None:
            self._p.__enter__()  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)  # type: ignore[attr-defined]

    def begin(self, name: str) -> None:
        self.name = name
        self.update("")

    def update(self, msg: str) -> None:
        if self._p is not None:
            tele = self.sampler.describe()
            self._p.update(self._task, description=f"[bold]{self.name}[/] {msg} [dim]{tele}[/]")  # type: ignore

    def done(self) -> None:
        if self._p is not None:
            self._p.advance(self._task)  # type: ignore[attr-defined]
