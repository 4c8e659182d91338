"""advise.buy_option: the own cluster a buyer could buy instead of renting, never a part the market's rules block."""

from __future__ import annotations

from typing import Any

from gpuplan.advise.buy_option import buy_option


def _own(acc: str, devices: int, usd: float, days: float) -> dict[str, Any]:
    return {"accelerator": acc, "devices": devices, "time_to_train_days": days, "time_to_train_s": days * 86400,
            "purchase_usd": usd, "purchase": {"server": f"{acc}-srv", "servers": devices // 8, "amount": usd / 8 * 7,
                                              "currency": "CNY", "source": "test", "as_of": "2026",
                                              "confidence": "low"}}


def test_cheapest_timely_own_cluster_of_an_unblocked_part() -> None:
    plans = [_own("h800", 128, 3e6, 20), _own("910b", 128, 4.7e6, 43), _own("910b", 256, 9.5e6, 21),
             _own("h20", 256, 4.9e6, 29), {"accelerator": "a100", "devices": 8, "time_to_train_days": 1,
                                            "time_to_train_s": 86400, "purchase_usd": None}]
    got = buy_option(plans, {"h800": "market.export"}, target_days=30)
    assert got is not None and got["accelerator"] == "h20" and got["servers"] == 32
    assert got["purchase_amount"] == 32 * got["price_per_server"]
    # no plan within the target: the cheapest of all
    late = buy_option(plans, {"h800": "market.export", "h20": "market.export"}, target_days=10)
    assert late is not None and late["accelerator"] == "910b" and late["devices"] == 128
    assert buy_option(plans[-1:], {}) is None  # no server price: nothing to buy
