"""Issue 37's Ascend questions through the CLI: Qwen3-235B-A22B continued pretraining in China within 45 days
(rental plans, named with the framework Ascend teams run, with their capacity caveats, beside buying), and the rent
vs buy of 64 x 910B in China in CNY."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
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


def test_qwen_cn_shows_rentals_with_capacity_caveats_beside_buying() -> None:
    out = _qwen_cn()
    rec = out["recommended"]
    assert rec["hardware_option"]["kind"] == "offer"  # a rental is recommended ...
    caveats = " ".join(f["message"]["en"] for f in out["findings"]) + json.dumps(rec)
    assert "capacity" in caveats  # ... with the capacity it cannot confirm said
    buy = out["buy_option"]  # ... and beside it, owning the cluster
    assert buy is not None and buy["currency"] == "CNY" and buy["servers"] * 8 == buy["devices"]
    assert buy["accelerator"] not in out["not_recommended"]  # never a part China cannot buy new (export rules)
    assert buy["days"] <= 30  # within the rule's target, not at the deadline's edge
    assert buy["purchase_amount"] == buy["servers"] * buy["price_per_server"]


def test_tco_64_910b_in_china_answers_in_cny() -> None:
    res = runner.invoke(app, ["tco", "--accelerator", "ascend-910b", "--devices", "64", "--market", "cn",
                              "--years", "3", "--utilization", "0.7", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    cny = out["currency"]
    assert cny["code"] == "CNY" and out["server"] == "atlas-800t-a2" and out["nodes"] == 8
    # 8 Atlas 800T A2 at the catalog's CNY 2,122,000 (framework agreement, low confidence) are the servers' capex
    servers = next(line for line in out["own"]["lines"] if line["name"] == "servers")
    assert servers["capex_usd"] * cny["cny_per_usd"] == pytest.approx(8 * 2_122_000)
    assert cny["rent_per_year"]["monthly"] > 0  # the market's rent in CNY beside owning
