"""The device a memory estimate is checked against (`memory train --accelerator/--device-memory-gib`) and the
fit record as JSON, for the CLI and the web app alike."""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.estimate.memory_fit import MemoryFit, MemoryFix
from gpuplan.service.checks import positive
from gpuplan.units import GIB

__all__ = ["device_memory", "fit_json"]


def device_memory(accelerator: str | None, device_memory_gib: float | None,
                   lang: str = "en") -> tuple[float | None, str | None]:
    """Device memory in bytes from --device-memory-gib or the catalog entry of --accelerator, and the note
    naming the part an alias chose (None when the name was exact)."""
    if device_memory_gib is not None:
        positive("device-memory-gib", device_memory_gib, lang)
        return device_memory_gib * GIB, None
    if accelerator is None:
        return None, None
    from gpuplan.hardware.overrides import load_catalog
    from gpuplan.hardware.query import alias_note

    cat = load_catalog()
    gib = cat.accelerator(accelerator).memory_gib
    if gib is None:
        raise InputError(field="accelerator", value=accelerator, allowed="an accelerator with a known memory size",
                         hint="pass --device-memory-gib")
    return float(gib) * GIB, alias_note(cat, accelerator, lang)


def fit_json(fit: MemoryFit, fix: MemoryFix | None) -> dict[str, object]:
    out: dict[str, object] = dict(fit.to_json())
    if fix is not None:
        out["nearest_fix"] = {"flags": fix.flags, "total_bytes": round(fix.needed_bytes), "fits": fix.fits}
    return out
