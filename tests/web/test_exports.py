"""Exports of a saved plan: the CLI's HTML and Markdown reports, CSV of the ranked plans, JSON, the CLI command."""

from __future__ import annotations

import csv
import io
import json
import shlex
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app as cli_app
from gpuplan.service import InferPlanRequest, TrainPlanRequest, cli_command
from gpuplan.service.exports import INFER_CSV, TRAIN_CSV


def _export(client: Any, pid: str, fmt: str, **params: str) -> Any:
    r = client.get(f"/api/v1/plans/{pid}/export/{fmt}", params=params)
    assert r.status_code == 200, r.text
    return r


@pytest.mark.parametrize("kind", ["train", "infer"])
def test_html_report_is_self_contained_in_both_languages(fresh: Any, kind: str, train_plan: dict[str, Any],
                                                         infer_plan: dict[str, Any]) -> None:
    pid = (train_plan if kind == "train" else infer_plan)["plan_id"]
    en = _export(fresh, pid, "html", lang="en")
    assert en.headers["content-type"].startswith("text/html")
    assert en.headers["content-disposition"] == f'attachment; filename="gpuplan-{pid}.html"'
    assert en.text.lstrip().lower().startswith("<!doctype html") and 'lang="en"' in en.text
    assert "<script src=" not in en.text.replace("<script src=\"data:", "")  # plotly inline, nothing fetched
    assert "80%" in en.text
    zh = _export(fresh, pid, "html", lang="zh")
    assert "推荐" in zh.text and zh.text != en.text


def test_markdown_report_names_the_recommendation(fresh: Any, train_plan: dict[str, Any],
                                                  infer_plan: dict[str, Any]) -> None:
    md = _export(fresh, train_plan["plan_id"], "md", lang="en")
    assert md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("#") and train_plan["recommended"]["accelerator"] in md.text
    assert "attachment" in md.headers["content-disposition"]
    md = _export(fresh, infer_plan["plan_id"], "md", lang="zh")
    assert infer_plan["recommended"]["accelerator"] in md.text and "推荐" in md.text


def test_csv_has_every_ranked_plan(client: Any, train_plan: dict[str, Any], infer_plan: dict[str, Any]) -> None:
    for plan, head in ((train_plan, TRAIN_CSV), (infer_plan, INFER_CSV)):
        r = _export(client, plan["plan_id"], "csv")
        assert r.headers["content-type"].startswith("text/csv") and ".csv" in r.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(r.text)))
        assert tuple(rows[0]) == head and len(rows) == len(plan["plans"])
        assert [row["accelerator"] for row in rows] == [p["accelerator"] for p in plan["plans"]]
    first, p = list(csv.DictReader(io.StringIO(_export(client, train_plan["plan_id"], "csv").text)))[0], \
        train_plan["plans"][0]
    assert float(first["cost_usd"]) == pytest.approx(p["cost_usd"])
    lo, hi = p["band"]["time_to_train_days"]
    assert float(first["days_p10"]) == pytest.approx(lo) and float(first["days_p90"]) == pytest.approx(hi)
    assert first["confidence"] == p["confidence"]["level"]


def test_json_export_is_the_stored_plan(client: Any, infer_plan: dict[str, Any]) -> None:
    r = _export(client, infer_plan["plan_id"], "json")
    assert "attachment" in r.headers["content-disposition"]
    assert r.json() == client.get(f"/api/v1/plans/{infer_plan['plan_id']}").json()


UPLOADED = ("hf_config", "calibration", "user_catalog")  # content, no option (test_uploads, test_quotes)


def _parsed(command: str) -> dict[str, Any]:
    """The options click reads from a `gpuplan plan ...` command line."""
    args = shlex.split(command)
    assert args[:2] == ["gpuplan", "plan"]
    group = typer.main.get_command(cli_app)
    plan = group.commands["plan"]  # type: ignore[attr-defined]
    cmd = plan.commands[args[2]]
    ctx = cmd.make_context(args[2], args[3:])
    return dict(ctx.params)


