"""Candidate parallel layouts as numpy arrays: one row per (devices, tp, pp, dp, cp, ep, vpp, zero, mb, recompute).

The planner evaluates every candidate at once (memory, step time, cost), so generation is a
cartesian product of small per-axis choice lists followed by vectorized validity masks: no
Python loop per layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np

from gpuplan.errors import InputError
from gpuplan.workload.frameworks import Axis, FrameworkProfile, framework, framework_ids
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["LAYOUT_FAMILIES", "RECOMPUTE_CODES", "Candidates", "LayoutChoices", "family_choices", "framework_choices",
           "generate", "offered", "offered_choice", "why_no_layout"]

T = TypeVar("T")
RECOMPUTE_CODES = ("none", "selective", "full")  # index = code in Candidates.recompute


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutChoices:
    """Values to try on each axis; a single-element tuple pins an axis (a flag the user gave)."""

    devices: Sequence[int]
    tp: Sequence[int] = (1, 2, 4, 8)
    pp: Sequence[int] = (1, 2, 4, 8, 16, 32)
    cp: Sequence[int] = (1, 2, 4, 8)
    ep: Sequence[int] = (1, 2, 4, 8, 16, 32, 64)
    vpp: Sequence[int] = (1, 2, 4)
    zero: Sequence[int] = (1, 3)
    micro_batch: Sequence[int] = (1, 2, 4, 8)
    recompute: Sequence[str] = RECOMPUTE_CODES
    max_tp: int = 8  # the fast-link domain: TP stays inside it
    dp: Sequence[int] | None = None  # pin dp (otherwise devices / (tp*pp*cp))
    zero3_with_pp: bool = False  # ZeRO-2/3 (FSDP) inside pipeline stages (torchtitan's FSDP2 + PP)


@dataclass(frozen=True, slots=True)
class Candidates:
    """Columns of equal length; `recompute` holds codes into RECOMPUTE_CODES."""

    devices: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    vpp: np.ndarray
    zero: np.ndarray
    micro_batch: np.ndarray
    recompute: np.ndarray
    microbatches: np.ndarray  # per pipeline per step

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def take(self, mask_or_index: np.ndarray | slice) -> Candidates:
        return Candidates(*(getattr(self, f.name)[mask_or_index] for f in fields(self)))

    def row(self, i: int) -> dict[str, int | str]:
        out: dict[str, int | str] = {f.name: int(getattr(self, f.name)[i]) for f in fields(self)}
        out["recompute"] = RECOMPUTE_CODES[int(self.recompute[i])]
        return out


def generate(spec: ModelSpec, choices: LayoutChoices, *, seq_len: int, global_batch: int,
             batch_fixed: bool = True) -> Candidates:
    """All valid layouts for `spec` over the choice lists (vectorized masks).

    `batch_fixed` (TrainingJob.global_batch_fixed): a layout runs exactly `global_batch` sequences per step, so its
    data-parallel batch dp x micro_batch divides it (a cluster whose data-parallel batch exceeds it cannot run it).
    Otherwise `global_batch` is a target and each layout runs the multiple of dp x micro_batch nearest to it (at
    least one): the step's sequences are `microbatches` x dp x micro_batch either way (train_eval counts them)."""
    rules, cols = _rules(spec, choices, seq_len=seq_len, global_batch=global_batch, batch_fixed=batch_fixed)
    n, tp, pp, dp, cp, ep, vpp, zero, mb, rcc, microbatches = cols
    ok = np.ones(n.shape, dtype=bool)
    for _, mask in rules:
        ok &= mask
    sel = np.nonzero(ok)[0]
    return Candidates(n[sel], tp[sel], pp[sel], dp[sel], cp[sel], ep[sel], vpp[sel], zero[sel], mb[sel],
                      rcc[sel], microbatches[sel])


