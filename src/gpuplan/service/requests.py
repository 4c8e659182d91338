"""The inputs of `plan train`, `plan infer` and `memory train` as pydantic models (extra keys rejected).

Field names are the CLI's option names with `_` for `-` (`--seq-len` -> `seq_len`); defaults are the CLI's.
Range checks (positive numbers, known names) are left to the same functions the CLI calls, so a bad value
gets the CLI's wording. `canonical_json` is the form a plan's id is hashed from.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuplan.bench.calibrate import CalibrationFile
from gpuplan.service.user_catalog import UserCatalog
from gpuplan.workload.frameworks import FrameworkId

__all__ = ["CompareRequest", "InferPlanRequest", "MemoryTrainRequest", "TrafficRow", "TrainPlanRequest",
           "canonical_json"]

Method = Literal["full", "pretrain", "full_ft", "lora", "qlora"]
Precision = Literal["bf16", "fp16", "fp32", "fp8"]
Market = Literal["cn", "global"]
Trust = Literal["low", "medium", "high"]
Name = Field(default=None, max_length=100)
DIST_CHARS = 4096  # an inline histogram of up to 256 bins (simulate.lengths.MAX_BINS)
DIST_HELP = ("fixed:N, uniform:LO-HI or an inline histogram bins:LO-HI=WEIGHT,... (e.g. bins:128-512=3,512-2048=1); "
             "a file path (hist:) is refused: the server never reads a path named in a request")
Recipe = Field(default="", max_length=300, description="recipe facts in the case files' settings syntax, "
               "'key=value;...', as the CLI's `--recipe` takes them (loss=chunked|fused|full_16bit, compile=true, "
               "optimizer_offload=cpu|nvme, optimizer_in_bwd=true, zero_impl=deepspeed, optimizer_impl=foreach, "
               "zero_group=N; with LoRA/QLoRA lora_targets=... and trainable_extra=embed,head; with QLoRA "
               "quant_format=nf4|gptq)")
ENGINE_HELP = ("a serving engine id (gpuplan engines); left out: each part's software stack's engine, as the CLI "
               "without --engine (engines.yaml stack_default_engines: MindIE on Ascend, vLLM elsewhere), named in the "
               "answer's `engine_default`")
UserRecords = Field(
    default=None, description="your own catalog records for this plan only (price quotes as `instances`, custom "
    "hardware as `accelerators` and `servers`), in the schema of a `--catalog DIR` file; planned as one more user "
    "layer, stored with the plan, never written into the server's catalog")


# Upper bounds far past any real job: a value beyond them is a typo or an attack, answered 422 naming the field
# (not an overflow deep in a search). Lower bounds are the CLI's own checks (service.checks.positives), so both
# doors word a zero or a negative value alike.
MAX_COUNT = 1_000_000  # devices, parallel degrees, batch sizes
MAX_TOKENS_PER_SEQ = 16 * 1024 * 1024  # past every model's context window (simulate.lengths.MAX_LENGTH)
MAX_TRAIN_TOKENS = 1e17  # 100,000x the largest published pretraining run (~1e13 to 4e13 tokens)
Count = Field(default=1, le=MAX_COUNT)


class _Request(BaseModel):
    # NaN and infinities (JSON's NaN, Infinity, 1e999) are refused for every number: 422, never a 500
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(..., min_length=1, max_length=100, description="a model preset id or alias (gpuplan model list)")


class TrainPlanRequest(_Request):
    """`gpuplan plan train`."""

    kind: Literal["train"] = "train"
    tokens: float = Field(..., le=MAX_TRAIN_TOKENS, description="training tokens, e.g. 1e12")
    seq_len: int = Field(default=4096, le=MAX_TOKENS_PER_SEQ)
    global_batch: int | None = Field(default=None, le=MAX_COUNT)
    method: Method = "full"
    precision: Precision = "bf16"
    deadline: float | None = Field(default=None, le=36_500, description="days")
    budget: float | None = Field(default=None, le=1e13, description="USD")
    max_devices: int = Field(default=4096, le=MAX_COUNT)
    capacity: dict[str, int] | None = Field(
        default=None, max_length=64, description="the devices an offer can supply, {instance id: N} ('*' for every "
        "offer), as the CLI's repeatable --capacity OFFER=N (a form field takes 'OFFER=N, OFFER=N'); overrides the "
        "catalog's stated or typical capacity (issue 37: capacity is data with provenance, the override is user input)")
    network: str | None = Name
    nics_per_node: float | None = Field(default=None, le=64)
    gpus_per_node: int | None = Field(default=None, le=1024)
    market: Market | None = None
    trust: Trust = "low"
    vendor: str | None = Name
    provider: str | None = Name
    domestic_only: bool = False
    framework: FrameworkId | None = None
    kernels: Literal["auto", "hf", "fused"] | None = None
    data_loading: Literal["pretokenized", "online"] = "pretokenized"
    recipe: str = Recipe
    top: int = Field(default=10, le=1000)
    hf_config: dict[str, Any] | None = Field(
        default=None, description="a Hugging Face config.json (its JSON object, at most 64 KiB) as the model "
        "instead of a preset (`-m config.json`); `model` is then only the name the plan shows")
    calibration: CalibrationFile | None = Field(
        default=None, description="measured terms of one part, as POST /api/v1/bench answers them (`gpuplan "
        "calibrate RESULT`); applied to this plan only, in place of the server's calibration file for that part")
    user_catalog: UserCatalog | None = UserRecords

    @field_validator("capacity", mode="before")
    @classmethod
    def _capacity_pairs(cls, v: Any) -> Any:
        """A form's text 'OFFER=N, OFFER=N' (the CLI's --capacity pairs) as the mapping the API takes."""
        if not isinstance(v, str):
            return v
        out: dict[str, Any] = {}
        for pair in (p.strip() for p in v.replace(";", ",").split(",")):
            if not pair:
                continue
            name, sep, value = pair.partition("=")
            if not sep or not name.strip():
                raise ValueError(f"{pair!r} is not OFFER=N (an instance id or *, '=', a whole number of devices)")
            out[name.strip()] = value.strip()
        return out or None

    @field_validator("capacity")
    @classmethod
    def _capacity_values(cls, v: dict[str, int] | None) -> dict[str, int] | None:
        for name, n in (v or {}).items():
            if not 1 <= n <= MAX_COUNT or len(name) > 100:
                raise ValueError(f"{name}={n}: an offer id (at most 100 characters) and a whole number of devices "
                                 f"from 1 to {MAX_COUNT}")
        return v

    @field_validator("hf_config")
    @classmethod
    def _config_size(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            from gpuplan.service.uploads import MAX_CONFIG_BYTES

            if len(json.dumps(v, separators=(",", ":")).encode()) > MAX_CONFIG_BYTES:
                raise ValueError(f"a JSON object of at most {MAX_CONFIG_BYTES} bytes (a config.json is a few KiB)")
        return v


class TrafficRow(BaseModel):
    """One hour of a traffic curve (`plan infer --traffic`): its rate, and its day in a week's curve."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    day: Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun", 0, 1, 2, 3, 4, 5, 6] | None = Field(
        default=None, description="mon..sun or 0-6 (0 = Monday); on every row (a week) or on none (a day)")
    hour: int = Field(..., ge=0, le=23, description="the hour the rate starts, 0-23")
    qps: float = Field(..., ge=0, le=1e6, description="mean requests per second in that hour")


