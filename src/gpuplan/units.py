"""Units and element sizes shared by every estimator.

JSON output uses base units (bytes, seconds, FLOP); GiB = 2**30 bytes, GB = 1e9 bytes.
"""

from __future__ import annotations

import math
from typing import Literal

GIB = 2**30  # bytes
GB = 10**9  # bytes

Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "nf4", "nvfp4", "mxfp4"]

# Bytes per element of each storage dtype (int4/nf4 pack two values per byte).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
    # 4-bit floats with their block scales: NVFP4 one E4M3 scale per 16 values (NVIDIA, "Introducing NVFP4",
    # developer blog 2025: 4.5 bits per value), MXFP4 one E8M0 scale per 32 (OCP Microscaling Formats v1.0)
    "nvfp4": 0.5 + 1.0 / 16,
    "mxfp4": 0.5 + 1.0 / 32,
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of `dtype`; raises InputError for an unknown name."""
    from gpuplan.errors import unknown_name

    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise unknown_name("dtype", dtype, DTYPE_BYTES) from None


def sig(value: float, digits: int = 3) -> str:
    """`value` with at least `digits` significant figures, never in exponent form: 0.00123, 0.0520, 1.33,
    12.3, 123; larger values as whole numbers with thousands separators (1,235)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    exponent = math.floor(math.log10(abs(value)))
    decimals = digits - 1 - exponent
    if decimals <= 0:
        return f"{value:,.0f}"
    text = f"{value:.{decimals}f}"
    if abs(float(text)) >= 10 ** (exponent + 1):  # rounding carried a digit (0.09996 -> 0.1000): drop one
        text = f"{value:.{max(decimals - 1, 0)}f}"
    return text
