"""The parsed-catalog cache (issue 16): one parse per catalog state, in the user's cache folder, invalidated by any
change, never the source of an error message, harmless when unwritable or corrupt."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan import cache
from gpuplan.hardware import builtin_data_dir, load_catalog, overrides
from gpuplan.hardware.parse import ParsedFiles

QUOTE = """instances:
  - id: h100-sxm5-80gb-test-quote
    provider: test
    name: test quote
    server: dgx-h100
    accelerator_count: 8
    tenancy: bare_metal
    market: global
    prices:
      - {{kind: monthly, amount: {amount}, currency: USD, source: test, as_of: 2026-01-01, confidence: low}}
    source: test
    as_of: 2026-01-01
    confidence: low
"""


@pytest.fixture
def cache_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(d))
    monkeypatch.delenv("GPUPLAN_NO_CACHE", raising=False)
    return d


def _no_parse(*_: object, **__: object) -> ParsedFiles:
    raise AssertionError("parsed again")


def test_second_load_reads_the_cache_and_gives_the_same_records(cache_in: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first = overrides.parse_layer(builtin_data_dir(), label="<builtin>")
    assert list(cache_in.glob("catalog-*.pickle"))
    monkeypatch.setattr(overrides, "parse_dir", _no_parse)
    again = overrides.parse_layer(builtin_data_dir(), label="<builtin>")
    assert [(e.record, e.path, e.line, dict(e.key_lines)) for e in again.entries] == \
        [(e.record, e.path, e.line, dict(e.key_lines)) for e in first.entries]
    assert again.rates == first.rates


def _server_id() -> str:
    return sorted(load_catalog(use_user_dir=False).servers)[0]


def test_a_changed_user_file_is_parsed_again(cache_in: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    server = _server_id()
    (user / "q.yaml").write_text(QUOTE.format(amount=1000).replace("dgx-h100", server), encoding="utf-8")
    cat = load_catalog([user], use_user_dir=False)
    assert cat.instance("h100-sxm5-80gb-test-quote").prices[0].amount == 1000
    (user / "q.yaml").write_text(QUOTE.format(amount=2000).replace("dgx-h100", server), encoding="utf-8")
    cat = load_catalog([user], use_user_dir=False)
    assert cat.instance("h100-sxm5-80gb-test-quote").prices[0].amount == 2000


def test_errors_are_never_cached_and_keep_their_line(cache_in: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "bad.yaml").write_text("instances:\n  - id: x\n    provider: [1,\n", encoding="utf-8")
    for _ in range(2):
        parsed = overrides.parse_layer(user)
        assert parsed.issues and parsed.issues[0].line == 4 and "bad YAML" in parsed.issues[0].message
    assert not list(cache_in.glob("catalog-*.pickle"))


def test_unwritable_or_corrupt_cache_falls_back_to_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(blocker / "cache"))
    assert overrides.parse_layer(builtin_data_dir(), label="<builtin>").entries
    good = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(good))
    overrides.parse_layer(builtin_data_dir(), label="<builtin>")
    for f in good.glob("catalog-*.pickle"):
        f.write_bytes(b"garbage")
    assert overrides.parse_layer(builtin_data_dir(), label="<builtin>").entries
    monkeypatch.setenv("GPUPLAN_NO_CACHE", "1")
    assert cache.cache_dir() is None


def test_the_cache_lives_in_the_user_cache_folder_never_in_the_package(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    monkeypatch.delenv("GPUPLAN_CACHE_DIR", raising=False)
    monkeypatch.delenv("GPUPLAN_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = cache.cache_dir()
    assert d == tmp_path / "gpuplan"
    package = Path(overrides.__file__).resolve().parents[1]
    assert package not in d.resolve().parents
