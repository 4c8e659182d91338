"""The config.json importer, family by family, and its errors. No torch needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.workload.hf_config import SUPPORTED_MODEL_TYPES, spec_from_hf_config, spec_from_hf_config_file
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import load_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def fixture(name: str) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return cfg


# -- families ------------------------------------------------------------------------------
def test_llama_gqa_and_untied_head() -> None:
    spec = spec_from_hf_config(fixture("llama3-8b"))
    assert (spec.num_heads, spec.kv_heads, spec.attn_head_dim) == (32, 8, 128)
    assert spec.attention_kind == "gqa" and not spec.tie_word_embeddings and not spec.qkv_bias


def test_llama_attention_and_mlp_bias() -> None:
    cfg = {**fixture("llama2-7b"), "attention_bias": True, "mlp_bias": True}
    spec = spec_from_hf_config(cfg)
    assert spec.qkv_bias and spec.attn_out_bias and spec.mlp_bias
    plain = count_params(spec_from_hf_config(fixture("llama2-7b"))).total
    # q, k, v, o biases (4 * 4096) and gate, up, down biases (2 * 11008 + 4096) in 32 layers
    assert count_params(spec).total - plain == 32 * (4 * 4096 + 2 * 11008 + 4096)


def test_mistral_sliding_window_applies_to_every_layer() -> None:
    cfg = {**fixture("llama3-8b"), "model_type": "mistral", "sliding_window": 4096}
    spec = spec_from_hf_config(cfg)
    assert spec.sliding_window == 4096 and spec.num_swa_layers == spec.num_layers
    assert spec_from_hf_config({**cfg, "sliding_window": None}).sliding_window is None


def test_mixtral_routed_experts_without_dense_layers() -> None:
    spec = spec_from_hf_config(fixture("mixtral-8x7b"))
    assert spec.moe is not None
    assert (spec.moe.num_experts, spec.moe.top_k, spec.moe.expert_ffn_size) == (8, 2, 14336)
    assert spec.num_moe_layers == 32 and spec.moe.num_shared_experts == 0


def test_qwen2_window_only_when_used() -> None:
    cfg = fixture("qwen2.5-7b")
    spec = spec_from_hf_config(cfg)
    assert spec.qkv_bias and not spec.attn_out_bias
    assert spec.sliding_window is None  # use_sliding_window: false, although sliding_window is set
    # Layers i >= max_window_layers use the window (Qwen2Config.layer_types).
    windowed = spec_from_hf_config({**cfg, "use_sliding_window": True, "max_window_layers": 20})
    assert windowed.sliding_window == 131072 and windowed.num_swa_layers == 8
    # max_window_layers == num_hidden_layers: no layer uses it.
    assert spec_from_hf_config({**cfg, "use_sliding_window": True}).sliding_window is None


def test_qwen3_qk_norm_and_explicit_head_dim() -> None:
    spec = spec_from_hf_config(fixture("qwen3-32b"))
    assert spec.qk_norm and spec.head_dim == 128
    assert spec.num_heads * spec.attn_head_dim == 8192 != spec.hidden_size  # 64 heads of 128 on 5120


QWEN2_MOE = {  # sizes of Qwen1.5-MoE-A2.7B
    "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
    "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False,
}


def test_qwen2_moe_shared_expert_with_gate() -> None:
    spec = spec_from_hf_config(QWEN2_MOE)
    assert spec.moe is not None and spec.qkv_bias
    assert spec.moe.num_shared_experts == 1 and spec.moe.shared_expert_gate
    assert spec.moe.shared_expert_ffn_size == 5632 and spec.num_dense_layers == 0
    layer = count_params(spec).moe_layer
    assert layer is not None
    assert layer.shared_matrix == 3 * 2048 * 5632 + 2048  # shared MLP + Linear(2048, 1) gate


@pytest.mark.parametrize(
    ("extra", "dense"),
    [({"mlp_only_layers": [0, 5]}, 2), ({"decoder_sparse_step": 2}, 12),
     ({"decoder_sparse_step": 2, "mlp_only_layers": [1, 2]}, 13)],
)
def test_qwen_moe_dense_layers(extra: dict[str, Any], dense: int) -> None:
    assert spec_from_hf_config({**QWEN2_MOE, **extra}).num_dense_layers == dense


def test_qwen3_moe() -> None:
    spec = spec_from_hf_config(fixture("qwen3-235b-a22b"))
    assert spec.moe is not None and spec.qk_norm and spec.moe.num_shared_experts == 0
    assert (spec.moe.num_experts, spec.moe.top_k, spec.num_moe_layers) == (128, 8, 94)


def test_deepseek_v3_mla_and_moe() -> None:
    spec = spec_from_hf_config(fixture("deepseek-v3"))
    assert spec.mla is not None and spec.moe is not None
    assert (spec.mla.q_lora_rank, spec.mla.kv_lora_rank, spec.mla.qk_head_dim) == (1536, 512, 192)
    assert spec.attention_kind == "mla" and spec.num_dense_layers == 3
    assert spec.moe.shared_ffn_total == 2048 and not spec.moe.router_bias


def test_deepseek_v2_lite_plain_q_proj_and_layer_freq() -> None:
    cfg = fixture("deepseek-v2-lite")
    spec = spec_from_hf_config(cfg)
    assert spec.mla is not None and spec.mla.q_lora_rank is None
    assert spec.moe is not None and spec.moe.shared_ffn_total == 2 * 1408 and spec.num_dense_layers == 1
    # Authors' code: MoE where i >= first_k_dense_replace and i % moe_layer_freq == 0.
    assert spec_from_hf_config({**cfg, "moe_layer_freq": 2}).num_moe_layers == 13


def test_chatglm_fused_qkv_with_bias_and_groups() -> None:
    spec = spec_from_hf_config(fixture("chatglm3-6b"))
    assert (spec.kv_heads, spec.head_dim, spec.vocab_size) == (2, 128, 65024)
    assert spec.qkv_bias and not spec.attn_out_bias and not spec.mlp_bias
    assert spec.max_position_embeddings == 8192


def test_glm4_9b_remote_and_native_configs_agree() -> None:
    remote = spec_from_hf_config(fixture("glm4-9b-chat-remote"))
    native = spec_from_hf_config(fixture("glm4-9b"))
    assert remote.family == "chatglm" and native.family == "glm"
    assert count_params(remote).total == count_params(native).total


def test_glm4_0414_has_post_sublayer_norms() -> None:
    cfg = {**fixture("glm4-9b"), "model_type": "glm4"}
    spec = spec_from_hf_config(cfg)
    assert spec.post_sublayer_norms
    extra = count_params(spec).total - count_params(spec_from_hf_config(fixture("glm4-9b"))).total
    assert extra == 40 * 2 * 4096


def test_baichuan2_13b_alibi_and_model_max_length() -> None:
    spec = spec_from_hf_config(fixture("baichuan2-13b"))
    assert spec.position_embedding == "alibi" and spec.max_position_embeddings == 4096
    assert spec.attention_kind == "mha" and not spec.qkv_bias


def test_internlm2_bias_flag() -> None:
    cfg = fixture("internlm2.5-7b")
    assert not spec_from_hf_config(cfg).qkv_bias
    biased = spec_from_hf_config({**cfg, "bias": True})
    assert biased.qkv_bias and biased.attn_out_bias


def test_gpt2_layout_for_gpt3() -> None:
    spec = spec_from_hf_config(fixture("gpt3-175b"))
    assert spec.position_embedding == "learned" and spec.norm == "layernorm" and spec.mlp == "gelu"
    assert spec.tie_word_embeddings and spec.ffn_hidden_size == 4 * 12288


# -- errors --------------------------------------------------------------------------------
def test_unknown_model_type_lists_supported() -> None:
    with pytest.raises(InputError) as info:
        spec_from_hf_config({**fixture("llama3-8b"), "model_type": "falcon"})
    message = str(info.value)
    assert "falcon" in message
    for model_type in ("llama", "qwen3_moe", "deepseek_v3", "chatglm", "baichuan", "internlm2"):
        assert model_type in message


def test_close_model_type_is_suggested() -> None:
    with pytest.raises(InputError, match="Did you mean qwen2_moe"):
        spec_from_hf_config({**QWEN2_MOE, "model_type": "qwen2-moe"})


def test_missing_model_type() -> None:
    cfg = fixture("llama3-8b")
    del cfg["model_type"]
    with pytest.raises(InputError, match="model_type"):
        spec_from_hf_config(cfg)


@pytest.mark.parametrize(
    ("name", "key"),
    [("llama3-8b", "num_hidden_layers"), ("deepseek-v3", "kv_lora_rank"), ("chatglm3-6b", "ffn_hidden_size"),
     ("mixtral-8x7b", "num_local_experts"), ("qwen3-30b-a3b", "moe_intermediate_size")],
)
def test_missing_key_is_named(name: str, key: str) -> None:
    cfg = fixture(name)
    del cfg[key]
    with pytest.raises(InputError) as info:
        spec_from_hf_config(cfg)
    assert info.value.field == f"config.{key}" and key in str(info.value)


def test_bad_value_is_named() -> None:
    with pytest.raises(InputError, match="config.hidden_size"):
        spec_from_hf_config({**fixture("llama3-8b"), "hidden_size": "4096"})
    with pytest.raises(InputError, match="num_kv_heads"):
        spec_from_hf_config({**fixture("llama3-8b"), "num_key_value_heads": 5})


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="readable local config.json"):
        spec_from_hf_config_file(tmp_path / "nope" / "config.json")


def test_not_json(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{'model_type': 'llama'", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        spec_from_hf_config_file(bad)


def test_json_but_not_an_object(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputError, match="JSON object"):
        spec_from_hf_config_file(bad)


def test_binary_file(tmp_path: Path) -> None:
    bad = tmp_path / "model.json"
    bad.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(InputError, match="model"):
        spec_from_hf_config_file(bad)


def test_file_name_and_load_model(tmp_path: Path) -> None:
    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text((FIXTURES / "qwen3-8b.json").read_text(encoding="utf-8"), encoding="utf-8")
    spec = load_model(path)
    assert spec.name == "Qwen3-8B" and spec.source == str(path) and spec.family == "qwen3"
    assert spec_from_hf_config_file(FIXTURES / "llama2-7b.json").name == "meta-llama/Llama-2-7b-hf"


def test_supported_model_types() -> None:
    required = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2",
                "deepseek_v3", "chatglm", "glm", "glm4", "baichuan", "internlm2"}
    assert required <= set(SUPPORTED_MODEL_TYPES)


# -- CLI -----------------------------------------------------------------------------------
def test_cli_model_show_config_json() -> None:
    path = FIXTURES / "deepseek-v2-lite.json"
    result = CliRunner().invoke(app, ["model", "show", str(path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    spec = spec_from_hf_config_file(path)
    assert out["params_total"] == count_params(spec).total
    assert out["params_active"] == count_params(spec).active
    assert sum(out["params_by_part"].values()) == out["params_total"]


def test_cli_model_show_bad_config_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "falcon"}), encoding="utf-8")
    result = CliRunner().invoke(app, ["model", "show", str(bad)])
    exited(result, 2)
    assert "falcon" in result.output


def test_rope_base_scaling_and_norm_epsilon_come_from_config_json() -> None:
    """The launch configs need the RoPE base (Megatron's --rotary-base defaults to 10000; Qwen3 uses 1e6), the
    RoPE scaling (Llama 3.1: llama3 x8 over 8192 positions) and the norm epsilon (Qwen3 1e-6, Megatron's 1e-5)."""
    fx = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
    qwen3 = spec_from_hf_config(json.loads((fx / "qwen3-32b.json").read_text(encoding="utf-8")))
    assert (qwen3.rope_theta, qwen3.norm_eps, qwen3.rope_scaling) == (1e6, 1e-6, None)
    l31 = spec_from_hf_config(json.loads((fx / "llama3.1-70b.json").read_text(encoding="utf-8")))
    assert l31.rope_theta == 500000.0 and l31.rope_scaling is not None
    assert (l31.rope_scaling.type, l31.rope_scaling.factor, l31.rope_scaling.original_max_position_embeddings) == (
        "llama3", 8.0, 8192)
    # Llama 2's config.json states no rope_theta: LlamaConfig's default (10000) applies
    assert spec_from_hf_config(json.loads((fx / "llama2-7b.json").read_text(encoding="utf-8"))).rope_theta == 10000.0
    v3 = spec_from_hf_config(json.loads((fx / "deepseek-v3.json").read_text(encoding="utf-8")))
    assert v3.moe is not None and (v3.moe.score_function, v3.moe.topk_scaling_factor, v3.moe.router_groups,
                                   v3.moe.router_group_topk, v3.moe.expert_bias) == ("sigmoid", 2.5, 8, 4, True)
    assert v3.rope_scaling is not None and (v3.rope_scaling.type, v3.rope_scaling.factor) == ("yarn", 40.0)


def test_partial_and_interleaved_rope_of_glm_models() -> None:
    fx = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
    glm4 = spec_from_hf_config(json.loads((fx / "glm4-9b.json").read_text(encoding="utf-8")))
    assert (glm4.rope_fraction, glm4.rope_interleaved, glm4.rope_theta) == (0.5, True, 10000.0)
    chatglm = spec_from_hf_config(json.loads((fx / "chatglm3-6b.json").read_text(encoding="utf-8")))
    assert (chatglm.rope_fraction, chatglm.rope_interleaved) == (0.5, True)
    assert spec_from_hf_config(json.loads((fx / "qwen3-8b.json").read_text(encoding="utf-8"))).rope_fraction == 1.0
