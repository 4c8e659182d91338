"""Result files: the exported schema is current, files round-trip, bad files and folders give one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplan.bench.records import load_result, result_schema, write_result
from gpuplan.errors import InputError

SCHEMA = Path(__file__).parents[2] / "docs" / "bench-result.schema.json"


def test_exported_schema_is_current() -> None:
    # regenerate: python -c "import json; from gpuplan.bench.records import result_schema; ..." (docs/bench.md)
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == json.loads(json.dumps(result_schema()))


def test_round_trip(tmp_path: Path, make_gpu_result: Any) -> None:
    res = make_gpu_result()
    out = write_result(res, tmp_path / "sub" / "r.json")
    assert load_result(out) == res
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_bad_files_name_the_problem(tmp_path: Path, make_gpu_result: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="JSON"):
        load_result(bad)
    data = json.loads(make_gpu_result().model_dump_json())
    data["measurements"][0]["unit"] = ""
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=r"measurements\.0\.unit"):
        load_result(bad)
    with pytest.raises(InputError, match="readable"):
        load_result(tmp_path / "missing.json")


def test_unwritable_folder_is_an_input_error(tmp_path: Path, make_gpu_result: Any) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="writable"):
        write_result(make_gpu_result(), blocker / "r.json")  # its folder cannot be created
