"""CLI: findings and --report/--lang on plan train, gpuplan compare, gpuplan report."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli_result import exited, one_line_error
from gpuplan.cli.main import app

runner = CliRunner()
PLAN = ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64"]


def test_plan_train_json_has_findings_and_recommendation() -> None:
    res = runner.invoke(app, [*PLAN, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["recommended"]["accelerator"] and out["findings"]
    f = out["findings"][0]
    assert {"id", "severity", "message", "fix", "figures"} <= set(f) and set(f["message"]) == {"en", "zh"}


def test_plan_train_prints_findings_in_chinese_and_writes_reports(tmp_path: Path) -> None:
    html = tmp_path / "plan.html"
    res = runner.invoke(app, [*PLAN, "--report", str(html), "--lang", "zh"])
    assert res.exit_code == 0, res.output
    assert "推荐方案的检查结果" in res.output and "训练方案" in res.output and "报告已写入" in res.output
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    saved = tmp_path / "plan.json"
    assert runner.invoke(app, [*PLAN, "--report", str(saved), "--json"]).exit_code == 0
    md = tmp_path / "plan.md"
    res = runner.invoke(app, ["report", str(saved), "-o", str(md), "--lang", "en"])
    assert res.exit_code == 0, res.output
    assert md.read_text(encoding="utf-8").startswith("# Training hardware plan")


def test_lang_defaults_from_the_locale(monkeypatch: object) -> None:
    import pytest

    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("LC_ALL", "zh_CN.UTF-8")
        res = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "H100", "--num-accels", "8",
                                  "--tokens", "1e11"])
        assert res.exit_code == 0, res.output
        assert "训练估算" in res.output and "单步时间" in res.output
    finally:
        mp.undo()


def test_requirements_raise_compliance_findings() -> None:
    res = runner.invoke(app, [*PLAN, "--json", "--market", "global", "--data-residency", "cn", "--compliance", "mlps3"])
    assert res.exit_code == 0, res.output
    ids = {f["id"] for f in json.loads(res.output)["findings"]}
    assert {"market.residency", "market.compliance"} <= ids


def test_compare_table_json_and_report(tmp_path: Path) -> None:
    base = ["compare", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64",
            "--accelerators", "h200-sxm-141gb,ascend-910b"]
    res = runner.invoke(app, [*base, "--lang", "en"])
    assert res.exit_code == 0, res.output
    assert "h200-sxm-141gb" in res.output and "ascend-910b" in res.output and "porting" in res.output
    res = runner.invoke(app, [*base, "--json", "--report", str(tmp_path / "cmp.md")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [o["accelerator"] for o in out["options"]] == ["h200-sxm-141gb", "ascend-910b"]
    assert (tmp_path / "cmp.md").read_text(encoding="utf-8").startswith("# Hardware comparison")


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = [
        [*PLAN, "--lang", "fr"],
        [*PLAN, "--report", str(tmp_path / "plan.pdf")],
        [*PLAN, "--compliance", "mlps9"],
        ["compare", "-m", "llama3-8b", "--tokens", "1e12", "--accelerators", "h200-sxm-141gb,nosuchgpu"],
        ["report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.html")],
    ]
    for args in cases:
        res = runner.invoke(app, args)
        exited(res, 2)
        assert "error" in res.output.lower(), args
    assert not (tmp_path / "plan.pdf").exists()


def test_report_from_plan_infer_json_and_inference_compare(tmp_path: Path) -> None:
    res = runner.invoke(app, ["plan", "infer", "-m", "llama3-8b", "--qps", "20", "--ttft-p99", "2", "--tpot-p99",
                              "0.05", "--json"])
    assert res.exit_code == 0, res.output
    src = tmp_path / "infer.json"
    src.write_text(res.output, encoding="utf-8")
    res = runner.invoke(app, ["report", str(src), "-o", str(tmp_path / "infer.md"), "--lang", "zh"])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "infer.md").read_text(encoding="utf-8")
    assert text.startswith("# 推理硬件规划") and "阶段：推理服务" in text
    # 100 ms TPOT: vllm-ascend decodes an 8B model at ~47 ms per token even at 4 requests (engines.yaml)
    # the 910B3's only rent is a distressed-capacity price (catalog research round 2): asked for by a catalog file
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "pricing.yaml").write_text("pricing: {use_distressed: true}\n", encoding="utf-8")
    res = runner.invoke(app, ["compare", "-m", "llama3-8b", "--qps", "20", "--ttft-p99", "2", "--tpot-p99", "0.1",
                              "--accelerators", "h100-nvl-94gb,ascend-910b3", "--catalog", str(policy), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["kind"] == "compare_infer"
    assert [o["accelerator"] for o in out["options"]] == ["h100-nvl-94gb", "ascend-910b3"]
    assert all(o["plan"]["usd_per_hour"] > 0 for o in out["options"])
    res = runner.invoke(app, ["compare", "-m", "llama3-8b", "--qps", "20", "--accelerators", "h100-nvl-94gb"])
    assert res.exit_code == 2 and "tpot" in res.output.lower()


def test_compare_unknown_accelerator_suggests_by_alias() -> None:
    """'h2o' is a typo of the alias 'h20': the hint names the part it stands for."""
    res = runner.invoke(app, ["compare", "-m", "llama3-8b", "--tokens", "1e12", "--accelerators", "h100,h2o"])
    one_line_error(res, "accelerator='h2o'")
    assert "Did you mean h20-96gb" in res.output


def test_no_empty_findings_table_when_no_plan_is_recommended() -> None:
    """Every plan blocked in this market (export-controlled H800 the only part that fits the deadline): the output
    says why and prints no findings table of "0 of 0" (regression)."""
    res = runner.invoke(app, ["plan", "train", "-m", "deepseek-v3", "--tokens", "14.8e12", "--precision", "fp8",
                              "--market", "cn", "--deadline", "90", "--max-devices", "4096", "--lang", "en"])
    assert res.exit_code == 0, res.output
    assert "No plan can be recommended" in res.output
    assert "0 of 0" not in res.output


def test_a_rented_plan_gets_no_rack_cooling_finding() -> None:
    """Regression: a cloud renter was told about rack cooling. The recommended plan here is 64 B200 on a provider's
    offer (8 nodes at about 14 kW: above the 40 kW air-cooling limit per rack if the team hosted them); the
    provider houses the racks, so the advisor says nothing about cooling, while the power finding stays."""
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-70b", "--tokens", "2e12", "--market", "global",
                              "--max-devices", "128", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    rec = out["recommended"]
    assert rec["hardware_option"]["kind"] == "offer" and rec["devices"] >= 32
    ids = {f["id"] for f in out["findings"]}
    assert "reliability.cooling" not in ids and "reliability.power" in ids
