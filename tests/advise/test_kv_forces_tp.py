"""The finding "this part's HBM forces TP only for KV" (issue 36 item 2): Qwen3-32B in bf16 fits one H100 (61 GiB of
weights), but the KV left there (30,503 tokens) is shorter than a 64k-token request, so the KV cache, not the
weights, sets TP2; the plan's TP4 replica has 3 devices there for the KV cache and speed."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.advise.adapt_infer import inference_facts
from gpuplan.advise.engine import advise
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_kv_tp import annotate, note
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference, plan_record
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.engines import engine
from gpuplan.workload.presets import load_model

CAT = load_catalog(())


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    spec, prof = load_model("qwen3-32b"), engine("vllm")
    load = InferLoad(qps=2.0, input_len=parse_length_dist("uniform:32000-64000"), output_len=parse_length_dist(256))
    slo = InferSlo(ttft_p99_s=20.0, tpot_p99_s=0.1)
    res = plan_inference(spec, load, slo, CAT, InferConstraints(accelerators=("h100-sxm5-80gb",), weights=("bf16",)),
                         engine_profile=prof, alternatives=False)
    return plan_record(spec, load, slo, res, prof, "bf16")


def test_the_plan_says_the_kv_cache_set_its_tp(run: dict[str, Any]) -> None:
    best = run["plans"][0]
    k = best["kv_forced_tp"]
    assert (k["weights_tp"], k["kv_tp"], k["limit"]) == (1, 2, "kv_too_small")
    assert k["kv_tokens_at_weights_tp"] < k["longest_request_tokens"] == 64256 <= k["kv_tokens"]
    assert k["weights_gib_per_device_at_weights_tp"] == pytest.approx(61.0, abs=0.5)


def test_the_finding_in_english_and_chinese(run: dict[str, Any]) -> None:
    best = run["plans"][0]
    found = {f.id: f for f in advise(inference_facts(run, best, catalog=CAT))}
    f = found["serve.kv_forces_tp_short"]
    assert f.severity == "info"
    en, zh = f.message["en"], f.message["zh"]
    assert "h100-sxm5-80gb" in en and "TP1" in en and "TP2" in en and "64,256" in en and "30,503" in en
    assert "KV 缓存" in zh and "TP1" in zh and "TP2" in zh and "64,256" in zh
    assert "--kv-dtype fp8" in f.fix["en"] and "--kv-dtype fp8" in f.fix["zh"]


def test_no_finding_where_the_weights_set_the_tp() -> None:
    floors: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for tp, limit in ((2, "tpot"), (4, "tpot")):  # TP1 out of memory: never noted
        note(floors, accelerator="x", weights="bf16", tp=tp, rejected=None, limited_by=limit, kv_tokens=1000,
             weights_bytes_per_device=1.0)
    note(floors, accelerator="x", weights="bf16", tp=1, rejected="out_of_memory", limited_by=None, kv_tokens=0,
         weights_bytes_per_device=1.0)
    plan = {"accelerator": "x", "weights": "bf16", "layout": {"tp": 4, "pp": 1, "ep": 1}}
    annotate([plan], floors, need_tokens=100)
    assert "kv_forced_tp" not in plan
    note(floors, accelerator="x", weights="bf16", tp=1, rejected="kv_too_small", limited_by=None, kv_tokens=50,
         weights_bytes_per_device=1.0)
    annotate([plan], floors, need_tokens=100)
    assert plan["kv_forced_tp"]["weights_tp"] == 1 and plan["kv_forced_tp"]["kv_tp"] == 2
