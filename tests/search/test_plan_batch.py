"""The global batch a plan runs: a stated batch is a requirement, the ~4M-token default a target each layout rounds
to a multiple of its data-parallel batch (TrainingJob.global_batch_fixed). Regression tests of a defect found by
using the planner: at 2a289bf a 30-day Llama-3-70B plan on own GB200 NVL72 racks (72 devices per node) could only
use 1152 or 2304 devices. Every smaller cluster (288 = 4 racks) was dropped because its data-parallel degree (a
multiple of 9) never divides the default 1024 sequences, while a cluster whose data-parallel degree exceeded the batch
silently ran a larger one (dp 1152 > 1024 sequences), and `--emit megatron` wrote `--global-batch-size 1024` for a
dp 1152 layout, which Megatron rejects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.hardware import load_catalog
from gpuplan.search.candidates import LayoutChoices, generate
from gpuplan.search.train_search import PlanConstraints, plan_training
from gpuplan.service.train_options import training_job
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
runner = CliRunner()
SPEC = get_preset("llama3-70b").spec


def _batches(c: object) -> set[int]:
    return {int(m * d * b) for m, d, b in zip(c.microbatches, c.dp, c.micro_batch, strict=True)}  # type: ignore[attr-defined]


def test_a_stated_batch_is_run_exactly_and_bounds_the_data_parallel_batch() -> None:
    c = generate(SPEC, LayoutChoices(devices=[512, 2048]), seq_len=4096, global_batch=1024)
    assert len(c) > 0 and _batches(c) == {1024}
    assert int((c.dp * c.micro_batch).max()) <= 1024  # dp 2048 cannot run 1024 sequences
    assert not generate(SPEC, LayoutChoices(devices=[288], tp=(1, 2, 4, 8)), seq_len=4096, global_batch=1024)


def test_the_default_batch_is_a_target_rounded_to_each_layouts_data_parallel_batch() -> None:
    c = generate(SPEC, LayoutChoices(devices=[288]), seq_len=4096, global_batch=1024, batch_fixed=False)
    assert len(c) > 0
    for i in range(len(c)):
        per = int(c.dp[i] * c.micro_batch[i])
        run = int(c.microbatches[i]) * per
        assert run % per == 0 and abs(run - 1024) <= per / 2 + 1e-9 or per > 1024, c.row(i)


def test_training_job_marks_whether_the_batch_was_stated() -> None:
    assert training_job("pretrain", 4096, 512, "bf16").global_batch_fixed is True
    job = training_job("pretrain", 4096, None, "bf16")
    assert job.global_batch_fixed is False and job.global_batch == 1024


def test_own_nvl72_racks_are_planned_at_every_size_that_meets_the_deadline() -> None:
    job = training_job("pretrain", 4096, None, "bf16")
    res = plan_training(SPEC, job, CAT, PlanConstraints(deadline_days=30, accelerators=("gb200-186gb",)),
                        tokens=1e12)
    own = {p["devices"] for p in res.plans if p["cost_usd"] is None}
    assert 288 in own, sorted(own)  # 4 racks finish within 30 days; 1152 was the smallest before
    for p in res.plans:
        lay = p["layout"]
        assert lay["global_batch"] == lay["microbatches"] * lay["dp"] * lay["micro_batch"]
        assert abs(lay["global_batch"] - 1024) <= lay["dp"] * lay["micro_batch"] / 2 or lay["microbatches"] == 1


def test_a_stated_batch_holds_in_every_plan() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e11", "--global-batch", "512",
                              "--max-devices", "1024", "--json", "--all"])
    exited(res, 0)
    plans = json.loads(res.stdout)["plans"]
    assert plans and {p["layout"]["global_batch"] for p in plans} == {512}
    assert max(p["layout"]["dp"] * p["layout"]["micro_batch"] for p in plans) <= 512


@pytest.mark.parametrize("devices", ["288", "1152"])
def test_emitted_megatron_batch_divides_by_the_layouts_data_parallel_batch(tmp_path: Path, devices: str) -> None:
    out = tmp_path / "emit"
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3-70b", "--accelerator", "gb200-186gb",
                              "--num-accels", devices, "--gpus-per-node", "72", "--tokens", "1e12",
                              "--emit", "megatron", "--out", str(out), "--json"])
    exited(res, 0)
    lay = json.loads(res.stdout)["layout"]
    text = "\n".join(f.read_text() for f in out.rglob("*") if f.is_file())
    gbs = int(text.split("--global-batch-size")[1].split()[0])
    assert gbs == lay["global_batch"] and gbs % (lay["dp"] * lay["micro_batch"]) == 0
