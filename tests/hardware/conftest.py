"""Catalog tests never read the developer's own ~/.config/gpuplan/catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.hardware import Catalog, load_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "catalog"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def builtin() -> Catalog:
    return load_catalog(use_user_dir=False)
