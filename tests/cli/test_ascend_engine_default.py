"""The engine a part serves with when `--engine` is left out: its software stack's (engines.yaml
stack_default_engines: MindIE on Ascend's CANN), named in the JSON; vLLM elsewhere; a named engine always wins."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuplan.cli.main import app
from gpuplan.hardware import load_catalog
from gpuplan.workload.engines import default_engine, default_engines_by_stack

runner = CliRunner()
Q8 = ["estimate", "infer", "-m", "qwen3-8b", "--input-len", "2000", "--output-len", "200", "--batch", "8", "--json"]


def _run(*args: str) -> dict[str, object]:
    res = runner.invoke(app, [*Q8, *args])
    assert res.exit_code == 0, res.output
    out: dict[str, object] = json.loads(res.stdout)
    return out


def test_ascend_defaults_to_mindie_and_says_why() -> None:
    out = _run("--accelerator", "ascend-910b")
    a = out["assumptions"]
    assert isinstance(a, dict)
    assert a["engine"] == "mindie"
    assert a["engine_default"]["stack"] == "cann" and "MindIE" in a["engine_default"]["source"]


def test_mindie_default_is_faster_than_vllm_ascend_on_910b() -> None:
    # GPUStack performance lab, Qwen3-8B on one 910B: MindIE 2.1 25.4 ms per output token, vllm-ascend 0.9.1
    # 47.3 ms (4 requests): the default engine's per-layer host time is half of vllm-ascend's (engines.yaml)
    mindie = _run("--accelerator", "ascend-910b")["tpot_s"]
    vllm = _run("--accelerator", "ascend-910b", "--engine", "vllm")["tpot_s"]
    assert isinstance(mindie, float) and isinstance(vllm, float)
    assert 1.3 < vllm / mindie < 2.0


def test_cuda_part_keeps_vllm_and_named_engine_wins() -> None:
    out = _run("--accelerator", "h100-sxm5-80gb")
    a = out["assumptions"]
    assert isinstance(a, dict) and a["engine"] == "vllm" and a["engine_default"]["stack"] == "cuda"
    named = _run("--accelerator", "ascend-910c", "--engine", "vllm")["assumptions"]
    assert isinstance(named, dict) and named["engine"] == "vllm" and "engine_default" not in named


def test_search_default_follows_the_parts_stack() -> None:
    cat = load_catalog(())
    huawei = [a for a in cat.accelerators.values() if a.vendor == "Huawei"]
    assert huawei and {e for e, _ in default_engines_by_stack(huawei).values()} == {"mindie"}
    # across stacks each part keeps its own stack's engine (tests/search/test_infer_stack_engines.py)
    by_stack = default_engines_by_stack(cat.accelerators.values())
    assert by_stack["cann"][0] == "mindie" and by_stack["cuda"][0] == by_stack["rocm"][0] == "vllm"
    assert default_engine(None)[0] == "vllm"


def test_plan_infer_with_vendor_huawei_plans_under_mindie() -> None:
    res = runner.invoke(app, ["plan", "infer", "-m", "qwen3-8b", "--vendor", "Huawei", "--qps", "5", "--input-len",
                              "2000", "--output-len", "200", "--ttft-p99", "2", "--tpot-p99", "0.1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["engine"] == "mindie" and out["engine_default"]["engine"] == "mindie"
    assert out["plans"] and all(p["accelerator"].startswith("ascend") for p in out["plans"])