def _rules(spec: ModelSpec, choices: LayoutChoices, *, seq_len: int, global_batch: int, batch_fixed: bool
           ) -> tuple[list[tuple[str, np.ndarray]], tuple[np.ndarray, ...]]:
    """The grid of every choice and the validity rules over it, in order: (what a layout must satisfy, mask)."""
    rc = [RECOMPUTE_CODES.index(r) for r in choices.recompute]
    ep_axis = choices.ep if spec.moe is not None else (1,)
    grids = np.meshgrid(
        np.asarray(choices.devices, dtype=np.int64), np.asarray(choices.tp, dtype=np.int64),
        np.asarray(choices.pp, dtype=np.int64), np.asarray(choices.cp, dtype=np.int64),
        np.asarray(ep_axis, dtype=np.int64), np.asarray(choices.vpp, dtype=np.int64),
        np.asarray(choices.zero, dtype=np.int64), np.asarray(choices.micro_batch, dtype=np.int64),
        np.asarray(rc, dtype=np.int64), indexing="ij",
    )
    n, tp, pp, cp, ep, vpp, zero, mb, rcc = (g.ravel() for g in grids)
    model_par = tp * pp * cp
    dp = np.where(n % model_par == 0, n // np.maximum(model_par, 1), 0)
    yes = np.ones(n.shape, dtype=bool)
    rules: list[tuple[str, np.ndarray]] = [
        ("tp x pp x cp divides the device count", dp > 0),
        ("the stated dp is devices / (tp x pp x cp)",
         np.isin(dp, np.asarray(choices.dp)) if choices.dp is not None else yes),
        (f"tp divides the {spec.num_heads} attention heads", spec.num_heads % tp == 0),
        # Megatron-Core splits the query groups over TP (TransformerConfig: num_query_groups must be a multiple
        # of tensor_model_parallel_size); torchtitan shards wk/wv by KV head: neither replicates KV heads in training
        (f"tp divides the {spec.kv_heads} key-value heads", spec.kv_heads % tp == 0),
        (f"tp at most {choices.max_tp} (the fast-link domain)", tp <= choices.max_tp),
        (f"pp at most the {spec.num_layers} layers", pp <= spec.num_layers),
        (f"cp divides the sequence length {seq_len}", seq_len % cp == 0),
        # interleaving needs at least one layer per virtual stage; uneven splits are allowed
        # (Megatron-LM accounts the embedding and loss as layers when they do not divide)
        ("vpp > 1 only with pp > 1 and pp x vpp at most the layers",
         np.where(vpp > 1, (pp > 1) & (pp * vpp <= spec.num_layers), True)),
    ]
    if spec.moe is not None:
        rules.append((f"ep divides the {spec.moe.num_experts} experts", spec.moe.num_experts % ep == 0))
        # EP inside DP x CP (ETP = TP) or across TP too (ETP = 1)
        rules.append(("ep divides dp x cp x tp", (dp * cp * tp) % ep == 0))
    per_step = dp * mb
    safe = np.maximum(per_step, 1)
    if batch_fixed:  # micro-batches per pipeline per step: exactly the stated batch
        microbatches = np.maximum(global_batch // safe, 1)
        rules.append((f"dp x micro-batch divides the global batch of {global_batch} sequences",
                      (per_step > 0) & (per_step <= global_batch) & (global_batch % safe == 0)))
    else:  # the multiple of the data-parallel batch nearest the target
        microbatches = np.maximum(np.floor(global_batch / safe + 0.5).astype(np.int64), 1)
        rules.append(("a data-parallel batch", per_step > 0))
    rules.append(("at least pp micro-batches per step (1F1B)", microbatches >= np.where(pp > 1, pp, 1)))
    if not choices.zero3_with_pp:
        # ZeRO-2/3 with pipelining: Megatron's distributed optimizer is ZeRO-1, DeepSpeed's pipeline engine refuses
        # stages 2 and 3; torchtitan shards each stage with FSDP2 (frameworks.yaml zero3_with_pp)
        rules.append(("ZeRO-2/3 (FSDP) only without pipeline stages under this framework; torchtitan runs "
                      "FSDP2 with pp", np.where(zero >= 2, pp == 1, True)))
    return rules, (n, tp, pp, dp, cp, ep, vpp, zero, mb, rcc, microbatches)


def why_no_layout(spec: ModelSpec, choices: LayoutChoices, *, seq_len: int, global_batch: int,
                  batch_fixed: bool = True) -> str:
    """The first validity rule that no layout of the choice lists meets (what `generate` found empty)."""
    rules, cols = _rules(spec, choices, seq_len=seq_len, global_batch=global_batch, batch_fixed=batch_fixed)
    ok = np.ones(cols[0].shape, dtype=bool)
    for reason, mask in rules:
        ok &= mask
        if not ok.any():
            return reason
    return "none (a layout exists)"


# Layout families: how the framework a team runs lays a job out.
# * megatron: TP/SP, PP (1F1B, interleaved), CP, EP and DP/ZeRO (Megatron-LM, MindSpeed, Paddle, NeMo).
# * data_parallel: DDP, FSDP or DeepSpeed ZeRO with activation checkpointing and no model parallelism:
#   what PEFT/TRL, LLaMA-Factory, torchtune and Unsloth run for LoRA/QLoRA and full fine-tuning
#   (torchtune's distributed recipes are FSDP2 only; LLaMA-Factory and TRL launch through
#   accelerate with DeepSpeed ZeRO or FSDP; gradient checkpointing is the only recomputation).
# A framework id (workload/data/frameworks.yaml) is also a family: exactly the axes, ZeRO stages and
# recomputation that framework offers.
LAYOUT_FAMILIES = ("megatron", "data_parallel")


def family_choices(family: str, devices: Sequence[int], max_tp: int) -> LayoutChoices:
    """The choice lists of a layout family, or of a framework's profile, for these cluster sizes."""
    if family == "data_parallel":
        return LayoutChoices(devices=devices, tp=(1,), pp=(1,), cp=(1,), ep=(1,), vpp=(1,), zero=(0, 1, 3),
                             recompute=("none", "full"), max_tp=max_tp)
    if family != "megatron" and family in framework_ids():
        return framework_choices(framework(family), devices, max_tp)
    # the megatron family (and --framework megatron): every Megatron-Core layout with ZeRO-1 or FSDP (plain DDP is
    # never faster than the distributed optimizer, so the planner does not time it)
    return LayoutChoices(devices=devices, max_tp=max_tp)


def offered(profile: FrameworkProfile | None, axis: Axis, stated: int | None, default: Sequence[int]) -> list[int]:
    """A stated degree, else the values a framework offers on `axis` (1 where it lacks the axis), else `default`.
    A stated degree above 1 on an axis the framework lacks is an InputError naming the axis and the frameworks
    that offer it (never a layout the framework cannot run)."""
    if stated is not None:
        if profile is not None and stated > 1 and not profile.has(axis):
            have = [p for p in framework_ids() if framework(p).has(axis)]
            raise InputError(field=axis, value=stated, allowed=f"1 ({profile.id} offers no {axis.upper()})",
                             hint=f"leave --{axis} out, or plan with a framework that has it: {', '.join(have)}")
        return [stated]
    return list(default) if profile is None or profile.has(axis) else [1]


def offered_choice(profile: FrameworkProfile | None, name: str, stated: T | None,
                   available: Sequence[T], default: Sequence[T]) -> list[T]:
    """`offered` for the ZeRO stage and the recomputation: the stated value (checked against what the framework
    offers), else the framework's list, else `default`."""
    if stated is None:
        return list(available if profile is not None else default)
    if profile is not None and stated not in available:
        raise InputError(field=name, value=stated, allowed=f"{', '.join(map(str, available))} under {profile.id}",
                         hint=f"{profile.name} does not offer {name} {stated}")
    return [stated]


def framework_choices(profile: FrameworkProfile, devices: Sequence[int], max_tp: int) -> LayoutChoices:
    """The axes, ZeRO stages and recomputation `profile` offers; an axis it lacks is pinned to 1."""
    full = LayoutChoices(devices=devices, max_tp=max_tp)
    return LayoutChoices(devices=devices, tp=offered(profile, "tp", None, full.tp),
                         pp=offered(profile, "pp", None, full.pp), cp=offered(profile, "cp", None, full.cp),
                         ep=offered(profile, "ep", None, full.ep), vpp=offered(profile, "vpp", None, full.vpp),
                         zero=profile.zero_stages, recompute=profile.recompute,
                         max_tp=max_tp if profile.has("tp") else 1, zero3_with_pp=profile.zero3_with_pp)
