"""--lang on every command: tables, labels and the error line come from the message catalog; JSON is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.common import error_line
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.i18n import tr
from ground_truth import GROUND_TRUTH

runner = CliRunner()
PLAN_INFER = ["plan", "infer", "-m", "llama3-8b", "--qps", "5", "--ttft-p99", "2", "--tpot-p99", "0.05",
              "--vendor", "NVIDIA"]


@pytest.mark.parametrize(("args", "zh", "en"), [
    (["memory", "infer", "-m", "llama3-8b", "--accelerator", "h100-nvl-94gb"], "推理每卡显存", "Inference memory"),
    (["memory", "train", "-m", "llama3-8b", "--tp", "8", "--zero", "1"], "训练每卡显存", "Training memory"),
    (["model", "list"], "模型预设", "Model presets"),
    (["model", "show", "llama3-8b"], "各部分参数量", "Parameters by part"),
    (["catalog", "list", "accelerators"], "加速卡", "accelerators"),
    (["catalog", "show", "h100-nvl-94gb"], "可信度", "confidence"),
    (["catalog", "compare", "h100-nvl-94gb", "ascend-910b"], "对比加速卡", "compare accelerators"),
    (["estimate", "infer", "-m", "llama3-8b", "--accelerator", "h100-nvl-94gb", "--input-len", "512",
      "--output-len", "128"], "首 token 时间", "time to first token"),
])
def test_tables_follow_lang(args: list[str], zh: str, en: str) -> None:
    z = runner.invoke(app, [*args, "--lang", "zh"])
    e = runner.invoke(app, [*args, "--lang", "en"])
    assert z.exit_code == 0 and e.exit_code == 0, z.output + e.output
    assert zh in z.stdout and zh not in e.stdout
    assert en in e.stdout


SHARED = GROUND_TRUTH


@pytest.mark.ground_truth("memory.csv")
def test_validate_follows_lang() -> None:
    zh = runner.invoke(app, ["validate", str(SHARED / "memory.csv"), "--lang", "zh"])
    assert zh.exit_code == 0 and "验证 - memory.csv" in zh.stdout and "APE 中位数" in zh.stdout
    en = runner.invoke(app, ["validate", str(SHARED / "memory.csv"), "--lang", "en"])
    assert "median APE" in en.stdout and "中位数" not in en.stdout


def test_validate_error_in_chinese(tmp_path: Path) -> None:
    res = runner.invoke(app, ["validate", str(tmp_path / "nope.csv"), "--lang", "zh"])
    exited(res, 2)
    assert res.output.startswith("错误：")


def test_error_line_frame_is_translated() -> None:
    exc = InputError(field="qps", value=0.0, allowed="a positive number", hint="zero needs no hardware")
    assert error_line(exc, "en") == "error: qps=0.0 is invalid: allowed a positive number. zero needs no hardware"
    assert error_line(exc, "zh") == "错误：qps=0.0 无效：允许 a positive number。zero needs no hardware"
    assert error_line(InputError(field="x", value="y", allowed="z"), "en") == str(InputError(field="x", value="y",
                                                                                          allowed="z")).join(
        ["error: ", ""])
    for args in (["memory", "infer", "-m", "nope"], ["catalog", "show", "h100-nvx"], ["model", "show", "nope"],
                 ["plan", "infer", "-m", "llama3-8b", "--qps", "0", "--ttft-p99", "2", "--tpot-p99", "0.05"],
                 ["estimate", "infer", "-m", "nope", "--accelerator", "h100-nvl-94gb", "--input-len", "1",
                  "--output-len", "1"]):
        zh = runner.invoke(app, [*args, "--lang", "zh"])
        en = runner.invoke(app, [*args, "--lang", "en"])
        assert zh.exit_code == en.exit_code == 2
        assert zh.output.startswith("错误：") and "无效：允许" in zh.output, zh.output
        assert en.output.startswith("error: ") and "is invalid: allowed" in en.output, en.output
    bad = runner.invoke(app, ["model", "list", "--lang", "fr"])
    assert bad.exit_code == 2 and "lang='fr'" in bad.output


def test_plan_infer_lang_report_and_json(tmp_path: Path) -> None:
    zh = runner.invoke(app, [*PLAN_INFER, "--lang", "zh", "--top", "3", "--report", str(tmp_path / "p.html")])
    assert zh.exit_code == 0, zh.output
    assert "推理方案" in zh.stdout and "推荐：" in zh.stdout and "检查结果" in zh.stdout
    assert tr("cli.report.written", "zh", path=str(tmp_path / "p.html")) in zh.stdout.replace("\n", "")
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert 'lang="zh-CN"' in page and all(f'id="{c}"' in page for c in ("chart-cost-latency", "chart-memory"))
    en = runner.invoke(app, [*PLAN_INFER, "--lang", "en", "--top", "3", "--report", str(tmp_path / "p.md")])
    assert en.exit_code == 0 and "Inference plans" in en.stdout and "Recommendation:" in en.stdout
    md = (tmp_path / "p.md").read_text(encoding="utf-8")
    assert md.startswith("# ") and "## Memory per device" in md and "## Growth headroom" in md
    # --json stays language-neutral and alone on stdout; the report is still written
    j = runner.invoke(app, [*PLAN_INFER, "--json", "--lang", "zh", "--report", str(tmp_path / "p.json")])
    out = json.loads(j.stdout)
    assert out["plans"] and "推荐" not in j.stdout
    doc = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert doc["kind"] == "infer" and doc["memory"]["parts_gib"] and doc["growth"]["factor"] == 2.0
    # gpuplan report re-renders the saved document and the plan-infer JSON alike
    (tmp_path / "run.json").write_text(j.stdout, encoding="utf-8")
    for src in ("p.json", "run.json"):
        r = runner.invoke(app, ["report", str(tmp_path / src), "-o", str(tmp_path / f"{src}.md"), "--lang", "zh"])
        assert r.exit_code == 0, r.output
        assert "## 每卡显存" in (tmp_path / f"{src}.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp files left
    bad = runner.invoke(app, [*PLAN_INFER, "--report", str(tmp_path / "p.pdf")])
    assert bad.exit_code == 2 and not (tmp_path / "p.pdf").exists()