class InferPlanRequest(_Request):
    """`gpuplan plan infer` on a rate (`qps`) or a traffic curve (`traffic`) with fixed lengths or length
    distributions (no trace files)."""

    kind: Literal["infer"] = "infer"
    qps: float | None = Field(default=None, le=1e6, description="requests per second (left out with traffic)")
    traffic: list[TrafficRow] | None = Field(
        default=None, max_length=168, description="the rate over a day (24 rows {hour, qps}) or a week (168 rows "
        "{day, hour, qps}), as the CLI's --traffic CSV: the fleet is planned at the peak hour, then the answer "
        "carries `schedule` (replicas per hour) and `purchase_mix` (committed baseline + on-demand burst)")
    input_len: int | None = Field(default=None, le=MAX_TOKENS_PER_SEQ)
    output_len: int | None = Field(default=None, le=MAX_TOKENS_PER_SEQ)
    input_dist: str | None = Field(default=None, max_length=DIST_CHARS, description=DIST_HELP)
    output_dist: str | None = Field(default=None, max_length=DIST_CHARS, description=DIST_HELP)
    ttft_p99: float = Field(..., le=86_400, description="seconds")
    tpot_p99: float = Field(..., le=86_400, description="seconds")
    engine: str | None = Field(default=None, max_length=50, description=ENGINE_HELP)
    weights: list[Literal["bf16", "fp8", "int8", "int4"]] | None = Field(default=None, max_length=4)
    kv_dtype: Literal["bf16", "fp16", "fp8", "int8"] = "bf16"
    market: Market | None = None
    trust: Trust = "low"
    vendor: str | None = Name
    provider: str | None = Name
    domestic_only: bool = False
    max_devices: int = Field(default=1024, le=MAX_COUNT)
    top: int = Field(default=10, le=1000)
    user_catalog: UserCatalog | None = UserRecords
    router: Literal["least-load", "cache-aware", "round-robin", "random"] = Field(
        default="least-load", description="how requests reach the replicas (docs/inference_planner.md, Routers)")
    prefix_hit: float = Field(default=0.0, ge=0.0, lt=1.0,
                              description="share of each prompt found in the prefix cache, 0 to <1")
    shared_prefix: int = Field(default=0, ge=0, le=MAX_TOKENS_PER_SEQ,
                               description="tokens every prompt starts with (a shared system prompt)")
    prefix_set: int = Field(default=0, ge=0, le=10**12,
                            description="distinct prefix tokens the prefix_hit reuses (documents, sessions); where a "
                            "replica's HBM does not hold them the hit rests on a host-memory KV tier or is recomputed "
                            "(docs/inference_planner.md, KV offload)")
    kv_offload: Literal["auto", "off"] = Field(default="auto", description="auto: keep the prefix set beyond HBM in "
                                               "host memory where the engine runs a host KV tier; off: never")
    context_parallel: bool = Field(default=True, description="try prefill context-parallel layouts where a "
                                   "tensor-parallel replica misses the TTFT limit on long prompts (vLLM "
                                   "--prefill-context-parallel-size)")


