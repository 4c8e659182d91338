"""The one version of gpuplan: `project.version` in pyproject.toml, read from the installed metadata."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__: str = version("gpuplan")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
