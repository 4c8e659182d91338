"""`gpuplan bench`, `gpuplan bench compare` and `gpuplan calibrate`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from gpuplan.cli.common import LANG_OPT, console, err_console, fail, flag, positives, print_json, ui_lang
from gpuplan.errors import GpuplanError
from gpuplan.i18n import help_text, resolve_lang, tr

# column headers: cli.bench.col.<name>, cli.calibrate.col.<name>
SUMMARY_COLS = ("benchmark", "status", "seconds", "figures", "notes")
VS_COLS = ("measurement", "measured", "unit", "spread", "predicted", "ratio")
CALIBRATE_COLS = ("term", "value", "used", "source")

app = typer.Typer(help=help_text("help.group.bench"), invoke_without_command=True)


@app.callback()
def bench(
    ctx: typer.Context,
    device: str = typer.Option("auto", help=help_text("help.bench.device")),
    quick: bool = flag(False, "--quick", help=help_text("help.bench.quick")),
    only: str = typer.Option("", help=help_text("help.bench.only")),
    directory: Path = typer.Option(Path("."), "--dir", help=help_text("help.bench.directory")),
    out: Path = typer.Option(Path("gpuplan-bench.json"), "--out", help=help_text("help.bench.out")),
    accelerator: str = typer.Option(None, help=help_text("help.bench.accelerator")),
    model: str = typer.Option(None, "--model", "-m", help=help_text("help.bench.model")),
    tp: int = typer.Option(None, help=help_text("help.bench.tp")),
    workers: int = typer.Option(2, help=help_text("help.bench.workers")),
    token_rate: float = typer.Option(1e6, help=help_text("help.bench.token_rate")),
    timeout: float = typer.Option(None, help=help_text("help.bench.timeout"), show_default="120; 300 with --plan"),
    plan: Path = typer.Option(None, "--plan", help=help_text("help.bench.plan")),
    pick: int = typer.Option(None, "--pick", min=1, help=help_text("help.bench.pick")),
    steps: int = typer.Option(5, "--steps", min=1, help=help_text("help.bench.steps")),
    lang: str = LANG_OPT,
) -> None:
    """Run the benchmark suite and write one JSON result (docs/bench.md)."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        language = resolve_lang(lang)
        positives(language, ("tp", tp, True), ("workers", workers, True), ("token-rate", token_rate, False),
                  ("timeout", timeout, False))
        if plan is not None:
            from gpuplan.bench.plan_run import PlanOptions, run_plan

            result = run_plan(PlanOptions(plan=plan, pick=pick, model=model, device=device, accelerator=accelerator,
                                          out=out, repeats=steps, timeout_s=timeout or 300.0),
                              command=_command(ctx))
        else:
            from gpuplan.bench.suite import SuiteOptions, run_suite

            opts = SuiteOptions(device=device, quick=quick, only=tuple(x.strip() for x in only.split(",")
                                                                       if x.strip()),
                                directory=directory, out=out, accelerator=accelerator, model=model or "llama3.1-8b",
                                tp=tp, workers=workers, token_rate=token_rate, collective_timeout_s=timeout or 120.0)
            result = run_suite(opts, command=_command(ctx))
    except GpuplanError as exc:
        fail(exc, lang)
    except KeyboardInterrupt:
        err_console.print(tr("cli.bench.interrupted", ui_lang(lang), path=str(out)), markup=False)
        raise typer.Exit(code=130) from None
    if int(os.environ.get("RANK", "0")) != 0:  # torchrun: rank 0 reports and writes the file
        return
    if result.plan is not None:
        _print_plan(result, language)
    else:
        _print_summary(result, language)
    bad = [s for s in result.benchmarks if s.status in ("failed", "partial")]
    if bad:
        err_console.print(f"[yellow]{escape(tr('cli.bench.partial', language, path=str(out)))}[/]: "
                          + escape("; ".join(f"{s.name}: {s.error}" for s in bad)), soft_wrap=True)
        raise typer.Exit(code=1)
    console.print(tr("cli.bench.saved", language, path=str(out)), markup=False, highlight=False)


