"""The model a bench run trains: transformers' Llama when installed, else the plain-torch decoder."""

from __future__ import annotations

from typing import Any

from gpuplan.workload.model_spec import ModelSpec

__all__ = ["build_model"]


def build_model(spec: ModelSpec, dtype: str, *, prefer_transformers: bool = True) -> tuple[Any, str]:
    """(model, implementation): transformers' Llama when installed, else the plain-torch decoder (llama.py)."""
    if prefer_transformers:
        try:
            from gpuplan.validate.torch_probe import build_hf_model

            return build_hf_model(spec, dtype=dtype), "transformers LlamaForCausalLM"
        except ImportError:
            pass
    from gpuplan.bench.llama import build_torch_llama

    return build_torch_llama(spec, dtype=dtype), "gpuplan.bench.llama (plain PyTorch)"
