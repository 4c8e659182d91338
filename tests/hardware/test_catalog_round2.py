"""Catalog research round 2: current prices, price history, distressed-capacity rents, honest price labels
and the host figures that the advisor reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.advise.adapt_train import server_for
from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import default_thresholds
from gpuplan.advise.rules_work import host_cpu, host_ram
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import Catalog, Instance, Price, PricingPolicy, load_catalog
from gpuplan.search.offers import hardware_options
from gpuplan.search.pricing import device_price, instance_price, price_label, used_price
from gpuplan.units import GIB

CAT = load_catalog(use_user_dir=False)


def _usd_per_gpu_hour(cat: Catalog, inst_id: str) -> float:
    rate = instance_price(cat, cat.instance(inst_id)).on_demand
    assert rate is not None
    return rate


def test_p5_on_demand_is_the_post_2025_list_price_and_the_old_one_stays_as_history() -> None:
    p5 = CAT.instance("p5.48xlarge")
    used = p5.price("on_demand_hourly")
    assert used is not None and used.amount == pytest.approx(55.04) and used.as_of == "2026-09-01"
    assert used.basis == "list_price" and used.confidence == "medium"
    history = [p.amount for p in p5.price_history("on_demand_hourly")]
    assert history == [pytest.approx(55.04), pytest.approx(98.32)]  # newest first; the stale price kept
    assert CAT.instance("p4d.24xlarge").price("on_demand_hourly").amount == pytest.approx(21.957642)  # type: ignore[union-attr]
    assert CAT.instance("p4de.24xlarge").price("on_demand_hourly").amount == pytest.approx(27.44705)  # type: ignore[union-attr]


def test_h100_neocloud_offer_is_cheaper_per_gpu_hour_than_aws_on_demand() -> None:
    aws = _usd_per_gpu_hour(CAT, "aws-p5.48xlarge")
    assert aws == pytest.approx(55.04 / 8)
    neo = [i for i in CAT.instances.values() if i.provider in ("lambda", "coreweave", "nebius", "hyperstack", "runpod")
           and CAT.server(i.server).accelerator == "h100-sxm5-80gb"]
    assert neo and all(_usd_per_gpu_hour(CAT, i.id) < aws for i in neo)
    best = device_price(CAT, "h100-sxm5-80gb", market="global")
    assert best.on_demand is not None and best.on_demand < aws / 2  # one H100 no longer costs 4-5x the market


def test_history_uses_the_newest_as_of_whatever_the_order_in_the_file() -> None:
    nebius = CAT.instance("nebius-8x-h100")
    assert nebius.price("on_demand_hourly").amount == pytest.approx(36.0)  # type: ignore[union-attr]
    older = Price(kind="monthly", amount=20000, currency="CNY", source="a", as_of="2026-07", basis="market_quote")
    newer = Price(kind="monthly", amount=15000, currency="CNY", source="b", as_of="2026-08-22", basis="market_quote")
    year = Price(kind="monthly", amount=30000, currency="CNY", source="c", as_of="2026")
    inst = nebius.model_copy(update={"prices": (newer, year, older)})
    assert [p.source for p in inst.price_history("monthly")] == ["b", "a", "c"]
    assert inst.price("monthly") is newer
    h100_cn = CAT.instance("cn-rental-8x-h100")
    assert h100_cn.price("monthly").as_of == "2026-08-22"  # type: ignore[union-attr]
    assert len(h100_cn.price_history("monthly")) >= 5  # the 2024-2026 trend stays listed


def test_two_prices_of_one_kind_need_different_dates() -> None:
    base = CAT.instance("nebius-8x-h200").model_dump()
    p = base["prices"][0]
    with pytest.raises(ValueError, match="different as_of"):
        Instance.model_validate({**base, "prices": [p, {**p, "amount": 1.0}]})


def test_distressed_rents_are_not_planned_with_unless_asked(tmp_path: Path) -> None:
    inst = CAT.instance("cn-rental-8x-910b")
    newest = inst.price_history("monthly")[0]
    assert newest.distressed and newest.basis == "market_quote" and newest.amount == 15000
    assert inst.price("monthly") is None  # not the 2025 price either: superseded prices are never used
    assert device_price(CAT, "ascend-910b", market="cn").monthly is None
    # not used as the offer's price: the offer is planned as a scenario at that rent (issue 37: it was dropped)
    opts = hardware_options(CAT, CAT.accelerator("ascend-910b"), default_calibration(), market="cn")
    assert [o.kind for o in opts] == ["offer", "own"] and opts[0].scenario == "distressed"
    assert opts[0].price.monthly == pytest.approx(15000 / CAT.rates.cny_per_usd / 730 / 8)
    assert "scenario at distressed-capacity rents" in opts[0].price_basis
    # the user asks through a catalog file
    (tmp_path / "pricing.yaml").write_text("pricing: {use_distressed: true}\n", encoding="utf-8")
    asked = load_catalog([tmp_path], use_user_dir=False)
    assert asked.pricing.use_distressed
    got = device_price(asked, "ascend-910b", market="cn")
    assert got.monthly == pytest.approx(15000 / asked.rates.cny_per_usd / 730 / 8)
    assert CAT.with_pricing(PricingPolicy(use_distressed=True)).instance(inst.id).price("monthly", distressed=True)


def test_price_labels_say_list_price_or_market_quote_never_datasheet() -> None:
    aws = used_price(CAT, CAT.instance("p5.48xlarge"), "on_demand_hourly")
    assert aws is not None
    en = price_label(aws)
    assert en.startswith("list price (") and "2026-09-01" in en and "datasheet" not in en
    assert price_label(aws, "zh").startswith("公开标价")
    quote = CAT.instance("cn-rental-8x-h100").price("monthly")
    assert quote is not None
    assert price_label(quote).startswith("market quote (medium confidence")
    assert "可信度中" in price_label(quote, "zh")
    distressed = CAT.instance("cn-rental-8x-910b").price("monthly", distressed=True)
    assert distressed is not None and "distressed capacity" in price_label(distressed)
    opt = next(o for o in hardware_options(CAT, CAT.accelerator("h100-sxm5-80gb"), default_calibration())
               if o.offer == "aws-p5.48xlarge")
    assert "list price (" in opt.price_basis and "datasheet" not in opt.price_basis


def _facts(server_id: str, acc: str) -> PlanFacts:
    a = CAT.accelerator(acc)
    return PlanFacts(kind="train", model="m", params_total=8e9, method="full", precision="bf16", accelerator=a,
                     server=CAT.server(server_id), network=None, devices=16, gpus_per_node=8, nics_per_node=8.0,
                     memory_per_device_bytes=1e9, device_memory_bytes=float(a.memory_gib or 0) * GIB,
                     tokens_per_s=1e5, tokenize_cores_per_node=0.0)


@pytest.mark.parametrize(("acc", "server", "cores", "ram"), [
    ("ascend-910b", "atlas-800t-a2", 192, 1536),
    ("l40s-48gb", "pcie-l40s-8", 192, 1536),
    ("b200-sxm-180gb", "lambda-8x-b200-node", 208, 2900),
    ("a100-sxm4-80gb", "lambda-8x-a100-80gb-node", 240, 1800),
])
def test_host_findings_use_the_servers_stated_cores_and_ram(acc: str, server: str, cores: int, ram: int) -> None:
    sv = server_for(CAT, acc, 8)
    assert sv is not None and sv.id == server and sv.cpu_cores == cores and sv.ram_gib == ram
    th = default_thresholds()
    f = _facts(server, acc)
    found = [x.id for x in host_cpu(f, th) + host_ram(f, th)]
    assert "host.cpu_unknown" not in found and "host.ram_unknown" not in found
