"""What every emitter reads: the plan, the job and the model in one frozen view, and the header.

`TrainTarget` / `ServeTarget` gather the settings a launch needs from a plan dict (the planners'
own output, `plan train --json` / `plan infer --json`), the model spec and the job; `header`
writes the comment every emitted file starts with: gpuplan's version, the plan id, the predicted
figures with their 80% bands, and which settings gpuplan chose rather than the user stated.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuplan._version import __version__
from gpuplan.hardware.schema_devices import Accelerator
from gpuplan.search.infer_fleet import attention_groups as layout_attention_groups
from gpuplan.workload.jobs import serving_layout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["ServeTarget", "TrainTarget", "header", "plan_id"]

LAYOUT_KEYS = ("tp", "pp", "dp", "cp", "ep", "vpp", "zero_stage", "micro_batch", "recompute")


def plan_id(kind: str, plan: Mapping[str, Any]) -> str:
    """A short stable id: accelerator, devices and a hash of the layout and hardware option."""
    key = json.dumps({"layout": plan.get("layout"), "acc": plan.get("accelerator"), "devices": plan.get("devices"),
                      "option": (plan.get("hardware_option") or {}).get("offer") or plan.get("instance"),
                      "weights": plan.get("weights")}, sort_keys=True, default=str)
    return f"{kind}-{plan.get('accelerator')}-{plan.get('devices')}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class TrainTarget:
    """One training plan, ready to emit."""

    model_id: str
    spec: ModelSpec
    plan: Mapping[str, Any]
    method: str
    seq_len: int
    global_batch: int
    precision: str
    lora_rank: int
    lora_targets: tuple[str, ...]
    tokens: float | None
    stated: frozenset[str] = field(default_factory=frozenset)  # settings the user gave (layout keys, job keys)
    accelerator: Accelerator | None = None  # the plan's part (its software stack picks the formats that run on it)

    @property
    def layout(self) -> Mapping[str, Any]:
        lay: Mapping[str, Any] = self.plan["layout"]
        return lay

    def deg(self, key: str) -> int:
        return int(self.layout.get(key, 1) or 1)

    @property
    def devices(self) -> int:
        return int(self.plan["devices"])

    @property
    def gpus_per_node(self) -> int:
        return int(self.layout.get("gpus_per_node") or min(8, self.devices))

    @property
    def nodes(self) -> int:
        return max(1, math.ceil(self.devices / self.gpus_per_node))

    @property
    def ascend(self) -> bool:
        if self.accelerator is not None:
            return self.accelerator.software_stack == "cann"
        return "ascend" in str(self.plan["accelerator"]).lower()

    @property
    def network_kind(self) -> str | None:
        net = str((self.plan.get("assumptions") or {}).get("network") or
                  (self.plan.get("hardware_option") or {}).get("network") or "")
        if not net:
            return None
        return ("infiniband" if net.startswith("ib-") else "roce_v2" if net.startswith("roce") else
                "efa" if net.startswith("efa") else "tcp" if "tcp" in net else None)

    @property
    def train_iters(self) -> int:
        """Optimizer steps for the job's tokens (1000 when no token count is known)."""
        if not self.tokens:
            return 1000
        return max(1, math.ceil(self.tokens / (self.global_batch * self.seq_len)))

    @property
    def save_interval(self) -> int:
        """Steps between checkpoints: the reliability model's optimal interval over the step time."""
        rel = self.plan.get("reliability") or {}
        step = float(self.plan.get("step_time_s") or 0)
        interval = float(rel.get("checkpoint_interval_s") or 0)
        if step <= 0 or interval <= 0:
            return 1000
        return max(1, round(interval / step))

    @property
    def grad_accum(self) -> int:
        return max(1, self.global_batch // (self.deg("micro_batch") * self.deg("dp")))


@dataclass(frozen=True)
class ServeTarget:
    """One serving fleet, ready to emit."""

    model_id: str
    spec: ModelSpec
    fleet: Mapping[str, Any]
    run: Mapping[str, Any]  # the `plan infer --json` document (load, slo, engine, kv_dtype)
    max_model_len: int
    stated: frozenset[str] = field(default_factory=frozenset)
    accelerator: Accelerator | None = None  # the fleet's part (its software stack picks the engines that run on it)

    @property
    def tp(self) -> int:
        return int(self.fleet["layout"]["tp"])

    @property
    def pp(self) -> int:
        return int(self.fleet["layout"]["pp"])

    @property
    def ep(self) -> int:
        return int(self.fleet["layout"].get("ep", 1))

    @property
    def cp(self) -> int:
        """Prefill context-parallel ranks of one replica (search/infer_cp.py; 1 without)."""
        return int(self.fleet["layout"].get("cp", 1))

    @property
    def devices_per_replica(self) -> int:
        """Devices of one server process: its tensor-parallel group, or its whole expert-parallel group when
        attention runs data-parallel (ep > tp), times its prefill context-parallel ranks."""
        return max(self.tp, self.ep) * self.pp * self.cp

    @property
    def nodes_per_server(self) -> int:
        """Instances one server spans: an expert-parallel group wider than the fleet's instance (wide EP over RDMA)."""
        per_instance = max(1, int(self.fleet.get("devices") or 1) // max(int(self.fleet.get("instances") or 1), 1))
        return max(1, -(-self.devices_per_replica // per_instance))

    @property
    def attention_groups(self) -> int:
        """Attention data-parallel groups of one server process (ep/tp with ep > tp, else 1): the planner's count."""
        return layout_attention_groups(serving_layout(tp=self.tp, pp=self.pp, ep=self.ep))

    @property
    def server_replicas(self) -> int:
        """Server processes of the fleet: the plan counts attention groups, `attention_groups` of them per server."""
        return max(1, int(self.fleet["replicas"]) // self.attention_groups)

    @property
    def ascend(self) -> bool:
        if self.accelerator is not None:
            return self.accelerator.software_stack == "cann"
        return "ascend" in str(self.fleet["accelerator"]).lower()


def _band(value: Any, band: Any, fmt: str, scale: float = 1.0) -> str:
    if value is None:
        return "-"
    text = format(float(value) * scale, fmt)
    if isinstance(band, (list, tuple)) and len(band) == 2:
        return f"{text} (80% band {format(float(band[0]) * scale, fmt)}-{format(float(band[1]) * scale, fmt)})"
    return text


def _train_figures(p: Mapping[str, Any]) -> list[str]:
    b = p.get("band") or {}
    mem = (p.get("memory") or {}).get("total_bytes")
    out = [f"step time s: {_band(p.get('step_time_s'), b.get('step_time_s'), '.3f')}",
           f"tokens/s: {_band(p.get('tokens_per_s'), b.get('tokens_per_s'), ',.0f')}",
           f"MFU: {_band(p.get('mfu'), b.get('mfu'), '.1%')}",
           f"memory per device GiB: {_band(mem, b.get('memory.total_bytes'), '.1f', 1 / 2**30)}"]
    if p.get("time_to_train_s"):
        out.append(f"days to train: {_band(p['time_to_train_s'], b.get('time_to_train_s'), '.1f', 1 / 86400)}")
    if p.get("cost_usd"):
        out.append(f"cost USD: {_band(p['cost_usd'], b.get('cost_usd'), ',.0f')}")
    return out


def _serve_figures(f: Mapping[str, Any]) -> list[str]:
    b = f.get("band") or {}
    return [f"p99 TTFT s: {_band(f['ttft_s']['p99'], b.get('ttft_s.p99'), '.3f')}",
            f"p99 TPOT ms: {_band(f['tpot_s']['p99'], b.get('tpot_s.p99'), '.1f', 1e3)}",
            f"replicas: {_band(f['replicas'], b.get('replicas'), '.0f')}",
            f"cost USD/h: {_band(f.get('cost_usd_per_hour'), b.get('cost_usd_per_hour'), ',.2f')}",
            f"utilization: {float(f.get('utilization') or 0):.0%}"]


def header(target: TrainTarget | ServeTarget, fmt: str, *, comment: str = "#",
           notes: tuple[str, ...] = ()) -> str:
    """The comment block every emitted file starts with (`comment` is the format's comment marker)."""
    if isinstance(target, TrainTarget):
        p = target.plan
        pid = plan_id("train", p)
        what = (f"{target.model_id} {target.method} on {target.devices} x {p['accelerator']} "
                f"({target.nodes} node(s) of {target.gpus_per_node})")
        figs = _train_figures(p)
        keys = [*LAYOUT_KEYS, "seq_len", "global_batch", "precision"]
        values = {**{k: target.layout.get(k) for k in LAYOUT_KEYS}, "seq_len": target.seq_len,
                  "global_batch": target.global_batch, "precision": target.precision}
    else:
        f = target.fleet
        pid = plan_id("serve", f)
        shape = (f"{target.server_replicas} server(s) x {target.devices_per_replica} devices (attention "
                 f"data-parallel over {target.attention_groups} groups of tp{target.tp}, experts ep{target.ep})"
                 if target.ep > target.tp else f"{f['replicas']} replica(s) x tp{target.tp} pp{target.pp}")
        what = (f"{target.model_id} on {shape} of {f['accelerator']} "
                f"({f.get('instances')} x {f.get('instance')}), weights {f['weights']}, engine {f['engine']}")
        figs = _serve_figures(f)
        keys = ["accelerator", "instance", "replicas", "tp", "pp", "ep", "weights", "kv_dtype"]
        values = {"accelerator": f["accelerator"], "instance": f.get("instance"), "replicas": f["replicas"],
                  "tp": target.tp, "pp": target.pp, "ep": target.ep, "weights": f["weights"],
                  "kv_dtype": target.run.get("kv_dtype")}
    record = target.plan if isinstance(target, TrainTarget) else target.fleet
    conf = record.get("confidence") or {}
    banded = bool(record.get("band"))
    chosen = [f"{k}={values[k]}" for k in keys if k not in target.stated]
    given = [f"{k}={values[k]}" for k in keys if k in target.stated]
    lines = [f"Emitted by gpuplan {__version__} ({fmt}); plan {pid}",
             what,
             ("Predicted (80% bands from cross-validation): " if banded else "Predicted (no band): ")
             + "; ".join(figs),
             f"Confidence: {conf.get('level', '-')}",
             "Chosen by gpuplan: " + (", ".join(chosen) or "-"),
             "Stated by you: " + (", ".join(given) or "-"),
             *notes]
    return "".join(f"{comment} {ln}\n" for ln in lines)
