"""The service layer answers with exactly the CLI's --json for the same options (one schema for CLI, API, forms)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.service import (
    CompareRequest,
    InferPlanRequest,
    MemoryTrainRequest,
    TrainPlanRequest,
    canonical_json,
    plan_infer_report,
    plan_train_report,
    run_compare,
    run_memory_train,
    run_plan_infer,
    run_plan_train,
)

runner = CliRunner()


def _cli(*args: str) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    exited(res, 0)
    return json.loads(res.stdout)


def test_plan_train_matches_cli() -> None:
    got = run_plan_train(TrainPlanRequest(model="llama3-8b", tokens=1e12, deadline=30, top=3))
    want = _cli("plan", "train", "--model", "llama3-8b", "--tokens", "1e12", "--deadline", "30", "--top", "3",
                "--lang", "en")
    # parsed, not as one long string: a mismatch then names the differing keys (a diff of two 20 kB one-line
    # strings is quadratic and once outlasted CI)
    assert json.loads(json.dumps(got)) == want
    assert all("band" in p and "confidence" in p for p in got["plans"])


def test_plan_infer_matches_cli() -> None:
    got = run_plan_infer(InferPlanRequest(model="llama3.1-8b", qps=5, ttft_p99=2, tpot_p99=0.05))
    want = _cli("plan", "infer", "--model", "llama3.1-8b", "--qps", "5", "--ttft-p99", "2", "--tpot-p99", "0.05")
    assert json.loads(json.dumps(got)) == want


def test_report_documents_are_those_of_the_cli_report(tmp_path: Path) -> None:
    """The documents the web's HTML and Markdown exports render are what `--report plan.json` writes."""
    for fn, req, args in (
        (plan_infer_report, InferPlanRequest(model="llama3.1-8b", qps=5, ttft_p99=2, tpot_p99=0.05),
         ["plan", "infer", "--model", "llama3.1-8b", "--qps", "5", "--ttft-p99", "2", "--tpot-p99", "0.05"]),
        (plan_train_report, TrainPlanRequest(model="llama3-8b", tokens=1e12, deadline=30, top=3),
         ["plan", "train", "--model", "llama3-8b", "--tokens", "1e12", "--deadline", "30", "--top", "3"]),
    ):
        out = tmp_path / f"{args[1]}.json"
        result, doc = fn(req)  # type: ignore[operator]
        assert json.loads(runner.invoke(app, [*args, "--json", "--report", str(out)]).stdout) == json.loads(
            json.dumps(result))
        assert json.loads(out.read_text(encoding="utf-8")) == json.loads(json.dumps(doc))


def test_compare_matches_cli() -> None:
    got = run_compare(CompareRequest(model="llama3-8b", tokens=1e12, deadline=30, accelerators=["h100", "h20"]))
    want = _cli("compare", "--model", "llama3-8b", "--tokens", "1e12", "--deadline", "30", "--accelerators",
                "h100,h20")
    assert json.loads(json.dumps(got)) == want
    got = run_compare(CompareRequest(model="llama3.1-8b", qps=5, ttft_p99=2, tpot_p99=0.05,
                                     accelerators=["h100", "l40s"]))
    want = _cli("compare", "--model", "llama3.1-8b", "--qps", "5", "--ttft-p99", "2", "--tpot-p99", "0.05",
                "--accelerators", "h100,l40s")
    assert json.loads(json.dumps(got)) == want


def test_memory_train_matches_cli() -> None:
    got = run_memory_train(MemoryTrainRequest(model="llama3-8b", tp=2, zero=1, dp=4, accelerator="h100-sxm5-80gb"))
    want = _cli("memory", "train", "--model", "llama3-8b", "--tp", "2", "--zero", "1", "--dp", "4",
                "--accelerator", "h100-sxm5-80gb")
    assert got == want


def test_models_are_preset_names_never_paths() -> None:
    with pytest.raises(InputError) as err:
        run_memory_train(MemoryTrainRequest(model="/etc/passwd"))
    assert err.value.field == "model"


def test_bad_values_carry_the_cli_wording() -> None:
    with pytest.raises(InputError) as err:
        run_plan_train(TrainPlanRequest(model="llama3-8b", tokens=0))
    assert err.value.field == "tokens" and "tokens" in err.value.hint


def test_canonical_json_includes_defaults_and_sorts_keys() -> None:
    a = canonical_json(TrainPlanRequest(model="llama3-8b", tokens=1e12))
    b = canonical_json(TrainPlanRequest(tokens=1e12, model="llama3-8b", seq_len=4096))
    assert a == b and '"seq_len":4096' in a
