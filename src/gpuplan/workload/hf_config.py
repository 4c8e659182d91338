"""Hugging Face config.json -> `ModelSpec`, from a local file only (never the network).

Each family reader maps the keys that the family's modeling code reads to our schema.
The module structure each mapping assumes is cited next to it: transformers' own
modeling files for the native families (llama, mistral, mixtral, qwen2, qwen2_moe,
qwen3, qwen3_moe, deepseek_v2, deepseek_v3, glm, glm4, gpt2) and the authors'
remote-code files (modeling_chatglm.py, modeling_baichuan.py, modeling_internlm2.py)
for the others. The tests build the native ones on the meta device and compare counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuplan.errors import InputError, unknown_name
from gpuplan.workload.model_spec import MLASpec, ModelSpec, MoESpec, RopeScaling

__all__ = ["SUPPORTED_MODEL_TYPES", "spec_from_hf_config", "spec_from_hf_config_file"]

Config = Mapping[str, Any]


# -- key readers ---------------------------------------------------------------------------
def _missing(cfg: Config, key: str) -> InputError:
    return InputError(
        field=f"config.{key}",
        value="<missing>",
        allowed="a value: this key is required",
        hint=f"config.json of model_type {cfg.get('model_type')!r} has no {key!r}",
    )


def _int(cfg: Config, *keys: str, default: int | None = None) -> int:
    """The first of `keys` present and not null, as a positive int; `default` if none is."""
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError(field=f"config.{key}", value=value, allowed="a positive integer")
        return value
    if default is None:
        raise _missing(cfg, keys[0])
    return default


def _count(cfg: Config, key: str) -> int:
    """A non-negative int (0 when absent or null), for counts such as first_k_dense_replace."""
    value = cfg.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(field=f"config.{key}", value=value, allowed="an integer >= 0")
    return value


def _opt_int(cfg: Config, key: str) -> int | None:
    return _int(cfg, key) if cfg.get(key) is not None else None


def _bool(cfg: Config, key: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(field=f"config.{key}", value=value, allowed="true or false")
    return value


def _int_list(cfg: Config, key: str) -> list[int]:
    value = cfg.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise InputError(field=f"config.{key}", value=value, allowed="a list of layer indices")
    return value


# rope_theta where config.json leaves it out: the default of the family's config class (transformers
# LlamaConfig, MistralConfig, Qwen2Config, Qwen2MoeConfig, Qwen3Config, Qwen3MoeConfig, DeepseekV2Config,
# DeepseekV3Config: 10000.0; MixtralConfig: 1e6; InternLM2Config and Baichuan's remote code: 10000)
_ROPE_THETA_DEFAULT = {"llama": 10000.0, "mistral": 10000.0, "mixtral": 1e6, "qwen2": 10000.0, "qwen2_moe": 10000.0,
                       "qwen3": 10000.0, "qwen3_moe": 10000.0, "deepseek_v2": 10000.0, "deepseek_v3": 10000.0,
                       "internlm2": 10000.0, "baichuan": 10000.0}


def _pos_float(cfg: Config, key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InputError(field=f"config.{key}", value=value, allowed="a positive number")
    return float(value)


def _rope_and_norm(cfg: Config) -> dict[str, Any]:
    """RoPE base, RoPE scaling and norm epsilon, where config.json states them (transformers: rope_theta, or
    rope_parameters.rope_theta in its v5 layout; rope_scaling with rope_type or the older type; rms_norm_eps or
    layer_norm_epsilon / layernorm_epsilon)."""
    raw = cfg.get("rope_parameters")
    params: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    theta = cfg.get("rope_theta", params.get("rope_theta"))
    if theta is None:  # the config class's default applies (transformers configuration_<model_type>.py)
        theta = _ROPE_THETA_DEFAULT.get(str(cfg.get("model_type")).lower())
    eps_key = next((k for k in ("rms_norm_eps", "layer_norm_epsilon", "layernorm_epsilon") if cfg.get(k) is not None),
                   "rms_norm_eps")
    out: dict[str, Any] = {"rope_theta": _pos_float(cfg, "rope_theta", theta),
                           "norm_eps": _pos_float(cfg, eps_key, cfg.get(eps_key))}
    fraction = cfg.get("partial_rotary_factor", params.get("partial_rotary_factor"))
    if fraction is not None:
        out["rope_fraction"] = _pos_float(cfg, "partial_rotary_factor", fraction)
    rs = cfg.get("rope_scaling") or (params if params.get("rope_type") not in (None, "default") else None)
    if isinstance(rs, Mapping) and rs.get("rope_type", rs.get("type")) not in (None, "default"):
        kind = str(rs.get("rope_type", rs.get("type")))
        allowed = ("llama3", "yarn", "linear", "dynamic", "longrope")
        if kind not in allowed:
            raise InputError(field="config.rope_scaling.rope_type", value=kind, allowed=", ".join(allowed))
        keys = ("original_max_position_embeddings", "low_freq_factor", "high_freq_factor", "mscale",
                "mscale_all_dim", "beta_fast", "beta_slow")
        factor = _pos_float(cfg, "rope_scaling.factor", rs.get("factor")) or 1.0
        out["rope_scaling"] = RopeScaling(type=kind, factor=factor,
                                          **{k: rs[k] for k in keys if rs.get(k) is not None})
    return out


def _common(cfg: Config) -> dict[str, Any]:
    """Keys shared by the Llama-style configs (LlamaConfig and the configs derived from it)."""
    heads = _int(cfg, "num_attention_heads")
    return {
        "num_layers": _int(cfg, "num_hidden_layers"),
        "hidden_size": _int(cfg, "hidden_size"),
        "num_heads": heads,
        # LlamaConfig: num_key_value_heads defaults to num_attention_heads (MHA).
        "num_kv_heads": _int(cfg, "num_key_value_heads", default=heads),
        "head_dim": _opt_int(cfg, "head_dim"),
        "ffn_hidden_size": _int(cfg, "intermediate_size"),
        "vocab_size": _int(cfg, "vocab_size"),
        "max_position_embeddings": _int(cfg, "max_position_embeddings", default=4096),
        "tie_word_embeddings": _bool(cfg, "tie_word_embeddings", False),
    }


def _qwen_window(cfg: Config, num_layers: int) -> dict[str, Any]:
    """Qwen2/Qwen3 sliding window: only with use_sliding_window, and only on layers
    i >= max_window_layers (Qwen2Config/Qwen3Config.layer_types); none otherwise."""
    if not _bool(cfg, "use_sliding_window", False) or cfg.get("sliding_window") is None:
        return {}
    swa_layers = max(0, num_layers - _int(cfg, "max_window_layers", default=num_layers))
    if swa_layers == 0:
        return {}
    return {"sliding_window": _int(cfg, "sliding_window"), "sliding_window_layers": swa_layers}


def _qwen_moe_dense_layers(cfg: Config, num_layers: int) -> int:
    """Layers with a dense MLP in Qwen2-MoE/Qwen3-MoE (Qwen2MoeDecoderLayer): those listed in
    mlp_only_layers and those where (i + 1) % decoder_sparse_step != 0. Only the count
    matters for parameters; ModelSpec places them first."""
    only = set(_int_list(cfg, "mlp_only_layers"))
    step = _int(cfg, "decoder_sparse_step", default=1)
    return sum(1 for i in range(num_layers) if i in only or (i + 1) % step != 0)


# -- family readers ------------------------------------------------------------------------
def _llama(cfg: Config) -> dict[str, Any]:
    # LlamaAttention: q/k/v/o all take bias=attention_bias; LlamaMLP: gate/up/down bias=mlp_bias.
    bias = _bool(cfg, "attention_bias", False)
    mlp_bias = _bool(cfg, "mlp_bias", False)
    return {**_common(cfg), "qkv_bias": bias, "attn_out_bias": bias, "mlp_bias": mlp_bias}


def _mistral(cfg: Config) -> dict[str, Any]:
    # MistralAttention has no biases; a non-null sliding_window applies to every layer.
    out = _common(cfg)
    window = _opt_int(cfg, "sliding_window")
    return {**out, "sliding_window": window} if window else out


def _mixtral(cfg: Config) -> dict[str, Any]:
    # MixtralSparseMoeBlock: router Linear(hidden, num_local_experts, bias=False) and experts
    # of intermediate_size in every layer; no shared expert, no dense layer.
    out = _mistral(cfg)
    out["moe"] = MoESpec(
        num_experts=_int(cfg, "num_local_experts"),
        top_k=_int(cfg, "num_experts_per_tok"),
        expert_ffn_size=out["ffn_hidden_size"],
    )
    return out


def _qwen2(cfg: Config) -> dict[str, Any]:
    # Qwen2Attention: q/k/v always with bias, o_proj without.
    out = _common(cfg)
    return {**out, "qkv_bias": True, **_qwen_window(cfg, out["num_layers"])}


def _qwen2_moe(cfg: Config) -> dict[str, Any]:
    # Qwen2MoeSparseMoeBlock: router, routed experts of moe_intermediate_size, ONE shared expert
    # of shared_expert_intermediate_size and its sigmoid gate Linear(hidden, 1, bias=False).
    out = _common(cfg)
    layers = out["num_layers"]
    shared = _opt_int(cfg, "shared_expert_intermediate_size")
    out.update(
        qkv_bias=_bool(cfg, "qkv_bias", True),
        moe=MoESpec(
            num_experts=_int(cfg, "num_experts"),
            top_k=_int(cfg, "num_experts_per_tok"),
            expert_ffn_size=_int(cfg, "moe_intermediate_size"),
            num_shared_experts=1 if shared else 0,
            shared_expert_ffn_size=shared,
            shared_expert_gate=bool(shared),
            first_dense_layers=_qwen_moe_dense_layers(cfg, layers),
        ),
        **_qwen_window(cfg, layers),
    )
    return out


def _qwen3(cfg: Config) -> dict[str, Any]:
    # Qwen3Attention: q/k/v/o bias=attention_bias; q_norm/k_norm RMSNorm(head_dim); head_dim is
    # explicit in the config (128 even where hidden_size / heads differs).
    out = _llama(cfg)
    out["mlp_bias"] = False
    return {**out, "qk_norm": True, **_qwen_window(cfg, out["num_layers"])}


def _qwen3_moe(cfg: Config) -> dict[str, Any]:
    # Qwen3MoeSparseMoeBlock: router and routed experts, no shared expert.
    out = _qwen3(cfg)
    out["moe"] = MoESpec(
        num_experts=_int(cfg, "num_experts"),
        top_k=_int(cfg, "num_experts_per_tok"),
        expert_ffn_size=_int(cfg, "moe_intermediate_size"),
        first_dense_layers=_qwen_moe_dense_layers(cfg, out["num_layers"]),
    )
    return out


def _deepseek(cfg: Config) -> dict[str, Any]:
    # DeepSeek-V2/V3 (HF DeepseekV2/V3 modeling, and the authors' modeling_deepseek.py):
    # MLA attention; layer i has an MoE FFN when i >= first_k_dense_replace and
    # i % moe_layer_freq == 0; n_shared_experts form one MLP of n_shared * moe_intermediate_size.
    # V3's router e_score_correction_bias is a buffer in transformers (not a parameter), so
    # router_bias stays False. The V3 MTP module (num_nextn_predict_layers) is not part of the
    # HF model and is not counted.
    heads = _int(cfg, "num_attention_heads")
    layers = _int(cfg, "num_hidden_layers")
    first_dense = min(_count(cfg, "first_k_dense_replace"), layers)
    freq = _int(cfg, "moe_layer_freq", default=1)
    moe_layers = sum(1 for i in range(first_dense, layers) if i % freq == 0)
    bias = _bool(cfg, "attention_bias", False)
    out: dict[str, Any] = {
        "num_layers": layers,
        "hidden_size": _int(cfg, "hidden_size"),
        "num_heads": heads,
        "num_kv_heads": _int(cfg, "num_key_value_heads", default=heads),
        "ffn_hidden_size": _int(cfg, "intermediate_size"),
        "vocab_size": _int(cfg, "vocab_size"),
        "max_position_embeddings": _int(cfg, "max_position_embeddings", default=4096),
        "tie_word_embeddings": _bool(cfg, "tie_word_embeddings", False),
        "qkv_bias": bias,
        "attn_out_bias": bias,
        "mla": MLASpec(
            q_lora_rank=_opt_int(cfg, "q_lora_rank"),
            kv_lora_rank=_int(cfg, "kv_lora_rank"),
            qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"),
            qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
            v_head_dim=_int(cfg, "v_head_dim"),
        ),
    }
    if cfg.get("n_routed_experts"):
        shared = _count(cfg, "n_shared_experts")
        expert_ffn = _int(cfg, "moe_intermediate_size")
        # the router (modeling_deepseek.py MoEGate): scoring_func softmax|sigmoid, routed_scaling_factor on the
        # weights, group-limited choice over n_group groups (topk_group of them), noaux_tc: a score-correction bias
        groups = _opt_int(cfg, "n_group")
        out["moe"] = MoESpec(
            num_experts=_int(cfg, "n_routed_experts"),
            top_k=_int(cfg, "num_experts_per_tok"),
            expert_ffn_size=expert_ffn,
            num_shared_experts=shared,
            shared_expert_ffn_size=expert_ffn,
            first_dense_layers=layers - moe_layers,
            score_function="sigmoid" if cfg.get("scoring_func") == "sigmoid" else "softmax",
            topk_scaling_factor=_pos_float(cfg, "routed_scaling_factor", cfg.get("routed_scaling_factor")),
            router_groups=groups if groups and groups > 1 else None,
            router_group_topk=_opt_int(cfg, "topk_group") if groups and groups > 1 else None,
            expert_bias=cfg.get("topk_method") == "noaux_tc",
        )
    return out


def _glm(cfg: Config) -> dict[str, Any]:
    # HF GlmAttention/Glm4Attention: q/k/v bias=attention_bias, o_proj without; the MLP is a
    # fused gate_up_proj (same count as gate + up) and down_proj, no biases.
    out = _common(cfg)
    # transformers modeling_glm.py rotate_half pairs x[..., 0::2] with x[..., 1::2] (interleaved RoPE) over
    # partial_rotary_factor of each head
    out.update(qkv_bias=_bool(cfg, "attention_bias", False), rope_interleaved=True)
    if cfg.get("model_type") == "glm4":
        out["post_sublayer_norms"] = True  # Glm4DecoderLayer: post_self_attn/post_mlp layernorms
    return out


def _chatglm(cfg: Config) -> dict[str, Any]:
    # Remote code modeling_chatglm.py (ChatGLM2/3, GLM-4-9B): fused query_key_value
    # Linear(h, (heads + 2 * groups) * kv_channels, bias=add_bias_linear or add_qkv_bias);
    # dense, dense_h_to_4h (2 * ffn, SwiGLU) and dense_4h_to_h with bias=add_bias_linear;
    # RMSNorm when rmsnorm else LayerNorm; untied output_layer of padded_vocab_size.
    heads = _int(cfg, "num_attention_heads")
    multi_query = _bool(cfg, "multi_query_attention", False)
    linear_bias = _bool(cfg, "add_bias_linear", False)
    return {
        "num_layers": _int(cfg, "num_layers", "num_hidden_layers"),
        "hidden_size": _int(cfg, "hidden_size"),
        "num_heads": heads,
        "num_kv_heads": _int(cfg, "multi_query_group_num") if multi_query else heads,
        "head_dim": _opt_int(cfg, "kv_channels"),
        "ffn_hidden_size": _int(cfg, "ffn_hidden_size"),
        "vocab_size": _int(cfg, "padded_vocab_size", "vocab_size"),
        "max_position_embeddings": _int(cfg, "seq_length", "max_position_embeddings", default=2048),
        "norm": "rmsnorm" if _bool(cfg, "rmsnorm", True) else "layernorm",
        "tie_word_embeddings": _bool(cfg, "tie_word_embeddings", False),
        "qkv_bias": linear_bias or _bool(cfg, "add_qkv_bias", False),
        "attn_out_bias": linear_bias,
        "mlp_bias": linear_bias,
        # RotaryEmbedding(base=10000 * rope_ratio) over half of each head (rotary_dim = kv_channels // 2), rotating
        # adjacent pairs (apply_rotary_pos_emb reshapes to (..., rot_dim // 2, 2))
        "rope_theta": 10000.0 * (_pos_float(cfg, "rope_ratio", cfg.get("rope_ratio")) or 1.0),
        "rope_fraction": 0.5, "rope_interleaved": True,
    }


def _baichuan(cfg: Config) -> dict[str, Any]:
    # Remote code modeling_baichuan.py (Baichuan2): W_pack Linear(h, 3h, bias=False), o_proj,
    # gate/up/down without bias, RMSNorm, NormHead lm_head (one weight of vocab x h, normalized
    # at run time: same count as a Linear). The 13B code uses ALiBi and the 7B code RoPE; the
    # config does not say which, so the 40-layer (13B) shape selects ALiBi.
    out = _common({**cfg, "max_position_embeddings": cfg.get("max_position_embeddings")
                   or cfg.get("model_max_length")})
    out["position_embedding"] = "alibi" if out["num_layers"] == 40 else "rope"
    return out


def _internlm2(cfg: Config) -> dict[str, Any]:
    # Remote code modeling_internlm2.py: fused wqkv Linear(h, (heads + 2 * kv) * head_dim,
    # bias=config.bias) and wo (bias=config.bias); feed_forward w1/w3/w2 without bias.
    bias = _bool(cfg, "bias", False)
    return {**_common(cfg), "qkv_bias": bias, "attn_out_bias": bias}


def _gpt2(cfg: Config) -> dict[str, Any]:
    # HF GPT2: Conv1D c_attn (3h, bias), c_proj (bias), MLP c_fc/c_proj (n_inner or 4h, bias),
    # LayerNorm, learned positions wpe, lm_head tied to wte. GPT-3 uses the same layout
    # (Brown et al. 2020, section 2.1) with alternating sparse attention that adds no params.
    hidden = _int(cfg, "n_embd", "hidden_size")
    return {
        "num_layers": _int(cfg, "n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "num_heads": _int(cfg, "n_head", "num_attention_heads"),
        "ffn_hidden_size": _int(cfg, "n_inner", default=4 * hidden),
        "vocab_size": _int(cfg, "vocab_size"),
        "max_position_embeddings": _int(cfg, "n_positions", "max_position_embeddings", default=1024),
        "mlp": "gelu",
        "norm": "layernorm",
        "position_embedding": "learned",
        "tie_word_embeddings": _bool(cfg, "tie_word_embeddings", True),
        "qkv_bias": True,
        "attn_out_bias": True,
        "mlp_bias": True,
    }


_READERS: dict[str, Callable[[Config], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "chatglm": _chatglm,
    "glm": _glm,
    "glm4": _glm,
    "baichuan": _baichuan,
    "internlm2": _internlm2,
    "gpt2": _gpt2,
}

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(_READERS))


def _default_name(cfg: Config) -> str:
    name = cfg.get("_name_or_path")
    if isinstance(name, str) and name.strip():
        return name.strip()
    arch = cfg.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str):
        return arch[0]
    return str(cfg.get("model_type") or "model")


def spec_from_hf_config(cfg: Mapping[str, Any], name: str = "", source: str = "") -> ModelSpec:
    """A ModelSpec from a parsed Hugging Face config.json.

    Raises InputError for an unknown model_type (listing the supported ones), a missing
    required key (naming it), or values the schema rejects.
    """
    if not isinstance(cfg, Mapping):
        raise InputError(field="config", value=type(cfg).__name__, allowed="a JSON object")
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str):
        raise InputError(
            field="config.model_type",
            value=model_type if model_type is not None else "<missing>",
            allowed="one of: " + ", ".join(SUPPORTED_MODEL_TYPES),
        )
    reader = _READERS.get(model_type.lower())
    if reader is None:
        raise unknown_name("config.model_type", model_type, SUPPORTED_MODEL_TYPES)
    fields = reader(cfg)
    if fields.get("position_embedding", "rope") == "rope":
        fields = {**_rope_and_norm(cfg), **fields}
    else:
        fields = {"norm_eps": _rope_and_norm(cfg)["norm_eps"], **fields}
    try:
        return ModelSpec(name=name or _default_name(cfg), family=model_type.lower(), source=source, **fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise InputError(field=loc, value=err.get("input"), allowed=msg) from None


def spec_from_hf_config_file(path: Path) -> ModelSpec:
    """A ModelSpec from a local config.json (read only; nothing is downloaded)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(
            field="model", value=str(path), allowed="a readable local config.json", hint=reason
        ) from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            field="model",
            value=str(path),
            allowed="a JSON file (a Hugging Face config.json)",
            hint=f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
        ) from None
    if not isinstance(cfg, dict):
        raise InputError(field="model", value=str(path), allowed="a JSON object (a Hugging Face config.json)")
    p = Path(path)
    # The model's name: _name_or_path when the file has one, else its folder (…/Qwen3-8B/config.json).
    name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    name = _default_name(cfg) if "_name_or_path" in cfg else name
    return spec_from_hf_config(cfg, name=name, source=str(p))
