"""Alias resolution: an alias with several variants says which record it chose."""

from __future__ import annotations

from gpuplan.hardware import load_catalog
from gpuplan.hardware.query import alias_note


def test_variants_of_an_alias() -> None:
    cat = load_catalog((), use_user_dir=False)
    assert cat.variants("h100") == ("h100-sxm5-80gb", ("h100-nvl-94gb", "h100-pcie-80gb"))
    assert cat.variants("H100 ") == cat.variants("h100")
    assert cat.variants("910B") == ("ascend-910b", ("ascend-910b2", "ascend-910b3", "ascend-910b4"))
    assert cat.variants("4090") == ("rtx4090-24gb", ("rtx4090d-24gb",))
    for name in ("h100-sxm5-80gb", "h20", "l4", "a10", "nope"):  # exact id, or no variant past a word boundary
        assert cat.variants(name) is None, name
    assert alias_note(cat, "h100") == ("h100 -> h100-sxm5-80gb (also: h100-nvl-94gb, h100-pcie-80gb; "
                                       "pass the id to choose another)")
    assert alias_note(cat, "h100-sxm5-80gb") is None
    zh = alias_note(cat, "h100", "zh")
    assert zh is not None and "另有" in zh
