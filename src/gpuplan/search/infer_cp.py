"""Prefill context parallelism (PCP) in a serving replica: a long prompt split across `cp` groups of `tp` devices.

Each of the cp ranks computes 1/cp of every prefill chunk's tokens and of its causal attention pairs (the
load-balanced split of ring attention: Liu et al. 2023, 'Ring Attention with Blockwise Transformers'; vLLM's PCP
shards the new tokens of a prefill across ranks, RFC vllm-project/vllm#25749), and passes its KV chunk to the
cp - 1 others over the node's link: (cp - 1) / cp of a prompt token's KV bytes per device per token, charged in
full (conservative: ring attention overlaps it with the attention compute). Decoding runs on every rank with the
KV cache sharded across them (vLLM: decode context parallel shards the KV over the PCP and TP groups): each reads
1/cp of the KV and the partial attention outputs are combined once per layer (one link latency per layer). The
replica's KV pool is cp times a tp replica's; its weights are the tp replica's on each rank. Engines and parts
that run it: search/data/context_parallel.yaml.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from gpuplan import yamlio
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.estimate.links import intra_node_link
from gpuplan.hardware import Accelerator
from gpuplan.hardware.schema_base import AsOf
from gpuplan.workload.jobs import Layout

__all__ = ["CpStepCost", "cp_cost", "cp_degrees", "cp_flag", "cp_layouts"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class _CpEngine(BaseModel):
    model_config = _STRICT

    engine: str
    stacks: tuple[str, ...]
    accelerators: tuple[str, ...] = ()  # only these parts of the stacks (empty: all)
    flag: str = Field(min_length=1)
    source: str = Field(min_length=1)
    as_of: AsOf


class _CpFile(BaseModel):
    model_config = _STRICT

    schema_version: int
    as_of: str
    min_prompt_tokens: int = Field(gt=0)
    degrees: tuple[int, ...]
    engines: tuple[_CpEngine, ...]


@cache
def _data() -> _CpFile:
    path = resources.files("gpuplan.search") / "data" / "context_parallel.yaml"
    return _CpFile.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))


def _entry(engine_id: str, acc: Accelerator) -> _CpEngine | None:
    for e in _data().engines:
        if e.engine == engine_id and acc.software_stack in e.stacks and (
                not e.accelerators or acc.id in e.accelerators):
            return e
    return None


def cp_flag(engine_id: str, acc: Accelerator, cp: int) -> str | None:
    """The launch option of a cp-way prefill context-parallel replica (None: the engine does not run it there)."""
    e = _entry(engine_id, acc)
    return None if e is None else e.flag.replace("{cp}", str(cp))


def cp_degrees(engine_id: str, acc: Accelerator, *, tp: int, node: int, prompt_p99: float) -> tuple[int, ...]:
    """The CP degrees the planner tries for a tp replica: where the engine runs PCP on the part, the prompts are long
    (p99 at least `min_prompt_tokens`) and tp x cp devices fit one node."""
    d = _data()
    if prompt_p99 < d.min_prompt_tokens or _entry(engine_id, acc) is None:
        return ()
    return tuple(c for c in d.degrees if tp * c <= node)


@dataclass(frozen=True, slots=True, kw_only=True)
class CpStepCost:
    """A tp replica's step cost (`base`) run as cp ranks (module docstring); the StepCost the planner and the
    simulator take."""

    base: StepCostModel
    cp: int
    ring_s_per_prompt_token: float  # KV passed between the ranks, per prompt token
    combine_s: float  # combining the ranks' partial decode attention, per step with decodes
    kv_capacity_tokens: int
    kv_bytes_per_token: float  # per device
    weights_bytes_per_device: float
    request_overhead: float
    terms: dict[str, dict[str, object]]
    assumptions: dict[str, Any]

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        s = self.base.step_s(prefill_tokens=math.ceil(prefill_tokens / self.cp),
                             prefill_attn_pairs=prefill_attn_pairs / self.cp, decode_seqs=decode_seqs,
                             decode_kv_tokens=math.ceil(decode_kv_tokens / self.cp))
        return s + self.ring_s_per_prompt_token * prefill_tokens + (self.combine_s if decode_seqs > 0 else 0.0)

    def step_s_array(self, *, prefill_tokens: npt.ArrayLike, prefill_attn_pairs: npt.ArrayLike,
                     decode_seqs: npt.ArrayLike, decode_kv_tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        p = np.asarray(prefill_tokens, dtype=np.float64)
        d = np.asarray(decode_seqs, dtype=np.float64)
        s = self.base.step_s_array(prefill_tokens=np.ceil(p / self.cp),
                                   prefill_attn_pairs=np.asarray(prefill_attn_pairs, dtype=np.float64) / self.cp,
                                   decode_seqs=d,
                                   decode_kv_tokens=np.ceil(np.asarray(decode_kv_tokens, dtype=np.float64) / self.cp))
        out = s + self.ring_s_per_prompt_token * p + np.where(d > 0, self.combine_s, 0.0)
        return np.asarray(np.where(p + d > 0, out, 0.0), dtype=np.float64)


def cp_cost(base: StepCostModel, *, acc: Accelerator, cp: int, layers: int) -> CpStepCost | None:
    """`base` (a tp replica) as cp prefill context-parallel ranks; None where the part's link is not known."""
    link = intra_node_link(acc)
    if link is None:
        return None
    bw = float(link.bandwidth_gbyte_s) * 1e9
    ring = base.kv_bytes_per_token * (cp - 1) / cp / bw
    return CpStepCost(base=base, cp=cp, ring_s_per_prompt_token=ring, combine_s=layers * float(link.latency_s),
                      kv_capacity_tokens=base.kv_capacity_tokens * cp, kv_bytes_per_token=base.kv_bytes_per_token / cp,
                      weights_bytes_per_device=base.weights_bytes_per_device, request_overhead=base.request_overhead,
                      terms=base.terms, assumptions={**base.assumptions, "prefill_context_parallel": cp,
                                                     "cp_link": link.label})


def cp_layouts(bases: Sequence[tuple[Layout, list[Any], StepCostModel]], *, engine_id: str, acc: Accelerator, node: int,
               prompt_p99: float, layers: int, max_devices: int) -> list[tuple[Layout, list[Any], CpStepCost]]:
    """The prefill context-parallel variants of the TP layouts that missed the TTFT limit (`bases`: layout, its
    offers, its step cost): each cp degree the engine runs on the part (`cp_degrees`) whose tp x cp devices stay
    within `max_devices`, with its step cost (`cp_cost`)."""
    out = []
    for lay, offers, cm in bases:
        for cp in cp_degrees(engine_id, acc, tp=lay.tp, node=node, prompt_p99=prompt_p99):
            cpm = cp_cost(cm, acc=acc, cp=cp, layers=layers)
            if cpm is not None and lay.tp * cp <= max_devices:
                out.append((Layout(tp=lay.tp, cp=cp), offers, cpm))
    return out
