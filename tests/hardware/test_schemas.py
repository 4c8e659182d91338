"""Schema rules: frozen records, unknown keys rejected, prices never zero, conversions."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpuplan.errors import InputError
from gpuplan.hardware import Accelerator, Catalog, CurrencyRates, Price, convert

RATES = CurrencyRates(cny_per_usd=7.2, source="test", as_of="2026")


def _acc(**over: Any) -> Accelerator:
    base: dict[str, Any] = dict(
        id="t-1",
        vendor="T",
        name="T",
        flops_basis="dense_published",
        intra_node_link="pcie",
        software_stack="other",
        markets=["global"],
        source="s",
        as_of="2026",
        confidence="low",
    )
    base.update(over)
    return Accelerator.model_validate(base)


def test_records_are_frozen_and_strict() -> None:
    a = _acc()
    with pytest.raises(ValidationError):
        a.hbm_gib = 3
    with pytest.raises(ValidationError, match="extra"):
        _acc(memory_gb=80)


def test_as_of_accepts_yaml_dates_and_years() -> None:
    import datetime as dt

    assert _acc(as_of=dt.date(2024, 1, 2)).as_of == "2024-01-02"
    assert _acc(as_of=2024).as_of == "2024"
    with pytest.raises(ValidationError):
        _acc(as_of="last year")


def test_fp8_below_bf16_is_rejected() -> None:
    with pytest.raises(ValidationError, match="fp8_dense_tflops"):
        _acc(bf16_dense_tflops=989, fp8_dense_tflops=500)


def test_pcie_part_has_no_multi_gpu_domain() -> None:
    with pytest.raises(ValidationError, match="fully_connected_domain"):
        _acc(fully_connected_domain=8)


def test_field_sources_must_name_fields() -> None:
    with pytest.raises(ValidationError, match="unknown field"):
        _acc(field_sources={"hbm_gb": "x"})
    a = _acc(hbm_gib=80, field_sources={"hbm_gib": "datasheet"}, low_confidence_fields=["hbm_gib"], confidence="high")
    assert a.source_of("hbm_gib") == "datasheet" and a.source_of("tdp_w") == "s"
    assert a.confidence_of("hbm_gib") == "low" and a.confidence_of("tdp_w") == "high"


def test_dense_tflops_lookup() -> None:
    a = _acc(bf16_dense_tflops=100, int8_dense_tops=200)
    assert a.dense_tflops("bf16") == 100 and a.dense_tflops("int8") == 200 and a.dense_tflops("fp8") is None
    with pytest.raises(InputError, match="dtype"):
        a.dense_tflops("bf17")


def test_price_zero_rejected_null_allowed() -> None:
    with pytest.raises(ValidationError, match="never 0"):
        Price(kind="spot_hourly", amount=0, currency="USD", source="s", as_of="2026")
    assert Price(kind="spot_hourly", amount=None, currency="USD", source="s", as_of="2026").amount is None
    with pytest.raises(ValidationError):
        Price(kind="spot_hourly", amount=1, currency="EUR", source="s", as_of="2026")


def test_convert() -> None:
    assert convert(72.0, "CNY", "USD", RATES) == pytest.approx(10.0)
    assert convert(10.0, "USD", "CNY", RATES) == pytest.approx(72.0)
    assert convert(None, "USD", "CNY", RATES) is None


def test_instance_hourly_from_monthly(builtin: Catalog) -> None:
    inst = builtin.instance("tencent-hccpnv4h")
    assert inst.hourly("USD", builtin.rates) is None  # no on-demand price published
    monthly = inst.hourly("CNY", builtin.rates, kind="monthly")
    assert monthly == pytest.approx(116280 / 730)


def test_unknown_lookup_has_close_matches(builtin: Catalog) -> None:
    with pytest.raises(InputError, match="Did you mean"):
        builtin.accelerator("h100-sxm5-80g")
    with pytest.raises(InputError):
        builtin.server("h100-sxm5-80gb")  # an accelerator id is not a server
