"""One fixed serving deployment: latency, throughput and memory (`gpuplan estimate infer`).

Three ways to load the deployment:
* `batch`: `batch` requests started together on each replica (the fixed-batch benchmark
  scenario, closed forms in `infer_perf`);
* `qps`: Poisson arrivals at `qps` over the whole deployment, split evenly over the
  replicas and run through the load simulator (`gpuplan.simulate`): p50/p90/p99 figures;
* neither: offline throughput with as many requests in flight as fit.

An empty tp takes the smallest tensor-parallel degree whose replica holds the weights
and one request's KV cache. A model that fits nowhere raises InputError naming the
nearest deployment that fits (more tensor/pipeline parallelism, a smaller weight format,
or a larger part from the catalog). All figures are estimates.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np

from gpuplan.errors import InputError
from gpuplan.estimate.comm import node_link
from gpuplan.estimate.engine_profile import engine_memory_calibration
from gpuplan.estimate.infer_pd import decode_instance_perf, prefill_instance_perf
from gpuplan.estimate.infer_perf import InferencePerf, fixed_batch_perf, offline_perf
from gpuplan.estimate.infer_step import fp4_peak, node_devices, step_cost_model
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.estimate.links import Link
from gpuplan.estimate.memory_infer import estimate_inference_memory
from gpuplan.hardware.catalog import Catalog
from gpuplan.hardware.schema_devices import Accelerator
from gpuplan.units import GIB
from gpuplan.workload.engines import EngineProfile
from gpuplan.workload.jobs import FP4_FORMATS, InferenceJob, Layout, serving_layout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["Instance", "InferenceEstimate", "estimate_inference", "smallest_fitting_layout"]

# colocated: one engine serves prefill and decode; prefill / decode: one instance of a disaggregated deployment
Instance = Literal["colocated", "prefill", "decode"]

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64, 72)
FORMATS_BY_SIZE = ("bf16", "fp8", "int8", "int4")  # largest to smallest weights


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceEstimate:
    """What `gpuplan estimate infer --json` prints."""

    perf: InferencePerf
    layout: Layout
    replicas: int
    num_accels: int
    max_batch_fits: int
    memory: dict[str, Any]
    percentiles: dict[str, dict[str, float]] | None = None  # simulated: ttft_s/tpot_s/e2e_s -> p50/p90/p99
    simulation: dict[str, Any] | None = None
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        p = self.perf
        out: dict[str, Any] = {}
        if self.percentiles is not None:
            out.update(self.percentiles)
        else:
            out.update(ttft_s=p.ttft_s, tpot_s=p.tpot_s, e2e_s=p.e2e_s)
        out.update(
            scenario=p.scenario,
            output_tokens_per_s=p.output_tokens_per_s,
            output_tokens_per_s_per_device=p.output_tokens_per_s_per_device,
            requests_per_s=p.requests_per_s,
            total_tokens_per_s=p.total_tokens_per_s,
            batch_per_replica=p.batch,
            max_batch_fits=self.max_batch_fits,
            layout={"tp": self.layout.tp, "pp": self.layout.pp, "ep": self.layout.ep},
            replicas=self.replicas,
            num_accels=self.num_accels,
            memory=self.memory,
            decode_step=p.decode_step,
            provenance="estimated",
        )
        if self.simulation is not None:
            out["simulation"] = self.simulation
        out["assumptions"] = {**self.assumptions, **p.assumptions}
        return out


def _fits(spec: ModelSpec, acc: Accelerator, layout: Layout, weights: str, kv_dtype: str, eng: EngineProfile,
          tokens: int) -> StepCostModel | None:
    try:
        m = step_cost_model(spec, accelerator=acc, layout=layout, weights=weights, kv_dtype=kv_dtype, engine=eng)
    except InputError:
        return None
    return m if m.kv_capacity_tokens >= tokens else None


def smallest_fitting_layout(spec: ModelSpec, acc: Accelerator, weights: str, kv_dtype: str, eng: EngineProfile,
                            tokens: int, *, max_devices: int = 64) -> Layout | None:
    """The fewest-device layout whose replica holds the weights and `tokens` of KV (tp before pp)."""
    for devices in sorted({tp * pp for tp in TP_CHOICES for pp in (1, 2, 4, 8)}):
        if devices > max_devices:
            break
        for tp in sorted(TP_CHOICES, reverse=True):  # the most tensor parallelism first (a step's latency)
            if devices % tp or devices // tp not in (1, 2, 4, 8):
                continue
            lay = Layout(tp=tp, pp=devices // tp)
            if _fits(spec, acc, lay, weights, kv_dtype, eng, tokens) is not None:
                return lay
    return None


def _nearest(spec: ModelSpec, acc: Accelerator, weights: str, kv_dtype: str, eng: EngineProfile, tokens: int,
             catalog: Catalog | None) -> str:
    """A hint naming the nearest deployment that fits."""
    lay = smallest_fitting_layout(spec, acc, weights, kv_dtype, eng, tokens)
    if lay is not None:
        return f"nearest that fits: --tp {lay.tp}" + (f" --pp {lay.pp}" if lay.pp > 1 else "")
    start = FORMATS_BY_SIZE.index(weights) if weights in FORMATS_BY_SIZE else 0
    for w in FORMATS_BY_SIZE[start + 1:]:
        lay = smallest_fitting_layout(spec, acc, w, kv_dtype, eng, tokens)
        if lay is not None:
            return f"nearest that fits: --weights {w} --tp {lay.tp}" + (f" --pp {lay.pp}" if lay.pp > 1 else "")
    if catalog is not None:
        bigger = sorted((a for a in catalog.accelerators.values()
                         if (a.memory_gib or 0) > (acc.memory_gib or 0) and a.hbm_bandwidth_gbps),
                        key=lambda a: a.memory_gib or 0)
        for other in bigger:
            for w in FORMATS_BY_SIZE[start:]:
                lay = smallest_fitting_layout(spec, other, w, kv_dtype, eng, tokens)
                if lay is not None:
                    return (f"nearest that fits: --accelerator {other.id} --weights {w} --tp {lay.tp}"
                            + (f" --pp {lay.pp}" if lay.pp > 1 else ""))
    return "it fits on no catalog device even at int4 with up to 64 devices per replica"


def _check_instance(instance: str, draft_tokens: int, qps: float | None, output_len: int) -> None:
    if instance not in get_args(Instance):
        raise InputError(field="instance", value=instance, allowed=", ".join(get_args(Instance)))
    if draft_tokens < 0 or (draft_tokens and instance != "decode"):
        raise InputError(field="draft_tokens", value=draft_tokens,
                         allowed="0, or a positive count with --instance decode",
                         hint="speculative decoding is estimated for a disaggregated decode instance")
    if instance != "colocated" and qps is not None:
        raise InputError(field="qps", value=qps, allowed="left out with --instance prefill or decode",
                         hint="an instance of a disaggregated deployment is estimated at a fixed batch")
    if instance == "prefill" and output_len != 1:
        raise InputError(field="output_len", value=output_len, allowed="1 with --instance prefill",
                         hint="a prefill instance hands each request on after its first token")


def _check_lengths(input_len: int, output_len: int, batch: int | None, qps: float | None) -> None:
    for name, v in (("input_len", input_len), ("output_len", output_len)):
        if v < 1:
            raise InputError(field=name, value=v, allowed="a token count >= 1")
    if batch is not None and batch < 1:
        raise InputError(field="batch", value=batch, allowed="an integer >= 1")
    if qps is not None and not qps > 0:
        raise InputError(field="qps", value=qps, allowed="a positive request rate")
    if batch is not None and qps is not None:
        raise InputError(field="qps", value=qps, allowed="left out with --batch (one load at a time)")


def estimate_inference(spec: ModelSpec, *, accelerator: Accelerator, engine: EngineProfile, input_len: int,
                       output_len: int, num_accels: int | None = None, tp: int | None = None, pp: int = 1,
                       ep: int = 1, weights: str = "bf16", kv_dtype: str | None = None, batch: int | None = None,
                       qps: float | None = None, num_requests: int = 2000, seed: int = 0,
                       catalog: Catalog | None = None, instance: Instance = "colocated", draft_tokens: int = 0,
                       attention_fp8: bool = False, scale_out: Link | None = None) -> InferenceEstimate:
    """Latency, throughput and memory of serving `spec` on `num_accels` devices of one accelerator.

    `ep > tp` runs attention data-parallel (ep/tp attention groups of tp devices sharing the experts of an
    ep x pp group; `scale_out` is the network link the all-to-all takes once that group spans nodes).
    `instance` prefill or decode estimates one instance of a prefill/decode-disaggregated deployment
    (`infer_pd`); `draft_tokens` is speculative (MTP) decoding in a decode instance.
    """
    _check_lengths(input_len, output_len, batch, qps)
    _check_instance(instance, draft_tokens, qps, output_len)
    engine.check_runs_on(accelerator)
    engine.check_serves(spec.name, weights)
    engine = engine.on_part(accelerator, mla=spec.mla is not None)  # the scheduler defaults it picks on this part
    for fmt, fld in ((weights, "weights"), (kv_dtype, "kv_dtype")):
        if fmt in FP4_FORMATS:  # a 4-bit float format needs FP4 tensor cores: say so before any layout search
            fp4_peak(accelerator, fmt, field=fld)
    kv = kv_dtype or InferenceJob(weights=weights).kv_cache_dtype
    tokens = input_len + output_len
    acc = accelerator
    if tp is None:
        lay = smallest_fitting_layout(spec, acc, weights, kv, engine, tokens,
                                      max_devices=(num_accels or 64) // pp)
        if lay is None or lay.pp != pp and pp != 1:
            raise InputError(field="model", value=spec.name,
                             allowed=f"a deployment whose devices hold the weights and one {tokens}-token request",
                             hint=_nearest(spec, acc, weights, kv, engine, tokens, catalog))
        tp = lay.tp
        pp = max(pp, lay.pp)
    layout = serving_layout(tp=tp, pp=pp, ep=ep)
    per_replica = tp * pp  # one attention group (a whole replica unless ep > tp)
    group = max(tp, ep) * pp  # devices that share one copy of the weights
    n = num_accels or group
    if n % group:
        lo, hi = n // group * group, (n // group + 1) * group
        raise InputError(field="num_accels", value=n, allowed=f"a multiple of max(tp, ep) x pp = {group}",
                         hint=f"nearest: --num-accels {lo or hi}" + (f" or {hi}" if lo else ""))
    replicas = n // per_replica
    model = step_cost_model(spec, accelerator=acc, layout=layout, weights=weights, kv_dtype=kv, engine=engine,
                            catalog=catalog, scale_out=scale_out, attention_fp8=attention_fp8)
    if model.kv_capacity_tokens < tokens:
        raise InputError(field="model", value=spec.name,
                         allowed=f"a replica that holds the weights and one {tokens}-token request "
                                 f"(this one holds {model.kv_capacity_tokens} KV tokens)",
                         hint=_nearest(spec, acc, weights, kv, engine, tokens, catalog))
    fits = min(model.kv_capacity_tokens // tokens, engine.max_num_seqs)
    percentiles = simulation = None
    if instance == "decode":
        # the prompt's KV arrives over the scale-out network when one is given, else over the node's fast link
        # (prefill and decode instances in one server)
        kv_link = scale_out if scale_out is not None else node_link(acc, node_devices(acc))
        perf = decode_instance_perf(model, batch=batch or max(fits, 1), input_len=input_len, output_len=output_len,
                                    draft_tokens=draft_tokens, acceptance=engine.value("mtp_acceptance"),
                                    replicas=replicas, devices_per_replica=per_replica, kv_link=kv_link)
    elif instance == "prefill":
        perf = prefill_instance_perf(model, batch=batch or 1, input_len=input_len,
                                     max_batched_tokens=engine.max_batched_tokens,
                                     chunked_prefill=engine.chunked_prefill, replicas=replicas,
                                     devices_per_replica=per_replica)
    elif batch is not None:
        perf = fixed_batch_perf(model, batch=batch, input_len=input_len, output_len=output_len, replicas=replicas,
                                devices_per_replica=per_replica, max_batched_tokens=engine.max_batched_tokens,
                                chunked_prefill=engine.chunked_prefill)
    elif qps is not None:
        # a pipeline-parallel replica keeps pp batches in flight (simulate.pipeline): one of them is simulated
        batch_model, seqs = _pipeline_batch(model, engine, pp)
        perf, percentiles, simulation = _simulate(batch_model, engine, qps / (replicas * pp), input_len, output_len,
                                                  num_requests, seed, replicas * pp, per_replica // pp,
                                                  groups=layout.dp, max_num_seqs=seqs)
        perf = _whole_replicas(perf, pp, replicas, per_replica)
    else:
        batch_model, seqs = _pipeline_batch(model, engine, pp)
        perf = offline_perf(batch_model, input_len=input_len, output_len=output_len, max_num_seqs=seqs,
                            max_batched_tokens=engine.max_batched_tokens, scheduling=engine.scheduling,
                            chunked_prefill=engine.chunked_prefill, kv_block_tokens=engine.kv_block_tokens,
                            replicas=replicas * pp, devices_per_replica=per_replica // pp,
                            attention_groups=layout.dp)
        perf = _whole_replicas(perf, pp, replicas, per_replica)
    in_flight = perf.batch if perf.batch else 1
    cal = engine_memory_calibration(engine)
    job = InferenceJob(weights=weights, kv_dtype=kv, batch=max(1, in_flight), context=tokens,
                       memory_fraction=engine.gpu_memory_fraction)
    mem = estimate_inference_memory(spec, job, layout, calibration=cal).to_json()
    mem["device_memory_gib"] = acc.memory_gib
    mem["engine_budget_bytes"] = round((acc.memory_gib or 0.0) * GIB * engine.gpu_memory_fraction)
    mem["kv_capacity_tokens_per_replica"] = model.kv_capacity_tokens
    assumptions = {
        "model": spec.name, "accelerator": acc.id, "engine": engine.id, "engine_settings": engine.settings(),
        "weights": weights, "kv_dtype": kv, "input_len": input_len, "output_len": output_len,
        "engine_terms": model.terms, "step_model": model.assumptions,
        "request_overhead_s": model.request_overhead,
        # user-set terms outside the range their source publishes (EngineProfile.outside_literature)
        "terms_outside_literature": list(engine.outside_literature()),
    }
    return InferenceEstimate(perf=perf, layout=layout, replicas=replicas, num_accels=n, max_batch_fits=fits,
                             memory=mem, percentiles=percentiles, simulation=simulation, assumptions=assumptions)


def _pipeline_batch(model: StepCostModel, eng: EngineProfile, pp: int) -> tuple[StepCostModel, int]:
    """(the step model of one of the pp batches a pipeline-parallel replica keeps in flight, its running-request cap):
    simulate.pipeline.pipeline_batch on the engine's scheduler settings."""
    from gpuplan.simulate import EngineConfig
    from gpuplan.simulate.pipeline import pipeline_batch

    one, cfg = pipeline_batch(model, EngineConfig.from_profile(eng), pp)
    return one, cfg.max_num_seqs


