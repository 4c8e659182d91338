"""How a GEMM's shape on one part moves its efficiency (shared by the training and serving step models)."""

from __future__ import annotations

from gpuplan.hardware.schema_devices import Accelerator

__all__ = ["REF_FLOPS_PER_SM_CYCLE", "expert_half_width"]

# Dense 16-bit tensor FLOPs one H100 SXM5 SM does per cycle (989.4 TFLOPS / (132 SMs x 1.98 GHz), catalog):
# the part on which the engines' `moe_expert_half_width` prior was read (Megatron-Core MoE on Hopper).
REF_FLOPS_PER_SM_CYCLE = 989.4e12 / (132 * 1.98e9)


def expert_half_width(acc: Accelerator, half_width: float) -> float:
    """The expert width at which grouped expert GEMMs run at half the dense efficiency on `acc`.

    A narrow expert (few output columns per device) gives each tile little math per operand byte it
    loads; the width at which an SM's loads keep up with its tensor cores grows with the tensor FLOPs
    the SM does per cycle (the roofline of one SM: Williams et al. 2009). `half_width` is read on H100
    SXM5-class SMs; a part with slower tensor cores per SM (H20: 148 TFLOPS on 78 SMs, a quarter of the
    H100's per SM-cycle) reaches the dense efficiency at a quarter of the width. Parts without SM data
    keep `half_width`."""
    p16 = (acc.dense_tflops("bf16") or acc.dense_tflops("fp16") or 0.0) * 1e12
    if not acc.sm_count or not acc.sm_boost_clock_mhz or not p16:
        return half_width
    per_sm_cycle = p16 / (acc.sm_count * acc.sm_boost_clock_mhz * 1e6)
    return half_width * per_sm_cycle / REF_FLOPS_PER_SM_CYCLE
