"""Which torchtitan model a plan's model is: a registered flavour when one has its shape, else the model args a
user must register (never a flavour of another shape).

torchtitan 0.2.2 picks the model by `[model] name` and `flavor` from Python tables (data/torchtitan_models.yaml
records them with their source). A flavour matches when every shape fact agrees (layers, width, heads, query
groups, head size, FFN, vocabulary, QK norm, tied embeddings, MoE and MLA sizes); positional facts that differ
(RoPE base, RoPE scaling) are named with the edit that fixes them, since torchtitan takes them from the flavour,
not the job config.
"""

from __future__ import annotations

import math
import re
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from gpuplan.workload.model_spec import ModelSpec

__all__ = ["Flavour", "TitanModel", "flavours", "titan_model"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class Flavour(BaseModel):
    """One registered torchtitan flavour and the facts gpuplan compares."""

    model_config = _STRICT
    model: Literal["llama3", "qwen3", "deepseek_v3"]
    flavor: str = Field(min_length=1)
    path: str = Field(min_length=1)
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int | None = None
    head_dim: int | None = None
    ffn_hidden_size: int
    vocab_size: int
    qk_norm: bool = False
    tie_word_embeddings: bool = False
    rope_theta: float
    rope_scaling: str | None = None
    num_experts: int | None = None
    top_k: int | None = None
    expert_ffn_size: int | None = None
    num_shared_experts: int = 0
    first_dense_layers: int = 0
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    args: str = Field(min_length=1)


class _File(BaseModel):
    model_config = _STRICT
    schema_version: Literal[1]
    repo: str
    version: str
    commit: str
    as_of: str
    flavours: tuple[Flavour, ...]


@cache
def _file() -> _File:
    text = resources.files("gpuplan.emit").joinpath("data/torchtitan_models.yaml").read_text(encoding="utf-8")
    return _File.model_validate(yaml.safe_load(text))


def flavours() -> tuple[Flavour, ...]:
    return _file().flavours


class TitanModel(BaseModel):
    """The `[model]` choice for a plan's model and the comment lines that go with it."""

    model_config = _STRICT
    name: str
    flavor: str
    registered: bool
    notes: tuple[str, ...]


def _shape(spec: ModelSpec) -> dict[str, Any]:
    moe, mla = spec.moe, spec.mla
    return {"num_layers": spec.num_layers, "hidden_size": spec.hidden_size, "num_heads": spec.num_heads,
            "num_kv_heads": None if mla else spec.kv_heads, "head_dim": None if mla else spec.attn_head_dim,
            "ffn_hidden_size": spec.ffn_hidden_size, "vocab_size": spec.vocab_size, "qk_norm": spec.qk_norm,
            "tie_word_embeddings": spec.tie_word_embeddings,
            "num_experts": moe.num_experts if moe else None, "top_k": moe.top_k if moe else None,
            "expert_ffn_size": moe.expert_ffn_size if moe else None,
            "num_shared_experts": moe.num_shared_experts if moe else 0,
            "first_dense_layers": moe.first_dense_layers if moe else 0,
            "kv_lora_rank": mla.kv_lora_rank if mla else None, "q_lora_rank": mla.q_lora_rank if mla else None}


def _flavour_shape(f: Flavour) -> dict[str, Any]:
    out = {k: getattr(f, k) for k in ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "head_dim",
                                      "ffn_hidden_size", "vocab_size", "qk_norm", "tie_word_embeddings", "num_experts",
                                      "top_k", "expert_ffn_size", "num_shared_experts", "first_dense_layers",
                                      "kv_lora_rank", "q_lora_rank")}
    if f.model == "llama3":  # TransformerModelArgs: head size dim / n_heads
        out["head_dim"] = f.hidden_size // f.num_heads
    if f.model == "deepseek_v3":  # MLA: no GQA groups or plain head size
        out["num_kv_heads"] = out["head_dim"] = None
    return out


def _plain(spec: ModelSpec) -> bool:
    """No biases, SwiGLU, RMSNorm, RoPE, full attention: what torchtitan's llama3/qwen3/deepseek_v3 build."""
    return (not (spec.qkv_bias or spec.attn_out_bias or spec.mlp_bias or spec.post_sublayer_norms)
            and spec.mlp == "swiglu" and spec.norm == "rmsnorm" and spec.position_embedding == "rope"
            and spec.sliding_window is None and spec.rope_fraction == 1 and not spec.rope_interleaved)


