"""The web app and API take the CLI's rules for the engine and offer capacity (issue 37): with no engine named each
part serves with its stack's engine (MindIE on Ascend), named in `engine_default`; `capacity` (the CLI's
--capacity OFFER=N) is one field of the one request schema, checked as the CLI checks it."""

from __future__ import annotations

import html
import re
from typing import Any

from web_cases import plan_at

HUAWEI = {"model": "qwen3-8b", "vendor": "Huawei", "qps": 2, "input_len": 2000, "output_len": 200, "ttft_p99": 2,
          "tpot_p99": 0.1}


def test_api_without_an_engine_serves_ascend_with_mindie(client: Any) -> None:
    body = client.post("/api/v1/plan/infer", json=HUAWEI).json()
    assert body["engine"] == "mindie" and body["engine_default"]["engine"] == "mindie"
    assert body["engine_default"]["stack"] == "cann" and "MindIE" in body["engine_default"]["source"]
    assert body["plans"] and {p["engine"] for p in body["plans"]} == {"mindie"}
    named = client.post("/api/v1/plan/infer", json={**HUAWEI, "engine": "vllm"}).json()
    assert named["engine"] == "vllm" and "engine_default" not in named
    assert {p["engine"] for p in named["plans"]} == {"vllm"}


def test_serve_form_leaves_the_engine_to_the_stack(fresh: Any) -> None:
    page = fresh.get("/serve?lang=en").text
    select = re.search(r'<select name="engine">(.*?)</select>', page, re.S)
    assert select is not None
    first = re.search(r"<option([^>]*)>", select.group(1))
    assert first is not None and 'value=""' in first.group(1) and "selected" not in select.group(1)
    data = {"model": "qwen3-8b", "vendor": "Huawei", "qps": "2", "input_dist": "fixed:2000", "output_dist": "fixed:200",
            "ttft_p99": "2", "tpot_p99": "0.1", "engine": ""}
    where = plan_at(fresh, fresh.post("/serve", data=data, follow_redirects=False))
    text = fresh.get(where + "?lang=en").text
    assert "Engine: mindie, the default on cann parts" in text
    plan = fresh.get(where.replace("/p/", "/api/v1/plans/")).json()
    assert plan["engine_default"]["engine"] == "mindie" and plan["plans"][0]["engine"] == "mindie"


def test_capacity_caps_the_offers_as_the_cli_does(client: Any) -> None:
    """Llama 3 8B on 1e11 tokens: rented fleets reach 4,096 devices on offers whose capacity is unknown; with
    capacity {"*": 16} every rented fleet is at most 16 devices, its capacity marked as user input (the CLI's
    --capacity '*=16': the recommendation stays 8 x H100 on RunPod)."""
    req = {"model": "llama3-8b", "tokens": 1e11, "deadline": 30, "top": 3}

    def rented(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [p for p in body["plans"] if (p.get("hardware_option") or {}).get("offer")]

    free = client.post("/api/v1/plan/train", json=req).json()
    assert max(p["devices"] for p in rented(free)) > 16
    body = client.post("/api/v1/plan/train", json={**req, "capacity": {"*": 16}}).json()
    assert rented(body) and max(p["devices"] for p in rented(body)) <= 16
    rec = body["recommended"]
    assert rec["devices"] == 8 and rec["hardware_option"]["capacity_provenance"] == "user input"
    assert rec["hardware_option"]["max_devices"] == 16
    assert "--capacity '*=16'" in html.unescape(client.get(f"/p/{body['plan_id']}?lang=en").text)  # its command


def test_capacity_is_checked_naming_the_field(client: Any) -> None:
    for capacity, words in (({"no-such-offer": 8}, "capacity"), ({"*": 0}, "capacity"), ({"*": 2.5}, "capacity")):
        r = client.post("/api/v1/plan/train", json={"model": "llama3-8b", "tokens": 1e12, "capacity": capacity},
                        headers={"accept-language": "en"})
        assert r.status_code == 422, (capacity, r.text)
        assert words in r.json()["detail"]["field"], r.json()


def test_train_form_takes_capacity_pairs(fresh: Any) -> None:
    assert 'name="capacity"' in fresh.get("/train?lang=en").text
    data = {"model": "llama3-8b", "tokens": "1e11", "deadline": "30", "capacity": "*=16"}
    where = plan_at(fresh, fresh.post("/train", data=data, follow_redirects=False))
    plan = fresh.get(where.replace("/p/", "/api/v1/plans/")).json()
    offers = [p for p in plan["plans"] if (p.get("hardware_option") or {}).get("offer")]
    assert offers and max(p["devices"] for p in offers) <= 16
    bad = fresh.post("/train?lang=en", data={**data, "capacity": "*16"})
    assert bad.status_code == 422 and 'id="form-error"' in bad.text and "capacity" in bad.text
    assert 'value="*16"' in bad.text
