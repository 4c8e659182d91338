"""A `gpuplan bench` result as a section of the advisor report (torch-free): measured next to predicted.

`bench_section(result, source)` turns a result into plain JSON that the report document
carries under `bench` (a list, one entry per machine); the Markdown and HTML reports render
it as a measured-vs-predicted table (gpuplan.render.report_bench). The headline figures are
kept: every end-to-end (train, decode) figure, the largest GEMM per dtype, memory,
transfer, storage and data-loader figures, and the busbw of the largest message of each
collective.
"""

from __future__ import annotations

from typing import Any

from gpuplan.bench.records import BenchResult, Measurement

__all__ = ["bench_section", "headline"]


def headline(result: BenchResult) -> list[Measurement]:
    """The measurements a summary shows, in the result's order."""
    ms = list(result.measurements)
    gemm: dict[str, Measurement] = {}
    coll: dict[str, Measurement] = {}

    def size(m: Measurement, *keys: str) -> float:
        out = 1.0
        for k in keys:
            v = m.params.get(k)
            out *= float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0
        return out

    for m in ms:
        if m.benchmark == "gemm":
            d = str(m.params.get("dtype", ""))
            if d not in gemm or size(m, "m", "n", "k") > size(gemm[d], "m", "n", "k"):
                gemm[d] = m
        elif m.benchmark == "collectives" and m.metric == "busbw":
            k = str(m.params.get("kind", ""))
            if k not in coll or size(m, "bytes_per_rank") > size(coll[k], "bytes_per_rank"):
                coll[k] = m
    keep = {id(m) for m in (*gemm.values(), *coll.values())}
    return [m for m in ms if id(m) in keep or m.benchmark not in ("gemm", "collectives")]


def bench_section(result: BenchResult, source: str) -> dict[str, Any]:
    """The report's record of one bench result: the machine, the headline rows and the training layout notes."""
    m = result.machine
    device = m.devices[0].name if m.devices else m.cpu
    rows = [{"name": x.name, "measured": x.value, "unit": x.unit, "spread": x.spread,
             "predicted": x.predicted.value, "ratio": x.ratio,
             "basis": x.predicted.basis if x.predicted.value is not None else (x.predicted.reason or "")}
            for x in headline(result)]
    notes = [n for s in result.benchmarks if s.name == "train" for n in s.notes]
    notes += [f"{s.name}: {s.status}: {s.error}" for s in result.benchmarks if s.status in ("failed", "partial")]
    return {"file": source, "created_at": result.created_at, "device": device, "backend": m.backend,
            "devices": len(m.devices) if m.backend != "cpu" else 0, "host": m.hostname,
            "accelerator": result.accelerator, "accelerator_note": result.accelerator_note,
            "complete": result.complete, "rows": rows, "notes": notes}
