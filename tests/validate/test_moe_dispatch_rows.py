"""The Megatron-Bridge MoE rows state the token dispatcher their recipe ran, and the estimate reads it (issue 35).

Megatron-Core's alltoall dispatcher copies each expert's token count to the host and synchronises, so the GPU waits
`moe_host_wait_s` per MoE layer and pass; the flex dispatcher (DeepEP/HybridEP) keeps the counts on the device
(search/train_eval._moe_host_wait_s). Which one a row ran is a recipe fact: NeMo 25.11 ships Megatron-Bridge 0.2.0,
whose DGX-B200/H100 MoE recipes (tag v0.2.0, scripts/performance/configs/{qwen3,deepseek}/workload_base_configs.py)
set no `moe_flex_dispatcher_backend`, so the providers' `moe_token_dispatcher_type = "alltoall"` stands; the 26.04.01
recipes (Megatron-Bridge v0.4.x, scripts/performance/configs/qwen/qwen3_workload_base_configs.py) set
`moe_flex_dispatcher_backend="hybridep"` for Qwen3-30B-A3B on B200. The rows are read from the shipped case files:
what is pinned here is what those files (and validate/data/row_settings.yaml) say.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import load_catalog
from gpuplan.validate.cases import Row, read_rows
from gpuplan.validate.ground_truth import case_files
from gpuplan.validate.row_settings import resolve_row
from gpuplan.validate.training_cases import evaluate_training_row

CAT = load_catalog()
ROWS: dict[str, Row] = {r["id"]: r for p in case_files("training") for r in read_rows(p)}

# Megatron-Bridge v0.2.0 (NeMo 25.11): no flex backend on DGX-B200/H100 -> alltoall
NEMO_2511_ALLTOALL = (
    "mbridge2511_b200_DeepSeekV3_FP8-MX_256",  # DEEPSEEK_V3_B200_BASE_CONFIG
    "mbridge2511_b200_Qwen3_235B_a22B_FP8-MX_64",  # QWEN3_235B_A22B_B200_FP8_CS_BASE_CONFIG (moe_a2a_overlap=True)
    "mbridge2511_b200_Qwen3_30B_a3B_FP8-MX_8",  # QWEN3_30B_A3B_B200_FP8_CS_BASE_CONFIG (CUDA graphs, no flex)
    "mbridge2511_h100_Qwen3_30B_a3B_FP8-CS_16",  # QWEN3_30B_A3B_H100_FP8_CS_BASE_CONFIG (moe_a2a_overlap=True)
    "mbridge2511_h100_Qwen3_235B_a22B_FP8-CS_256",  # QWEN3_235B_A22B_H100_FP8_CS_BASE_CONFIG (moe_a2a_overlap=True)
)


@pytest.mark.parametrize("rid", NEMO_2511_ALLTOALL)
def test_nemo_25_11_moe_rows_state_the_alltoall_dispatcher_of_their_recipe(rid: str) -> None:
    """Each 25.11 MoE row states `moe_dispatcher=alltoall` (row_settings.yaml, quoting the v0.2.0 recipe lines)
    rather than leaving it to the default: a stated fact a later default cannot change."""
    _, st = resolve_row(ROWS[rid])
    assert st.framework == "nemo"
    assert st.moe_dispatcher == "alltoall"


def _step_s(row: Row, tokens_per_s_per_device: float) -> float:
    """Seconds per optimizer step of a tokens/s/GPU row: global batch x sequence / GPUs / rate."""
    return int(row["global_batch_seqs"]) * int(row["seq_len"]) / int(row["num_accels"]) / tokens_per_s_per_device


def test_a_row_stating_flex_pays_no_host_wait_and_one_stating_alltoall_does() -> None:
    """Qwen3-30B-A3B (48 MoE layers) on 8 B200, EP8, GBS 512, no recomputation, two Megatron-Bridge releases:
    25.11 ran alltoall at one sequence per micro-batch (64 micro-batches per step) and measured 9,299 tokens/s per GPU;
    26.04.01 ran HybridEP (flex) at four (16 micro-batches) and measured 27,136. Flipping a row's dispatcher moves its
    step by exactly 48 layers x passes x micro-batches x `moe_host_wait_s` (3 ms shipped), and each row's own
    dispatcher is the one that lands nearer its measurement."""
    wait = default_calibration().value("moe_host_wait_s")
    cases = {  # id: (stated dispatcher, micro-batches per step, measured tokens/s/GPU)
        "mbridge2511_b200_Qwen3_30B_a3B_FP8-MX_8": ("alltoall", 64, 9299.0),
        "mbridge260401_b200_Qwen3_30B_a3B_MXFP8_8": ("flex", 16, 27136.0),
    }
    for rid, (stated, microbatches, measured) in cases.items():
        row = ROWS[rid]
        assert resolve_row(row)[1].moe_dispatcher == stated
        assert float(row["value"]) == measured
        flipped = "flex" if stated == "alltoall" else "alltoall"
        own = evaluate_training_row(dict(row), CAT)
        # the same run stating the other dispatcher (its own id would contradict the overlay: an InputError)
        other = evaluate_training_row({**row, "id": f"{rid}-{flipped}",
                                       "settings": f"framework=nemo;moe_dispatcher={flipped}"}, CAT)
        waited, free = (own, other) if stated == "alltoall" else (other, own)
        # passes: forward and backward, plus full recomputation's forward where the layout search chose it (the
        # 26.04.01 row at MBS 4: "rc=full"; its recipe recomputes nothing, a memory question left to its own issue)
        passes = 3 if "rc=full" in own.detail else 2
        assert other.detail == own.detail  # the same layout ("tp1 pp1 dp8 cp1 ep8 ..."), only the dispatcher differs
        assert _step_s(row, waited.predicted) - _step_s(row, free.predicted) == pytest.approx(
            48 * passes * microbatches * wait, rel=1e-6)
        assert abs(own.predicted / measured - 1) < abs(other.predicted / measured - 1)
    # as shipped: 25.11 alltoall 9,421 (+1.3%); 26.04.01 flex 21,791 (-19.7%; alltoall would read 15.8k, -42%)
    assert abs(evaluate_training_row(dict(ROWS["mbridge2511_b200_Qwen3_30B_a3B_FP8-MX_8"]), CAT).predicted
               / 9299 - 1) < 0.10
    assert abs(evaluate_training_row(dict(ROWS["mbridge260401_b200_Qwen3_30B_a3B_MXFP8_8"]), CAT).predicted
               / 27136 - 1) < 0.25


def test_the_h100_qwen3_235b_row_takes_the_global_batch_its_page_states() -> None:
    """The 25.11 DGX-H100 Qwen3-235B-A22B row was copied from a page whose line had lost its GBS cell; the page at
    tag v0.2.1 reads `| Qwen3_235B_a22B | 256 | FP8-CS | 2048 | 1 | 4096 | 0 | 2 | 8 | 1 | 4 | 32 | 128 | 1575 | 233 |`
    (GA 128 = 2048 / dp 16 / MBS 1). The overlay fills the empty cell; the estimate runs that batch: 1,291 tokens/s
    per GPU against 1,575 measured (1,276 with the batch left unstated)."""
    row, st = resolve_row(ROWS["mbridge2511_h100_Qwen3_235B_a22B_FP8-CS_256"])
    assert ROWS["mbridge2511_h100_Qwen3_235B_a22B_FP8-CS_256"]["global_batch_seqs"] == ""
    assert row["global_batch_seqs"] == "2048" and st.moe_dispatcher == "alltoall"
    res = evaluate_training_row(dict(row), CAT)
    assert "tp2 pp8 dp16" in res.detail and "ep32" in res.detail
    assert abs(res.predicted / 1575 - 1) < 0.25  # 1,291: -18%
