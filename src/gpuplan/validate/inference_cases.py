"""Predict the inference rows of a ground-truth case file (throughput, TTFT, TPOT, e2e latency).

Rules for unstated fields (ground-truth README): weights default to bf16, the KV cache to
the weight dtype for 16-bit weights, else bf16. An empty tp/pp/ep is chosen as a competent
team would: every tensor-parallel degree (pp = 1; ep = 1 or ep = tp for MoE models) whose
replica fits on the row's devices is tried and the best for the row's metric kept (the
most throughput, or the least latency). `num_accels` is the whole deployment: it holds
num_accels / (tp x pp) replicas. Rows measured on a dataset without stated lengths take
that dataset's lengths (`data/datasets.yaml`, named by the row's `settings`: dataset=, num_prompts=). One set of
calibration terms per engine serves every row; nothing is fitted per row.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.infer_pd import decode_instance_perf, prefill_instance_perf
from gpuplan.estimate.infer_perf import InferencePerf, fixed_batch_perf, offline_perf
from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.hardware import Catalog
from gpuplan.search.cluster import cluster_hardware, usual_network
from gpuplan.validate.cases import Row, model_for_row, opt_int
from gpuplan.validate.inference_workloads import Dataset, dataset, simulate_row
from gpuplan.validate.memory_cases import CaseResult
from gpuplan.validate.row_notes import vendor_note
from gpuplan.validate.row_settings import RowSettings, resolve_row
from gpuplan.workload.engines import EngineProfile, engine
from gpuplan.workload.jobs import InferenceJob, Layout, serving_layout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["INFER_METRICS", "evaluate_inference_row"]

INFER_METRICS = ("output_tokens_per_s", "output_tokens_per_s_per_device", "total_tokens_per_s", "requests_per_s",
                 "ttft_ms", "tpot_ms", "e2e_latency_s")
LATENCY_METRICS = ("ttft_ms", "tpot_ms", "e2e_latency_s")


def _not_modelled(st: RowSettings) -> str | None:
    if st.speculative and st.draft_tokens is None:
        return "speculative decoding with an unstated number of draft tokens (draft_tokens) is not modelled"
    if st.speculative and st.deployment != "pd_disaggregated":
        return "speculative decoding is modelled for disaggregated decode instances only"
    return None


def _disaggregated(row: Row, st: RowSettings, spec: ModelSpec, eng: EngineProfile, catalog: Catalog,
                   weights: str, kv: str, input_len: float, output_len: float) -> tuple[InferencePerf, str]:
    """One instance of a prefill/decode-disaggregated deployment, on the layout the row states (attention
    data parallelism when ep > tp): a prefill instance when each request leaves with one token, else a decode
    instance. The row's `batch` is the instance's concurrency, shared by its attention groups."""
    tp, pp, ep = opt_int(row, "tp"), opt_int(row, "pp") or 1, opt_int(row, "ep") or 1
    if tp is None:
        raise GpuplanError("a disaggregated row must state its layout (tp, ep)")
    n_devices = opt_int(row, "num_accels") or max(tp, ep) * pp
    layout = serving_layout(tp=tp, pp=pp, ep=ep)
    acc = catalog.accelerator(row["accelerator"])
    network = row.get("network") or usual_network(catalog, acc.id)[0]
    scale_out = cluster_hardware(catalog, acc.id, network, nics_per_node=opt_int(row, "nics_per_node")).inter()
    model = step_cost_model(spec, accelerator=acc, layout=layout, weights=weights, kv_dtype=kv, engine=eng,
                            catalog=catalog, scale_out=scale_out, attention_fp8=st.attention_dtype == "fp8")
    groups = max(1, n_devices // (tp * pp))
    batch = max(1, round((opt_int(row, "batch") or groups) / groups))
    # the acceptance the run's source measured, else the engine's term (DeepSeek-V3 report's 85%)
    acceptance = st.mtp_acceptance if st.mtp_acceptance is not None else eng.value("mtp_acceptance")
    if output_len <= 1:
        perf = prefill_instance_perf(model, batch=batch, input_len=input_len,
                                     max_batched_tokens=eng.max_batched_tokens, chunked_prefill=eng.chunked_prefill,
                                     replicas=groups, devices_per_replica=tp * pp)
    else:
        perf = decode_instance_perf(model, batch=batch, input_len=input_len, output_len=output_len,
                                    draft_tokens=st.draft_tokens or 0, acceptance=acceptance,
                                    replicas=groups, devices_per_replica=tp * pp)
    detail = (f"{eng.id} {perf.scenario} tp={tp} ep={ep} ({layout.dp} attention groups per EP group) "
              f"{weights}/{kv} batch={batch}/group I={input_len:.0f} O={output_len:.0f} "
              f"draft={st.draft_tokens or 0} accept={acceptance:g} "
              f"ttft={perf.ttft_s * 1e3:.1f}ms tpot={perf.tpot_s * 1e3:.2f}ms "
              f"ep_link={model.assumptions['ep_link']}")
    return perf, detail


def _lengths(row: Row, st: RowSettings) -> tuple[float, float, Dataset | None]:
    """Stated lengths, else the means of the dataset the row's settings name (then the row is simulated)."""
    i, o = opt_int(row, "input_len"), opt_int(row, "output_len")
    d = dataset(st.dataset) if st.dataset else None
    if i is not None and o is not None:
        return float(i), float(o), None
    if d is None:
        raise GpuplanError("input/output lengths not stated and no dataset in the row's settings")
    return float(i if i is not None else d.input_mean), float(o if o is not None else d.output_mean), d


