"""Cross-validation machinery: source keys, error ratios, the refit of terms tuned on ground truth."""

from __future__ import annotations

import math

import pytest

from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import load_catalog
from gpuplan.validate.cases import read_rows
from gpuplan.validate.refit import FIT_CAP, _golden, capped_abs_log, error_ratio, refit, term_groups, without_part_terms
from gpuplan.validate.sources import source_key
from gpuplan.validate.training_cases import evaluate_training_row
from ground_truth import case_file

CASES = case_file("training.csv")


@pytest.mark.parametrize(("text", "key"), [
    ("mosaicml/llm-foundry scripts/train/benchmarking/README.md @4953 (2024)", "github:mosaicml/llm-foundry"),
    ("https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/performance.md", "github:nvidia/tensorrt-llm"),
    ("Touvron et al. 2023 LLaMA arXiv:2302.13971 Table 15 (PDF p11)", "arxiv:2302.13971"),
    ("AMD ROCm 'Performance results' page (https://www.amd.com/en/developer/resources.html)", "web:amd.com/en"),
    ("Luccioni et al. 2022 'Estimating the Carbon Footprint of BLOOM' Table 1", "text:luccioni et al"),
])
def test_source_key_groups_rows_of_one_publication(text: str, key: str) -> None:
    assert source_key(text) == key


def test_error_ratio_is_in_rate_orientation() -> None:
    # a run twice as fast as predicted: ratio 2 whether the metric is a rate or a time
    assert error_ratio("tokens_per_s_per_device", 200.0, 100.0) == 2.0
    assert error_ratio("step_time_s", 1.0, 2.0) == 2.0
    assert error_ratio("peak_mem_gib_per_device", 30.0, 20.0) == 1.5
    assert capped_abs_log([1.2, 1 / 1.2, 1.0]) == pytest.approx(2 * math.log(1.2) / 3)


def test_golden_section_finds_the_minimum_on_a_log_scale() -> None:
    best = _golden(lambda v: abs(math.log(v / 0.37)), 0.1, 1.0, evals=30)
    assert best == pytest.approx(0.37, rel=1e-3)


def test_groups_tie_terms_tuned_on_the_same_rows() -> None:
    groups = {g.names: g for g in term_groups(default_calibration(), "training")}
    gh100 = next(n for n in groups if "compute_efficiency.h100-sxm5-80gb.bf16" in n)
    assert "compute_efficiency.h200-sxm-141gb.bf16" in gh100  # same die, one fitted value
    orders = [g.order for g in term_groups(default_calibration(), "training")]
    assert orders == sorted(orders)  # shared terms, then parts, then pooled defaults


def test_a_part_without_rows_loses_its_own_terms() -> None:
    cal = without_part_terms(default_calibration(), {"ascend-910b"})
    assert "compute_efficiency.ascend-910b.bf16" not in cal.terms
    assert "compute_efficiency.default.bf16" in cal.terms
    assert "compute_efficiency.a100-sxm4-80gb.bf16" in cal.terms


@pytest.mark.ground_truth("training.csv")
def test_refit_of_a_part_term_does_not_do_worse_than_the_shipped_value_on_its_rows() -> None:
    cat = load_catalog()
    rows = [r for r in read_rows(CASES) if r["accelerator"] == "ascend-910b" and r["heads"]]
    cal = default_calibration()
    # one group: the 910B bins share the 910B's efficiency (the same die)
    group = [g for g in term_groups(cal, "training") if "compute_efficiency.ascend-910b.bf16" in g.names]
    bins = {f"compute_efficiency.ascend-910b{b}.bf16" for b in ("", "2", "3", "4")}
    assert len(group) == 1 and set(group[0].names) == bins

    def score(c: object) -> float:
        ratios = []
        for r in rows:
            res = evaluate_training_row(r, cat, c)  # type: ignore[arg-type]
            ratios.append(error_ratio(res.metric, res.measured, res.predicted))
        return capped_abs_log(ratios)

    fitted_cal, fitted = refit(rows, cal, lambda r, c: evaluate_training_row(r, cat, c), file="training",
                               groups=group, evals=10)
    assert set(fitted) == bins and len(set(fitted.values())) == 1
    assert score(fitted_cal) <= score(cal) + 1e-9
    # held out entirely, the part's terms are removed and the default applies
    loao, _ = refit([], cal, lambda r, c: evaluate_training_row(r, cat, c), file="training", groups=group)
    assert not bins & set(loao.terms)


