"""A plain-PyTorch Llama-style decoder (RMSNorm, RoPE, GQA attention through SDPA, SwiGLU MLP).

The e2e benchmarks use transformers' LlamaForCausalLM when it is installed
(gpuplan.validate.torch_probe); this is the fallback for machines with torch only, with
the same call convention: model(input_ids=..., labels=..., use_cache=..., cache=...) returns
an object with .loss, .logits and .cache. Architecture as in Touvron et al. 2023 (Llama 2)
and the Hugging Face implementation; weights random, nothing downloaded.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

from gpuplan.workload.model_spec import ModelSpec

__all__ = ["build_torch_llama"]


def build_torch_llama(spec: ModelSpec, *, dtype: str = "float32", seed: int = 0) -> Any:
    """A randomly initialised decoder for `spec` (dense, no MLA/MoE), in training mode."""
    torch: Any = importlib.import_module("torch")
    nn = torch.nn
    fn = torch.nn.functional
    h, heads, kv, d = spec.hidden_size, spec.num_heads, spec.kv_heads, spec.attn_head_dim

    class RMSNorm(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x: Any) -> Any:
            var = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(var + 1e-5)).to(x.dtype) * self.weight

    def rope(x: Any, pos: Any) -> Any:
        """Rotary embedding of x [b, heads, s, d] at positions pos [s] (Su et al. 2021), half-split form."""
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
        ang = pos.float()[:, None] * inv[None, :]
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    class Block(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.attn_norm, self.mlp_norm = RMSNorm(), RMSNorm()
            self.q = nn.Linear(h, heads * d, bias=spec.qkv_bias)
            self.k = nn.Linear(h, kv * d, bias=spec.qkv_bias)
            self.v = nn.Linear(h, kv * d, bias=spec.qkv_bias)
            self.o = nn.Linear(heads * d, h, bias=False)
            f = spec.ffn_hidden_size
            self.gate, self.up, self.down = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False), \
                nn.Linear(f, h, bias=False)

        def forward(self, x: Any, pos: Any, past: tuple[Any, Any] | None) -> tuple[Any, tuple[Any, Any]]:
            b, s, _ = x.shape
            y = self.attn_norm(x)
            q = rope(self.q(y).view(b, s, heads, d).transpose(1, 2), pos)
            k = rope(self.k(y).view(b, s, kv, d).transpose(1, 2), pos)
            v = self.v(y).view(b, s, kv, d).transpose(1, 2)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
            rep = heads // kv
            kk, vv = (k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)) if rep > 1 else (k, v)
            a = fn.scaled_dot_product_attention(q, kk, vv, is_causal=past is None and s > 1)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, heads * d))
            y = self.mlp_norm(x)
            return x + self.down(fn.silu(self.gate(y)) * self.up(y)), (k, v)

    class Decoder(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(spec.vocab_size, h)
            self.layers = nn.ModuleList([Block() for _ in range(spec.num_layers)])
            self.norm = RMSNorm()
            self.lm_head = nn.Linear(h, spec.vocab_size, bias=False)

        def forward(self, input_ids: Any, labels: Any = None, use_cache: bool = False,
                    cache: list[tuple[Any, Any]] | None = None) -> Any:
            start = 0 if cache is None else int(cache[0][0].shape[2])
            pos = torch.arange(start, start + input_ids.shape[1], device=input_ids.device)
            x = self.embed(input_ids)
            new: list[tuple[Any, Any]] = []
            for i, layer in enumerate(self.layers):
                x, kvs = layer(x, pos, None if cache is None else cache[i])
                new.append(kvs)
            logits = self.lm_head(self.norm(x))
            loss = None
            if labels is not None:  # next-token loss, as LlamaForCausalLM shifts the labels
                loss = fn.cross_entropy(logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten())
            return SimpleNamespace(loss=loss, logits=logits, cache=new if use_cache else None)

    torch.manual_seed(seed)
    model = Decoder().to(getattr(torch, dtype))
    model.train()
    return model
