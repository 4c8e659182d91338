"""A row says what it ran (`settings`); validation never guesses a recipe from a source's name or words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuplan.errors import InputError
from gpuplan.validate.row_settings import RowSettings, _overlay, parse_settings, resolve_row

VALIDATE = Path(__file__).resolve().parents[2] / "src" / "gpuplan" / "validate"


def test_settings_parse_with_lists_and_booleans() -> None:
    st = parse_settings("framework=torchtune; loss=chunked; trainable_extra=embed,head; packing=true; compile=false")
    assert st == RowSettings(framework="torchtune", loss="chunked", trainable_extra=("embed", "head"), packing=True,
                             compile=False)
    assert parse_settings("") == RowSettings()


@pytest.mark.parametrize(("text", "field"), [
    ("frobnicate=3", "settings"), ("loss=approximate", "settings.loss"), ("framework", "settings"),
    ("num_prompts=0", "settings.num_prompts"), ("packing=maybe", "settings.packing"),
])
def test_an_unknown_key_or_value_is_an_error_naming_it(text: str, field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_settings(text, row_id="R1")
    assert err.value.field == field
    if field == "settings" and "=" in text:
        assert "frobnicate" in str(err.value) and "framework" in str(err.value)  # names the key and what is allowed


def test_the_case_file_wins_and_a_contradiction_is_an_error() -> None:
    rid = next(r for r, e in _overlay().items() if "settings" in e and "framework=nemo" in e["settings"])
    row, st = resolve_row({"id": rid, "engine": "trtllm"})
    assert st.framework == "nemo"
    with pytest.raises(InputError, match="disagree"):
        resolve_row({"id": rid, "settings": "framework=vllm"})
    col_rid = next(r for r, e in _overlay().items() if (e.get("columns") or {}).get("kv_precision"))
    with pytest.raises(InputError, match="disagree"):
        resolve_row({"id": col_rid, "kv_precision": "bf16"})
    filled, _ = resolve_row({"id": col_rid})
    assert filled["kv_precision"] == "fp8"


def test_every_overlay_entry_quotes_where_its_source_states_it() -> None:
    for rid, entry in _overlay().items():
        assert entry["stated"] and all(len(s) > 20 for s in entry["stated"]), rid


def test_no_rule_in_validate_reads_a_rows_source_quote_or_notes_to_choose_a_setting() -> None:
    """Issue 13: a row states its recipe; the estimator never guesses it from a URL or a sentence.
    (validate/sources.py groups rows by publication for cross-validation; it chooses no setting.)"""
    pattern = re.compile(r"""(row|r)(\.get\(|\[)\s*["'](source|quote|notes)["']""")
    offenders = []
    for path in sorted(VALIDATE.glob("*.py")):
        if path.name == "sources.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.name}:{i}: {line.strip()}")
    assert offenders == []
