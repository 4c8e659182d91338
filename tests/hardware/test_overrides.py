"""User overrides: config folder and --catalog DIR add or replace by id, never written."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from gpuplan.hardware import load_catalog, user_catalog_dir

GOOD = Path(__file__).resolve().parents[1] / "fixtures" / "catalog" / "good"


def _snapshot(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_user_dir_honours_xdg_config_home(_isolated_config: Path) -> None:
    assert user_catalog_dir() == _isolated_config / "gpuplan" / "catalog"


def test_user_dir_applies_and_is_never_written(_isolated_config: Path) -> None:
    target = user_catalog_dir()
    target.mkdir(parents=True)
    shutil.copy(GOOD / "my-cluster.yaml", target / "my-cluster.yaml")
    before = _snapshot(target)
    cat = load_catalog()
    assert _snapshot(target) == before  # same files, same bytes: nothing created or rewritten
    assert "acme-x1-64gb" in cat.accelerators
    origin = cat.origin("cn-rental-8x-910b3")
    assert origin.layer == "user" and origin.replaces_builtin and origin.path.endswith("my-cluster.yaml")
    assert cat.origin("acme-x1-64gb").replaces_builtin is False
    assert cat.origin("h100-sxm5-80gb").layer == "builtin"


def test_replacement_by_id_changes_values_and_aliases() -> None:
    cat = load_catalog([GOOD], use_user_dir=False)
    quote = cat.instance("cn-rental-8x-910b3")
    assert quote.price("monthly").amount == 14000  # type: ignore[union-attr]
    assert cat.resolve("our 910B3 quote") == "cn-rental-8x-910b3"
    with pytest.raises(Exception, match="invalid"):
        cat.resolve("8x Ascend 910B3 rental")  # the built-in alias went with the replaced record


def test_currency_rate_is_overridable() -> None:
    base = load_catalog(use_user_dir=False)
    mine = load_catalog([GOOD], use_user_dir=False)
    assert base.rates.cny_per_usd != 7.0 and mine.rates.cny_per_usd == 7.0
    inst = mine.instance("alibaba-ecs.gn7-c12g1.3xlarge")
    assert inst.hourly("USD", mine.rates) == pytest.approx(31.58 / 7.0)
    assert mine.rates_origin.layer == "user"


def test_catalog_dirs_apply_after_user_dir(_isolated_config: Path, tmp_path: Path) -> None:
    user = user_catalog_dir()
    user.mkdir(parents=True)
    shutil.copy(GOOD / "my-cluster.yaml", user / "a.yaml")
    later = tmp_path / "later"
    later.mkdir()
    (later / "rate.yaml").write_text(
        "currency: {cny_per_usd: 7.3, source: later dir, as_of: 2026-10}\n", encoding="utf-8"
    )
    cat = load_catalog([later])
    assert cat.rates.cny_per_usd == 7.3 and "acme-x1-64gb" in cat.accelerators


def test_missing_user_dir_is_fine() -> None:
    assert not user_catalog_dir().exists()
    assert len(load_catalog().accelerators) >= 25
