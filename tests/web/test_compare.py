"""Compare: 2-4 accelerators for one job (API and page, band and confidence per option); two saved plans."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from web_cases import TRAIN

ACCS = ["h100-sxm5-80gb", "ascend-910b"]
SERVE = [("model", "llama3.1-8b"), ("job", "serve"), ("qps", "5"), ("ttft_p99", "2"), ("tpot_p99", "0.05"),
         ("accelerators", "h100-sxm5-80gb"), ("accelerators", "h20-96gb"), ("tokens", "1e12")]


def test_api_compare_train_gives_each_option_its_band_and_confidence(client: Any) -> None:
    r = client.post("/api/v1/compare", json={"model": "llama3-8b", "tokens": 1e12, "deadline": 30,
                                             "accelerators": ["h100", "ascend-910b"]})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["kind"] == "compare" and [o["accelerator"] for o in doc["options"]] == ACCS
    for o in doc["options"]:
        assert o["plan"] is not None and o["band"]["time_to_train_s"] and o["confidence"]["level"]


def test_api_compare_train_plans_the_named_framework_and_recipe(client: Any) -> None:
    r = client.post("/api/v1/compare", json={"model": "llama2-7b", "tokens": 1e10, "seq_len": 2048,
                                             "framework": "internevo", "recipe": "zero_group=16",
                                             "accelerators": ["a100-sxm4-80gb", "h100"]})
    assert r.status_code == 200, r.text
    job = r.json()["job"]
    assert job["framework"] == "internevo" and job["zero_group"] == 16 and job["sequence_parallel"] is False


def test_api_compare_infer(client: Any) -> None:
    r = client.post("/api/v1/compare", json={"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05,
                                             "accelerators": ["h100-sxm5-80gb", "h20-96gb"]})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["kind"] == "compare_infer" and all(o["band"] and o["confidence"] for o in doc["options"])


@pytest.mark.parametrize(("body", "field", "allowed"), [
    ({"accelerators": ["h100"]}, "accelerators", "at least 2"),
    ({"accelerators": ["h100", "b200", "h20", "mi300x", "l40s"]}, "accelerators", "at most 4"),
    ({"accelerators": ["h100", "h100-sxm5-80gb"]}, "accelerators", "2-4 different accelerators"),
    ({"accelerators": ["h100", "h1000"]}, "accelerator", ""),
    ({"accelerators": ["h100", "b200"], "qps": 3}, "tokens", "left out with --qps"),
    ({"accelerators": ["h100", "b200"], "tokens": None}, "tokens", "a positive number"),
    ({"accelerators": ["h100", "b200"], "tokens": -1}, "tokens", ""),
    ({"accelerators": ["h100", "b200"], "colour": "red"}, "colour", ""),
    ({"accelerators": ["h100", "b200"], "recipe": "zero_grup=8"}, "recipe", "zero_group"),
])
def test_api_compare_bad_input_is_422_as_the_cli_words_it(fresh: Any, body: dict[str, Any], field: str,
                                                          allowed: str) -> None:
    r = fresh.post("/api/v1/compare", json={"model": "llama3-8b", "tokens": 1e12, **body})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail["field"] == field and allowed in detail["allowed"] and detail["message"].startswith("error: ")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_page_train(fresh: Any, lang: str) -> None:
    r = fresh.get("/compare", params=[("lang", lang), ("model", "llama3-8b"), ("job", "train"), ("tokens", "1e12"),
                                      ("deadline", "30"), ("qps", "5"), *[("accelerators", a) for a in ACCS]])
    assert r.status_code == 200, r.text
    table = r.text.split('id="options"')[1].split("</table>")[0]
    assert table.count("<tr>") == 3 and all(a in table for a in ACCS)
    assert re.search(r"\d+(\.\d+)? (days|天) \(\d+-\d+\)", table)  # time with its 80% band
    assert ("confidence" if lang == "en" else "可信度") in table
    chart = json.loads(r.text.split('id="chart-data">')[1].split("</script>")[0])
    assert chart["data"][0]["text"] == ["h100-sxm5-80gb"]  # the own cluster has no price: not on the cost chart
    assert ("How sure" if lang == "en" else "可信程度") in r.text.split('id="option-notes"')[1]


def test_compare_page_serving_ignores_the_training_fields(fresh: Any) -> None:
    r = fresh.get("/compare", params=[("lang", "zh"), *SERVE])
    assert r.status_code == 200, r.text
    table = r.text.split('id="options"')[1].split("</table>")[0]
    assert "h20-96gb" in table and "可信度" in table and re.search(r"\d\.\d+ \(\d\.\d+-\d\.\d+\)", table)
    chart = json.loads(r.text.split('id="chart-data">')[1].split("</script>")[0])
    assert len(chart["data"][0]["x"]) == 2 and chart["data"][0]["error_y"]["array"][0] > 0


def test_compare_page_form_and_errors_in_both_languages(fresh: Any) -> None:
    page = fresh.get("/compare?lang=zh")
    assert page.status_code == 200 and "同一任务下对比加速卡" in page.text and 'id="options"' not in page.text
    assert '<option value="ascend-910b"' in page.text
    r = fresh.get("/compare", params={"lang": "en", "model": "llama3-8b", "accelerators": "h100", "tokens": "1e12"})
    assert r.status_code == 422 and 'id="form-error"' in r.text and "accelerators" in r.text
    r = fresh.get("/compare", params={"lang": "zh", "model": "llama3-8b", "accelerators": "h100,b200", "tokens": "0"})
    assert r.status_code == 422 and "错误" in r.text and "tokens" in r.text


def test_two_saved_plans_side_by_side_with_a_diff_of_inputs(fresh: Any, train_plan: dict[str, Any]) -> None:
    other = fresh.post("/api/v1/plan/train", json={**TRAIN, "deadline": 20, "market": "cn"}).json()
    r = fresh.get("/compare/plans", params=[("lang", "en"), ("plan", train_plan["plan_id"]),
                                            ("plan", other["plan_id"])])
    assert r.status_code == 200, r.text
    inputs = r.text.split('id="inputs"')[1]
    differs = re.findall(r'<tr class="differs"><td><code>(\w+)</code>', inputs)
    assert differs == ["deadline", "market"]
    assert "2 of " in r.text.split('id="diff-count"')[1] and "(" in r.text.split('id="pair"')[1]
    zh = fresh.get("/compare/plans", params=[("lang", "zh"), ("plan", train_plan["plan_id"]),
                                             ("plan", other["plan_id"])])
    assert "项输入中有 2 项不同" in zh.text and "推荐方案" in zh.text


def test_train_and_serving_plans_compare_too(fresh: Any, train_plan: dict[str, Any],
                                             infer_plan: dict[str, Any]) -> None:
    r = fresh.get("/compare/plans", params=[("plan", train_plan["plan_id"]), ("plan", infer_plan["plan_id"])])
    assert r.status_code == 200
    differs = re.findall(r'<tr class="differs"><td><code>(\w+)</code>', r.text)
    assert differs[:2] == ["kind", "model"] and "qps" in differs and "tokens" in differs


@pytest.mark.parametrize("ids", [[], ["0123456789abcdef"], ["0123456789abcdef"] * 2, ["a", "b", "c"]])
def test_compare_plans_needs_two_different_ids(fresh: Any, ids: list[str]) -> None:
    r = fresh.get("/compare/plans", params=[("lang", "en"), *[("plan", i) for i in ids]])
    assert r.status_code == 422 and "two different saved plan ids" in r.text


def test_compare_plans_unknown_is_404(fresh: Any, train_plan: dict[str, Any]) -> None:
    r = fresh.get("/compare/plans", params=[("plan", train_plan["plan_id"]), ("plan", "../../etc/passwd")])
    assert r.status_code == 404


def test_history_ticks_plans_for_compare(fresh: Any, train_plan: dict[str, Any]) -> None:
    page = fresh.get("/history?lang=en").text
    assert 'action="/compare/plans"' in page and f'name="plan" value="{train_plan["plan_id"]}"' in page
    assert 'href="/compare"' in page
