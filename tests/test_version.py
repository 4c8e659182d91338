"""One version (issue 16): src/gpuplan/_version.py's, as the package metadata (hatch reads it there; pyproject.toml
declares the version dynamic), `gpuplan.__version__` and `gpuplan version`."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

import gpuplan
from gpuplan.cli.main import app

ROOT = Path(__file__).resolve().parents[1]


def test_version_agrees_everywhere() -> None:
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dynamic = \["version"\]', project, re.M) and not re.search(r"^version = ", project, re.M)
    assert 'path = "src/gpuplan/_version.py"' in project
    text = (ROOT / "src" / "gpuplan" / "_version.py").read_text(encoding="utf-8")
    declared = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    assert declared is not None
    res = CliRunner().invoke(app, ["version"])
    assert res.exit_code == 0
    assert declared.group(1) == version("gpuplan") == gpuplan.__version__ == res.output.strip()


def test_the_changelog_names_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog")
    assert f"## [{gpuplan.__version__}]" in changelog