class MemoryTrainRequest(_Request):
    """`gpuplan memory train`."""

    kind: Literal["memory_train"] = "memory_train"
    method: Method = "full"
    seq_len: int = Field(default=4096, le=MAX_TOKENS_PER_SEQ)
    micro_batch: int = Count
    global_batch: int | None = Field(default=None, le=MAX_COUNT)
    precision: Precision = "bf16"
    optimizer: str = Field(default="adamw", max_length=50)
    tp: int = Count
    pp: int = Count
    dp: int = Count
    cp: int = Count
    ep: int = Count
    vpp: int = Count
    zero: int = Field(default=0, ge=0, le=3, description="ZeRO stage")
    seq_parallel: bool | None = Field(default=None, description="Megatron sequence parallelism with TP; None: the "
                                      "framework's default (`framework`; on without one)")
    recompute: Literal["none", "selective", "full"] = "none"
    attention: Literal["flash", "eager"] = "flash"
    lora_rank: int = Field(default=16, le=MAX_COUNT)
    accelerator: str | None = Name
    device_memory_gib: float | None = Field(default=None, le=1e6)
    framework: FrameworkId | None = Field(default=None, description="the training framework (`memory train "
                                          "--framework`): its kernels, fp32 main gradients, recompute modules")
    recipe: str = Recipe


class CompareRequest(_Request):
    """`gpuplan compare`: 2-4 accelerators for one training job (`tokens`) or one serving load (`qps` and the
    SLO), each with its own best plan."""

    accelerators: list[str] = Field(..., min_length=2, max_length=4, description="2-4 accelerator ids or aliases")
    tokens: float | None = Field(default=None, le=MAX_TRAIN_TOKENS, description="training tokens (the training form)")
    qps: float | None = Field(default=None, le=1e6, description="requests per second (the serving form)")
    ttft_p99: float | None = Field(default=None, le=86_400, description="seconds, with qps")
    tpot_p99: float | None = Field(default=None, le=86_400, description="seconds, with qps")
    input_len: int = Field(default=1024, le=MAX_TOKENS_PER_SEQ)
    output_len: int = Field(default=256, le=MAX_TOKENS_PER_SEQ)
    engine: str | None = Field(default=None, max_length=50, description=ENGINE_HELP)
    seq_len: int = Field(default=4096, le=MAX_TOKENS_PER_SEQ)
    global_batch: int | None = Field(default=None, le=MAX_COUNT)
    method: Method = "full"
    precision: Precision = "bf16"
    deadline: float | None = Field(default=None, le=36_500, description="days")
    budget: float | None = Field(default=None, le=1e13, description="USD")
    max_devices: int = Field(default=4096, le=MAX_COUNT)
    network: str | None = Name
    nics_per_node: float | None = Field(default=None, le=64)
    gpus_per_node: int | None = Field(default=None, le=1024)
    framework: FrameworkId | None = None
    recipe: str = Recipe
    market: Market | None = None
    trust: Trust = "low"
    provider: str | None = Name


def canonical_json(obj: BaseModel | dict[str, Any]) -> str:
    """One text per request: every field (defaults included), keys sorted, no spaces."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