def test_the_fit_counts_vendor_rows_less_and_caps_a_missed_row() -> None:
    """Every row moves the objective; a row off by more than e^FIT_CAP counts as if it were off by that much, so one
    run the model misses for a reason of its own cannot drag a shared term; vendor rows weigh less."""
    e = math.e
    assert capped_abs_log([e**0.1, e**0.2, e**0.3]) == pytest.approx(0.2)
    assert capped_abs_log([e**0.1, e**0.2, e**3.0]) == pytest.approx((0.1 + 0.2 + FIT_CAP) / 3)  # capped
    assert capped_abs_log([e**0.1, e**0.2, e**5.0]) == capped_abs_log([e**0.1, e**0.2, e**3.0])
    assert capped_abs_log([e**0.1, e**0.3], [1.0, 0.5]) == pytest.approx((0.1 + 0.15) / 1.5)
    assert capped_abs_log([e**0.1, e**0.3], [0.0, 0.0]) == pytest.approx(0.2)  # no weight left: rows count equally


def test_a_latency_at_a_stated_request_rate_does_not_steer_a_fit() -> None:
    """Regression: a TensorRT-LLM fold moved the KV read efficiency from 0.80 to 0.54 so that two MLPerf server
    rows (TPOT and TTFT at 97% of capacity) saturated; every throughput row of the fold got 30% slower. A latency at
    a stated rate is predicted and reported, never fitted (refit.fit_weight)."""
    from gpuplan.estimate.calibration import Calibration, CalibrationTerm, TunedOn
    from gpuplan.validate.memory_cases import CaseResult
    from gpuplan.validate.refit import fit_weight

    tuned = TunedOn(file="inference", bounds=(0.3, 1.0))
    cal = Calibration(schema_version=1, as_of="test", terms={"eff": CalibrationTerm(
        value=0.8, unit="fraction", source="test", applies_to=("infer",), tuned_on=tuned)})
    capacity_qps = 400.0  # a run at 390 qps: an M/M/1 wait 1 / (capacity x eff - rate) blows up below eff 0.975

    def evaluate(row: dict[str, str], c: Calibration) -> CaseResult:
        eff = c.terms["eff"].value
        if row["metric"] == "tpot_ms":
            service = capacity_qps * eff
            predicted = 1e3 / max(service - 390.0, 0.05)
        else:
            predicted = 1000.0 * eff
        return CaseResult(id=row["id"], metric=row["metric"], measured=float(row["value"]), predicted=predicted,
                          confidence="high", detail="")

    rows = [{"id": f"T{i}", "metric": "output_tokens_per_s", "scenario": "offline", "value": "800",
             "accelerator": "x"} for i in range(3)]
    server = [{"id": f"S{i}", "metric": "tpot_ms", "scenario": "server", "value": "1000", "accelerator": "x"}
              for i in range(3)]
    assert fit_weight(server[0]) == 0.0 and fit_weight(rows[0]) == 1.0
    assert fit_weight({**server[0], "metric": "output_tokens_per_s"}) == 1.0  # a server row's throughput is fitted
    assert fit_weight({**server[0], "scenario": "fixed_batch"}) == 1.0  # a latency of a fixed batch is fitted
    _, fitted = refit(rows + server, cal, evaluate, file="inference", evals=30)  # type: ignore[arg-type]
    assert fitted["eff"] == pytest.approx(0.8, rel=0.02)  # the throughput rows' value, not the queue's 0.98


