"""Where catalog layers come from, and the public `load_catalog` entry point.

User overrides live in the user's config folder (`$XDG_CONFIG_HOME/gpuplan/catalog`,
default `~/.config/gpuplan/catalog`; `%APPDATA%\\gpuplan\\catalog` on Windows) and in
any directory passed as `--catalog DIR`. gpuplan only ever reads them: it never
creates, edits or overwrites a user's catalog file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

from gpuplan.hardware.catalog import Catalog, Layer, build_catalog
from gpuplan.hardware.issues import CatalogError, CatalogIssue
from gpuplan.hardware.parse import ParsedFiles, parse_dir

__all__ = ["builtin_data_dir", "check_dir", "load_catalog", "user_catalog_dir"]


def builtin_data_dir() -> Path:
    """The package's own data directory (read-only)."""
    return Path(str(resources.files("gpuplan.hardware") / "data"))


def user_catalog_dir() -> Path:
    """The user's override directory (it need not exist)."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "gpuplan" / "catalog"
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "gpuplan" / "catalog"


@cache
def _builtin_parsed() -> ParsedFiles:
    return parse_dir(builtin_data_dir(), label="<builtin>")


def _layers(catalog_dirs: Sequence[Path | str], use_user_dir: bool) -> list[Layer]:
    layers = [Layer("builtin", _builtin_parsed())]
    if use_user_dir:
        user = user_catalog_dir()
        if user.is_dir():
            layers.append(Layer("user", parse_dir(user)))
    for d in catalog_dirs:
        layers.append(Layer("user", parse_dir(Path(d).expanduser())))
    return layers


def load_catalog(catalog_dirs: Sequence[Path | str] = (), *, use_user_dir: bool = True) -> Catalog:
    """The built-in catalog with the user's overrides applied, checked as a whole.

    Raises CatalogError (listing every problem with file, line and field) if any layer
    is broken: a partly loaded catalog is never returned.
    """
    return build_catalog(_layers(catalog_dirs, use_user_dir))


def check_dir(directory: Path | str) -> tuple[list[CatalogIssue], Catalog | None]:
    """Validate `directory` as an override layer on top of the built-in data.

    Returns (issues, catalog): every problem found, and the merged catalog when there
    are none. The user's config folder is not applied, so the result depends only on
    `directory`.
    """
    path = Path(directory).expanduser()
    if not path.is_dir():
        return [CatalogIssue(str(path), None, "not a directory")], None
    try:
        return [], build_catalog(_layers([path], use_user_dir=False))
    except CatalogError as exc:
        return list(exc.issues), None