def _family(spec: ModelSpec) -> str | None:
    if not _plain(spec):
        return None
    if spec.mla is not None:
        return "deepseek_v3"
    if spec.qk_norm:
        return "qwen3"
    return "llama3" if spec.moe is None and spec.head_dim in (None, spec.hidden_size // spec.num_heads) else None


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _why_not(spec: ModelSpec) -> str:
    """What torchtitan 0.2.2's llama3/qwen3/deepseek_v3 models do not build of `spec`."""
    why = [w for w, cond in (
        ("q/k/v biases", spec.qkv_bias), ("output or MLP biases", spec.attn_out_bias or spec.mlp_bias),
        ("post-sublayer norms", spec.post_sublayer_norms), (f"{spec.mlp} MLP", spec.mlp != "swiglu"),
        ("LayerNorm", spec.norm != "rmsnorm"),
        (f"{spec.position_embedding} positions", spec.position_embedding != "rope"),
        ("sliding-window attention", spec.sliding_window is not None),
        ("partial or interleaved RoPE", spec.rope_fraction < 1 or spec.rope_interleaved),
        ("experts without QK norm or MLA (torchtitan's MoE models are qwen3, deepseek_v3, llama4)",
         spec.moe is not None and not spec.qk_norm and spec.mla is None)) if cond]
    return ", ".join(why) or "its head size"


def _scaling(spec: ModelSpec) -> str | None:
    rs = spec.rope_scaling
    return None if rs is None else f"{rs.type} x{rs.factor:g}"


def _llama3_ffn(dim: int, ffn: int) -> tuple[float, int] | None:
    """(ffn_dim_multiplier, multiple_of) that make torchtitan's FeedForward exactly `ffn` wide, if any."""
    hidden = int(2 * 4 * dim / 3)
    mo = 4096
    while mo > 1 and ffn % mo:
        mo //= 2
    mult = ffn / hidden
    if mo * math.ceil(int(mult * hidden) / mo) == ffn:
        return mult, mo
    return None


def _args(spec: ModelSpec, family: str | None) -> str:
    """The model args a user registers as a flavour, in the family's TransformerModelArgs class."""
    theta = _n(spec.rope_theta) if spec.rope_theta else "<rope_theta from config.json>"
    eps = f", norm_eps={spec.norm_eps:g}" if spec.norm_eps else ""
    if family == "llama3":
        ffn = _llama3_ffn(spec.hidden_size, spec.ffn_hidden_size)
        width = (f"ffn_dim_multiplier={ffn[0]!r}, multiple_of={ffn[1]}" if ffn else
                 f"<an FFN of {spec.ffn_hidden_size}: no ffn_dim_multiplier/multiple_of gives it>")
        rs = spec.rope_scaling
        rope = (f", rope_scaling_args=RoPEScalingArgs(scaling_factor={rs.factor:g}, low_freq_factor="
                f"{rs.low_freq_factor or 1:g}, high_freq_factor={rs.high_freq_factor or 4:g}, "
                f"original_max_position_embeddings={rs.original_max_position_embeddings or 8192})"
                if rs is not None and rs.type == "llama3"
                else ", rope_scaling_args=RoPEScalingArgs(scaling_factor=1.0)")
        return (f"TransformerModelArgs(dim={spec.hidden_size}, n_layers={spec.num_layers}, n_heads={spec.num_heads}, "
                f"n_kv_heads={spec.kv_heads}, vocab_size={spec.vocab_size}, {width}{eps}, rope_theta={theta}{rope})")
    if family == "qwen3":
        moe = spec.moe
        moe_args = (f", moe_enabled=True, moe_inter_dim={moe.expert_ffn_size}, moe_args=MoEArgs(num_experts="
                    f"{moe.num_experts}, num_shared_experts={moe.num_shared_experts}, top_k={moe.top_k}, "
                    "score_func=\"softmax\", route_norm=True)" if moe else "")
        return (f"Qwen3ModelArgs(dim={spec.hidden_size}, n_layers={spec.num_layers}, n_heads={spec.num_heads}, "
                f"n_kv_heads={spec.kv_heads}, head_dim={spec.attn_head_dim}, hidden_dim={spec.ffn_hidden_size}, "
                f"vocab_size={spec.vocab_size}, qk_norm=True{eps}, rope_theta={theta}, "
                f"enable_weight_tying={spec.tie_word_embeddings}{moe_args})")
    if family == "deepseek_v3" and spec.mla is not None:
        moe, mla = spec.moe, spec.mla
        moe_args = (f", moe_inter_dim={moe.expert_ffn_size}, n_dense_layers={moe.first_dense_layers}, "
                    f"moe_args=MoEArgs(num_experts={moe.num_experts}, num_shared_experts={moe.num_shared_experts}, "
                    f"top_k={moe.top_k}, score_func=\"{moe.score_function}\"" +
                    (f", route_scale={moe.topk_scaling_factor:g}" if moe.topk_scaling_factor else "") +
                    (f", num_expert_groups={moe.router_groups}, num_limited_groups={moe.router_group_topk}"
                     if moe.router_groups else "") + ")" if moe else "")
        return (f"DeepSeekV3ModelArgs(vocab_size={spec.vocab_size}, dim={spec.hidden_size}, "
                f"inter_dim={spec.ffn_hidden_size}, n_layers={spec.num_layers}, n_heads={spec.num_heads}, "
                f"q_lora_rank={mla.q_lora_rank or 0}, kv_lora_rank={mla.kv_lora_rank}, qk_nope_head_dim="
                f"{mla.qk_nope_head_dim}, qk_rope_head_dim={mla.qk_rope_head_dim}, v_head_dim={mla.v_head_dim}"
                f"{moe_args}{eps}, rope_theta={theta})")
    return (f"layers {spec.num_layers}, hidden {spec.hidden_size}, heads {spec.num_heads} (kv {spec.kv_heads}, head "
            f"{spec.attn_head_dim}), FFN {spec.ffn_hidden_size} ({spec.mlp}), vocab {spec.vocab_size}, norm {spec.norm}"
            f", positions {spec.position_embedding} (theta {theta}), biases qkv={spec.qkv_bias} "
            f"out={spec.attn_out_bias} mlp={spec.mlp_bias}")


def titan_model(model_id: str, spec: ModelSpec) -> TitanModel:
    """The registered flavour of `spec`'s shape, else a placeholder flavour and the args to register."""
    family = _family(spec)
    shape = _shape(spec)
    for f in flavours():
        if family != f.model or _flavour_shape(f) != shape:
            continue
        notes = [f"torchtitan {_file().version} flavour {f.model}/{f.flavor} ({f.path}) has {spec.name}'s shape: "
                 f"{f.args}."]
        if spec.rope_theta is not None and not math.isclose(spec.rope_theta, f.rope_theta):
            notes.append(f"WARNING: flavour {f.flavor} sets rope_theta={_n(f.rope_theta)}; {spec.name}'s config.json "
                         f"has {_n(spec.rope_theta)}. To continue from its weights, set rope_theta="
                         f"{_n(spec.rope_theta)} in {f.path} ({f.flavor}).")
        if _scaling(spec) != f.rope_scaling:
            fix = ("rope_scaling_args=RoPEScalingArgs(scaling_factor=1.0) (no scaling)" if spec.rope_scaling is None
                   else f"the flavour's RoPE scaling to {_scaling(spec)}")
            notes.append(f"WARNING: flavour {f.flavor} applies RoPE scaling {f.rope_scaling or 'none'}; {spec.name} "
                         f"has {_scaling(spec) or 'none'}. To continue from its weights, set {fix} in {f.path}.")
        return TitanModel(name=f.model, flavor=f.flavor, registered=True, notes=tuple(notes))
    # a flavour name: the preset id, or the model's name slugged where a config.json path was given
    slug = model_id if re.fullmatch(r"[A-Za-z0-9._-]+", model_id) else re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name)
    placeholder = f"gpuplan-{slug.strip('-').lower()}"
    if family is None:
        head = (f"torchtitan {_file().version} has no model of {spec.name}'s architecture ({_why_not(spec)}): add "
                "one (a TrainSpec registered under [model] name) with")
        return TitanModel(name=placeholder, flavor=placeholder, registered=False,
                          notes=(f"{head}: {_args(spec, None)}.",
                                 "[model] name and flavor below name that model; torchtitan stops at start until "
                                 "it is registered."))
    path = {"llama3": "torchtitan/models/llama3/__init__.py", "qwen3": "torchtitan/models/qwen3/__init__.py",
            "deepseek_v3": "torchtitan/models/deepseek_v3/__init__.py"}[family]
    return TitanModel(name=family, flavor=placeholder, registered=False, notes=(
        f"torchtitan {_file().version} registers no {family} flavour of {spec.name}'s shape. Add to {path}:",
        f'  "{placeholder}": {_args(spec, family)},',
        f"flavor = \"{placeholder}\" below names it; torchtitan stops at start until it is registered."))