def test_a_part_keeps_the_terms_its_remaining_rows_pin() -> None:
    """Regression: AMD's MI300X rows held out, the MLPerf MI300X row still pinned the part's bandwidth term, but
    the all-reduce term (moved only by a held-out batch-1 latency row) fell back and took every MI300X term with it.
    A group that no remaining row moves falls back alone."""
    from gpuplan.estimate.calibration import Calibration, CalibrationTerm, TunedOn
    from gpuplan.validate.memory_cases import CaseResult

    def term(v: float, engine: tuple[str, ...]) -> CalibrationTerm:
        return CalibrationTerm(value=v, unit="x", source="test", applies_to=("infer",), tuned_on=TunedOn(
            file="inference", accelerator=("x1",), engine=engine, bounds=(0.1, 1.0)))

    cal = Calibration(schema_version=1, as_of="test", terms={"bw.x1.hw-a": term(0.5, ()),
                                                             "ar.x1.hw-a": term(0.3, ("e",))})

    def evaluate(row: dict[str, str], c: Calibration) -> CaseResult:
        bw = c.terms["bw.x1.hw-a"].value if "bw.x1.hw-a" in c.terms else 0.8  # 0.8: the engine default
        return CaseResult(id=row["id"], metric="output_tokens_per_s", measured=float(row["value"]),
                          predicted=1000.0 * bw, confidence="high", detail="")

    rows = [{"id": "T1", "metric": "output_tokens_per_s", "scenario": "offline", "value": "400",
             "accelerator": "x1", "engine": "e"}]
    fitted_cal, fitted = refit(rows, cal, evaluate, file="inference", evals=30)  # type: ignore[arg-type]
    assert "ar.x1.hw-a" not in fitted_cal.terms  # no row moves it: the default applies
    assert fitted["bw.x1.hw-a"] == pytest.approx(0.4, rel=0.02)  # still fitted on the part's remaining row


def test_a_group_that_only_queue_rows_move_is_not_fitted_on_them() -> None:
    """Regression: with every affected row weighing 0, the objective counted them equally again, so a term that
    only server-latency rows move was fitted to the queue after all. Such rows cannot tune a term: the group keeps
    its value (or, for a part's term, falls back to the default)."""
    from gpuplan.estimate.calibration import Calibration, CalibrationTerm, TunedOn
    from gpuplan.validate.memory_cases import CaseResult

    cal = Calibration(schema_version=1, as_of="test", terms={"eff": CalibrationTerm(
        value=0.99, unit="fraction", source="test", applies_to=("infer",),
        tuned_on=TunedOn(file="inference", bounds=(0.3, 1.0)))})

    def evaluate(row: dict[str, str], c: Calibration) -> CaseResult:
        predicted = 1e3 / max(400.0 * c.terms["eff"].value - 390.0, 0.05)  # M/M/1 wait at 390 of 400 x eff qps
        return CaseResult(id=row["id"], metric="tpot_ms", measured=float(row["value"]), predicted=predicted,
                          confidence="high", detail="")

    server = [{"id": f"S{i}", "metric": "tpot_ms", "scenario": "server", "value": "1000", "accelerator": "x"}
              for i in range(3)]
    fitted_cal, fitted = refit(server, cal, evaluate, file="inference", evals=30)  # type: ignore[arg-type]
    assert "eff" not in fitted and fitted_cal.terms["eff"].value == 0.99  # the queue alone wanted 0.975


def test_every_term_tuned_on_rows_is_refitted_in_each_fold() -> None:
    """Issue 35 item 5: a term whose value was tuned on rows must be refitted in every fold. The training overlaps,
    the MoE GEMM efficiency and the campaign efficiency had been retuned on training.csv (commit 9b84318 moved
    tp_overlap 0.85 -> 0.77, dp_overlap 0.5 -> 0.38, zero3_overlap 1.0 -> 0.8, campaign_efficiency 0.8 -> 0.7) without
    `tuned_on`, so every fold kept their tuned values. Any term whose text says it was tuned carries `tuned_on`, or
    is a rule on tuned terms that each fold re-derives (refit.DEFAULT_RULES)."""
    from gpuplan.validate.refit import DEFAULT_RULES
    from gpuplan.validate.serving_terms import SHARED, serving_calibration

    cal = default_calibration()
    fitted = {n for g in term_groups(cal, "training") for n in g.names}
    assert {"tp_overlap", "dp_overlap", "zero3_overlap", "moe_gemm_efficiency", "campaign_efficiency"} <= fitted
    for name, term in cal.terms.items():
        says = f"{term.source} {term.note or ''}".lower()
        if "tuned on" in says:
            assert term.tuned_on is not None or name in DEFAULT_RULES, name
    serving = {n for g in term_groups(serving_calibration(), "inference") for n in g.names}
    assert {"serve.roofline_overlap_exponent", "serve.allreduce_latency_factor"} <= serving
    assert {f"serve.{n}" for n in SHARED} <= serving and "serve.mtp_acceptance" not in serving


