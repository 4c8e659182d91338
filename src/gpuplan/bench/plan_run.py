"""`gpuplan bench --plan PLAN.json`: the proof-of-concept run of one plan on the machine at hand.

The plan is read from `plan train --json` (the recommended plan, or `--pick N`: the N-th of
`plans`), from one plan object of it, or from `estimate train --json`. The layout run is the
plan's own when the bench can run it, else the nearest one it can, and every difference is
recorded with its reason (`PlanRun.differences`):

* data parallelism with ZeRO 0/1/3 and recomputation none/full runs as planned (DDP, DDP +
  ZeroRedundancyOptimizer, FSDP2; train_dist.py), and so do TP and PP (PyTorch DTensor and
  torch.distributed.pipelining, parallel.py) and their products with DP; ZeRO 2 runs as FSDP
  (ZeRO 3), selective recomputation as full, interleaved stages (vpp > 1) as one stage per
  rank, ZeRO-1 with TP x DP as ZeRO-0; CP and EP are folded into data parallelism (the note
  says whether torchtitan or Megatron-Core are installed here; gpuplan does not drive them);
* the plan's devices are cut to the local ones (a CPU runs at most two gloo processes): dp
  first, then pp, then tp (also cut until it splits the heads evenly), keeping the per-rank
  micro-batch and micro-batches, so each rank does the plan's work;
* bf16 autocast with fp32 master weights and AdamW, full training (a LoRA/QLoRA or fp8 plan is
  run as that, with the reason);
* the model is scaled down only when this machine cannot hold it: whole layers are dropped
  (the GEMM shapes stay) until gpuplan's memory estimate fits the device (usable memory) or,
  on a CPU, half the host memory and a step within the time budget; then a narrow copy.

The prediction next to each measurement is gpuplan's for exactly what ran (the layout run, the
model run, this machine's accelerator and device count, the calibration in use), never the
plan's figure when they differ; the plan's own figures are kept beside it for reference
(`PlanRun.plan_predicted`). A CPU has no catalog entry: its predictions are null with the reason.
Planning here is torch-free (`load_plan`, `prepare_run`); `run_plan` launches through torchrun.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpuplan.bench.layout import BenchLayout, layout_label, strategy_label
from gpuplan.bench.plan_layout import Nearest, fit_local, tp_divides
from gpuplan.bench.records import Param, PlanRun, Prediction
from gpuplan.errors import GpuplanError, InputError
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["PlanOptions", "PreparedRun", "load_plan", "plan_facts", "prepare_run", "run_plan"]

_CPU_PROCESSES = 2  # gloo processes on a CPU, as the suite's training benchmark
_CPU_FLOPS = 2e10  # FLOP/s one CPU process is assumed to sustain when sizing a run to the time budget
_PLAN_FIGURES = ("step_time_s", "tokens_per_s", "mfu", "tflops_per_device")


def load_plan(path: Path | str, pick: int | None = None) -> tuple[dict[str, Any], str]:
    """(one plan, which document it came from: 'plan train', 'plan' or 'estimate train')."""
    from gpuplan.jsonio import read_json

    p = Path(path).expanduser()
    doc = read_json(p, field="plan", allowed="JSON from gpuplan plan train --json or estimate train --json")
    if not isinstance(doc, dict):
        raise InputError(field="plan", value=str(p), allowed="a JSON object")
    if isinstance(doc.get("plans"), list):
        from gpuplan.cli.emit import pick_plan  # the same choice as --emit --pick

        plans = [x for x in doc["plans"] if isinstance(x, dict) and "layout" in x]
        if not plans:
            raise InputError(field="plan", value=str(p), allowed="a plan train --json document with plans",
                             hint="the plan found nothing to rank")
        if pick is not None and plans[min(pick, len(plans)) - 1].get("detail") not in (None, "full"):
            raise InputError(field="pick", value=pick, allowed="a plan given in full detail",
                             hint="re-run plan train --json with a larger --top, or --all")
        return dict(pick_plan(plans, pick, doc.get("recommended"), ("accelerator", "devices", "offer"))), "plan train"
    if pick not in (None, 1):
        raise InputError(field="pick", value=pick, allowed="1 (the file holds one plan)")
    if "layout" in doc and "step_time_s" in doc:
        return doc, ("plan" if "accelerator" in doc else "estimate train")
    raise InputError(field="plan", value=str(p), allowed="gpuplan plan train --json, one of its plans, or "
                     "estimate train --json", hint="the file has no layout and step_time_s")


@dataclass(frozen=True, kw_only=True)
class PlanFacts:
    """What a plan says about the job, whatever document it came from."""

    model: str
    params_total: int | None
    accelerator: str
    devices: int
    layout: Mapping[str, Any]
    seq_len: int
    micro_batch: int
    microbatches: int
    precision: str
    method: str

    @property
    def global_batch(self) -> int:
        return int(self.layout.get("dp", 1)) * self.micro_batch * self.microbatches


def plan_facts(plan: Mapping[str, Any]) -> PlanFacts:
    """The job of a plan (model, accelerator, devices, layout, sequence length, batch, precision, method)."""
    try:
        lay = plan["layout"]
        mem = plan["memory"]
        ma = mem["assumptions"]
        acc = plan.get("accelerator") or plan["assumptions"]["accelerator"]
        return PlanFacts(model=str(ma["model"]), params_total=mem.get("params_total"), accelerator=str(acc),
                         devices=int(plan.get("devices") or lay["devices"]), layout=lay,
                         seq_len=int(ma["seq_len"]), micro_batch=int(lay["micro_batch"]),
                         microbatches=int(lay.get("microbatches") or 1), precision=str(ma.get("precision", "bf16")),
                         method=str(ma.get("method", "full")))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(field="plan", value=f"missing {exc}", allowed="a plan from gpuplan plan/estimate train "
                         "--json") from None


def _frameworks() -> str:
    found = [name for name, mod in (("torchtitan", "torchtitan"), ("Megatron-Core", "megatron.core"))
             if _installed(mod)]
    if found:
        return f"{' and '.join(found)} installed, but gpuplan bench does not drive them yet"
    return "neither torchtitan nor Megatron-Core is installed here"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True, kw_only=True)
class PreparedRun:
    """The layout and model run, every difference from the plan, and gpuplan's prediction for what runs."""

    spec: ModelSpec  # the model run
    scaled: bool
    layout: BenchLayout
    seq_len: int
    differences: tuple[str, ...]
    predicted: dict[str, float] = field(default_factory=dict)  # step_time_s, tokens_per_s, mfu, memory_bytes, ...
    terms: dict[str, float] = field(default_factory=dict)
    reason: str = ""  # why there is no prediction
    predicted_for: str = ""


