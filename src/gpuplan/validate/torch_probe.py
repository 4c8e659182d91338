"""Measure real PyTorch models on the CPU: saved-activation bytes and parameter counts.

Needs the `validate` extra (torch, transformers); imported lazily so the planner never
needs torch. Models are built from a `ModelSpec` with random weights: nothing is
downloaded.
"""

from __future__ import annotations

import importlib
from typing import Any

from gpuplan.workload.model_spec import MLASpec, ModelSpec, MoESpec

__all__ = ["TINY_SPECS", "build_hf_model", "hf_config_for", "saved_activation_bytes"]

# Tiny architectures that exercise every activation term: GQA, QKV bias, qk-norm with an
# explicit head_dim, MoE, and DeepSeek-V3 MLA with shared experts and a leading dense layer.
TINY_SPECS: dict[str, ModelSpec] = {
    "llama-gqa": ModelSpec(name="tiny-llama", num_layers=2, hidden_size=128, num_heads=8, num_kv_heads=2,
                           ffn_hidden_size=352, vocab_size=1000),
    "qwen2-bias": ModelSpec(name="tiny-qwen2", family="qwen2", num_layers=2, hidden_size=128, num_heads=8,
                            num_kv_heads=4, ffn_hidden_size=352, vocab_size=1000, qkv_bias=True),
    "qwen3-qknorm": ModelSpec(name="tiny-qwen3", family="qwen3", num_layers=2, hidden_size=128, num_heads=8,
                              num_kv_heads=4, head_dim=32, ffn_hidden_size=352, vocab_size=1000, qk_norm=True),
    "mixtral-moe": ModelSpec(name="tiny-mixtral", family="mixtral", num_layers=2, hidden_size=128, num_heads=8,
                             num_kv_heads=2, ffn_hidden_size=256, vocab_size=1000,
                             moe=MoESpec(num_experts=4, top_k=2, expert_ffn_size=256)),
    "deepseek-v3-mla": ModelSpec(
        name="tiny-deepseek-v3", family="deepseek_v3", num_layers=3, hidden_size=128, num_heads=8,
        ffn_hidden_size=352, vocab_size=1000,
        moe=MoESpec(num_experts=8, top_k=2, expert_ffn_size=96, num_shared_experts=1, first_dense_layers=1),
        mla=MLASpec(q_lora_rank=64, kv_lora_rank=48, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32),
    ),
}


def hf_config_for(spec: ModelSpec, *, attn_implementation: str = "sdpa") -> Any:
    """A transformers config object equivalent to `spec` (llama, qwen2, qwen3, mixtral, deepseek_v3)."""
    tf: Any = importlib.import_module("transformers")
    cfg: Any
    common: dict[str, Any] = dict(
        hidden_size=spec.hidden_size, num_hidden_layers=spec.num_layers, num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.kv_heads, vocab_size=spec.vocab_size,
        max_position_embeddings=spec.max_position_embeddings, tie_word_embeddings=spec.tie_word_embeddings,
        intermediate_size=spec.ffn_hidden_size,
    )
    if spec.mla is not None:
        assert spec.moe is not None, "MLA probes use the DeepSeek-V3 architecture (MoE)"
        m, moe = spec.mla, spec.moe
        cfg = tf.DeepseekV3Config(
            **common, moe_intermediate_size=moe.expert_ffn_size, n_routed_experts=moe.num_experts,
            num_experts_per_tok=moe.top_k, n_shared_experts=moe.num_shared_experts,
            first_k_dense_replace=moe.first_dense_layers, q_lora_rank=m.q_lora_rank,
            kv_lora_rank=m.kv_lora_rank, qk_nope_head_dim=m.qk_nope_head_dim,
            qk_rope_head_dim=m.qk_rope_head_dim, v_head_dim=m.v_head_dim, n_group=1, topk_group=1,
        )
    elif spec.moe is not None:
        cfg = tf.MixtralConfig(**common, num_local_experts=spec.moe.num_experts,
                               num_experts_per_tok=spec.moe.top_k)
    elif spec.qk_norm:
        cfg = tf.Qwen3Config(**common, head_dim=spec.attn_head_dim)
    elif spec.qkv_bias:
        cfg = tf.Qwen2Config(**common)
    else:
        cfg = tf.LlamaConfig(**common, head_dim=spec.attn_head_dim)
    cfg._attn_implementation = attn_implementation
    return cfg


def build_hf_model(spec: ModelSpec, *, attn_implementation: str = "sdpa", dtype: str = "bfloat16",
                   seed: int = 0) -> Any:
    """A randomly initialised transformers causal LM for `spec`, in training mode."""
    import torch

    tf: Any = importlib.import_module("transformers")
    torch.manual_seed(seed)
    cfg = hf_config_for(spec, attn_implementation=attn_implementation)
    model = tf.AutoModelForCausalLM.from_config(cfg, attn_implementation=attn_implementation)
    model = model.to(getattr(torch, dtype))
    model.train()
    return model


def saved_activation_bytes(model: Any, batch: int, seq_len: int, *, checkpointing: bool = False) -> int:
    """Bytes of the unique non-parameter storages saved for backward by one forward + loss."""
    import torch

    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        key = st.data_ptr()
        if key not in params:
            seen[key] = max(seen.get(key, 0), st.nbytes())
        return t

    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (batch, seq_len), generator=gen)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(input_ids=ids, labels=ids, use_cache=False)
    out.loss.backward()
    return sum(seen.values())