def test_default_efficiencies_are_rederived_from_the_parts_left_in_a_fold() -> None:
    """compute_efficiency.default.bf16 is 'the lowest of the tuned parts' (0.55, the H100's own value): with the
    H100 held out the rule gives the lowest of the others, the B200's 0.60; fp8's 0.45 sits at 0.45 / 0.43 of the
    lowest tuned fp8 part (B200), so with the B200 held out it follows the H100's 0.47 to 0.45 x 0.47 / 0.43."""
    from gpuplan.validate.refit import derive_defaults

    cal = default_calibration()
    no_h100 = derive_defaults(without_part_terms(cal, {"h100-sxm5-80gb"}), cal)
    assert no_h100.terms["compute_efficiency.default.bf16"].value == pytest.approx(0.60)
    no_b200 = derive_defaults(without_part_terms(cal, {"b200-sxm-180gb"}), cal)
    assert no_b200.terms["compute_efficiency.default.fp8"].value == pytest.approx(0.45 * 0.47 / 0.43)
    assert derive_defaults(cal, cal).terms["compute_efficiency.default.bf16"].value == pytest.approx(0.55)


def test_shared_serving_terms_are_fitted_on_gpu_rows_only() -> None:
    # Regression: the CloudMatrix384 rows (Ascend 910C, CANN) fitted the shared GPU-kernel defaults with the rest;
    # in the fold without TensorRT-LLM's own tables they pulled attention_efficiency from 0.45 to 0.79 and that
    # fold's held-out median from 7% to 13%. An NPU row is predicted from the defaults, never fits them.
    from gpuplan.validate.refit import row_matches
    from gpuplan.validate.serving_terms import GPU_STACKS, serving_calibration

    cal = serving_calibration()
    shared = cal.terms["serve.attention_efficiency"].tuned_on
    own = cal.terms["serve.trtllm.step_overhead_s"].tuned_on
    assert shared is not None and own is not None and shared.stack == own.stack == GPU_STACKS
    ascend = {"id": "x", "accelerator": "ascend-910c-cm384", "engine": "mindie", "model": "deepseek-v3"}
    h200 = {"id": "y", "accelerator": "h200-sxm-141gb", "engine": "trtllm", "model": "deepseek-v3"}
    mi300 = {"id": "z", "accelerator": "mi300x-192gb", "engine": "vllm", "model": "llama3.1-70b"}
    assert not row_matches(shared, ascend)
    assert row_matches(shared, h200) and row_matches(shared, mi300) and row_matches(own, h200)
    # a training term states no stack: every row
    train = next(t.tuned_on for t in default_calibration().terms.values() if t.tuned_on is not None)
    assert train.stack == () and row_matches(train.model_copy(update={"accelerator": ()}), ascend)


