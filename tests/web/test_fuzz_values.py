"""Hostile values in every JSON body field (issue 38): NaN, infinities, 1e999, integers past 64 bits, negative
giants, NUL characters and long strings, drawn by hypothesis for each field the OpenAPI schema lists. Every answer
is a 4xx naming a field (the one changed, or `body` when the JSON itself cannot be read), never a 5xx; nothing
reaches a search (the checks run before one starts)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_cases import INFER, TRAIN

BASES = {"/api/v1/plan/train": TRAIN, "/api/v1/plan/infer": INFER, "/api/v1/jobs/plan/train": TRAIN,
         "/api/v1/jobs/plan/infer": INFER, "/api/v1/memory/train": {"model": "llama3-8b"},
         "/api/v1/compare": {"model": "llama3-8b", "accelerators": ["h100-sxm5-80gb", "h20-96gb"], "tokens": 1e12}}
# raw JSON texts: Python's json reads NaN, Infinity and 1e999 (as inf); the others are numbers past any range
HOSTILE_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "18446744073709551616", "1e300", "-1e300",
                   "-99999999999999999999999999", "9" * 400]
HOSTILE_TEXT = ["\u0000", "llama3-8b\u0000", "x" * 5000, "../../etc/passwd", "hist:/etc/hostname", "%s%n", "😀" * 50]


def _fields(client: Any, path: str) -> list[tuple[str, str]]:
    spec = client.get("/openapi.json").json()
    op = spec["paths"][path]["post"]
    ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    props = spec["components"]["schemas"][ref]["properties"]
    out = []
    for name, prop in props.items():
        types = {prop.get("type")} | {a.get("type") for a in prop.get("anyOf", [])}
        if types & {"number", "integer"}:
            out.append((name, "number"))
        elif "string" in types:
            out.append((name, "string"))
    return out


@pytest.mark.parametrize("path", sorted(BASES))
def test_hostile_values_answer_4xx_naming_the_field(fresh: Any, path: str) -> None:
    fields = _fields(fresh, path)
    assert fields, path
    base = json.dumps(BASES[path])

    @given(field=st.sampled_from(fields), number=st.sampled_from(HOSTILE_NUMBERS),
           text=st.sampled_from(HOSTILE_TEXT))
    @settings(max_examples=40, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def check(field: tuple[str, str], number: str, text: str) -> None:
        name, kind = field
        value = number if kind == "number" else json.dumps(text)
        body = base[:-1] + f', "{name}": {value}}}' if name not in BASES[path] else \
            base.replace(f'"{name}": {json.dumps(BASES[path][name])}', f'"{name}": {value}')
        r = fresh.post(path, content=body.encode(), headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500 and r.status_code != 429, (path, name, value[:40], r.status_code, r.text)
        detail = r.json()["detail"]
        assert detail["field"].split(".")[0] in (name, name.replace("_", "-"), "body", "accelerators"), detail
        assert len(r.content) < 8000  # a long value is echoed short, once

    check()
