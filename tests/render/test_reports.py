"""Reports: document contents, Markdown and HTML rendering, atomic writes, and the HTML drawn in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpuplan.advise.report_train import compare_training, recommend, training_report
from gpuplan.errors import InputError
from gpuplan.hardware import load_catalog
from gpuplan.render.report_io import load_report, render_report, write_report
from gpuplan.search.train_search import PlanConstraints
from gpuplan.workload.jobs import TrainingJob, default_global_batch
from gpuplan.workload.presets import load_model

CHARTS = ("chart-pareto", "chart-memory", "chart-step", "chart-scaling", "chart-tco")


@cache
def doc() -> dict[str, Any]:
    spec = load_model("llama3-8b")
    job = TrainingJob(method="full", seq_len=4096, global_batch=default_global_batch(4096), precision="bf16")
    return training_report(spec, job, load_catalog(()), PlanConstraints(max_devices=256), tokens=1e12)


def test_recommendation_rule() -> None:
    plans = [{"cost_usd": 100.0, "time_to_train_s": 50.0}, {"cost_usd": 105.0, "time_to_train_s": 10.0},
             {"cost_usd": 130.0, "time_to_train_s": 1.0}, {"cost_usd": None, "time_to_train_s": 0.5}]
    assert recommend(plans, 0.10) is plans[1]  # fastest within 10% of the cheapest
    assert recommend(plans, 0.50) is plans[2]
    assert recommend([{"cost_usd": None, "time_to_train_s": 3.0}], 0.1) == {"cost_usd": None, "time_to_train_s": 3.0}
    assert recommend([], 0.1) is None
    # with a target time: the smallest near-cheapest cluster that finishes in time
    sized = [{"cost_usd": 100.0, "time_to_train_s": 40 * 86400.0, "devices": 8},
             {"cost_usd": 101.0, "time_to_train_s": 20 * 86400.0, "devices": 16},
             {"cost_usd": 104.0, "time_to_train_s": 1 * 86400.0, "devices": 512}]
    assert recommend(sized, 0.10, 30) is sized[1]
    assert recommend(sized, 0.10, 0.5) is sized[2]  # none in time: the fastest near-cheapest
    assert recommend(sized, 0.005, 0.5) is sized[0]  # only the cheapest is near-cheapest
    assert recommend(sized, 0.005, 0.5, 10) is sized[2]  # ... and too slow: the fastest plan


def test_document_holds_every_section_with_provenance() -> None:
    d = doc()
    assert d["schema"] == "gpuplan.report/1" and d["kind"] == "train"
    rec = d["recommendation"]
    eff = rec["confidence"]["efficiency"]["provenance"]
    assert rec["provenance"]["days"] == f"estimated ({eff} efficiency)"
    assert rec["provenance"]["cost_usd"].startswith(("estimated from a list price", "estimated from a market quote",
                                                     "unknown"))
    assert d["runners_up"] and all(r["accelerator"] != rec["accelerator"] for r in d["runners_up"])
    assert d["pareto"] and len(d["plans"]) >= len(d["pareto"])
    assert len(d["scaling"]) >= 3 and [p["devices"] for p in d["scaling"]] == sorted(p["devices"] for p in d["scaling"])
    assert {"weights", "optimizer", "activations"} <= set(d["memory_gib"])
    assert sum(d["memory_gib"].values()) == pytest.approx(rec["memory_gib"], rel=1e-6)
    assert d["findings"] and all(set(f["message"]) == {"en", "zh"} for f in d["findings"])
    assert d["calibration"] and all(c["provenance"] in ("measured", "data") for c in d["calibration"])
    assert {s["kind"] for s in d["sources"]} >= {"datasheet", "estimated", "data"}
    assert json.loads(json.dumps(d)) == d  # plain JSON


def test_markdown_in_both_languages() -> None:
    en = render_report(doc(), "md", "en")
    zh = render_report(doc(), "md", "zh")
    for title in ("## Recommendation", "## Findings", "## Cost vs time: Pareto front", "## Memory per device",
                  "## Step-time breakdown", "## Scaling", "## Sources", "## Calibration terms used"):
        assert title in en
    assert "## 推荐方案" in zh and "## 检查结果" in zh and "估算" in zh
    assert doc()["findings"][0]["message"]["zh"] in zh
    # how sure: the confidence sentence, the band basis, and the time with its band in brackets
    assert "How sure:" in en and "80% bands" in en and "可信程度" in zh and "80% 区间" in zh
    rec = doc()["recommendation"]
    assert re.search(r"\d (days|h|min) \([\d.,]+-[\d.,]+\)", en), "time to train without its band"
    assert rec["confidence"]["level"] in en.split("How sure:")[1].split("\n")[0]


def test_html_is_self_contained() -> None:
    page = render_report(doc(), "html", "zh")
    assert page.startswith("<!DOCTYPE html>") and 'lang="zh-CN"' in page
    assert not re.search(r"<script[^>]+src=", page)  # plotly.js inline: works offline
    assert "Plotly.newPlot" in page and all(f'id="{c}"' in page for c in CHARTS)


def test_atomic_write_and_reload(tmp_path: Path) -> None:
    saved = write_report(doc(), tmp_path / "plan.json", "en")
    assert load_report(saved) == doc()
    out = write_report(load_report(saved), tmp_path / "plan.md", "zh")
    assert out.read_text(encoding="utf-8").startswith("# 训练硬件规划")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "plan.md"]  # no temp files left
    with pytest.raises(InputError):
        write_report(doc(), tmp_path / "plan.pdf", "en")
    with pytest.raises(InputError):
        write_report(doc(), tmp_path / "missing" / "plan.md", "en")
    (tmp_path / "other.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(InputError):
        load_report(tmp_path / "other.json")


def test_compare_document() -> None:
    spec = load_model("llama3-8b")
    job = TrainingJob(method="full", seq_len=4096, global_batch=default_global_batch(4096), precision="bf16")
    c = compare_training(spec, job, load_catalog(()), ["h200-sxm-141gb", "ascend-910b"],
                         PlanConstraints(max_devices=256), tokens=1e12)
    risk = {o["accelerator"]: o["ecosystem_risk"] for o in c["options"]}
    assert risk == {"h200-sxm-141gb": "low", "ascend-910b": "high"}
    for o in c["options"]:
        assert o["plan"]["days"] > 0 and 0 < o["memory_headroom"] < 1
    asc = next(o for o in c["options"] if o["accelerator"] == "ascend-910b")
    assert any(f["id"] == "ecosystem.porting" for f in asc["findings"])
    assert "chart-compare" in render_report(c, "html", "en")
    assert "| ascend-910b |" in render_report(c, "md", "en")


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _render_in_chromium(page: Path, tmp_path: Path) -> tuple[str, str]:
    exe = _chromium()
    assert exe is not None
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=15000", "--dump-dom", page.as_uri()]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, run.stderr


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_report_draws_its_charts_in_chromium(tmp_path: Path, lang: str) -> None:
    page = write_report(doc(), tmp_path / f"plan-{lang}.html", lang)
    dom, log = _render_in_chromium(page, tmp_path)
    drawn = dom.count('class="main-svg"')
    assert drawn >= 2 * len(CHARTS), drawn  # plotly draws two main-svg layers per chart once its JS ran
    for chart in CHARTS:
        start = dom.index(f'id="{chart}"')
        assert 'class="main-svg"' in dom[start:start + 4000], chart
    assert "js-plotly-plot" in dom
    pareto = dom[dom.index('id="chart-pareto"'):]
    pareto = pareto[:pareto.index('id="chart-memory"')] if 'id="chart-memory"' in pareto else pareto
    assert 'class="xerror"' in pareto and 'class="yerror"' in pareto  # the 80% bands drawn as error bars
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    assert console == [], console  # no console errors or messages from the page


INFER_CHARTS = ("chart-cost-latency", "chart-latency", "chart-memory", "chart-tco")


@cache
def infer_docs() -> tuple[dict[str, Any], dict[str, Any]]:
    """An inference report (two accelerators) and the inference comparison of the same job."""
    from gpuplan.advise.report_infer import compare_inference, inference_report
    from gpuplan.search.infer_load import InferLoad, InferSlo
    from gpuplan.search.infer_search import InferConstraints, plan_inference
    from gpuplan.simulate.lengths import parse_length_dist

    spec = load_model("llama3-8b")
    cat = load_catalog(())
    load = InferLoad(qps=10.0, input_len=parse_length_dist(1024), output_len=parse_length_dist(256))
    slo = InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05)

    def run_for(*accs: str) -> dict[str, Any]:
        res = plan_inference(spec, load, slo, cat, InferConstraints(accelerators=accs))
        return {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
                "engine": "vllm", "plans": res.plans, "rejected": res.rejected, "terms": res.terms}

    job = {"model": spec.name, "engine": "vllm", "qps": 10.0, "input_len": "fixed:1024", "output_len": "fixed:256",
           "input_len_mean": 1024.0, "output_len_mean": 256.0, "ttft_p99_s": 2.0, "tpot_p99_s": 0.05}
    return (inference_report(run_for("h100-nvl-94gb", "l40s-48gb"), cat),
            compare_inference(run_for, ["h100-nvl-94gb", "l40s-48gb"], cat, job))


def test_inference_document_has_memory_and_growth() -> None:
    doc, _ = infer_docs()
    assert doc["memory"]["parts_gib"]["weights"] > 0 and doc["growth"]["factor"] == 2.0
    page = render_report(doc, "html", "en")
    assert all(f'id="{c}"' in page for c in INFER_CHARTS) and not re.search(r"<script[^>]+src=", page)


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_inference_and_compare_reports_draw_in_chromium(tmp_path: Path, lang: str) -> None:
    doc, cmp = infer_docs()
    for name, d, charts in (("infer", doc, INFER_CHARTS), ("compare", cmp, ("chart-compare",))):
        page = write_report(d, tmp_path / f"{name}-{lang}.html", lang)
        dom, log = _render_in_chromium(page, tmp_path)
        assert dom.count('class="main-svg"') >= 2 * len(charts), name
        for chart in charts:
            start = dom.index(f'id="{chart}"')
            assert 'class="main-svg"' in dom[start:start + 4000], (name, chart)
        if name == "infer":  # cost per hour and p99 TPOT drawn with their 80% bands
            cost = dom[dom.index('id="chart-cost-latency"'):dom.index('id="chart-latency"')]
            assert 'class="xerror"' in cost and 'class="yerror"' in cost
            assert ("How sure:" if lang == "en" else "可信程度") in dom
        assert [line for line in log.splitlines() if "CONSOLE" in line] == [], name


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_chromium_check_sees_console_errors(tmp_path: Path) -> None:
    """Control: the console check above is live (a page that throws is caught)."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>missingFunction();</script></body></html>", encoding="utf-8")
    _, log = _render_in_chromium(page, tmp_path)
    assert any("CONSOLE" in line and "missingFunction" in line for line in log.splitlines())


def test_written_report_has_the_usual_permissions(tmp_path: Path) -> None:
    import os

    mask = os.umask(0o022)
    try:
        out = write_report(doc(), tmp_path / "plan.md", "en")
    finally:
        os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


def test_chinese_reports_cite_sources_in_chinese_where_translated() -> None:
    d = doc()
    zh_md = render_report(d, "md", "zh")
    sources = zh_md[zh_md.index("## 数据来源"):]
    acc = d["recommendation"]["accelerator"]
    assert f"加速卡 {acc}" in sources and "单步时间、显存与可靠性模型" in sources and "每项均注明来源" in sources
    assert "advisor thresholds" not in sources and f"accelerator {acc}" not in sources
    assert any(s.get("what_zh", "").endswith("价格：" + s["what"].split(": ")[-1]) for s in d["sources"])
    zh_html = render_report(d, "html", "zh")
    assert f"加速卡 {acc}" in zh_html and "顾问阈值" in zh_html
    en_md = render_report(d, "md", "en")
    assert f"| accelerator {acc} |" in en_md and "(each entry has its own source)" in en_md
