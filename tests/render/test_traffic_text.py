"""The text of plan infer --traffic: a week's identical days written once, a derived term rate flagged."""

from __future__ import annotations

from typing import Any

from gpuplan.render.traffic_text import schedule_spans


def _row(day: str | None, hour: int, replicas: int, qps: float) -> dict[str, Any]:
    return {**({"day": day} if day else {}), "hour": hour, "qps": qps, "replicas": replicas, "instances": replicas,
            "devices": 8 * replicas, "cost_usd_per_hour": 2.0 * replicas}


def test_day_spans() -> None:
    rows = [_row(None, h, 3 if 9 <= h < 18 else 1, 10.0 if 9 <= h < 18 else 1.0) for h in range(24)]
    lines = schedule_spans(rows, "en")
    assert lines == ["00:00-09:00: 1.00 req/s -> replicas 1, instances 1 (8 devices), 2.00 USD/hour with the mix",
                     "09:00-18:00: 10.0 req/s -> replicas 3, instances 3 (24 devices), 6.00 USD/hour with the mix",
                     "18:00-24:00: 1.00 req/s -> replicas 1, instances 1 (8 devices), 2.00 USD/hour with the mix"]


def test_week_groups_identical_days() -> None:
    days = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
    rows = [_row(d, h, (3 if 9 <= h < 18 else 1) if i < 5 else 1, (10.0 + i if 9 <= h < 18 else 1.0) if i < 5
                 else 0.5) for i, d in enumerate(days) for h in range(24)]
    lines = schedule_spans(rows, "en")
    assert len(lines) == 4
    assert lines[1].startswith("Mon-Fri 09:00-18:00: 10.0-14.0 req/s -> replicas 3")  # the rates of all five days
    assert lines[3].startswith("Sat-Sun 00:00-24:00: 0.500 req/s -> replicas 1")
    assert schedule_spans(rows, "zh")[3].startswith("周六-周日 00:00-24:00")