def _whole_replicas(perf: InferencePerf, pp: int, replicas: int, per_replica: int) -> InferencePerf:
    """`perf` of replicas x pp batch engines told per replica: the totals stay, the sequences in flight add up."""
    if pp <= 1:
        return perf
    return replace(perf, replicas=replicas, devices_per_replica=per_replica, batch=perf.batch * pp)


def _simulate(model: StepCostModel, eng: EngineProfile, qps: float, input_len: int, output_len: int, n: int,
              seed: int, replicas: int, per_replica: int, groups: int = 1, max_num_seqs: int | None = None
              ) -> tuple[InferencePerf, dict[str, dict[str, float]], dict[str, Any]]:
    """One attention group at `qps` (of `groups` in lock-step when attention runs data-parallel)."""
    from gpuplan.simulate import EngineConfig, LengthDist, poisson_workload, simulate_engine, summarize
    from gpuplan.simulate.lockstep import lockstep_cost

    if n < 1:
        raise InputError(field="num_requests", value=n, allowed="a positive integer")
    wl = poisson_workload(qps=qps, num_requests=n, input_len=LengthDist.fixed(input_len),
                          output_len=LengthDist.fixed(output_len), seed=seed)
    cost = lockstep_cost(model, groups=groups, group_qps=qps, input_len_mean=input_len, output_len_mean=output_len,
                         max_batched_tokens=eng.max_batched_tokens, chunked_prefill=eng.chunked_prefill)
    cfg = EngineConfig.from_profile(eng)
    run = simulate_engine(wl, cost, cfg if max_num_seqs is None else replace(cfg, max_num_seqs=max_num_seqs))
    m = summarize(run, warmup_fraction=0.1)
    over = model.request_overhead

    def pct(p: Any, shift: float = 0.0) -> dict[str, float]:
        return {"mean": p.mean + shift, "p50": p.p50 + shift, "p90": p.p90 + shift, "p99": p.p99 + shift}

    percentiles = {"ttft_s": pct(m.ttft_s, over), "tpot_s": pct(m.tpot_s), "e2e_s": pct(m.e2e_s, over)}
    warnings = []
    if m.requests_per_s < 0.95 * qps:
        warnings.append(f"the offered {qps:g} req/s per replica exceeds what a replica serves "
                        f"({m.requests_per_s:.3g} req/s): queues grow without bound and latencies depend on "
                        "the run's length; add replicas")
    perf = InferencePerf(
        scenario="server", batch=int(np.ceil(m.batch_mean)), replicas=replicas, devices_per_replica=per_replica,
        input_len=input_len, output_len=output_len, ttft_s=m.ttft_s.p50 + over, tpot_s=m.tpot_s.p50,
        e2e_s=m.e2e_s.p50 + over, output_tokens_per_s=m.output_tokens_per_s * replicas,
        requests_per_s=m.requests_per_s * replicas,
        assumptions={"simulated": f"{n} Poisson arrivals at {qps:g} req/s per replica (seed {seed}); "
                                  "the first 10% left out of the latency figures",
                     "warnings": warnings},
    )
    sim = {k: v for k, v in m.to_json().items() if k not in ("ttft_s", "tpot_s", "e2e_s")}
    return perf, percentiles, sim
