"""The inference adapter and report: a `plan infer --json` result -> PlanFacts, findings, report document."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from gpuplan.advise import advise
from gpuplan.advise.adapt_infer import inference_facts
from gpuplan.advise.report_infer import inference_report, is_infer_run
from gpuplan.hardware import Catalog, PricingPolicy, load_catalog
from gpuplan.render.report_io import render_report
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.presets import load_model


@cache
def catalog() -> Catalog:
    return load_catalog(())


def cat_for(acc: str) -> Catalog:
    """The 910B3's only rent is a distressed-capacity price (catalog research round 2): asked for here."""
    return catalog().with_pricing(PricingPolicy(use_distressed=True)) if acc == "ascend-910b3" else catalog()


# vllm-ascend decodes an 8B model at about 47 ms per token even at 4 concurrent requests (GPUStack
# performance lab; engines.yaml hardware_terms), so the Ascend run asks for a 100 ms TPOT.
TPOT_SLO = {"ascend-910b3": 0.1}


@cache
def run(acc: str) -> dict[str, Any]:
    """What `gpuplan plan infer --json` prints, for one accelerator."""
    spec = load_model("llama3-8b")
    load = InferLoad(qps=20.0, input_len=parse_length_dist(1024), output_len=parse_length_dist(256))
    tpot = TPOT_SLO.get(acc, 0.05)
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=tpot), cat_for(acc),
                         InferConstraints(accelerators=(acc,)))
    return {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": tpot},
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
    asc = inference_facts(run("ascend-910b3"), run("ascend-910b3")["plans"][0], catalog=cat_for("ascend-910b3"))
    assert "ecosystem.porting" in {x.id for x in advise(asc)}


def test_inference_report_document_and_rendering() -> None:
    doc = inference_report(run("ascend-910b3"), cat_for("ascend-910b3"))
    assert doc["kind"] == "infer" and doc["recommendation"]["accelerator"] == "ascend-910b3"
    assert doc["tco"]["usd_per_device_hour"] and doc["findings"]
    assert {"ttft_s", "tpot_s", "e2e_s"} == set(doc["latency"])
    page = render_report(doc, "html", "en")
    assert all(f'id="{c}"' in page for c in ("chart-cost-latency", "chart-latency", "chart-memory", "chart-tco"))
    md = render_report(doc, "md", "zh")
    assert md.startswith("# 推理硬件规划") and "p99 TTFT" in md


def _with_growth(g: dict[str, Any] | None) -> Any:
    f = inference_facts(run("h100-nvl-94gb"), run("h100-nvl-94gb")["plans"][0], catalog=catalog())
    return replace(f, serving={**f.serving, **({"growth": g} if g else {})})


def test_serve_growth_rule_triggers_and_stays_quiet() -> None:
    assert not any(x.id.startswith("growth.") for x in advise(_with_growth(None)))  # not computed: silent
    now = float(_with_growth(None).serving["usd_per_hour"])
    f = _with_growth({"factor": 2.0, "qps": 40.0, "holds": False, "devices": 6, "replicas": 6,
                      "accelerator": "h100-nvl-94gb", "usd_per_hour": 1.5 * now, "utilization": 0.8})
    g = {x.id: x for x in advise(f)}["growth.serve"]
    assert g.severity == "warn" and "6 x h100-nvl-94gb" in g.message["en"] and "6 张" in g.message["zh"]
    assert "+50%" in g.message["en"] and "+50%" in g.message["zh"]
    spare = {x.id: x for x in advise(_with_growth({"factor": 2.0, "qps": 40.0, "holds": False, "devices": 2,
                                                   "replicas": 2, "accelerator": "h100-nvl-94gb",
                                                   "usd_per_hour": now, "utilization": 0.8}))}
    assert "growth.serve" not in spare and spare["growth.serve_spare"].severity == "info"
    assert {fig.name for fig in g.figures} >= {"grown_qps", "grown_devices", "grown_usd_per_hour", "growth_factor"}
    ok = {x.id: x for x in advise(_with_growth({"factor": 2.0, "qps": 40.0, "holds": True, "devices": 1,
                                                "replicas": 1, "accelerator": "h100-nvl-94gb",
                                                "usd_per_hour": 1.0, "utilization": 0.5}))}
    assert "growth.serve" not in ok and ok["growth.serve_ok"].severity == "info"
    none = {x.id for x in advise(_with_growth({"factor": 2.0, "qps": 40.0, "holds": False, "devices": None}))}
    assert "growth.serve_none" in none and "growth.serve" not in none


def test_report_replans_at_twice_the_load() -> None:
    busy = inference_report(run("h100-nvl-94gb"), catalog())  # 20 req/s: the fleet is sized to the load
    g = busy["growth"]
    assert g["factor"] == 2.0 and g["qps"] == pytest.approx(40.0)
    assert g["holds"] is False and g["devices"] > busy["recommendation"]["devices"]
    assert "growth.serve" in {f["id"] for f in busy["findings"]}
    # one replica at a tenth of its capacity: doubling the load still meets the SLO on the same fleet
    spec = load_model("llama3-8b")
    load = InferLoad(qps=0.5, input_len=parse_length_dist(512), output_len=parse_length_dist(128))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), catalog(),
                         InferConstraints(accelerators=("h100-nvl-94gb",)))
    quiet = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
             "engine": "vllm", "plans": res.plans, "rejected": res.rejected, "terms": res.terms}
    doc = inference_report(quiet, catalog())
    assert doc["growth"]["holds"] is True and doc["recommendation"]["replicas"] == 1
    ids = {f["id"] for f in doc["findings"]}
    assert "growth.serve_ok" in ids and "growth.serve" not in ids
    assert "growth.serve" not in {f["id"] for f in inference_report(run("h100-nvl-94gb"), catalog(),
                                                                     growth=False)["findings"]}


