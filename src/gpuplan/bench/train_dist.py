"""The end-to-end training step at the planned layout, one process per local device through torchrun.

`launch_train` starts `torchrun --standalone --nproc-per-node N -m gpuplan.bench.train_dist`
(N = dp x tp x pp; CUDA/NPU: one process per local device, NCCL/HCCL; CPU: gloo processes)
and kills the whole process group after the timeout, as the collectives benchmark does.
A data-parallel layout (tp = pp = 1): every rank builds the same decoder (same seed) and
wraps it for the layout (layout.py):

* ZeRO 0: DistributedDataParallel, torch.optim.AdamW;
* ZeRO 1: DDP + torch.distributed.optim.ZeroRedundancyOptimizer (AdamW states sharded);
* ZeRO 3: FSDP2 `torch.distributed.fsdp.fully_shard` per decoder layer and the root
  (parameters, gradients and optimizer states sharded);
* recompute full: `apply_activation_checkpointing` around every decoder layer (non-reentrant);

and times optimizer steps of `microbatches` x micro-batch sequences per rank (gradient
accumulation without gradient sync until the last micro-batch). A layout with tp > 1 or
pp > 1 runs the plain-PyTorch decoder on a (pp, dp, tp) device mesh: DTensor tensor
parallelism and torch.distributed.pipelining's 1F1B schedule over the same micro-batches
(parallel.py). Every step runs under torch.autocast(bf16) with fp32 master weights. A step's
time is the slowest rank's (all-reduce MAX, after a barrier); peak memory is the maximum over
ranks (max_memory_allocated, or the process's peak RSS on the CPU); the step's mean loss over
the DP replicas is recorded too (the same seed and data give the same loss at any layout).
Rank 0 rewrites a progress file after every step, so a rank that dies or a timeout still
leaves the steps measured before it (a partial result).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuplan.bench.layout import BenchLayout

__all__ = ["TrainRun", "launch_train", "main"]

_EXC = re.compile(r"^\s*(\[rank\d+\]:\s*)?[\w.]*(Error|Exception|Interrupt)\b.*:")  # an exception line of a rank


@dataclass(frozen=True, kw_only=True)
class TrainRun:
    """What a launch brought back: per-step times (slowest rank), peak bytes (max over ranks), or the error."""

    nproc: int
    dist_backend: str
    samples: list[float]
    peak_bytes: int | None
    implementation: str
    error: str | None = None
    note: str | None = None  # e.g. a rank that failed at teardown, after every step was measured
    losses: tuple[float, ...] = ()  # mean loss of every step, warm-up steps first (the same seed and data: comparable)


def launch_train(backend: Any, spec_json: str, layout: BenchLayout, *, seq_len: int, warmup: int, repeats: int,
                 timeout_s: float, use_transformers: bool = True, fail_rank: int | None = None) -> TrainRun:
    """Run the training step in `layout.world` local processes; never raises for a failed or stuck run.

    A launch that fails before any step was timed (e.g. a rendezvous hiccup on a busy host) is
    retried once within the time left; the first error is kept as a note.
    `fail_rank` (tests): that rank fails after the first timed step.
    """
    t0 = time.monotonic()
    kw: dict[str, Any] = {"seq_len": seq_len, "warmup": warmup, "repeats": repeats,
                          "use_transformers": use_transformers, "fail_rank": fail_rank}
    first = _launch(backend, spec_json, layout, timeout_s=timeout_s, **kw)
    left = timeout_s - (time.monotonic() - t0)
    if first.samples or first.error is None or "did not finish" in first.error or left < timeout_s / 2:
        return first
    again = _launch(backend, spec_json, layout, timeout_s=left, **kw)
    return replace(again, note=f"first launch failed, retried once: {first.error}")


def _launch(backend: Any, spec_json: str, layout: BenchLayout, *, seq_len: int, warmup: int, repeats: int,
            timeout_s: float, use_transformers: bool, fail_rank: int | None) -> TrainRun:
    nproc = layout.world
    dist_backend = backend.dist_backend
    with tempfile.TemporaryDirectory(prefix="gpuplan-train-") as tmp:
        out = Path(tmp) / "progress.json"
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(spec_json, encoding="utf-8")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               "-m", "gpuplan.bench.train_dist", "--device", backend.kind, "--spec", str(spec_file),
               "--layout", json.dumps(layout.to_dict()), "--seq-len", str(seq_len), "--warmup", str(warmup),
               "--repeats", str(repeats), "--timeout", str(max(int(timeout_s), 1)), "--out", str(out)]
        if not use_transformers:
            cmd.append("--plain")
        if fail_rank is not None:
            cmd += ["--fail-rank", str(fail_rank)]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        error = None
        try:
            log, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this function started, nothing else
            log, _ = proc.communicate()
            error = f"training step did not finish within {timeout_s:g} s ({nproc} x {dist_backend}); killed"
        progress: dict[str, Any] = {}
        if out.exists():
            progress = json.loads(out.read_text(encoding="utf-8"))
        note = None
        if error is None and progress.get("status") != "done":
            error = f"torchrun ({nproc} x {dist_backend}) exited with {proc.returncode}: {_cause(log or '')}"
        elif error is None and proc.returncode != 0:  # every step measured; a rank failed at teardown
            note = f"torchrun exited with {proc.returncode} after the last step: {_cause(log or '')}"
    return TrainRun(nproc=nproc, dist_backend=dist_backend, samples=[float(x) for x in progress.get("samples", [])],
                    peak_bytes=progress.get("peak_bytes"), implementation=str(progress.get("implementation", "")),
                    error=error, note=note, losses=tuple(float(x) for x in progress.get("losses", [])))


def _cause(log: str) -> str:
    """The first exception line a rank printed (the root cause: its peers fail after it), else the log's tail."""
    lines = log.strip().splitlines()
    errors = [ln.strip() for ln in lines if _EXC.match(ln) and "torch.distributed.elastic" not in ln]
    return errors[0][:400] if errors else " | ".join(lines[-4:])


