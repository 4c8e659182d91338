"""`gpuplan calibrate`: turn a bench result into measured calibration terms for that hardware (torch-free).

The file goes to the user's calibration folder (`calibration_dir()`: next to the user
catalog, `~/.config/gpuplan/calibration/<accelerator>.yaml`); `load_user_calibration`
merges every file there into the shipped terms, and `gpuplan estimate train` / `plan
train` use the result and list each term with its origin ("gpuplan calibrate: ...").

Applied to estimates:
    compute_efficiency.<acc>.<bf16|fp8> = current term x (measured GEMM efficiency /
        gemm_reference_efficiency), measured efficiency = TFLOP/s of the largest square
        GEMM / datasheet dense peak. A GEMM below the reference lengthens the step.
    hbm_bandwidth_scale.<acc> = (measured copy GB/s / hbm_bandwidth_gbps) / memory_copy_fraction
        (reference); divides the memory-bound step terms.
    link_bw_scale.<acc> = (busbw of the largest intra-node all-reduce / per-direction link peak)
        / the shipped <link kind>_bw_efficiency; scales this part's intra-node link bandwidth.
    compute_efficiency.<acc>.bf16 from `gpuplan bench --plan` (plan.step_time): the efficiency the prediction
        used x predicted compute / (predicted compute + measured - predicted step); replaces the GEMM-derived one.
Recorded (shown): the raw <link kind>_bw_efficiency, train_mfu (end-to-end MFU of the bench model), and from a
plan run plan_mfu and plan_memory_ratio (measured / predicted peak memory).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import yaml

from gpuplan.bench.calibration_files import CalibrationFile, RecordedFigure, calibration_dir, load_user_calibration
from gpuplan.bench.predict import reference_terms
from gpuplan.bench.records import BenchResult, Measurement
from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration, CalibrationTerm, default_calibration
from gpuplan.estimate.links import default_link_calibration
from gpuplan.hardware import Accelerator, Catalog

__all__ = ["CalibrationFile", "RecordedFigure", "calibration_dir", "calibration_from_result",
           "load_user_calibration", "write_calibration"]


def _largest_square(ms: list[Measurement], dtype: str) -> Measurement | None:
    rows = [m for m in ms if m.benchmark == "gemm" and m.params.get("dtype") == dtype
            and str(m.params.get("shape", "")).startswith("square")]
    return max(rows, key=lambda m: float(m.params.get("flops") or 0.0), default=None)


def _term_name(cal: Calibration, acc: str, dtype: str) -> tuple[str, float]:
    """(the per-part term to write, the value the estimator uses today)."""
    name = f"compute_efficiency.{acc}.{dtype}"
    current = cal.terms.get(name) or cal.terms[f"compute_efficiency.default.{dtype}"]
    return name, current.value


def calibration_from_result(result: BenchResult, catalog: Catalog, *, accelerator: str | None = None,
                            result_path: str = "", calibration: Calibration | None = None) -> CalibrationFile:
    """The measured terms of `result` for its accelerator (or `accelerator`)."""
    if result.machine.backend == "cpu":
        raise InputError(field="result", value=result_path or "result", allowed="a result measured on a GPU or NPU",
                         hint="a CPU run has no catalog accelerator to calibrate (its figures stay in the result); "
                              "run gpuplan bench (or bench --plan) on the machine")
    acc_id = accelerator or result.accelerator
    if acc_id is None:
        raise InputError(field="accelerator", value=None, allowed="a catalog accelerator id",
                         hint=f"the result names none ({result.accelerator_note}); pass --accelerator ID")
    acc = catalog.accelerator(acc_id)
    cal = calibration or default_calibration()
    origin = (f"gpuplan calibrate: {Path(result_path).name or 'result'} measured {result.created_at} on "
              f"{result.machine.devices[0].name if result.machine.devices else result.machine.hostname}")
    terms: dict[str, CalibrationTerm] = {}
    recorded: dict[str, RecordedFigure] = {}
    ms = list(result.measurements)
    for dtype, target in (("bf16", "bf16"), ("fp16", "bf16"), ("fp8", "fp8")):
        m = _largest_square(ms, dtype)
        peak = acc.dense_tflops(dtype)
        if m is None or not peak:
            continue
        name, current = _term_name(cal, acc.id, target)
        if name in terms:  # bf16 measured already sets the 16-bit term
            continue
        eff = m.value / peak
        ref = reference_terms()[f"gemm_reference_efficiency.{dtype}"].value
        value = min(max(current * eff / ref, 0.01), 1.0)
        size = m.params.get("m")
        terms[name] = CalibrationTerm(
            value=round(value, 4), unit=cal.terms[f"compute_efficiency.default.{target}"].unit, applies_to=("train",),
            source=f"{origin}: {dtype} GEMM {size}^3 {m.value:.1f} TFLOP/s = {eff:.3f} of the {peak:g} peak vs "
                   f"reference {ref:g} -> x{eff / ref:.3f} on {current:g}",
            note="measured; replaces the shipped value for this part", overridden=True)
    copy = next((m for m in ms if m.name == "memory.copy"), None)
    if copy is not None and acc.hbm_bandwidth_gbps:
        fraction = copy.value / acc.hbm_bandwidth_gbps
        ref = reference_terms()["memory_copy_fraction"].value
        terms[f"hbm_bandwidth_scale.{acc.id}"] = CalibrationTerm(
            value=round(min(max(fraction / ref, 0.05), 2.0), 4), unit="measured / reference memory bandwidth",
            applies_to=("train",),
            source=f"{origin}: copy {copy.value:.0f} GB/s = {fraction:.3f} of {acc.hbm_bandwidth_gbps:g} vs "
                   f"reference {ref:g}",
            note="measured; scales the memory-bound step terms (elementwise kernels, optimizer update)",
            overridden=True)
    link = _link_efficiency(ms, acc, origin)
    if link is not None:
        recorded[link[0]] = link[1]
        kind_eff = default_link_calibration().value(link[0])
        terms[f"link_bw_scale.{acc.id}"] = CalibrationTerm(
            value=round(min(max(link[1].value / kind_eff, 0.05), 2.0), 4),
            unit="measured / shipped intra-node link efficiency", applies_to=("train",),
            source=f"{link[1].source}; shipped {link[0]} {kind_eff:g}",
            note="measured; scales this part's intra-node link bandwidth in the collectives", overridden=True)
    _plan_terms(ms, acc, cal, origin, terms, recorded)
    mfu = next((m for m in ms if m.name == "train.mfu"), None)
    if mfu is not None:
        recorded["train_mfu"] = RecordedFigure(value=round(mfu.value, 4), unit="fraction of the bf16 peak",
                                               source=f"{origin}: {mfu.params.get('model')}",
                                               note="end-to-end MFU of the bench model at its batch")
    if not terms and not recorded:
        raise InputError(field="result", value=result_path or "result", allowed="a result with GEMM, memory, "
                         "collective, train or plan measurements",
                         hint="run gpuplan bench with --only gemm,memory at least, or gpuplan bench --plan")
    return CalibrationFile(accelerator=acc.id, from_result=str(result_path), measured_at=result.created_at,
                           written_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           terms=terms, recorded=recorded)


def _plan_terms(ms: list[Measurement], acc: Accelerator, cal: Calibration, origin: str,
                terms: dict[str, CalibrationTerm], recorded: dict[str, RecordedFigure]) -> None:
    """`gpuplan bench --plan`: the plan's measured step sets this part's compute efficiency; MFU and memory recorded.

    The part of the predicted step that scales with 1 / efficiency (compute_scaled_s, else the compute time)
    absorbs the whole gap: needed = that part + (measured - predicted step); efficiency = the one the
    prediction used x that part / needed.
    It replaces a GEMM-derived term of the same result (the end-to-end step of the plan is what estimates predict).
    """
    step = next((m for m in ms if m.name == "plan.step_time"), None)
    if step is not None and step.predicted.value:
        pt = step.predicted.terms
        used = next((k for k in pt if k.startswith("compute_efficiency.")), None)
        if used is not None:
            eff, t_p, t_m = pt[used], step.predicted.value, step.value
            c_p = pt.get("compute_scaled_s") or pt.get("breakdown_s.compute") or t_p
            need = max(c_p + (t_m - t_p), 0.05 * c_p)
            value = min(max(eff * c_p / need, 0.01), 1.0)
            name = f"compute_efficiency.{acc.id}.bf16"
            if name in terms:
                old = terms[name]
                recorded["compute_efficiency_from_gemm"] = RecordedFigure(
                    value=old.value, unit=old.unit, source=old.source,
                    note="replaced by the plan run's end-to-end figure")
            unit = cal.terms["compute_efficiency.default.bf16"].unit
            terms[name] = CalibrationTerm(
                value=round(value, 4), unit=unit, applies_to=("train",),
                source=f"{origin}: plan run {step.params.get('model')} dp{step.params.get('dp')} "
                       f"zero{step.params.get('zero')} mb{step.params.get('micro_batch')}x"
                       f"{step.params.get('microbatches')} recompute={step.params.get('recompute')} seq "
                       f"{step.params.get('seq_len')}: step {t_m:.4g} s measured vs {t_p:.4g} s predicted ({c_p:.4g} s "
                       f"of it scale with 1/{used} {eff:g}) -> {value:.4f}",
                note="measured end to end; replaces the shipped value for this part", overridden=True)
    mfu = next((m for m in ms if m.name == "plan.mfu"), None)
    if mfu is not None:
        recorded["plan_mfu"] = RecordedFigure(value=round(mfu.value, 4), unit="fraction of the bf16 peak",
                                              source=f"{origin}: {mfu.params.get('model')}",
                                              note="end-to-end MFU of the plan's layout"
                                                   + (f" (predicted {mfu.predicted.value:.4f})"
                                                      if mfu.predicted.value else ""))
    mem = next((m for m in ms if m.name == "plan.peak_memory"), None)
    if mem is not None and mem.ratio is not None:
        recorded["plan_memory_ratio"] = RecordedFigure(
            value=round(mem.ratio, 4), unit="measured / predicted peak bytes",
            source=f"{origin}: {mem.value / 2**30:.2f} GiB measured vs {(mem.predicted.value or 0) / 2**30:.2f} GiB "
                   f"predicted", note="weights, gradients, optimizer states and activations (max_memory_allocated)")


def _link_efficiency(ms: list[Measurement], acc: Accelerator, origin: str) -> tuple[str, RecordedFigure] | None:
    rows = [m for m in ms if m.benchmark == "collectives" and m.metric == "busbw"
            and m.params.get("kind") == "all_reduce" and m.params.get("nodes") in (None, 1)]
    if not rows or acc.intra_node_link_gbps is None:
        return None
    big = max(rows, key=lambda m: int(m.params.get("bytes_per_rank") or 0))
    peak = acc.intra_node_link_gbps / 2  # per direction (links.py)
    return f"{acc.intra_node_link}_bw_efficiency", RecordedFigure(
        value=round(big.value / peak, 4), unit="fraction of the per-direction peak",
        source=f"{origin}: all-reduce busbw {big.value:.0f} GB/s at {big.params.get('bytes_per_rank')} B, "
               f"{big.params.get('ranks')} ranks, of {peak:g} GB/s",
        note="the measured value of the links.yaml term; applied to this part through link_bw_scale")


def write_calibration(cf: CalibrationFile, directory: Path | None = None) -> Path:
    """Write `<dir>/<accelerator>.yaml` atomically; InputError if the folder cannot be written."""
    import os
    import tempfile

    d = (directory or calibration_dir()).expanduser()
    out = d / f"{cf.accelerator}.yaml"
    header = ("# Written by `gpuplan calibrate` from a gpuplan bench result. `terms` replace the shipped\n"
              "# calibration terms for this accelerator in gpuplan estimates; `recorded` are shown only.\n")
    text = header + yaml.safe_dump(cf.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=120)
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=d)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, out)
    except OSError as exc:
        raise InputError(field="calibration dir", value=str(d), allowed="a writable folder",
                         hint=str(exc.strerror or exc)) from None
    return out
