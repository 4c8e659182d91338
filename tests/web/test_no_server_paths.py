"""A client never names a server path: `hist:PATH` in a length field is refused before anything is opened, with one
text whatever the path; histograms come inline (`bins:`) or as an uploaded CSV (issue 38, the critical hole)."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path
from typing import Any

import pytest
from web_cases import INFER

PATHS = ["/etc/hostname", "/nonexistent", "/etc/shadow", "/dev/zero", "../../etc/passwd", "C:\\x.csv"]


def _opened_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the process opens or stats from here on (builtins.open, Path.open, os.stat)."""
    seen: list[str] = []
    real_open, real_path_open, real_stat = builtins.open, Path.open, os.stat

    def spy_open(file: Any, *a: Any, **k: Any) -> Any:
        seen.append(str(file))
        return real_open(file, *a, **k)

    def spy_path_open(self: Path, *a: Any, **k: Any) -> Any:
        seen.append(str(self))
        return real_path_open(self, *a, **k)

    def spy_stat(path: Any, *a: Any, **k: Any) -> Any:
        seen.append(str(path))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(Path, "open", spy_path_open)
    monkeypatch.setattr(os, "stat", spy_stat)
    return seen


@pytest.mark.parametrize("field", ["input_dist", "output_dist"])
def test_hist_paths_get_one_answer_and_open_nothing(fresh: Any, field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _opened_paths(monkeypatch)
    answers = set()
    for path in PATHS:
        r = fresh.post("/api/v1/plan/infer", json={**INFER, field: f"hist:{path}"})
        assert r.status_code == 422, r.text
        assert r.json()["detail"]["field"] == field.replace("_", "-")
        answers.add(r.text)
    assert len(answers) == 1, answers  # /etc/shadow (exists) and /nonexistent read the same
    assert not [p for p in seen if any(x in p for x in ("hostname", "nonexistent", "shadow", "/dev/zero", "passwd"))]
    assert "hist:<path>" in answers.pop() and "/etc" not in r.text


def test_the_serving_form_refuses_a_path_too(fresh: Any) -> None:
    form = {"model": "llama3-8b", "qps": "1", "input_dist": "hist:/etc/hostname", "output_dist": "128",
            "ttft_p99": "2", "tpot_p99": "0.1"}
    a = fresh.post("/serve", data=form, follow_redirects=False)
    b = fresh.post("/serve", data={**form, "input_dist": "hist:/nonexistent"}, follow_redirects=False)
    assert a.status_code == b.status_code == 422
    assert "hist:&lt;path&gt;" in a.text and "nonexistent" not in b.text.split('id="form-error"')[1].split("</p>")[0]


def test_inline_bins_plan_like_the_same_histogram(fresh: Any) -> None:
    r = fresh.post("/api/v1/plan/infer", json={**INFER, "input_dist": "bins:256-512=1,512-1024=3",
                                               "output_dist": "bins:64=1,128=1"})
    assert r.status_code == 200, r.text
    assert r.json()["load"]["input_len"] == "bins:256-512=1,512-1024=3"


def test_an_uploaded_histogram_csv_becomes_inline_bins(fresh: Any) -> None:
    csv_text = "low,high,weight\n256,512,1\n512,1024,3\n"
    form = {"model": INFER["model"], "qps": str(INFER["qps"]), "output_dist": "128",
            "ttft_p99": str(INFER["ttft_p99"]), "tpot_p99": str(INFER["tpot_p99"])}
    r = fresh.post("/serve", data=form, files={"input_hist_file": ("lengths.csv", io.BytesIO(csv_text.encode()),
                                                                  "text/csv")}, follow_redirects=False)
    assert r.status_code == 303, r.text
    bad = fresh.post("/serve", data=form, files={"input_hist_file": ("x.csv", io.BytesIO(b"a,b\n1,2\n"), "text/csv")})
    assert bad.status_code == 422 and "input_hist_file" in bad.text


def test_the_cli_still_reads_its_own_user_s_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gpuplan.cli.main import app
    from gpuplan.service.infer_inputs import infer_load

    f = tmp_path / "h.csv"
    f.write_text("length,weight\n100,1\n300,1\n")
    assert infer_load(1.0, None, None, None, f"hist:{f}", None, files=True).input_len.mean == 200.0
    r = CliRunner().invoke(app, ["plan", "infer", "-m", "llama3.1-8b", "--qps", "1", "--input-dist", f"hist:{f}",
                                 "--output-len", "64", "--ttft-p99", "2", "--tpot-p99", "0.1", "--json"])
    assert r.exit_code == 0, r.output
    assert '"input_len_mean": 200' in r.output.replace(".0", "")
