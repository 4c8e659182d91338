"""Golden test: the measured rows of the shared ground-truth memory.csv.

Rows with confidence 'low' are the authors' own estimates, not measurements, and are left
out. Each row's error is printed (run pytest -s, or benchmarks/memory_accuracy.py).
Stated tolerance: median APE <= 7% over ALL evaluated rows (23 rows: 5.7% recorded; issue 4
asks for <= 10%); over the rows that are not UNKNOWABLE (an unstated input decides them) or
DEFERRED (they need a model that a later issue builds) the median stays <= 5% (4.3%
recorded) and every row within 50% (worst: M018, 46%). The figures are recorded in
docs/validation.md.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from gpuplan.validate.run import validate_file

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "ground-truth" / "memory.csv"
ALL_ROWS_MEDIAN_TOLERANCE = 0.07
MEDIAN_TOLERANCE = 0.05
ROW_TOLERANCE = 0.50
UNKNOWABLE = {
    # torchtune's single-device full fine-tune fits 8B in 18.9 GiB with a paged 8-bit AdamW
    # run inside backward (no gradient buffer); the row leaves the optimizer unstated.
    "M016": "optimizer not stated; the recipe pages 8-bit states to host memory",
}
DEFERRED = {
    # vLLM's KV pool is what its profiling run leaves; that run's activation peak depends on
    # the engine profile (max_num_seqs, max_num_batched_tokens, CUDA graphs): inference planner issue.
    "M071": "engine KV pool needs the serving-engine profiles of the inference planner",
}

pytestmark = pytest.mark.skipif(not CASES.exists(), reason="shared ground-truth cases not present")


def _results() -> tuple[list[tuple[str, float, float, float]], list[str]]:
    report = validate_file(CASES)
    done = [(c.id, c.measured, c.predicted, c.ape) for c in report.cases]
    return done, [f"{i}: {r}" for i, r in report.skipped]


def test_memory_rows_within_stated_tolerance() -> None:
    done, skipped = _results()
    for rid, measured, predicted, ape in done:
        print(f"{rid}: measured {measured:.2f} GiB predicted {predicted:.2f} GiB APE {ape:.1%}")
    for s in skipped:
        print("skipped", s)
    assert len(done) >= 23
    all_rows = statistics.median(d[3] for d in done)
    print(f"median APE {all_rows:.1%} over all {len(done)} evaluated rows")
    assert all_rows <= ALL_ROWS_MEDIAN_TOLERANCE
    scored = [d for d in done if d[0] not in UNKNOWABLE and d[0] not in DEFERRED]
    median = statistics.median(d[3] for d in scored)
    print(f"median APE {median:.1%} over {len(scored)} rows")
    assert median <= MEDIAN_TOLERANCE
    worst = [d for d in scored if d[3] > ROW_TOLERANCE]
    assert not worst, worst


def test_recipe_facts_the_rows_state_map_to_job_settings() -> None:
    from gpuplan.validate.cases import read_rows
    from gpuplan.validate.memory_cases import inference_settings, recipe_settings

    rows = {r["id"]: r for r in read_rows(CASES)}
    # Qwen profiling table: Q-LoRA = GPTQ-Int4 base through DeepSpeed ZeRO-2 fp16, LoRA rank 64
    assert recipe_settings(rows["M047"]) == ({"quant_format": "gptq", "lora_rank": 64, "zero_impl": "deepspeed",
                                              "loss_upcast": False}, 2)
    # single-GPU LoRA: HF Trainer, torch AdamW, amp (fp32 loss)
    assert recipe_settings(rows["M037"]) == ({"lora_rank": 64, "optimizer": "adamw_foreach"}, None)
    # the 72B row states DeepSpeed ZeRO-3 and its layout column says stage 3
    assert recipe_settings(rows["M046"]) == ({"zero_impl": "deepspeed", "lora_rank": 64}, None)
    # rows from other sources keep the defaults
    assert recipe_settings(rows["M018"]) == ({}, None)
    assert inference_settings(rows["M054"]) == {"kv_layout": "concat", "prompt_logits": "all", "generated": 8192}
    assert inference_settings(rows["M049"]) == {"kv_layout": "concat", "prompt_logits": "all"}
    assert inference_settings(rows["M031"]) == {"quant_scope": "mlp"}
    assert inference_settings(rows["M069"]) == {}
