"""plan infer with a cheap part for short requests (search/infer_length_split.py): JSON, table, zh, report, README.

The question: Llama-3.1-8B chat at 100 req/s, 97% of prompts 200-2000 tokens and 3% 30-32k-token documents,
p99 TTFT 1.5 s and TPOT 50 ms, whole 8-GPU servers from China's rental market (2026-12-05 catalog). No L40S
prefills a 32k prompt within 1.5 s, so the single fleet is 8 H200 (one server, 18.01 USD/hour); split at 1,870
prompt tokens, 15 L40S (two servers, 4.60) serve 90% of the requests and 4 H800 at TP2 (one server, 13.22) the
rest: 17.82, 1% less, under length_split_min_saving (10%): shown, not recommended; with the term at 0 it is.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuplan.cli.main import app

ARGS = ["plan", "infer", "-m", "llama3.1-8b", "--qps", "100", "--input-dist", "bins:200-2000=97,30000-32000=3",
        "--output-dist", "uniform:100-400", "--ttft-p99", "1.5", "--tpot-p99", "0.05",
        "--provider", "cn-rental-market", "--top", "3"]


@cache
def _plan() -> dict[str, Any]:
    res = CliRunner().invoke(app, [*ARGS, "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_the_split_is_planned_side_by_side_and_priced_against_the_single_fleet() -> None:
    plan = _plan()
    ls, rec = plan["length_split"], plan["recommended"]
    assert rec["accelerator"] == "h200-sxm-141gb" and rec["replicas"] == 8
    assert rec["cost_usd_per_hour"] == pytest.approx(18.01, abs=0.01)
    assert ls["tried"] is True and ls["spread_p99_over_p50"] == pytest.approx(27.8, abs=0.1)
    assert [t["threshold_tokens"] for t in ls["thresholds"]] == [1127, 1870, 2000]
    split = ls["split"]
    assert split["threshold_tokens"] == 1870 and split["weights"] == "fp8"
    short, long = split["short"], split["long"]
    assert (short["accelerator"], short["replicas"], short["layout"]["tp"]) == ("l40s-48gb", 15, 1)
    assert (long["accelerator"], long["replicas"], long["layout"]["tp"]) == ("h800-sxm5-80gb", 4, 2)
    assert short["share"] == pytest.approx(0.9, abs=1e-3) and short["qps"] == pytest.approx(90.0, abs=0.1)
    assert short["cost_usd_per_hour"] == pytest.approx(4.60, abs=0.01)
    assert long["cost_usd_per_hour"] == pytest.approx(13.22, abs=0.01)
    assert split["usd_per_hour"] == pytest.approx(17.82, abs=0.01)
    # each side simulated within the SLO at its load and at its headroom load
    for side in (short, long):
        assert side["ttft_p99_s"] <= 1.5 and side["tpot_p99_s"] <= 0.05
        assert side["at_headroom"]["ttft_p99_s"] <= 1.5 and side["at_headroom"]["tpot_p99_s"] <= 0.05
    # 1% cheaper: under length_split_min_saving (10%), so not recommended
    assert 0.0 < split["saving"] < 0.10 and ls["recommended"] is False
    assert ls["terms"]["length_split_min_saving"]["value"] == 0.10


def test_the_table_line_names_both_fleets_why_and_the_router_rule_en_and_zh() -> None:
    en = " ".join(CliRunner().invoke(app, [*ARGS, "--lang", "en"], terminal_width=400).output.split())
    assert ("Split by prompt length (each fleet simulated; not recommended: it saves 1%, under the 10% that a second "
            "fleet and a length-aware router must save (planner term length_split_min_saving)): prompts of at most "
            "1,870 tokens on 15 x l40s-48gb tp1 on cn-rental-8x-l40s (90% of requests, 4.60 USD/hour") in en
    assert "longer ones on 4 x h800-sxm5-80gb tp2 on cn-rental-8x-h800 (10% of requests, 13.22 USD/hour" in en
    assert "fp8, 17.82 USD/hour (-1% vs the recommendation" in en
    assert "send those of at most 1,870 to the short fleet" in en and "pd-profile-handler" in en
    zh = " ".join(CliRunner().invoke(app, [*ARGS, "--lang", "zh"], terminal_width=400).output.split())
    assert "按提示长度分流" in zh and "不超过 1,870 个 token 的提示走 15 个 l40s-48gb" in zh


def test_with_the_term_at_zero_the_split_is_recommended_and_the_report_says_so(tmp_path: Path) -> None:
    report = tmp_path / "split.md"
    res = CliRunner().invoke(app, [*ARGS, "--term", "length_split_min_saving=0", "--report", str(report)],
                             terminal_width=400)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "Recommended instead: split by prompt length (each fleet simulated to the SLO at its share of the rate)" in out
    md = report.read_text(encoding="utf-8")
    assert "## A cheap part for short requests: split by prompt length" in md
    assert "- Recommended instead: split by prompt length" in md


def test_the_readme_question_tries_no_split() -> None:
    # uniform:512-2048 prompts spread 1.6x (p99/p50), under 4: no side is planned
    res = CliRunner().invoke(app, ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-dist",
                                   "uniform:512-2048", "--output-dist", "uniform:128-512", "--ttft-p99", "2",
                                   "--tpot-p99", "0.05", "--json"])
    assert res.exit_code == 0, res.output
    ls = json.loads(res.stdout)["length_split"]
    assert ls["tried"] is False and ls["split"] is None and ls["thresholds"] == []
    assert ls["spread_p99_over_p50"] == pytest.approx(1.59, abs=0.01) and ls["spread_min"] == 4.0
