"""Ascend serving as teams run it (issue 35, Ascend class): DeepSeek-R1 on CloudMatrix384 against the CloudMatrix384
paper (Zuo et al. 2025, arXiv 2506.12708: 1,943 decode tokens/s per 910C at TPOT 49.4 ms, batch 96 per NPU, KV
4,096; 6,688 prefill tokens/s per NPU at 4,096-token prompts), the rows of validate/data/added_rows/inference.csv
(A35-ASC-*), written out here so that the tests need no case file.

The modelled causes: the engine Huawei's stack serves with (MindIE's per-layer host time, not vllm-ascend's), the
384-NPU Unified Bus domain (expert all-to-all on UB, not on RoCE between 8-NPU nodes), and the decode as
CloudMatrix-Infer runs it, stated on the rows (row_settings.yaml): captured as graphs (graph_mode: kernel tails per
layer and a 0.7 ms graph dispatch per step in place of MindIE's 0.5 ms per layer of eager host time), the paper's 70%
MTP acceptance, and its fused dispatch/combine operators at their measured per-die rates (links.yaml ub_a2a_*)."""

from __future__ import annotations

import pytest

from gpuplan.errors import InputError
from gpuplan.estimate.links import fused_a2a_links
from gpuplan.hardware import load_catalog
from gpuplan.validate.inference_cases import evaluate_inference_row
from gpuplan.validate.row_settings import parse_settings
from gpuplan.workload.engines import engine

CAT = load_catalog(use_user_dir=False)

# EP320 over 160 packages in the paper, EP128 over 128 packages here (two routed experts per package either way)
DECODE = {
    "id": "A35-ASC-01", "model": "deepseek-v3", "accelerator": "ascend-910c-cm384", "num_accels": "128", "tp": "1",
    "pp": "1", "ep": "128", "engine": "mindie", "weight_precision": "int8", "input_len": "4096", "output_len": "256",
    "batch": str(96 * 128), "scenario": "fixed_batch", "metric": "output_tokens_per_s_per_device", "value": "1943",
    "settings": "deployment=pd_disaggregated;speculative=true;draft_tokens=1", "confidence": "medium",
}
# a prefill instance of 16 packages, 16,384 tokens (4 prompts of 4,096) per NPU, Perfect EPLB: 6,688 tokens/s per NPU
PREFILL = {
    "id": "A35-ASC-06", "model": "deepseek-v3", "accelerator": "ascend-910c-cm384", "num_accels": "16", "tp": "1",
    "pp": "1", "ep": "16", "engine": "mindie", "weight_precision": "int8", "input_len": "4096", "output_len": "1",
    "batch": "64", "scenario": "fixed_batch", "metric": "total_tokens_per_s", "value": str(6688 * 16),
    "settings": "deployment=pd_disaggregated", "confidence": "medium",
}


def _ratio(row: dict[str, str], **change: str) -> float:
    res = evaluate_inference_row({**row, **change}, CAT)
    return res.predicted / res.measured


def test_decode_on_cloudmatrix_within_10_percent_of_the_paper() -> None:
    # 1,954 predicted against 1,943 (+1%); before graph_mode and the stated acceptance: 1,624 (16% low); 43% low under
    # MindIE on 8-NPU HCCS nodes, 69% low under the then default engine (vllm-ascend's 1 ms per layer of host time)
    assert 0.90 < _ratio(DECODE) < 1.10
    assert _ratio(DECODE, accelerator="ascend-910c") < 0.75  # expert all-to-all over RoCE between 8-NPU nodes: 0.67
    assert _ratio(DECODE, accelerator="ascend-910c", engine="vllm") < 0.40  # 0.36


def test_prefill_on_cloudmatrix_within_25_percent_of_the_paper() -> None:
    # 87,600 predicted against 107,008 tokens/s for 16 NPUs (18% low); before: 33% low on 8-NPU nodes, 51% low under
    # vllm-ascend (its 0.12 prefill attention efficiency). The prefill row states no graph and keeps the link model.
    assert 0.75 < _ratio(PREFILL) < 1.10
    assert _ratio(PREFILL, accelerator="ascend-910c") < 0.75
    assert _ratio(PREFILL, accelerator="ascend-910c", engine="vllm") < 0.60


