"""A plain-PyTorch Llama-style decoder (RMSNorm, RoPE, GQA attention through SDPA, SwiGLU MLP).

The e2e benchmarks use transformers' LlamaForCausalLM when it is installed
(gpuplan.validate.torch_probe); this is the fallback for machines with torch only, with
the same call convention: model(input_ids=..., labels=..., use_cache=..., cache=...) returns
an object with .loss, .logits and .cache. Architecture as in Touvron et al. 2023 (Llama 2)
and the Hugging Face implementation; weights random, nothing downloaded.

Tensor and pipeline parallelism (gpuplan.bench.parallel) use this decoder:

* attention takes its head counts from the tensor shapes (`view(b, s, -1, d)`, the GQA
  repeat = local q heads / local kv heads), so the q/k/v/o projections can be split by
  heads across TP ranks (Megatron's column/row parallel linear) and nothing else changes;
* every module is initialised from its own seed (embedding, layer i, head), so a pipeline
  stage built with `stage=(first, last)` holds exactly the weights of those layers in the
  whole model: `build_torch_llama(spec, stage=...)` returns a module mapping a tensor to a
  tensor (token ids -> hidden states on the first stage, hidden states -> logits on the
  last), as torch.distributed.pipelining's PipelineStage calls it.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

from gpuplan.workload.model_spec import ModelSpec

__all__ = ["build_torch_llama", "causal_lm_loss"]


def causal_lm_loss(logits: Any, labels: Any) -> Any:
    """Next-token cross-entropy, as LlamaForCausalLM shifts the labels (mean over batch x (seq - 1) tokens)."""
    fn: Any = importlib.import_module("torch.nn.functional")
    return fn.cross_entropy(logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten())


def build_torch_llama(spec: ModelSpec, *, dtype: str = "float32", seed: int = 0,
                      stage: tuple[int, int] | None = None) -> Any:
    """A randomly initialised decoder for `spec` (dense, no MLA/MoE), in training mode.

    `stage=(first, last)`: only decoder layers first..last-1, with the embedding when first == 0
    and the final norm and LM head when last == num_layers (a pipeline stage; forward(x) -> tensor).
    """
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
            # head counts from the shapes: under TP each rank holds heads/tp query and kv/tp key-value heads
            q = rope(self.q(y).view(b, s, -1, d).transpose(1, 2), pos)
            k = rope(self.k(y).view(b, s, -1, d).transpose(1, 2), pos)
            v = self.v(y).view(b, s, -1, d).transpose(1, 2)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
            rep = q.shape[1] // k.shape[1]  # GQA group size, the same locally as globally
            kk, vv = (k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)) if rep > 1 else (k, v)
            a = fn.scaled_dot_product_attention(q, kk, vv, is_causal=past is None and s > 1)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
            y = self.mlp_norm(x)
            return x + self.down(fn.silu(self.gate(y)) * self.up(y)), (k, v)

    def seeded(i: int, make: Any) -> Any:
        """Module i (0: embedding, 1 + layer, num_layers + 1: head) from its own seed, whatever else is built."""
        torch.manual_seed(seed * 1_000_003 + i)
        return make()

    class Decoder(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.embed = seeded(0, lambda: nn.Embedding(spec.vocab_size, h))
            self.layers = nn.ModuleList([seeded(1 + i, Block) for i in range(spec.num_layers)])
            self.norm = RMSNorm()
            self.lm_head = seeded(spec.num_layers + 1, lambda: nn.Linear(h, spec.vocab_size, bias=False))

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
            loss = causal_lm_loss(logits, labels) if labels is not None else None
            return SimpleNamespace(loss=loss, logits=logits, cache=new if use_cache else None)

    class Stage(nn.Module):  # type: ignore[misc,name-defined]
        """Layers first..last-1 of the decoder (a pipeline stage), the same weights as in Decoder."""

        def __init__(self, first: int, last: int) -> None:
            super().__init__()
            self.embed = seeded(0, lambda: nn.Embedding(spec.vocab_size, h)) if first == 0 else None
            # keyed by the global layer index, as torchtitan's pipeline split keeps the layer names
            self.layers = nn.ModuleDict({str(i): seeded(1 + i, Block) for i in range(first, last)})
            last_stage = last == spec.num_layers
            self.norm = RMSNorm() if last_stage else None
            self.lm_head = seeded(spec.num_layers + 1, lambda: nn.Linear(h, spec.vocab_size, bias=False)) \
                if last_stage else None

        def forward(self, x: Any) -> Any:
            if self.embed is not None:
                x = self.embed(x)
            pos = torch.arange(x.shape[1], device=x.device)
            for layer in self.layers.values():
                x, _ = layer(x, pos, None)
            if self.lm_head is not None:
                x = self.lm_head(self.norm(x))  # type: ignore[misc]
            return x

    if stage is not None and not 0 <= stage[0] < stage[1] <= spec.num_layers:
        raise ValueError(f"stage {stage} of a {spec.num_layers}-layer decoder")
    model = (Decoder() if stage is None else Stage(*stage)).to(getattr(torch, dtype))
    model.train()
    return model
