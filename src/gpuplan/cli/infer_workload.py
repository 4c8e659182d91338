"""`gpuplan plan infer --workload FILE.yaml`: several models, each planned at its own SLO, and one fleet of them
(service/infer_workload.py). The JSON is `{"workload": ...}`; the table lists each model's fleet and the total."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.table import Table

from gpuplan.cli.common import console, print_json
from gpuplan.errors import InputError
from gpuplan.i18n import tr
from gpuplan.service.infer_inputs import user_text_file
from gpuplan.units import sig
from gpuplan.workload.serving_mix import MAX_WORKLOAD_BYTES, ServingMix, read_workload

__all__ = ["check_workload_options", "print_workload", "read_workload_file"]


def check_workload_options(given: Mapping[str, object]) -> None:
    """The options a workload file replaces (its models carry their own): each one given is an error naming it."""
    for name, value in given.items():
        if value not in (None, False, 0, 0.0, [], ()):
            raise InputError(field=name, value=str(value), allowed="left out with --workload (the file gives each "
                             "model, its rate, lengths and SLO)", hint=f"drop --{name}, or drop --workload")


def read_workload_file(path: Path) -> ServingMix:
    """The workload file at `path`, read and validated (InputError naming the field otherwise)."""
    text = user_text_file(path, field="workload", kind="YAML", max_bytes=MAX_WORKLOAD_BYTES)
    if len(text.encode("utf-8")) > MAX_WORKLOAD_BYTES:
        raise InputError(field="workload", value=str(path), allowed=f"a file of at most {MAX_WORKLOAD_BYTES} bytes")
    return read_workload(text, label=path.name)


def _fleet(p: Mapping[str, Any]) -> str:
    lay = p["layout"]
    shape = f"tp{lay['tp']}" + (f" ep{lay['ep']}" if int(lay.get("ep", 1)) > 1 else "") + (
        f" pp{lay['pp']}" if int(lay.get("pp", 1)) > 1 else "")
    return f"{p['accelerator']} {shape} {p['weights']}"


def print_workload(doc: Mapping[str, Any], lang: str, *, json_out: bool) -> None:
    """The answer: JSON (`{"workload": doc}`), or the table and the lines on shared instances and packing."""
    if json_out:
        print_json({"workload": dict(doc)})
        return
    t = Table(title=tr("cli.pinfer.workload.title", lang, n=len(doc["models"]), file=doc["file"]),
              caption=tr("cli.pinfer.workload.caption", lang, engine=doc["engine"],
                         router=tr(f"cli.pinfer.router.{doc['router']}", lang)))
    for head in (tr("cli.pinfer.workload.col.model", lang), tr("cli.pinfer.workload.col.load", lang),
                 tr("cli.pinfer.workload.col.slo", lang), tr("cli.pinfer.workload.col.fleet", lang),
                 tr("cli.pinfer.workload.col.instances", lang), tr("cli.pinfer.workload.col.usd_h", lang),
                 tr("cli.pinfer.workload.col.util", lang), tr("cli.pinfer.workload.col.latency", lang)):
        t.add_column(head, overflow="fold")
    for a in doc["models"]:
        rec, load, slo = a["recommended"], a["load"], a["slo"]
        t.add_row(a["name"] if a["name"] == a["model_id"] else f"{a['name']} ({a['model_id']})",
                  tr("cli.pinfer.workload.load", lang, qps=load["qps"], input=load["input_len"],
                     output=load["output_len"]),
                  f"{slo['ttft_p99_s']:g} s | {slo['tpot_p99_s'] * 1e3:g} ms",
                  tr("cli.pinfer.workload.fleet", lang, replicas=rec["replicas"], fleet=_fleet(rec)),
                  f"{rec['instances']} x {rec['instance']}", f"{rec['cost_usd_per_hour']:,.2f}",
                  f"{rec['utilization']:.0%}",
                  f"{rec['ttft_s']['p99']:.2f} s | {rec['tpot_s']['p99'] * 1e3:.0f} ms")
    t.add_row(tr("cli.pinfer.workload.total", lang), "", "", "", "", f"{doc['separate_usd_per_hour']:,.2f}", "", "")
    console.print(t)
    for s in doc["same_instance"]:
        console.print(tr("cli.pinfer.workload.same_instance", lang, models=", ".join(s["models"]),
                         instance=s["instance"]), highlight=False)
    pk = doc["packing"]
    if pk is not None:
        fleets = tr("trust.list_sep", lang).join(
            tr("cli.pinfer.workload.packed_fleet", lang, model=f["model"], replicas=f["replicas"], fleet=_fleet(
                {**f, "accelerator": pk["accelerator"]})) for f in pk["fleets"])
        console.print(tr("cli.pinfer.workload.packing", lang, fleets=fleets, instance=pk["instance"],
                         apart=pk["instances_apart"], packed=pk["instances_packed"], used=pk["devices_packed"],
                         slots=pk["instances_packed"] * pk["devices_per_instance"],
                         usd=pk["usd_per_hour_total"], saving=pk["saving_usd_per_hour"],
                         separate=doc["separate_usd_per_hour"]), highlight=False)
    elif doc["shared"]:
        s = doc["shared"][0]
        console.print(tr("cli.pinfer.workload.no_packing", lang, models=", ".join(s["models"]),
                         instance=s["instance"], apart=s["instances_apart"], packed=s["instances_packed"],
                         usd=sig(s["usd_per_hour_total"]), separate=sig(doc["separate_usd_per_hour"])),
                      highlight=False)
    else:
        console.print(tr("cli.pinfer.workload.no_shared", lang), highlight=False)
    console.print(tr("cli.pinfer.workload.assumption", lang), highlight=False)
