"""Predict the training rows of a ground-truth case file (throughput, FLOPs, MFU, time, device-hours).

Rules for unstated fields (ground-truth README): a layout field left empty is chosen by the
planner (the fastest layout that fits, as a competent team would); other fields take the
usual defaults: 8 devices per node, one NIC per device, bf16, pretraining, a global batch of
about 4M tokens (rounded to a multiple of the device count), and, where the row names no
network but spans nodes, the fabric usually sold with the part (InfiniBand NDR for Hopper
and Blackwell, HDR for Ampere and Volta, RoCE 200G for Ascend). A row without a device count
is planned on 1,024 devices. One set of calibration terms serves every row.

What the run did comes from its `settings` (validate/row_settings.py): a stated `framework` limits the
layouts searched for unstated fields to those the framework offers and applies its profile (kernels,
overlaps, gradient reduction: workload/data/frameworks.yaml); `attention=eager` (runs before
FlashAttention) and `tp_comm_overlap` are modelled as stated.
"""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import Catalog
from gpuplan.search.candidates import RECOMPUTE_CODES, LayoutChoices, offered, why_no_layout
from gpuplan.search.cluster import cluster_hardware, default_gpus_per_node, usual_network
from gpuplan.search.train_planner import best_layout, plan_figures
from gpuplan.units import GIB
from gpuplan.validate.cases import Row, model_for_row, opt_bool, opt_float, opt_int
from gpuplan.validate.memory_cases import CaseResult
from gpuplan.validate.row_settings import RowSettings, resolve_row
from gpuplan.workload.frameworks import FrameworkProfile, load_frameworks
from gpuplan.workload.jobs import TrainingJob, default_global_batch

__all__ = ["DEFAULT_DEVICES", "TRAIN_METRICS", "evaluate_training_row"]

TRAIN_METRICS = ("tokens_per_s_per_device", "tflops_per_device", "hw_tflops_per_device", "mfu", "hfu",
                 "step_time_s", "device_hours", "time_to_train_days")
DEFAULT_DEVICES = 1024




def _axis(row: Row, key: str) -> list[int] | None:
    v = opt_int(row, key)
    return [v] if v is not None else None


def _framework(st: RowSettings) -> FrameworkProfile | None:
    """The training framework the row states, if gpuplan has its profile (serving engines and frameworks
    without one are planned on the shipped terms)."""
    return load_frameworks().get(st.framework or "")


