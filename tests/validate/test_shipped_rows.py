"""The validation rows ship inside the package (issue 35 item 6) and equal the project's shared ground truth.

A fresh clone has no ../shared: the golden tests read gpuplan/validate/data/ground_truth. Where ../shared/ground-truth
is present (a developer's checkout, the project's CI), every CSV and README there must be shipped byte for byte, and
a difference names the file and the first row that differs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuplan.validate.cases import read_rows
from gpuplan.validate.ground_truth import FILES, case_files, differences, family_of, shipped_dir
from ground_truth import SHARED


def test_every_family_ships_its_dev_and_released_rows() -> None:
    # 212 + 102 training rows, 103 + 34 + 17 serving rows, 28 + 10 + 3 memory rows (released/README.md: 166 released)
    counts = {f: [len(read_rows(p)) for p in case_files(f, added=False)] for f in FILES}
    assert counts == {"training": [212, 102], "inference": [103, 34, 17], "memory": [28, 10, 3]}
    # the project's own rows (validate/data/added_rows) join each family after the shared ones: 19 + 23 (training: the
    # Megatron-Core MoE report 5, Megatron-Bridge 26.04.01 MoE pre-training 10, 26.06 LoRA on GB200/GB300 4;
    # inference: 7 FP4 rows, 3 TensorRT-LLM DeepSeek-R1 rows A35-DSR1-*, 11 CloudMatrix384 rows A35-ASC-*, 2 rows of
    # vllm-ascend's own benchmark page A35-VA-*)
    added = {f: [len(read_rows(p)) for p in case_files(f)][len(counts[f]):] for f in FILES}
    assert added == {"training": [19], "inference": [23], "memory": []}
    assert sum(sum(c[1:]) for c in counts.values()) == 166
    assert (shipped_dir() / "README.md").exists() and (shipped_dir() / "released" / "README.md").exists()
    assert family_of(Path("released/inference_newparts.csv")) == "inference"


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared ground truth at {SHARED} (a fresh clone)")
def test_shipped_rows_equal_the_shared_ground_truth() -> None:
    diff = differences(SHARED)
    assert not diff, "the shipped ground truth differs from ../shared/ground-truth:\n" + "\n".join(diff)


def test_a_changed_row_is_named(tmp_path: Path) -> None:
    other = tmp_path / "gt"
    shutil.copytree(shipped_dir(), other)
    path = other / "released" / "memory.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    rid = lines[3].split(",")[0]
    lines[3] = lines[3].replace(",", ",x", 1)
    path.write_text("".join(lines), encoding="utf-8")
    (other / "extra.csv").write_text("id\n", encoding="utf-8")
    diff = differences(other)
    assert len(diff) == 2, diff
    assert diff[0].startswith("extra.csv: in ") and "not shipped" in diff[0]
    assert diff[1].startswith("released/memory.csv: line 4") and f"(row {rid})" in diff[1]
    assert differences(shipped_dir()) == []
