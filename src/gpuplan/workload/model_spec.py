"""`ModelSpec`: the architecture of a decoder-only transformer, validated at construction.

Covers dense models (MHA, GQA, MQA; SwiGLU or plain MLP; tied or untied embeddings;
biases), MoE (routed experts, top-k, shared experts, leading dense layers), DeepSeek
MLA and sliding-window attention. Field names follow Hugging Face config.json where one
exists, with units or counts in the name. Derived sizes live in `params.py` and
`gpuplan.estimate.kv_cache`, so this module stays a pure schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["MLASpec", "MoESpec", "ModelSpec"]

_STRICT = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class MoESpec(BaseModel):
    """Mixture-of-experts FFN (Mixtral, Qwen-MoE, DeepSeek-MoE)."""

    model_config = _STRICT

    num_experts: int = Field(gt=0, description="routed experts per MoE layer")
    top_k: int = Field(gt=0, description="routed experts each token visits")
    expert_ffn_size: int = Field(gt=0, description="intermediate size of one routed expert")
    num_shared_experts: int = Field(default=0, ge=0, description="always-on shared experts")
    shared_expert_ffn_size: int | None = Field(
        default=None, gt=0, description="intermediate size of ONE shared expert (default expert_ffn_size)"
    )
    shared_expert_gate: bool = Field(
        default=False, description="sigmoid gate on the shared expert (Qwen2-MoE)"
    )
    first_dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense FFN (DeepSeek)")
    router_bias: bool = Field(default=False, description="learned per-expert router bias parameter")
    score_function: Literal["softmax", "sigmoid"] = Field(
        default="softmax", description="router scores: softmax (Mixtral, Qwen) or sigmoid (DeepSeek-V3 scoring_func)")
    topk_scaling_factor: float | None = Field(
        default=None, gt=0, description="scale on the routed experts' weights (DeepSeek-V3 routed_scaling_factor)")
    router_groups: int | None = Field(default=None, gt=0, description="expert groups of group-limited routing "
                                      "(DeepSeek n_group)")
    router_group_topk: int | None = Field(default=None, gt=0, description="groups each token may route to "
                                          "(DeepSeek topk_group)")
    expert_bias: bool = Field(default=False, description="auxiliary-loss-free balancing: a per-expert bias added "
                              "to the scores for the top-k choice (DeepSeek-V3 topk_method noaux_tc)")

    @model_validator(mode="after")
    def _check(self) -> MoESpec:
        if self.top_k > self.num_experts:
            raise ValueError(f"moe.top_k={self.top_k} exceeds moe.num_experts={self.num_experts}")
        return self

    @property
    def shared_ffn_total(self) -> int:
        """Summed intermediate size of all shared experts."""
        per = self.shared_expert_ffn_size or self.expert_ffn_size
        return per * self.num_shared_experts


class RopeScaling(BaseModel):
    """RoPE frequency scaling of a long-context model (config.json `rope_scaling`)."""

    model_config = _STRICT

    type: Literal["llama3", "yarn", "linear", "dynamic", "longrope"] = Field(
        description="config.json rope_scaling.rope_type (or .type)")
    factor: float = Field(gt=0)
    original_max_position_embeddings: int | None = Field(default=None, gt=0)
    low_freq_factor: float | None = Field(default=None, gt=0, description="llama3 type")
    high_freq_factor: float | None = Field(default=None, gt=0, description="llama3 type")
    mscale: float | None = Field(default=None, ge=0, description="yarn type (DeepSeek)")
    mscale_all_dim: float | None = Field(default=None, ge=0, description="yarn type (DeepSeek)")
    beta_fast: float | None = Field(default=None, gt=0, description="yarn type")
    beta_slow: float | None = Field(default=None, gt=0, description="yarn type")


class MLASpec(BaseModel):
    """DeepSeek multi-head latent attention (DeepSeek-V2 paper, section 2.1)."""

    model_config = _STRICT

    q_lora_rank: int | None = Field(default=None, gt=0, description="None: plain q_proj (V2-Lite)")
    kv_lora_rank: int = Field(gt=0)
    qk_nope_head_dim: int = Field(gt=0)
    qk_rope_head_dim: int = Field(gt=0)
    v_head_dim: int = Field(gt=0)

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


class ModelSpec(BaseModel):
    """A decoder-only transformer. Construct with keywords; invalid values raise at once."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    family: str = Field(default="llama", description="architecture family (llama, qwen2, deepseek_v3, ...)")
    source: str = Field(default="", description="where the numbers come from (config.json URL or paper)")

    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int | None = Field(default=None, gt=0, description="None: same as num_heads (MHA)")
    head_dim: int | None = Field(default=None, gt=0, description="None: hidden_size // num_heads")
    ffn_hidden_size: int = Field(gt=0, description="intermediate size of the dense FFN")
    vocab_size: int = Field(gt=0)
    max_position_embeddings: int = Field(default=4096, gt=0)
    rope_theta: float | None = Field(default=None, gt=0, description="RoPE base (config.json rope_theta); None: "
                                     "not stated")
    rope_scaling: RopeScaling | None = None
    rope_fraction: float = Field(default=1.0, gt=0, le=1, description="share of each head's dimensions RoPE rotates "
                                 "(config.json partial_rotary_factor; ChatGLM/GLM: 0.5)")
    rope_interleaved: bool = Field(default=False, description="RoPE rotates adjacent (even, odd) pairs rather than "
                                   "the two halves of the head (ChatGLM/GLM)")
    norm_eps: float | None = Field(default=None, gt=0, description="epsilon of the norms (config.json rms_norm_eps "
                                   "or layer_norm_epsilon); None: not stated")

    mlp: Literal["swiglu", "gelu"] = Field(
        default="swiglu", description="swiglu: gate+up+down; gelu: up+down"
    )
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    position_embedding: Literal["rope", "alibi", "learned"] = "rope"
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    attn_out_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = Field(default=False, description="per-head RMSNorm on q and k (Qwen3)")
    post_sublayer_norms: bool = Field(
        default=False,
        description="extra norms on the attention and FFN outputs, 4 per layer (GLM-4-0414 `glm4`)",
    )

    sliding_window: int | None = Field(default=None, gt=0, description="window in tokens for SWA layers")
    sliding_window_layers: int | None = Field(
        default=None, ge=0, description="how many layers use the window (None: all, when a window is set)"
    )

    moe: MoESpec | None = None
    mla: MLASpec | None = None

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.head_dim is None and self.mla is None and self.hidden_size % self.num_heads:
            raise ValueError(
                f"num_heads={self.num_heads} does not divide hidden_size={self.hidden_size}; "
                "set head_dim explicitly if the model uses a non-standard head size"
            )
        if self.num_heads % self.kv_heads:
            raise ValueError(f"num_kv_heads={self.kv_heads} does not divide num_heads={self.num_heads}")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise ValueError(
                f"moe.first_dense_layers={self.moe.first_dense_layers} exceeds num_layers={self.num_layers}"
            )
        if self.sliding_window_layers is not None and self.sliding_window_layers > self.num_layers:
            raise ValueError(
                f"sliding_window_layers={self.sliding_window_layers} exceeds num_layers={self.num_layers}"
            )
        return self

    # -- small derived facts (pure, cheap) ---------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def attn_head_dim(self) -> int:
        """Head size of q and k (MLA: nope + rope)."""
        if self.mla is not None:
            return self.mla.qk_head_dim
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def v_head_dim(self) -> int:
        if self.mla is not None:
            return self.mla.v_head_dim
        return self.attn_head_dim

    @property
    def attention_kind(self) -> str:
        """mla, mha, mqa or gqa."""
        if self.mla is not None:
            return "mla"
        if self.kv_heads == self.num_heads:
            return "mha"
        return "mqa" if self.kv_heads == 1 else "gqa"

    @property
    def num_moe_layers(self) -> int:
        return 0 if self.moe is None else self.num_layers - self.moe.first_dense_layers

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def num_swa_layers(self) -> int:
        if self.sliding_window is None:
            return 0
        return self.num_layers if self.sliding_window_layers is None else self.sliding_window_layers
