"""A cheap part for short requests: the length-split rule (search/infer_length_split.py) on stated loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.render.split_text import split_lines
from gpuplan.search.infer_length_split import (
    SPREAD_MIN,
    gap_threshold,
    length_split,
    prompt_spread,
    split_load,
    split_thresholds,
    truncate,
)
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.simulate.arrivals import Workload
from gpuplan.simulate.lengths import LengthDist, parse_length_dist

SLO = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.05)
CHAT = parse_length_dist("bins:200-2000=97,30000-32000=3")  # 97% chat turns, 3% 32k-token documents
OUT = LengthDist.uniform(100, 400)


def _load(dist: LengthDist, qps: float = 100.0) -> InferLoad:
    return InferLoad(qps=qps, input_len=dist, output_len=OUT)


def _fleet(acc: str, usd: float, *, weights: str = "fp8", ttft: float = 1.0, tpot: float = 0.03) -> dict[str, Any]:
    return {"accelerator": acc, "instance": f"{acc}-offer", "instances": 1, "replicas": 2, "devices": 2,
            "layout": {"tp": 1, "pp": 1, "ep": 1}, "weights": weights, "engine": "vllm", "cost_usd_per_hour": usd,
            "utilization": 0.6, "ttft_s": {"p99": ttft}, "tpot_s": {"p99": tpot},
            "at_headroom": {"ttft_p99_s": ttft * 1.1, "tpot_p99_s": tpot * 1.1}}


def test_fixed_and_narrow_lengths_are_never_split() -> None:
    # the README question's prompts (uniform:512-2048) spread 1.6x p99/p50: no split is tried, no side planned
    readme = _load(parse_length_dist("uniform:512-2048"), qps=20)
    assert prompt_spread(readme) == pytest.approx(2032.64 / 1280.0)
    assert split_thresholds(readme) == () and split_thresholds(_load(LengthDist.fixed(2000))) == ()

    def never(_: InferLoad) -> Sequence[Mapping[str, Any]]:
        raise AssertionError("a side was planned")

    rec = _fleet("h100-sxm5-80gb", 10.0)
    out = length_split(readme, SLO, never, recommended=rec, singles=[rec])
    assert out["tried"] is False and out["split"] is None and out["recommended"] is False
    assert split_lines({"length_split": out}, "en") == []


def test_thresholds_are_the_median_the_90th_percentile_and_the_gap_between_two_modes() -> None:
    load = _load(CHAT)
    # p50 = 200 + 1800 x 0.5 / 0.97 = 1127.8; p90 = 200 + 1800 x 0.9 / 0.97 = 1870.1; p99 in the 32k mode
    assert prompt_spread(load) >= SPREAD_MIN
    assert gap_threshold(load) == 2000  # 30000 / 2000 = 15 >= GAP_RATIO: the top of the chat mode
    assert split_thresholds(load) == (1127, 1870, 2000)


def test_each_side_is_its_share_of_the_rate_with_its_own_truncated_lengths() -> None:
    short, long, share = split_load(_load(CHAT), 2000)
    assert share == pytest.approx(0.97) and short is not None and long is not None
    assert short.qps == pytest.approx(97.0) and long.qps == pytest.approx(3.0)
    assert short.input_len.max == 2000 and short.input_len.mean == pytest.approx(1100.0)
    assert long.input_len.mean == pytest.approx(31000.0) and long.output_len is OUT
    # a bin straddling the threshold is cut by its share of lengths: uniform 1-100 at 40 keeps 40%
    part, kept = truncate(LengthDist.uniform(1, 100), 1, 40)
    assert kept == pytest.approx(0.4) and part is not None and part.max == 40


def test_a_trace_is_split_by_its_own_requests() -> None:
    lengths = np.array([500, 600, 32000, 700, 800, 31000, 900, 1000])
    trace = Workload(arrival_s=np.arange(8, dtype=np.float64), input_len=lengths,
                     output_len=np.full(8, 200), label="t")
    short, long, share = split_load(InferLoad.from_trace(trace), 1000)
    assert share == 0.75 and short is not None and long is not None and long.trace is not None
    assert list(long.trace.input_len) == [32000, 31000] and short.trace is not None and short.trace.n == 6


def _sides(short: list[dict[str, Any]], long: list[dict[str, Any]]) -> Any:
    def plan_side(side: InferLoad) -> Sequence[Mapping[str, Any]]:
        return short if side.input_len.max <= 2000 else long

    return plan_side


def test_a_cheaper_split_is_recommended_like_for_like() -> None:
    # single: 40 H100 at 107.60/h; split at 2000 tokens: L40S for the chat turns (40.00) + H100 for documents (30.00)
    rec = _fleet("h100-sxm5-80gb", 107.6)
    out = length_split(_load(CHAT), SLO, _sides([_fleet("l40s-48gb", 40.0)], [_fleet("h100-sxm5-80gb", 30.0)]),
                       recommended=rec, singles=[rec])
    split = out["split"]
    assert out["recommended"] is True and split["threshold_tokens"] == 1127  # the fake sides cost alike per T
    assert split["usd_per_hour"] == 70.0 and split["saving"] == pytest.approx(1 - 70.0 / 107.6)
    assert split["short"]["accelerator"] == "l40s-48gb" and split["long"]["accelerator"] == "h100-sxm5-80gb"
    lines = split_lines({"length_split": out}, "en")
    assert lines[0].startswith("Recommended instead: split by prompt length")
    assert "-35% vs the single-fleet recommendation" in lines[0] and "at most 1,127 to the short fleet" in lines[1]
    assert "按提示长度分流" in split_lines({"length_split": out}, "zh")[0]


def test_no_recommendation_when_dearer_off_format_or_missing_the_slo() -> None:
    rec = _fleet("h100-sxm5-80gb", 60.0)
    dear = length_split(_load(CHAT), SLO, _sides([_fleet("l40s-48gb", 40.0)], [_fleet("h100-sxm5-80gb", 30.0)]),
                        recommended=rec, singles=[rec])
    assert dear["recommended"] is False and dear["split"]["usd_per_hour"] == 70.0
    line = split_lines({"length_split": dear}, "en")[0]
    assert line.startswith("Split by prompt length (each fleet simulated; not recommended: it costs more than the "
                           "single-fleet recommendation)")
    # cheaper than the int4 recommendation, but an fp8 single fleet costs less than the fp8 split
    rec4 = _fleet("h100-sxm5-80gb", 107.6, weights="int4")
    fp8 = _fleet("h100-sxm5-80gb", 65.0)
    off = length_split(_load(CHAT), SLO, _sides([_fleet("l40s-48gb", 40.0)], [_fleet("h100-sxm5-80gb", 30.0)]),
                       recommended=rec4, singles=[rec4, fp8])
    assert off["recommended"] is False and off["split"]["single_same_format"]["cost_usd_per_hour"] == 65.0
    assert "not recommended: a single fleet at its weights (65.00 USD/hour) costs less" in split_lines(
        {"length_split": off}, "en")[0]
    # a side whose simulated p99 TTFT misses the SLO at the headroom load is no side; sides at two formats neither
    late = _fleet("l40s-48gb", 1.0, ttft=2.9)  # 2.9 s, 3.19 s at the headroom load
    int8 = _fleet("h100-sxm5-80gb", 1.0, weights="int8")
    none = length_split(_load(CHAT), SLO, _sides([late], [int8]), recommended=rec, singles=[rec])
    assert none["split"] is None and {t["outcome"] for t in none["thresholds"]} == {"no_common_weights"}
    assert split_lines({"length_split": none}, "en")[0].startswith("Split by prompt length tried (prompt p99/p50 27.8)")
    # the long side alone costs what the split must (60 less 10%): the short side is never planned
    planned: list[int] = []

    def counted(side: InferLoad) -> Sequence[Mapping[str, Any]]:
        planned.append(side.input_len.max)
        return [_fleet("h100-sxm5-80gb", 54.0)] if side.input_len.max > 2000 else [_fleet("l40s-48gb", 1.0)]

    over = length_split(_load(CHAT), SLO, counted, recommended=rec, singles=[rec])
    assert over["split"] is None and planned == [32000, 32000, 32000]
    assert [t["outcome"] for t in over["thresholds"]] == ["long_side_over_target"] * 3


def test_a_side_without_a_fleet_is_recorded_not_raised() -> None:
    def plan_side(side: InferLoad) -> Sequence[Mapping[str, Any]]:
        if side.input_len.max > 2000:
            raise InputError(field="ttft-p99", value=3.0, allowed="a TTFT that some hardware reaches")
        return [_fleet("l40s-48gb", 1.0)]

    rec = _fleet("h100-sxm5-80gb", 60.0)
    out = length_split(_load(CHAT), SLO, plan_side, recommended=rec, singles=[rec])
    assert out["split"] is None and [t["field"] for t in out["thresholds"]] == ["ttft-p99"] * 3


def test_a_split_saving_less_than_the_term_is_shown_not_recommended() -> None:
    # 100.00 against 107.60 saves 7%, under length_split_min_saving (10%); with the term at 0 it is recommended
    rec = _fleet("h100-sxm5-80gb", 107.6)
    sides = _sides([_fleet("l40s-48gb", 70.0)], [_fleet("h100-sxm5-80gb", 30.0)])
    small = length_split(_load(CHAT), SLO, sides, recommended=rec, singles=[rec], min_saving=0.10)
    assert small["split"]["saving"] == pytest.approx(0.0706, abs=1e-4) and small["recommended"] is False
    assert "not recommended: it saves 7%, under the 10% that a second fleet" in split_lines(
        {"length_split": small}, "en")[0]
    assert length_split(_load(CHAT), SLO, sides, recommended=rec, singles=[rec], min_saving=0.0)["recommended"]
