"""Golden test: the published training runs of the shipped ground-truth training.csv.

One set of calibration terms for every row; unstated layouts are chosen by the planner.
The project's accuracy target (issue: training planner): median APE <= 10% and p90 <= 25%
over the dev rows, and the throughput rows (tokens/s per device) median <= 10%.

Issue 17 item 3: that aggregate is dominated by the 142 tokens/s rows, so each metric family has its own gate
at the figure observed when the gate was set (commit 2c2e79e, `gpuplan validate
../shared/ground-truth/training.csv --json`) plus a small margin, and no row may be more than 3x off. Device-hours
and time to train (the figures a buyer reads as days and cost) and step time were not gated before.

Every gate here is a regression guard on today's in-sample state (terms tuned on these rows), not a claim that
the project's targets are met: those are held-out figures (leave one source, part or engine version out),
reported against the targets, misses included, in docs/validation.md "At a glance" (issue 35 item 5).
"""

from __future__ import annotations

import pytest
from golden_gates import ROW_BOUND, check_excluded, check_skips, family, gate, outside_row_bound

from gpuplan.validate.run import ValidationReport, validate_file
from ground_truth import case_file

CASES = case_file("training.csv")

pytestmark = pytest.mark.ground_truth("training.csv")

# The rows gpuplan skips, each with (a substring of) its reason. A new skip fails until it is named here.
SKIPPED = {
    "opt175b_paper": "vocab='' is invalid",  # the row names no preset and leaves the vocabulary empty
    "glm130b_mfu": "vocab='' is invalid",
    "mindformers_800t_TeleChat2-7b_bfloat16_8": "heads='' is invalid",
    "deepseekv2_per_trillion": "moe_ffn='' is invalid",
    "modellink_910b_gpt3_175b_scale_6144": "confidence low",  # an author's estimate, not a measurement
}
# Rows more than 3x off, excluded by hand with the reason (the case files are read-only in CI): none.
EXCLUDED: dict[str, str] = {}

THROUGHPUT = ("tokens_per_s_per_device", "tflops_per_device", "hw_tflops_per_device", "mfu")
STEP = ("step_time_s",)
CAMPAIGN = ("device_hours", "time_to_train_days")


@pytest.fixture(scope="module")
def report() -> ValidationReport:
    return validate_file(CASES)


def test_training_rows_within_stated_tolerance(report: ValidationReport) -> None:
    for c in report.cases:
        print(f"{c.id}: {c.metric} measured {c.measured:.4g} predicted {c.predicted:.4g} APE {c.ape:.1%}")
    print(f"median {report.median_ape:.1%} p90 {report.p90_ape:.1%} skipped {len(report.skipped)}")
    assert len(report.cases) >= 200
    assert report.median_ape is not None and report.median_ape <= 0.10
    assert report.p90_ape is not None and report.p90_ape <= 0.25
    tput = sorted(c.ape for c in report.cases if c.metric == "tokens_per_s_per_device")
    assert tput[len(tput) // 2] <= 0.10


def test_skipped_rows_are_the_pinned_ones(report: ValidationReport) -> None:
    check_skips(report, SKIPPED)


def test_no_row_more_than_3x_off(report: ValidationReport) -> None:
    """Worst observed: mds_longseq_a100_30b_2k_old (TFLOP/s, 2.17x since the row's seq_parallel=false is modelled;
    2.66x before), bloomberggpt_step (2.2x). DeepSeek-V3's campaign (2.46x before DualPipe's DeepGEMM expert GEMMs
    were modelled) is now within 4%."""
    check_excluded(report, EXCLUDED)
    assert not outside_row_bound(report, EXCLUDED), f"rows more than {ROW_BOUND:g}x off"


def test_throughput_family(report: ValidationReport) -> None:
    """tokens/s per device, model and hardware TFLOP/s per device, MFU: 185 rows, observed median 7.7%,
    p90 21.3%."""
    gate(family(report, THROUGHPUT), 180, median=0.085, spread=0.225)


def test_step_time_family(report: ValidationReport) -> None:
    """Step time: 4 rows, observed median 27.2%, max 54.9% (bloomberggpt_step: 32.5 s measured, 14.7 s
    predicted)."""
    gate(family(report, STEP), 4, median=0.29, spread=0.57, use_max=True)


def test_device_hours_and_time_to_train_family(report: ValidationReport) -> None:
    """Device-hours and time to train: 18 rows, observed median 13.4%, p90 34.6% (Llama 3 8B's model card and
    Pythia 70M, whole campaigns below the benchmark rate, are the worst). Before DualPipe's expert GEMMs ran at
    DeepGEMM's dense rate: median 20.0%, p90 75.2%, the DeepSeek-V3 rows 2.4x over."""
    gate(family(report, CAMPAIGN), 18, median=0.15, spread=0.37)
