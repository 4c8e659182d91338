"""The JSON contract and the words of "how sure" (issue 12) on the CLI: plan train, plan infer, compare, validate."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuplan.cli.main import app
from ground_truth import GROUND_TRUTH

runner = CliRunner()
QUICK = ["plan", "train", "--model", "llama3-8b", "--tokens", "1e12", "--deadline", "30"]
INFER = ["plan", "infer", "-m", "llama3.1-8b", "--qps", "5", "--input-len", "1024", "--output-len", "256",
         "--ttft-p99", "3", "--tpot-p99", "0.1"]
GT = GROUND_TRUTH


def _ok(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and res.exception is None, res.output
    return res.output


def test_plan_train_json_every_plan_and_the_recommendation_carry_band_and_confidence() -> None:
    out = json.loads(_ok([*QUICK, "--json"]))
    for p in [*out["plans"], out["recommended"]]:
        assert {"time_to_train_s", "cost_usd"} <= set(p["band"]) or p.get("cost_usd") is None
        assert "time_to_train_s" in p["band"]
        c = p["confidence"]
        assert c["level"] in ("low", "medium", "high")
        assert {"provenance", "rows", "cv_median_ape"} <= set(c["efficiency"])
        assert c["price"] is None or {"confidence", "source", "as_of"} <= set(c["price"])
    rec = out["recommended"]
    assert isinstance(rec["caveats"], list)
    for cav in rec["caveats"]:
        assert {"input", "value", "break_even", "action"} <= set(cav)


def test_quick_start_says_how_sure_in_english_and_chinese() -> None:
    en = _ok([*QUICK, "--lang", "en"])
    assert "How sure:" in en and "80% bands" in en and "(" in en
    zh = "".join(_ok([*QUICK, "--lang", "zh"]).split())  # the terminal wraps Chinese anywhere
    assert "可信程度" in zh and "80%区间" in zh
    doc = json.loads(_ok([*QUICK, "--json"]))["recommended"]
    if doc["caveats"]:
        assert "Caveat" in en and "注意（" in zh
        assert ("stays the choice while" in en) == any(c["break_even"] for c in doc["caveats"])


def test_trust_high_on_the_cli_returns_only_high_confidence_plans() -> None:
    res = runner.invoke(app, [*QUICK, "--json", "--trust", "high"])
    assert res.exception is None or isinstance(res.exception, SystemExit)
    if res.exit_code == 0:
        for p in json.loads(res.output)["plans"]:
            assert p["confidence"]["level"] == "high"
    else:
        assert res.exit_code == 2 and "trust" in res.output
    bad = runner.invoke(app, [*QUICK, "--trust", "certain"])
    assert bad.exit_code == 2 and "trust" in bad.output


def test_plan_infer_json_has_a_recommended_object_with_band_confidence_and_caveats() -> None:
    out = json.loads(_ok([*INFER, "--json"]))
    rec = out["recommended"]
    assert {"ttft_s.p99", "tpot_s.p99", "cost_usd_per_hour"} <= set(rec["band"])
    lo, hi = rec["band"]["cost_usd_per_hour"]
    assert lo <= rec["cost_usd_per_hour"] <= hi
    assert rec["confidence"]["level"] in ("low", "medium", "high") and isinstance(rec["caveats"], list)
    for p in out["plans"]:
        assert "band" in p and "confidence" in p


def test_compare_json_options_carry_band_and_confidence() -> None:
    out = json.loads(_ok(["compare", "-m", "llama3-8b", "--tokens", "1e11", "--max-devices", "64", "--json",
                          "--accelerators", "h100-sxm5-80gb,ascend-910b"]))
    for o in out["options"]:
        assert "band" in o and "confidence" in o
        if o["plan"] is not None:
            assert o["confidence"]["level"] in ("low", "medium", "high")


@pytest.mark.ground_truth("training.csv")
def test_validate_json_gives_each_case_its_band_and_the_coverage() -> None:
    out = json.loads(_ok(["validate", str(GT / "training.csv"), "--json"]))
    assert 0.6 <= out["coverage"] <= 1.0
    inside = [c["low"] <= c["measured"] <= c["high"] for c in out["cases"] if c["low"] is not None]
    assert len(inside) == len(out["cases"]) and sum(inside) / len(inside) == pytest.approx(out["coverage"])
    for c in out["cases"]:
        assert c["low"] < c["predicted"] < c["high"]


def test_plan_infer_never_recommends_a_part_its_own_blocking_finding_rules_out() -> None:
    """As plan train does: a critical export, residency or compliance finding removes the part from the
    recommendation (it stays listed, marked). Regression: the README example recommended A100 rentals in
    China although its first finding was the critical export rule for that market."""
    args = ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-dist", "uniform:512-2048",
            "--output-dist", "uniform:128-512", "--ttft-p99", "2", "--tpot-p99", "0.05"]
    out = json.loads(_ok([*args, "--json"]))
    rec, blocked = out["recommended"], out["not_recommended"]
    assert rec is not None and rec["accelerator"] not in blocked
    assert set(blocked.values()) <= {"market.export", "market.residency", "market.compliance"}
    if out["plans"][0]["accelerator"] in blocked:
        assert rec["cost_usd_per_hour"] >= out["plans"][0]["cost_usd_per_hour"]
    text = _ok([*args, "--lang", "en", "--top", "3"])
    assert f"Recommendation: {rec['accelerator']}" in text


@pytest.mark.parametrize("lang, words", [("en", "but the top of its 80% band"), ("zh", "区间上限")])
def test_plan_train_says_when_the_band_reaches_past_the_deadline(lang: str, words: str) -> None:
    out = _ok([*QUICK, "--lang", lang])
    assert words in " ".join(out.split())
    rec = json.loads(_ok([*QUICK, "--json"]))["recommended"]
    late = [c for c in rec["caveats"] if c["input"] == "deadline"]
    safe = late[0]["safe_alternative"] if late else None
    # the plan named instead finishes within the deadline even at the top of its band
    assert safe is not None and late[0]["value"]["band_high_days"] > 30
    assert safe["band"]["time_to_train_s"][1] <= 30 * 86400


def test_plan_infer_option_lists_the_weight_formats_the_search_uses() -> None:
    """cli.infer_plan names the formats without importing the serving planner (speed): they must stay equal."""
    from gpuplan.cli import infer_plan
    from gpuplan.search import infer_search

    assert infer_plan.WEIGHTS == infer_search.WEIGHTS
