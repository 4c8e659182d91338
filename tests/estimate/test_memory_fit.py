"""One usable-memory rule: device memory x usable_memory_fraction, worded the same everywhere."""

from __future__ import annotations

from gpuplan.estimate.calibration import load_calibration
from gpuplan.estimate.memory_fit import fit_text, memory_fit, usable_bytes
from gpuplan.units import GIB


def test_fit_text_and_rule() -> None:
    assert fit_text(23.68 * GIB, 24 * GIB) == "23.7 GiB needed, 22.8 GiB usable (95% of 24)"
    assert usable_bytes(24 * GIB) == 24 * GIB * 0.95
    assert not memory_fit(23.68 * GIB, 24 * GIB).fits
    assert memory_fit(22.0 * GIB, 24 * GIB).fits
    assert "141" in fit_text(100 * GIB, 141 * GIB)
    assert "可用" in fit_text(23.68 * GIB, 24 * GIB, "zh")


def test_fit_follows_a_calibration_override() -> None:
    cal = load_calibration({"usable_memory_fraction": 1.0})
    assert memory_fit(23.68 * GIB, 24 * GIB, cal).fits
    assert usable_bytes(24 * GIB, cal) == 24 * GIB
