"""The request's own quotes (`user_catalog`): planned with, stored, shown as quoted by you, reproduced by the CLI
command, never written into the catalog files; bad records answer 422 naming the field."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from web_cases import TRAIN, plan_at

from gpuplan.hardware import builtin_data_dir, load_catalog
from gpuplan.service.user_catalog import quotes_from_form

QUOTE = {"quote_accelerator": "h100", "quote_price": "0.5", "quote_currency": "USD", "quote_market": "global",
         "quote_as_of": "2026-01-15", "quote_source": "broker call 2026-01-15"}
QUOTE_ID = "quote-h100-sxm5-80gb"


def _offer(p: dict[str, Any]) -> Any:
    return p.get("offer") or (p.get("hardware_option") or {}).get("offer")


def _hashes() -> dict[str, str]:
    root = builtin_data_dir()
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def user_catalog() -> dict[str, Any]:
    uc = quotes_from_form(QUOTE, load_catalog())
    assert uc is not None
    return dict(uc.model_dump(mode="json"))


@pytest.fixture(scope="module")
def quoted(client: Any, user_catalog: dict[str, Any]) -> dict[str, Any]:
    before = _hashes()
    r = client.post("/api/v1/plan/train", json=TRAIN | {"user_catalog": user_catalog})
    assert r.status_code == 200, r.text
    assert _hashes() == before  # the shared catalog files are never written
    return dict(r.json())


def test_quote_is_planned_with_and_stored(client: Any, quoted: dict[str, Any], train_plan: dict[str, Any],
                                         user_catalog: dict[str, Any]) -> None:
    assert quoted["plan_id"] != train_plan["plan_id"]
    assert quoted["best_per_hardware"]["h100-sxm5-80gb"]["offer"] == QUOTE_ID
    best = next(p for p in quoted["plans"] if _offer(p) == QUOTE_ID)
    assert best["confidence"]["price"]["usd_per_device_hour"] == pytest.approx(0.5)
    assert best["confidence"]["price"]["source"] == QUOTE["quote_source"]
    stored = client.get(f"/api/v1/plans/{quoted['plan_id']}").json()
    assert stored["request"]["user_catalog"] == user_catalog


def test_plan_page_shows_your_quotes(fresh: Any, quoted: dict[str, Any]) -> None:
    page = fresh.get(f"/p/{quoted['plan_id']}?lang=en").text
    assert 'id="your-quotes"' in page and "quoted by you" in page and QUOTE_ID in page
    assert "0.5 USD / GPU-h" in page and "used by a ranked plan" in page
    zh = fresh.get(f"/p/{quoted['plan_id']}?lang=zh").text
    assert "你的报价" in zh and "由你报价" in zh


def test_cli_command_writes_the_quotes_and_reproduces_the_plan(fresh: Any, quoted: dict[str, Any],
                                                               tmp_path: Path) -> None:
    from gpuplan.cli.main import app as cli_app

    text = fresh.get(f"/api/v1/plans/{quoted['plan_id']}/export/cli").text
    assert "--catalog gpuplan-quotes" in text and "quotes.yaml" in text
    head, _, rest = text.partition("<<'GPUPLAN_EOF'\n")
    yaml_text, _, command = rest.partition("GPUPLAN_EOF\n")
    (tmp_path / "quotes.yaml").write_text(yaml_text, encoding="utf-8")
    args = shlex.split(command.strip())[1:]
    args[args.index("gpuplan-quotes")] = str(tmp_path)
    out = CliRunner().invoke(cli_app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["best_per_hardware"] == quoted["best_per_hardware"]
    assert [_offer(p) for p in doc["plans"]] == [_offer(p) for p in quoted["plans"]]


def test_form_with_a_quote_plans_with_it(fresh: Any, quoted: dict[str, Any]) -> None:
    form = {k: str(v) for k, v in TRAIN.items()} | QUOTE
    r = fresh.post("/train?lang=en", data=form, follow_redirects=False)
    where = plan_at(fresh, r)
    assert where == f"/p/{quoted['plan_id']}"  # the same request as the API's: the same stored plan
    assert 'name="quote_price"' in fresh.get("/train?lang=en").text
    assert 'name="quote_price"' in fresh.get("/serve?lang=en").text


def _detail(r: Any) -> dict[str, Any]:
    assert r.status_code == 422, r.text
    return dict(r.json()["detail"])


def test_bad_records_answer_422_naming_the_field(fresh: Any, user_catalog: dict[str, Any]) -> None:
    before = _hashes()
    inst = user_catalog["instances"][0]
    bad_server = {"instances": [inst | {"server": "no-such-server"}]}
    d = _detail(fresh.post("/api/v1/plan/train", json=TRAIN | {"user_catalog": bad_server}))
    assert d["field"] == "user_catalog.instances[0].server" and "no-such-server" in d["allowed"]
    extra = {"instances": [inst | {"price_per_hour": 1}]}
    assert _detail(fresh.post("/api/v1/plan/train", json=TRAIN | {"user_catalog": extra}))[
        "field"] == "user_catalog.instances.0.price_per_hour"
    zero = {"instances": [inst | {"prices": [inst["prices"][0] | {"amount": 0}]}]}
    assert _detail(fresh.post("/api/v1/plan/train", json=TRAIN | {"user_catalog": zero}))[
        "field"].startswith("user_catalog.instances.0.prices.0")
    clash = {"instances": [inst | {"id": "dgx-h100"}]}
    assert _detail(fresh.post("/api/v1/plan/train", json=TRAIN | {"user_catalog": clash}))[
        "field"].startswith("user_catalog.instances")
    assert _detail(fresh.post("/api/v1/plan/train", json=TRAIN | {"user_catalog": {"gpus": []}}))[
        "field"] == "user_catalog.gpus"
    serving = {"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05, "user_catalog": bad_server}
    assert _detail(fresh.post("/api/v1/plan/infer", json=serving))["field"] == "user_catalog.instances[0].server"
    assert _hashes() == before


@pytest.mark.parametrize(("change", "field"), [({"quote_price": "-1"}, "quote_price"),
                                                ({"quote_price": ""}, "quote_price"),
                                                ({"quote_accelerator": "h1OO-nope"}, "quote_accelerator"),
                                                ({"quote_market": "mars"}, "quote_market"),
                                                ({"quote_as_of": "yesterday"}, "quote_as_of")])
def test_bad_form_quote_names_the_field(fresh: Any, change: dict[str, str], field: str) -> None:
    form = {k: str(v) for k, v in TRAIN.items()} | QUOTE | change
    r = fresh.post("/train?lang=en", data=form)
    assert r.status_code == 422
    assert field in r.text


CUSTOM = {"custom_id": "acme-x1", "custom_name": "Acme X1", "custom_hbm_gib": "96", "custom_hbm_bandwidth_gbps": "3000",
          "custom_bf16_tflops": "400", "custom_link_gbps": "400", "custom_per_node": "8", "custom_tdp_w": "600",
          "quote_price": "1.2", "quote_as_of": "2026-11-20", "quote_source": "vendor quote"}


def test_form_custom_accelerator_is_planned_priced_and_stored(fresh: Any) -> None:
    """Issue 14: hardware entered in the form is planned with the scenario (own cluster and the quoted offer),
    stored with it, never written into the shared catalog."""
    before = _hashes()
    assert 'name="custom_bf16_tflops"' in fresh.get("/train?lang=zh").text
    # 400 TFLOPS: 64 of them (the offer's default capacity) take about 64 days for this job
    form = {k: str(v) for k, v in TRAIN.items()} | CUSTOM | {"deadline": "365"}
    r = fresh.post("/train?lang=en", data=form, follow_redirects=False)
    where = plan_at(fresh, r)
    stored = fresh.get(f"/api/v1/plans/{where[3:]}").json()
    mine = [p for p in stored["plans"] if p["accelerator"] == "acme-x1"]
    assert mine, "the custom part has plans"
    priced = [p for p in mine if _offer(p) == "quote-acme-x1"]
    assert priced  # the quoted offer, at the quoted price: 1.2 USD per device-hour
    for p in priced:
        hours = p["devices"] * p["time_to_train_s"] / 3600
        assert p["cost_usd"] == pytest.approx(1.2 * hours, rel=0.02)
    assert stored["request"]["user_catalog"]["accelerators"][0]["bf16_dense_tflops"] == 400
    assert "acme-x1" in fresh.get(f"{where}?lang=en").text
    assert _hashes() == before
    # a custom part without its memory is a form error naming the field
    bad = form | {"custom_hbm_gib": ""}
    r = fresh.post("/train?lang=en", data=bad)
    assert r.status_code == 422 and "custom_hbm_gib" in r.text
