"""Prefill on one part, decode on another (search/infer_pd_mixed.py): where such a fleet wins, and where it must not."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpuplan.hardware import load_catalog
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_pd_mixed import KV_ASSUMPTION
from gpuplan.search.infer_search import InferConstraints, InferPlanResult, plan_inference
from gpuplan.simulate import LengthDist
from gpuplan.workload.presets import load_model

CAT = load_catalog(use_user_dir=False)
IDC = Path(__file__).parents[1] / "fixtures" / "catalog" / "pd_mixed"  # 8x H200 and 8x H20 on one RoCE fabric
LONG = InferLoad(qps=20.0, input_len=LengthDist.fixed(8000), output_len=LengthDist.fixed(500))


@cache
def _aws_long_prompts() -> InferPlanResult:
    """Llama-3.1-70B, 20 req/s of 8000-token prompts and 500-token answers, p99 TTFT 3 s and TPOT 40 ms, on AWS."""
    return plan_inference(load_model("llama3.1-70b"), LONG, InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.04), CAT,
                          InferConstraints(provider="aws"))


def _mixed(res: InferPlanResult) -> list[dict[str, Any]]:
    return [a for a in res.what_if_pd_all if a.get("heterogeneous")]


def test_compute_rich_prefill_and_cheap_decode_beat_every_single_part_fleet_on_aws() -> None:
    """H100 (989 dense bf16 TFLOPS, p5 at 55.04 USD/h per node) prefills; A100 80GB in int8 (2 TB/s for half the
    price: p4de at 27.45 USD/h per node) decodes: the pair costs less than either part's own disaggregated fleet and
    than the cheapest colocated fleet (30 B200 fp8 at 455.73 USD/h)."""
    res = _aws_long_prompts()
    head = res.what_if_pd_all[0]
    assert head["heterogeneous"] is True and head["simulated"] is True
    assert head["accelerators"] == {"prefill": "h100-sxm5-80gb", "decode": "a100-sxm4-80gb"}
    assert head["weights"] == "int8" and head["provider"] == "aws"
    assert head["prefill"]["devices"] == 30 and head["decode"]["devices"] == 56
    assert head["prefill"]["usd_per_hour"] == pytest.approx(4 * 55.04) and head["decode"]["instances"] == 7
    assert head["usd_per_hour"] == pytest.approx(412.29, rel=0.03)
    assert head["ttft_p99_s"] <= 3.0 and head["tpot_p99_s"] <= 0.04
    assert head["usd_per_hour"] < res.plans[0]["cost_usd_per_hour"] == pytest.approx(455.73, rel=0.03)
    alone = {a["accelerator"]: a["usd_per_hour"] for a in res.what_if_pd_all if not a.get("heterogeneous")}
    assert head["usd_per_hour"] < min(alone["h100-sxm5-80gb"], alone["a100-sxm4-80gb"])
    assert head["kv_assumption"] == KV_ASSUMPTION


def test_the_kv_cache_moves_at_the_slower_side() -> None:
    """Llama-3.1-70B's bf16 KV cache is 80 layers x 8 heads x 128 x 2 x 2 B = 327,680 B per token: an H100 of a TP2
    prefill group sends half (1.31 GB for 8000 tokens) over 3.2 Tbit/s x 0.8 / 8 = 40 GB/s (32.8 ms); an A100 of a
    TP8 decode group receives an eighth (328 MB) over p4de's 400 Gbit/s x 0.8 / 8 = 5 GB/s (65.5 ms): the decode side
    sets the pace, 65.54 ms + the link latency."""
    head = _aws_long_prompts().what_if_pd_all[0]
    assert head["prefill"]["layout"]["tp"] == 2 and head["decode"]["layout"]["tp"] == 8
    assert head["kv_transfer_p99_s"] == pytest.approx(327_680 / 8 * 8000 / 5e9, rel=0.01)
    assert "(prefill side)" in head["kv_link"] and "(decode side)" in head["kv_link"]


def test_pairs_share_one_provider_and_one_vendor() -> None:
    """A pair needs a network both sides share (one provider's RDMA fabric) and one KV format (one vendor's stack)."""
    res = plan_inference(load_model("llama3.1-70b"), LONG, InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.04), CAT,
                         InferConstraints(market="global"))
    mixed = _mixed(res)
    assert mixed, "global market: B200 prefill + A100 decode on CoreWeave is formed"
    for a in mixed:
        pre, dec = CAT.instances[a["prefill"]["instance"]], CAT.instances[a["decode"]["instance"]]
        assert pre.provider == dec.provider == a["provider"] and pre.rdma_network and dec.rdma_network
        assert (CAT.accelerators[a["accelerators"]["prefill"]].vendor
                == CAT.accelerators[a["accelerators"]["decode"]].vendor)
    # where one part does both pools for less (GB200 at 252 USD/h), it heads the list, not the pair (267 USD/h)
    assert not res.what_if_pd_all[0].get("heterogeneous")


def test_h200_prefill_with_h20_decode_must_not_win_for_deepseek_v3() -> None:
    """DeepSeek-V3 at 10 req/s (4000 in, 1000 out; TTFT 3 s, TPOT 50 ms) on an IDC renting both parts on one RoCE
    fabric: H20's 96 GB hold the fp8 weights with little room left for the KV cache, so an H20 decode pool needs 64
    devices (73.57 USD/h) where H200 needs 8; H200 alone (54.03 USD/h) beats the pair (109.59 in closed form), which
    is therefore not listed, and no listed fleet decodes on H20 for less than H200 alone."""
    cat = load_catalog([IDC], use_user_dir=False)
    res = plan_inference(load_model("deepseek-v3"),
                         InferLoad(qps=10.0, input_len=LengthDist.fixed(4000), output_len=LengthDist.fixed(1000)),
                         InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.05), cat, InferConstraints())
    h200 = next(a for a in res.what_if_pd_all if a["accelerator"] == "h200-sxm-141gb" and not a.get("heterogeneous"))
    assert h200["prefill"]["instance"] == h200["decode"]["instance"] == "idc-roce-8x-h200"
    assert not any(a.get("accelerators", {}).get("decode") == "h20-96gb" for a in res.what_if_pd_all)
    assert all(a["usd_per_hour"] > h200["usd_per_hour"] for a in res.what_if_pd_all if "h20-96gb" in (
        a["accelerator"], a.get("accelerators", {}).get("prefill")))
