"""Issue 37's Ascend questions through the CLI: Qwen3-235B-A22B continued pretraining in China within 45 days
(rental plans, named with the framework Ascend teams run, with their capacity caveats, beside buying), and the rent
vs buy of 64 x 910B in China in CNY."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from typer.testing import CliRunner

from gpuplan.cli.main import app

runner = CliRunner()


@cache
def _qwen_cn() -> dict[str, Any]:
    res = runner.invoke(app, ["plan", "train", "-m", "qwen3-235b-a22b", "--method", "pretrain", "--tokens", "100e9",
                              "--market", "cn", "--deadline", "45", "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_ascend_plans_name_mindspeed_and_cuda_plans_do_not() -> None:
    plans = _qwen_cn()["plans"]
    ascend = [p for p in plans if p["accelerator"].startswith("ascend")]
    cuda = [p for p in plans if not p["accelerator"].startswith("ascend")]
    assert ascend and cuda
    assert all(p["layout_family"]["framework"]["id"] == "mindspeed" for p in ascend)
    assert all("framework" not in p["layout_family"] for p in cuda)
    assert all(p["time_to_train_days"] <= 45 for p in plans)  # the deadline holds


def test_stated_framework_is_not_overridden() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "qwen3-8b", "--tokens", "1e9", "--market", "cn",
                              "--framework", "megatron", "--json"])
    assert res.exit_code == 0, res.output
    plans = json.loads(res.stdout)["plans"]
    assert plans and all("framework" not in p["layout_family"] for p in plans)
