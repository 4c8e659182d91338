"""Ascend serving as teams run it (issue 35, Ascend class): DeepSeek-R1 on CloudMatrix384 against the CloudMatrix384
paper (Zuo et al. 2025, arXiv 2506.12708: 1,943 decode tokens/s per 910C at TPOT 49.4 ms, batch 96 per NPU, KV
4,096; 6,688 prefill tokens/s per NPU at 4,096-token prompts), the rows of validate/data/added_rows/inference.csv
(A35-ASC-*), written out here so that the tests need no case file.

The modelled causes: the engine Huawei's stack serves with (MindIE's per-layer host time, not vllm-ascend's) and the
384-NPU Unified Bus domain (expert all-to-all on UB, not on RoCE between 8-NPU nodes)."""

from __future__ import annotations

from gpuplan.hardware import load_catalog
from gpuplan.validate.inference_cases import evaluate_inference_row

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


def test_decode_on_cloudmatrix_within_25_percent_of_the_paper() -> None:
    # 1,624 predicted against 1,943 (16% low); before: 43% low under MindIE on 8-NPU HCCS nodes, 69% low under the
    # then default engine (vllm-ascend's 1 ms per layer of host time)
    assert 0.75 < _ratio(DECODE) < 1.10
    assert _ratio(DECODE, accelerator="ascend-910c") < 0.65  # expert all-to-all over RoCE between 8-NPU nodes
    assert _ratio(DECODE, accelerator="ascend-910c", engine="vllm") < 0.40


def test_prefill_on_cloudmatrix_within_25_percent_of_the_paper() -> None:
    # 87,600 predicted against 107,008 tokens/s for 16 NPUs (18% low); before: 33% low on 8-NPU nodes, 51% low under
    # vllm-ascend (its 0.12 prefill attention efficiency)
    assert 0.75 < _ratio(PREFILL) < 1.10
    assert _ratio(PREFILL, accelerator="ascend-910c") < 0.75
    assert _ratio(PREFILL, accelerator="ascend-910c", engine="vllm") < 0.60


def test_tight_tpot_rows_show_the_eager_floor_still_open() -> None:
    # The 15 ms SLO row (batch 8 per NPU: 14.9 ms, 538 tokens/s) is where MindIE's per-layer host time (0.5 ms x 61
    # layers, measured on a 910B) dominates; CloudMatrix-Infer runs the decode as a captured graph (0.6-0.8 ms per
    # graph launch, per step). Not closed: no engine profile of graph-mode MindIE yet (docs/validation.md, Ascend).
    small = _ratio({**DECODE, "id": "A35-ASC-05T", "batch": str(8 * 128), "metric": "tpot_ms", "value": "14.9"})
    assert 1.4 < small < 2.2
