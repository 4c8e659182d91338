"""Single-device benchmarks: dense GEMM per dtype over a shape sweep, memory, host<->device, device<->device.

* GEMM: C = A @ B, 2mnk FLOPs (formulas.gemm_flops). Square shapes plus the TP-sharded
  shapes of the preset model (Megatron-LM column/row split, Shoeybi et al. 2019):
  QKV [T,h]x[h,(h+2 kv d)/tp], attention out [T,h/tp]x[h/tp,h], MLP up+gate
  [T,h]x[h,2f/tp] (gelu: f/tp), MLP down [T,f/tp]x[f/tp,h]. tf32 is fp32 with
  TF32 tensor cores allowed (CUDA); fp8 is torch._scaled_mm with unit scales (e4m3, CUDA >= 8.9).
* memory: copy (dst.copy_(src)) moves 2 x bytes (read + write; BabelStream convention);
  read (src.sum()) moves 1 x bytes.
* host<->device: tensor.to(device) from pinned and pageable host memory, and back.
* device<->device: a copy from device 0 to device 1 (needs two local devices).
"""

from __future__ import annotations

from typing import Any

from gpuplan.bench.backend import NotApplicable
from gpuplan.bench.context import BenchContext
from gpuplan.bench.formulas import gbyte_s, gemm_flops

__all__ = ["gemm_shapes", "run_d2d", "run_gemm", "run_memory", "run_transfer"]

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "tf32": "float32", "fp32": "float32"}


