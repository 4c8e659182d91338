"""gpuplan bench, bench compare and calibrate through the CLI; calibration moves the next estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.bench.records import load_result, write_result
from gpuplan.cli.main import app
from gpuplan.estimate.calibration import default_calibration

runner = CliRunner()
ESTIMATE = ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8",
            "--tp", "1", "--pp", "1", "--dp", "8", "--cp", "1", "--zero", "1", "--micro-batch", "1",
            "--recompute", "none", "--seq-len", "4096", "--global-batch", "64", "--json"]
TERM = "compute_efficiency.h100-sxm5-80gb.bf16"


def _gpu_result(make: Any, tmp_path: Path, name: str, **kw: Any) -> Path:
    return write_result(make(**kw), tmp_path / name)


@pytest.fixture(autouse=True)
def _own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calibration files go to a temporary user config folder, never the real one."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _estimate() -> dict[str, Any]:
    res = runner.invoke(app, ESTIMATE)
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


@pytest.mark.parametrize(("bf16_tflops", "longer"), [(400.0, True), (900.0, False)])
def test_calibrate_moves_the_next_estimate(tmp_path: Path, bf16_tflops: float, longer: bool,
                                           make_gpu_result: Any) -> None:
    before = _estimate()
    assert before["assumptions"]["calibration"][TERM]["overridden"] is False
    path = _gpu_result(make_gpu_result, tmp_path, "h100.json", bf16_tflops=bf16_tflops)
    res = runner.invoke(app, ["calibrate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    written = json.loads(res.stdout)
    assert Path(written["written"]) == tmp_path / "config" / "gpuplan" / "calibration" / "h100-sxm5-80gb.yaml"
    shipped = default_calibration().value(TERM)
    # shipped x (measured / 989.4) / 0.80 (reference)
    assert written["terms"][TERM]["value"] == pytest.approx(shipped * bf16_tflops / 989.4 / 0.80, abs=1e-4)
    # measured copy fraction over the reference copy fraction (0.85); busbw over the shipped NVLink term
    assert written["terms"]["hbm_bandwidth_scale.h100-sxm5-80gb"]["value"] == pytest.approx(
        2900 / 3350 / 0.85, abs=1e-4)
    assert written["recorded"]["nvlink_bw_efficiency"]["value"] == pytest.approx(340 / 450, abs=1e-4)
    assert written["terms"]["link_bw_scale.h100-sxm5-80gb"]["value"] == pytest.approx(340 / 450 / 0.80, abs=1e-4)
    after = _estimate()
    term = after["assumptions"]["calibration"][TERM]
    assert term["overridden"] is True and term["source"].startswith("gpuplan calibrate: h100.json")
    assert (after["step_time_s"] > before["step_time_s"]) is longer
    assert (after["breakdown_s"]["compute"] > before["breakdown_s"]["compute"]) is longer
    table = runner.invoke(app, ESTIMATE[:-1])
    assert "calibrated" in table.stdout and "(measured)" in table.stdout


def test_measured_memory_and_link_bandwidth_move_their_terms(tmp_path: Path, make_gpu_result: Any) -> None:
    """A slower measured copy lengthens the memory-bound terms; a slower all-reduce the TP traffic."""
    tp8 = [*ESTIMATE]
    tp8[tp8.index("--tp") + 1], tp8[tp8.index("--dp") + 1] = "8", "1"
    before = json.loads(runner.invoke(app, tp8).stdout)
    res = make_gpu_result()
    slow = tuple(m.model_copy(update={"value": m.value / 2})
                 if m.name == "memory.copy" or (m.benchmark == "collectives" and m.metric == "busbw") else m
                 for m in res.measurements)
    path = write_result(res.model_copy(update={"measurements": slow}), tmp_path / "slow.json")
    assert runner.invoke(app, ["calibrate", str(path)]).exit_code == 0
    after = json.loads(runner.invoke(app, tp8).stdout)
    # half the bandwidth: the bandwidth part of the TP all-reduces doubles, the latency part stays
    tp_before, tp_after = before["breakdown_s"]["tp_comm"], after["breakdown_s"]["tp_comm"]
    assert 1.7 * tp_before < tp_after < 2 * tp_before
    assert after["breakdown_s"]["other"] > before["breakdown_s"]["other"]
    used = after["assumptions"]["calibration"]
    assert used["link_bw_scale.h100-sxm5-80gb"]["overridden"] is True
    assert used["hbm_bandwidth_scale.h100-sxm5-80gb"]["source"].startswith("gpuplan calibrate: slow.json")


def test_calibrate_refuses_cpu_results_and_names_bad_files(tmp_path: Path, make_gpu_result: Any) -> None:
    gpu = make_gpu_result()
    cpu = gpu.model_copy(update={"machine": gpu.machine.model_copy(update={"backend": "cpu"})})
    path = write_result(cpu, tmp_path / "cpu.json")
    res = runner.invoke(app, ["calibrate", str(path)])
    assert res.exit_code == 2 and "GPU or NPU" in res.stderr
    res = runner.invoke(app, ["calibrate", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "readable" in res.stderr
    res = runner.invoke(app, ["calibrate", str(_gpu_result(make_gpu_result, tmp_path, "x.json")),
                              "--accelerator", "h1000"])
    assert res.exit_code == 2 and "h100" in res.stderr


def test_broken_calibration_file_is_one_line(tmp_path: Path) -> None:
    d = tmp_path / "config" / "gpuplan" / "calibration"
    d.mkdir(parents=True)
    (d / "h100-sxm5-80gb.yaml").write_text("terms: 3\n", encoding="utf-8")
    res = runner.invoke(app, ESTIMATE)
    assert res.exit_code == 2 and "calibration file" in res.stderr


def test_bench_cpu_quick_subset_and_compare(tmp_path: Path, make_gpu_result: Any) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "cpu.json"
    res = runner.invoke(app, ["bench", "--device", "cpu", "--quick", "--only", "memory,storage", "--dir",
                              str(tmp_path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "memory.copy" in res.stdout and "result saved" in res.stdout
    cpu = load_result(out)
    assert [s.name for s in cpu.benchmarks] == ["memory", "storage"]
    gpu = _gpu_result(make_gpu_result, tmp_path, "gpu.json")
    res = runner.invoke(app, ["bench", "compare", str(out), str(gpu), "--json"])
    assert res.exit_code == 0, res.output
    cmp = json.loads(res.stdout)
    assert len(cmp["columns"]) == 2
    row = next(r for r in cmp["rows"] if r["name"] == "memory.copy")
    assert row[cmp["columns"][1]]["measured"] == 2900.0
    res = runner.invoke(app, ["bench", "compare", str(out), str(gpu), "--benchmark", "memory"])
    assert res.exit_code == 0 and "memory.copy" in res.stdout and "gemm" not in res.stdout


def test_bench_bad_input_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    res = runner.invoke(app, ["bench", "--device", "cuda", "--out", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "no CUDA device" in res.stderr
    res = runner.invoke(app, ["bench", "--device", "cpu", "--only", "gemmm"])
    assert res.exit_code == 2 and "gemm" in res.stderr
    res = runner.invoke(app, ["bench", "--device", "tpu"])
    assert res.exit_code == 2 and "auto, cuda, npu or cpu" in res.stderr


def test_bench_failure_exits_1_with_a_partial_result(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "p.json"
    res = runner.invoke(app, ["bench", "--device", "cpu", "--quick", "--only", "memory,storage", "--dir",
                              str(tmp_path / "missing"), "--out", str(out)])
    assert res.exit_code == 1
    assert "partial result saved" in res.stderr and "not a directory" in res.stderr
    saved = load_result(out)
    assert not saved.complete and any(m.name == "memory.copy" for m in saved.measurements)


@pytest.mark.usefixtures("without_torch")
def test_bench_without_torch_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "no-torch.json"
    res = runner.invoke(app, ["bench", "--device", "cpu", "--out", str(out)])
    assert res.exit_code == 2 and "needs PyTorch" in res.stderr and "pip install torch" in res.stderr
    saved = load_result(out)  # a partial result: the host and the reason, no measurement
    assert not saved.complete and saved.benchmarks[0].status == "failed" and not saved.measurements
    assert "PyTorch" in (saved.benchmarks[0].error or "")


def test_bench_on_an_absent_device_saves_the_reason(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    out = tmp_path / "no-gpu.json"
    res = runner.invoke(app, ["bench", "--device", "cuda", "--out", str(out)])
    exited(res, 2)
    assert "no CUDA device" in res.stderr
    saved = load_result(out)
    assert saved.benchmarks[0].name == "backend" and saved.benchmarks[0].status == "failed"
    assert saved.accelerator_note == "--device cuda unavailable"


def test_bench_compare_and_calibrate_follow_lang(tmp_path: Path, make_gpu_result: Any) -> None:
    gpu = _gpu_result(make_gpu_result, tmp_path, "gpu.json")
    zh = runner.invoke(app, ["bench", "compare", str(gpu), str(gpu), "--lang", "zh"])
    assert zh.exit_code == 0 and "gpuplan bench 对比" in zh.stdout and "测量项" in zh.stdout
    en = runner.invoke(app, ["bench", "compare", str(gpu), str(gpu), "--lang", "en"])
    assert "measurement" in en.stdout and "测量项" not in en.stdout
    cal = runner.invoke(app, ["calibrate", str(gpu), "--lang", "zh", "--dir", str(tmp_path / "cal")])
    assert cal.exit_code == 0, cal.output
    assert "的校准" in cal.stdout and "用于估算" in cal.stdout
    bad = runner.invoke(app, ["calibrate", str(tmp_path / "nope.json"), "--lang", "zh"])
    assert bad.exit_code == 2 and bad.stderr.startswith("错误：")
