"""plan infer with a cheap part for short requests (search/infer_length_split.py): JSON, table, zh, report, README.

Llama-3.1-8B chat, 98.5% of prompts 200-2000 tokens and 1.5% 30-32k-token documents, p99 TTFT 1.5 s and TPOT 50 ms,
output 100-400 tokens, whole 8-GPU servers from China's rental market (`--provider cn-rental-market`, 2026-12-05
catalog). No L40S prefills a 32k prompt within 1.5 s, so every single fleet is on a dearer part:

- at 300 req/s the recommendation is 15 A100 80GB at TP4, int8 (two servers, 38.32 USD/hour; H100 and B200 rented
  in China are blocked by export findings); split at the median prompt (1,113 tokens), 16 L40S (two servers, 4.60)
  take the shorter half and 16 H800 (two servers, 26.44) the rest, both fp8: 31.04, 19% less, and less than the
  cheapest fp8 single fleet (19 H800, 39.66): recommended;
- at 100 req/s with 3% documents the single fleet is 8 H200 (one server, 18.01); split at 1,870 tokens, 15 L40S
  (4.60) + 4 H800 at TP2 (13.22) cost 17.82, 1% less, under length_split_min_saving (10%): shown, not recommended.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from gpuplan.cli.main import app

COMMON = ["plan", "infer", "-m", "llama3.1-8b", "--output-dist", "uniform:100-400", "--ttft-p99", "1.5",
          "--tpot-p99", "0.05", "--provider", "cn-rental-market", "--top", "3"]
WINS = [*COMMON, "--qps", "300", "--input-dist", "bins:200-2000=985,30000-32000=15"]
NEAR = [*COMMON, "--qps", "100", "--input-dist", "bins:200-2000=97,30000-32000=3"]


@cache
def _plan(near: bool = False) -> dict[str, Any]:
    res = CliRunner().invoke(app, [*(NEAR if near else WINS), "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_the_split_wins_with_l40s_for_short_prompts_and_h800_for_the_rest() -> None:
    plan = _plan()
    ls, rec = plan["length_split"], plan["recommended"]
    assert (rec["accelerator"], rec["replicas"], rec["layout"]["tp"], rec["weights"]) == ("a100-sxm4-80gb", 15, 4,
                                                                                         "int8")
    assert rec["cost_usd_per_hour"] == pytest.approx(38.32, abs=0.01)
    assert ls["tried"] is True and ls["spread_p99_over_p50"] == pytest.approx(27.5, abs=0.1)
    assert [t["threshold_tokens"] for t in ls["thresholds"]] == [1113, 1844, 2000]
    split = ls["split"]
    assert split["threshold_tokens"] == 1113 and split["weights"] == "fp8"
    short, long = split["short"], split["long"]
    assert (short["accelerator"], short["replicas"], short["instances"]) == ("l40s-48gb", 16, 2)
    assert (long["accelerator"], long["replicas"], long["layout"]["tp"]) == ("h800-sxm5-80gb", 16, 1)
    assert short["share"] == pytest.approx(0.5, abs=1e-3) and short["qps"] == pytest.approx(150.0, abs=0.1)
    assert short["cost_usd_per_hour"] == pytest.approx(4.60, abs=0.01)
    assert long["cost_usd_per_hour"] == pytest.approx(26.44, abs=0.01)
    assert split["usd_per_hour"] == pytest.approx(31.04, abs=0.01) and split["saving"] == pytest.approx(0.19, abs=0.01)
    # like for like: the cheapest fp8 single fleet (19 H800) costs more than the fp8 split
    assert split["single_same_format"]["cost_usd_per_hour"] == pytest.approx(39.66, abs=0.01)
    # each side simulated within the SLO at its load and at its headroom load
    for side in (short, long):
        assert side["ttft_p99_s"] <= 1.5 and side["tpot_p99_s"] <= 0.05
        assert side["at_headroom"]["ttft_p99_s"] <= 1.5 and side["at_headroom"]["tpot_p99_s"] <= 0.05
    assert ls["recommended"] is True and ls["terms"]["length_split_min_saving"]["value"] == 0.10
    # the split's 80% cost band: its sides' bands added end to end, around the sum
    lo, hi = split["band_usd_per_hour"]
    assert lo == pytest.approx(short["band"]["cost_usd_per_hour"][0] + long["band"]["cost_usd_per_hour"][0])
    assert lo < split["usd_per_hour"] < hi and short["confidence"]["level"] == "low"


def test_the_table_and_the_report_recommend_the_split_with_the_router_rule_en_and_zh(tmp_path: Path) -> None:
    report = tmp_path / "split.md"
    res = CliRunner().invoke(app, [*WINS, "--lang", "en", "--report", str(report)], terminal_width=400)
    assert res.exit_code == 0, res.output
    en = " ".join(res.output.split())
    assert ("Recommended instead: split by prompt length (each fleet simulated to the SLO at its share of the rate): "
            "prompts of at most 1,113 tokens on 16 x l40s-48gb tp1 on cn-rental-8x-l40s (50% of requests, 4.60 "
            "USD/hour, utilization 99%") in en
    assert "longer ones on 16 x h800-sxm5-80gb tp1 on cn-rental-8x-h800 (50% of requests, 26.44 USD/hour" in en
    lo, hi = _plan()["length_split"]["split"]["band_usd_per_hour"]
    assert (f"fp8, 31.04 ({lo:,.2f}-{hi:,.2f}) USD/hour (-19% vs the single-fleet recommendation, which serves int8 "
            "weights: not like for like; cheaper than every single fleet listed at its weights") in en
    assert "send those of at most 1,113 to the short fleet" in en and "pd-profile-handler" in en
    md = report.read_text(encoding="utf-8")
    assert "## A cheap part for short requests: split by prompt length" in md
    assert "- Recommended instead: split by prompt length" in md
    page = tmp_path / "split.html"
    zh = " ".join(CliRunner().invoke(app, [*WINS, "--lang", "zh", "--report", str(page)],
                                     terminal_width=400).output.split())
    assert "改为推荐：按提示长度分流" in zh and "不超过 1,113 个 token 的提示走 16 个 l40s-48gb" in zh
    html = page.read_text(encoding="utf-8")
    assert '<h2 id="sec-length_split">短请求用便宜硬件：按提示长度分流</h2>' in html
    assert "不超过 1,113 个 token 的提示走 16 个 l40s-48gb" in html


def test_a_split_saving_one_percent_is_shown_not_recommended() -> None:
    plan = _plan(near=True)
    ls, rec = plan["length_split"], plan["recommended"]
    assert (rec["accelerator"], rec["replicas"]) == ("h200-sxm-141gb", 8)
    assert rec["cost_usd_per_hour"] == pytest.approx(18.01, abs=0.01)
    split = ls["split"]
    assert split["threshold_tokens"] == 1870 and split["usd_per_hour"] == pytest.approx(17.82, abs=0.01)
    assert (split["short"]["accelerator"], split["short"]["replicas"]) == ("l40s-48gb", 15)
    assert (split["long"]["accelerator"], split["long"]["replicas"], split["long"]["layout"]["tp"]) == (
        "h800-sxm5-80gb", 4, 2)
    assert 0.0 < split["saving"] < 0.02 and ls["recommended"] is False


def test_the_readme_question_tries_no_split() -> None:
    # uniform:512-2048 prompts spread 1.6x (p99/p50), under 4: no side is planned
    res = CliRunner().invoke(app, ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-dist",
                                   "uniform:512-2048", "--output-dist", "uniform:128-512", "--ttft-p99", "2",
                                   "--tpot-p99", "0.05", "--json"])
    assert res.exit_code == 0, res.output
    ls = json.loads(res.stdout)["length_split"]
    assert ls["tried"] is False and ls["split"] is None and ls["thresholds"] == []
    assert ls["spread_p99_over_p50"] == pytest.approx(1.59, abs=0.01) and ls["spread_min"] == 4.0


def test_a_trace_is_split_by_its_own_requests_and_says_why_no_split_was_kept(tmp_path: Path) -> None:
    # 3,000 Poisson requests at 30 req/s, 3% of prompts 30-32k tokens: the long side alone (one A100 server, 9.58
    # USD/hour) costs what the single fleet does, at every threshold, so no short side is planned
    from gpuplan.render.split_text import split_lines

    rng = np.random.default_rng(1)
    arrival = np.cumsum(rng.exponential(1 / 30, 3000))
    prompt = np.where(rng.random(3000) < 0.03, rng.integers(30000, 32001, 3000), rng.integers(200, 2001, 3000))
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,input_len,output_len\n" + "".join(
        f"{a:.4f},{p},{o}\n" for a, p, o in zip(arrival, prompt, rng.integers(100, 401, 3000), strict=True)))
    res = CliRunner().invoke(app, ["plan", "infer", "-m", "llama3.1-8b", "--trace", str(trace), "--ttft-p99", "1.5",
                                   "--tpot-p99", "0.05", "--provider", "cn-rental-market", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    ls = plan["length_split"]
    assert ls["tried"] is True and ls["split"] is None and ls["spread_p99_over_p50"] > 4
    rec_usd = plan["recommended"]["cost_usd_per_hour"]
    assert [t["outcome"] for t in ls["thresholds"]] == ["long_side_over_target"] * 3
    assert all(t["long_usd_per_hour"] >= rec_usd * 0.9 for t in ls["thresholds"])
    assert 0.49 < ls["thresholds"][0]["short_share"] < 0.51  # the trace's own median request
    assert split_lines(plan, "en")[0].startswith("Split by prompt length tried (prompt p99/p50")