def _engine_id(row: Row, st: RowSettings) -> str:
    """The row's engine; NeMo's Python inference wrapper around TensorRT-LLM engines (`framework=nemo`)
    runs as `generic`, a `generic` row that ran HF Transformers' generate (`framework=hf_transformers`)
    as `hf_transformers`.

    NeMo Framework inference drives TensorRT-LLM engines from Python, one call per generation
    step (NeMo deploy docs), so its per-step host overhead is that of a plain Python engine,
    not of TensorRT-LLM's C++ batch manager.
    """
    if st.framework == "nemo":
        return "generic"
    if st.framework == "hf_transformers" and (row.get("engine") or "generic") == "generic":
        return "hf_transformers"  # transformers' generate: eager PyTorch, no serving engine
    return row.get("engine") or "generic"


def _default_kv(weights: str) -> str:
    """The README default: the weight dtype for 16-bit weights, else bf16. (NVIDIA ModelOpt FP8
    checkpoints carry an FP8 KV cache: those rows state kv_precision fp8, row_settings.yaml.)"""
    return InferenceJob(weights=weights).kv_cache_dtype


def _layouts(spec: ModelSpec, row: Row, n_devices: int) -> list[Layout]:
    tp_s, pp_s, ep_s = opt_int(row, "tp"), opt_int(row, "pp"), opt_int(row, "ep")
    tps = [tp_s] if tp_s else [t for t in (1, 2, 4, 8, 16) if t <= n_devices and spec.num_heads % t == 0]
    out: list[Layout] = []
    for tp in tps:
        pps = [pp_s] if pp_s else [1]
        for pp in pps:
            if ep_s:
                eps = [ep_s]
            elif spec.moe is not None:
                eps = sorted({1, tp} if spec.moe.num_experts % tp == 0 else {1})
            else:
                eps = [1]
            out.extend(serving_layout(tp=tp, pp=pp, ep=ep) for ep in eps)
    return out


