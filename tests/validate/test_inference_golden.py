"""Golden test: the published inference measurements of the shipped ground-truth inference.csv.

One set of calibration terms per engine profile, nothing fitted per row. Issue 5's target
is median APE <= 15% and p90 <= 35% on the dev rows; the figures reached (docs/inference.md)
are median 5.6% and p90 22.0% over 63 rows, so the stated regression tolerance is median
<= 8% and p90 <= 30%, with at most 10 rows skipped (each with its reason).

Issue 17 item 3: the skipped ids are pinned; TTFT, TPOT, end-to-end latency and throughput each have a gate at
the figure observed when it was set (commit 2c2e79e) plus a small margin; no row may be more than 3x off, and the
three rows beyond that are excluded by hand with the reason (the case files are read-only in CI).

Every gate here is a regression guard on today's in-sample state (terms tuned on these rows), not a claim that
the project's targets are met: those are held-out figures (leave one source, part or engine version out),
reported against the targets, misses included, in docs/validation.md "At a glance" (issue 35 item 5).
"""

from __future__ import annotations

import pytest
from golden_gates import ROW_BOUND, check_excluded, check_skips, family, gate, outside_row_bound

from gpuplan.validate.cases import read_rows
from gpuplan.validate.row_notes import unmodelled
from gpuplan.validate.run import ValidationReport, validate_file
from ground_truth import case_file

CASES = case_file("inference.csv")

pytestmark = pytest.mark.ground_truth("inference.csv")

_NO_LENGTHS = "input/output lengths not stated"
_NO_DRAFTS = "unstated number of draft tokens"
# The rows gpuplan skips, each with (a substring of) its reason. A new skip fails until it is named here.
# Disaggregated instances are modelled (G2I014-G2I016 decode with MTP, G2I022/G2I023 prefill); these state
# neither their lengths (I045, I077, I078, G2I026) nor how many tokens their speculative decoding drafts.
SKIPPED = {
    **{rid: _NO_LENGTHS for rid in ("I045", "I077", "I078", "G2I026")},
    **{rid: _NO_DRAFTS for rid in ("I079", "G2I017", "G2I018", "G2I019", "G2I024", "G2I025")},
    "I050": "confidence low",  # an author's estimate, not a measurement
    "I103": "confidence low",
    "I081": "states no request rate",
    "I082": "states no request rate",
    "I093": "names neither a request rate nor a dataset",
}
# Rows more than 3x off, excluded by hand: the modelling that would explain them is missing. The reasons live in
# validate/data/row_notes.yaml (`unmodelled`), which also keeps these rows out of every refit of terms.
EXCLUDED = unmodelled()
# Latencies measured at a stated request rate (MLPerf Server runs at 94-97% of the same system's Offline
# throughput): queueing outcomes near saturation, gated on their own (they tune no term: refit.fit_weight).
SERVER_LATENCY = frozenset(r["id"] for r in read_rows(CASES) if r.get("scenario") == "server"
                           and r.get("metric") in ("ttft_ms", "tpot_ms", "e2e_latency_s"))
THROUGHPUT = ("output_tokens_per_s_per_device", "output_tokens_per_s", "total_tokens_per_s", "requests_per_s")


def _split(report):  # type: ignore[no-untyped-def]
    """(dev rows the serving terms were tuned on, G2I* rows added later and never tuned on)."""
    dev = sorted(c.ape for c in report.cases if not c.id.startswith("G2"))
    new = sorted(c.ape for c in report.cases if c.id.startswith("G2"))
    return dev, new


