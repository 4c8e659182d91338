"""Shared emitted sets: one CLI run per plan, reused by every check (tests/emit)."""

from __future__ import annotations

import pytest
from emit_cases import README_INFER, README_TRAIN, TRAIN_70B, emit


@pytest.fixture(scope="session")
def readme_train(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return emit(README_TRAIN, tmp_path_factory.mktemp("train8b"))


@pytest.fixture(scope="session")
def train_70b(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return emit(TRAIN_70B, tmp_path_factory.mktemp("train70b"))


@pytest.fixture(scope="session")
def readme_infer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return emit(README_INFER, tmp_path_factory.mktemp("infer"))
