"""Shared pieces of every catalog record: provenance, confidence, prices and currency.

Every record says where its numbers come from (`source`), when that source was
published or read (`as_of`), and how far to trust it (`confidence`). Single values
may cite a different source (`field_sources`) or be individually doubtful
(`low_confidence_fields`). Units live in field names (`_gib`, `_gbps` = GB/s,
`_gbit_per_s` = Gbit/s, `_tflops`, `_w`); values are plain numbers.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

__all__ = [
    "ID_PATTERN",
    "Confidence",
    "Currency",
    "CurrencyRates",
    "Market",
    "Price",
    "PriceBasis",
    "PriceKind",
    "PricingPolicy",
    "Sourced",
    "convert",
]

STRICT = ConfigDict(extra="forbid", frozen=True)

# ids are lowercase slugs; aliases may be any case (lookups are case-insensitive).
ID_PATTERN = r"^[a-z0-9][a-z0-9._\-]*$"
AS_OF_PATTERN = r"^\d{4}(-\d{2}(-\d{2})?)?$"

Confidence = Literal["high", "medium", "low", "none"]
Currency = Literal["CNY", "USD"]
Market = Literal["cn", "global"]
PriceKind = Literal["on_demand_hourly", "spot_hourly", "monthly", "yearly", "purchase", "per_tib_month"]
# list_price: the seller publishes it (price page, price list, catalog API), possibly read second-hand;
# market_quote: a price reported from the market (a broker's report, a news item, a rental survey).
PriceBasis = Literal["list_price", "market_quote"]

CONFIDENCE_RANK: dict[str, int] = {"none": 0, "low": 1, "medium": 2, "high": 3}


def _as_of_text(value: Any) -> Any:
    """YAML reads 2024-01-15 as a date and 2024 as an int; keep both as text."""
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _as_of_date(value: str) -> str:
    """YYYY-MM and YYYY-MM-DD must name a real month and day (2026-13-01 and 2026-02-30 do not)."""
    parts = value.split("-")
    try:
        if len(parts) == 2:
            _dt.date(int(parts[0]), int(parts[1]), 1)
        elif len(parts) == 3:
            _dt.date(int(parts[0]), int(parts[1]), int(parts[2]))
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a calendar date ({exc}); write YYYY, YYYY-MM or YYYY-MM-DD") from None
    return value


AsOf = Annotated[str, BeforeValidator(_as_of_text), StringConstraints(pattern=AS_OF_PATTERN),
                 AfterValidator(_as_of_date)]


class Price(BaseModel):
    """One published price. `amount` null means "not published / unknown", never zero.

    `basis` says what kind of source it is (a seller's list price or a quote reported from the
    market); `distressed` marks surplus-capacity rents that may not be available at scale: they
    are listed but not used for planning unless the catalog's `pricing.use_distressed` is set.
    Several prices of one kind and region form a history; the newest `as_of` is the one used.
    """

    model_config = STRICT

    kind: PriceKind
    amount: float | None = Field(description="in `currency`, per the period `kind` names; null = unknown")
    currency: Currency
    region: str = ""
    source: str = Field(min_length=1)
    as_of: AsOf
    confidence: Confidence = "medium"
    basis: PriceBasis = "list_price"
    distressed: bool = Field(default=False, description="surplus-capacity price; not used by default")
    # the range the sources give around `amount` (e.g. a purchase quoted 270k-350k): shown as a sensitivity
    amount_low: float | None = Field(default=None, gt=0, description="lowest figure the sources give")
    amount_high: float | None = Field(default=None, gt=0, description="highest figure the sources give")
    note: str = ""

    @model_validator(mode="after")
    def _range(self) -> Price:
        lo, hi, mid = self.amount_low, self.amount_high, self.amount
        if (lo is not None or hi is not None) and mid is None:
            raise ValueError("amount_low/amount_high need the central amount")
        if mid is not None and ((lo is not None and lo > mid) or (hi is not None and hi < mid)):
            raise ValueError(f"the range must hold the amount: amount_low <= {mid:g} <= amount_high")
        return self

    @property
    def as_of_key(self) -> str:
        """`as_of` padded for ordering (2026 < 2026-08 < 2026-08-06): a bare year sorts first in its year."""
        return self.as_of + "-00-00"[len(self.as_of) - 4:] if len(self.as_of) < 10 else self.as_of

    @field_validator("amount")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        if v is not None and v <= 0:
            raise ValueError("a price must be > 0; write null for an unknown price, never 0")
        return v


class CurrencyRates(BaseModel):
    """The CNY/USD conversion rate used to compare prices; data, so users can override it."""

    model_config = STRICT

    cny_per_usd: float = Field(gt=1, lt=20)
    source: str = Field(min_length=1)
    as_of: AsOf
    note: str = ""


class PricingPolicy(BaseModel):
    """Which catalog prices planning may use (the `pricing:` section of a catalog file)."""

    model_config = STRICT

    use_distressed: bool = Field(
        default=False, description="plan with surplus-capacity (distressed) prices too, where they are newest")
    note: str = ""


def convert(amount: float | None, src: str, dst: str, rates: CurrencyRates) -> float | None:
    """`amount` in currency `src` expressed in `dst` (None stays None)."""
    if amount is None or src == dst:
        return amount
    if src == "USD" and dst == "CNY":
        return amount * rates.cny_per_usd
    if src == "CNY" and dst == "USD":
        return amount / rates.cny_per_usd
    raise ValueError(f"unsupported currency conversion {src} -> {dst}")


class Sourced(BaseModel):
    """Base of every catalog record: id, aliases and provenance."""

    model_config = STRICT

    id: str = Field(pattern=ID_PATTERN, description="canonical id, unique across the whole catalog")
    aliases: tuple[str, ...] = ()
    source: str = Field(min_length=1, description="where the values come from (datasheet, doc URL)")
    as_of: AsOf = Field(description="date of the source: YYYY, YYYY-MM or YYYY-MM-DD")
    confidence: Confidence
    field_sources: dict[str, str] = Field(
        default_factory=dict, description="per-field source where it differs from `source`"
    )
    low_confidence_fields: tuple[str, ...] = Field(default=(), description="values individually doubtful")
    notes: str = ""

    @model_validator(mode="after")
    def _check_field_refs(self) -> Sourced:
        known = set(type(self).model_fields)
        for name in (*self.field_sources, *self.low_confidence_fields):
            if name not in known:
                raise ValueError(f"field_sources/low_confidence_fields name unknown field {name!r}")
        return self

    def source_of(self, field: str) -> str:
        """The source of one value: its own citation, else the record's."""
        return self.field_sources.get(field, self.source)

    def confidence_of(self, field: str) -> str:
        """`low` for values listed in low_confidence_fields, else the record's confidence."""
        if field in self.low_confidence_fields and CONFIDENCE_RANK[self.confidence] > 1:
            return "low"
        return self.confidence
