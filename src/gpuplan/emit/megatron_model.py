"""The model block of a Megatron-family launch: the plan's model as Megatron-LM / MindSpeed-LLM arguments.

Shape (layers, hidden, FFN, heads, query groups, head size), positions (RoPE base and scaling, max positions),
norms (RMSNorm/LayerNorm and their epsilon), biases, QK norm, vocabulary and MoE (experts, top-k, expert and
shared-expert widths, dense leading layers, router score, groups, scaling, expert bias, load balancing), each
from the model facts (gpuplan.workload: presets and config.json). A fact the model record lacks is not filled
with the framework's default silently: the header names it (`notes`). Flag names and types are checked against
each tool's parser in tests (data/flags/megatron.yaml, mindspeed.yaml).
"""

from __future__ import annotations

import math

from gpuplan.emit.context import TrainTarget

__all__ = ["Arg", "model_args", "nemo_model", "vocab_divisor"]

Arg = tuple[str, str | None]  # (--flag, value or None for a switch)

# Megatron's Llama 3.1 scaling (core/models/common/embeddings/rotary_pos_embedding.py RotaryEmbedding._apply_scaling)
# fixes low_freq_factor 1, high_freq_factor 4 and 8192 original positions; only the factor is a flag.
_MEGATRON_LLAMA3_FIXED = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
# Megatron MLA yarn defaults (core/transformer/transformer_config.py MLATransformerConfig): no flags for these
_MEGATRON_YARN_FIXED = {"original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0}
# MindSpeed-LLM picks its layer spec per family (examples/mcore/<family>/pretrain_*.sh: --spec <module> layer_spec)
_MINDSPEED_SPEC = {"qwen3": "mindspeed_llm.tasks.models.spec.qwen3_spec layer_spec",
                   "qwen3_moe": "mindspeed_llm.tasks.models.spec.qwen3_spec layer_spec",
                   "deepseek_v3": "mindspeed_llm.tasks.models.spec.deepseek_spec layer_spec"}
# load-balancing coefficients: training settings, not model facts (Switch Transformer's 1e-2 scale; Qwen3-MoE
# config.json router_aux_loss_coef 0.001; DeepSeek-V3 report section 2.1.2: sequence-wise alpha 1e-4 beside the
# bias-based balancing)
_AUX_LOSS = ("aux_loss", "1e-3")
_SEQ_AUX_LOSS = ("seq_aux_loss", "1e-4")


def vocab_divisor(vocab: int, tp: int) -> int:
    """--make-vocab-size-divisible-by that keeps the vocabulary exactly `vocab` (Megatron pads it to a multiple of
    this x tp, training/tokenizer/tokenizer.py _vocab_size_with_padding): the largest power of two up to Megatron's
    default 128 with vocab % (d x tp) == 0, 1 where no such d > 1 exists (e.g. 151936 at TP8 -> 16, 128256 -> 32)."""
    d = 128
    while d > 1 and vocab % (d * tp):
        d //= 2
    return d


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def model_args(t: TrainTarget, *, ascend: bool) -> tuple[list[Arg], tuple[str, ...]]:
    """(the model's arguments, notes on facts the record lacks or the tool cannot express)."""
    s = t.spec
    notes: list[str] = []
    a: list[Arg] = [("--num-layers", str(s.num_layers)), ("--hidden-size", str(s.hidden_size)),
                    ("--ffn-hidden-size", str(s.ffn_hidden_size)), ("--num-attention-heads", str(s.num_heads))]
    if s.head_dim and s.head_dim != s.hidden_size // s.num_heads:
        a.append(("--kv-channels", str(s.head_dim)))
    if s.num_kv_heads and s.num_kv_heads != s.num_heads:
        a += [("--group-query-attention", None), ("--num-query-groups", str(s.num_kv_heads))]
    a.append(("--max-position-embeddings", str(max(t.seq_len, s.max_position_embeddings))))
    if s.position_embedding == "rope":
        a.append(("--position-embedding-type", "rope"))
        if s.rope_theta is None:
            notes.append(f"RoPE base: not in the model record of {s.name}; Megatron's default --rotary-base 10000 "
                         "applies. Set it from the model's config.json rope_theta.")
        else:  # Megatron's --rotary-base is an int (arguments.py type=int)
            a.append(("--rotary-base", str(round(s.rope_theta))))
        if s.rope_fraction < 1:  # partial RoPE (GLM: half of each head)
            a.append(("--rotary-percent", f"{s.rope_fraction:g}"))
        if s.rope_interleaved:
            a.append(("--rotary-interleaved", None))
        a += _rope_scaling(t, ascend, notes)
    elif s.position_embedding == "learned":
        a.append(("--position-embedding-type", "learned_absolute"))
    else:
        notes.append(f"Positions: {s.position_embedding} (ALiBi) has no Megatron-LM flag in the targeted version"
                     + ("; MindSpeed-LLM: --position-embedding-type alibi with its alibi options." if ascend else "."))
    a.append(("--normalization", "RMSNorm" if s.norm == "rmsnorm" else "LayerNorm"))
    if s.norm_eps is None:
        notes.append(f"Norm epsilon: not in the model record of {s.name}; Megatron's default 1e-5 applies.")
    else:
        a.append(("--norm-epsilon", f"{s.norm_eps:g}"))
    if s.mlp == "swiglu":
        a.append(("--swiglu", None))
    if not s.tie_word_embeddings:
        a.append(("--untie-embeddings-and-output-weights", None))
    if not (s.mlp_bias or s.attn_out_bias):
        a.append(("--disable-bias-linear", None))
    if s.qkv_bias:
        a.append(("--add-qkv-bias", None))
    if s.qk_norm:
        a.append(("--qk-layernorm", None))
    if ascend and s.family in _MINDSPEED_SPEC:
        a.append(("--spec", _MINDSPEED_SPEC[s.family]))
    # the vocabulary exactly as the model's (its checkpoint's embedding), not padded to 128 x tp. Megatron 0.20's
    # NullTokenizer holds --vocab-size ids (core/tokenizers/text/libraries/null_tokenizer.py, eod = vocab - 1);
    # core 0.12's (MindSpeed-LLM's) adds the eod id after them (training/tokenizer/tokenizer.py _NullTokenizer), so
    # it gets one id fewer, and MindSpeed-LLM's examples state the padded size outright (--padded-vocab-size)
    if ascend:
        a += [("--vocab-size", str(s.vocab_size - 1)), ("--make-vocab-size-divisible-by", "1"),
              ("--padded-vocab-size", str(s.vocab_size))]
    else:
        a += [("--vocab-size", str(s.vocab_size)),
              ("--make-vocab-size-divisible-by", str(vocab_divisor(s.vocab_size, t.deg("tp"))))]
    a += _moe(t, ascend)
    if s.mla is not None:
        a += [("--multi-latent-attention", None), ("--kv-lora-rank", str(s.mla.kv_lora_rank)),
              ("--qk-head-dim", str(s.mla.qk_nope_head_dim)), ("--qk-pos-emb-head-dim", str(s.mla.qk_rope_head_dim)),
              ("--v-head-dim", str(s.mla.v_head_dim))]
        if s.mla.q_lora_rank:
            a.append(("--q-lora-rank", str(s.mla.q_lora_rank)))
    if s.sliding_window is not None:
        notes.append(f"Sliding-window attention ({s.sliding_window} tokens) is not expressed: set --window-size "
                     "where the targeted version has it.")
    return a, tuple(notes)


def _rope_scaling(t: TrainTarget, ascend: bool, notes: list[str]) -> list[Arg]:
    rs = t.spec.rope_scaling
    if rs is None:
        return []
    if rs.type == "llama3" and ascend:  # MindSpeed-LLM features_manager/common/rotary.py
        return [("--rope-scaling-type", "llama3"), ("--rope-scaling-factor", _num(rs.factor)),
                ("--low-freq-factor", _num(rs.low_freq_factor or 1.0)),
                ("--high-freq-factor", _num(rs.high_freq_factor or 4.0)),
                ("--original-max-position-embeddings", str(rs.original_max_position_embeddings or 8192))]
    if rs.type == "llama3":
        differ = [k for k, v in _MEGATRON_LLAMA3_FIXED.items() if getattr(rs, k) not in (None, v)]
        if differ:
            notes.append(f"RoPE scaling: Megatron fixes {', '.join(differ)} at Llama 3.1's values; "
                         "this model's differ.")
        return [("--use-rope-scaling", None), ("--rope-scaling-factor", _num(rs.factor))]
    if rs.type == "yarn" and ascend:
        out: list[Arg] = [("--rope-scaling-type", "yarn"), ("--rope-scaling-factor", _num(rs.factor))]
        if rs.original_max_position_embeddings:
            out.append(("--rope-scaling-original-max-position-embeddings", str(rs.original_max_position_embeddings)))
        if rs.mscale is not None:
            out.append(("--rope-scaling-mscale", _num(rs.mscale)))
        if rs.mscale_all_dim is not None:
            out.append(("--rope-scaling-mscale-all-dim", _num(rs.mscale_all_dim)))
        if rs.beta_fast is not None:
            out.append(("--beta-fast", str(round(rs.beta_fast))))
        if rs.beta_slow is not None:
            out.append(("--beta-slow", str(round(rs.beta_slow))))
        return out
    if rs.type == "yarn" and t.spec.mla is not None:  # Megatron MLA: --rope-type yarn (arguments.py)
        differ = [k for k, v in _MEGATRON_YARN_FIXED.items() if getattr(rs, k) not in (None, v)]
        if differ:
            notes.append(f"RoPE scaling: Megatron's MLA yarn fixes {', '.join(differ)}; this model's differ.")
        out = [("--rope-type", "yarn"), ("--rotary-scaling-factor", _num(rs.factor))]
        if rs.mscale is not None:
            out.append(("--mscale", _num(rs.mscale)))
        if rs.mscale_all_dim is not None:
            out.append(("--mscale-all-dim", _num(rs.mscale_all_dim)))
        return out
    notes.append(f"RoPE scaling {rs.type} x{rs.factor:g} is not expressed (no flag for it in the targeted version); "
                 "within its original context the model runs unscaled.")
    return []


def _moe(t: TrainTarget, ascend: bool) -> list[Arg]:
    m = t.spec.moe
    if m is None:
        return []
    a: list[Arg] = [("--num-experts", str(m.num_experts)), ("--moe-router-topk", str(m.top_k)),
                    ("--moe-ffn-hidden-size", str(m.expert_ffn_size)), ("--moe-grouped-gemm", None),
                    # all-to-all dispatch: what the plan times for expert parallelism (Megatron's default allgather
                    # gathers every token on every EP rank)
                    ("--moe-token-dispatcher-type", "alltoall")]
    if m.num_shared_experts:
        a.append(("--moe-shared-expert-intermediate-size", str(m.shared_ffn_total)))
    if m.first_dense_layers:  # Megatron moe_freq_type: a Python list expression, 0 = dense layer
        n = t.spec.num_layers
        a.append(("--moe-layer-freq", f"([0]*{m.first_dense_layers}+[1]*{n - m.first_dense_layers})"))
    if m.score_function == "sigmoid":
        a.append(("--moe-router-score-function", "sigmoid"))
    if m.topk_scaling_factor and not math.isclose(m.topk_scaling_factor, 1.0):
        a.append(("--moe-router-topk-scaling-factor", _num(m.topk_scaling_factor)))
    if m.router_groups and m.router_group_topk:
        a += [("--moe-router-num-groups", str(m.router_groups)), ("--moe-router-group-topk", str(m.router_group_topk))]
    kind, coeff = _SEQ_AUX_LOSS if m.expert_bias else _AUX_LOSS
    if m.expert_bias:
        a.append(("--moe-router-enable-expert-bias", None))
    a += [("--moe-router-load-balancing-type", kind), ("--moe-aux-loss-coeff", coeff)]
    if ascend and m.score_function == "softmax" and t.spec.family in ("qwen3_moe", "qwen2_moe"):
        a.append(("--norm-topk-prob", None))  # MindSpeed-LLM's Qwen3-MoE examples (norm_topk_prob true)
    return a


def nemo_model(t: TrainTarget) -> tuple[dict[str, object], tuple[str, ...]]:
    """The plan's model as Megatron-Bridge GPTModelProvider / TransformerConfig fields (data/flags/nemo.yaml), with
    notes on what they cannot carry."""
    s = t.spec
    notes: list[str] = []
    m: dict[str, object] = {
        "num_layers": s.num_layers, "hidden_size": s.hidden_size, "ffn_hidden_size": s.ffn_hidden_size,
        "num_attention_heads": s.num_heads, "num_query_groups": s.kv_heads, "kv_channels": s.attn_head_dim,
        "normalization": "RMSNorm" if s.norm == "rmsnorm" else "LayerNorm",
        "gated_linear_unit": s.mlp == "swiglu", "add_bias_linear": bool(s.mlp_bias or s.attn_out_bias),
        "add_qkv_bias": s.qkv_bias, "qk_layernorm": s.qk_norm,
        "share_embeddings_and_output_weights": s.tie_word_embeddings,
        "vocab_size": s.vocab_size, "make_vocab_size_divisible_by": vocab_divisor(s.vocab_size, t.deg("tp"))}
    if s.norm_eps is not None:
        m["layernorm_epsilon"] = s.norm_eps
    if s.position_embedding == "rope":
        m["position_embedding_type"] = "rope"
        if s.rope_theta is not None:
            m["rotary_base"] = round(s.rope_theta)
        if s.rope_fraction < 1:
            m["rotary_percent"] = s.rope_fraction
        if s.rope_interleaved:
            m["rotary_interleaved"] = True
        rs = s.rope_scaling
        if rs is not None and rs.type == "llama3":
            m.update(rope_scaling=True, rope_scaling_factor=rs.factor)
        elif rs is not None and rs.type == "yarn":
            m.update(position_embedding_type="yarn", yarn_rotary_scaling_factor=rs.factor)
            for key, val in (("yarn_original_max_position_embeddings", rs.original_max_position_embeddings),
                             ("yarn_beta_fast", rs.beta_fast), ("yarn_beta_slow", rs.beta_slow),
                             ("yarn_mscale", rs.mscale), ("yarn_mscale_all_dim", rs.mscale_all_dim)):
                if val is not None:
                    m[key] = val
    elif s.position_embedding == "learned":
        m["position_embedding_type"] = "learned_absolute"
    if s.moe is not None:
        mo = s.moe
        m.update(num_moe_experts=mo.num_experts, moe_router_topk=mo.top_k, moe_ffn_hidden_size=mo.expert_ffn_size,
                 moe_grouped_gemm=True, moe_token_dispatcher_type="alltoall")
        if mo.num_shared_experts:
            m["moe_shared_expert_intermediate_size"] = mo.shared_ffn_total
        if mo.first_dense_layers:
            m["moe_layer_freq"] = [0] * mo.first_dense_layers + [1] * (s.num_layers - mo.first_dense_layers)
        if mo.score_function == "sigmoid":
            m["moe_router_score_function"] = "sigmoid"
        if mo.topk_scaling_factor and not math.isclose(mo.topk_scaling_factor, 1.0):
            m["moe_router_topk_scaling_factor"] = mo.topk_scaling_factor
        if mo.router_groups and mo.router_group_topk:
            m.update(moe_router_num_groups=mo.router_groups, moe_router_group_topk=mo.router_group_topk)
        kind, coeff = _SEQ_AUX_LOSS if mo.expert_bias else _AUX_LOSS
        if mo.expert_bias:
            m["moe_router_enable_expert_bias"] = True
        m.update(moe_router_load_balancing_type=kind, moe_aux_loss_coeff=float(coeff))
    if s.mla is not None:
        notes.append("MLA sizes (q/kv LoRA ranks, head sizes) are fields of Megatron-Bridge's DeepSeek provider, not "
                     "of these overrides: start from its DeepSeek recipe.")
    if s.mlp == "swiglu":
        notes.append("activation_func stays the recipe's: SiLU for SwiGLU (gated_linear_unit true).")
    return m, tuple(notes)
