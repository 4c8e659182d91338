"""End-to-end benchmarks on a Llama-style decoder with random weights (transformers; nothing downloaded).

* model: the preset's architecture (gpuplan.workload presets), scaled down: on the CPU and
  with --quick a narrow 2-layer copy with the preset's head and FFN ratios; on a GPU the
  preset's full width with at most 4 layers, so the GEMMs have the real shapes.
* train: the planned layout's training step (layout.py picks it with gpuplan's planner,
  train_dist.py runs it through torchrun, one process per local device; two gloo processes
  on a CPU): AdamW under torch.autocast (bf16 GEMMs, fp32 master weights, the PyTorch AMP
  recipe) with DDP, ZeroRedundancyOptimizer or FSDP and activation checkpointing as planned.
  tokens/s = global batch x seq / median step time (slowest rank); model TFLOP/s per device
  = FLOPs per token (gpuplan.estimate.flops, 3 x forward, full s x s attention as in MFU) x
  tokens/s / devices; MFU = that / dense bf16 peak of the catalog part. Peak memory: max
  over ranks of max_memory_allocated (device) or of the process's peak RSS (CPU).
* decode: prefill of a prompt (TTFT = prefill forward + first token), then one token per
  step with the KV cache; tokens/s = batch x new tokens / decode time.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from gpuplan.bench.backend import BenchUnavailable, host_peak_bytes
from gpuplan.bench.context import BenchContext
from gpuplan.bench.layout import LayoutPlan, layout_label, plan_bench_layout, strategy_label
from gpuplan.bench.models import build_model
from gpuplan.bench.records import Prediction
from gpuplan.bench.train_dist import TrainRun, launch_train
from gpuplan.errors import GpuplanError
from gpuplan.estimate.flops import forward_flops, step_flops
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["bench_model", "build_model", "run_decode", "run_train"]


def bench_model(spec: ModelSpec, *, small: bool) -> ModelSpec:
    """The decoder the e2e benchmarks build: a narrow 2-layer copy (small) or the full width, <= 4 layers."""
    if not small:
        return spec.model_copy(update={"name": f"{spec.name}-{min(spec.num_layers, 4)}l",
                                       "num_layers": min(spec.num_layers, 4), "moe": None, "mla": None})
    heads = 4
    group = max(1, spec.num_heads // spec.kv_heads)
    kv = max(1, heads // group)
    ratio = spec.ffn_hidden_size / spec.hidden_size
    hidden = 256
    return ModelSpec(name=f"{spec.name}-tiny", num_layers=2, hidden_size=hidden, num_heads=heads, num_kv_heads=kv,
                     ffn_hidden_size=int(round(ratio * hidden / 64)) * 64, vocab_size=4096,
                     max_position_embeddings=4096)


def _shape(ctx: BenchContext) -> tuple[int, int]:
    """(sequences per device per step, seq_len) of the training step."""
    if ctx.backend.kind == "cpu":
        return (2, 128) if ctx.quick else (4, 512)
    return (2, 1024) if ctx.quick else (4, 2048)


def _peak(ctx: BenchContext) -> int:
    return ctx.backend.peak_bytes() or host_peak_bytes()


def run_train(ctx: BenchContext) -> None:
    _train(ctx)
    ctx.backend.free()


def _plan(ctx: BenchContext, spec: ModelSpec, devices: int, seq: int, global_batch: int) -> LayoutPlan:
    acc = ctx.predictor.acc
    catalog = None
    if acc is not None:
        from gpuplan.hardware import load_catalog

        catalog = load_catalog()
    try:
        return plan_bench_layout(spec, devices=devices, seq_len=seq, global_batch=global_batch, accelerator=acc,
                                 catalog=catalog, calibration=ctx.predictor.cal, no_plan_reason=ctx.predictor.reason)
    except GpuplanError as exc:  # e.g. a part without a memory size: run without a plan
        return plan_bench_layout(spec, devices=devices, seq_len=seq, global_batch=global_batch, accelerator=None,
                                 no_plan_reason=f"the planner could not plan {acc.id if acc else ''}: {exc}")


def _train(ctx: BenchContext) -> None:
    b = ctx.backend
    small = ctx.quick or b.kind == "cpu"
    spec = bench_model(ctx.model, small=small)
    per_device, seq = _shape(ctx)
    devices = 2 if b.kind == "cpu" else b.count  # one process per local device; two gloo processes on a CPU
    plan = _plan(ctx, spec, devices, seq, per_device * devices)
    run = plan.run
    how = f"({strategy_label(run)}, {run.world} processes)"
    if plan.fallback:
        ctx.note(f"train: {plan.fallback} {how}")
    elif plan.planned is None:
        ctx.note(f"train: no planned layout ({plan.reason}); ran {layout_label(run.to_dict())} {how}")
    else:
        ctx.note(f"train: ran the planned layout {layout_label(run.to_dict())} {how}")
    ctx.status(f"torchrun {devices} x {b.dist_backend}: {layout_label(run.to_dict())}")
    res = launch_train(b, spec.model_dump_json(), run, seq_len=seq, warmup=2,  # DDP rebuilds its buckets after step 1
                       repeats=5 if ctx.quick else 8, timeout_s=ctx.collective_timeout_s,
                       use_transformers=ctx.use_transformers)
    if res.note:
        ctx.note(f"train: {res.note}")
    if res.samples:
        _add_train(ctx, spec, plan, res)
    if res.error:
        raise BenchUnavailable(f"{res.error} (after {len(res.samples)} timed steps)")


def _add_train(ctx: BenchContext, spec: ModelSpec, plan: LayoutPlan, res: TrainRun) -> None:
    run, samples = plan.run, res.samples
    med = sorted(samples)[len(samples) // 2]
    tokens = run.global_batch * plan.seq_len
    tps = tokens / med
    fpt = step_flops(spec, seq_len=plan.seq_len, tokens=tokens).model_flops_per_token
    params: dict[str, Any] = {
        "model": spec.name, "from_preset": ctx.model.name, "layers": spec.num_layers, "hidden": spec.hidden_size,
        "seq_len": plan.seq_len, "global_batch": run.global_batch, "tp": run.tp, "pp": run.pp, "dp": run.dp,
        "zero": run.zero,
        "micro_batch": run.micro_batch, "microbatches": run.microbatches, "recompute": run.recompute,
        "strategy": strategy_label(run), "processes": res.nproc, "dist_backend": res.dist_backend,
        "planned_layout": plan.planned_label, "run_layout": layout_label(run.to_dict()),
        "layout_fallback": plan.fallback is not None, "params": count_params(spec).total, "flops_per_token": fpt,
        "implementation": res.implementation, "precision": "autocast bf16, fp32 master weights, AdamW"}

    def pred(key: str, unit: str, why: str | None = None) -> Prediction:
        if not plan.predicted or why:
            return ctx.predictor.none(unit, why or plan.reason)
        acc = ctx.predictor.acc
        return Prediction(value=plan.predicted[key], unit=unit, terms=plan.terms,
                          basis=f"gpuplan estimate train (the planner) for the layout run, "
                                f"{layout_label(run.to_dict())} on {plan.devices} x {acc.id if acc else '?'}: {key}")

    record_training(ctx, "train", res, med=med, tps=tps, fpt=fpt, params=params, pred=pred,
                    memory_params={"planned_memory_bytes": plan.predicted["memory_bytes"]} if plan.predicted else {},
                    cpu_memory_note=" (see planned_memory_bytes)")


def record_training(ctx: BenchContext, benchmark: str, res: TrainRun, *, med: float, tps: float, fpt: float,
                    params: dict[str, Any], pred: Any, memory_params: dict[str, Any] | None = None,
                    cpu_memory_note: str = "") -> None:
    """The measurements of one training run, each beside gpuplan's prediction (`pred(key, unit, why)`): step time
    (median), tokens/s, model TFLOP/s per device, MFU against the catalog's dense BF16 peak, peak memory (max over
    ranks; on a CPU the process RSS, which no device estimate matches). Shared by the suite's training benchmark
    and `gpuplan bench --plan`."""
    samples = res.samples
    ctx.add(benchmark=benchmark, name=f"{benchmark}.step_time", metric="step_time", value=med, unit="s",
            samples=samples, predicted=pred("step_time_s", "s"), params=params)
    ctx.add(benchmark=benchmark, name=f"{benchmark}.tokens_per_s", metric="tokens_per_s", value=tps,
            unit="tokens/s", samples=samples, predicted=pred("tokens_per_s", "tokens/s"), params=params)
    per_device = fpt * tps / res.nproc / 1e12
    ctx.add(benchmark=benchmark, name=f"{benchmark}.model_tflops", metric="model_tflops", value=per_device,
            unit="TFLOP/s", samples=samples, predicted=pred("tflops_per_device", "TFLOP/s"),
            params={**params, "per": "device"})
    acc = ctx.predictor.acc
    peak = acc.dense_tflops("bf16") if acc is not None else None
    if peak:
        ctx.add(benchmark=benchmark, name=f"{benchmark}.mfu", metric="mfu", value=per_device / peak, unit="fraction",
                samples=samples, predicted=pred("mfu", "fraction"), params={**params, "bf16_dense_tflops": peak})
    else:
        ctx.note(f"{benchmark}: MFU not reported (no catalog dense bf16 peak for this device); see "
                 f"{benchmark}.model_tflops")
    if res.peak_bytes:
        cpu = ctx.backend.kind == "cpu"
        mem_params = {**params, "source": "max over ranks of " + ("process peak RSS" if cpu else
                                                                  "max_memory_allocated"), **(memory_params or {})}
        ctx.add(benchmark=benchmark, name=f"{benchmark}.peak_memory", metric="peak_memory",
                value=float(res.peak_bytes), unit="bytes", samples=samples, params=mem_params,
                predicted=pred("memory_bytes", "bytes", "CPU: peak RSS includes the Python and torch libraries, not "
                                                        f"comparable to a device estimate{cpu_memory_note}"
                               if cpu else None))


def run_decode(ctx: BenchContext) -> None:
    _decode(ctx)
    ctx.backend.free()


def _decode(ctx: BenchContext) -> None:
    b = ctx.backend
    t = b.torch
    small = ctx.quick or b.kind == "cpu"
    spec = bench_model(ctx.model, small=small)
    batch = 1 if small else 8
    prompt = 128 if small else 1024
    new = 16 if small else 128
    b.reset_peak()
    model, impl = build_model(spec, "bfloat16", prefer_transformers=ctx.use_transformers)
    model = model.to(b.device).eval()
    ids = t.randint(0, spec.vocab_size, (batch, prompt), device=b.device)
    # transformers >= 5.2x names the KV cache `cache` (argument and output); older releases `past_key_values`
    key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def generate() -> tuple[float, float]:
        with t.no_grad():
            b.sync()
            t0 = time.perf_counter()
            out = model(input_ids=ids, use_cache=True)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            past = getattr(out, key)
            b.sync()
            t1 = time.perf_counter()
            for _ in range(new - 1):
                out = model(input_ids=nxt, use_cache=True, **{key: past})
                past = getattr(out, key)
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            b.sync()
            return t1 - t0, time.perf_counter() - t1

    generate()  # warm-up
    runs = [generate() for _ in range(2 if ctx.quick else 5)]
    ttft = [r[0] for r in runs]
    decode = [r[1] for r in runs]
    med_dec = sorted(decode)[len(decode) // 2]
    tps = batch * (new - 1) / med_dec
    pc = count_params(spec)
    # bytes read per decode step: every bf16 weight except the embedding table (one row per token is
    # gathered), the LM head included (tied: the shared table is read as the head)
    weight_bytes = 2.0 * (pc.total - (pc.embedding if pc.lm_head else 0))
    params: dict[str, Any] = {"model": spec.name, "from_preset": ctx.model.name, "batch": batch,
                              "prompt_tokens": prompt, "new_tokens": new, "dtype": "bf16", "kv_cache": True,
                              "implementation": impl}
    ttft_pred = _prefill_prediction(ctx, spec, batch, prompt)
    ctx.add(benchmark="decode", name="decode.ttft", metric="ttft", value=sorted(ttft)[len(ttft) // 2], unit="s",
            samples=ttft, predicted=ttft_pred, params=params)
    ctx.add(benchmark="decode", name="decode.tokens_per_s", metric="tokens_per_s", value=tps, unit="tokens/s",
            samples=decode, predicted=ctx.predictor.decode_tokens_per_s(weight_bytes, batch),
            params={**params, "weight_bytes": weight_bytes})
    ctx.add(benchmark="decode", name="decode.peak_memory", metric="peak_memory", value=float(_peak(ctx)),
            unit="bytes", samples=decode,
            predicted=ctx.predictor.none("bytes", "see gpuplan memory infer for the serving memory estimate"),
            params={**params, "source": "max_memory_allocated" if b.kind != "cpu" else "process peak RSS"})


def _prefill_prediction(ctx: BenchContext, spec: ModelSpec, batch: int, prompt: int) -> Prediction:
    """TTFT = prefill forward FLOPs / (bf16 peak x compute efficiency)."""
    fw = forward_flops(spec, prompt, causal=True).total * batch * prompt
    tps = ctx.predictor.train_tokens_per_s(1.0, "bf16", spec.hidden_size)  # FLOP/s achievable
    if tps.value is None:
        return tps.model_copy(update={"unit": "s"})
    return Prediction(value=fw / tps.value, unit="s", basis="prefill forward FLOPs / (bf16 peak x compute efficiency)",
                      terms={**tps.terms, "prefill_flops": fw})
