"""What a ground-truth row says it ran: its `settings` (recipe facts), never a guess from its source's name.

The case format's optional `settings` column (ground-truth README) holds semicolon-separated
`key=value` pairs; `RowSettings` is its schema (an unknown key or value is an InputError naming it).
Rows of case files that have no such column yet get theirs from `data/row_settings.yaml`, keyed by
row id, with the sentence of the source that states each fact; that file may also fill layout or
recipe columns the row left empty (`columns`). A stated cell in the case file always wins; an overlay
that contradicts it is an error.

Keys beyond the README's list (gpuplan extensions, documented in docs/validation.md): `loss=full_16bit`
(cross-entropy of 16-bit logits, as DeepSpeed's 16-bit engine runs it), `speculative`,
`draft_tokens` (speculative tokens proposed per step: SGLang's num-draft-tokens minus one),
`attention_dtype` (`fp8`: attention kernels that compute in fp8 over an fp8 KV cache, FlashMLA FP8),
`dataset` and `num_prompts` (the workload an offline or server row ran), `generated_tokens`
(tokens generated before the memory reading), `quant_scope` (`mlp`: only the MLP matrices
are in the weight format), `optimizer_impl` (torch's AdamW `foreach` implementation keeps a
second set of temporaries: optimizer `adamw_foreach`), `optimizer_in_bwd` (torchtune steps each
parameter inside backward and frees its gradient) and `tp_comm_overlap` (whether the run overlapped its
tensor-parallel collectives with the GEMMs: Transformer Engine userbuffers, Megatron-Core --tp-comm-overlap;
runs before it existed did not) and `zero_group` (the ranks one ZeRO shard group spans: InternEvo's zero1=8 shards
within 8 ranks and replicates across the groups; zero1=-1, the whole data-parallel group, states nothing) and
`custom_all_reduce` (serving: `false` when the engine was built or run without its custom one-shot all-reduce
kernel, so its tensor-parallel all-reduces ran over NCCL's ring, 2(n - 1) latency steps instead of the kernel's
fixed few; TensorRT-LLM's build scripts before trtllm-build made the kernel opt-in) and
`grad_reduce_overlap` (training: `false` when the data-parallel gradient reduction ran after the backward instead of
overlapping it: TrainingJob.grad_reduce_overlap) and `recompute_early_stop` (training: whether full recomputation
stopped before each dense layer's MLP down projection, as PyTorch's non-reentrant checkpoint does from torch 2.1;
`false` for a run on an older torch or a reentrant checkpoint: TrainingJob.recompute_early_stop) and `pp_partition`
(training: how the run split its pipeline stages, `layers` or `layers_and_embeddings`, when its source says:
TrainingJob.pp_partition) and `recompute_modules` (training: the output-discarding recompute modules a recipe sets,
comma-separated, e.g. Megatron-Bridge's DeepSeek recipes `mla_up_proj`: TrainingJob.recompute_modules) and
`moe_dispatcher` (training: `flex` for a MoE run on DeepEP/HybridEP with CUDA graphs
over the router and dispatch preprocessing, `alltoall` for Megatron-Core's host-synchronised alltoall dispatcher:
TrainingJob.moe_dispatcher) and `fp8_params` (training: the frozen base matrices of an fp8 LoRA run stored in fp8,
NeMo `fp8_params`, Transformer Engine fp8_model_init: TrainingJob.fp8_params) and `graph_mode` (serving: `true` when
the run's decode steps ran as captured graphs, as CloudMatrix-Infer's decode on CANN does: the engine's per-layer host
dispatch measured on eager ports gives way to kernel tails and one graph dispatch per step, engines.yaml
graph_launch_s: EngineProfile.graph_mode) and `mtp_acceptance` (serving: the share of draft tokens the run's source
measured as kept, in place of the engine term of that name: CloudMatrix-Infer's 70%, 1.7 tokens per step).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan.errors import InputError
from gpuplan.validate.cases import Row
from gpuplan.workload.frameworks import RecomputeModule
from gpuplan.workload.jobs import PpPartition

__all__ = ["RowSettings", "parse_settings", "resolve_row"]

Framework = Literal["megatron", "megatron_deepspeed", "nemo", "deepspeed", "llmfoundry", "nanotron", "dualpipe",
                    "fsdp", "torchtitan", "torchtune", "hf_trainer", "hf_transformers", "llamafactory", "unsloth",
                    "mindspeed", "mindformers", "maxtext", "internevo", "colossalai", "vllm", "sglang", "trtllm",
                    "lmdeploy", "mindie"]


class RowSettings(BaseModel):
    """The recipe facts a row states (ground-truth README, "The optional settings column")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    framework: Framework | None = None
    loss: Literal["full", "full_16bit", "chunked", "fused"] | None = None
    trainable_extra: tuple[Literal["embed", "head"], ...] = ()
    packing: bool | None = None
    compile: bool | None = None
    optimizer_offload: Literal["cpu", "nvme"] | None = None
    zero_impl: Literal["torch", "deepspeed"] | None = None
    quant_format: Literal["nf4", "gptq", "awq"] | None = None
    attention: Literal["flash", "triton", "eager"] | None = None
    attention_dtype: Literal["bf16", "fp8"] | None = None
    lora_targets: tuple[str, ...] = ()
    engine_version: str | None = None
    batching: Literal["static", "inflight"] | None = None
    deployment: Literal["colocated", "pd_disaggregated"] | None = None
    speculative: bool | None = None
    draft_tokens: int | None = Field(default=None, gt=0)
    dataset: Literal["sharegpt", "mlperf_openorca", "mlperf_mixtral"] | None = None
    num_prompts: int | None = Field(default=None, gt=0)
    generated_tokens: int | None = Field(default=None, gt=0)
    quant_scope: Literal["all", "mlp"] | None = None
    optimizer_impl: Literal["foreach", "fused", "for_loop"] | None = None
    optimizer_in_bwd: bool | None = None
    fp8_params: bool | None = None
    tp_comm_overlap: bool | None = None
    zero_group: int | None = Field(default=None, ge=1)
    custom_all_reduce: bool | None = None
    grad_reduce_overlap: bool | None = None
    moe_dispatcher: Literal["alltoall", "flex"] | None = None
    recompute_early_stop: bool | None = None
    recompute_modules: tuple[RecomputeModule, ...] | None = None
    pp_partition: PpPartition | None = None
    graph_mode: bool | None = None
    mtp_acceptance: float | None = Field(default=None, gt=0, le=1)