def _layers(model: Any) -> list[Any]:
    """The decoder layers: transformers' model.model.layers, or gpuplan.bench.llama's model.layers."""
    inner = getattr(model, "model", None)
    layers = inner.layers if inner is not None and hasattr(inner, "layers") else model.layers
    return list(layers.values() if hasattr(layers, "values") else layers)


def _wrap(t: Any, model: Any, layout: BenchLayout, device_ids: list[int] | None) -> tuple[Any, Any, Any]:
    """(model, optimizer, gradient-sync switch) for the layout's ZeRO stage and recomputation."""
    if layout.recompute == "full":
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing

        ids = {id(m) for m in _layers(model)}
        apply_activation_checkpointing(model, check_fn=lambda m: id(m) in ids)
    if layout.zero == 3:
        from torch.distributed.fsdp import fully_shard

        for layer in _layers(model):
            fully_shard(layer)
        fully_shard(model)
        opt = t.optim.AdamW(model.parameters(), lr=1e-4)
        return model, opt, lambda on: model.set_requires_gradient_sync(on)
    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel(model, device_ids=device_ids)
    if layout.zero == 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=t.optim.AdamW, lr=1e-4)
    else:
        opt = t.optim.AdamW(ddp.parameters(), lr=1e-4)

    def sync(on: bool) -> None:
        ddp.require_backward_grad_sync = on  # what DistributedDataParallel.no_sync() toggles

    return ddp, opt, sync


def _dp_step(t: Any, spec: Any, layout: BenchLayout, a: Any, backend: Any, local: Any, rank: int, build_model: Any,
             autocast: Any) -> tuple[Any, str]:
    """(step returning this rank's share of the mean loss, implementation) of a data-parallel layout."""
    with t.device(local.device):  # parameters are created on the device (no host copy of the model)
        model, impl = build_model(spec, "float32", prefer_transformers=not a.plain)
    device_ids = None if backend.kind == "cpu" else [int(os.environ.get("LOCAL_RANK", "0"))]
    model, opt, grad_sync = _wrap(t, model, layout, device_ids)
    gen = t.Generator(device=local.device).manual_seed(1000 + rank)  # each rank its own data
    ids = t.randint(0, spec.vocab_size, (layout.micro_batch, a.seq_len), device=local.device, generator=gen)

    from gpuplan.bench.parallel import accumulation_step

    return accumulation_step(model, opt, ids, layout.microbatches, grad_sync, autocast), impl


