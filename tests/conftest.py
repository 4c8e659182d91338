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
