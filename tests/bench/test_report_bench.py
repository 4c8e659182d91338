"""Bench results in the advisor report: `gpuplan report PLAN.json --bench RESULT.json` (measured vs predicted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuplan.bench.records import Measurement, Prediction, write_result
from gpuplan.bench.report import bench_section, headline
from gpuplan.cli.main import app

runner = CliRunner()


def _with_train(make_gpu_result: Any) -> Any:
    res = make_gpu_result()
    train = Measurement(benchmark="train", name="train.tokens_per_s", metric="tokens_per_s", value=40000.0,
                        unit="tokens/s", spread=0.02, repeats=8,
                        params={"run_layout": "tp1 pp1 dp8 cp1 ep1 zero1 mb4x1 recompute=none"},
                        predicted=Prediction(value=50000.0, unit="tokens/s", basis="gpuplan estimate train"),
                        ratio=0.8)
    return res.model_copy(update={"measurements": (*res.measurements, train), "complete": False})


def test_headline_keeps_the_largest_gemm_and_every_e2e_figure(make_gpu_result: Any) -> None:
    res = _with_train(make_gpu_result)
    names = [m.name for m in headline(res)]
    assert "gemm.bf16.square8192" in names and "gemm.bf16.square1024" not in names
    assert "train.tokens_per_s" in names and "memory.copy" in names
    sec = bench_section(res, "h100.json")
    row = next(r for r in sec["rows"] if r["name"] == "train.tokens_per_s")
    assert (row["measured"], row["predicted"], row["ratio"]) == (40000.0, 50000.0, 0.8)
    assert sec["accelerator"] == "h100-sxm5-80gb" and sec["complete"] is False


@pytest.mark.parametrize(("suffix", "lang", "marker"), [(".md", "en", "## Measured: gpuplan bench results"),
                                                        (".html", "zh", 'id="sec-bench"')])
def test_report_includes_the_bench_result(tmp_path: Path, make_gpu_result: Any, suffix: str, lang: str,
                                          marker: str) -> None:
    plan = tmp_path / "plan.json"
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64",
                              "--report", str(plan)])
    assert res.exit_code == 0, res.output
    result = write_result(_with_train(make_gpu_result), tmp_path / "h100.json")
    out = tmp_path / f"report{suffix}"
    res = runner.invoke(app, ["report", str(plan), "--out", str(out), "--bench", str(result), "--lang", lang])
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    assert marker in text and "train.tokens_per_s" in text
    assert "40,000 tokens/s" in text and "50,000 tokens/s" in text and "0.80" in text
    assert text.index("train.tokens_per_s") > text.index("h100.json")  # machine line, then the table
    if suffix == ".html":
        assert text.rstrip().endswith("</body></html>") and "实测" in text
    # a JSON report keeps the section, and a bad result file is one clear error
    res = runner.invoke(app, ["report", str(plan), "--out", str(tmp_path / "r.json"), "--bench", str(result)])
    assert res.exit_code == 0 and json.loads((tmp_path / "r.json").read_text())["bench"][0]["file"] == "h100.json"
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    res = runner.invoke(app, ["report", str(plan), "--out", str(out), "--bench", str(bad)])
    assert res.exit_code == 2 and "bad.json" in res.output