def _command(ctx: typer.Context) -> str:
    import sys

    return "gpuplan " + " ".join(sys.argv[1:]) if sys.argv and "gpuplan" in sys.argv[0] else "gpuplan bench"


def _headline(result: Any) -> list[Any]:
    """All measurements except algbw rows and all but the largest message of each collective."""
    ms = list(result.measurements)
    biggest: dict[str, int] = {}
    for m in ms:
        if m.benchmark == "collectives":
            k = str(m.params.get("kind"))
            biggest[k] = max(biggest.get(k, 0), int(m.params.get("bytes_per_rank") or 0))
    return [m for m in ms if m.benchmark != "collectives"
            or (m.metric == "busbw" and int(m.params.get("bytes_per_rank") or 0) == biggest[str(m.params.get("kind"))])]


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v:.3e}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _print_summary(result: Any, lang: str = "en") -> None:
    st = Table(title=tr("cli.bench.title", lang, device=result.machine.devices[0].name if result.machine.devices
                        else "", backend=result.machine.backend))
    for col in SUMMARY_COLS:
        st.add_column(tr(f"cli.bench.col.{col}", lang))
    for s in result.benchmarks:
        st.add_row(s.name, s.status, f"{s.seconds:.1f}", str(s.measurements), escape("; ".join(
            [x for x in (s.error,) if x] + list(s.notes))))
    console.print(st)
    t = Table(title=tr("cli.bench.vs", lang), caption=tr("cli.bench.vs_caption", lang, acc=result.accelerator
                                                         or tr("cli.bench.no_part", lang),
                                                         note=result.accelerator_note))
    t.add_column(tr("cli.bench.col.measurement", lang), overflow="fold")
    for col in VS_COLS[1:]:
        t.add_column(tr(f"cli.bench.col.{col}", lang), justify="right" if col != "unit" else "left")
    for m in _headline(result):
        t.add_row(m.name, _fmt(m.value), m.unit, f"{m.spread:.0%}", _fmt(m.predicted.value),
                  f"{m.ratio:.2f}" if m.ratio is not None else "-")
    console.print(t)


_PLAN_ROWS = (("plan.step_time", "step_time_s"), ("plan.tokens_per_s", "tokens_per_s"),
              ("plan.model_tflops", "tflops_per_device"), ("plan.mfu", "mfu"),
              ("plan.peak_memory", "memory_bytes"))


