"""plan infer for MoE models and what an RDMA fabric would buy: whole expert groups, attention data parallelism,
the RDMA what-if (sized, never planned, never on per-card rentals or blocked parts) and expert groups across
instances (split from test_infer_search.py)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from gpuplan.hardware import Catalog, load_catalog
from gpuplan.search.infer_fleet import Offer
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate import LengthDist
from gpuplan.workload.presets import load_model


@cache
def _catalog() -> Catalog:
    return load_catalog(())


def _load(qps: float = 8.0) -> InferLoad:
    return InferLoad(qps=qps, input_len=LengthDist.uniform(256, 1024), output_len=LengthDist.uniform(64, 256))


def test_an_moe_replica_holds_all_its_expert_weights() -> None:
    """Regression: with expert parallelism the expert weights were divided by ep x tp, and DeepSeek-V3 in fp8
    (about 680 GB) was offered on one tp4 ep4 replica of four 80 GB H800s. Every replica's devices must hold
    the whole model."""
    spec = load_model("deepseek-v3")
    res = plan_inference(spec, InferLoad(qps=2.0, input_len=LengthDist.fixed(2000), output_len=LengthDist.fixed(500)),
                         InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.1), _catalog(), InferConstraints(weights=("fp8",)))
    assert res.plans
    for p in res.plans:
        lay = p["layout"]
        memory = _catalog().accelerator(p["accelerator"]).memory_gib
        assert memory is not None
        assert lay["tp"] * lay["pp"] * memory * 2**30 > 671e9, (p["accelerator"], lay)


def test_attention_data_parallel_plans_come_in_whole_expert_groups() -> None:
    """DP attention keeps one copy of the MLA latent cache per device instead of one per TP rank, so DeepSeek-V3
    at high load is served cheaper that way (SGLang --enable-dp-attention); its attention groups come in whole
    expert-parallel groups, each inside one instance."""
    spec = load_model("deepseek-v3")
    load = InferLoad(qps=30.0, input_len=LengthDist.fixed(2000), output_len=LengthDist.fixed(500))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=5.0, tpot_p99_s=0.15), _catalog(),
                         InferConstraints(weights=("fp8",)))
    dp = [p for p in res.plans if p["layout"]["ep"] > p["layout"]["tp"]]
    assert dp, [p["layout"] for p in res.plans]
    assert res.plans[0]["layout"]["ep"] > res.plans[0]["layout"]["tp"]  # the cheapest fleet
    for p in dp:
        groups = p["layout"]["ep"] // p["layout"]["tp"]
        assert p["replicas"] % groups == 0
        assert p["devices"] == p["replicas"] * p["layout"]["tp"] * p["layout"]["pp"]
    # per part and market (no --market: each market's fleets are planned, a buyer rents in its own)
    def market(p: dict[str, Any]) -> str:
        return _catalog().instances[p["instance"]].market

    for acc, where in {(p["accelerator"], market(p)) for p in dp}:
        tp8 = [p for p in res.plans if p["accelerator"] == acc and market(p) == where and p["layout"]["tp"] == 8]
        mine = min(p["cost_usd_per_hour"] for p in dp if p["accelerator"] == acc and market(p) == where)
        assert all(mine <= p["cost_usd_per_hour"] for p in tp8)


def test_what_rdma_would_buy_is_sized_but_never_planned() -> None:
    """China's H20/H800 whole-server rentals state no RDMA fabric, so DeepSeek-V3 is planned tensor-parallel on H20
    only; the same servers with RDMA would serve it wide-EP for far less. The planner sizes that fleet in closed
    form (what_if_rdma) on an offer that lacks RDMA, and the advisor says what asking for RDMA is worth."""
    from gpuplan.advise.report_infer import inference_report

    spec = load_model("deepseek-v3")
    load = InferLoad(qps=30.0, input_len=LengthDist.fixed(2000), output_len=LengthDist.fixed(500))
    slo = InferSlo(ttft_p99_s=5.0, tpot_p99_s=0.15)
    res = plan_inference(spec, load, slo, _catalog(), InferConstraints(market="cn", weights=("fp8",)))
    w = res.what_if_rdma
    assert w is not None and w["layout"]["ep"] >= 16 and w["usd_per_hour"] < res.plans[0]["cost_usd_per_hour"]
    assert _catalog().instances[w["instance"]].rdma_network is None  # only offers that lack RDMA are what-ifs
    assert all(p["instance"] != w["instance"] or p["layout"]["ep"] <= 8 for p in res.plans)
    # the advisor's wording, on an alternative whose part the market does not block (the planner's cheapest here is
    # H800, which the export rule removes in China: test_the_rdma_advice_never_names_a_blocked_part)
    w = {**w, "accelerator": "h20-96gb", "instance": "cn-rental-8x-h20"}
    run = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 5.0, "tpot_p99_s": 0.15},
           "engine": "vllm", "plans": res.plans, "what_if_rdma": w, "terms": res.terms}
    doc = inference_report(run, _catalog(), growth=False)
    found = [f for f in doc["findings"] if f["id"] == "net.rdma_wide_ep"]
    assert found and found[0]["severity"] == "warn" and "not simulated" in found[0]["message"]["en"]
    assert "未经模拟" in found[0]["message"]["zh"]
    dense = plan_inference(load_model("llama3.1-8b"), _load(), InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), _catalog())
    assert dense.what_if_rdma is None


def test_the_h20_what_if_uses_the_rdma_its_servers_are_built_with() -> None:
    """Regression: DeepSeek-V3 at 20 req/s in China was recommended on 240-300 x H20 tensor-parallel with no word
    that the same rentals with RDMA serve it wide-EP for about half: the HGX H20 server stated no fabric, so no
    what-if was sized for the H20 at all. Ant Group serves DeepSeek-R1 on H20-96G servers with 4 x 400 Gb/s RDMA
    (LMSYS, 2025-09-26); the catalog server now states it, and the advisor names the saving on the H20 itself."""
    from gpuplan.advise.report_infer import inference_report

    cat = _catalog()
    sv = cat.server("hgx-h20-8")
    assert sv.network == "roce-400" and sv.compute_gbit_per_s == 1600
    spec = load_model("deepseek-v3")
    load = InferLoad(qps=20.0, input_len=LengthDist.fixed(4096), output_len=LengthDist.fixed(1024))
    slo = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.08)
    # the whole-server rentals (a per-card H20 rental's 8-card pods, billed per card, are a cheaper way to a
    # tensor-parallel fleet, with no RDMA to ask for: a buyer comparing RDMA asks it of whole servers)
    # behind a random router (each replica a Poisson share): least-load halves the tensor-parallel H20 fleet
    # (58 -> 29 replicas), and the what-if then saves 17%, under the 20% the finding asks for
    res = plan_inference(spec, load, slo, cat, InferConstraints(market="cn", provider="cn-rental-market",
                                                                router="random"))
    h20 = [a for a in res.what_if_rdma_all if a["accelerator"] == "h20-96gb"]
    assert h20 and h20[0]["layout"]["ep"] >= 16 and h20[0]["network"] == "roce-400"
    assert h20[0]["nics_per_node"] == pytest.approx(4.0)  # the server's 4 NICs, not one per GPU
    # on whole servers: a per-card rental (compshare-h20-96gb, 1 of the HGX H20's 8 GPUs) has no RDMA to ask for
    assert cat.instances[h20[0]["instance"]].accelerator_count == sv.accelerators_per_node
    # the tensor-parallel H20 fleets of the regression (the part the export rules leave in China)
    plans = [p for p in res.plans if p["accelerator"] == "h20-96gb" and p["layout"]["ep"] == 1]
    run = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 3.0, "tpot_p99_s": 0.08},
           "engine": "vllm", "plans": plans, "what_if_rdma": h20[0], "what_if_rdma_all": h20, "terms": res.terms}
    doc = inference_report(run, cat, growth=False)
    named = [f for f in doc["findings"] if f["id"] == "net.rdma_wide_ep"]
    assert named and "h20-96gb" in named[0]["message"]["en"] and h20[0]["usd_per_hour"] < plans[0]["cost_usd_per_hour"]


def test_the_rdma_what_if_never_sizes_wide_ep_on_per_card_rentals() -> None:
    """Regression: the RDMA what-if for DeepSeek-V3 in China sized 128 single-card H20 rentals (compshare-h20-96gb)
    and 128 single-GPU A100 VMs, each given its whole server's RDMA NICs (4 x 400 Gb/s for one GPU), and called the
    fleet 51% cheaper: a slice of a server gets no RDMA fabric, and wide EP spans whole servers."""
    cat = _catalog()
    spec = load_model("deepseek-v3")
    load = InferLoad(qps=20.0, input_len=LengthDist.fixed(4096), output_len=LengthDist.fixed(1024))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.08), cat, InferConstraints(market="cn"))
    assert res.what_if_rdma_all
    for alt in res.what_if_rdma_all:
        inst = cat.instances[alt["instance"]]
        assert inst.accelerator_count == cat.server(inst.server).accelerators_per_node, alt["instance"]
        assert alt["nics_per_node"] * cat.network(alt["network"]).nic_gbit_per_s == \
            cat.server(inst.server).compute_gbit_per_s


def test_an_expert_group_spans_instances_only_where_it_was_timed_on_their_link() -> None:
    """An 8-device expert group timed on NVLink must not be priced on two 4-GPU instances; a group timed on the
    instances' RDMA link may span them (whole instances)."""
    from gpuplan.estimate.links import Link
    from gpuplan.search.infer_fleet import price_layout
    from gpuplan.workload.jobs import serving_layout

    four = Offer(instance="x4", accelerator_count=4, usd_per_hour=10.0, kind="on_demand_hourly", tenancy="vm",
                 scale_out=Link(50.0, 5e-6, label="rdma"))
    lay = serving_layout(tp=1, ep=8)
    assert price_layout([four], 8, lay) is None
    assert price_layout([four], 16, lay, span=True) == (40.0, four, 4)


