"""`gpuplan model`: list presets and show one model's architecture and parameter counts."""

from __future__ import annotations

import typer
from rich.table import Table

from gpuplan.cli.common import LANG_OPT, console, fail, flag, print_json
from gpuplan.errors import GpuplanError
from gpuplan.estimate.kv_cache import kv_bytes_per_token
from gpuplan.i18n import help_text, resolve_lang, tr
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import list_presets, load_model

LIST_COLS = ("id", "name", "family", "attention", "total", "active")  # cli.model.col.<name>

app = typer.Typer(help=help_text("help.group.model"), no_args_is_help=True)


@app.command("list", help=help_text("help.model_list"))
def list_cmd(
    json_out: bool = flag(False, "--json", help=help_text("help.model_list.json_out")), lang: str = LANG_OPT,
) -> None:
    """List the built-in model presets."""
    try:
        language = resolve_lang(lang)
    except GpuplanError as exc:
        fail(exc, lang)
    rows: list[dict[str, str | int]] = []
    for p in list_presets():
        c = count_params(p.spec)
        rows.append({"id": p.id, "name": p.spec.name, "family": p.spec.family,
                     "attention": p.spec.attention_kind, "params_total": c.total, "params_active": c.active})
    if json_out:
        print_json(rows)
        return
    t = Table(title=tr("cli.model.presets", language))
    for col in LIST_COLS:
        t.add_column(tr(f"cli.model.col.{col}", language))
    for r in rows:
        t.add_row(str(r["id"]), str(r["name"]), str(r["family"]), str(r["attention"]),
                  f"{int(r['params_total']) / 1e9:.2f}", f"{int(r['params_active']) / 1e9:.2f}")
    console.print(t)


@app.command("show", help=help_text("help.model_show"))
def show_cmd(
    model: str = typer.Argument(..., help=help_text("help.model_show.model")),
    json_out: bool = flag(False, "--json", help=help_text("help.model_show.json_out")),
    lang: str = LANG_OPT,
) -> None:
    """Show a model's architecture and parameter counts by part."""
    try:
        language = resolve_lang(lang)
        spec = load_model(model)
    except GpuplanError as exc:
        fail(exc, lang)
    c = count_params(spec)
    if json_out:
        print_json({"spec": spec.model_dump(mode="json"), "params_total": c.total,
                    "params_active": c.active, "params_by_part": c.by_part(),
                    "kv_bytes_per_token_bf16": round(kv_bytes_per_token(spec, "bf16"))})
        return
    arch = Table(title=tr("cli.model.arch", language, model=spec.name, family=spec.family,
                          source=spec.source or "config"), show_header=False)
    arch.add_column("field")
    arch.add_column("value")
    for k, v in spec.model_dump().items():
        if v is not None and k not in ("name", "source"):
            arch.add_row(k, str(v))
    arch.add_row(tr("cli.model.attention_kind", language), spec.attention_kind)
    arch.add_row(tr("cli.model.kv_per_token", language),
                 tr("cli.model.bytes", language, n=f"{kv_bytes_per_token(spec, 'bf16'):,.0f}"))
    console.print(arch)
    parts = Table(title=tr("cli.model.parts", language))
    parts.add_column(tr("report.col.part", language))
    parts.add_column(tr("cli.model.col.params", language), justify="right")
    parts.add_column(tr("cli.mem.col.share", language), justify="right")
    for k, v in c.by_part().items():
        if v:
            parts.add_row(k, f"{v:,}", f"{v / c.total:.1%}")
    parts.add_row(tr("cli.model.total", language), f"{c.total:,}", "100%")
    parts.add_row(tr("cli.model.active", language), f"{c.active:,}", f"{c.active / c.total:.1%}")
    console.print(parts)