def _write(path: str, data: dict[str, Any]) -> None:
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    """Entry point of each torchrun process; rank 0 writes the progress file."""
    p = argparse.ArgumentParser(prog="python -m gpuplan.bench.train_dist")
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "npu", "cpu"])
    p.add_argument("--spec", required=True, help="ModelSpec JSON file")
    p.add_argument("--layout", required=True, help="BenchLayout as JSON")
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--plain", action="store_true", help="the plain-PyTorch decoder even when transformers exists")
    p.add_argument("--fail-rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    from gpuplan.bench.backend import host_peak_bytes
    from gpuplan.bench.collectives import _init, _local_device
    from gpuplan.bench.models import build_model
    from gpuplan.workload.model_spec import ModelSpec

    backend = _init(a.device, a.timeout)
    import torch.distributed as dist

    t = backend.torch
    local = _local_device(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    spec = ModelSpec.model_validate_json(Path(a.spec).read_text(encoding="utf-8"))
    layout = BenchLayout(**json.loads(a.layout))
    if layout.world != world:
        raise SystemExit(f"layout tp{layout.tp} x pp{layout.pp} x dp{layout.dp} = {layout.world} but {world} processes")
    state: dict[str, Any] = {"status": "running", "samples": [], "peak_bytes": None, "implementation": "",
                             "losses": []}
    try:
        backend.reset_peak()

        def autocast() -> Any:
            return t.autocast(device_type=backend.kind, dtype=t.bfloat16)

        if layout.tp > 1 or layout.pp > 1:  # DTensor TP and torch.distributed.pipelining (parallel.py)
            from gpuplan.bench.parallel import build_parallel

            par = build_parallel(t, spec, layout, device=local.device, device_type=backend.kind,
                                 seq_len=a.seq_len, autocast=autocast)
            state["implementation"] = par.implementation
            step = par.step
        else:
            step, state["implementation"] = _dp_step(t, spec, layout, a, backend, local, rank, build_model, autocast)

        def record_loss(share: float) -> None:
            """The step's mean loss over the DP replicas (each replica's share from one of its ranks)."""
            loss = t.tensor([share], dtype=t.float64, device=local.device)
            dist.all_reduce(loss)
            state["losses"].append(float(loss[0]) / layout.dp)

        for _ in range(a.warmup):
            record_loss(step())
        for i in range(a.repeats):
            if a.fail_rank == rank and i == 1:  # after the first timed step, which rank 0 has saved
                raise RuntimeError(f"rank {rank} failed on purpose (test)")
            dist.barrier()
            backend.sync()
            t0 = time.perf_counter()
            share = step()
            backend.sync()
            seconds = time.perf_counter() - t0
            record_loss(share)
            peak = backend.peak_bytes() or host_peak_bytes()
            both = t.tensor([seconds, float(peak)], dtype=t.float64, device=local.device)
            dist.all_reduce(both, op=dist.ReduceOp.MAX)  # the slowest rank's step, the largest peak
            if rank == 0:
                state["samples"].append(float(both[0]))
                state["peak_bytes"] = int(both[1])
                _write(a.out, state)
        state["status"] = "done"
        if rank == 0:
            _write(a.out, state)
    except BaseException:  # noqa: BLE001 - report, then leave at once: the peers are stopped by torchrun
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    # every rank leaves together: a peer that tears its gloo connections down while another still reads
    # them aborts that process ("terminate called without an active exception", SIGABRT) on the CPU
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # leave without the interpreter's teardown: on the CPU, gloo/OpenMP threads being destroyed at exit can
    # abort a rank after its work is done and reported ("terminate called without an active exception")
    os._exit(code)
