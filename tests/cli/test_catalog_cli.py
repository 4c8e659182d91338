"""`gpuplan catalog ...` end to end through the typer app."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "catalog"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path / "xdg"


def run_json(*args: str) -> Any:
    res = runner.invoke(app, ["catalog", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("kind", ["accelerators", "servers", "networks", "instances", "storage"])
def test_list_every_kind(kind: str) -> None:
    out = run_json("list", kind)
    items = out["items"]
    assert isinstance(items, list) and len(items) == out["count"] and items
    for item in items:
        assert item["source"] and item["as_of"] and item["confidence"] and item["origin"]["layer"] == "builtin"
    table = runner.invoke(app, ["catalog", "list", kind])
    assert table.exit_code == 0 and kind in table.stdout


def test_list_filters() -> None:
    huawei = run_json("list", "accelerators", "--vendor", "huawei")
    assert {i["id"] for i in huawei["items"]} >= {"ascend-910b", "ascend-910c"}
    assert all(i["vendor"] == "Huawei" for i in huawei["items"])
    cn = run_json("list", "accelerators", "--market", "cn")
    ids = {i["id"] for i in cn["items"]}
    assert {"h20-96gb", "h800-sxm5-80gb", "a800-sxm4-80gb", "l20-48gb", "rtx4090d-24gb"} <= ids
    assert "h100-sxm5-80gb" not in ids
    big = run_json("list", "accelerators", "--min-memory-gib", "141")
    assert all(i["hbm_gib"] >= 141 for i in big["items"])
    aws = run_json("list", "instances", "--provider", "aws", "--min-memory-gib", "141")
    assert {i["accelerator"] for i in aws["items"]} <= {"h200-sxm-141gb", "b200-sxm-180gb"}
    assert all(i["provider"] == "aws" for i in aws["items"])
    cn_inst = run_json("list", "instances", "--market", "cn", "--vendor", "nvidia")
    assert all(i["market"] == "cn" for i in cn_inst["items"])


def test_unknown_price_is_null_in_json() -> None:
    out = run_json("show", "p5e.48xlarge")
    prices = out["record"]["prices"]
    assert any(p["amount"] is None and p["kind"] == "on_demand_hourly" for p in prices)
    assert out["derived"]["spot"]["amount"] == 14.5


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["list", "gpus"], "kind="),
        (["list", "networks", "--vendor", "nvidia"], "--vendor"),
        (["list", "accelerators", "--market", "eu"], "--market"),
        (["list", "instances", "--provider", "awz"], "Did you mean aws"),
        (["list", "accelerators", "--vendor", "nvidea"], "NVIDIA"),
        (["show", "h100-sxm5-80g"], "Did you mean"),
        (["compare", "h100", "dgx-h100"], "one kind"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], needle: str) -> None:
    res = runner.invoke(app, ["catalog", *args])
    exited(res, 2)
    assert needle in res.output
    assert len(res.output.strip().splitlines()) <= 3  # one logical line (may wrap)


def test_show_every_value_with_source() -> None:
    out = run_json("show", "H800")
    assert out["id"] == "h800-sxm5-80gb" and out["kind"] == "accelerators"
    values = {v["field"]: v for v in out["values"]}
    assert values["intra_node_link_gbps"]["value"] == 400
    assert "FlashMLA" in values["bf16_dense_tflops"]["source"]
    assert "implied" in values["fp32_dense_tflops"]["source"]  # per-field source
    h20 = run_json("show", "h20")
    tdp = next(v for v in h20["values"] if v["field"] == "tdp_w")
    assert tdp["confidence"] == "low"
    text = runner.invoke(app, ["catalog", "show", "ascend-910b"])
    assert text.exit_code == 0 and "low" in text.stdout and "evokernel" in text.stdout


def test_show_instance_prices_carry_their_own_source() -> None:
    out = run_json("show", "aws-p5en.48xlarge")
    rows = [v for v in out["values"] if v["field"].startswith("prices[")]
    assert rows and all("dstack" in r["source"] for r in rows)
    assert out["derived"]["usd_per_hour"] == pytest.approx(63.296)


def test_compare_side_by_side() -> None:
    out = run_json("compare", "h100-sxm5-80gb", "h800-sxm5-80gb", "l40s-48gb")
    assert out["ids"] == ["h100-sxm5-80gb", "h800-sxm5-80gb", "l40s-48gb"]
    rows = {r["field"]: r["values"] for r in out["rows"]}
    assert [v["value"] for v in rows["intra_node_link_gbps"]] == [900, 400, 64]
    assert all(v["source"] for v in rows["hbm_bandwidth_gbps"])
    assert rows["fp64_dense_tflops"][2] is None  # L40S: not recorded
    text = runner.invoke(app, ["catalog", "compare", "h100", "h800"])
    assert text.exit_code == 0 and "sources" in text.stdout and "[1]" in text.stdout


def test_validate_good_and_broken() -> None:
    ok = runner.invoke(app, ["catalog", "validate", str(FIXTURES / "good")])
    assert ok.exit_code == 0 and "OK" in ok.stdout and "replaces built-in" in ok.stdout
    bad = runner.invoke(app, ["catalog", "validate", str(FIXTURES / "broken")])
    assert bad.exit_code == 1
    for needle in (
        "a_unknown_key.yaml:5",
        "hbm_gb",
        "b_wrong_unit.yaml:6",
        "c_missing_source.yaml",
        "d_duplicate_id.yaml:11",
        "e_bad_yaml.yaml:4",
        "nothing loaded",
    ):
        assert needle in bad.stdout, needle
    data = json.loads(runner.invoke(app, ["catalog", "validate", str(FIXTURES / "broken"), "--json"]).stdout)
    assert data["ok"] is False and len(data["issues"]) == 11
    assert {"path", "line", "field", "message", "kind", "record"} <= set(data["issues"][0])


def test_validate_reports_a_bad_date_like_any_field(tmp_path: Path) -> None:
    """as_of: 2026-13-01 used to crash the YAML reader with a traceback; now it is one more field problem,
    listed in the same pass as the others."""
    bad = runner.invoke(app, ["catalog", "validate", str(FIXTURES / "broken")])
    exited(bad, 1)
    for needle in ("g_bad_date.yaml:12: accelerators[bad-date].as_of: '2026-13-01' is not a calendar date",
                   "g_bad_date.yaml:17", "g_bad_date.yaml:23", "a_unknown_key.yaml:5"):
        assert needle in bad.stdout.replace("\n", ""), needle
    (tmp_path / "one.yaml").write_text((FIXTURES / "good" / "my-cluster.yaml").read_text(encoding="utf-8")
                                       .replace("as_of: 2026-09-01", "as_of: 2026-13-01"), encoding="utf-8")
    res = runner.invoke(app, ["catalog", "list", "accelerators", "--catalog", str(tmp_path)])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit)
    assert "currency.as_of" in res.output and "not a calendar date" in res.output


def test_broken_override_blocks_other_commands() -> None:
    res = runner.invoke(app, ["catalog", "list", "accelerators", "--catalog", str(FIXTURES / "broken")])
    exited(res, 2)
    assert "catalog not loaded" in res.output


def test_user_override_is_shown_as_such(_isolated_config: Path) -> None:
    target = _isolated_config / "gpuplan" / "catalog"
    target.mkdir(parents=True)
    shutil.copy(FIXTURES / "good" / "my-cluster.yaml", target)
    out = run_json("list", "instances", "--provider", "cn-910b-rental")
    mine = next(i for i in out["items"] if i["id"] == "cn-rental-8x-910b3")
    assert mine["origin"]["layer"] == "user" and mine["origin"]["replaces_builtin"] is True
    assert mine["monthly"]["amount"] == 14000
    table = runner.invoke(app, ["catalog", "list", "instances", "--provider", "cn-910b-rental"])
    assert "user, replaces built-in" in table.stdout
    shown = runner.invoke(app, ["catalog", "show", "acme-x1-64gb"])
    assert "user override" in shown.stdout
    where = runner.invoke(app, ["catalog", "where"])
    assert str(target) in where.stdout.replace("\n", "")


def test_catalog_option_adds_records() -> None:
    out = run_json("show", "ACME X1", "--catalog", str(FIXTURES / "good"))
    assert out["id"] == "acme-x1-64gb" and out["origin"]["layer"] == "user"
