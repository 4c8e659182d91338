"""The one version of gpuplan. The build (hatchling, `[tool.hatch.version]` in pyproject.toml) reads it
from here into the package metadata, so `gpuplan version`, `gpuplan.__version__` and the installed
metadata agree without importing importlib.metadata on every command (about 40 ms)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
