"""Exact parameter counts against transformers models built on the meta device.

No weights are allocated and nothing is downloaded: each model is built from the
config.json shipped in tests/fixtures/hf_configs (or a small synthetic config) under
`torch.device("meta")`, and its unique parameters are counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplan.workload.hf_config import spec_from_hf_config
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

pytestmark = pytest.mark.torch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"

# Presets whose architecture transformers implements natively (GPT-3 as the GPT-2 layout).
NATIVE = [
    "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.1-70b",
    "llama3.1-405b", "yi-34b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b",
    "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "glm4-9b", "deepseek-v2-lite", "deepseek-v3",
    "mixtral-8x7b", "mixtral-8x22b", "gpt3-175b",
]
# Keys that describe the checkpoint or the remote code, not the architecture.
_NOT_ARCH = ("quantization_config", "auto_map", "architectures", "_name_or_path", "model_type")


def meta_param_count(cfg: dict[str, Any], model_type: str | None = None) -> int:
    """Unique parameters of the transformers model for `cfg`, built without memory."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    kwargs = {k: v for k, v in cfg.items() if k not in _NOT_ARCH}
    config = transformers.AutoConfig.for_model(model_type or cfg["model_type"], **kwargs)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    unique = {id(p): p for p in model.parameters()}  # a tied weight is one parameter
    return sum(p.numel() for p in unique.values())


def fixture(name: str) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return cfg


@pytest.mark.parametrize("preset_id", NATIVE)
def test_preset_total_equals_transformers(preset_id: str) -> None:
    cfg = fixture(preset_id)
    ours = count_params(get_preset(preset_id).spec).total
    theirs = meta_param_count(cfg)
    print(f"{preset_id}: ours {ours:,} transformers {theirs:,}")
    assert ours == theirs
    assert count_params(spec_from_hf_config(cfg)).total == ours


# Remote-code families: transformers has no class for them, but each maps one to one onto
# a native module layout (the mapping follows the authors' modeling files), which gives an
# exact check of the import as well; the published-count check is in test_presets.py.
def _chatglm_as_glm(cfg: dict[str, Any]) -> dict[str, Any]:
    # modeling_chatglm.py -> HF Glm (the port THUDM made of it): query_key_value -> q/k/v with
    # add_qkv_bias, dense -> o_proj, dense_h_to_4h -> gate_up_proj, dense_4h_to_h -> down_proj.
    return {
        "model_type": "glm", "hidden_size": cfg["hidden_size"], "intermediate_size": cfg["ffn_hidden_size"],
        "num_hidden_layers": cfg["num_layers"], "num_attention_heads": cfg["num_attention_heads"],
        "num_key_value_heads": cfg["multi_query_group_num"], "head_dim": cfg["kv_channels"],
        "vocab_size": cfg["padded_vocab_size"], "attention_bias": cfg["add_qkv_bias"],
        "pad_token_id": cfg["pad_token_id"], "tie_word_embeddings": False,
    }


def _baichuan_as_llama(cfg: dict[str, Any]) -> dict[str, Any]:
    # modeling_baichuan.py: W_pack -> q/k/v, o_proj, SwiGLU MLP, RMSNorm, NormHead -> lm_head.
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    return {"model_type": "llama", **{k: cfg[k] for k in keys}, "tie_word_embeddings": False}


def _internlm2_as_llama(cfg: dict[str, Any]) -> dict[str, Any]:
    # modeling_internlm2.py: wqkv -> q/k/v and wo -> o_proj (bias=config.bias), w1/w3/w2 -> gate/up/down.
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "vocab_size")
    return {"model_type": "llama", **{k: cfg[k] for k in keys}, "attention_bias": cfg["bias"],
            "tie_word_embeddings": False}


@pytest.mark.parametrize(
    ("preset_id", "as_native"),
    [("chatglm3-6b", _chatglm_as_glm), ("baichuan2-13b", _baichuan_as_llama),
     ("internlm2.5-7b", _internlm2_as_llama)],
)
def test_remote_code_family_equals_its_native_equivalent(preset_id: str, as_native: Any) -> None:
    ours = count_params(get_preset(preset_id).spec).total
    theirs = meta_param_count(as_native(fixture(preset_id)))
    print(f"{preset_id}: ours {ours:,} native equivalent {theirs:,}")
    assert ours == theirs


def test_glm4_9b_remote_config_equals_native_model() -> None:
    ours = count_params(spec_from_hf_config(fixture("glm4-9b-chat-remote"))).total
    assert ours == meta_param_count(fixture("glm4-9b"))


# Small synthetic configs for the options no preset uses.
_SMALL = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3, "num_attention_heads": 8,
          "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 512,
          "pad_token_id": 0}
SYNTHETIC: dict[str, dict[str, Any]] = {
    "llama_biases": {**_SMALL, "model_type": "llama", "attention_bias": True, "mlp_bias": True},
    "llama_tied_head_dim": {**_SMALL, "model_type": "llama", "head_dim": 48, "tie_word_embeddings": True},
    "mistral_window": {**_SMALL, "model_type": "mistral", "sliding_window": 128},
    "qwen2_window": {**_SMALL, "model_type": "qwen2", "use_sliding_window": True, "sliding_window": 64,
                     "max_window_layers": 1, "tie_word_embeddings": True},
    "qwen3_bias": {**_SMALL, "model_type": "qwen3", "head_dim": 64, "attention_bias": True},
    "qwen2_moe": {**_SMALL, "model_type": "qwen2_moe", "num_experts": 6, "num_experts_per_tok": 2,
                  "moe_intermediate_size": 96, "shared_expert_intermediate_size": 384,
                  "mlp_only_layers": [1]},
    "qwen3_moe_sparse_step": {**_SMALL, "model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
                              "moe_intermediate_size": 64, "decoder_sparse_step": 2, "head_dim": 32},
    "glm4_0414": {**_SMALL, "model_type": "glm4", "head_dim": 32, "attention_bias": True},
    "deepseek_v2_q_lora_bias": {**_SMALL, "model_type": "deepseek_v2", "q_lora_rank": 96, "kv_lora_rank": 64,
                                "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
                                "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 2,
                                "moe_intermediate_size": 64, "first_k_dense_replace": 1,
                                "attention_bias": True, "num_key_value_heads": 8},
}


@pytest.mark.parametrize("case", sorted(SYNTHETIC))
def test_synthetic_family_option_equals_transformers(case: str) -> None:
    cfg = SYNTHETIC[case]
    assert count_params(spec_from_hf_config(cfg)).total == meta_param_count(cfg)
