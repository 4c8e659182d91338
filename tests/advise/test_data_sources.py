"""Every planner data term cites a real source or says it is a gpuplan assumption, never the project's own
issue tracker (an issue is a request, not evidence)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuplan"
# 'issue 5', '(issue 6)', 'gpuplan issue #3', 'issue 6 of this project'; an external tracker names its project
# first ('vllm-ascend issue 4120', 'NVIDIA/nccl issue 29')
OWN_ISSUE = re.compile(r"(?:^|[(;:,]\s*|\bgpuplan\s+|\bof\s+)issues?\s+#?\d+|issue\s+#?\d+\s+of\s+this\s+project",
                       re.IGNORECASE)


def _sources(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("source", "field_sources", "sources") or k.startswith("source"):
                yield from _strings(v, f"{where}.{k}")
            else:
                yield from _sources(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _sources(v, f"{where}[{i}]")


def _strings(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, str):
        yield where, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, f"{where}[{i}]")


def test_no_source_cites_the_projects_issue_tracker() -> None:
    files = sorted(SRC.glob("*/data/*.yaml"))
    assert any(f.name == "thresholds.yaml" for f in files) and any(f.name == "infer_plan.yaml" for f in files)
    bad = [f"{f.relative_to(SRC)}:{where}: {text}" for f in files
           for where, text in _sources(yaml.safe_load(f.read_text(encoding="utf-8")), "")
           if OWN_ISSUE.search(text)]
    assert bad == []


def test_the_pattern_tells_own_issues_from_external_ones() -> None:
    for own in ("issue 6 of this project (2-4x)", "Seed guidance of gpuplan issue 5: x", "budget (issue 5: x)",
                "Planner speed budget: full-catalog plan in under 5 s (issue 5)"):
        assert OWN_ISSUE.search(own), own
    for external in ("vllm-ascend issue #8746 (192 cores)", "NVIDIA/nccl issue 29 (maintainer)",
                     "dstack issue 1355", "vllm-ascend issues 4120, 3430; notes"):
        assert not OWN_ISSUE.search(external), external
