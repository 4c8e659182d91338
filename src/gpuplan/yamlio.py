"""Fast YAML loading: the C LibYAML parser when PyYAML has it, the pure-Python one otherwise.

`safe_load` gives exactly what `yaml.safe_load` gives (same constructors and resolver). On any
YAML error it parses again with the pure-Python loader, so error messages and their line
numbers stay those of `yaml.safe_load`.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["FAST_LOADER", "safe_load"]

FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through LibYAML when available."""
    if FAST_LOADER is yaml.SafeLoader:
        return yaml.safe_load(text)
    try:
        return yaml.load(text, Loader=FAST_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return yaml.safe_load(text)  # the pure-Python parser's message and line
