"""Traffic over a day on the web: the API takes the rows inline (422 on a bad one), the serving form takes the CSV
as an upload (never a path), and the plan page shows the schedule and the purchase mix."""

from __future__ import annotations

import io
from typing import Any

from test_pages import plan_location
from web_cases import INFER

ROWS = [{"hour": h, "qps": 30.0 if 9 <= h < 18 else 2.0} for h in range(24)]
BASE = {k: v for k, v in INFER.items() if k != "qps"}


def test_api_traffic_rows_give_schedule_and_mix(fresh: Any) -> None:
    r = fresh.post("/api/v1/plan/infer", json={**BASE, "traffic": ROWS, "market": "global"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["load"]["qps"] == 30.0  # planned at the peak hour
    sched, mix = out["schedule"], out["purchase_mix"]
    assert len(sched) == 24 and [s["hour"] for s in sched] == list(range(24))
    rec = out["recommended"]
    assert max(s["replicas"] for s in sched) == rec["replicas"]  # the busy hours run the peak fleet
    assert rec["replicas"] > 1 and min(s["replicas"] for s in sched) < rec["replicas"]  # quiet hours run fewer
    chosen = mix["chosen"]
    assert chosen["monthly_usd"] <= mix["all_on_demand"]["monthly_usd"] + 1e-6
    assert chosen["monthly_usd"] <= mix["always_on_peak_usd"] + 1e-6
    for rate in mix["rates"].values():
        assert rate["source"] and rate["as_of"] and rate["confidence"]


def test_api_refuses_bad_traffic_with_422(fresh: Any) -> None:
    bad_hour = [*ROWS[:-1], {"hour": 24, "qps": 1.0}]
    r = fresh.post("/api/v1/plan/infer", json={**BASE, "traffic": bad_hour})
    assert r.status_code == 422 and "hour" in r.text
    r = fresh.post("/api/v1/plan/infer", json={**BASE, "traffic": [*ROWS[:-1], {"hour": 23, "qps": "NaN"}]})
    assert r.status_code == 422 and "qps" in r.text
    r = fresh.post("/api/v1/plan/infer", json={**BASE, "traffic": ROWS[:-1]})  # no 23:00 row
    assert r.status_code == 422 and "hour 23" in r.text
    r = fresh.post("/api/v1/plan/infer", json={**BASE, "traffic": [*ROWS[:-1], ROWS[0]]})  # 0:00 twice
    assert r.status_code == 422 and "traffic line 24" in r.text
    r = fresh.post("/api/v1/plan/infer", json={**INFER, "traffic": ROWS})  # qps and traffic both
    assert r.status_code == 422 and "qps" in r.text


def test_serving_form_uploads_traffic_and_shows_schedule(fresh: Any) -> None:
    csv_text = "hour,qps\n" + "".join(f"{r['hour']},{r['qps']}\n" for r in ROWS)
    form = {"model": INFER["model"], "qps": "5", "ttft_p99": "2", "tpot_p99": "0.05", "input_dist": "",
            "output_dist": "", "engine": "vllm", "market": "global"}
    r = fresh.post("/serve", data=form, files={"traffic_file": ("day.csv", io.BytesIO(csv_text.encode()),
                                                                "text/csv")}, follow_redirects=False)
    text = fresh.get(plan_location(fresh, r) + "?lang=en").text
    assert 'id="traffic"' in text and 'id="traffic-chart-data"' in text
    assert "Purchase mix" in text and "Scale-up time" in text and "08:00-18:00" in text
    zh = fresh.get(plan_location(fresh, r) + "?lang=zh").text
    assert "采购组合" in zh
    bad = fresh.post("/serve", data=form, files={"traffic_file": ("x.csv", io.BytesIO(b"hour,qps\n0,1\n25,1\n"),
                                                                  "text/csv")})
    assert bad.status_code == 422 and "traffic line 3: hour" in bad.text
