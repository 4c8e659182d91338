"""The layout the end-to-end training benchmark runs: gpuplan's plan for the bench model on this machine.

torch-free. The planner (`gpuplan.search.train_planner.best_layout`, the search of
`gpuplan estimate train`) is asked for the fastest fitting layout of the bench model on the
local devices of the catalog accelerator (one node, `gpus_per_node` = the device count).
The bench runs (train_dist.py, parallel.py; torch 2.13) data parallelism with ZeRO 0 (DDP),
1 (ZeroRedundancyOptimizer) or 3 (FSDP2), tensor parallelism (DTensor column/row parallel),
pipeline parallelism (torch.distributed.pipelining, one stage per rank) and their products
dp x tp x pp, with recomputation none or full, so the layout it runs follows this rule:

* the planned layout is run as is when `runnable()` accepts it: cp = ep = vpp = 1, ZeRO 0/1/3
  (TP with DP > 1 and ZeRO-1 excepted: ZeroRedundancyOptimizer takes no DTensor parameters),
  recomputation none or full;
* otherwise (CP, EP, interleaved stages, ZeRO-2, selective recomputation) it is reported as
  "not run by the bench", and the bench runs the planner's fastest fitting layout among those
  it runs (tp = 1 with ZeRO 0/1/3, or any tp with ZeRO 3; any pp; cp = ep = vpp = 1; every
  micro-batch size and recomputation none or full);
* without a catalog accelerator (a CPU run without --accelerator) there is no plan and no
  prediction: the bench runs plain DDP with the whole per-rank batch in one micro-batch.

The prediction next to the measurement is the planner's figure for the layout RUN (step
time, tokens/s, MFU, memory per device), never the planned one when they differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import Accelerator, Catalog
from gpuplan.search.candidates import LayoutChoices
from gpuplan.search.cluster import cluster_hardware
from gpuplan.search.train_planner import best_layout, plan_figures
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["RUN_RECOMPUTE", "RUN_ZERO", "BenchLayout", "LayoutPlan", "layout_label", "plan_bench_layout",
           "runnable", "strategy_label"]

RUN_ZERO = (0, 1, 3)  # DDP, DDP + ZeroRedundancyOptimizer, FSDP (fully_shard)
RUN_RECOMPUTE = ("none", "full")  # full: torch.utils.checkpoint around every decoder layer
_TERMS = ("compute_efficiency.default.bf16", "gemm_half_width", "dp_overlap", "zero3_overlap")  # shown with the figures


@dataclass(frozen=True, kw_only=True)
class BenchLayout:
    """A layout the bench can run: dp x tp x pp processes, one per device."""

    dp: int
    zero: int
    micro_batch: int
    microbatches: int  # micro-batches per optimizer step: gradient accumulation, or the pipeline's micro-batches
    recompute: str
    tp: int = 1
    pp: int = 1

    def __post_init__(self) -> None:
        if self.zero not in RUN_ZERO or self.recompute not in RUN_RECOMPUTE or min(
                self.dp, self.tp, self.pp, self.micro_batch, self.microbatches) < 1 or _tp_dp_zero(
                    self.tp, self.dp, self.zero):
            raise ValueError(f"not a layout the bench runs: {self}")

    @property
    def world(self) -> int:
        """Processes (devices) of the run: dp x tp x pp."""
        return self.dp * self.tp * self.pp

    @property
    def global_batch(self) -> int:
        return self.dp * self.micro_batch * self.microbatches

    def to_dict(self) -> dict[str, int | str]:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "zero": self.zero, "micro_batch": self.micro_batch,
                "microbatches": self.microbatches, "recompute": self.recompute}


def _tp_dp_zero(tp: int, dp: int, zero: int) -> str | None:
    """Why TP with this DP and ZeRO stage does not run, or None."""
    if tp > 1 and dp > 1 and zero == 1:  # its parameter broadcast has no DTensor sharding rule (torch 2.13)
        return f"TP={tp} with DP={dp} and ZeRO-1 (ZeroRedundancyOptimizer takes no DTensor parameters)"
    return None


@dataclass(frozen=True, kw_only=True)
class LayoutPlan:
    """The planned layout, the layout run, and the planner's figures for the layout run."""

    devices: int
    seq_len: int
    global_batch: int
    planned: dict[str, Any] | None  # the planner's row (tp, pp, dp, cp, ep, vpp, zero, micro_batch, recompute, ...)
    run: BenchLayout
    fallback: str | None = None  # why the layout run differs from the planned one
    predicted: dict[str, float] = field(default_factory=dict)  # step_time_s, tokens_per_s, mfu, ... (run layout)
    terms: dict[str, float] = field(default_factory=dict)  # catalog figures, calibration terms, breakdown
    reason: str = ""  # why there is no plan or prediction

    @property
    def planned_label(self) -> str:
        return layout_label(self.planned) if self.planned is not None else "none (no catalog accelerator)"


