"""One usable-memory rule for every command: an estimate fits a device when it is at most
device memory x the calibration term `usable_memory_fraction` (the headroom the training
planner keeps for allocator spikes and estimate error).

`memory train|infer`, `estimate train` and the planners all word a fit the same way:
"23.7 GiB needed, 22.8 GiB usable (95% of 24)". `nearest_train_fix` names the first single
change (QLoRA, full recomputation, more ZeRO sharding) that makes a training job fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from pydantic import ValidationError

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.memory_infer import estimate_inference_memory
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.i18n import tr
from gpuplan.units import GIB
from gpuplan.workload.jobs import InferenceJob, Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["MemoryFit", "MemoryFix", "fit_text", "memory_fit", "nearest_infer_fix", "nearest_train_fix",
           "usable_bytes", "usable_fraction"]

TERM = "usable_memory_fraction"


def usable_fraction(calibration: Calibration | None = None) -> float:
    """The share of device memory an estimate may use (calibration term `usable_memory_fraction`)."""
    return (calibration or default_calibration()).value(TERM)


def usable_bytes(device_bytes: float, calibration: Calibration | None = None) -> float:
    """Device memory an estimate may use: device bytes x `usable_memory_fraction`."""
    return device_bytes * usable_fraction(calibration)


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """An estimate against one device under the usable-memory rule."""

    needed_bytes: float
    device_bytes: float
    fraction: float

    @property
    def usable_bytes(self) -> float:
        return self.device_bytes * self.fraction

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.usable_bytes

    @property
    def headroom_bytes(self) -> float:
        """Usable minus needed (negative when it does not fit)."""
        return self.usable_bytes - self.needed_bytes

    def text(self, lang: str = "en") -> str:
        """'23.7 GiB needed, 22.8 GiB usable (95% of 24)' in `lang` (no verdict, no markup)."""
        return tr("memfit.line", lang, need=self.needed_bytes / GIB, usable=self.usable_bytes / GIB,
                  pct=self.fraction, device=f"{round(self.device_bytes / GIB, 1):g}")

    def verdict(self, lang: str = "en") -> str:
        """'fits' or 'does not fit' in `lang`."""
        return tr("cli.mem.fits" if self.fits else "cli.mem.no_fit", lang)

    def to_json(self) -> dict[str, float | bool]:
        return {"device_memory_bytes": round(self.device_bytes), "usable_memory_fraction": self.fraction,
                "usable_memory_bytes": round(self.usable_bytes), "fits": self.fits}


def memory_fit(needed_bytes: float, device_bytes: float, calibration: Calibration | None = None) -> MemoryFit:
    """`needed_bytes` against `device_bytes` under the usable-memory rule."""
    return MemoryFit(needed_bytes=float(needed_bytes), device_bytes=float(device_bytes),
                     fraction=usable_fraction(calibration))


def fit_text(needed_bytes: float, device_bytes: float, lang: str = "en",
             calibration: Calibration | None = None) -> str:
    """The one wording of a fit: '23.7 GiB needed, 22.8 GiB usable (95% of 24)'."""
    return memory_fit(needed_bytes, device_bytes, calibration).text(lang)


@dataclass(frozen=True, slots=True)
class MemoryFix:
    """A change of the command line and the per-device memory it gives."""

    flags: str  # e.g. "--method qlora"
    needed_bytes: float
    fits: bool

    def text(self, lang: str = "en") -> str:
        if self.fits:
            return tr("memfit.fix_fits", lang, flags=self.flags, gib=self.needed_bytes / GIB)
        return tr("memfit.fix_none", lang, flags=self.flags, gib=self.needed_bytes / GIB)


def _train_bytes(spec: ModelSpec, job: TrainingJob, layout: Layout, calibration: Calibration | None) -> float:
    return float(estimate_training_memory(spec, job, layout, calibration=calibration).total_bytes)


def _infer_bytes(spec: ModelSpec, job: InferenceJob, layout: Layout, calibration: Calibration | None) -> float:
    return float(estimate_inference_memory(spec, job, layout, calibration=calibration).total_bytes)


def _first_fit(tries: Iterable[tuple[str, Callable[[], float]]], limit: float) -> MemoryFix | None:
    """The first (flags, memory estimate) whose estimate fits `limit`; an estimate that fails is skipped."""
    for flags, estimate in tries:
        try:
            need = estimate()
        except (GpuplanError, ValidationError):
            continue
        if need <= limit:
            return MemoryFix(flags=flags, needed_bytes=need, fits=True)
    return None


def _changes(job: TrainingJob, layout: Layout) -> list[tuple[str, TrainingJob, Layout]]:
    """Single changes, those that keep the model's numerics first: recomputation, a chunked loss (torchtune
    CEWithChunkedOutputLoss: one chunk of fp32 logits at a time), both, more ZeRO sharding; then QLoRA, which
    quantizes the frozen base to 4 bits (a quality trade-off the user should choose knowingly)."""
    out: list[tuple[str, TrainingJob, Layout]] = []
    if job.recompute != "full":
        out.append(("--recompute full", job.model_copy(update={"recompute": "full"}), layout))
    if job.loss == "full":
        chunked = "--loss chunked"
        out.append((chunked, job.model_copy(update={"loss": "chunked"}), layout))
        if job.recompute != "full":
            out.append((f"--recompute full {chunked}", job.model_copy(update={"loss": "chunked",
                                                                                "recompute": "full"}), layout))
    if layout.dp * layout.cp > 1:  # ZeRO shards over dp*cp: nothing to gain on one replica
        for stage in range(layout.zero_stage + 1, 4):
            out.append((f"--zero {stage}", job, layout.model_copy(update={"zero_stage": stage})))
    if job.method == "lora":  # QLoRA keeps LoRA's adapters over a 4-bit base
        out.append(("--method qlora", job.model_copy(update={"method": "qlora"}), layout))
    return out


def nearest_train_fix(spec: ModelSpec, job: TrainingJob, layout: Layout, device_bytes: float,
                      calibration: Calibration | None = None) -> MemoryFix | None:
    """The first single change that fits the device (`_changes`: recomputation, a chunked loss, more ZeRO sharding,
    then QLoRA for a LoRA job).

    When none does alone, all of them together (fits or not: the least memory reachable this way);
    None when there is nothing to change."""
    limit = usable_bytes(device_bytes, calibration)
    changes = _changes(job, layout)
    found = _first_fit(((flags, partial(_train_bytes, spec, j, lay, calibration)) for flags, j, lay in changes),
                       limit)
    if found is not None:
        return found
    if not changes:
        return None
    parts: list[str] = []
    update: dict[str, object] = {}
    if job.recompute != "full":
        parts.append("--recompute full")
        update["recompute"] = "full"
    if job.method == "lora":
        parts.append("--method qlora")
        update["method"] = "qlora"
    if job.loss == "full":
        parts.append("--loss chunked")
        update["loss"] = "chunked"
    j = job.model_copy(update=update)
    lay = layout.model_copy(update={"zero_stage": 3}) if layout.dp * layout.cp > 1 else layout
    if lay is not layout:
        parts.append("--zero 3")
    flags = " ".join(parts)
    try:
        need = estimate_training_memory(spec, j, lay, calibration=calibration).total_bytes
    except (GpuplanError, ValidationError):
        return None
    return MemoryFix(flags=flags, needed_bytes=need, fits=need <= limit)


def nearest_infer_fix(spec: ModelSpec, job: InferenceJob, layout: Layout, device_bytes: float,
                      calibration: Calibration | None = None) -> MemoryFix | None:
    """The first single change of a serving deployment that fits the device: a smaller weight format
    (--weights fp8, then int4), --kv-dtype fp8, then the largest smaller --batch; None when none does."""
    limit = usable_bytes(device_bytes, calibration)
    tries: list[tuple[str, InferenceJob]] = []
    for w in ("fp8", "int4"):
        if _BYTES[w] < _BYTES[job.weights]:
            tries.append((f"--weights {w}", job.model_copy(update={"weights": w})))
    if job.kv_cache_dtype not in ("fp8", "int8"):
        tries.append(("--kv-dtype fp8", job.model_copy(update={"kv_dtype": "fp8"})))
    found = _first_fit(((flags, partial(_infer_bytes, spec, j, layout, calibration)) for flags, j in tries), limit)
    if found is not None:
        return found
    lo, hi = 1, job.batch - 1  # the largest smaller batch that fits (memory grows with the batch)
    best: tuple[int, float] | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        need = estimate_inference_memory(spec, job.model_copy(update={"batch": mid}), layout,
                                         calibration=calibration).total_bytes
        if need <= limit:
            best, lo = (mid, need), mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return MemoryFix(flags=f"--batch {best[0]}", needed_bytes=best[1], fits=True)
    return None


_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
