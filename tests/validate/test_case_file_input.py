"""A file that is not a case file is an error naming what is expected, never an empty table (issue 16)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuplan.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize(("text", "needle"), [
    ("myhost\n", "at least one row"),            # /etc/hostname: one line, no rows
    ("a,b\n1,2\n", "id, metric, value"),         # a CSV of something else
    ("id,metric\nX1,tflops_per_device\n", "value"),
    ("", "at least one row"),
])
def test_validate_rejects_a_file_that_is_not_a_case_file(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and (res.exception is None or isinstance(res.exception, SystemExit)), res.output
    assert needle in res.output and "cases" in res.output
    assert res.output.count("\n") <= 3  # one message, no table
