"""The simulator's compiled twins (gpuplan/simulate/native.py, hatch_build.py at the project root).

A twin is used only while it was built from the source beside it, never under GPUPLAN_PURE_PYTHON, and it answers
exactly as the interpreted source does: every shipped serving row (admission, preemption, chunked prefill, prefix
caching, MoE, disaggregated pools) and a whole `plan infer` give byte-identical JSON either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan.simulate import engine_sim, fleet_sim, native

needs_twins = pytest.mark.skipif(not native.compiled(), reason="the simulator is not compiled in this install "
                                 "(pip install -e . builds it where a C compiler is present)")


def test_a_twin_built_from_other_source_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "source_sha", lambda: "0" * 64)
    assert native.twin("engine_sim") is None and native.twin("fleet_sim") is None
    assert not native.compiled()


def test_pure_python_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPLAN_PURE_PYTHON", "1")
    assert native.twin("engine_sim") is None
    assert not native.compiled()


def test_source_hash_covers_both_modules_in_order() -> None:
    import hashlib

    here = Path(native.__file__).parent
    h = hashlib.sha256((here / "engine_sim.py").read_bytes() + (here / "fleet_sim.py").read_bytes())
    assert native.source_sha() == h.hexdigest()


@needs_twins
def test_the_modules_run_their_compiled_twins() -> None:
    twin_engine, twin_fleet = native.twin("engine_sim"), native.twin("fleet_sim")
    assert twin_engine is not None and twin_fleet is not None
    assert engine_sim.engine_loop is twin_engine.engine_loop
    assert fleet_sim.simulate_fleet is twin_fleet.simulate_fleet
    # compiled, not a Python function that happens to live in the twin's module
    assert type(engine_sim.engine_loop).__name__ != "function"


def _gpuplan(*args: str, pure: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GPUPLAN_PURE_PYTHON"}
    if pure:
        env["GPUPLAN_PURE_PYTHON"] = "1"
    env["GPUPLAN_JOBS"] = "1"
    res = subprocess.run([str(Path(sys.executable).parent / "gpuplan"), *args], env=env, capture_output=True, text=True,
                         check=False, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


@needs_twins
def test_every_serving_row_is_simulated_identically_compiled_and_interpreted() -> None:
    compiled = _gpuplan("validate", "inference", "--json", "--lang", "en", pure=False)
    assert '"cases"' in compiled
    assert compiled == _gpuplan("validate", "inference", "--json", "--lang", "en", pure=True)


@needs_twins
def test_plan_infer_answers_identically_compiled_and_interpreted() -> None:
    question = ("plan", "infer", "-m", "llama3-8b", "--qps", "8", "--input-dist", "uniform:256-1024",
                "--output-dist", "uniform:64-256", "--ttft-p99", "1", "--tpot-p99", "0.05", "--json", "--lang", "en")
    compiled = _gpuplan(*question, pure=False)
    assert '"replicas"' in compiled
    assert compiled == _gpuplan(*question, pure=True)
