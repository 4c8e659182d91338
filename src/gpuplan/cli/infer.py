"""`gpuplan estimate infer`: latency, throughput and memory of one fixed serving deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.cli.common import LANG_OPT, console, fail, flag, note, positives, print_json
from gpuplan.cli.train import estimate_app
from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.infer_estimate import Instance, estimate_inference
from gpuplan.estimate.infer_step import node_devices
from gpuplan.estimate.links import Link
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.hardware.query import alias_note
from gpuplan.i18n import help_text, resolve_lang, tr
from gpuplan.render.trust_text import band_num, trust_lines
from gpuplan.search.cluster import cluster_hardware, usual_network
from gpuplan.search.estimate_trust import serving_estimate_trust
from gpuplan.workload.engines import default_engine, engine
from gpuplan.workload.presets import load_model

__all__ = ["FIGURES", "estimate_infer"]

# row labels: cli.einfer.<name>
FIGURES = ("ttft", "tpot", "e2e", "out_tokens_s", "out_tokens_s_dev", "requests_s", "in_flight", "max_batch",
           "memory", "bound")

Weights = Literal["bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4"]
KV = Literal["bf16", "fp16", "fp8", "int8", "nvfp4"]


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


@estimate_app.command("infer", help=help_text("help.estimate_infer"))
def estimate_infer(
    model: str = typer.Option(..., "--model", "-m", help=help_text("help.common.model")),
    accelerator: str = typer.Option(..., help=help_text("help.common.accelerator")),
    num_accels: int = typer.Option(None, help=help_text("help.estimate_infer.num_accels")),
    tp: int = typer.Option(None, help=help_text("help.estimate_infer.tp")),
    pp: int = typer.Option(1, help=help_text("help.estimate_infer.pp")),
    ep: int = typer.Option(1, help=help_text("help.estimate_infer.ep")),
    engine_id: str = typer.Option(None, "--engine", help=help_text("help.estimate_infer.engine_id")),
    weights: Weights = typer.Option("bf16", help=help_text("help.estimate_infer.weights")),
    kv_dtype: KV = typer.Option(None, "--kv-dtype", help=help_text("help.estimate_infer.kv_dtype")),
    input_len: int = typer.Option(..., help=help_text("help.estimate_infer.input_len")),
    output_len: int = typer.Option(..., help=help_text("help.estimate_infer.output_len")),
    batch: int = typer.Option(None, help=help_text("help.estimate_infer.batch")),
    qps: float = typer.Option(None, help=help_text("help.estimate_infer.qps")),
    num_requests: int = typer.Option(2000, help=help_text("help.estimate_infer.num_requests")),
    instance: Instance = typer.Option("colocated", help=help_text("help.estimate_infer.instance")),
    draft_tokens: int = typer.Option(0, min=0, help=help_text("help.estimate_infer.draft_tokens")),
    attention_fp8: bool = flag(False, "--attention-fp8", help=help_text("help.estimate_infer.attention_fp8")),
    network: str = typer.Option(None, help=help_text("help.estimate_infer.network")),
    term: list[str] = typer.Option(None, help=help_text("help.estimate_infer.term")),
    setting: list[str] = typer.Option(None, help=help_text("help.estimate_infer.setting")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help=help_text("help.common.catalog_dir")),
    json_out: bool = flag(False, "--json"),
    lang: str = LANG_OPT,
) -> None:
    """TTFT, TPOT, e2e latency, throughput and memory of one deployment (without --batch/--qps: offline)."""
    try:
        language = resolve_lang(lang)
        positives(language, ("num-accels", num_accels, True), ("tp", tp, True), ("pp", pp, True), ("ep", ep, True),
                  ("input-len", input_len, True), ("output-len", output_len, True), ("batch", batch, True),
                  ("qps", qps, False), ("num-requests", num_requests, True))
        spec = load_model(model)
        cat = load_catalog(catalog_dir or ())
        acc = cat.accelerator(accelerator)
        engine_why = None
        if engine_id is None:  # the engine teams on the part's stack serve with (engines.yaml stack_default_engines)
            engine_id, engine_why = default_engine(acc)
        prof = engine(engine_id, terms=_terms(term), settings=_settings(setting))
        est = estimate_inference(spec, accelerator=acc, engine=prof, input_len=input_len, output_len=output_len,
                                 num_accels=num_accels, tp=tp, pp=pp, ep=ep, weights=weights, kv_dtype=kv_dtype,
                                 batch=batch, qps=qps, num_requests=num_requests, catalog=cat, instance=instance,
                                 draft_tokens=draft_tokens, attention_fp8=attention_fp8,
                                 scale_out=_scale_out(cat, acc.id, ep * pp, network))
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    note(alias_note(cat, accelerator, language))
    d = est.to_json()
    if engine_why is not None:
        d["assumptions"]["engine_default"] = {"engine": engine_id, "stack": acc.software_stack, "source": engine_why}
    d.update(serving_estimate_trust(  # how sure: the confidence and 80% bands a serving plan carries
        d, accelerator=acc.id, engine=engine_id, engine_overridden=bool(term), moe=spec.moe is not None,
        devices_per_replica=est.num_accels // est.replicas))
    if json_out:
        print_json(d)
        return
    if engine_why is not None and engine_id != default_engine(None)[0]:  # named when the part's stack chose it
        note(tr("cli.einfer.engine_default", language, engine=engine_id, stack=acc.software_stack,
                source=engine_why))
    _table(d, language)


def _scale_out(cat: Catalog, accelerator: str, group: int, network: str | None) -> Link | None:
    """The network link of one device when an expert-parallel group of `group` devices spans nodes: `--network`,
    else the fabric of the part's catalog server (search.cluster.usual_network)."""
    if group <= node_devices(cat.accelerator(accelerator)) and network is None:
        return None
    net = network or usual_network(cat, accelerator)[0]
    return cluster_hardware(cat, accelerator, net).inter()


