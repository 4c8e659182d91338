"""Traffic curves (plan infer --traffic): strict CSV and inline rows, and the replicas each hour gets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.errors import InputError
from gpuplan.search.infer_traffic import (
    lead_hours,
    read_traffic,
    scale_up,
    schedule,
    traffic_from_rows,
    units_for,
)

DAY = "hour,qps\n" + "\n".join(f"{h},{20 if 9 <= h < 18 else 4}" for h in range(24)) + "\n"


def test_day_curve_reads_and_repeats_over_730_hours() -> None:
    c = read_traffic("# a comment\n" + DAY, label="day.csv")
    assert not c.weekly and len(c.rows) == 24 and c.peak_qps == 20.0
    assert c.hours_per_row == pytest.approx(730 / 24)
    # 9 hours at 20 req/s and 15 at 4, each hour 3600 s, 730/24 times a month
    assert c.requests_per_month == pytest.approx((9 * 20 + 15 * 4) * 3600 * 730 / 24)


def test_week_curve_takes_day_names_and_numbers() -> None:
    rows = ["day,hour,qps"] + [f"{d if d % 2 else ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'][d]},{h},"
                               f"{1 + d}" for d in range(7) for h in range(24)]
    c = read_traffic("\n".join(rows))
    assert c.weekly and len(c.rows) == 168 and c.peak_qps == 7.0
    assert c.rows[0].day == 0 and c.rows[-1].day == 6 and c.rows[-1].qps == 7.0
    assert c.hours_per_row == pytest.approx(730 / 168)


@pytest.mark.parametrize(("text", "field", "hint"), [
    ("time,qps\n0,1\n", "traffic line 1: header", "hour,qps"),
    ("hour,qps\n0,1\n24,1\n", "traffic line 3: hour", "23"),
    ("hour,qps\n0,1\n1,-2\n", "traffic line 3: qps", "0 to"),
    ("hour,qps\n0,1\n1,nan\n", "traffic line 3: qps", "0 to"),
    ("hour,qps\n0,1\n1,lots\n", "traffic line 3: qps", "0 to"),
    ("hour,qps\n0,1\n0.5,1\n", "traffic line 3: hour", "23"),
    ("hour,qps\n0,1\n1\n", "traffic line 3: row", "2 values"),
    ("hour,qps\n0,1\n0,2\n", "traffic line 3: hour", "line 2"),
    ("day,hour,qps\nfunday,0,1\n", "traffic line 2: day", "mon"),
    ("day,hour,qps\n7,0,1\n", "traffic line 2: day", "0-6"),
    ("hour,qps\n0,1\n", "traffic", "hour 1"),
    ("", "traffic", "header"),
])
def test_bad_rows_name_line_field_and_fix(text: str, field: str, hint: str) -> None:
    with pytest.raises(InputError) as e:
        read_traffic(text)
    assert e.value.field == field
    assert hint in str(e.value)


def test_all_zero_curve_is_refused() -> None:
    with pytest.raises(InputError, match="positive rate"):
        read_traffic("hour,qps\n" + "\n".join(f"{h},0" for h in range(24)))


def test_inline_rows_mix_of_day_and_none_is_refused() -> None:
    rows: list[dict[str, object]] = [{"hour": h, "qps": 1.0} for h in range(24)]
    assert traffic_from_rows(rows).peak_qps == 1.0
    rows[3] = {"day": "mon", "hour": 3, "qps": 1.0}
    with pytest.raises(InputError) as e:
        traffic_from_rows(rows)
    assert e.value.field == "traffic line 4: day"


def test_schedule_by_hand() -> None:
    # peak 20 req/s verified on 4 replicas at +20% headroom: 6 req/s per replica; 4 req/s -> ceil(4.8/6) = 1
    c = read_traffic(DAY)
    s = schedule(c, peak_replicas=4, capacity_rps=6.33, headroom=0.2, min_replicas=1, lead=0,
                 devices_per_replica=8, devices_per_unit=8)
    assert [h.replicas for h in s] == [1] * 9 + [4] * 9 + [1] * 6
    assert max(h.replicas for h in s) == 4 and s[9].devices == 32 and s[9].units == 4
    # a one-hour lead: the hour before the rise (8:00) already runs the 4 replicas; the fall waits for nothing
    led = schedule(c, peak_replicas=4, capacity_rps=6.33, headroom=0.2, min_replicas=1, lead=1,
                   devices_per_replica=8, devices_per_unit=8)
    assert [h.replicas for h in led][7:10] == [1, 4, 4] and led[18].replicas == 1
    assert all(h.need == s[i].replicas for i, h in enumerate(led))
    # a stated minimum of 2 replicas lifts the quiet hours only
    two = schedule(c, peak_replicas=4, capacity_rps=6.33, headroom=0.2, min_replicas=2, lead=0,
                   devices_per_replica=8, devices_per_unit=8)
    assert [h.replicas for h in two] == [2] * 9 + [4] * 9 + [2] * 6


def test_lead_wraps_from_the_last_hour_into_the_first() -> None:
    c = read_traffic("hour,qps\n" + "\n".join(f"{h},{20 if h == 0 else 1}" for h in range(24)))
    s = schedule(c, peak_replicas=4, capacity_rps=6.33, headroom=0.2, min_replicas=1, lead=1,
                 devices_per_replica=1, devices_per_unit=1)
    assert s[23].replicas == 4 and s[22].replicas == 1


def test_units_and_scale_up() -> None:
    assert units_for(9, devices_per_replica=1, devices_per_unit=8) == 2  # 8 tp1 replicas share an instance
    assert units_for(3, devices_per_replica=8, devices_per_unit=1) == 24  # a per-card rental: 8 cards a replica
    assert units_for(3, devices_per_replica=16, devices_per_unit=8) == 6
    # 140 GB of weights at 1 GB/s: 140 s, + 300 s instance + 60 s engine = 500 s: started one hour ahead
    up = scale_up(140e9, instance_start_s=300, read_gb_per_s=1.0, engine_start_s=60)
    assert up.weights_read_s == pytest.approx(140.0) and up.total_s == pytest.approx(500.0)
    assert lead_hours(up.total_s) == 1 and lead_hours(3600.0) == 1 and lead_hours(3601.0) == 2
    assert lead_hours(0.0) == 0


@settings(max_examples=60, deadline=None)
@given(qps=st.lists(st.floats(0.0, 500.0), min_size=24, max_size=24).filter(lambda q: max(q) > 0.01),
       peak_replicas=st.integers(1, 64), headroom=st.floats(0.0, 0.5), lead=st.integers(0, 3),
       minimum=st.integers(1, 3))
def test_schedule_never_loads_a_replica_past_the_verified_peak(qps: list[float], peak_replicas: int,
                                                               headroom: float, lead: int, minimum: int) -> None:
    c = traffic_from_rows([{"hour": h, "qps": q} for h, q in enumerate(qps)])
    verified = c.peak_qps * (1 + headroom) / peak_replicas
    s = schedule(c, peak_replicas=peak_replicas, capacity_rps=c.peak_qps / peak_replicas * 1.01, headroom=headroom,
                 min_replicas=minimum, lead=lead, devices_per_replica=2, devices_per_unit=8)
    for i, h in enumerate(s):
        assert h.replicas >= max(h.need, minimum)
        assert h.qps * (1 + headroom) / h.need <= verified * (1 + 1e-9)
        assert h.replicas == max(s[(i + k) % 24].need for k in range(lead + 1))
        assert h.units == -(-h.replicas // 4)  # four 2-device replicas to an 8-device instance
    peak_hour = max(range(24), key=lambda i: qps[i])
    assert s[peak_hour].need == max(peak_replicas, minimum)