def layout_label(row: dict[str, Any]) -> str:
    """'tp1 pp2 dp1 cp1 ep1 zero0 mb2x2 recompute=none' for a planner row or BenchLayout.to_dict()."""
    axes = " ".join(f"{k}{row.get(k, 1)}" for k in ("tp", "pp", "dp", "cp", "ep"))
    zero = row.get("zero", row.get("zero_stage", 0))
    return f"{axes} zero{zero} mb{row['micro_batch']}x{row['microbatches']} recompute={row['recompute']}"


def strategy_label(lay: BenchLayout) -> str:
    """How train_dist.py / parallel.py run the layout, e.g. 'TP2 (DTensor) x PP2 (Schedule1F1B), DP2 FSDP2'."""
    ckpt = ", activation checkpointing" if lay.recompute == "full" else ""
    if lay.tp == 1 and lay.pp == 1:
        return {0: "DDP", 1: "DDP + ZeroRedundancyOptimizer (ZeRO-1)", 3: "FSDP fully_shard (ZeRO-3)"}[lay.zero] + ckpt
    parts = [f"TP{lay.tp} (DTensor column/row parallel)"] if lay.tp > 1 else []
    if lay.pp > 1:
        parts.append(f"PP{lay.pp} ({'Schedule1F1B' if lay.microbatches >= lay.pp else 'ScheduleGPipe'})")
    dp = ""
    if lay.dp > 1:
        dp = ", DP" + str(lay.dp) + " " + {0: "gradient all-reduce", 1: "ZeroRedundancyOptimizer (ZeRO-1)",
                                           3: "FSDP fully_shard (ZeRO-3)"}[lay.zero]
    return " x ".join(parts) + dp + ckpt


def runnable(row: dict[str, Any]) -> str | None:
    """None if the bench runs this planner row as is, else what it cannot run."""
    missing = [f"{k.upper()}={row[k]}" for k in ("cp", "ep", "vpp") if int(row.get(k, 1)) > 1]
    zero = int(row.get("zero", 0))
    if zero not in RUN_ZERO:
        missing.append(f"ZeRO-{row['zero']}")
    elif why := _tp_dp_zero(int(row.get("tp", 1)), int(row.get("dp", 1)), zero):
        missing.append(why)
    if row.get("recompute") not in RUN_RECOMPUTE:
        missing.append(f"{row['recompute']} recomputation")
    return ", ".join(missing) or None


def _as_run(row: dict[str, Any]) -> BenchLayout:
    return BenchLayout(tp=int(row.get("tp", 1)), pp=int(row.get("pp", 1)), dp=int(row["dp"]), zero=int(row["zero"]),
                       micro_batch=int(row["micro_batch"]), microbatches=int(row["microbatches"]),
                       recompute=str(row["recompute"]))