@pytest.mark.parametrize("req", [
    TrainPlanRequest(model="llama3-70b", tokens=2.5e11, method="lora", deadline=7.5, budget=1e5, market="cn",
                     domestic_only=True, kernels="fused", trust="medium", top=3, capacity={"*": 64}),
    InferPlanRequest(model="qwen2.5-7b", qps=2.5, input_dist="uniform:512-2048", output_len=300, ttft_p99=1.5,
                     tpot_p99=0.04, engine="sglang", weights=["bf16", "fp8"], kv_dtype="fp8", vendor="nvidia"),
])
def test_cli_command_reads_back_as_the_same_request(req: Any) -> None:
    params = _parsed(cli_command(req))
    names = {"engine": "engine_id"}
    for field, value in req.model_dump().items():
        if field == "kind" or field in UPLOADED:
            continue
        got = params[names.get(field, field)]
        if field == "capacity":  # --capacity OFFER=N, repeated
            got = {k: int(v) for k, _, v in (pair.partition("=") for pair in got)} or None
        assert (list(got) if isinstance(got, tuple) else got) == value, field


def test_cli_command_reproduces_the_stored_plan(client: Any, train_plan: dict[str, Any]) -> None:
    r = _export(client, train_plan["plan_id"], "cli")
    assert r.headers["content-type"].startswith("text/plain") and r.text.count("\n") == 1
    command = r.text.strip()
    assert command == "gpuplan plan train --model llama3-8b --tokens 1000000000000 --deadline 30 --top 3"
    res = CliRunner().invoke(cli_app, [*shlex.split(command)[1:], "--json"])
    exited(res, 0)
    stored = client.get(f"/api/v1/plans/{train_plan['plan_id']}").json()
    assert json.loads(res.stdout) == {k: v for k, v in stored.items() if k in json.loads(res.stdout)}
    assert set(json.loads(res.stdout)) == set(stored) - {"plan_id", "share_url", "kind", "request", "title",
                                                         "gpuplan_version", "catalog_version", "created_at"}


def test_plan_page_links_every_export_and_shows_the_command(fresh: Any, train_plan: dict[str, Any]) -> None:
    pid = train_plan["plan_id"]
    page = fresh.get(f"/p/{pid}?lang=zh").text
    for fmt in ("html", "md"):
        assert f'href="/api/v1/plans/{pid}/export/{fmt}?lang=zh"' in page
    assert f'href="/api/v1/plans/{pid}/export/csv"' in page and f"/api/v1/plans/{pid}?download=1" in page
    assert "HTML 报告" in page and "复现此方案的命令" in page and "gpuplan plan train --model llama3-8b" in page


def test_bad_format_and_unknown_plan(fresh: Any, train_plan: dict[str, Any]) -> None:
    client = fresh
    r = client.get(f"/api/v1/plans/{train_plan['plan_id']}/export/pdf")
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail["field"] == "fmt" and "'html'" in detail["allowed"] and detail["message"].startswith("error:")
    assert client.get("/api/v1/plans/0000000000000000/export/html").status_code == 404
    assert client.get("/api/v1/plans/..%2F..%2Fetc/export/html").status_code == 404


def test_plan_stored_before_reports_gets_its_report_while_versions_match(client: Any, infer_plan: dict[str, Any]
                                                                          ) -> None:
    store = client.app.state.store
    saved = store.get(infer_plan["plan_id"])
    for pid, version in (("00000000000000aa", saved.gpuplan_version), ("00000000000000bb", "0.0.0-old")):
        store.put(pid, saved.kind, saved.request, saved.result, gpuplan_version=version,
                  catalog_version=saved.catalog_version, title=saved.title)  # no report, as before 0002
        assert store.report(pid) is None
    r = client.get("/api/v1/plans/00000000000000aa/export/md", params={"lang": "en"})
    assert r.status_code == 200 and store.report("00000000000000aa") == store.report(infer_plan["plan_id"])
    r = client.get("/api/v1/plans/00000000000000bb/export/html")
    assert r.status_code == 409 and "recompute" in r.json()["detail"]
    assert client.get("/api/v1/plans/00000000000000bb/export/csv").status_code == 200  # from the stored result
