"""`gpuplan validate CASES.csv`: predicted vs measured for published cases."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from gpuplan.cli.common import LANG_OPT, console, fail, flag, print_json
from gpuplan.errors import GpuplanError
from gpuplan.i18n import help_text, resolve_lang, tr
from gpuplan.validate.run import validate_file

COLS = ("id", "metric", "measured", "predicted", "ape", "how")  # cli.validate.col.<name>


def validate_cmd(
    cases: Path = typer.Argument(..., help=help_text("help.validate.cases")),
    json_out: bool = flag(False, "--json"),
    include_low: bool = flag(False, "--include-low-confidence", help=help_text("help.validate.include_low")),
    lang: str = LANG_OPT,
) -> None:
    """Predict each row's metric; print predicted, measured, APE, the median and the 90th percentile."""
    try:
        language = resolve_lang(lang)
        report = validate_file(cases, include_low_confidence=include_low)
    except GpuplanError as exc:
        fail(exc, lang)
    if json_out:
        print_json(report.to_json())
        return
    t = Table(title=tr("cli.validate.title", language, name=cases.name))
    for col in COLS:
        t.add_column(tr(f"cli.validate.col.{col}", language))
    for c, b in zip(report.cases, report.bands, strict=True):
        predicted = f"{c.predicted:,.4g}" + (f" ({b[0]:,.3g}-{b[1]:,.3g})" if b else "")
        t.add_row(c.id, c.metric, f"{c.measured:,.4g}", predicted, f"{c.ape:.1%}", c.detail)
    console.print(t)
    if report.cases:
        console.print(tr("cli.validate.summary", language, rows=len(report.cases), median=report.median_ape,
                         p90=report.p90_ape, skipped=len(report.skipped)))
        if report.coverage is not None:
            console.print(tr("cli.validate.coverage", language, coverage=report.coverage), highlight=False)
    for rid, reason in report.skipped:
        console.print(tr("cli.validate.skipped", language, id=rid, reason=reason), highlight=False)
