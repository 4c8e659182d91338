"""Uploads in a real browser (Playwright driving Debian's chromium, as test_browser): a bench result ->
measured vs predicted -> re-plan with its calibration -> the plan page shows measured provenance; a
config.json on the training form -> the plan page names the uploaded model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_browser import CHROMIUM, base_url, browser, page  # noqa: F401  (the fixtures, one server per module)
from web_cases import bench_result

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
assert Path(CHROMIUM).exists()

HF = Path(__file__).parent.parent / "fixtures" / "hf_configs" / "qwen3-8b.json"


def test_bench_upload_to_measured_plan(page: Any, base_url: str, tmp_path: Path) -> None:  # noqa: F811
    result = tmp_path / "h100-bench.json"
    result.write_text(json.dumps(bench_result()), encoding="utf-8")
    page.goto(f"{base_url}/bench?lang=en")
    page.set_input_files("#bench-file", str(result))
    page.click("#bench-go")
    page.wait_for_selector("#bench-rows")
    rows = page.inner_text("#bench-rows")
    assert "gemm.bf16.square8192" in rows and "740 TFLOP/s (measured)" in rows and "(estimated)" in rows
    assert "compute_efficiency.h100-sxm5-80gb.bf16" in page.inner_text("#calibration-terms")
    page.select_option("#model", "llama3-8b")
    page.fill("#replan-tokens", "1e12")
    page.fill("#replan-deadline", "30")
    page.click("#replan-go")
    page.wait_for_url("**/p/*")
    assert page.get_attribute("#calibrated-provenance", "data-provenance") == "measured"
    assert "efficiency measured on your machine" in page.inner_text("#calibrated-provenance")
    assert "h100-sxm5-80gb" in page.inner_text("#scenario-calibration")
    page.click("#cli-command-toggle")
    assert "gpuplan calibrate h100-bench.json" in page.inner_text("#cli-command")


def test_bench_upload_error_is_shown(page: Any, base_url: str, tmp_path: Path) -> None:  # noqa: F811
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**bench_result(), "speedup": 2}), encoding="utf-8")
    page.goto(f"{base_url}/bench?lang=zh")
    page.set_input_files("#bench-file", str(bad))
    page.click("#bench-go")
    assert "result.speedup" in page.inner_text("#form-error")
    # the 422 answer itself is logged by the browser; that one is expected
    page.problems[:] = [p for p in page.problems if "status of 422" not in p]


def test_config_upload_on_the_training_form(page: Any, base_url: str) -> None:  # noqa: F811
    page.goto(f"{base_url}/train?lang=en")
    page.set_input_files("#hf-config-file", str(HF))
    page.fill("#tokens", "1e11")
    page.fill("#deadline", "30")
    page.click("#go")
    page.wait_for_url("**/p/*")
    line = page.inner_text("#scenario-config")
    assert "qwen3-8b" in line and "model_type qwen3" in line
    assert page.locator("#plans tbody tr").count() >= 2
    page.click("#cli-command-toggle")
    assert "--model config.json" in page.inner_text("#cli-command")