def test_a_held_out_term_with_a_prior_takes_the_prior_not_the_gpu_default() -> None:
    # Regression: vllm-ascend's per-layer host time (1 ms, tuned on GPUStack's 910B rows) fell back to the CUDA-graph
    # default (0.02 ms) in every fold that held GPUStack out, and its rows read up to 11x fast there (G2I036: 122.7 ms
    # per output token measured, 11 ms predicted). A term whose rows are all held out now takes the value another
    # source gives (TunedOn.prior: vllm-ascend issue 4984, DeepSeek-V3 on A2 at one request, 0.7 ms per layer).
    from test_serving_classes import QWEN3_MOE_910B_TPOT

    from gpuplan.validate.refit import _without
    from gpuplan.validate.serving_terms import engine_for, serving_calibration, serving_evaluator

    cal = serving_calibration()
    name = "layer_overhead_s.ascend-910b.hw-vllm-ascend"
    tuned = cal.terms[name].tuned_on
    assert tuned is not None and tuned.prior == pytest.approx(0.0007) and "4984" in tuned.prior_source
    for fold in (_without(cal, [name]), without_part_terms(cal, {"ascend-910b"})):
        assert fold.terms[name].value == pytest.approx(0.0007)
        prof = engine_for(fold)("vllm").for_accelerator("ascend-910b")
        assert prof.value("layer_overhead_s") == pytest.approx(0.0007)
    # MindIE's per-layer host time (0.5 ms, derived from GPUStack's page) takes the same Ascend host floor as its prior
    mindie = "layer_overhead_s.ascend-910b.hw-mindie-ascend"
    assert _without(cal, [mindie]).terms[mindie].value == pytest.approx(0.0007)
    assert "4984" in (cal.terms[mindie].tuned_on.prior_source if cal.terms[mindie].tuned_on else "")
    # a term with no prior still leaves for the default
    attention = "attention_efficiency.ascend-910b.hw-vllm-ascend"
    assert cal.terms[attention].tuned_on is not None and cal.terms[attention].tuned_on.prior is None
    assert attention not in _without(cal, [attention]).terms
    # the held-out MoE decode row: within 40% of the published 122.7 ms (11x fast with the CUDA default)
    held = without_part_terms(cal, {"ascend-910b"})
    res = serving_evaluator(load_catalog(use_user_dir=False))(dict(QWEN3_MOE_910B_TPOT), held)
    assert 0.6 < res.predicted / res.measured < 1.0


def test_a_prior_names_its_source() -> None:
    from pydantic import ValidationError

    from gpuplan.estimate.calibration import TunedOn

    with pytest.raises(ValidationError, match="prior_source"):
        TunedOn(file="inference", bounds=(0.1, 1.0), prior=0.5)


def test_each_source_weighs_as_one_in_a_fit() -> None:
    """Regression (b7724b4): rows were weighed alike, so a source with 43 rows of one part set the part's term in
    every fold that held out another source of that part (InternEvo's A100 rows read 10% held out, 3.5% with sources
    weighed alike). Nine rows of one table and one row of a paper, wanting 0.9 and 0.7: row weights land on the
    table's value; with sources weighed alike the two pull equally."""
    from gpuplan.estimate.calibration import Calibration, CalibrationTerm, TunedOn
    from gpuplan.validate.memory_cases import CaseResult
    from gpuplan.validate.refit import source_weights

    cal = Calibration(schema_version=1, as_of="test", terms={"eff": CalibrationTerm(
        value=0.7, unit="fraction", source="test", applies_to=("train",),
        tuned_on=TunedOn(file="training", bounds=(0.3, 1.0)))})

    def evaluate(row: dict[str, str], c: Calibration) -> CaseResult:
        return CaseResult(id=row["id"], metric="tokens_per_s_per_device", measured=float(row["value"]),
                          predicted=1000.0 * c.terms["eff"].value, confidence="high", detail="")

    table = [{"id": f"F{i}", "metric": "tokens_per_s_per_device", "value": "900", "accelerator": "x",
              "source": "mosaicml/llm-foundry scripts/train/benchmarking/README.md"} for i in range(9)]
    paper = [{"id": "P1", "metric": "tokens_per_s_per_device", "value": "700", "accelerator": "x",
              "source": "Touvron et al. 2023 LLaMA arXiv:2302.13971 Table 15"}]
    assert source_weights(table + paper, 1.0) == pytest.approx([1 / 9] * 9 + [1.0])
    assert source_weights(table + paper, 0.0) == [1.0] * 10
    _, by_row = refit(table + paper, cal, evaluate, file="training", evals=40, source_balance=0.0)  # type: ignore[arg-type]
    _, by_source = refit(table + paper, cal, evaluate, file="training", evals=40)  # type: ignore[arg-type]
    assert by_row["eff"] == pytest.approx(0.9, rel=0.02)
    # an L1 fit of two equal weights is flat between them: anywhere in [0.7, 0.9], not pinned to the table's end
    assert 0.69 <= by_source["eff"] < 0.88


