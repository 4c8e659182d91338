"""`gpuplan validate CASES.csv`: predicted vs measured for published cases."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from gpuplan.cli.common import console, fail, print_json
from gpuplan.errors import GpuplanError
from gpuplan.validate.run import validate_file


def validate_cmd(
    cases: Path = typer.Argument(..., help="a case CSV in the ground-truth format (training or memory rows)"),
    json_out: bool = typer.Option(False, "--json"),
    include_low: bool = typer.Option(False, "--include-low-confidence", help="also score the authors' estimates"),
) -> None:
    """Predict each row's metric; print predicted, measured, APE, the median and the 90th percentile."""
    try:
        report = validate_file(cases, include_low_confidence=include_low)
    except GpuplanError as exc:
        fail(exc)
    if json_out:
        print_json(report.to_json())
        return
    t = Table(title=f"Validation - {cases.name}")
    for col in ("id", "metric", "measured", "predicted", "APE", "how"):
        t.add_column(col)
    for c in report.cases:
        t.add_row(c.id, c.metric, f"{c.measured:,.4g}", f"{c.predicted:,.4g}", f"{c.ape:.1%}", c.detail)
    console.print(t)
    if report.cases:
        console.print(f"rows {len(report.cases)}  median APE {report.median_ape:.1%}  p90 APE {report.p90_ape:.1%}  "
                      f"skipped {len(report.skipped)}")
    for rid, reason in report.skipped:
        console.print(f"skipped {rid}: {reason}", highlight=False)
