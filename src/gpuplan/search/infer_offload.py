"""KV offload to host memory: the tiers that hold a reused prefix set, and the prefix hit they leave.

`--prefix-hit` states the share of each prompt found in the prefix cache; `--prefix-set TOKENS` states how many
distinct prefix tokens the requests reuse (documents asked about again, sessions, system prompts). A replica finds a
prefix where its cache still holds it:

* HBM: the replica's KV pool x `prefix_cache_pool_share` (finished prompts share the pool with the running ones and
  are evicted first);
* host memory, where the engine runs a host tier (search/data/kv_offload.yaml: vLLM's offloading connector, SGLang's
  HiCache, TensorRT-LLM's host cache) and `--kv-offload auto`: the offer's host RAM per device (its instance, else
  its server, else `host_ram_per_hbm_default` x HBM) x `host_kv_memory_fraction`, per device of the replica;
* else it is recomputed.

A prefix found in host memory is reloaded over the part's host link (PCIe at its generation and lanes x
`pcie_bw_efficiency`, estimate/data/links.yaml; NVLink-C2C on Grace parts): each device loads its shard of the KV,
reload_s per token = KV bytes per token per device / link bytes per s. Against recompute (the prefill time per
token of a budget-sized chunk), a host hit saves 1 - reload/recompute of a token's prefill; the planner is given the
effective hit

    hit_eff = hit x (share in HBM + share in host x (1 - reload / recompute))

and sizes and simulates the fleet with it (the reload is charged as compute: conservative, the copy overlaps
compute in the engines). The prefix set is taken as reused on every replica (least-load routing; cache-aware
routing splits it across replicas).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpuplan import yamlio
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.estimate.links import host_link
from gpuplan.hardware import Accelerator, Catalog
from gpuplan.hardware.schema_base import AsOf
from gpuplan.search.infer_capacity import prefill_s
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.units import GIB

__all__ = ["KV_OFFLOAD_MODES", "OFFLOAD_TERMS", "PREFIX_TIERS", "PrefixTiers", "offload_engine", "prefix_tiers"]

KV_OFFLOAD_MODES = ("auto", "off")
PREFIX_TIERS = ("hbm", "host", "host+recompute", "off", "unsupported")  # where the set beyond HBM goes (`why`)
OFFLOAD_TERMS = ("prefix_cache_pool_share", "host_kv_memory_fraction", "host_ram_per_hbm_default")
_STRICT = ConfigDict(extra="forbid", frozen=True)


class OffloadEngine(BaseModel):
    model_config = _STRICT

    engine: str
    flag: str = Field(min_length=1)  # launch option, {gib} or {bytes} the host tier's size
    mla: bool  # runs the host tier for MLA attention (DeepSeek)
    source: str = Field(min_length=1)
    as_of: AsOf


class _C2c(BaseModel):
    model_config = _STRICT

    gbyte_s_per_direction: float = Field(gt=0)
    match: str
    source: str = Field(min_length=1)
    as_of: AsOf


class _OffloadFile(BaseModel):
    model_config = _STRICT

    schema_version: int
    as_of: str
    engines: tuple[OffloadEngine, ...]
    c2c: _C2c


@cache
def _data() -> _OffloadFile:
    path = resources.files("gpuplan.search") / "data" / "kv_offload.yaml"
    return _OffloadFile.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))


def offload_engine(engine_id: str, *, mla: bool = False) -> OffloadEngine | None:
    """The host-tier support of `engine_id` (None: it has none, or none for MLA attention)."""
    for e in _data().engines:
        if e.engine == engine_id and (e.mla or not mla):
            return e
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefixTiers:
    """Where one replica finds the reused prefix set, and the hit the planner sizes with."""

    prefix_set_tokens: int
    hbm_tokens: int  # prefix tokens the replica's HBM pool keeps
    host_tokens: int  # ... its host tier (0 without offload)
    host_gib_per_device: float  # host memory of the tier, per device
    host_basis: str
    link_gbyte_s: float | None  # per device, per direction
    link_basis: str
    reload_s_per_1k: float | None  # reloading 1,000 prefix tokens from host memory
    recompute_s_per_1k: float  # computing them again
    hit_stated: float
    hit_effective: float
    offload: str | None  # the engine's launch option when the host tier is used
    why: str  # hbm | host | recompute | unsupported | off

    def to_json(self) -> dict[str, Any]:
        return {"prefix_set_tokens": self.prefix_set_tokens, "hbm_tokens": self.hbm_tokens,
                "host_tokens": self.host_tokens, "host_gib_per_device": self.host_gib_per_device,
                "host_basis": self.host_basis, "link_gbyte_s": self.link_gbyte_s, "link_basis": self.link_basis,
                "reload_s_per_1k_tokens": self.reload_s_per_1k, "recompute_s_per_1k_tokens": self.recompute_s_per_1k,
                "hit_stated": self.hit_stated, "hit_effective": self.hit_effective, "offload": self.offload,
                "tier": self.why}


def _host_gib_per_device(acc: Accelerator, catalog: Catalog, instance: str | None, cal: Calibration
                         ) -> tuple[float, str]:
    """Host RAM per device of the offer (instance, else its server), else the default ratio to HBM."""
    if instance is not None and instance in catalog.instances:
        inst = catalog.instances[instance]
        if inst.ram_gib:
            per = inst.ram_gib if inst.cards_per_host is not None else inst.ram_gib / inst.accelerator_count
            return per, f"{instance}: {inst.ram_gib:g} GiB RAM"
        sv = catalog.server(inst.server)
        if sv.ram_gib:
            return sv.ram_gib / sv.accelerators_per_node, f"server {sv.id}: {sv.ram_gib:g} GiB RAM"
    ratio = cal.value("host_ram_per_hbm_default")
    return ratio * float(acc.memory_gib or 0.0), f"not stated: assumed {ratio:g} x HBM (host_ram_per_hbm_default)"


def _link(acc: Accelerator) -> tuple[float | None, str]:
    """Host-to-device GB/s per direction of one device, and what it rests on."""
    c2c = _data().c2c
    if c2c.match.lower() in acc.host_interface.lower():
        return c2c.gbyte_s_per_direction, f"NVLink-C2C {c2c.gbyte_s_per_direction:g} GB/s ({c2c.source})"
    link = host_link(acc)
    if link is None:
        return None, f"host interface not read ({acc.host_interface or 'not stated'})"
    return float(link.bandwidth_gbyte_s), link.label


def prefix_tiers(*, cost: StepCostModel, cfg: EngineConfig, acc: Accelerator, catalog: Catalog,
                 instance: str | None, devices: int, engine_id: str, mla: bool, hit: float, prefix_set: int,
                 mode: str, cal: Calibration) -> PrefixTiers:
    """The tiers of one replica of `devices` devices on `instance` (module docstring)."""
    hbm = int(cost.kv_capacity_tokens * cal.value("prefix_cache_pool_share"))
    chunk = max(1, min(cfg.max_batched_tokens, 4096))
    recompute = prefill_s(cost, cfg, chunk) / chunk * 1000.0  # a budget-sized chunk with no context: a lower bound
    gib, basis = _host_gib_per_device(acc, catalog, instance, cal)
    gib *= cal.value("host_kv_memory_fraction")
    gbs, link_basis = _link(acc)
    reload = cost.kv_bytes_per_token / (gbs * 1e9) * 1000.0 if gbs else None
    eng = offload_engine(engine_id, mla=mla)
    in_hbm = min(1.0, hbm / prefix_set)
    host, used = 0, None
    if in_hbm >= 1.0:
        why = "hbm"
    elif mode == "off":
        why = "off"
    elif eng is None or reload is None or cost.kv_bytes_per_token <= 0:
        why = "unsupported"
    else:  # each device keeps its shard of the prefix KV in its share of the host RAM
        host = int(gib * GIB / cost.kv_bytes_per_token)
        used = eng.flag.replace("{gib}", f"{gib * devices:.0f}").replace("{bytes}", f"{int(gib * GIB * devices)}")
        why = "host"
    in_host = min(1.0 - in_hbm, host / prefix_set)
    if why == "host" and in_hbm + in_host < 1.0:
        why = "host+recompute"
    saved = max(0.0, 1.0 - reload / recompute) if reload is not None and recompute > 0 else 0.0
    return PrefixTiers(prefix_set_tokens=prefix_set, hbm_tokens=hbm, host_tokens=host, host_gib_per_device=gib,
                       host_basis=basis, link_gbyte_s=gbs, link_basis=link_basis, reload_s_per_1k=reload,
                       recompute_s_per_1k=recompute, hit_stated=hit, hit_effective=hit * (in_hbm + in_host * saved),
                       offload=used, why=why)
