"""Instance-level packing of several models' replicas (search/infer_packing.py), on figures worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.search.infer_packing import first_fit_decreasing, packable, replica_sizes, shared_instances


def _fleet(instance: str, replicas: int, tp: int, instances: int, usd: float, *, ep: int = 1,
           per_card: bool = False) -> dict[str, Any]:
    return {"accelerator": "a100-sxm4-40gb", "instance": instance, "replicas": replicas, "instances": instances,
            "layout": {"tp": tp, "pp": 1, "ep": ep}, "weights": "int8", "devices": replicas * tp,
            "cost_usd_per_hour": usd, "per_card": per_card}


def test_first_fit_decreasing_by_hand() -> None:
    assert first_fit_decreasing([2, 2, 2, 1, 1], 8) == 1  # 3 TP2 + 2 TP1: 8 devices, one 8-GPU instance
    assert first_fit_decreasing([2, 2, 2, 1, 1, 1, 1, 1], 8) == 2  # 3 TP2 + 5 TP1: 11 devices
    assert first_fit_decreasing([4, 4, 4], 8) == 2 and first_fit_decreasing([3, 3, 3], 8) == 2
    assert first_fit_decreasing([], 8) == 0
    with pytest.raises(ValueError, match="exceeds"):
        first_fit_decreasing([16], 8)


def test_replicas_and_expert_groups_are_the_units_packed() -> None:
    assert replica_sizes(_fleet("x", 3, 2, 1, 1.0)) == [2, 2, 2]
    # DP4 attention over EP4 (tp1): four attention groups share one 4-device expert group
    assert replica_sizes(_fleet("x", 8, 1, 1, 1.0, ep=4)) == [4, 4]
    assert packable(_fleet("x", 1, 8, 1, 1.0), 8) and not packable(_fleet("x", 1, 8, 1, 1.0), 4)
    assert not packable(_fleet("x", 1, 1, 1, 1.0, per_card=True), 8)  # a per-card rental bills each device


def test_two_small_fleets_share_one_server() -> None:
    """Model A: 1 TP4 replica on an 8-GPU instance at 15.92 USD/h; model B: 1 TP2 replica on another; packed they
    take one instance (6 of 8 devices): 15.92 instead of 31.84."""
    a, b = _fleet("lambda-8x", 1, 4, 1, 15.92), _fleet("lambda-8x", 1, 2, 1, 15.92)
    found = shared_instances({"a": a, "b": b}, {"a": [a], "b": [b]}, {"lambda-8x": 8},
                             market_of={"lambda-8x": "global"}, market=None)
    assert len(found) == 1
    p = found[0]
    assert (p.instances_apart, p.instances_packed, p.devices_packed) == (2, 1, 6)
    assert p.usd_per_hour_total == pytest.approx(15.92) and p.saving_usd_per_hour == pytest.approx(15.92)


def test_packing_keeps_a_model_on_its_own_cheaper_fleet() -> None:
    """C is cheapest on per-card rentals (2 x 0.72 USD/h) and needs 3 TP1 on the server kind: A (TP4) + B (TP2) + C
    take 9 devices, two 8-GPU instances (9.60 USD/h), so A and B are packed on one (4.80) and C stays on its cards
    (1.44); B's larger fleet (4 TP2) is never chosen."""
    a, b_best, b_big = _fleet("srv", 1, 4, 1, 4.8), _fleet("srv", 1, 2, 1, 4.8), _fleet("srv", 4, 2, 1, 4.8)
    c_card, c_srv = _fleet("card", 2, 1, 2, 1.44, per_card=True), _fleet("srv", 3, 1, 1, 4.8)
    best = {"a": a, "b": b_best, "c": c_card}
    found = shared_instances(best, {"a": [a], "b": [b_best, b_big], "c": [c_card, c_srv]}, {"srv": 8, "card": 1},
                             market_of={"srv": "cn", "card": "cn"}, market=None)
    p = found[0]
    assert p.models == ("a", "b") and p.instances_packed == 1 and p.fleets == (a, b_best)
    assert p.usd_per_hour_total == pytest.approx(4.8 + 1.44)  # a + b packed, c on its own cards
    assert p.saving_usd_per_hour == pytest.approx(4.8)


def test_only_the_buyers_market_and_multi_device_instances_pack() -> None:
    a, b = _fleet("srv", 1, 1, 1, 5.0), _fleet("srv", 1, 1, 1, 5.0)
    args = ({"a": a, "b": b}, {"a": [a], "b": [b]})
    assert shared_instances(*args, {"srv": 8}, market_of={"srv": "cn"}, market="global") == []
    assert shared_instances(*args, {"srv": 1}, market_of={"srv": "cn"}, market=None) == []
