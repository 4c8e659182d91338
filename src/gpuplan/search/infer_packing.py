"""Several models on one instance type: instance-level bin packing of their replicas by device count.

Each model's fleet is planned alone (search/infer_search.plan_inference, its replicas simulated at its own SLO), and
priced on whole instances: 3 TP2 replicas of one model and 5 TP1 replicas of another take 1 + 1 eight-GPU
instances apart, and ceil(11 / 8) = 2 together, the same; 3 TP2 and 2 TP1 take 2 apart and 1 together. Packing
moves no replica's devices, so each keeps its simulated latency; what the replicas of several models on one server
share (host CPU, PCIe, NICs, the server's failure) is not modelled.

Replicas are packed first-fit decreasing (Johnson 1973: at most 11/9 OPT + 6/9 bins; exact when every size divides
the instance, as TP1/2/4/8 replicas on 8-GPU instances do). Only whole-instance offers pack: a per-card rental
(`per_card`) already bills each device, and a replica larger than one instance spans whole instances of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_COMBINATIONS", "Packed", "first_fit_decreasing", "packable", "replica_sizes", "shared_instances"]

MAX_COMBINATIONS = 4096  # plan combinations tried per instance type (models x their fleets on it)


def first_fit_decreasing(sizes: Sequence[int], capacity: int) -> int:
    """Bins of `capacity` that hold items of `sizes` (each <= capacity), first-fit decreasing."""
    free: list[int] = []
    for s in sorted(sizes, reverse=True):
        if s > capacity:
            raise ValueError(f"an item of {s} exceeds the bin capacity {capacity}")
        for i, f in enumerate(free):
            if f >= s:
                free[i] -= s
                break
        else:
            free.append(capacity - s)
    return len(free)


def packable(plan: Mapping[str, Any], devices_per_instance: int) -> bool:
    """True when `plan`'s replicas each fit inside one whole instance it rents (not per card)."""
    lay = plan["layout"]
    per_replica = max(int(lay["tp"]), int(lay.get("ep", 1))) * int(lay.get("pp", 1))
    return not plan.get("per_card") and per_replica <= devices_per_instance


@dataclass(frozen=True, slots=True)
class Packed:
    """Several models' fleets on one instance type, packed: the fleets used, and instances apart and together."""

    instance: str
    accelerator: str
    models: tuple[str, ...]
    fleets: tuple[Mapping[str, Any], ...]  # the plan of each model in `models`, in that order
    instances_apart: int
    instances_packed: int
    devices_packed: int  # devices the packed replicas use, of instances_packed x devices_per_instance
    devices_per_instance: int
    usd_per_instance_hour: float
    usd_per_hour_apart: float  # the same fleets, each on its own instances
    usd_per_hour_packed: float
    usd_per_hour_total: float  # packed, plus every other model's own best fleet
    saving_usd_per_hour: float  # against every model on its own best fleet

    def to_json(self) -> dict[str, Any]:
        return {"instance": self.instance, "accelerator": self.accelerator, "models": list(self.models),
                "fleets": [{"model": m, "replicas": int(f["replicas"]), "layout": dict(f["layout"]),
                            "weights": f["weights"], "devices": int(f["devices"]),
                            "instances_alone": int(f["instances"]),
                            "cost_usd_per_hour_alone": float(f["cost_usd_per_hour"])}
                           for m, f in zip(self.models, self.fleets, strict=True)],
                "instances_apart": self.instances_apart, "instances_packed": self.instances_packed,
                "devices_packed": self.devices_packed, "devices_per_instance": self.devices_per_instance,
                "usd_per_instance_hour": self.usd_per_instance_hour, "usd_per_hour_apart": self.usd_per_hour_apart,
                "usd_per_hour_packed": self.usd_per_hour_packed, "usd_per_hour_total": self.usd_per_hour_total,
                "saving_usd_per_hour": self.saving_usd_per_hour}


def replica_sizes(plan: Mapping[str, Any]) -> list[int]:
    """Devices of each unit `plan` places whole on one instance: a replica, or an expert-parallel group of them."""
    lay = plan["layout"]
    per_replica = max(int(lay["tp"]), int(lay.get("ep", 1))) * int(lay.get("pp", 1))
    groups = -(-int(plan["replicas"]) // max(int(lay.get("ep", 1)) // int(lay["tp"]), 1))  # expert groups
    return [per_replica] * groups


def shared_instances(best: Mapping[str, Mapping[str, Any]], plans: Mapping[str, Sequence[Mapping[str, Any]]],
                     devices_of: Mapping[str, int], *, market_of: Mapping[str, str],
                     market: str | None) -> list[Packed]:
    """Per instance type that two or more models have a fleet on, the cheapest way to pack some of them together,
    cheapest total first. `best`: each model's own recommended fleet; `plans`: each model's verified fleets;
    `devices_of`: devices per instance; `market_of`: each instance's market, `market` the buyer's (only its
    instances are packed; every market when None)."""
    alone = sum(float(p["cost_usd_per_hour"]) for p in best.values())
    on: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for name, ps in plans.items():
        for p in ps:
            inst = str(p["instance"])
            if (devices_of.get(inst, 0) > 1 and packable(p, devices_of[inst])
                    and (market is None or market_of[inst] == market)):  # a one-device instance packs nothing
                on.setdefault(inst, {}).setdefault(name, []).append(p)
    out: list[Packed] = []
    for inst, per_model in sorted(on.items()):
        if len(per_model) < 2:
            continue
        cap = devices_of[inst]
        found: Packed | None = None
        names = sorted(per_model)
        tried = 0
        for k in range(len(names), 1, -1):
            for subset in itertools.combinations(names, k):
                for fleets in itertools.product(*(per_model[n] for n in subset)):
                    tried += 1
                    if tried > MAX_COMBINATIONS:
                        break
                    packed = _pack(inst, subset, fleets, cap, best, alone)
                    if found is None or packed.usd_per_hour_total < found.usd_per_hour_total - 1e-9:
                        found = packed
        if found is not None:
            out.append(found)
    return sorted(out, key=lambda p: (p.usd_per_hour_total, p.instances_packed))


def _pack(inst: str, subset: Sequence[str], fleets: Sequence[Mapping[str, Any]], cap: int,
          best: Mapping[str, Mapping[str, Any]], alone: float) -> Packed:
    per_inst = float(fleets[0]["cost_usd_per_hour"]) / int(fleets[0]["instances"])
    apart_n = sum(int(f["instances"]) for f in fleets)
    sizes = [s for f in fleets for s in replica_sizes(f)]
    packed_n = first_fit_decreasing(sizes, cap)
    apart_usd = sum(float(f["cost_usd_per_hour"]) for f in fleets)
    packed_usd = packed_n * per_inst
    rest = sum(float(p["cost_usd_per_hour"]) for n, p in best.items() if n not in subset)
    total = packed_usd + rest
    return Packed(instance=inst, accelerator=str(fleets[0]["accelerator"]), models=tuple(subset), fleets=tuple(fleets),
                  instances_apart=apart_n, instances_packed=packed_n, devices_packed=sum(sizes),
                  devices_per_instance=cap,                  usd_per_instance_hour=per_inst,
                  usd_per_hour_apart=apart_usd, usd_per_hour_packed=packed_usd, usd_per_hour_total=total,
                  saving_usd_per_hour=alone - total)