def test_a_parts_16_bit_efficiency_is_tuned_on_its_16_bit_rows_only() -> None:
    """Regression: the B200/GB200 16-bit efficiency named no precision, so in the fold holding NeMo's B200 bf16 rows
    out it was fitted on FP8 MoE rows alone, which reach it only through their attention (run at the 16-bit rate):
    0.60 -> 0.42, and NeMo's long-sequence B200 rows read up to 28% slow held out (0.5% before). Every other part's
    16-bit term is tuned on bf16/fp16 rows, its fp8 term on fp8 rows."""
    cal = default_calibration()
    for name, t in cal.terms.items():
        if name.startswith("compute_efficiency.") and t.tuned_on is not None and name.split(".")[1] != "default":
            want = {"bf16": {"bf16", "fp16"}, "fp8": {"fp8"}}[name.rsplit(".", 1)[1]]
            assert set(t.tuned_on.precision) == want, name


def test_a_refit_searches_a_shared_serving_term_inside_its_published_range() -> None:
    # Regression: the fold holding LMDeploy's rows out refitted the shared prefill attention term from 0.45 to 0.28
    # (below FlashAttention-1's 25-40% of the A100 peak) and the KV read term of other engines past the 50-80% that
    # paged-attention kernels publish, because the refit searched a third to three times the value whatever the
    # kernels' papers say. A term whose source states a range is now searched inside it; others keep the default.
    from gpuplan.validate.serving_terms import serving_calibration
    from gpuplan.workload.engines import load_engines

    cal = serving_calibration()
    shared = next(iter(load_engines().values())).terms
    for name in ("attention_efficiency", "kv_read_efficiency", "memory_bw_efficiency", "roofline_overlap_exponent",
                 "layer_overhead_s"):
        lo, hi = shared[name].literature_range or (None, None)
        assert lo is not None and hi is not None and shared[name].literature_range_source, name
        tuned = cal.terms[f"serve.{name}"].tuned_on
        assert tuned is not None and tuned.bounds == pytest.approx((lo, hi)), name
    assert cal.terms["serve.attention_efficiency"].tuned_on.bounds[0] == pytest.approx(0.25)  # type: ignore[union-attr]
    # one published end: the other is the refit's default (a third of the value)
    gemm = cal.terms["serve.gemm_efficiency"]
    assert gemm.tuned_on is not None and gemm.tuned_on.bounds == pytest.approx((0.7 / 3, 0.80))
    # no stated range: a third to three times the value
    req = cal.terms["serve.request_overhead_s"]
    assert req.tuned_on is not None and req.tuned_on.bounds == pytest.approx((0.008 / 3, 0.024))


def test_a_literature_range_must_hold_the_value_and_name_its_source() -> None:
    from pydantic import ValidationError

    from gpuplan.workload.engine_parts import EngineTerm

    base = {"value": 0.45, "unit": "fraction", "source": "s", "as_of": "2026-12-07", "explanation": "e"}
    ok = EngineTerm.model_validate({**base, "literature_range": [0.25, 0.75], "literature_range_source": "FA papers"})
    assert ok.literature_range == (0.25, 0.75)
    assert EngineTerm.model_validate({**base, "literature_range": [None, 0.8],
                                      "literature_range_source": "x"}).literature_range == (None, 0.8)
    with pytest.raises(ValidationError, match="outside its literature_range"):
        EngineTerm.model_validate({**base, "literature_range": [0.5, 0.8], "literature_range_source": "x"})
    with pytest.raises(ValidationError, match="needs literature_range_source"):
        EngineTerm.model_validate({**base, "literature_range": [0.25, 0.75]})
    with pytest.raises(ValidationError, match="at least one end"):
        EngineTerm.model_validate({**base, "literature_range": [None, None], "literature_range_source": "x"})