def plan_bench_layout(spec: ModelSpec, *, devices: int, seq_len: int, global_batch: int,
                      accelerator: Accelerator | None, catalog: Catalog | None = None,
                      calibration: Calibration | None = None, no_plan_reason: str = "") -> LayoutPlan:
    """Plan `spec` on `devices` local devices of `accelerator` and choose the layout the bench runs."""
    if accelerator is None or catalog is None:
        per_rank = max(global_batch // devices, 1)
        run = BenchLayout(dp=devices, zero=0, micro_batch=per_rank, microbatches=1, recompute="none")
        return LayoutPlan(devices=devices, seq_len=seq_len, global_batch=run.global_batch, planned=None, run=run,
                          reason=no_plan_reason or "no catalog accelerator: no planned layout and no prediction")
    job = TrainingJob(seq_len=seq_len, global_batch=global_batch, precision="bf16")
    hw = cluster_hardware(catalog, accelerator.id, None, gpus_per_node=devices)  # one node: the local devices
    full = LayoutChoices(devices=[devices], tp=[t for t in (1, 2, 4, 8) if t <= devices], zero=RUN_ZERO,
                         max_tp=devices)  # the choices of `gpuplan estimate train`
    c, ev, best, _ = best_layout(spec, job, hw, full, calibration=calibration)
    planned = c.row(best) if best is not None else None
    why = runnable(planned) if planned is not None else "no layout fits in device memory"
    if why is None:
        rc, rev, ri = c, ev, best
    else:
        # the axes the bench runs: TP with FSDP over dp (any TP without DP), or DP/PP with ZeRO 0/1/3
        tps = [t for t in (1, 2, 4, 8) if t <= devices]
        searches = [best_layout(spec, job, hw, LayoutChoices(
            devices=[devices], tp=tp, cp=[1], ep=[1], vpp=[1], zero=zero, recompute=RUN_RECOMPUTE, max_tp=devices),
            calibration=calibration) for tp, zero in (([1], RUN_ZERO), (tps, (3,)))]
        fitting = [(float(s_ev.step_s[i]), k) for k, (_, s_ev, i, _) in enumerate(searches) if i is not None]
        k = min(fitting)[1] if fitting else 0
        rc, rev, ri, _ = searches[k]
        if ri is None:  # nothing fits: the layout needing least memory (the run may then fail out of memory)
            ri = int(rev.memory_bytes.argmin())
    assert ri is not None
    row = rc.row(ri)
    run = _as_run(row)
    fallback = None
    if why is not None:
        fallback = (f"planned layout {layout_label(planned) if planned else '-'} not run by the bench ({why}); "
                    f"ran the planner's fastest layout the bench runs instead: {layout_label(row)}")
    fig = plan_figures(spec, job, hw, rc, rev, ri, catalog=catalog, tokens=None, calibration=calibration)
    mem = fig["memory"]
    visible = float(mem["weights_bytes"] + mem["gradients_bytes"] + mem["optimizer_bytes"] + mem["activations_bytes"])
    predicted = {"step_time_s": float(fig["step_time_s"]), "tokens_per_s": float(fig["tokens_per_s"]),
                 "mfu": float(fig["mfu"]), "tflops_per_device": float(fig["tflops_per_device"]),
                 "memory_bytes": visible, "memory_total_bytes": float(mem["total_bytes"])}
    terms = {"bf16_dense_tflops": float(hw.peak_flops("bf16") / 1e12), "devices": float(devices),
             **{f"breakdown_s.{k}": float(v) for k, v in fig["breakdown_s"].items() if v},
             **{name: float(t["value"]) for name, t in fig["assumptions"]["calibration"].items()
                if name in _TERMS or name == f"compute_efficiency.{accelerator.id}.bf16"}}
    return LayoutPlan(devices=devices, seq_len=seq_len, global_batch=run.global_batch, planned=planned, run=run,
                      fallback=fallback, predicted=predicted, terms=terms)
