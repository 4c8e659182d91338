"""The steps of a decode instance of a prefill/decode-disaggregated deployment (DistServe, Zhong et al. 2024).

The simulator admits a request by prefilling its prompt; on a decode instance the prompt's KV cache arrives
from a prefill instance instead, so `DecodeInstanceCost` charges an admission the transfer of those tokens
(overlapping the step's decodes) and leaves pure decode steps to the step model.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpuplan.simulate.lockstep import ArrayStepCost

__all__ = ["DecodeInstanceCost"]


class DecodeInstanceCost:
    """A decode instance of a disaggregated deployment: prompts arrive with their KV cache, so admitting one costs
    its transfer (`transfer_s_per_token` per prompt token, overlapping the step's decodes: RDMA writes of the
    KV blocks, Mooncake / NIXL), not a prefill. Pure decode steps are `base`'s."""

    def __init__(self, base: ArrayStepCost, *, transfer_s_per_token: float) -> None:
        self.base = base
        self.per_token = max(float(transfer_s_per_token), 0.0)

    @property
    def kv_capacity_tokens(self) -> int:
        return int(self.base.kv_capacity_tokens)

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        dec = (self.base.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=decode_seqs,
                                decode_kv_tokens=decode_kv_tokens) if decode_seqs > 0 else 0.0)
        return max(dec, self.per_token * prefill_tokens)

    def step_s_array(self, *, prefill_tokens: npt.ArrayLike, prefill_attn_pairs: npt.ArrayLike,
                     decode_seqs: npt.ArrayLike, decode_kv_tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        p = np.asarray(prefill_tokens, dtype=np.float64)
        d = np.asarray(decode_seqs)
        dec = np.asarray(self.base.step_s_array(prefill_tokens=np.zeros(d.shape), prefill_attn_pairs=np.zeros(d.shape),
                                                decode_seqs=d, decode_kv_tokens=decode_kv_tokens), dtype=np.float64)
        return np.asarray(np.maximum(np.where(d > 0, dec, 0.0), self.per_token * p), dtype=np.float64)
