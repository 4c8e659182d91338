"""The memory breakdown record shared by training and inference estimates.

`to_json` is the contract other tools read: integer byte counts under fixed names and an
`assumptions` object. Every figure here is an estimate (provenance "estimated").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MemoryBreakdown", "memory_total"]


def memory_total(weights: float, gradients: float, optimizer: float, activations: float, kv_cache: float,
                 other: float) -> float:
    """Bytes of a device's memory terms added up, always in this order (a total computed without building the
    breakdown, as the training estimate does for every pipeline rank, equals the breakdown's to the last bit)."""
    return weights + gradients + optimizer + activations + kv_cache + other


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBreakdown:
    """Per-device memory of one job, in bytes, with the parts that make up each term."""

    params_total: int
    params_active: int
    params_trainable: int
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    kv_cache_bytes: float
    other_bytes: float
    details: dict[str, dict[str, float]] = field(default_factory=dict)  # term -> part -> bytes
    assumptions: dict[str, Any] = field(default_factory=dict)

    @property
    def total_bytes(self) -> float:
        return memory_total(self.weights_bytes, self.gradients_bytes, self.optimizer_bytes, self.activations_bytes,
                            self.kv_cache_bytes, self.other_bytes)

    def terms(self) -> dict[str, float]:
        return {
            "weights": self.weights_bytes,
            "gradients": self.gradients_bytes,
            "optimizer": self.optimizer_bytes,
            "activations": self.activations_bytes,
            "kv_cache": self.kv_cache_bytes,
            "other": self.other_bytes,
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "params_total": self.params_total,
            "params_active": self.params_active,
            "params_trainable": self.params_trainable,
        }
        for name, value in self.terms().items():
            out[f"{name}_bytes"] = round(value)
        out["total_bytes"] = sum(round(v) for v in self.terms().values())
        out["details_bytes"] = {k: {p: round(v) for p, v in parts.items()} for k, parts in self.details.items()}
        out["provenance"] = "estimated"
        out["assumptions"] = self.assumptions
        return out