def _simulated(row: Row, model: StepCostModel, eng: EngineProfile, d: Dataset, replicas: int,
               per_replica: int, prompts: int | None, groups: int = 1) -> InferencePerf:
    """A dataset run through the load simulator, scaled to the replicas (each gets 1/replicas of the load; with
    attention data parallelism the replicas are the `groups` attention groups, which share the row's cap)."""
    scenario = row.get("scenario", "")
    rate = opt_int(row, "batch")
    load: float
    if scenario == "server":
        if rate is None:
            raise GpuplanError("server row states no request rate (its concurrency is not stated)")
        load = rate / replicas  # each replica's share of the Poisson stream, as it is (12.625 req/s, not 13)
    else:
        load = -(-rate // groups) if rate else 0
    m = simulate_row(model, eng, d, scenario=scenario, rate_or_cap=load or None,
                     prompts=max(1, prompts // replicas) if prompts else None, groups=groups)
    return InferencePerf(
        scenario=scenario, batch=round(m.batch_mean), replicas=replicas, devices_per_replica=per_replica,
        input_len=m.input_tokens_per_s / m.requests_per_s, output_len=m.output_tokens_per_s / m.requests_per_s,
        ttft_s=m.ttft_s.mean + model.request_overhead, tpot_s=m.tpot_s.mean,
        e2e_s=m.e2e_s.mean + model.request_overhead,
        output_tokens_per_s=m.output_tokens_per_s * replicas, requests_per_s=m.requests_per_s * replicas,
        assumptions={"simulated": d.source, "prompts_per_replica": m.requests},
    )


def _predict(row: Row, spec: ModelSpec, model: StepCostModel, eng: EngineProfile, layout: Layout,
             n_devices: int, input_len: float, output_len: float, dataset: Dataset | None,
             simulate: bool, prompts: int | None = None) -> InferencePerf:
    scenario = row.get("scenario", "")
    per_replica = layout.tp * layout.pp
    replicas = max(1, n_devices // per_replica)
    if simulate and dataset is not None:
        return _simulated(row, model, eng, dataset, replicas, per_replica, prompts, groups=layout.dp)
    if scenario == "server":
        return offline_perf(model, input_len=input_len, output_len=output_len, max_num_seqs=eng.max_num_seqs,
                            max_batched_tokens=eng.max_batched_tokens, scheduling=eng.scheduling,
                            chunked_prefill=eng.chunked_prefill, kv_block_tokens=eng.kv_block_tokens,
                            replicas=replicas, devices_per_replica=per_replica, attention_groups=layout.dp)
    if scenario == "fixed_batch":
        batch = opt_int(row, "batch") or 1
        return fixed_batch_perf(model, batch=batch, input_len=int(input_len), output_len=int(output_len),
                                replicas=replicas, devices_per_replica=per_replica,
                                max_batched_tokens=eng.max_batched_tokens, chunked_prefill=eng.chunked_prefill)
    if scenario == "offline":
        # with attention data parallelism (ep > tp) the row's cap is the engine's concurrency, shared by its
        # attention groups (trtllm-bench --concurrency is the whole engine's; --max_batch_size each rank's)
        cap = opt_int(row, "batch")
        return offline_perf(model, input_len=input_len, output_len=output_len, max_num_seqs=eng.max_num_seqs,
                            max_batched_tokens=eng.max_batched_tokens, scheduling=eng.scheduling,
                            chunked_prefill=eng.chunked_prefill, kv_block_tokens=eng.kv_block_tokens,
                            cap=-(-cap // layout.dp) if cap else None, replicas=replicas,
                            devices_per_replica=per_replica, attention_groups=layout.dp)
    raise GpuplanError(f"unknown scenario {scenario!r}")


def evaluate_inference_row(row: Row, catalog: Catalog,
                           engine_for: Callable[[str], EngineProfile] | None = None) -> CaseResult:
    """Predicted vs measured for one inference row; GpuplanError says why a row cannot be evaluated."""
    metric = row.get("metric", "")
    if metric not in INFER_METRICS:
        raise GpuplanError(f"metric {metric!r} is not an inference metric ({', '.join(INFER_METRICS)})")
    if not row.get("accelerator"):
        raise GpuplanError("the row names no accelerator")
    row, st = resolve_row(row)
    reason = _not_modelled(st)
    if reason:
        raise GpuplanError(reason)
    spec = model_for_row(row)
    acc = catalog.accelerator(row["accelerator"])
    eng = (engine_for or engine)(_engine_id(row, st))
    if st.framework == "nemo":  # NeMo's exporter builds its TensorRT-LLM engines with the custom all-reduce plugin
        # (NVIDIA/NeMo nemo/export/trt_llm/tensorrt_llm_build.py: build_and_save_engine(use_custom_all_reduce=True))
        eng = eng.model_copy(update={"custom_allreduce_stacks": ("cuda",)})
    if st.batching == "static":  # the engine of the run batched statically (gptSessionBenchmark, 2023 engines)
        eng = eng.model_copy(update={"scheduling": "static"})
    if st.engine_version:  # the engine as that version ran it (its decode attention kernel: engines.yaml)
        eng = eng.at_version(st.engine_version)
    eng = eng.on_part(acc, mla=spec.mla is not None)  # the scheduler defaults it picks on the row's part (and version)
    if st.custom_all_reduce is False:  # built without the custom kernel: NCCL's ring latency on every all-reduce
        eng = eng.model_copy(update={"custom_allreduce_stacks": ()})
    if st.graph_mode:  # decode captured as graphs: kernel tails per layer and one graph dispatch per step
        eng = eng.model_copy(update={"graph_mode": True})
    weights = row.get("weight_precision") or "bf16"
    kv = row.get("kv_precision") or _default_kv(weights)
    input_len, output_len, dataset = _lengths(row, st)
    scenario = row.get("scenario", "")
    if scenario == "server" and dataset is None:
        raise GpuplanError("server row names neither a request rate nor a dataset to simulate (its concurrency "
                           "is not stated)")
    length_src = "stated" if dataset is None else dataset.key
    if st.deployment == "pd_disaggregated":
        perf, detail = _disaggregated(row, st, spec, eng, catalog, weights, kv, input_len, output_len)
        return CaseResult(id=row.get("id", "?"), metric=metric, measured=float(row["value"]),
                          predicted=perf.metric(metric), confidence=row.get("confidence", ""), detail=detail)
    n_devices = opt_int(row, "num_accels") or (opt_int(row, "tp") or 1) * (opt_int(row, "pp") or 1)
    best: tuple[float, InferencePerf, Layout, StepCostModel] | None = None
    reasons: list[str] = []
    # Server rows: the layout with the most offline throughput (the one a team tunes for capacity);
    # other rows: the layout best for the row's own metric.
    rank_metric = "output_tokens_per_s" if scenario == "server" else metric
    lower_is_better = rank_metric in LATENCY_METRICS
    for layout in _layouts(spec, row, n_devices):
        try:
            model = step_cost_model(spec, accelerator=acc, layout=layout, weights=weights, kv_dtype=kv,
                                    engine=eng, catalog=catalog, attention_fp8=st.attention_dtype == "fp8")
            perf = _predict(row, spec, model, eng, layout, n_devices, input_len, output_len, dataset,
                            simulate=scenario != "server", prompts=st.num_prompts)
        except InputError as exc:
            reasons.append(f"tp={layout.tp} ep={layout.ep}: {exc}")
            continue
        value = perf.metric(rank_metric)
        better = best is None or (value < best[0] if lower_is_better else value > best[0])
        if better:
            best = (value, perf, layout, model)
    if best is None:
        raise GpuplanError("no layout fits: " + "; ".join(reasons[:3]))
    value, perf, layout, model = best
    if scenario == "server":
        perf = _predict(row, spec, model, eng, layout, n_devices, input_len, output_len, dataset, simulate=True,
                        prompts=st.num_prompts)
    value = perf.metric(metric)
    detail = (f"{eng.id} tp={layout.tp} pp={layout.pp} ep={layout.ep} x{perf.replicas} {weights}/{kv} "
              f"batch={perf.batch} I={perf.input_len:.0f} O={perf.output_len:.0f} ({length_src}) "
              f"ttft={perf.ttft_s * 1e3:.1f}ms tpot={perf.tpot_s * 1e3:.2f}ms bound={perf.decode_step.get('bound')}")
    scoped = model.assumptions.get("hardware_terms") or []
    if scoped:
        detail += " terms=" + ",".join(scoped)
    vn = vendor_note(row.get("id", ""))
    if vn is not None:
        detail += f" vendor-published ({vn.vendor})"
    return CaseResult(id=row.get("id", "?"), metric=metric, measured=float(row["value"]), predicted=value,
                      confidence=row.get("confidence", ""), detail=detail)
