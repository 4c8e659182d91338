"""The validation page and API: accuracy per part and per class from the shipped cross-validation result, zh/en."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpuplan.estimate.uncertainty import accuracy_data


@pytest.mark.parametrize(("lang", "words"), [("en", ("How accurate", "held-out source error", "training speed")),
                                              ("zh", ("估算有多准确", "留出来源误差", "训练速度"))])
def test_page_shows_coverage_parts_and_classes(fresh: Any, lang: str, words: tuple[str, ...]) -> None:
    r = fresh.get(f"/validation?lang={lang}")
    assert r.status_code == 200 and all(w in r.text for w in words)
    data = accuracy_data()
    coverage = r.text.split('id="coverage"')[1].split("</table>")[0]
    assert f"{data['coverage']['train']['coverage']:.1%}" in coverage
    for kind, parts in data["parts"].items():
        table = r.text.split(f'id="parts-{kind}"')[1].split("</table>")[0]
        assert table.count("<tr>") == len(parts) + 1
        name, v = max(parts.items(), key=lambda kv: kv[1]["rows"])
        assert re.search(rf">{re.escape(name)}</a></td><td>{v['rows']}</td><td>{v['sources']}</td>"
                         rf"<td>{v['in_sample_median_ape']:.1%}</td><td>{v['cv_median_ape']:.1%}</td>", table)
    classes = r.text.split('id="classes"')[1].split("</table>")[0]
    assert classes.count("<tr>") == len(data["classes"]) + 1
    c = data["classes"]["train/validated"] if "train/validated" in data["classes"] else next(iter(
        data["classes"].values()))
    assert f"<code>{c['key']}</code></td><td>{c['n']}</td>" in classes and f"{c['q10']:.2f}-{c['q90']:.2f}" in classes


def test_nav_links_the_page(fresh: Any) -> None:
    assert 'href="/validation"' in fresh.get("/?lang=zh").text


def test_api_answers_the_figures_without_the_rows(client: Any) -> None:
    r = client.get("/api/v1/validation")
    assert r.status_code == 200
    body = r.json()
    assert {"coverage", "parts", "classes", "as_of", "method"} <= set(body) and "rows" not in body
    assert body["parts"] == accuracy_data()["parts"]


@pytest.mark.parametrize(("lang", "title"), [("en", "Accuracy per source"), ("zh", "各数据来源准确度")])
def test_page_and_api_show_accuracy_per_source(fresh: Any, lang: str, title: str) -> None:
    """Issue 14: accuracy per part and per source. Each source's held-out rows: the median error computed here
    from the entries equals what the page and the API show."""
    import numpy as np

    data = accuracy_data()
    mine = [e for e in data["entries"] if e["fold"] == "source" and e["kind"] == "serve"
            and e["source"] == "github:qwenlm/qwen2.5"]
    assert mine
    median = float(np.median([abs(1 / e["cv_ratio"] - 1) for e in mine]))
    page = fresh.get(f"/validation?lang={lang}").text
    assert title in page
    table = page.split('id="sources-serve"')[1].split("</table>")[0]
    assert re.search(rf"<code>github:qwenlm/qwen2.5</code></td><td>{len(mine)}</td><td>[^<]*h20-96gb[^<]*</td>"
                     rf"<td>[^<]*</td><td>{median:.1%}</td>", table)
    api = fresh.get("/api/v1/validation").json()["sources"]
    row = next(r for r in api["serve"] if r["source"] == "github:qwenlm/qwen2.5")
    assert row["rows"] == len(mine) and row["cv_median_ape"] == pytest.approx(median)
    assert {k for k in api} == {"train", "serve", "memory"}
