"""Pure-decode runs in closed form (simulate/engine_sim.py, its module docstring "Speed"): per decode batch size,
the step time as an affine function of the KV tokens read, checked at three points, else summed step by step."""

from __future__ import annotations

import numpy as np

from gpuplan.simulate.engine_config import StepCost

__all__ = ["DecodeTable"]


class DecodeTable:
    """Per decode batch size n: step time a + b*kv_tokens, or None where step_s is not affine in kv."""

    def __init__(self, cost: StepCost, cap_tokens: int) -> None:
        self.cost = cost
        self.cap = max(cap_tokens, 4)
        self.coef: dict[int, tuple[float, float] | None] = {}
        self.arr = getattr(cost, "step_s_array", None)

    def get(self, n: int) -> tuple[float, float] | None:
        if n in self.coef:
            return self.coef[n]
        f = self.cost.step_s
        k1, k2 = n, max(self.cap, 2 * n)
        k3 = (k1 + k2) // 2
        s1 = f(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=n, decode_kv_tokens=k1)
        s2 = f(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=n, decode_kv_tokens=k2)
        s3 = f(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=n, decode_kv_tokens=k3)
        b = (s2 - s1) / (k2 - k1)
        a = s1 - b * k1
        ok = abs(a + b * k3 - s3) <= 1e-9 * max(abs(s3), 1e-12) and b >= 0.0
        self.coef[n] = (a, b) if ok else None
        return self.coef[n]

    def times(self, n: int, k0: int, steps: int) -> np.ndarray:
        """Exact per-step times of `steps` pure-decode steps (the non-affine path)."""
        kv = k0 + n * np.arange(steps, dtype=np.int64)
        if self.arr is not None:
            z = np.zeros(steps, dtype=np.int64)
            return np.asarray(self.arr(prefill_tokens=z, prefill_attn_pairs=z.astype(np.float64),
                                       decode_seqs=np.full(steps, n, dtype=np.int64), decode_kv_tokens=kv),
                              dtype=np.float64)
        f = self.cost.step_s
        return np.array([f(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=n, decode_kv_tokens=int(x))
                         for x in kv], dtype=np.float64)
