"""Every /api/v1 endpoint and its error paths: the CLI's JSON, saved plans, 422 worded as the CLI words it."""

from __future__ import annotations

from typing import Any

import pytest
from web_cases import INFER, TRAIN


def test_plan_train_is_the_cli_document_plus_where_it_is_stored(client: Any, train_plan: dict[str, Any]) -> None:
    for key in ("candidates_evaluated", "plans", "pareto", "recommended", "findings", "tco", "rejected"):
        assert key in train_plan
    assert train_plan["share_url"] == f"/p/{train_plan['plan_id']}"
    assert all("band" in p and "confidence" in p for p in train_plan["plans"])
    again = client.post("/api/v1/plan/train", json=TRAIN)
    assert again.status_code == 200 and again.headers["location"] == train_plan["share_url"]
    assert again.json()["plan_id"] == train_plan["plan_id"]  # same inputs, same versions: the stored plan


def test_a_default_spelled_out_is_the_same_plan(client: Any, train_plan: dict[str, Any]) -> None:
    r = client.post("/api/v1/plan/train", json={**TRAIN, "seq_len": 4096, "method": "full"})
    assert r.json()["plan_id"] == train_plan["plan_id"]


def test_plan_infer(infer_plan: dict[str, Any]) -> None:
    assert infer_plan["plans"] and infer_plan["slo"] == {"ttft_p99_s": 2, "tpot_p99_s": 0.05}
    assert "band" in infer_plan["plans"][0] and "confidence" in infer_plan["plans"][0]


def test_memory_train(client: Any) -> None:
    r = client.post("/api/v1/memory/train", json={"model": "llama3-8b", "tp": 2, "accelerator": "h100-sxm5-80gb"})
    assert r.status_code == 200
    body = r.json()
    assert body["total_bytes"] > 0 and isinstance(body["total_bytes"], int) and "fits" in body


def test_memory_train_takes_the_framework_the_cli_takes(client: Any) -> None:
    """`framework` is the CLI's `memory train --framework`: Megatron-LM's fp32 main gradients (Megatron-LM docs,
    dist_optimizer.md) double the gradient bytes of a 16-bit run, as the CLI's estimate does. Before, the API had
    no framework at all, and its description pointed at a recipe key that the recipe refuses."""
    body = {"model": "llama3-8b", "tp": 2, "accelerator": "h100-sxm5-80gb"}
    plain = client.post("/api/v1/memory/train", json=body).json()
    megatron = client.post("/api/v1/memory/train", json={**body, "framework": "megatron"}).json()
    assert megatron["gradients_bytes"] == 2 * plain["gradients_bytes"]
    assert megatron["assumptions"]["notes_zh"] and len(megatron["assumptions"]["notes"]) == len(
        megatron["assumptions"]["notes_zh"])
    bad = client.post("/api/v1/memory/train", json={**body, "framework": "megatron-lm"})
    assert bad.status_code == 422 and "framework" in bad.text


def test_memory_train_takes_the_recipe_the_cli_takes(client: Any) -> None:
    """The recipe facts are one schema: `recipe` of the API (and of the memory and training forms) is the CLI's
    --recipe syntax, and `loss=chunked` gives the bytes `memory train --loss chunked` gives."""
    import json

    from typer.testing import CliRunner

    from gpuplan.cli.main import app

    base = {"model": "llama3-8b", "seq_len": 8192, "micro_batch": 4}
    full = client.post("/api/v1/memory/train", json=base).json()
    chunked = client.post("/api/v1/memory/train", json={**base, "recipe": "loss=chunked"}).json()
    cli = json.loads(CliRunner().invoke(app, ["memory", "train", "-m", "llama3-8b", "--seq-len", "8192",
                                              "--micro-batch", "4", "--loss", "chunked", "--json"]).stdout)
    assert chunked["total_bytes"] == cli["total_bytes"] < full["total_bytes"]
    bad = client.post("/api/v1/memory/train", json={**base, "recipe": "los=chunked"},
                      headers={"accept-language": "en"})
    assert bad.status_code == 422 and bad.json()["detail"]["field"] == "recipe" and "loss" in bad.json()["detail"][
        "allowed"]
    # an unknown key names the training recipe keys, not the serving facts of the case files (engine_version, ...)
    assert "engine_version" not in bad.json()["detail"]["allowed"]
    assert "zero_group" in bad.json()["detail"]["allowed"]
    assert 'name="recipe"' in client.get("/train").text and 'name="recipe"' in client.get("/memory").text


def test_memory_train_recipe_takes_recompute_modules_as_the_cli_flag_does(client: Any) -> None:
    """`recipe: recompute_modules=...` of the API is `memory train --recompute-modules` of the CLI (one schema); an
    unknown module is a 422 naming the allowed ones."""
    import json

    from typer.testing import CliRunner

    from gpuplan.cli.main import app

    base = {"model": "deepseek-v3", "pp": 4, "dp": 64, "ep": 64, "zero": 1, "precision": "fp8", "seq_len": 4096}
    plain = client.post("/api/v1/memory/train", json=base).json()
    dropped = client.post("/api/v1/memory/train", json={**base, "recipe": "recompute_modules=mla_up_proj,moe_act"})
    assert dropped.status_code == 200, dropped.text
    cli = json.loads(CliRunner().invoke(app, ["memory", "train", "-m", "deepseek-v3", "--pp", "4", "--dp", "64",
                                              "--ep", "64", "--zero", "1", "--precision", "fp8", "--seq-len", "4096",
                                              "--recompute-modules", "mla_up_proj,moe_act", "--json"]).stdout)
    assert dropped.json()["total_bytes"] == cli["total_bytes"] < plain["total_bytes"]
    bad = client.post("/api/v1/memory/train", json={**base, "recipe": "recompute_modules=core_attn"},
                      headers={"accept-language": "en"})
    assert bad.status_code == 422 and "mla_up_proj" in json.dumps(bad.json())