def _ms(v: Any, bands: dict[str, list[float]], name: str) -> str:
    """A latency in ms with its 80% band: a fixed batch's value, or p50 / p90 / p99 with the p99's band."""
    if isinstance(v, dict):
        p99 = band_num(v["p99"], bands.get(f"{name}.p99"), ",.1f", 1e3)
        return f"p50 {v['p50'] * 1e3:,.1f} / p90 {v['p90'] * 1e3:,.1f} / p99 {p99} ms"
    return band_num(float(v), bands.get(name), ",.1f", 1e3) + " ms"


def _step_text(step: dict[str, Any], lang: str) -> str:
    """What the decode step waits on: the largest of compute, memory, communication and overhead, with its share,
    and the roofline side of the linear layers (`bound`)."""
    if not step.get("dominant"):  # simulated under a request rate: steps vary, no single decode step
        return "-"
    dom = str(step["dominant"])
    share = float((step.get("shares") or {}).get(dom, 0.0))
    return tr("cli.einfer.step_value", lang, what=tr(f"cli.einfer.part.{dom}", lang), share=share,
              bound=tr(f"cli.einfer.part.{step.get('bound', 'memory')}", lang))


def _table(d: dict[str, Any], lang: str = "en") -> None:
    a = d["assumptions"]
    bands = d.get("band") or {}
    lay = d["layout"]
    t = Table(title=tr("cli.einfer.title", lang, model=a["model"], devices=d["num_accels"], acc=a["accelerator"],
                       engine=a["engine"], weights=a["weights"], kv=a["kv_dtype"],
                       layout=f"tp{lay['tp']} pp{lay['pp']} ep{lay['ep']}", replicas=d["replicas"]),
              caption=tr("cli.einfer.caption", lang, scenario=d["scenario"], input=a["input_len"],
                         output=a["output_len"]))
    t.add_column(tr("cli.est.figure", lang))
    t.add_column(tr("cli.est.value", lang), justify="right")
    rows = [
        ("ttft", _ms(d["ttft_s"], bands, "ttft_s")),
        ("tpot", _ms(d["tpot_s"], bands, "tpot_s")),
        ("e2e", _ms(d["e2e_s"], bands, "e2e_s")),
        ("out_tokens_s", band_num(d["output_tokens_per_s"], bands.get("output_tokens_per_s"), ",.0f")),
        ("out_tokens_s_dev", band_num(d["output_tokens_per_s_per_device"],
                                      bands.get("output_tokens_per_s_per_device"), ",.0f")),
        ("requests_s", band_num(d["requests_per_s"], bands.get("requests_per_s"), ",.2f")),
        ("in_flight", str(d["batch_per_replica"])),
        ("max_batch", str(d["max_batch_fits"])),
        ("memory", tr("cli.einfer.memory_value", lang, gib=d["memory"]["total_bytes"] / 2**30,
                      device=d["memory"]["device_memory_gib"])),
        ("bound", _step_text(d["decode_step"], lang)),
    ]
    assert tuple(k for k, _ in rows) == FIGURES
    for k, v in rows:
        t.add_row(tr(f"cli.einfer.{k}", lang), v)
    console.print(t)
    for line in trust_lines(d, lang):  # how sure, and the classes the bands come from
        console.print(line, highlight=False)
    for w in a.get("warnings", []):
        console.print(f"[yellow]{tr('cli.warning', lang)}[/] {w}", highlight=False)
    for o in a.get("terms_outside_literature", []):  # a --term value no published kernel reaches
        lo, hi = o["literature_range"]
        console.print(f"[yellow]{tr('cli.warning', lang)}[/] " + tr(
            "cli.einfer.term_outside_literature", lang, term=o["term"], value=o["value"],
            range=f"{'-' if lo is None else f'{lo:g}'} .. {'-' if hi is None else f'{hi:g}'}",
            source=o["literature_range_source"]), highlight=False)
