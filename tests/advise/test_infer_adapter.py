"""The inference adapter and report: a `plan infer --json` result -> PlanFacts, findings, report document."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from gpuplan.advise import advise
from gpuplan.advise.adapt_infer import inference_facts
from gpuplan.advise.report_infer import inference_report, is_infer_run
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.render.report_io import render_report
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.presets import load_model


@cache
def catalog() -> Catalog:
    return load_catalog(())


@cache
def run(acc: str) -> dict[str, Any]:
    """What `gpuplan plan infer --json` prints, for one accelerator."""
    spec = load_model("llama3-8b")
    load = InferLoad(qps=20.0, input_len=parse_length_dist(1024), output_len=parse_length_dist(256))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), catalog(),
                         InferConstraints(accelerators=(acc,)))
    return {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
            "engine": "vllm", "candidates_evaluated": res.candidates_evaluated, "simulated": res.simulated,
            "plans": res.plans, "rejected": res.rejected, "hardware_considered": res.hardware_considered,
            "best_unloaded": res.best_unloaded, "terms": res.terms}


def test_facts_map_the_inference_plan() -> None:
    r = run("h100-nvl-94gb")
    assert is_infer_run(r)
    p = r["plans"][0]
    f = inference_facts(r, p, catalog=catalog())
    assert f.kind == "infer" and f.tokens_per_s == pytest.approx(20.0 * (1024 + 256))
    inst = catalog().instances[p["instance"]]
    billed = max(p["devices"], p["instances"] * int(inst.accelerator_count))
    assert sum(v for v in f.price_usd_per_device_hour.values() if v) * billed == pytest.approx(p["cost_usd_per_hour"])
    assert f.replica_devices == p["layout"]["tp"] * p["layout"]["pp"] and not f.multi_node
    assert f.server is not None and f.server.id == inst.server


def test_serving_findings() -> None:
    f = inference_facts(run("h100-nvl-94gb"), run("h100-nvl-94gb")["plans"][0], catalog=catalog())
    found = {x.id: x for x in advise(f)}
    assert "stage.serve" in found and "ecosystem.porting" not in found
    assert not any(k.startswith(("net.", "storage.", "reliability.checkpoint")) for k in found)
    assert ("precision.quantized" in found) == (f.precision in ("int8", "int4", "fp8"))
    assert "precision.quantized" not in {x.id for x in advise(replace(f, precision="bf16"))}
    assert "precision.quantized" in {x.id for x in advise(replace(f, precision="int4"))}
    asc = inference_facts(run("ascend-910b3"), run("ascend-910b3")["plans"][0], catalog=catalog())
    assert "ecosystem.porting" in {x.id for x in advise(asc)}


def test_inference_report_document_and_rendering() -> None:
    doc = inference_report(run("ascend-910b3"), catalog())
    assert doc["kind"] == "infer" and doc["recommendation"]["accelerator"] == "ascend-910b3"
    assert doc["tco"]["usd_per_device_hour"] and doc["findings"]
    assert {"ttft_s", "tpot_s", "e2e_s"} == set(doc["latency"])
    page = render_report(doc, "html", "en")
    assert all(f'id="{c}"' in page for c in ("chart-cost-latency", "chart-latency", "chart-tco"))
    md = render_report(doc, "md", "zh")
    assert md.startswith("# 推理硬件规划") and "p99 TTFT" in md