def test_get_plan_is_the_json_export(client: Any, train_plan: dict[str, Any]) -> None:
    r = client.get(f"/api/v1/plans/{train_plan['plan_id']}?download=1")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    body = r.json()
    assert body["request"]["model"] == "llama3-8b" and body["kind"] == "train"
    assert body["plans"] == train_plan["plans"] and body["gpuplan_version"] and body["catalog_version"]


@pytest.mark.parametrize("pid", ["0000000000000000", "nothex", "..%2F..%2Fetc%2Fpasswd", "A" * 16])
def test_unknown_or_malformed_plan_ids_are_404(client: Any, pid: str) -> None:
    r = client.get(f"/api/v1/plans/{pid}")
    assert r.status_code == 404 and "Traceback" not in r.text


def test_catalog_list_show_and_models(client: Any) -> None:
    r = client.get("/api/v1/catalog/accelerators", params={"market": "cn"})
    assert r.status_code == 200 and r.json()["count"] == len(r.json()["items"]) > 0
    item = r.json()["items"][0]
    assert item["source"] and item["as_of"]
    r = client.get("/api/v1/catalog/accelerators/h100-sxm5-80gb")
    assert r.status_code == 200 and all("source" in v for v in r.json()["values"])
    assert any(m["id"] == "llama3-8b" for m in client.get("/api/v1/models").json()["models"])


@pytest.mark.parametrize(("url", "field"), [
    ("/api/v1/catalog/gpus", "kind"),
    ("/api/v1/catalog/accelerators/h1OO", "id"),
    ("/api/v1/catalog/servers/h100-sxm5-80gb", "id"),
    ("/api/v1/catalog/accelerators?min_memory_gib=-1", "min-memory-gib"),
])
def test_catalog_errors(fresh: Any, url: str, field: str) -> None:
    r = fresh.get(url)
    assert r.status_code == 422 and r.json()["detail"]["field"] == field


@pytest.mark.parametrize(("path", "body", "field", "allowed", "hint"), [
    ("/api/v1/plan/train", {"model": "lama3-8b", "tokens": 1e12}, "model", "llama3-8b", "Did you mean llama3-8b"),
    ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": -1}, "tokens", "> 0", "--tokens"),
    ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": 1e12, "method": "bogus"}, "method", "lora",
     "one of the allowed"),
    ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": 1e12, "market": "eu"}, "market", "cn",
     "one of the allowed"),
    ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": 1e12, "network": "eth-1g"}, "network", "one of", ""),
    ("/api/v1/plan/train", {"model": "llama3-8b"}, "tokens", "required", 'add "tokens"'),
    ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": 1e12, "catalog": "/tmp"}, "catalog", "Extra",
     'remove "catalog"'),
    ("/api/v1/plan/infer", {**INFER, "qps": 0}, "qps", "> 0", ""),
    ("/api/v1/plan/infer", {**INFER, "input_len": 512, "input_dist": "uniform:1-2"}, "input-dist", "left out", ""),
    ("/api/v1/plan/infer", {**INFER, "engine": "vlm"}, "engine", "vllm", ""),
    ("/api/v1/memory/train", {"model": "llama3-8b", "tp": 0}, "tp", "whole number", ""),
    ("/api/v1/memory/train", {"model": "llama3-8b", "zero": 5}, "zero", "3", ""),
    ("/api/v1/memory/train", {"model": "/etc/passwd"}, "model", "one of", ""),
    ("/api/v1/plan/train", {"model": "llama3-8b", "tokens": 1e12, "recipe": "los=chunked"}, "recipe", "loss", ""),
])
def test_bad_input_is_422_as_the_cli_words_it(fresh: Any, path: str, body: dict[str, Any], field: str,
                                              allowed: str, hint: str) -> None:
    r = fresh.post(path, json=body, headers={"accept-language": "en"})
    assert r.status_code == 422, r.text
    d = r.json()["detail"]
    assert d["field"] == field and allowed in d["allowed"] and hint in d["hint"]
    assert d["message"].startswith("error:") and field in d["message"]
    assert d["hint"], "every 4xx says how to fix the input"


def test_errors_follow_the_language(fresh: Any) -> None:
    r = fresh.post("/api/v1/plan/train?lang=zh", json={"model": "llama3-8b", "tokens": -1})
    assert r.status_code == 422 and r.json()["detail"]["message"].startswith("错误")


def test_malformed_json_is_422(fresh: Any) -> None:
    r = fresh.post("/api/v1/memory/train", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and "Traceback" not in r.text


def test_openapi_describes_the_api(client: Any) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/api/v1/plan/train", "/api/v1/plan/infer", "/api/v1/memory/train", "/api/v1/plans/{plan_id}",
                 "/api/v1/catalog/{kind}", "/api/v1/catalog/{kind}/{record_id}", "/api/v1/models", "/healthz"):
        assert path in spec["paths"], path
    assert "TrainPlanRequest" in spec["components"]["schemas"]
    assert "422" in spec["paths"]["/api/v1/plan/train"]["post"]["responses"]
    assert not any(p.startswith("/p/") for p in spec["paths"])  # pages stay out of the API schema


def test_healthz(client: Any) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["slots"] >= 1
