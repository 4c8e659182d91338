"""Row notes kept in the package: vendor-published rows are known by id and tagged in validation."""

from __future__ import annotations

import csv

import pytest

from gpuplan.validate.row_notes import row_weight, vendor_note
from ground_truth import case_file

CASES = case_file("inference.csv")


def test_vendor_rows_are_known_and_weighed_below_third_party_rows() -> None:
    amd = vendor_note("G2I037")
    assert amd is not None and amd.vendor == "AMD"
    assert vendor_note("G2I028") is None  # GPUStack: a third party measuring Ascend
    assert row_weight("G2I028") == 1.0
    assert 0 < row_weight("G2I037") < 1.0


@pytest.mark.ground_truth("inference.csv")
def test_every_noted_row_exists_and_is_the_vendors_part() -> None:
    with CASES.open(encoding="utf-8") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    parts = {"NVIDIA": ("h100", "h200", "a100", "l40s", "h20", "h800"), "AMD": ("mi300",), "Huawei": ("ascend",)}
    for rid, row in rows.items():
        note = vendor_note(rid)
        if note is not None:
            assert row["accelerator"].startswith(parts[note.vendor]), rid
