"""YAML loading that remembers line numbers, so every error can name its line.

Mappings load as `LineMap`, a dict that also knows the line of itself and of each
key. Duplicate keys (which plain YAML silently overwrites) are reported.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["LineMap", "YamlProblem", "load_yaml"]


class LineMap(dict[str, Any]):
    """A dict from YAML with `line` (1-based) and `key_lines` (key -> line)."""

    line: int = 0
    key_lines: dict[str, int]


class YamlProblem(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _LineLoader(yaml.SafeLoader):
    duplicates: list[tuple[int, str]]


# The same loader on LibYAML's C parser when PyYAML was built with it: about 9x faster, and its nodes
# carry the same start marks, so every line number is the same. Errors are re-read by the pure-Python
# loader so that their messages do not depend on how PyYAML was built.
_CLoader: Any = getattr(yaml, "CSafeLoader", None)
if _CLoader is not None:

    class _FastLineLoader(_CLoader):  # type: ignore[misc]
        duplicates: list[tuple[int, str]]


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineMap:
    seen: set[str] = set()
    for key_node, _ in node.value:  # explicit keys only: `<<` merges may be overridden
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
            continue
        if key_node.value in seen:
            loader.duplicates.append((key_node.start_mark.line + 1, key_node.value))
        seen.add(key_node.value)
    loader.flatten_mapping(node)
    out = LineMap()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        out[str(key)] = loader.construct_object(value_node, deep=True)
        out.key_lines[str(key)] = key_node.start_mark.line + 1
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
if _CLoader is not None:
    _FastLineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _construct_timestamp(loader: _LineLoader, node: yaml.ScalarNode) -> Any:
    """A YAML date, or its text when it is no calendar date (2026-13-01): the schema then reports the field
    like any other problem, instead of the whole file failing to load."""
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return str(node.value)


_LineLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
if _CLoader is not None:
    _FastLineLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


def load_yaml(text: str) -> tuple[Any, list[tuple[int, str]]]:
    """Parse `text`; returns (data, duplicate keys as (line, key)). Raises YamlProblem."""
    if _CLoader is not None:
        fast = _FastLineLoader(text)
        fast.duplicates = []
        try:
            return fast.get_single_data(), fast.duplicates
        except yaml.YAMLError:
            pass  # the pure-Python loader below says what and where
        finally:
            fast.dispose()
    loader = _LineLoader(text)
    loader.duplicates = []
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlProblem(line, f"bad YAML: {exc.problem or exc.context or 'syntax error'}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(None, f"bad YAML: {exc}") from None
    finally:
        loader.dispose()
    return data, loader.duplicates