def gemm_shapes(ctx: BenchContext) -> list[tuple[str, int, int, int]]:
    """(label, m, n, k) of the sweep: square sizes, then the preset's TP-sharded layer GEMMs."""
    spec, tp = ctx.model, ctx.tp
    if ctx.backend.kind == "cpu":
        squares = [256, 512] if ctx.quick else [512, 1024, 2048]
        tokens = 64 if ctx.quick else 512
    else:
        squares = [1024, 4096, 8192] if ctx.quick else [1024, 2048, 4096, 8192, 16384]
        tokens = 4096 if ctx.quick else 8192
    h, f, d = spec.hidden_size, spec.ffn_hidden_size, spec.attn_head_dim
    qkv = (spec.num_heads * d + 2 * spec.kv_heads * d) // tp
    up = (2 if spec.mlp == "swiglu" else 1) * f // tp
    shapes = [(f"square{s}", s, s, s) for s in squares]
    shapes += [
        (f"{spec.name}.tp{tp}.qkv", tokens, qkv, h),
        (f"{spec.name}.tp{tp}.attn_out", tokens, h, spec.num_heads * d // tp),
        (f"{spec.name}.tp{tp}.mlp_up", tokens, up, h),
        (f"{spec.name}.tp{tp}.mlp_down", tokens, h, f // tp),
    ]
    return shapes


def run_gemm(ctx: BenchContext, dtypes: tuple[str, ...] = ("bf16", "fp16", "tf32", "fp8")) -> None:
    b = ctx.backend
    t = b.torch
    for dtype in dtypes:
        ok, why = b.supports(dtype)
        if not ok:
            ctx.note(f"gemm {dtype} skipped: {why}")
            continue
        label_dtype = "fp32" if (dtype == "tf32" and b.kind == "cpu") else dtype
        shapes = gemm_shapes(ctx)
        if b.kind == "cpu" and dtype == "fp16":  # no fast fp16 GEMM kernel on CPUs: 0.5 GFLOP/s measured here
            shapes = [("square128", 128, 128, 128)]
            ctx.note("gemm fp16 on CPU: only a 128^3 shape (the CPU has no fast fp16 GEMM kernel)")
        restore = _set_tf32(t, True) if (dtype == "tf32" and b.kind == "cuda") else None
        try:
            for label, m, n, k in shapes:
                _one_gemm(ctx, dtype, label_dtype, label, m, n, k)
        finally:
            if restore is not None:
                restore()
        b.free()


def _one_gemm(ctx: BenchContext, dtype: str, label_dtype: str, label: str, m: int, n: int, k: int) -> None:
    b = ctx.backend
    run = _gemm_fn(b.torch, b.device, dtype, m, n, k)
    flops = gemm_flops(m, n, k)
    # on a device, time a batch of calls per sample (>= ~2 TFLOP, at most 200 calls) so launch overhead
    # and event resolution do not dominate small shapes; the value is per call
    inner = 1 if b.kind == "cpu" else max(1, min(200, int(2e12 // flops)))
    samples = ctx.time(run, inner=inner)
    med = sorted(samples)[len(samples) // 2]
    ctx.add(benchmark="gemm", name=f"gemm.{label_dtype}.{label}", metric="tflops", value=flops / med / 1e12,
            unit="TFLOP/s", samples=samples, predicted=ctx.predictor.gemm_tflops(label_dtype, m, n, k),
            params={"dtype": label_dtype, "m": m, "n": n, "k": k, "shape": label, "flops": flops,
                    "calls_per_sample": inner})


def _set_tf32(t: Any, on: bool) -> Any:
    """Allow TF32 tensor cores for fp32 matmuls; returns a function restoring the previous setting.

    torch >= 2.9 has `fp32_precision` ("tf32"/"ieee") and rejects mixing it with the legacy
    `allow_tf32` flag, so only the API the installed torch has is used.
    """
    mm = t.backends.cuda.matmul
    if hasattr(mm, "fp32_precision"):
        prev = mm.fp32_precision
        mm.fp32_precision = "tf32" if on else "ieee"
        return lambda: setattr(mm, "fp32_precision", prev)
    prev_flag = mm.allow_tf32
    mm.allow_tf32 = on
    return lambda: setattr(mm, "allow_tf32", prev_flag)


def _gemm_fn(t: Any, device: str, dtype: str, m: int, n: int, k: int) -> Any:
    if dtype == "fp8":
        a = t.randn(m, k, device=device).to(t.float8_e4m3fn)
        bt = t.randn(n, k, device=device).to(t.float8_e4m3fn).t()  # column-major B, as cuBLASLt needs
        one = t.ones((), device=device, dtype=t.float32)
        return lambda: t._scaled_mm(a, bt, scale_a=one, scale_b=one, out_dtype=t.bfloat16)
    tdt = getattr(t, _DTYPES[dtype])
    a = t.randn(m, k, device=device, dtype=tdt)
    bb = t.randn(k, n, device=device, dtype=tdt)
    return lambda: t.matmul(a, bb)


def _mem_bytes(ctx: BenchContext) -> int:
    if ctx.backend.kind == "cpu":
        return (64 if ctx.quick else 256) * 2**20
    return (1 if ctx.quick else 4) * 2**30


def run_memory(ctx: BenchContext) -> None:
    nbytes = _mem_bytes(ctx)
    _memory_copy(ctx, nbytes)
    ctx.backend.free()
    _memory_read(ctx, nbytes)
    ctx.backend.free()


def _memory_copy(ctx: BenchContext, nbytes: int) -> None:
    t = ctx.backend.torch
    src = t.empty(nbytes // 4, dtype=t.float32, device=ctx.backend.device).uniform_()
    dst = t.empty_like(src)
    samples = ctx.time(lambda: dst.copy_(src))
    med = sorted(samples)[len(samples) // 2]
    ctx.add(benchmark="memory", name="memory.copy", metric="copy_bandwidth", value=gbyte_s(2 * nbytes, med),
            unit="GB/s", samples=samples, predicted=ctx.predictor.memory_gbyte_s("copy"),
            params={"bytes": nbytes, "bytes_moved": 2 * nbytes, "formula": "2 x bytes / time (read + write)"})


def _memory_read(ctx: BenchContext, nbytes: int) -> None:
    t = ctx.backend.torch
    src = t.empty(nbytes // 4, dtype=t.float32, device=ctx.backend.device).uniform_()
    samples = ctx.time(lambda: src.sum())
    med = sorted(samples)[len(samples) // 2]
    ctx.add(benchmark="memory", name="memory.read", metric="read_bandwidth", value=gbyte_s(nbytes, med),
            unit="GB/s", samples=samples, predicted=ctx.predictor.memory_gbyte_s("read"),
            params={"bytes": nbytes, "bytes_moved": nbytes, "formula": "bytes / time (sum reduction)"})


def run_transfer(ctx: BenchContext) -> None:
    """Host->device and device->host from pinned and pageable memory (on the CPU: host copies)."""
    b = ctx.backend
    nbytes = (16 if ctx.quick else 64) * 2**20 if b.kind == "cpu" else (256 if ctx.quick else 1024) * 2**20
    if b.kind == "cpu":
        ctx.note("transfer on CPU: host-to-host copies (no device); pinned memory needs an accelerator")
    for pinned in (True, False):
        if pinned and b.kind == "cpu":
            continue
        _transfer(ctx, nbytes, pinned)
        b.free()


def _transfer(ctx: BenchContext, nbytes: int, pinned: bool) -> None:
    t = ctx.backend.torch
    host = t.empty(nbytes, dtype=t.uint8, pin_memory=pinned).fill_(1)
    dev = t.empty(nbytes, dtype=t.uint8, device=ctx.backend.device)
    kind = "pinned" if pinned else "pageable"
    for direction, dst, src in (("h2d", dev, host), ("d2h", host, dev)):

        def op(dst: Any = dst, src: Any = src) -> Any:
            return dst.copy_(src, non_blocking=pinned)

        samples = ctx.time(op)
        med = sorted(samples)[len(samples) // 2]
        ctx.add(benchmark="transfer", name=f"transfer.{direction}.{kind}", metric="bandwidth",
                value=gbyte_s(nbytes, med), unit="GB/s", samples=samples,
                predicted=ctx.predictor.host_device_gbyte_s(pinned),
                params={"bytes": nbytes, "direction": direction, "host_memory": kind})


def run_d2d(ctx: BenchContext) -> None:
    """Device 0 -> device 1 copy bandwidth (GB/s one direction); needs two local devices."""
    b = ctx.backend
    if b.count < 2:
        raise NotApplicable(f"device-to-device needs two local {b.kind} devices, found {b.count}")
    t = b.torch
    nbytes = (256 if ctx.quick else 1024) * 2**20
    src = t.empty(nbytes, dtype=t.uint8, device=f"{b.kind}:0").fill_(1)
    dst = t.empty(nbytes, dtype=t.uint8, device=f"{b.kind}:1")

    def run() -> None:
        dst.copy_(src)
        b.module.synchronize(1)

    samples = ctx.time(run)
    med = sorted(samples)[len(samples) // 2]
    ctx.add(benchmark="d2d", name="d2d.0to1", metric="bandwidth", value=gbyte_s(nbytes, med), unit="GB/s",
            samples=samples, predicted=ctx.predictor.device_device_gbyte_s(),
            params={"bytes": nbytes, "src": 0, "dst": 1})