TIGHT_05 = {**DECODE, "id": "A35-ASC-05T", "batch": str(8 * 128), "metric": "tpot_ms", "value": "14.9"}
TIGHT_04 = {**DECODE, "id": "A35-ASC-04T", "batch": str(24 * 128), "metric": "tpot_ms", "value": "24.6"}


def test_tight_tpot_rows_run_as_captured_graphs() -> None:
    # The 15 ms and 30 ms SLO rows (batch 8 and 24 per NPU: 14.9 and 24.6 ms per token). Charged MindIE's eager host
    # time (0.5 ms x 61 layers, measured on a 910B) they came out 1.74x and 1.29x the measured TPOT; run as the rows
    # state (graph_mode: 20 us kernel tails per layer and one 0.7 ms graph dispatch per step; 70% MTP acceptance,
    # 1.7 tokens per step) 0.76x and 0.72x: what is left is the fast side (docs/validation.md, Ascend, "Not closed").
    assert 0.70 < _ratio(TIGHT_05) < 0.85  # 11.3 ms against 14.9
    assert 0.66 < _ratio(TIGHT_04) < 0.80  # 17.8 ms against 24.6
    # the same rows under another id, without the overlay's graph_mode and acceptance: the eager floor
    eager = DECODE["settings"]
    assert 1.6 < _ratio(TIGHT_05, id="X-EAGER", settings=eager) < 1.9
    assert 1.2 < _ratio(TIGHT_04, id="X-EAGER", settings=eager) < 1.4
    # the graph alone (acceptance 0.85 of the engine term) and the acceptance alone (eager) move them as stated
    assert 0.65 < _ratio(TIGHT_05, id="X-GRAPH", settings=eager + ";graph_mode=true") < 0.72
    assert 1.8 < _ratio(TIGHT_05, id="X-ACC", settings=eager + ";mtp_acceptance=0.7") < 2.0


def test_graph_mode_replaces_mindie_eager_host_time_only_where_stated() -> None:
    eager = engine("mindie").for_accelerator("ascend-910b")  # the GPUStack MindIE rows on 910B: eager, unchanged
    assert eager.value("layer_overhead_s") == 0.0005
    graph = engine("mindie", settings={"graph_mode": True}).for_accelerator("ascend-910c-cm384")
    assert graph.value("layer_overhead_s") == 0.00002  # the engine's own kernel tails
    assert graph.value("graph_launch_s") == 0.0007  # arXiv 2506.12708: 0.6-0.8 ms per graph dispatch
    assert engine("vllm").for_accelerator("h100-sxm5-80gb").value("graph_launch_s") == 0.0  # inside step_overhead_s
    assert parse_settings("graph_mode=true;mtp_acceptance=0.7").mtp_acceptance == 0.7
    with pytest.raises(InputError, match="mtp_acceptance"):
        parse_settings("mtp_acceptance=1.5", row_id="X")


def test_fused_all_to_all_at_the_papers_per_die_rates() -> None:
    # EP128 packages = 256 dies, the table's EP256 point: 54 and 103 GB/s per die, two dies per 910C
    cm = CAT.accelerator("ascend-910c-cm384")
    at128 = fused_a2a_links(cm, 128)
    assert at128 is not None
    assert (float(at128.dispatch.bandwidth_gbyte_s), float(at128.combine.bandwidth_gbyte_s)) == (108.0, 206.0)
    at4 = fused_a2a_links(cm, 4)  # EP8 dies: 71 and 131 GB/s per die
    assert at4 is not None and float(at4.dispatch.bandwidth_gbyte_s) == 142.0
    at16 = fused_a2a_links(cm, 16)  # 32 dies: 2/5 of the way in log2 from EP8 to EP256
    assert at16 is not None and abs(float(at16.dispatch.bandwidth_gbyte_s) - 2 * (71 - 0.4 * 17)) < 1e-9
    assert fused_a2a_links(CAT.accelerator("ascend-910c"), 8) is None  # HCCS nodes: no measured fused operator