def test_the_rdma_advice_never_names_a_blocked_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: the RDMA what-if for DeepSeek-V3 in China named 32 x H800 (84% cheaper), a part a blocking rule
    removed from every recommendation there; the advisor names only parts it could recommend. (Renting H800s
    already in China draws only a warning now: the export rule as it read then stands in, blocking rentals too.)"""
    from gpuplan.advise.report_infer import inference_report
    from strict_rules import block_rentals_too

    block_rentals_too(monkeypatch)

    spec = load_model("deepseek-v3")
    load = InferLoad(qps=30.0, input_len=LengthDist.fixed(2000), output_len=LengthDist.fixed(500))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=5.0, tpot_p99_s=0.15), _catalog(),
                         InferConstraints(market="cn", weights=("fp8",)))
    assert any(a["accelerator"] == "h800-sxm5-80gb" for a in res.what_if_rdma_all)
    run = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 5.0, "tpot_p99_s": 0.15},
           "engine": "vllm", "plans": res.plans, "what_if_rdma": res.what_if_rdma,
           "what_if_rdma_all": res.what_if_rdma_all, "terms": res.terms}
    doc = inference_report(run, _catalog(), growth=False)
    named = [f for f in doc["findings"] if f["id"] == "net.rdma_wide_ep"]
    assert all("h800" not in f["message"]["en"] for f in named)
