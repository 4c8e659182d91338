"""Golden test: the measured rows of the shipped ground-truth memory.csv.

Rows with confidence 'low' are the authors' own estimates, not measurements, and are left
out. Each row's error is printed (run pytest -s, or benchmarks/memory_accuracy.py).
Stated tolerance: median APE <= 7% over ALL evaluated rows (23 rows: 5.7% recorded; issue 4
asks for <= 10%); over the rows that are not UNKNOWABLE (an unstated input decides them) or
DEFERRED (they need a model that a later issue builds) the median stays <= 5% (4.3%
recorded) and every row within 50% (worst: M018, 46%). The figures are recorded in
docs/validation.md.

Issue 17 item 3: the skipped ids are pinned, the memory family has a gate at the figure observed when it was set
(commit 2c2e79e) plus a small margin, and no row may be more than 3x off; M071 (1.8x) is held to the 3x bound.
M016 was excluded (6.8x off) until its recipe was stated: torchtune's config at the README's commit runs a paged
8-bit AdamW inside backward (optimizer_offload=cpu, optimizer_in_bwd): 22.2 GiB predicted for 18.9 GiB, 17%.

Every gate here is a regression guard on today's in-sample state (terms tuned on these rows), not a claim that
the project's targets are met: those are held-out figures (leave one source, part or engine version out),
reported against the targets, misses included, in docs/validation.md "At a glance" (issue 35 item 5).
"""

from __future__ import annotations

import statistics

import pytest
from golden_gates import ROW_BOUND, check_excluded, check_skips, outside_row_bound, stats

from gpuplan.validate.run import validate_file
from ground_truth import case_file

CASES = case_file("memory.csv")
ALL_ROWS_MEDIAN_TOLERANCE = 0.07
MEDIAN_TOLERANCE = 0.05
ROW_TOLERANCE = 0.50
UNKNOWABLE: dict[str, str] = {}
DEFERRED = {
    # vLLM's KV pool is what its profiling run leaves; that run's activation peak depends on
    # the engine profile (max_num_seqs, max_num_batched_tokens, CUDA graphs): inference planner issue.
    "M071": "engine KV pool needs the serving-engine profiles of the inference planner",
}

# Rows more than 3x off, excluded by hand (the case files are read-only in CI); each reason is the modelling
# that is missing. None since M016's recipe is stated (row_settings.yaml).
EXCLUDED: dict[str, str] = {}
# The rows gpuplan skips, each with (a substring of) its reason. A new skip fails until it is named here.
SKIPPED = {
    "M014": "needs seq_len",  # a training row that states no sequence length
}

pytestmark = pytest.mark.ground_truth("memory.csv")


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
    from gpuplan.validate.row_settings import resolve_row

    rows = {r["id"]: resolve_row(r) for r in read_rows(CASES)}

    def recipe(rid: str) -> tuple[dict[str, object], str, str]:
        row, st = rows[rid]
        return recipe_settings(row, st), row.get("lora_rank", ""), row.get("zero_stage", "")

    # Qwen profiling table: Q-LoRA = GPTQ-Int4 base through DeepSpeed ZeRO-2 fp16, LoRA rank 64
    assert recipe("M047") == ({"quant_format": "gptq", "zero_impl": "deepspeed", "loss_upcast": False}, "64", "2")
    # single-GPU LoRA: HF Trainer, torch AdamW (foreach), amp (fp32 loss)
    assert recipe("M037") == ({"optimizer": "adamw_foreach"}, "64", rows["M037"][0].get("zero_stage", ""))
    # the 72B row states DeepSpeed ZeRO-3 and its layout column says stage 3
    assert recipe("M046")[0] == {"zero_impl": "deepspeed"} and recipe("M046")[2] == "3"
    # torchtune's table: its recipe configs at the README's commit (row_settings.yaml quotes them): the 8B ones run
    # the chunked cross-entropy, the 8B LoRA targets q and v at rank 8, the 8B full fine-tune a paged 8-bit AdamW
    # stepped inside backward, the 405B QLoRA torch's CrossEntropyLoss; the README's table ran all with torch.compile
    assert recipe("M018")[:2] == ({"loss": "chunked", "compile": True, "lora_targets": ("q", "v")}, "8")
    assert recipe("M016")[0] == {"loss": "chunked", "compile": True, "optimizer_offload": "cpu",
                                 "optimizer_in_bwd": True}
    assert rows["M016"][0]["optimizer"] == "adam8bit" and rows["M016"][0]["recompute"] == "full"
    assert recipe("M023")[0] == {"compile": True}
    # rows that state nothing keep the defaults
    assert recipe("M069")[0] == {}
    assert inference_settings(rows["M054"][1]) == {"kv_layout": "concat", "prompt_logits": "all", "generated": 8192}
    assert inference_settings(rows["M049"][1]) == {"kv_layout": "concat", "prompt_logits": "all"}
    assert inference_settings(rows["M031"][1]) == {"quant_scope": "mlp"}
    assert inference_settings(rows["M069"][1]) == {}


def test_skipped_rows_are_the_pinned_ones() -> None:
    check_skips(validate_file(CASES), SKIPPED)


def test_no_row_more_than_3x_off() -> None:
    """Worst observed: M071 (kv_cache_gib, 1.8x)."""
    report = validate_file(CASES)
    check_excluded(report, EXCLUDED)
    assert not outside_row_bound(report, EXCLUDED), f"rows more than {ROW_BOUND:g}x off"


def test_memory_family() -> None:
    """Peak memory, model states and KV pool, every evaluated row: 27 rows, observed median 4.6%, p90 23.5%."""
    report = validate_file(CASES)
    med, p90, worst = stats([c for c in report.cases if c.id not in EXCLUDED])
    print(f"median {med:.1%} p90 {p90:.1%} max {worst:.1%}")
    assert len(report.cases) - len(EXCLUDED) >= 27
    assert med <= 0.06
    assert p90 <= 0.245
