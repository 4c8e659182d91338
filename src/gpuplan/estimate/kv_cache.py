"""KV-cache size per token, per request and per batch.

Per layer and token: MHA/GQA/MQA cache 2 x kv_heads x head_dim values (K and V; GQA,
Ainslie et al. 2023; MQA, Shazeer 2019). MLA caches the compressed latent plus the
decoupled RoPE key: kv_lora_rank + qk_rope_head_dim values, shared by all heads
(DeepSeek-V2 paper, sec. 2.1.2; vLLM/SGLang MLA backends). Sliding-window layers hold at
most `sliding_window` tokens (Mistral 7B paper). With tensor parallelism the KV heads
split over ranks, at least one per rank (vLLM replicates KV heads when tp > kv_heads);
the MLA latent is replicated on every rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.units import dtype_bytes
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["KVCache", "kv_bytes_per_token", "kv_cache"]


def _elems_per_token_per_layer(spec: ModelSpec, tp: int = 1) -> float:
    if spec.mla is not None:
        return float(spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim)
    heads = max(spec.kv_heads / tp, 1.0)
    return 2.0 * heads * spec.attn_head_dim


def kv_bytes_per_token(spec: ModelSpec, kv_dtype: str = "bf16", *, tp: int = 1, layers: int | None = None) -> float:
    """KV-cache bytes one token adds on one device (all `layers`, default the whole model)."""
    n = spec.num_layers if layers is None else layers
    return n * _elems_per_token_per_layer(spec, tp) * dtype_bytes(kv_dtype)


@dataclass(frozen=True, slots=True, kw_only=True)
class KVCache:
    bytes_per_token_full: float  # one token through every layer on this device, no window applied
    bytes_per_request: float  # one request of `context` tokens (windows applied)
    bytes_total: float  # `batch` requests

    def to_json(self) -> dict[str, int]:
        return {k: round(v) for k, v in (("bytes_per_token", self.bytes_per_token_full),
                                         ("bytes_per_request", self.bytes_per_request),
                                         ("bytes_total", self.bytes_total))}


def kv_cache(spec: ModelSpec, *, context: int, batch: int = 1, kv_dtype: str = "bf16", tp: int = 1,
             layers: int | None = None) -> KVCache:
    """KV cache of `batch` requests of `context` tokens on one device holding `layers` layers."""
    n = spec.num_layers if layers is None else layers
    per_layer_token = _elems_per_token_per_layer(spec, tp) * dtype_bytes(kv_dtype)
    swa = min(spec.num_swa_layers, n)
    window = spec.sliding_window or context
    per_request = per_layer_token * ((n - swa) * context + swa * min(context, window))
    return KVCache(bytes_per_token_full=per_layer_token * n, bytes_per_request=per_request,
                   bytes_total=per_request * batch)
