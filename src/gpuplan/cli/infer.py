"""`gpuplan estimate infer`: latency, throughput and memory of one fixed serving deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.cli.common import console, fail, print_json
from gpuplan.cli.train import estimate_app
from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.infer_estimate import InferenceEstimate, estimate_inference
from gpuplan.hardware import load_catalog
from gpuplan.workload.engines import engine
from gpuplan.workload.presets import load_model

__all__ = ["estimate_infer"]

Weights = Literal["bf16", "fp16", "fp8", "int8", "int4"]
KV = Literal["bf16", "fp16", "fp8", "int8"]


def _terms(items: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(field="term", value=item, allowed="NAME=NUMBER, e.g. gemm_efficiency=0.6") from None
    return out


def _settings(items: list[str] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not value.strip():
            raise InputError(field="setting", value=item, allowed="NAME=VALUE, e.g. max_num_seqs=1024")
        out[name.strip()] = value.strip()  # validated (and converted) by the engine profile
    return out


@estimate_app.command("infer")
def estimate_infer(
    model: str = typer.Option(..., "--model", "-m", help="preset id or config.json"),
    accelerator: str = typer.Option(..., help="catalog id or alias (gpuplan catalog list accelerators)"),
    num_accels: int = typer.Option(None, help="devices in the deployment (default tp x pp: one replica)"),
    tp: int = typer.Option(None, help="tensor-parallel degree (default: the smallest that fits)"),
    pp: int = typer.Option(1, help="pipeline stages"),
    ep: int = typer.Option(1, help="expert-parallel degree inside the tensor-parallel group (MoE)"),
    engine_id: str = typer.Option("vllm", "--engine", help="vllm, sglang, trtllm, lmdeploy, mindie or generic"),
    weights: Weights = typer.Option("bf16", help="weight format"),
    kv_dtype: KV = typer.Option(None, "--kv-dtype", help="KV-cache dtype (default: 16-bit weights' dtype, else bf16)"),
    input_len: int = typer.Option(..., help="prompt tokens per request"),
    output_len: int = typer.Option(..., help="output tokens per request"),
    batch: int = typer.Option(None, help="requests started together per replica (fixed-batch benchmark)"),
    qps: float = typer.Option(None, help="Poisson request rate over the deployment (simulated: p50/p90/p99)"),
    num_requests: int = typer.Option(2000, help="requests simulated with --qps"),
    term: list[str] = typer.Option(None, help="override an engine term, NAME=VALUE (e.g. gemm_efficiency=0.6)"),
    setting: list[str] = typer.Option(None, help="override an engine setting, NAME=VALUE (e.g. max_num_seqs=1024)"),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help="extra catalog folder(s)"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """TTFT, TPOT, e2e latency, throughput and memory of one deployment (without --batch/--qps: offline)."""
    try:
        spec = load_model(model)
        cat = load_catalog(catalog_dir or ())
        acc = cat.accelerator(accelerator)
        prof = engine(engine_id, terms=_terms(term), settings=_settings(setting))
        est = estimate_inference(spec, accelerator=acc, engine=prof, input_len=input_len, output_len=output_len,
                                 num_accels=num_accels, tp=tp, pp=pp, ep=ep, weights=weights, kv_dtype=kv_dtype,
                                 batch=batch, qps=qps, num_requests=num_requests, catalog=cat)
    except (GpuplanError, ValidationError) as exc:
        fail(exc)
    if json_out:
        print_json(est.to_json())
        return
    _table(est)


def _ms(v: Any) -> str:
    if isinstance(v, dict):
        return f"p50 {v['p50'] * 1e3:,.1f} / p90 {v['p90'] * 1e3:,.1f} / p99 {v['p99'] * 1e3:,.1f} ms"
    return f"{float(v) * 1e3:,.1f} ms"


def _table(est: InferenceEstimate) -> None:
    d = est.to_json()
    a = d["assumptions"]
    lay = d["layout"]
    t = Table(title=f"{a['model']} on {d['num_accels']} x {a['accelerator']} ({a['engine']}, {a['weights']} weights, "
                    f"{a['kv_dtype']} KV, tp{lay['tp']} pp{lay['pp']} ep{lay['ep']}, {d['replicas']} replica(s))",
              caption=f"{d['scenario']}: input {a['input_len']}, output {a['output_len']} tokens; all figures "
                      "estimated (per-step roofline model, docs/inference.md)")
    t.add_column("figure")
    t.add_column("value", justify="right")
    rows = [
        ("time to first token", _ms(d["ttft_s"])),
        ("time per output token", _ms(d["tpot_s"])),
        ("end-to-end latency", _ms(d["e2e_s"])),
        ("output tokens/s", f"{d['output_tokens_per_s']:,.0f}"),
        ("output tokens/s per device", f"{d['output_tokens_per_s_per_device']:,.0f}"),
        ("requests/s", f"{d['requests_per_s']:,.2f}"),
        ("sequences in flight per replica", str(d["batch_per_replica"])),
        ("max batch that fits per replica", str(d["max_batch_fits"])),
        ("memory per device", f"{d['memory']['total_bytes'] / 2**30:,.1f} GiB of {d['memory']['device_memory_gib']:g}"),
        ("decode step bound", str(d["decode_step"].get("bound", "-"))),
    ]
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
    for w in a.get("warnings", []):
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
