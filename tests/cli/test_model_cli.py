"""gpuplan model show: presets, config.json files and model folders holding one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app

runner = CliRunner()
CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def test_show_accepts_a_folder_holding_config_json(tmp_path: Path) -> None:
    folder = tmp_path / "Qwen2.5-7B"
    folder.mkdir()
    shutil.copy(CONFIGS / "qwen2.5-7b.json", folder / "config.json")
    res = runner.invoke(app, ["model", "show", str(folder), "--lang", "en"])
    assert res.exit_code == 0, res.output
    assert res.exception is None
    assert "qwen2" in res.stdout and "3584" in res.stdout
    mem = runner.invoke(app, ["memory", "train", "-m", str(folder), "--json"])
    assert mem.exit_code == 0 and mem.exception is None, mem.output
    assert json.loads(mem.stdout)["params_total"] > 7e9


def test_folder_without_config_json_is_one_line(tmp_path: Path) -> None:
    res = runner.invoke(app, ["model", "show", str(tmp_path), "--lang", "en"])
    exited(res, 2)
    assert "model=" in res.output and "no config.json in" in res.output