def _median(a: list[float]) -> float:
    return a[len(a) // 2]


def _p90(a: list[float]) -> float:
    return a[int(0.9 * (len(a) - 1))]


def test_inference_dev_rows_do_not_regress() -> None:
    report = validate_file(CASES)
    for c in sorted(report.cases, key=lambda c: -c.ape):
        print(f"{c.id}: {c.metric} measured {c.measured:.4g} predicted {c.predicted:.4g} APE {c.ape:.1%} {c.detail}")
    print(f"median {report.median_ape:.1%} p90 {report.p90_ape:.1%} skipped {report.skipped}")
    dev, _ = _split(report)
    assert len(dev) >= 60
    assert _median(dev) <= 0.08
    assert _p90(dev) <= 0.30
    dev_skipped = [i for i, _ in report.skipped if not i.startswith("G2")]
    assert len(dev_skipped) <= 10, dev_skipped
    assert all(reason for _, reason in report.skipped)


def test_g2i_rows_do_not_regress() -> None:
    """The G2I* rows (H20, Ascend 910B, MI300X, L40S; H800 and 910C rows are disaggregated wide-EP
    deployments, skipped with the reason) were missed by a median of 56-63% (p90 124%) with terms fitted
    on NVIDIA parts. Issue 12 item 5: the engine x hardware terms of engines.yaml (one value per engine
    and part family, none per row) bring them to median 9.4%, p90 40.4% (docs/validation.md); the gate
    is the issue's median <= 25% and the observed p90 with a small margin."""
    report = validate_file(CASES)
    _, new = _split(report)
    assert len(new) >= 18
    assert len([i for i, _ in report.skipped if i.startswith("G2")]) <= 12
    assert _median(new) <= 0.25
    assert _p90(new) <= 0.45


@pytest.fixture(scope="module")
def report() -> ValidationReport:
    return validate_file(CASES)


def test_skipped_rows_are_the_pinned_ones(report: ValidationReport) -> None:
    check_skips(report, SKIPPED)


def test_no_row_more_than_3x_off(report: ValidationReport) -> None:
    """Worst observed besides the exclusions: I006 (TensorRT-LLM peak-throughput table, 2.3x) and G2I040
    (MI300X, 2.1x)."""
    check_excluded(report, EXCLUDED)
    assert not outside_row_bound(report, EXCLUDED), f"rows more than {ROW_BOUND:g}x off"


def test_ttft_family(report: ValidationReport) -> None:
    """TTFT at a fixed batch, 13 rows: observed median 5.6%, p90 12.9%."""
    gate(family(report, ("ttft_ms",), skip=EXCLUDED.keys() | SERVER_LATENCY), 13, median=0.075, spread=0.16)


def test_tpot_family(report: ValidationReport) -> None:
    """TPOT at a fixed batch, 2 rows: observed median 3.5%, max 4.8%."""
    gate(family(report, ("tpot_ms",), skip=EXCLUDED.keys() | SERVER_LATENCY), 2, median=0.06, spread=0.08,
         use_max=True)


def test_server_latency_family(report: ValidationReport) -> None:
    """Latencies of MLPerf Server runs at their stated rate (I055 TTFT, I060 TPOT; I056 beyond 3x is excluded):
    predicted at 0.39-0.46 of the measured times in sample (APE 55% and 61%): the simulator reaches the arrival
    rate at a smaller batch than the runs did (docs/validation.md). A gate on the state, not a target: it fails if
    they drift further; the rows weigh nothing in refits."""
    cases = family(report, ("ttft_ms", "tpot_ms", "e2e_latency_s"), skip=EXCLUDED)
    gate([c for c in cases if c.id in SERVER_LATENCY], 2, median=0.65, spread=0.70, use_max=True)


def test_e2e_latency_family(report: ValidationReport) -> None:
    """End-to-end latency, 11 rows: observed median 2.6%, p90 13.8%. The p90 is the MI300X batch-1 row G2I043
    (14% slow in sample): it had an all-reduce factor of its own that only it set (in sample 1%, held out 36%); the
    one-shot all-reduce that replaced it predicts it at 10% held out."""
    gate(family(report, ("e2e_latency_s",), skip=EXCLUDED), 11, median=0.04, spread=0.15)


def test_throughput_family(report: ValidationReport) -> None:
    """Output, total and per-device tokens/s and requests/s, 59 rows: observed median 5.7%, p90 21.8% (19.3%
    while G2I020, DeepSeek-V3's TP8 prefill on H20, was excluded as unmodelled at 3x off; with the expert
    width penalty scaled to the H20's SMs it is 1.6x off and counts)."""
    gate(family(report, THROUGHPUT, skip=EXCLUDED), 59, median=0.07, spread=0.225)
