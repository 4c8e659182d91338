"""`gpuplan estimate infer` through the CLI: the JSON contract and exit code 2 on bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app

runner = CliRunner()
BASE = ["estimate", "infer", "-m", "llama3.1-8b", "--accelerator", "h100-sxm5-80gb"]


def test_fixed_batch_json_contract() -> None:
    res = runner.invoke(app, [*BASE, "--input-len", "1024", "--output-len", "128", "--batch", "16", "--engine",
                              "trtllm", "--weights", "fp8", "--kv-dtype", "fp8", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "output_tokens_per_s_per_device",
                "requests_per_s", "max_batch_fits", "memory", "assumptions"):
        assert key in out, key
    assert out["provenance"] == "estimated"
    assert out["assumptions"]["engine"] == "trtllm" and out["assumptions"]["kv_dtype"] == "fp8"
    assert out["ttft_s"] < out["e2e_s"] and out["max_batch_fits"] >= 16


def test_qps_prints_percentiles() -> None:
    res = runner.invoke(app, [*BASE, "--input-len", "256", "--output-len", "64", "--qps", "4", "--num-requests",
                              "200", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out["ttft_s"]) >= {"p50", "p90", "p99"}
    assert out["scenario"] == "server"


def test_term_override_is_reported() -> None:
    res = runner.invoke(app, [*BASE, "--input-len", "256", "--output-len", "64", "--term", "gemm_efficiency=0.5",
                              "--json"])
    assert res.exit_code == 0, res.output
    terms = json.loads(res.stdout)["assumptions"]["engine_terms"]
    assert terms["gemm_efficiency"]["value"] == 0.5 and terms["gemm_efficiency"]["overridden"]


def test_a_term_set_outside_its_published_range_is_flagged_in_both_languages() -> None:
    """Regression: `--term attention_efficiency=0.9` (above FlashAttention-3's 75% of the H100 peak, the most any
    published prefill kernel reaches) was taken silently, under "confidence high: efficiency measured on your
    machine". The answer now names the term, the value and the published range with its source; a value inside the
    range, or a term whose source states none, is not flagged, and the JSON shows the range beside every term."""
    args = [*BASE, "--input-len", "8000", "--output-len", "64", "--batch", "4"]
    en = " ".join(runner.invoke(app, [*args, "--term", "attention_efficiency=0.9", "--lang", "en"]).output.split())
    assert "--term attention_efficiency=0.9 lies outside the range its source publishes (0.25 .. 0.75" in en
    assert "FlashAttention-3" in en
    zh = " ".join(runner.invoke(app, [*args, "--term", "attention_efficiency=0.9", "--lang", "zh"]).output.split())
    assert "超出其来源公布的范围（0.25 .. 0.75" in zh
    out = json.loads(runner.invoke(app, [*args, "--term", "attention_efficiency=0.9", "--json"]).stdout)
    source = out["assumptions"]["engine_terms"]["attention_efficiency"]["literature_range_source"]
    assert out["assumptions"]["terms_outside_literature"] == [{
        "term": "attention_efficiency", "value": 0.9, "literature_range": [0.25, 0.75],
        "literature_range_source": source}]
    inside = json.loads(runner.invoke(app, [*args, "--term", "attention_efficiency=0.6", "--term",
                                            "request_overhead_s=0.5", "--json"]).stdout)
    assert inside["assumptions"]["terms_outside_literature"] == []
    assert inside["assumptions"]["engine_terms"]["attention_efficiency"]["literature_range"] == [0.25, 0.75]
    assert "literature_range" not in inside["assumptions"]["engine_terms"]["request_overhead_s"]
    plain = " ".join(runner.invoke(app, [*args, "--term", "attention_efficiency=0.6"]).output.split())
    assert "outside the range" not in plain


def test_human_table() -> None:
    res = runner.invoke(app, [*BASE, "--input-len", "256", "--output-len", "64", "--batch", "4"])
    assert res.exit_code == 0, res.output
    assert "time to first token" in res.stdout


@pytest.mark.parametrize("extra", [
    ["--input-len", "0", "--output-len", "8"],
    ["--input-len", "8", "--output-len", "-3"],
    ["--input-len", "8", "--output-len", "8", "--tp", "3"],
    ["--input-len", "8", "--output-len", "8", "--engine", "vlm"],
    ["--input-len", "8", "--output-len", "8", "--term", "gemm_efficiency"],
    ["--input-len", "8", "--output-len", "8", "--batch", "2", "--qps", "1"],
])
def test_bad_input_exits_2_with_one_line(extra: list[str]) -> None:
    res = runner.invoke(app, [*BASE, *extra])
    exited(res, 2)


def test_model_that_fits_nowhere_exits_2_with_the_nearest_alternative() -> None:
    res = runner.invoke(app, ["estimate", "infer", "-m", "llama3.1-405b", "--accelerator", "h100-sxm5-80gb",
                              "--tp", "2", "--input-len", "128", "--output-len", "128"])
    assert res.exit_code == 2
    assert "nearest that fits" in res.output


def test_setting_override_reaches_the_engine() -> None:
    res = runner.invoke(app, [*BASE, "--input-len", "512", "--output-len", "256", "--setting", "max_num_seqs=1024",
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["assumptions"]["engine_settings"]["max_num_seqs"] == 1024
    bad = runner.invoke(app, [*BASE, "--input-len", "512", "--output-len", "256", "--setting", "max_num_seqs=abc"])
    assert bad.exit_code == 2


def test_alias_with_variants_names_the_part_chosen() -> None:
    args = ["estimate", "infer", "-m", "llama3.1-8b", "--input-len", "512", "--output-len", "128", "--json"]
    res = runner.invoke(app, [*args, "--accelerator", "h100"])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert res.stderr.strip() == "h100 -> h100-sxm5-80gb (also: h100-nvl-94gb, h100-pcie-80gb; pass the id to " \
                                 "choose another)"
    assert json.loads(res.stdout)["assumptions"]["accelerator"] == "h100-sxm5-80gb"
    exact = runner.invoke(app, [*args, "--accelerator", "h100-sxm5-80gb"])
    assert exact.exit_code == 0 and exact.exception is None and exact.stderr == ""


def test_estimate_infer_refuses_an_engine_the_part_cannot_run() -> None:
    res = CliRunner().invoke(app, ["estimate", "infer", "-m", "qwen3-8b", "--accelerator", "ascend-910b", "--engine",
                                   "trtllm", "--batch", "4", "--input-len", "512", "--output-len", "128",
                                   "--lang", "en"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "engine='trtllm'" in res.output and "mindie" in res.output and "cuda" in res.output


def test_engine_settings_are_not_labelled_a_user_override() -> None:
    # Regression: with no --term, the memory terms the engine sets (runtime overhead, token budget) were reported
    # as "user override" in every serving answer; they name the engine's settings, and only --term is the user's.
    args = ["estimate", "infer", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--input-len", "1024",
            "--output-len", "256", "--qps", "2", "--json"]
    res = runner.invoke(app, args)
    exited(res, 0)
    cal = json.loads(res.stdout)["memory"]["assumptions"]["calibration"]
    assert "user override" not in {t["source"] for t in cal.values()}
    assert cal["runtime_context_gib"]["source"].startswith("engine vllm settings")
    assert cal["inference_workspace_tokens"]["value"] == 8192.0