_LISTS = ("trainable_extra", "lora_targets", "recompute_modules")


def parse_settings(text: str, *, row_id: str = "") -> RowSettings:
    """`key=value;key=value` -> RowSettings; InputError naming the key or value that is not allowed."""
    raw: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(field="settings", value=part, allowed="key=value pairs separated by ';'",
                             hint=f"row {row_id}" if row_id else "")
        if key not in RowSettings.model_fields:
            raise InputError(field="settings", value=key, allowed=", ".join(RowSettings.model_fields),
                             hint=f"row {row_id}: an unknown recipe key is an error, not ignored")
        value = value.strip()
        raw[key] = tuple(v.strip() for v in value.split(",") if v.strip()) if key in _LISTS else value
    try:
        return RowSettings.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "settings"
        raise InputError(field=f"settings.{field}", value=raw.get(str(err["loc"][0]), ""),
                         allowed=err["msg"], hint=f"row {row_id}" if row_id else "") from None


@cache
def _overlay() -> dict[str, dict[str, Any]]:
    path = resources.files("gpuplan.validate") / "data" / "row_settings.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rows: dict[str, dict[str, Any]] = data["rows"]
    for rid, entry in rows.items():
        extra = set(entry) - {"settings", "columns", "stated"}
        if extra or not entry.get("stated"):
            raise RuntimeError(f"row_settings.yaml {rid}: keys {sorted(extra)} unknown or no 'stated' quote")
        parse_settings(str(entry.get("settings", "")), row_id=rid)
    return rows


def resolve_row(row: Row) -> tuple[Row, RowSettings]:
    """(the row with the overlay's columns filled in, its settings): the row's own `settings` cell, merged
    with the overlay for its id (the row wins; a contradiction is an error)."""
    rid = row.get("id", "")
    own = parse_settings(row.get("settings", ""), row_id=rid)
    entry = _overlay().get(rid)
    if entry is None:
        return row, own
    extra = parse_settings(str(entry.get("settings", "")), row_id=rid)
    merged = extra.model_dump(exclude_defaults=True)
    for key, value in own.model_dump(exclude_defaults=True).items():
        if key in merged and merged[key] != value:
            raise InputError(field=f"settings.{key}", value=value, allowed=f"{merged[key]} (row_settings.yaml)",
                             hint=f"row {rid}: the case file and gpuplan's overlay disagree; fix one of them")
        merged[key] = value
    filled = dict(row)
    for col, value in (entry.get("columns") or {}).items():
        if row.get(col) and str(row[col]) != str(value):
            raise InputError(field=col, value=row[col], allowed=f"{value} (row_settings.yaml)",
                             hint=f"row {rid}: the case file and gpuplan's overlay disagree")
        filled[col] = str(value)
    return filled, RowSettings.model_validate(merged)
