"""The YAML examples in README.md (catalog block) and docs/catalog.md must validate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuplan.hardware import check_dir

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> list[tuple[str, str]]:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    block = text[text.index("<!-- catalog:start -->") : text.index("<!-- catalog:end -->")]
    docs = (ROOT / "docs" / "catalog.md").read_text(encoding="utf-8")
    out = []
    for name, body in (("README", block), ("docs/catalog.md", docs)):
        for i, yml in enumerate(re.findall(r"```yaml\n(.*?)```", body, re.S)):
            if "\n  - id:" in yml:
                out.append((f"{name}#{i}", yml))
    return out


def test_there_are_examples() -> None:
    names = [n for n, _ in _examples()]
    assert any(n.startswith("README") for n in names) and len(names) >= 3


@pytest.mark.parametrize(("name", "yml"), _examples())
def test_example_validates(name: str, yml: str, tmp_path: Path) -> None:
    (tmp_path / "example.yaml").write_text(yml, encoding="utf-8")
    issues, cat = check_dir(tmp_path)
    assert not issues, f"{name}: " + "; ".join(str(i) for i in issues)
    assert cat is not None