def test_inference_memory_breakdown() -> None:
    r = run("h100-nvl-94gb")
    best = r["plans"][0]
    mem = inference_report(r, catalog())["memory"]
    parts = mem["parts_gib"]
    assert set(parts) == {"weights", "kv_cache", "kv_free", "workspace", "other"}
    assert mem["device_memory_gib"] == catalog().accelerator("h100-nvl-94gb").memory_gib
    # the engine preallocates its whole budget: the parts fill it exactly (the KV pool takes what is left)
    assert sum(parts.values()) == pytest.approx(mem["engine_budget_gib"], rel=1e-9)
    assert mem["engine_budget_gib"] == pytest.approx(0.9 * mem["device_memory_gib"])
    # weights: about 8.0e9 params over tp devices at the plan's bytes per parameter
    bpp = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}[best["weights"]]
    assert parts["weights"] == pytest.approx(8.03e9 * bpp / best["layout"]["tp"] / 2**30, rel=0.15)
    pool = parts["kv_cache"] + parts["kv_free"]
    assert parts["kv_cache"] == pytest.approx(pool * best["kv_used_mean_fraction"], rel=1e-9)
    md = render_report(inference_report(r, catalog()), "md", "en")
    assert "## Memory per device" in md and "KV pool reserved" in md and "## Growth headroom" in md


@pytest.mark.parametrize("market", ["cn", "global"])
def test_growth_replan_keeps_the_run_constraints(market: str) -> None:
    from gpuplan.advise.report_infer import serve_growth

    spec = load_model("llama3-8b")
    load = InferLoad(qps=20.0, input_len=parse_length_dist(1024), output_len=parse_length_dist(256))
    cons = InferConstraints(market=market, vendor="NVIDIA")
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), catalog(), cons)
    r = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
         "engine": "vllm", "plans": res.plans, "rejected": res.rejected, "terms": res.terms}
    g = serve_growth(r, res.plans[0], catalog(), factor=2.0, load=load, constraints=cons)
    assert g is not None and g["devices"] is not None
    assert catalog().instances[g["instance"]].market == market
    assert g["accelerator"] == res.plans[0]["accelerator"]


def test_a_serving_fleet_gets_serving_storage_and_power_advice() -> None:
    """Regression: a 36-node DeepSeek-V3 serving fleet was told that "checkpoint writes need 0.0 GB/s" from a
    parallel file system and that "a power event stops the whole run ... for the training rows"."""
    f = inference_facts(run("h100-nvl-94gb"), run("h100-nvl-94gb")["plans"][0], catalog=catalog())
    big = replace(f, devices=288, serving={**f.serving, "replicas": 36}, params_total=671e9, precision="fp8")
    assert big.nodes >= 16
    found = {x.id: x for x in advise(big)}
    assert "storage.parallel_fs" not in found and "reliability.power" not in found
    load = found["storage.model_load"]
    # 36 replicas x 671 GB of fp8 weights from one 2 GB/s server: 36 x 671 / 2 s = 3.4 h
    fig = {g.name: g.value for g in load.figures}
    assert fig["fleet_load_s"] == pytest.approx(36 * 671e9 / 2e9)
    assert "671 GB" in load.message["en"] and "checkpoint" not in load.message["en"]
    assert "every replica" in found["reliability.power_serve"].message["en"]
    assert "训练" not in found["reliability.power_serve"].message["zh"]
    # one replica of an 8B model loads in seconds: nothing to say
    assert "storage.model_load" not in {x.id for x in advise(f)}


