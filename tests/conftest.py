"""Shared test configuration: the gpu marker skips cleanly where no accelerator is present."""

from __future__ import annotations

import pytest


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA or NPU device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _isolated_user_config(tmp_path_factory: pytest.TempPathFactory) -> object:
    """Point the user config folder (catalog overrides, `gpuplan calibrate` output) at an empty
    temporary folder, so files on a developer's machine never change test results."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        yield None
