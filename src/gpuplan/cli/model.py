"""`gpuplan model`: list presets and show one model's architecture and parameter counts."""

from __future__ import annotations

import typer
from rich.table import Table

from gpuplan.cli.common import console, fail, print_json
from gpuplan.errors import GpuplanError
from gpuplan.estimate.kv_cache import kv_bytes_per_token
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import list_presets, load_model

app = typer.Typer(help="Model presets and Hugging Face config.json import.", no_args_is_help=True)


@app.command("list")
def list_cmd(json_out: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """List the built-in model presets."""
    rows: list[dict[str, str | int]] = []
    for p in list_presets():
        c = count_params(p.spec)
        rows.append({"id": p.id, "name": p.spec.name, "family": p.spec.family,
                     "attention": p.spec.attention_kind, "params_total": c.total, "params_active": c.active})
    if json_out:
        print_json(rows)
        return
    t = Table(title="Model presets")
    for col in ("id", "name", "family", "attention", "total (B)", "active (B)"):
        t.add_column(col)
    for r in rows:
        t.add_row(str(r["id"]), str(r["name"]), str(r["family"]), str(r["attention"]),
                  f"{int(r['params_total']) / 1e9:.2f}", f"{int(r['params_active']) / 1e9:.2f}")
    console.print(t)


@app.command("show")
def show_cmd(
    model: str = typer.Argument(..., help="preset id or path to a config.json"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Show a model's architecture and parameter counts by part."""
    try:
        spec = load_model(model)
    except GpuplanError as exc:
        fail(exc)
    c = count_params(spec)
    if json_out:
        print_json({"spec": spec.model_dump(mode="json"), "params_total": c.total,
                    "params_active": c.active, "params_by_part": c.by_part(),
                    "kv_bytes_per_token_bf16": round(kv_bytes_per_token(spec, "bf16"))})
        return
    arch = Table(title=f"{spec.name} ({spec.family}) - from {spec.source or 'config'}", show_header=False)
    arch.add_column("field")
    arch.add_column("value")
    for k, v in spec.model_dump().items():
        if v is not None and k not in ("name", "source"):
            arch.add_row(k, str(v))
    arch.add_row("attention kind", spec.attention_kind)
    arch.add_row("KV cache per token (bf16, all layers)", f"{kv_bytes_per_token(spec, 'bf16'):,.0f} bytes")
    console.print(arch)
    parts = Table(title="Parameters by part (exact count)")
    parts.add_column("part")
    parts.add_column("params", justify="right")
    parts.add_column("share", justify="right")
    for k, v in c.by_part().items():
        if v:
            parts.add_row(k, f"{v:,}", f"{v / c.total:.1%}")
    parts.add_row("total", f"{c.total:,}", "100%")
    parts.add_row("active per token", f"{c.active:,}", f"{c.active / c.total:.1%}")
    console.print(parts)