def evaluate_training_row(row: Row, catalog: Catalog, calibration: Calibration | None = None) -> CaseResult:
    row, st = resolve_row(row)
    prof = _framework(st)
    metric = row.get("metric", "")
    if metric not in TRAIN_METRICS:
        raise GpuplanError(f"metric {metric!r} is not a training metric ({', '.join(TRAIN_METRICS)})")
    if not row.get("accelerator"):
        raise GpuplanError("the row names no accelerator")
    spec = model_for_row(row)
    seq = opt_int(row, "seq_len") or 4096
    n = opt_int(row, "num_accels") or DEFAULT_DEVICES
    gpn = opt_int(row, "gpus_per_node") or default_gpus_per_node(catalog.accelerator(row["accelerator"]), n)
    gb = opt_int(row, "global_batch_seqs") or default_global_batch(seq, n)
    # A row whose stated layout has more data-parallel ranks than its stated batch has sequences (NeMo's long-
    # sequence table: 8 sequences at tp4 cp8 on 512 devices, dp 16) ran at least one sequence per rank: its
    # batch is read as a target (one micro-batch per rank), not as a requirement no layout meets.
    model_par = (opt_int(row, "tp") or 0) * (opt_int(row, "pp") or 1) * (opt_int(row, "cp") or 1)
    fixed = not (opt_int(row, "global_batch_seqs") and model_par and n // model_par > gb)
    method = {"pretrain": "full", "full_ft": "full", "": "full"}.get(row.get("method", ""), row.get("method", ""))
    job = TrainingJob(method=method, seq_len=seq, global_batch=gb, global_batch_fixed=fixed,
                      precision=row.get("precision") or "bf16",
                      framework=prof.id if prof else None, attention=st.attention or "flash",
                      tp_comm_overlap=st.tp_comm_overlap, grad_reduce_overlap=st.grad_reduce_overlap,
                      moe_dispatcher=st.moe_dispatcher,
                      recompute_early_stop=st.recompute_early_stop, recompute_modules=st.recompute_modules,
                      pp_partition=st.pp_partition or "balanced",
                      compile=bool(st.compile), zero_group=st.zero_group,
                      sequence_parallel=opt_bool(row, "seq_parallel"))
    network = row.get("network") or (usual_network(catalog, row["accelerator"])[0] if n > gpn else None)
    nics = opt_float(row, "nics_per_node")
    hw = cluster_hardware(catalog, row["accelerator"], network, gpus_per_node=gpn, nics_per_node=nics)
    recompute = row.get("recompute", "")
    zero = opt_int(row, "zero_stage")
    choices = LayoutChoices(
        devices=[n],
        tp=offered(prof, "tp", opt_int(row, "tp"), [t for t in (1, 2, 4, 8) if t <= gpn]),
        pp=offered(prof, "pp", opt_int(row, "pp"), [1, 2, 4, 8, 16, 32]),
        cp=offered(prof, "cp", opt_int(row, "cp"), [1, 2, 4, 8, 16]),
        ep=offered(prof, "ep", opt_int(row, "ep"), [1, 2, 4, 8, 16, 32, 64]),
        vpp=offered(prof, "vpp", opt_int(row, "vpp"), [1, 2, 4]),
        zero=[zero] if zero is not None else list(prof.zero_stages) if prof else [0, 1, 3],
        micro_batch=_axis(row, "micro_batch") or [1, 2, 4, 8],
        recompute=([recompute] if recompute in RECOMPUTE_CODES else list(prof.recompute) if prof
                   else list(RECOMPUTE_CODES)),
        max_tp=max(gpn, opt_int(row, "tp") or 1),
        dp=_axis(row, "dp"), zero3_with_pp=bool(prof and prof.zero3_with_pp),
    )
    # a published run fit its devices: judge fit against the whole memory, without planning headroom
    whole = float(hw.accelerator.memory_gib or 0) * GIB
    # a published run's unstated axes are taken at their fastest: benchmark runs are tuned for speed, not simplicity
    c, ev, best, rejected = best_layout(spec, job, hw, choices, calibration=calibration,
                                        memory_limit_bytes=whole or None, simplicity_tolerance=0.0)
    detail = ""
    if best is None:
        if len(c) == 0:
            rule = why_no_layout(spec, choices, seq_len=seq, global_batch=gb, batch_fixed=fixed)
            raise GpuplanError(f"no valid layout for the stated sizes: none where {rule}")
        best = int(ev.step_s.argmin())  # it ran, so it fit: our memory model disagrees; say so
        detail = "memory model says out of memory; fastest layout used"
    tokens = opt_float(row, "total_tokens")
    fig = plan_figures(spec, job, hw, c, ev, best, catalog=catalog, tokens=tokens, calibration=calibration)
    predicted = _metric(fig, metric)
    lay = fig["layout"]
    layout = (f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} cp{lay['cp']} ep{lay['ep']} vpp{lay['vpp']} "
              f"z{lay['zero_stage']} mb{lay['micro_batch']} rc={lay['recompute']}")
    return CaseResult(id=row["id"], metric=metric, measured=float(row["value"]), predicted=predicted,
                      confidence=row.get("confidence", ""), detail=f"{layout} {detail}".strip())


def _metric(fig: dict[str, Any], metric: str) -> float:
    if metric == "time_to_train_days":
        if fig["time_to_train_s"] is None:
            raise GpuplanError("time_to_train_days needs total_tokens")
        return float(fig["time_to_train_s"]) / 86400.0
    if metric == "device_hours":
        if fig["device_hours"] is None:
            raise GpuplanError("device_hours needs total_tokens")
        return float(fig["device_hours"])
    return float(fig[metric])