def _print_plan(result: Any, lang: str = "en") -> None:
    """`bench --plan`: measured vs predicted for what ran, the plan's own figures beside, then every difference."""
    pr = result.plan
    t = Table(title=tr("cli.bench.plan_title", lang, plan=pr.plan_id),
              caption=tr("cli.bench.plan_caption", lang, run=f"{pr.run_model}, {pr.run_layout_label}, {pr.strategy}, "
                         f"{pr.processes} x {result.machine.backend}", pred=pr.predicted_for))
    t.add_column(tr("cli.bench.col.figure", lang), overflow="fold")
    for col in ("measured", "unit", "spread", "predicted", "ratio"):
        t.add_column(tr(f"cli.bench.col.{col}", lang), justify="right" if col != "unit" else "left")
    t.add_column(tr("cli.bench.col.plan_value", lang, acc=f"{pr.devices} x {pr.accelerator}"), justify="right")
    by = {m.name: m for m in result.measurements}
    for name, key in _PLAN_ROWS:
        m = by.get(name)
        if m is None:
            continue
        t.add_row(name, _fmt(m.value), m.unit, f"{m.spread:.0%}", _fmt(m.predicted.value),
                  f"{m.ratio:.2f}" if m.ratio is not None else "-", _fmt(pr.plan_predicted.get(key)))
    console.print(t)
    notes = [n for s in result.benchmarks for n in s.notes]
    if notes:
        console.print(tr("cli.bench.plan_diffs", lang), markup=False, highlight=False)
        for n in notes:
            console.print(f"- {n}", markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(tr("cli.bench.plan_same", lang), markup=False, highlight=False)
    reasons = {m.predicted.reason for m in result.measurements if m.predicted.reason}
    for r in sorted(reasons):
        console.print(f"- {tr('cli.bench.col.predicted', lang)}: {r}", markup=False, highlight=False,
                      soft_wrap=True)


@app.command("compare", help=help_text("help.bench_compare"))
def compare(
    results: list[Path] = typer.Argument(..., help=help_text("help.bench_compare.results")),
    benchmark: str = typer.Option("", help=help_text("help.bench_compare.benchmark")),
    json_out: bool = flag(False, "--json"),
    lang: str = LANG_OPT,
) -> None:
    """Put machines side by side: one column per result, measured (and predicted) values."""
    try:
        from gpuplan.bench.records import load_result

        language = resolve_lang(lang)
        loaded = [load_result(p) for p in results]
    except GpuplanError as exc:
        fail(exc, lang)
    labels = [f"{r.machine.devices[0].name if r.machine.devices else r.machine.hostname} ({p.name})"
              for r, p in zip(loaded, results, strict=True)]
    names: list[str] = []
    table: dict[str, dict[str, Any]] = {}
    for label, r in zip(labels, loaded, strict=True):
        for m in _headline(r):
            if benchmark and m.benchmark != benchmark:
                continue
            if m.name not in table:
                names.append(m.name)
                table[m.name] = {"unit": m.unit}
            table[m.name][label] = {"measured": m.value, "predicted": m.predicted.value, "ratio": m.ratio}
    if json_out:
        print_json({"results": [str(p) for p in results], "columns": labels,
                    "rows": [{"name": n, **table[n]} for n in names]})
        return
    t = Table(title=tr("cli.bench.compare", language), caption=tr("cli.bench.compare_caption", language))
    t.add_column(tr("cli.bench.col.measurement", language), overflow="fold")
    t.add_column(tr("cli.bench.col.unit", language))
    for label in labels:
        t.add_column(label, justify="right")
    for n in names:
        row = table[n]
        cells = []
        for label in labels:
            c = row.get(label)
            cells.append("-" if c is None else _fmt(c["measured"]) + (
                f" ({_fmt(c['predicted'])})" if c["predicted"] is not None else ""))
        t.add_row(n, row["unit"], *cells)
    console.print(t)


def calibrate_cmd(
    result: Path = typer.Argument(..., help=help_text("help.calibrate.result")),
    accelerator: str = typer.Option(None, help=help_text("help.calibrate.accelerator")),
    calibration_dir: Path = typer.Option(None, "--dir", help=help_text("help.calibrate.calibration_dir")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help=help_text("help.common.catalog_dir")),
    json_out: bool = flag(False, "--json"),
    lang: str = LANG_OPT,
) -> None:
    """Write measured efficiencies of RESULT as calibration terms that later estimates for that part use."""
    try:
        language = resolve_lang(lang)
        from gpuplan.bench.calibrate import calibration_from_result, write_calibration
        from gpuplan.bench.records import load_result
        from gpuplan.hardware import load_catalog

        res = load_result(result)
        cf = calibration_from_result(res, load_catalog(catalog_dir or ()), accelerator=accelerator,
                                     result_path=str(result))
        path = write_calibration(cf, calibration_dir)
    except GpuplanError as exc:
        fail(exc, lang)
    if json_out:
        print_json({"written": str(path), **cf.model_dump(mode="json")})
        return
    t = Table(title=tr("cli.calibrate.title", language, acc=cf.accelerator, path=str(path)))
    for col in CALIBRATE_COLS:
        t.add_column(tr(f"cli.calibrate.col.{col}", language), overflow="fold")
    for name, term in cf.terms.items():
        t.add_row(name, f"{term.value:g}", tr("cli.calibrate.yes", language), term.source)
    for name, fig in cf.recorded.items():
        t.add_row(name, f"{fig.value:g}", tr("cli.calibrate.recorded", language), fig.source)
    console.print(t)
