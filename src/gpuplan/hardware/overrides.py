"""Where catalog layers come from, and the public `load_catalog` entry point.

User overrides live in the user's config folder (`$XDG_CONFIG_HOME/gpuplan/catalog`,
default `~/.config/gpuplan/catalog`; `%APPDATA%\\gpuplan\\catalog` on Windows) and in
any directory passed as `--catalog DIR`. gpuplan only ever reads them: it never
creates, edits or overwrites a user's catalog file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cache as cache_fn
from importlib import resources
from pathlib import Path

from gpuplan import cache
from gpuplan.hardware.catalog import Catalog, Layer, build_catalog
from gpuplan.hardware.issues import CatalogError, CatalogIssue
from gpuplan.hardware.parse import KINDS, Entry, ParsedFiles, parse_dir
from gpuplan.hardware.schema_base import Sourced

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


# The modules whose classes a cached layer holds: a change to any of them makes a new cache key.
_SCHEMA_MODULES = ("schema_base.py", "schema_devices.py", "schema_offers.py", "parse.py", "issues.py")


def _layer_key(directory: Path, label: str | None) -> str | None:
    """The cache key of one layer: its files' names and bytes, the schema sources and the gpuplan version;
    None when the folder cannot be read (the full parse then reports it)."""
    from gpuplan import __version__

    try:
        here = Path(__file__).parent
        parts = [__version__.encode(), str(label).encode(), str(directory).encode()]
        parts += [(here / name).read_bytes() for name in _SCHEMA_MODULES]
        for path in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml")
                           and not p.name.startswith(".")):
            parts += [path.name.encode(), path.read_bytes()]
    except OSError:
        return None
    return cache.digest(parts)


def parse_layer(directory: Path, label: str | None = None) -> ParsedFiles:
    """`parse_dir(directory, label)`, from the user's cache when the same files were parsed before.

    Only a layer without problems is cached: a layer with any problem is parsed in full each time, so its
    messages and line numbers are those of the parser."""
    key = _layer_key(directory, label) if directory.is_dir() else None
    if key is not None:
        hit = cache.load("catalog", key)
        if isinstance(hit, ParsedFiles) and not hit.issues:
            return hit
    parsed = parse_dir(directory, label=label)
    if key is not None and not parsed.issues:
        cache.store("catalog", key, parsed)
    return parsed


@cache_fn
def _builtin_parsed() -> ParsedFiles:
    return parse_layer(builtin_data_dir(), label="<builtin>")


def _layers(catalog_dirs: Sequence[Path | str], use_user_dir: bool) -> list[Layer]:
    layers = [Layer("builtin", _builtin_parsed())]
    if use_user_dir:
        user = user_catalog_dir()
        if user.is_dir():
            layers.append(Layer("user", parse_layer(user)))
    for d in catalog_dirs:
        layers.append(Layer("user", parse_layer(Path(d).expanduser())))
    return layers


def load_catalog(catalog_dirs: Sequence[Path | str] = (), *, use_user_dir: bool = True,
                 records: Mapping[str, Sequence[Sourced]] | None = None, label: str = "<records>") -> Catalog:
    """The built-in catalog with the user's overrides applied, checked as a whole.

    `records` (kind -> validated records, e.g. a web request's own quotes) is one more user layer after the
    folders, held in memory only: nothing is written. Its records are named `label` in origins and problems.
    Raises CatalogError (listing every problem with file, line and field) if any layer
    is broken: a partly loaded catalog is never returned.
    """
    layers = _layers(catalog_dirs, use_user_dir)
    if records:
        entries = [Entry(kind, rec, label, i) for kind in KINDS for i, rec in enumerate(records.get(kind, ()), 1)]
        layers.append(Layer("user", ParsedFiles(entries, [], [])))
    return build_catalog(layers)


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