def _nearest_layout(plan: Mapping[str, Any], facts: PlanFacts, spec: ModelSpec) -> tuple[Nearest, list[str]]:
    """The plan's layout as the bench runs it (at the plan's device count), with a reason for every change."""
    from gpuplan.emit.context import TrainTarget
    from gpuplan.emit.train_configs import ddp_layout

    t = TrainTarget(model_id=facts.model, spec=spec, plan={**plan, "devices": facts.devices}, method=facts.method,
                    seq_len=facts.seq_len, global_batch=facts.global_batch, precision=facts.precision, lora_rank=16,
                    lora_targets=(), tokens=None)
    lay = ddp_layout(t)  # emit's trial-run mapping of ZeRO, micro-batch and recomputation
    tp, pp = t.deg("tp"), t.deg("pp")
    dp = max(1, facts.devices // (tp * pp))  # CP and EP folded into DP: devices = tp x pp x dp x cp
    micro = int(lay["micro_batch"])
    why: list[str] = []
    folded = [f"{k}{t.deg(k)}" for k in ("cp", "ep") if t.deg(k) > 1]
    if folded:
        why.append(f"{' '.join(folded)} folded into data parallelism (dp{dp}): the bench runs TP and PP natively "
                   f"(PyTorch DTensor, torch.distributed.pipelining), not context or expert parallelism "
                   f"({_frameworks()})")
    if t.deg("vpp") > 1:
        why.append(f"vpp{t.deg('vpp')} run as vpp1: one pipeline stage per rank (Schedule1F1B), the interleaved "
                   f"schedule is not run by the bench")
    zero = int(facts.layout.get("zero_stage") or 0)
    if zero == 2:
        why.append("ZeRO-2 run as FSDP (ZeRO-3): the bench runs ZeRO 0, 1 and 3")
    run_zero = int(lay["zero"])
    if tp > 1 and dp > 1 and run_zero == 1:  # dp may still be cut to one rank: then ZeRO-1 runs (over nothing)
        run_zero = -1
    if facts.layout.get("recompute") == "selective":
        why.append("selective recomputation run as full activation checkpointing of every decoder layer")
    if facts.precision != "bf16":
        why.append(f"{facts.precision} plan run in bf16 autocast with fp32 master weights")
    if facts.method != "full" and facts.method not in ("pretrain", "full_ft"):
        why.append(f"{facts.method} plan run as full training of the same model (the bench trains every weight)")
    return Nearest(tp=tp, pp=pp, dp=dp, zero=run_zero, micro_batch=micro,
                    microbatches=max(1, facts.global_batch // (micro * dp)), recompute=str(lay["recompute"])), why


def _job(spec: ModelSpec, layout: BenchLayout, seq_len: int) -> Any:
    from gpuplan.workload.jobs import TrainingJob

    return TrainingJob(seq_len=seq_len, global_batch=layout.global_batch, micro_batch=layout.micro_batch,
                       precision="bf16", recompute=layout.recompute)


def _evaluate(spec: ModelSpec, layout: BenchLayout, seq_len: int, accelerator: Any, catalog: Any,
              calibration: Any) -> tuple[dict[str, Any] | None, bool]:
    """(gpuplan's figures for exactly this layout on `layout.world` local devices, whether it fits in memory)."""
    from gpuplan.search.candidates import LayoutChoices
    from gpuplan.search.cluster import cluster_hardware
    from gpuplan.search.train_planner import best_layout, plan_figures

    n = layout.world
    job = _job(spec, layout, seq_len)
    hw = cluster_hardware(catalog, accelerator.id, None, gpus_per_node=n)  # one node: the local devices
    choices = LayoutChoices(devices=[n], tp=[layout.tp], pp=[layout.pp], cp=[1], ep=[1], vpp=[1], zero=[layout.zero],
                            micro_batch=[layout.micro_batch], recompute=[layout.recompute], max_tp=n,
                            dp=[layout.dp])
    c, ev, best, _ = best_layout(spec, job, hw, choices, calibration=calibration)
    if len(c) == 0:
        return None, False
    i = best if best is not None else 0
    return plan_figures(spec, job, hw, c, ev, i, catalog=catalog, tokens=None, calibration=calibration), \
        best is not None


def _cpu_fits(spec: ModelSpec, layout: BenchLayout, seq_len: int, host_bytes: int | None,
              budget_s: float) -> str | None:
    """None if a CPU run of `spec` fits half the host memory and the time budget, else why not."""
    from gpuplan.estimate.flops import step_flops
    from gpuplan.estimate.memory_train import estimate_training_memory
    from gpuplan.workload.jobs import Layout

    mem = estimate_training_memory(spec, _job(spec, layout, seq_len),
                                   Layout(tp=layout.tp, pp=layout.pp, dp=layout.dp, zero_stage=layout.zero))
    per_rank = float(mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes + mem.activations_bytes)
    n = layout.world
    if host_bytes and per_rank * n > host_bytes / 2:
        return (f"{per_rank * n / 2**30:.1f} GiB for {n} process(es) (gpuplan's estimate) > half "
                f"the host memory ({host_bytes / 2**31:.1f} GiB)")
    tokens = layout.micro_batch * layout.microbatches * seq_len
    # a DP rank's FLOPs, split over its tp x pp processes
    flops = step_flops(spec, seq_len=seq_len, tokens=tokens).model_flops_per_token * tokens / (layout.tp * layout.pp)
    if flops / _CPU_FLOPS > budget_s:
        return (f"a step of {flops / 1e12:.2f} TFLOP per process takes about {flops / _CPU_FLOPS:,.0f} s on a CPU "
                f"(at {_CPU_FLOPS / 1e9:g} GFLOP/s) > {budget_s:.0f} s (the time budget per step)")
    return None


def _shrunk(spec: ModelSpec, layers: int) -> ModelSpec:
    return spec.model_copy(update={"name": f"{spec.name}-{layers}l", "num_layers": layers})


def prepare_run(plan: Mapping[str, Any], spec: ModelSpec, *, backend_kind: str, local_devices: int,
                accelerator: Any = None, catalog: Any = None, calibration: Any = None,
                host_memory_bytes: int | None = None, time_budget_s: float = 60.0,
                no_prediction_reason: str = "") -> PreparedRun:
    """Choose the layout and model to run for `plan` on this machine and gpuplan's prediction for them."""
    from gpuplan.bench.e2e import bench_model

    facts = plan_facts(plan)
    near, diffs = _nearest_layout(plan, facts, spec)
    where = "this CPU runs at most" if backend_kind == "cpu" else "this machine has"
    layout, cut = fit_local(near, spec, local_devices, where)
    diffs += cut
    if spec.moe is not None or spec.mla is not None:
        diffs.append("MoE/MLA layers run as dense attention and MLP of the same width (the bench builds a Llama "
                     "decoder)")
        spec = spec.model_copy(update={"moe": None, "mla": None})
    seq = facts.seq_len
    acc = accelerator

    def holds(s: ModelSpec) -> tuple[str | None, dict[str, Any] | None]:
        if acc is not None and catalog is not None:
            fig, fits = _evaluate(s, layout, seq, acc, catalog, calibration)
            if fig is None:
                return "the planner has no candidate for this layout", None
            if not fits:
                return (f"{fig['memory']['total_bytes'] / 2**30:.1f} GiB per device (gpuplan's estimate) does not fit "
                        f"one {acc.id}"), fig
            return None, fig
        if backend_kind == "cpu":
            return _cpu_fits(s, layout, seq, host_memory_bytes, time_budget_s), None
        return None, None  # a device without a catalog entry: run as planned

    run_spec, scaled = spec, False
    why, fig = holds(spec)
    if why is not None:
        first = why
        least = layout.pp  # a layer per pipeline stage at least
        lo, hi = least - 1, spec.num_layers  # the most layers that fit: in [lo, hi); least - 1 = none found yet
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if holds(_shrunk(spec, mid))[0] is None:
                lo = mid
            else:
                hi = mid
        if lo >= least:
            run_spec = _shrunk(spec, lo)
            why, fig = holds(run_spec)
        else:  # even one layer per stage is too much: a narrow copy with the model's ratios
            small = bench_model(spec, small=True)
            run_spec = small.model_copy(update={"num_layers": max(small.num_layers, least)})
            if not tp_divides(run_spec, layout.tp):
                tp = layout.tp
                while tp > 1 and not tp_divides(run_spec, tp):
                    tp //= 2
                diffs.append(f"tp{layout.tp} run as tp{tp}: the narrow copy has {run_spec.num_heads} query / "
                             f"{run_spec.kv_heads} key-value heads")
                layout = replace(layout, tp=tp)
            why, fig = holds(run_spec)
        scaled = True
        diffs.append(f"model scaled down to {run_spec.name} ({run_spec.num_layers} layers, width "
                     f"{run_spec.hidden_size}): this machine cannot hold {spec.name}: {first}"
                     + (f"; still: {why}" if why else ""))
    if fig is None and acc is not None and catalog is not None:
        fig, _ = _evaluate(run_spec, layout, seq, acc, catalog, calibration)
    if fig is None:
        reason = no_prediction_reason or "no catalog accelerator for this device: no prediction"
        return PreparedRun(spec=run_spec, scaled=scaled, layout=layout, seq_len=seq, differences=tuple(diffs),
                           reason=reason, predicted_for=reason)
    mem = fig["memory"]
    visible = float(mem["weights_bytes"] + mem["gradients_bytes"] + mem["optimizer_bytes"] + mem["activations_bytes"])
    predicted = {**{k: float(fig[k]) for k in _PLAN_FIGURES}, "memory_bytes": visible,
                 "memory_total_bytes": float(mem["total_bytes"])}
    cal_terms = fig["assumptions"]["calibration"]
    eff = f"compute_efficiency.{acc.id}.bf16"
    terms = {"bf16_dense_tflops": float(acc.dense_tflops("bf16") or 0.0), "devices": float(layout.world),
             **{f"breakdown_s.{k}": float(v) for k, v in fig["breakdown_s"].items() if v},
             **{name: float(t["value"]) for name, t in cal_terms.items()
                if name in (eff, "gemm_half_width", "dp_overlap", "zero3_overlap")}}
    if eff not in terms:
        eff = "compute_efficiency.default.bf16"
        terms[eff] = float(cal_terms[eff]["value"])
    # the seconds of the step that scale with 1 / efficiency (the estimate again at half the efficiency), so
    # gpuplan calibrate can solve for the efficiency that gives the measured step
    from gpuplan.estimate.calibration import default_calibration

    base = calibration or default_calibration()
    half = base.model_copy(update={"terms": {**base.terms, eff: base.terms[eff].model_copy(
        update={"value": base.terms[eff].value / 2})}})
    slow, _ = _evaluate(run_spec, layout, seq, acc, catalog, half)
    if slow is not None:
        terms["compute_scaled_s"] = float(slow["step_time_s"]) - predicted["step_time_s"]
    return PreparedRun(spec=run_spec, scaled=scaled, layout=layout, seq_len=seq, differences=tuple(diffs),
                       predicted=predicted, terms=terms,
                       predicted_for=f"gpuplan estimate train of {run_spec.name}, "
                                     f"{layout_label(layout.to_dict())}, seq {seq}, on {layout.world} x {acc.id}")


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    plan: Path
    pick: int | None = None
    model: str | None = None
    device: str = "auto"
    accelerator: str | None = None
    out: Path = Path("gpuplan-bench.json")
    warmup: int = 2  # DDP rebuilds its buckets after the first step
    repeats: int = 5
    timeout_s: float = 300.0
    use_transformers: bool = True


def _spec(facts: PlanFacts, model: str | None) -> ModelSpec:
    from gpuplan.workload.presets import load_model

    try:
        spec = load_model(model or facts.model)
    except GpuplanError as exc:
        if model:
            raise
        raise InputError(field="model", value=facts.model, allowed="a preset id, config.json or model folder",
                         hint=f"the plan names {facts.model!r}, which is not a preset; pass --model with the "
                              f"config.json the plan was made for ({exc})") from None
    if facts.params_total:
        from gpuplan.workload.params import count_params

        have = count_params(spec).total
        if abs(have - facts.params_total) > 0.01 * facts.params_total:
            raise InputError(field="model", value=f"{spec.name} ({have:,} parameters)",
                             allowed=f"the plan's model, {facts.model} ({facts.params_total:,} parameters)",
                             hint="pass --model with the model the plan was made for")
    return spec


def run_plan(opts: PlanOptions, *, command: str = "gpuplan bench --plan") -> Any:
    """Run the plan's PoC training here and write the result (measured vs predicted) to `opts.out`."""
    from gpuplan import __version__
    from gpuplan.bench.backend import detect_backend
    from gpuplan.bench.context import BenchContext
    from gpuplan.bench.predict import predictor_for
    from gpuplan.bench.records import BenchmarkStatus, BenchResult, write_result
    from gpuplan.bench.suite import _machine
    from gpuplan.bench.train_dist import launch_train
    from gpuplan.emit.context import plan_id
    from gpuplan.hardware import load_catalog

    plan, document = load_plan(opts.plan, opts.pick)
    facts = plan_facts(plan)
    spec = _spec(facts, opts.model)
    backend = detect_backend(opts.device)
    machine = _machine(backend)
    predictor, acc_id, acc_note = predictor_for(opts.accelerator, backend.kind, machine.devices[0].name)
    local = min(_CPU_PROCESSES, machine.cpu_count) if backend.kind == "cpu" else backend.count
    catalog = load_catalog() if predictor.acc is not None else None
    repeats = max(opts.repeats, 1)
    prep = prepare_run(plan, spec, backend_kind=backend.kind, local_devices=local, accelerator=predictor.acc,
                       catalog=catalog, calibration=predictor.cal, host_memory_bytes=machine.host_memory_bytes,
                       time_budget_s=opts.timeout_s / (opts.warmup + repeats) / 2,
                       no_prediction_reason=predictor.reason)
    diffs = list(prep.differences)
    if facts.accelerator != (acc_id or ""):
        diffs.append(f"the plan is for {facts.accelerator}; this machine is "
                     f"{acc_id or machine.devices[0].name + ' (' + backend.kind + ')'}: the predictions are gpuplan's "
                     f"for this machine, the plan's own figures are kept for reference only")
    t0 = time.perf_counter()
    res = launch_train(backend, prep.spec.model_dump_json(), prep.layout, seq_len=prep.seq_len, warmup=opts.warmup,
                       repeats=repeats, timeout_s=opts.timeout_s, use_transformers=opts.use_transformers)
    seconds = round(time.perf_counter() - t0, 3)
    ctx = BenchContext(backend=backend, predictor=predictor, quick=False, model=prep.spec, tp=1,
                       directory=Path("."))
    if res.samples:
        _add(ctx, prep, res, facts)
    notes = [*diffs, *ctx.notes, *([res.note] if res.note else [])]
    status = "ok" if res.error is None else ("partial" if res.samples else "failed")
    run_layout: dict[str, Param] = dict(prep.layout.to_dict())
    pr = PlanRun(source=str(opts.plan), document=document, pick=opts.pick, plan_id=plan_id("train", {
        **plan, "accelerator": facts.accelerator, "devices": facts.devices}), model=facts.model,
        run_model=prep.spec.name, scaled=prep.scaled, accelerator=facts.accelerator, devices=facts.devices,
        planned_layout=_plan_label(facts), run_layout=run_layout, run_layout_label=layout_label(prep.layout.to_dict()),
        strategy=strategy_label(prep.layout),
        processes=res.nproc, implementation=res.implementation, seq_len=prep.seq_len,
        differences=tuple(diffs), predicted_for=prep.predicted_for,
        plan_predicted={**{k: _num(plan.get(k)) for k in _PLAN_FIGURES},
                        "memory_bytes": _visible(plan.get("memory") or {}),
                        "memory_total_bytes": _num((plan.get("memory") or {}).get("total_bytes"))})
    result = BenchResult(
        gpuplan_version=__version__, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=command, quick=False, complete=res.error is None, machine=machine, accelerator=acc_id,
        accelerator_note=acc_note,
        benchmarks=(BenchmarkStatus(name="plan", status=status, seconds=seconds,
                                    error=res.error, measurements=len(ctx.measurements), notes=tuple(notes)),),
        measurements=tuple(ctx.measurements), telemetry=None, plan=pr)
    write_result(result, opts.out)
    return result


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(float(v)) else None


def _visible(mem: Mapping[str, Any]) -> float | None:
    """Weights, gradients, optimizer states and activations: what max_memory_allocated sees (no CUDA context)."""
    parts = [_num(mem.get(k)) for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes")]
    return None if any(x is None for x in parts) else float(sum(x for x in parts if x is not None))


def _plan_label(f: PlanFacts) -> str:
    lay = f.layout
    return (f"{layout_label({**lay, 'zero': lay.get('zero_stage', 0), 'microbatches': f.microbatches})} "
            f"on {f.devices} x {f.accelerator}, seq {f.seq_len}, {f.precision}, {f.method}")


def _add(ctx: Any, prep: PreparedRun, res: Any, facts: PlanFacts) -> None:
    from gpuplan.bench.e2e import record_training
    from gpuplan.estimate.flops import step_flops

    lay, samples, spec = prep.layout, res.samples, prep.spec
    med = sorted(samples)[len(samples) // 2]
    tokens = lay.global_batch * prep.seq_len
    tps = tokens / med
    fpt = step_flops(spec, seq_len=prep.seq_len, tokens=tokens).model_flops_per_token
    params: dict[str, Param] = {"model": spec.name, "plan_model": facts.model, "scaled": prep.scaled,
                                "layers": spec.num_layers, "hidden": spec.hidden_size, "seq_len": prep.seq_len,
                                "global_batch": lay.global_batch, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
                                "zero": lay.zero,
                                "micro_batch": lay.micro_batch, "microbatches": lay.microbatches,
                                "recompute": lay.recompute, "processes": res.nproc,
                                "dist_backend": res.dist_backend, "flops_per_token": fpt,
                                "implementation": res.implementation}

    def pred(key: str, unit: str, why: str | None = None) -> Prediction:
        if not prep.predicted or why:
            return ctx.predictor.none(unit, why or prep.reason)  # type: ignore[no-any-return]
        return Prediction(value=prep.predicted[key], unit=unit, terms=prep.terms,
                          basis=f"{prep.predicted_for}: {key}")

    record_training(ctx, "plan", res, med=med, tps=tps, fpt=fpt, params=params, pred=pred)
