"""Broken catalog files: every problem reported with file, line and field; nothing loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuplan.hardware import CatalogError, CatalogIssue, check_dir, load_catalog
from gpuplan.hardware.parse import parse_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "catalog"
BROKEN = FIXTURES / "broken"


def _issues() -> dict[str, list[CatalogIssue]]:
    issues, cat = check_dir(BROKEN)
    assert cat is None
    by_file: dict[str, list[CatalogIssue]] = {}
    for i in issues:
        by_file.setdefault(Path(i.path).name, []).append(i)
    return by_file


def test_every_broken_file_is_reported() -> None:
    by_file = _issues()
    assert set(by_file) == {p.name for p in BROKEN.glob("*.yaml")}


def test_unknown_key_names_line_field_and_suggests() -> None:
    (issue,) = _issues()["a_unknown_key.yaml"]
    assert (issue.line, issue.record, issue.field) == (5, "bad-unknown-key", "hbm_gb")
    assert "unknown key" in issue.message and "hbm_gib" in issue.message


def test_wrong_unit_string_and_magnitude() -> None:
    issues = _issues()["b_wrong_unit.yaml"]
    by_record = {i.record: i for i in issues}
    s = by_record["bad-unit-string"]
    assert (s.line, s.field) == (6, "hbm_bandwidth_gbps")
    assert "plain number" in s.message and "GB/s" in s.message
    m = by_record["bad-unit-magnitude"]
    assert (m.line, m.field) == (18, "hbm_bandwidth_gbps")
    assert "4800" in m.message


def test_missing_source() -> None:
    (issue,) = _issues()["c_missing_source.yaml"]
    assert (issue.field, issue.record) == ("source", "bad-no-source")
    assert "missing" in issue.message


def test_duplicate_id_points_at_both() -> None:
    (issue,) = _issues()["d_duplicate_id.yaml"]
    assert issue.line == 11 and "duplicate id" in issue.message and ":2" in issue.message


def test_bad_yaml_has_a_line() -> None:
    (issue,) = _issues()["e_bad_yaml.yaml"]
    assert issue.line == 4 and "bad YAML" in issue.message


def test_zero_price_and_dangling_reference() -> None:
    issues = _issues()["f_valid_and_dangling.yaml"]
    msgs = {i.record: i for i in issues}
    assert "never 0" in msgs["dangling-instance"].message
    ref = msgs["dangling-server-ref"]
    assert ref.field == "server" and "no-such-server" in ref.message and ref.line == 31


def test_nothing_partial_is_loaded() -> None:
    with pytest.raises(CatalogError) as err:
        load_catalog([BROKEN], use_user_dir=False)
    assert len(err.value.issues) == 11
    assert "11 problem(s)" in str(err.value) and "validate" in str(err.value)


def test_duplicate_yaml_key_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("networks:\n  - id: x\n    name: a\n    name: b\n", encoding="utf-8")
    issues = parse_file(f).issues
    assert any(i.line == 4 and "appears twice" in i.message for i in issues)


def test_alias_collision_with_builtin(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "good" / "my-cluster.yaml", tmp_path / "a.yaml")
    text = (tmp_path / "a.yaml").read_text(encoding="utf-8").replace("[ACME X1]", "[H100]")
    (tmp_path / "a.yaml").write_text(text, encoding="utf-8")
    issues, cat = check_dir(tmp_path)
    assert cat is None
    assert any(i.field == "aliases" and "h100-sxm5-80gb" in i.message for i in issues)


def test_unknown_section_and_record_kind_clash(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "accelerator:\n  - id: x\nservers:\n  - id: h100-sxm5-80gb\n    vendor: v\n    name: n\n"
        "    accelerator: h100-sxm5-80gb\n    accelerators_per_node: 8\n    topology: other\n"
        "    source: s\n    as_of: 2026\n    confidence: low\n",
        encoding="utf-8",
    )
    issues, _ = check_dir(tmp_path)
    text = " | ".join(str(i) for i in issues)
    assert "did you mean accelerators" in text
    assert "already names a record of kind accelerators" in text


def test_missing_directory() -> None:
    issues, cat = check_dir("/nonexistent/catalog/dir")
    assert cat is None and "not a directory" in issues[0].message


def test_date_that_is_no_calendar_date_is_a_field_issue() -> None:
    issues = {(i.record, i.field): i for i in _issues()["g_bad_date.yaml"]}
    month = issues[("bad-date", "as_of")]
    assert month.line == 12 and "2026-13-01" in month.message and "calendar date" in month.message
    assert issues[("bad-date-and-unit", "as_of")].line == 23
    assert issues[("bad-date-and-unit", "hbm_gib")].line == 17  # the rest of the record, in the same pass
