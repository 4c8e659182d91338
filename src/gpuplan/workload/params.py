"""Parameter counts of a `ModelSpec`, by part and by layer kind.

The counts follow the module structure of the reference implementations (Hugging Face
transformers modeling files, Megatron-LM for GPT-3) and are checked in the tests
against models built on the meta device. "matrix" counts are the 2-D projection
weights: the part that tensor parallelism shards and weight quantization compresses.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.workload.model_spec import ModelSpec

__all__ = ["LayerParams", "ParamCounts", "count_params", "ffn_matrices"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerParams:
    """Parameters of one transformer layer, split by what shards and quantizes them."""

    attention_matrix: int  # q/k/v/o (or MLA) projection weights
    attention_other: int  # attention biases and q/k or MLA latent norms
    norms: int  # the two pre-norms (attention and FFN), four with post-sublayer norms
    mlp_matrix: int  # dense FFN weights (0 in an MoE layer)
    mlp_other: int  # dense FFN biases
    router: int  # MoE router weight (+ bias)
    experts_matrix: int  # all routed experts
    experts_active_matrix: int  # the top-k routed experts one token visits
    shared_matrix: int  # shared experts (+ shared-expert gate)

    @property
    def total(self) -> int:
        return (
            self.attention_matrix + self.attention_other + self.norms + self.mlp_matrix + self.mlp_other
            + self.router + self.experts_matrix + self.shared_matrix
        )

    @property
    def active(self) -> int:
        return self.total - self.experts_matrix + self.experts_active_matrix

    @property
    def matrix(self) -> int:
        """Projection weights (excluding the router, which stays in 16-bit in quantized formats)."""
        return self.attention_matrix + self.mlp_matrix + self.experts_matrix + self.shared_matrix


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamCounts:
    """All parameter counts of a model. `total` counts every parameter once (tied = shared)."""

    embedding: int
    position_embedding: int
    final_norm: int
    lm_head: int  # 0 when tied to the embedding
    dense_layer: LayerParams
    num_dense_layers: int
    moe_layer: LayerParams | None
    num_moe_layers: int

    @property
    def layers_total(self) -> int:
        moe = self.moe_layer.total * self.num_moe_layers if self.moe_layer else 0
        return self.dense_layer.total * self.num_dense_layers + moe

    @property
    def layers_active(self) -> int:
        moe = self.moe_layer.active * self.num_moe_layers if self.moe_layer else 0
        return self.dense_layer.active * self.num_dense_layers + moe

    @property
    def layer_matrices(self) -> int:
        """Projection weights of all layers (what QLoRA quantizes; routed experts included)."""
        moe = self.moe_layer.matrix * self.num_moe_layers if self.moe_layer else 0
        return self.dense_layer.matrix * self.num_dense_layers + moe

    @property
    def non_layer(self) -> int:
        return self.embedding + self.position_embedding + self.final_norm + self.lm_head

    @property
    def total(self) -> int:
        return self.layers_total + self.non_layer

    @property
    def active(self) -> int:
        """Parameters one token touches: everything but the routed experts it skips."""
        return self.layers_active + self.non_layer

    @property
    def routed_experts(self) -> int:
        return self.moe_layer.experts_matrix * self.num_moe_layers if self.moe_layer else 0

    def by_part(self) -> dict[str, int]:
        """Totals by part, for tables (sums to `total`)."""
        layers = [(self.dense_layer, self.num_dense_layers)]
        if self.moe_layer is not None:
            layers.append((self.moe_layer, self.num_moe_layers))
        parts = {
            "embedding": self.embedding,
            "position_embedding": self.position_embedding,
            "attention": sum((lp.attention_matrix + lp.attention_other) * n for lp, n in layers),
            "norms": sum(lp.norms * n for lp, n in layers) + self.final_norm,
            "mlp_dense": sum((lp.mlp_matrix + lp.mlp_other) * n for lp, n in layers),
            "moe_router": sum(lp.router * n for lp, n in layers),
            "moe_routed_experts": sum(lp.experts_matrix * n for lp, n in layers),
            "moe_shared_experts": sum(lp.shared_matrix * n for lp, n in layers),
            "lm_head": self.lm_head,
        }
        return parts


def _norm_params(spec: ModelSpec, width: int) -> int:
    # RMSNorm has a weight; LayerNorm a weight and a bias.
    return width * (2 if spec.norm == "layernorm" else 1)


def _attention(spec: ModelSpec) -> tuple[int, int]:
    h, a = spec.hidden_size, spec.num_heads
    if spec.mla is not None:
        # DeepSeek-V2/V3 MLA (HF DeepseekV3Attention): q down/up (or plain q), joint kv down,
        # kv up to per-head nope-k and v, output projection; latent RMSNorms.
        # With `attention_bias`, q_a_proj, kv_a_proj_with_mqa and o_proj carry biases (q_proj and
        # kv_b_proj never do); `qkv_bias` stands for the first two, `attn_out_bias` for o_proj.
        m = spec.mla
        bias = 0
        if m.q_lora_rank is None:
            q, q_norm = h * a * m.qk_head_dim, 0
        else:
            q, q_norm = h * m.q_lora_rank + m.q_lora_rank * a * m.qk_head_dim, m.q_lora_rank
            bias += m.q_lora_rank if spec.qkv_bias else 0
        kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        bias += m.kv_lora_rank + m.qk_rope_head_dim if spec.qkv_bias else 0
        kv_b = m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim)
        o = a * m.v_head_dim * h
        bias += h if spec.attn_out_bias else 0
        return q + kv_a + kv_b + o, q_norm + m.kv_lora_rank + bias
    d, g = spec.attn_head_dim, spec.kv_heads
    matrix = h * a * d + 2 * h * g * d + a * d * h  # q, k, v, o
    other = 0
    if spec.qkv_bias:
        other += a * d + 2 * g * d
    if spec.attn_out_bias:
        other += h
    if spec.qk_norm:
        other += 2 * d  # q_norm and k_norm over head_dim (Qwen3)
    return matrix, other


def ffn_matrices(spec: ModelSpec) -> int:
    """Weight matrices of one FFN, each hidden x ffn: SwiGLU gate, up, down (Shazeer 2020); a plain MLP up, down."""
    return 3 if spec.mlp == "swiglu" else 2


def _ffn_matrix(spec: ModelSpec, ffn: int) -> int:
    return ffn_matrices(spec) * spec.hidden_size * ffn


def _ffn_bias(spec: ModelSpec, ffn: int) -> int:
    if not spec.mlp_bias:
        return 0
    return (2 * ffn if spec.mlp == "swiglu" else ffn) + spec.hidden_size


def count_params(spec: ModelSpec) -> ParamCounts:
    """Parameter counts of `spec` by part; pure and cheap."""
    h = spec.hidden_size
    attn_matrix, attn_other = _attention(spec)
    # input_layernorm + post_attention_layernorm; GLM-4-0414 (HF Glm4DecoderLayer) adds
    # post_self_attn_layernorm and post_mlp_layernorm.
    norms = (4 if spec.post_sublayer_norms else 2) * _norm_params(spec, h)
    dense = LayerParams(
        attention_matrix=attn_matrix,
        attention_other=attn_other,
        norms=norms,
        mlp_matrix=_ffn_matrix(spec, spec.ffn_hidden_size),
        mlp_other=_ffn_bias(spec, spec.ffn_hidden_size),
        router=0,
        experts_matrix=0,
        experts_active_matrix=0,
        shared_matrix=0,
    )
    moe_layer = None
    if spec.moe is not None:
        m = spec.moe
        expert = _ffn_matrix(spec, m.expert_ffn_size)
        shared = _ffn_matrix(spec, m.shared_ffn_total) if m.num_shared_experts else 0
        if m.shared_expert_gate:
            shared += h  # Linear(hidden, 1) gate of the shared expert (Qwen2-MoE)
        moe_layer = LayerParams(
            attention_matrix=attn_matrix,
            attention_other=attn_other,
            norms=norms,
            mlp_matrix=0,
            mlp_other=0,
            router=h * m.num_experts + (m.num_experts if m.router_bias else 0),
            experts_matrix=expert * m.num_experts,
            experts_active_matrix=expert * m.top_k,
            shared_matrix=shared,
        )
    embedding = spec.vocab_size * h
    return ParamCounts(
        embedding=embedding,
        position_embedding=spec.max_position_embeddings * h if spec.position_embedding == "learned" else 0,
        final_norm=_norm_params(spec, h),
        lm_head=0 if spec.tie_word_embeddings else spec.vocab_size * h,
        dense_layer=dense,
        num_dense_layers=spec.num_dense_layers,
        moe_layer=moe_layer,
        num_moe_layers=spec.num_moe_layers,
    )
