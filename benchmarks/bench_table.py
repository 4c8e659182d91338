"""Print a gpuplan bench result as a Markdown table: measured vs predicted, with spread and ratio.

Collectives show the bus bandwidth of the largest message of each kind; every other
measurement is listed. Used for the figures in docs/bench.md and by benchmarks/gpu_record.sh.
Usage: python benchmarks/bench_table.py RESULT.json [--benchmark gemm]
"""

from __future__ import annotations

import argparse

from gpuplan.bench.records import BenchResult, Measurement, load_result


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
        return f"{v:.3e}"
    return f"{v:,.4g}"


def rows(res: BenchResult, benchmark: str = "") -> list[Measurement]:
    biggest: dict[str, int] = {}
    for m in res.measurements:
        if m.benchmark == "collectives":
            k = str(m.params.get("kind"))
            biggest[k] = max(biggest.get(k, 0), int(m.params.get("bytes_per_rank") or 0))
    out = []
    for m in res.measurements:
        if benchmark and m.benchmark != benchmark:
            continue
        if m.benchmark == "collectives" and (m.metric != "busbw" or int(m.params.get("bytes_per_rank") or 0)
                                             != biggest[str(m.params.get("kind"))]):
            continue
        out.append(m)
    return out


def markdown(res: BenchResult, benchmark: str = "") -> str:
    dev = res.machine.devices[0].name if res.machine.devices else res.machine.hostname
    lines = [f"Machine: {dev} x {len(res.machine.devices)} ({res.machine.backend}), "
             f"torch {res.machine.libraries.get('torch', '?')}, {res.created_at}, "
             f"{'--quick' if res.quick else 'full sizes'}; predictions for "
             f"{res.accelerator or 'no catalog part'} ({res.accelerator_note}).", "",
             "| measurement | measured | unit | spread | predicted | measured / predicted |",
             "|---|---:|---|---:|---:|---:|"]
    for m in rows(res, benchmark):
        ratio = f"{m.ratio:.2f}" if m.ratio is not None else "-"
        pred = _fmt(m.predicted.value)
        lines.append(f"| {m.name} | {_fmt(m.value)} | {m.unit} | {m.spread:.0%} | {pred} | {ratio} |")
    lines += ["", "| benchmark | status | seconds | note |", "|---|---|---:|---|"]
    for s in res.benchmarks:
        note = "; ".join([x for x in (s.error,) if x] + list(s.notes)).replace("|", "/")
        lines.append(f"| {s.name} | {s.status} | {s.seconds:.1f} | {note} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--benchmark", default="")
    args = ap.parse_args()
    print(markdown(load_result(args.result), args.benchmark))


if __name__ == "__main__":
    main()