def test_every_listed_part_is_checked_for_blocking_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: choose_fleet stopped at the first clear part, so a blocked part listed below it showed no mark
    while one above it did. Renting H800s already in China draws only a warning now (the export rule stops new
    supply), so a rule that also blocks rentals stands in: the shipped note without its `rented` override."""
    from gpuplan.advise.findings import default_thresholds
    from gpuplan.advise.report_infer import choose_fleet
    from strict_rules import block_rentals_too

    block_rentals_too(monkeypatch)

    spec = load_model("llama3-8b")
    load = InferLoad(qps=5.0, input_len=parse_length_dist(512), output_len=parse_length_dist(128))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), catalog(),
                         InferConstraints(market="cn", accelerators=("h20-96gb", "h800-sxm5-80gb", "a800-sxm4-80gb")))
    r = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
         "engine": "vllm", "plans": res.plans}
    parts = {p["accelerator"] for p in res.plans}
    assert parts >= {"h20-96gb", "h800-sxm5-80gb"}
    clear_first = sorted(res.plans, key=lambda p: p["accelerator"] != "h20-96gb")  # the clear part ranked first
    best, blocked = choose_fleet(r, clear_first, catalog(), default_thresholds(), None)
    assert best is not None and best["accelerator"] == "h20-96gb"
    h800 = {f"h800-sxm5-80gb ({p['instance']})" for p in res.plans if p["accelerator"] == "h800-sxm5-80gb"}
    assert h800 and all(blocked.get(k) == "market.export" for k in h800)  # listed per offer


def test_serve_engine_rule_names_a_cheaper_engine_on_the_same_part_and_stays_quiet_below_the_threshold() -> None:
    base = _with_growth(None)
    now = float(base.serving["usd_per_hour"])

    def with_alt(usd_h: float) -> dict[str, Any]:
        alt = {"engine": "mindie", "engine_name": "MindIE (Ascend)", "accelerator": base.accelerator.id,
               "layout": {"tp": 2, "pp": 1, "ep": 1}, "weights": "int8", "replicas": 7, "devices": 14,
               "instances": 2, "instance": "i", "usd_per_hour": usd_h, "ttft_p99_s": 0.8, "tpot_p99_s": 0.136,
               "basis": "re-plan"}
        return {x.id: x for x in advise(replace(base, serving={**base.serving, "what_if_engine": alt}))}

    x = with_alt(0.67 * now)["serve.engine_alternative"]
    assert x.severity == "warn" and "MindIE (Ascend)" in x.message["en"] and "33% less" in x.message["en"]
    assert "--engine mindie" in x.fix["en"] and "便宜 33%" in x.message["zh"]
    assert {f.name for f in x.figures} >= {"engine_devices", "engine_usd_per_hour", "engine_what_if_min_saving"}
    assert "serve.engine_alternative" not in with_alt(0.9 * now)  # 10% is inside the bands: silent


def test_a_per_card_fleet_sizes_its_hosts_per_replica_pod() -> None:
    """A per-card rental serves each replica from its own pod of the replica's cards: host CPU and RAM are sized for
    that pod, not for the provider's 8-card host (regression: four single-card H100 replicas were told to plan
    640-2560 GiB of host RAM per node)."""
    r = run("h100-sxm5-80gb")
    per_card = [p for p in r["plans"] if p.get("per_card")]
    assert per_card, [p["instance"] for p in r["plans"]]
    p = per_card[0]
    f = inference_facts(r, p, catalog=catalog())
    replica = max(p["layout"]["tp"], p["layout"].get("ep", 1)) * p["layout"]["pp"]
    assert f.gpus_per_node == replica
    ram = next(x for x in advise(f) if x.id.startswith("host.ram"))
    node = next(g for g in ram.figures if g.name == "accelerator_memory_per_node")
    assert float(node.value) == pytest.approx(replica * 80 * 1e9 / 2**30, rel=0.1)  # type: ignore[arg-type]


def test_a_quantized_recommendation_says_what_wider_weights_cost_on_its_part() -> None:
    """Buyer check: DeepSeek-V3 at 5 req/s in China was recommended on 32 x H20 with int4 weights, with only a note to
    check quality; the planner keeps the cheapest fleets, all int4 there, so nothing said that the checkpoint's fp8
    needs twice the cards. The report re-plans the part with the wider formats the run allowed and names the fleet."""
    from gpuplan.advise.report_infer import serve_wider

    cat = load_catalog(use_user_dir=False)
    load = InferLoad(qps=5.0, input_len=parse_length_dist("2000", field="input-len"),
                     output_len=parse_length_dist("800", field="output-len"))
    slo = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.08)
    cons = InferConstraints(market="cn", accelerators=("h20-96gb",))
    res = plan_inference(load_model("deepseek-v3"), load, slo, cat, cons)
    best = res.plans[0]
    assert best["weights"] == "int4"
    run_ = {"model": "deepseek-v3", "load": load.to_json(), "slo": {"ttft_p99_s": 3.0, "tpot_p99_s": 0.08},
            "engine": "vllm", "plans": res.plans, "terms": res.terms}
    wide = serve_wider(run_, best, cat, load=load, constraints=cons)
    assert wide is not None and wide["weights"] in ("fp8", "int8", "bf16")
    assert wide["usd_per_hour"] > best["cost_usd_per_hour"] and wide["devices"] > best["devices"]
    direct = plan_inference(load_model("deepseek-v3"), load, slo, cat,
                            InferConstraints(market="cn", accelerators=("h20-96gb",), weights=("bf16", "fp8", "int8")))
    assert wide["usd_per_hour"] == pytest.approx(direct.plans[0]["cost_usd_per_hour"])
    f = inference_facts(run_, best, catalog=cat, wider=wide)
    found = {x.id: x for x in advise(f)}
    assert "precision.quantized_vs" in found and "precision.quantized" not in found
    msg = found["precision.quantized_vs"].message["en"]
    assert f"{wide['devices']} devices at {wide['usd_per_hour']:,.2f} USD/hour" in msg and "h20-96gb" in msg
    assert f"--weights {wide['weights']}" in found["precision.quantized_vs"].fix["zh"]
    # the run allowed int4 only: nothing wider to compare with, the plain note stays
    assert serve_wider(run_, best, cat, load=load, constraints=InferConstraints(market="cn", weights=("int4",))) is None
    none = {x.id for x in advise(inference_facts(run_, best, catalog=cat, wider={"weights": None}))}
    assert "precision.quantized_only" in none


def test_renting_h800s_in_china_draws_a_warning_not_a_block() -> None:
    """The shipped rule: a serving fleet rents, so an H800 fleet in China runs on cards already there."""
    from gpuplan.advise.findings import default_thresholds
    from gpuplan.advise.report_infer import choose_fleet

    spec = load_model("llama3-8b")
    load = InferLoad(qps=5.0, input_len=parse_length_dist(512), output_len=parse_length_dist(128))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), catalog(),
                         InferConstraints(market="cn", accelerators=("h800-sxm5-80gb",)))
    r = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
         "engine": "vllm", "plans": res.plans}
    best, blocked = choose_fleet(r, res.plans, catalog(), default_thresholds(), None)
    assert best is not None and best["accelerator"] == "h800-sxm5-80gb" and blocked == {}
    found = {x.id: x for x in advise(inference_facts(r, best, catalog=catalog()))}
    assert found["market.export"].severity == "warn"


def test_a_vm_slice_is_a_node_of_its_own_cards_cpus_and_ram() -> None:
    """Regression: a plan on Hyperstack's 1 x B200 VM was judged as a whole DGX B200 (8 cards per node, the
    host's CPU and RAM): its host findings sized an 8-device node. The node is the instance: 1 card, its 31 vCPUs
    and 256 GiB."""
    cat = catalog()
    vm = cat.instance("hyperstack-b200")
    assert vm.accelerator_count == 1 and cat.server(vm.server).accelerators_per_node == 8
    sv = cat.rented_server(vm, 1)
    assert (sv.cpu_cores, sv.ram_gib, sv.local_nvme_tb) == (31, 256.0, None)
    spec = load_model("llama3-8b")
    load = InferLoad(qps=2.0, input_len=parse_length_dist(1024), output_len=parse_length_dist(256))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), cat,
                         InferConstraints(accelerators=("b200-sxm-180gb",), provider="hyperstack"))
    p = next(x for x in res.plans if x["instance"] == "hyperstack-b200")
    r = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
         "engine": "vllm", "plans": res.plans, "terms": res.terms}
    f = inference_facts(r, p, catalog=cat)
    assert f.gpus_per_node == 1 and f.server is not None and f.server.ram_gib == 256.0
    ram = {x.id: x for x in advise(f)}
    # 256 GiB of host RAM against one 180 GiB card: 1.4x, inside the 1-4x range the threshold allows, so no
    # finding (as an 8-card node with the same RAM it was 0.18x: "host RAM low")
    assert "host.ram_low" not in ram and "host.ram_unknown" not in ram
