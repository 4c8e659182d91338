"""Collectives through torch.distributed (NCCL, HCCL or gloo), with nccl-tests' algbw and busbw.

Every rank times each repeat of all-reduce, all-gather, reduce-scatter, all-to-all and
send/recv (ranks paired 0-1, 2-3, ...) over a sweep of message sizes; a repeat's time is
the slowest rank's (an all-reduce MAX of the samples). algbw = size / time and
busbw = algbw x busbw_factor (formulas.py; NVIDIA/nccl-tests doc/PERFORMANCE.md).

Run it on N nodes through torchrun (docs/bench.md):

    torchrun --nnodes N --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        -m gpuplan.bench.collectives --out collectives.json

`gpuplan bench` runs it in-process when started by torchrun, and otherwise launches a
local run (`launch_local`: all local devices, or two gloo processes on the CPU) with a
hard timeout, so a stuck collective never hangs the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from gpuplan.bench.backend import BenchUnavailable, NotApplicable, import_torch, time_op
from gpuplan.bench.context import BenchContext
from gpuplan.bench.formulas import BUSBW_KINDS, algbw_gbyte_s, busbw_factor, collective_bytes

__all__ = ["add_collective_measurements", "default_sizes", "launch_local", "main", "measure_collectives"]


def default_sizes(backend_kind: str, quick: bool) -> list[int]:
    """Message sizes in bytes (each rank's input buffer)."""
    if backend_kind == "cpu":
        exps = [10, 14, 18, 22] if quick else [10, 12, 14, 16, 18, 20, 22, 24]
    else:
        exps = [20, 24, 28] if quick else [16, 20, 22, 24, 26, 28, 30]
    return [2**e for e in exps]


def _ops(dist: Any, t: Any, nbytes: int, n: int, rank: int, device: str) -> dict[str, Any]:
    """kind -> a callable running that collective on float32 buffers of `nbytes` per rank."""
    count = max(nbytes // 4 // n * n, n)
    x = t.ones(count, dtype=t.float32, device=device)
    gathered = t.empty(count * n, dtype=t.float32, device=device)
    shard = t.empty(count // n, dtype=t.float32, device=device)
    a2a = t.empty(count, dtype=t.float32, device=device)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    peer = rank ^ 1  # pairs 0-1, 2-3, ...

    def send_recv() -> None:
        if peer >= n:
            return
        if rank % 2 == 0:
            dist.send(x, peer)
        else:
            dist.recv(x, peer)

    return {
        "all_reduce": lambda: dist.all_reduce(x),
        "all_gather": lambda: gather(gathered, x),
        "reduce_scatter": lambda: scatter(shard, x),
        "all_to_all": lambda: dist.all_to_all_single(a2a, x),
        "send_recv": send_recv,
    }


def measure_collectives(backend: Any, sizes: list[int], *, warmup: int, repeats: int,
                        kinds: tuple[str, ...] = BUSBW_KINDS) -> list[dict[str, Any]]:
    """Run in an initialised process group; every rank returns the same rows (slowest-rank times)."""
    t = backend.torch
    import torch.distributed as dist

    n = dist.get_world_size()
    rank = dist.get_rank()
    rows: list[dict[str, Any]] = []
    for nbytes in sizes:
        ops = _ops(dist, t, nbytes, n, rank, backend.device)
        elem = max(nbytes // 4 // n * n, n) * 4
        for kind in kinds:
            if kind == "send_recv" and n < 2:
                continue
            # nccl-tests times a batch of iterations per sample; small device messages need it too
            inner = 1 if backend.kind == "cpu" else (20 if nbytes < 2**24 else 5)
            samples = time_op(ops[kind], backend, warmup=warmup, repeats=repeats, inner=inner)
            st = t.tensor(samples, dtype=t.float64, device=backend.device)
            dist.all_reduce(st, op=dist.ReduceOp.MAX)
            rows.append({"kind": kind, "bytes": elem, "ranks": n, "samples": [float(v) for v in st.cpu()]})
        del ops
    return rows


def add_collective_measurements(ctx: BenchContext, rows: list[dict[str, Any]], dist_backend: str,
                                nodes: int | None = None) -> None:
    """Turn raw rows into algbw/busbw measurements with predictions."""
    for row in rows:
        kind, nbytes, n, samples = row["kind"], int(row["bytes"]), int(row["ranks"]), list(row["samples"])
        med = sorted(samples)[len(samples) // 2]
        size = collective_bytes(kind, nbytes, n)
        alg = algbw_gbyte_s(size, med)
        params: dict[str, Any] = {"kind": kind, "bytes_per_rank": nbytes, "size_bytes": size, "ranks": n,
                                  "dist_backend": dist_backend, "busbw_factor": busbw_factor(kind, n)}
        if nodes is not None:
            params["nodes"] = nodes
        base = f"collective.{kind}.{n}ranks.{nbytes}B"
        k = nodes or 1
        ctx.add(benchmark="collectives", name=f"{base}.algbw", metric="algbw", value=alg, unit="GB/s",
                samples=samples, predicted=ctx.predictor.collective(kind, nbytes, n, "algbw", nodes=k), params=params)
        ctx.add(benchmark="collectives", name=f"{base}.busbw", metric="busbw", value=alg * busbw_factor(kind, n),
                unit="GB/s", samples=samples, predicted=ctx.predictor.collective(kind, nbytes, n, "busbw", nodes=k),
                params=params)


def launch_local(ctx: BenchContext, *, nproc: int | None = None) -> tuple[list[dict[str, Any]], str, int]:
    """Run the collectives in `nproc` local processes through torchrun; (rows, dist backend, nproc).

    CUDA/NPU: one process per local device (needs two); CPU: two gloo processes. The whole
    process group is killed after `ctx.collective_timeout_s` (the whole run, start-up included;
    each collective in it also fails after that long through the process group's timeout).
    """
    b = ctx.backend
    if b.kind == "cpu":
        nproc, dist_backend = nproc or 2, "gloo"
    else:
        nproc, dist_backend = nproc or b.count, b.dist_backend
        if nproc < 2:
            raise NotApplicable(f"collectives need two local {b.kind} devices (found {b.count}); "
                                   "run across nodes with torchrun (docs/bench.md)")
    sizes = default_sizes(b.kind, ctx.quick)
    with tempfile.TemporaryDirectory(prefix="gpuplan-coll-") as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               "-m", "gpuplan.bench.collectives", "--device", b.kind, "--sizes", ",".join(map(str, sizes)),
               "--warmup", str(ctx.warmup), "--repeats", str(ctx.repeats), "--out", str(out),
               "--timeout", str(int(ctx.collective_timeout_s))]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
        try:
            log, _ = proc.communicate(timeout=ctx.collective_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this function started, nothing else
            proc.communicate()
            raise BenchUnavailable(f"collectives did not finish within {ctx.collective_timeout_s:g} s "
                                   f"({nproc} x {dist_backend}); killed") from None
        if proc.returncode != 0 or not out.exists():
            tail = " | ".join(line for line in (log or "").strip().splitlines()[-4:])
            raise BenchUnavailable(f"torchrun ({nproc} x {dist_backend}) exited with {proc.returncode}: {tail}")
        rows: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
    return rows, dist_backend, nproc


def _init(device: str, timeout_s: float) -> Any:
    """Backend and process group of a torchrun-started process."""
    from gpuplan.bench.backend import detect_backend

    backend = detect_backend(device)
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    if backend.kind != "cpu":
        backend.module.set_device(local)
    if not dist.is_initialized():
        dist.init_process_group(backend.dist_backend, timeout=timedelta(seconds=timeout_s))
    return backend


def main(argv: list[str] | None = None) -> int:
    """Entry point of `torchrun ... -m gpuplan.bench.collectives`; rank 0 writes the rows (or a result)."""
    p = argparse.ArgumentParser(prog="python -m gpuplan.bench.collectives")
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "npu", "cpu"])
    p.add_argument("--sizes", default="", help="comma-separated bytes per rank (default: the suite's sweep)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before a stuck collective fails")
    p.add_argument("--out", required=True, help="rows JSON written by rank 0")
    a = p.parse_args(argv)
    import_torch()
    import torch.distributed as dist

    backend = _init(a.device, a.timeout)
    sizes = [int(s) for s in a.sizes.split(",") if s] or default_sizes(backend.kind, quick=False)
    try:
        rows = measure_collectives(_local_device(backend), sizes, warmup=a.warmup, repeats=a.repeats)
        if dist.get_rank() == 0:
            for r in rows:
                r["nodes"] = int(os.environ.get("GROUP_WORLD_SIZE", "0")) or None
            tmp = Path(a.out).with_suffix(".tmp")
            tmp.write_text(json.dumps(rows), encoding="utf-8")
            os.replace(tmp, a.out)
    finally:
        dist.destroy_process_group()
    return 0


class _LocalDevice:
    """A Backend view whose `device` is this process's local device (cuda:LOCAL_RANK)."""

    def __init__(self, backend: Any) -> None:
        self._b = backend
        local = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = "cpu" if backend.kind == "cpu" else f"{backend.kind}:{local}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._b, name)


def _local_device(backend: Any) -> Any:
    return _LocalDevice(backend)


if __name__ == "__main__":
    raise SystemExit(main())
