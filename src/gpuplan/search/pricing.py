"""Price of one accelerator-hour from the catalog's instances (cheapest published offer per kind).

Each instance contributes the price planning uses (`Instance.price`: the newest `as_of` of each kind;
a distressed price only when the catalog's `pricing.use_distressed` is set). `price_label` names a
price's kind of source honestly: "list price (source, date)" or "market quote (confidence)".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuplan.hardware import Catalog, Instance, Price
from gpuplan.i18n import tr

__all__ = ["PROVENANCE", "DevicePrice", "device_price", "distressed_price", "instance_price", "price_label",
           "used_price"]

PROVENANCE = ("catalog price: each instance's newest price of a kind, a list price or a market quote "
              "with its own source, date and confidence (distressed-capacity prices only when asked)")


@dataclass(frozen=True, slots=True, kw_only=True)
class DevicePrice:
    """USD per accelerator-hour; None where no offer publishes that kind (never 0)."""

    on_demand: float | None
    spot: float | None
    monthly: float | None  # monthly commitment, per hour over 730 h
    on_demand_instance: str | None
    spot_instance: str | None
    monthly_instance: str | None

    def to_json(self) -> dict[str, object]:
        return {"usd_per_device_hour": {"on_demand": self.on_demand, "spot": self.spot, "monthly": self.monthly},
                "instances": {"on_demand": self.on_demand_instance, "spot": self.spot_instance,
                              "monthly": self.monthly_instance},
                "provenance": PROVENANCE}


def device_price(catalog: Catalog, accelerator: str, *, market: str | None = None,
                 provider: str | None = None, keep: Callable[[Instance], bool] | None = None) -> DevicePrice:
    """The cheapest per-device-hour rate of each kind over the offers of this part (market and
    provider filters applied, and `keep` when given); each kind names the instance it came from."""
    best: dict[str, tuple[float, str]] = {}
    for inst in catalog.instances.values():
        if catalog.server(inst.server).accelerator != accelerator or inst.accelerator_count <= 0:
            continue
        if (market and inst.market != market) or (provider and inst.provider != provider):
            continue
        if keep is not None and not keep(inst):
            continue
        one = instance_price(catalog, inst)
        for key, rate in (("on_demand", one.on_demand), ("spot", one.spot), ("monthly", one.monthly)):
            if rate is not None and (key not in best or rate < best[key][0]):
                best[key] = (rate, inst.id)
    none: tuple[float | None, str | None] = (None, None)
    (od, odi), (sp, spi), (mo, moi) = (best.get(k, none) for k in ("on_demand", "spot", "monthly"))
    return DevicePrice(on_demand=od, spot=sp, monthly=mo, on_demand_instance=odi, spot_instance=spi,
                       monthly_instance=moi)


def instance_price(catalog: Catalog, inst: Instance) -> DevicePrice:
    """USD per accelerator-hour of one instance, each kind it publishes."""
    return _instance_price(catalog, inst, catalog.pricing.use_distressed)


def distressed_price(catalog: Catalog, inst: Instance) -> DevicePrice:
    """`instance_price` with surplus-capacity (distressed) rents too, whatever the catalog's pricing policy: the
    price of a distressed-rent scenario (search/offers.py)."""
    return _instance_price(catalog, inst, True)


def _instance_price(catalog: Catalog, inst: Instance, distressed: bool) -> DevicePrice:
    got: dict[str, float | None] = {}
    for kind, key in (("on_demand_hourly", "on_demand"), ("spot_hourly", "spot"), ("monthly", "monthly")):
        hourly = inst.hourly("USD", catalog.rates, kind, distressed=distressed)
        got[key] = hourly / inst.accelerator_count if hourly is not None else None
    return DevicePrice(on_demand=got["on_demand"], spot=got["spot"], monthly=got["monthly"],
                       on_demand_instance=inst.id if got["on_demand"] is not None else None,
                       spot_instance=inst.id if got["spot"] is not None else None,
                       monthly_instance=inst.id if got["monthly"] is not None else None)


def used_price(catalog: Catalog, inst: Instance, kind: str) -> Price | None:
    """The price of `kind` that planning uses for `inst` under the catalog's pricing policy."""
    return inst.price(kind, distressed=catalog.pricing.use_distressed)


def price_label(p: Price, lang: str = "en") -> str:
    """'list price (source, date)' or 'market quote (confidence, source, date)', with 'distressed' where marked."""
    key = "price.label.market_quote" if p.basis == "market_quote" else "price.label.list_price"
    text = tr(key, lang, source=p.source, as_of=p.as_of, confidence=tr(f"price.confidence.{p.confidence}", lang))
    return text + tr("price.label.distressed", lang) if p.distressed else text
