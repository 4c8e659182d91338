"""Filtering and tabulating catalog records (pure functions the CLI and tools share)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from gpuplan.errors import InputError, unknown_name
from gpuplan.hardware.catalog import Catalog
from gpuplan.hardware.schema_base import Price, Sourced
from gpuplan.hardware.schema_devices import Accelerator, FrameworkSupport, Nic, Server
from gpuplan.hardware.schema_offers import CalibrationTerm, Instance, Network, Storage
from gpuplan.i18n import tr

__all__ = [
    "FieldValue",
    "accelerator_of",
    "alias_note",
    "compare_rows",
    "field_values",
    "filter_records",
    "fmt",
    "hourly_usd",
    "price_text",
]

META_FIELDS = ("id", "source", "as_of", "confidence", "field_sources", "low_confidence_fields", "notes")

# Which filters apply to which kind.
_APPLIES = {
    "vendor": ("accelerators", "servers", "instances"),
    "market": ("accelerators", "servers", "instances", "storage"),
    "provider": ("instances", "storage"),
    "min_memory_gib": ("accelerators", "servers", "instances"),
}


def alias_note(cat: Catalog, name: str, lang: str = "en", kind: str = "accelerators") -> str | None:
    """One line saying which record an alias with several variants chose, else None:
    'h100 -> h100-sxm5-80gb (also: h100-nvl-94gb, h100-pcie-80gb)'."""
    found = cat.variants(name, kind)
    if found is None:
        return None
    rid, others = found
    return tr("cli.alias_note", lang, name=name.strip(), id=rid, others=", ".join(others))


def accelerator_of(cat: Catalog, record: Sourced) -> Accelerator | None:
    """The accelerator behind an accelerator, server or instance record."""
    if isinstance(record, Accelerator):
        return record
    if isinstance(record, Server):
        return cat.accelerators.get(record.accelerator)
    if isinstance(record, Instance):
        server = cat.servers.get(record.server)
        return cat.accelerators.get(server.accelerator) if server else None
    return None


def _markets(cat: Catalog, record: Sourced) -> tuple[str, ...]:
    if isinstance(record, Instance | Storage):
        return (record.market,)
    acc = accelerator_of(cat, record)
    return acc.markets if acc else ()


def _vendor_match(query: str, vendor: str) -> bool:
    q, v = query.strip().lower(), vendor.lower()
    return v == q or v.startswith(q + " ") or v.split(" ")[0] == q


def filter_records(
    cat: Catalog,
    kind: str,
    *,
    vendor: str | None = None,
    market: str | None = None,
    provider: str | None = None,
    min_memory_gib: float | None = None,
) -> list[Sourced]:
    """Records of `kind` that pass every given filter (AND). InputError for a filter that
    does not apply to `kind` or names nothing in the catalog."""
    given = {"vendor": vendor, "market": market, "provider": provider, "min_memory_gib": min_memory_gib}
    for name, value in given.items():
        if value is not None and kind not in _APPLIES[name]:
            raise InputError(
                field=f"--{name.replace('_', '-')}",
                value=value,
                allowed=f"only with {', '.join(_APPLIES[name])}",
            )
    rows = cat.records(kind)
    check_policy_names(cat, vendor=vendor, provider=provider)
    if vendor is not None:
        rows = [
            r for r in rows if (a := accelerator_of(cat, r)) is not None and _vendor_match(vendor, a.vendor)
        ]
    if market is not None:
        if market not in ("cn", "global"):
            raise InputError(field="--market", value=market, allowed="cn or global")
        rows = [r for r in rows if market in _markets(cat, r)]
    if provider is not None:
        rows = [r for r in rows if getattr(r, "provider", None) == provider]
    if min_memory_gib is not None:
        if min_memory_gib < 0:
            raise InputError(field="--min-memory-gib", value=min_memory_gib, allowed="a number >= 0")
        rows = [
            r
            for r in rows
            if (a := accelerator_of(cat, r)) is not None
            and a.hbm_gib is not None
            and a.hbm_gib >= min_memory_gib
        ]
    return rows


def check_policy_names(cat: Catalog, *, vendor: str | None = None, provider: str | None = None) -> None:
    """A vendor or provider filter names one the catalog has (InputError with the closest names otherwise): a
    misspelt filter would leave nothing to plan, or silently match nothing."""
    if vendor is not None:
        vendors = {a.vendor for a in cat.accelerators.values()}
        if not any(_vendor_match(vendor, v) for v in vendors):
            raise unknown_name("vendor", vendor, vendors)
    if provider is not None:
        providers = {getattr(r, "provider", "") for k in ("instances", "storage") for r in cat.records(k)}
        if provider not in providers:
            raise unknown_name("provider", provider, providers)


def fmt(value: Any) -> str:
    """A compact, unit-free text form of a field value."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}".rstrip("0").rstrip(".") if value != int(value) else f"{int(value):,}"
    if isinstance(value, Nic):
        return f"{value.count}x {fmt(value.speed_gbit_per_s)} Gbit/s {value.rdma} ({value.role})"
    if isinstance(value, Price):
        return price_text(value)
    if isinstance(value, CalibrationTerm):
        return f"{value.name} = {fmt(value.value)} {value.unit}"
    if isinstance(value, FrameworkSupport):
        parts = []
        for name in ("pytorch", "deepspeed", "megatron", "vllm", "mindspore", "paddlepaddle"):
            level = getattr(value, name)
            via = value.via.get(name)
            parts.append(f"{name}: {level}" + (f" ({via})" if via else ""))
        return "; ".join(parts)
    if isinstance(value, tuple | list):
        return ", ".join(fmt(v) for v in value) if value else "-"
    if isinstance(value, BaseModel):
        return str(value.model_dump(mode="json"))
    return str(value)


_PER = {
    "on_demand_hourly": "/h on demand",
    "spot_hourly": "/h spot",
    "monthly": "/month",
    "yearly": "/year",
    "purchase": " to buy",
    "per_tib_month": "/TiB-month",
}


def price_text(p: Price) -> str:
    """'CNY 15,000/month [region], market quote, distressed': the amount, then what kind of price it is."""
    amount = "unknown" if p.amount is None else f"{p.currency} {fmt(float(p.amount))}"
    region = f" [{p.region}]" if p.region else ""
    kind = ", market quote" if p.basis == "market_quote" else ""
    return f"{amount}{_PER[p.kind]}{region}{kind}" + (", distressed" if p.distressed else "")


@dataclass(frozen=True)
class FieldValue:
    """One value of one record, with the source and confidence it carries."""

    field: str
    value: Any
    text: str
    source: str
    confidence: str
    as_of: str

    def to_dict(self) -> dict[str, Any]:
        value = self.value.model_dump(mode="json") if isinstance(self.value, BaseModel) else self.value
        if isinstance(value, tuple):
            value = [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
        return {
            "field": self.field,
            "value": value,
            "source": self.source,
            "confidence": self.confidence,
            "as_of": self.as_of,
        }


def field_values(record: Sourced, *, include_empty: bool = False) -> list[FieldValue]:
    """Each data field of `record` with its own source; prices and calibration terms,
    which carry their own provenance, come one per row."""
    out: list[FieldValue] = []
    for name in type(record).model_fields:
        if name in META_FIELDS:
            continue
        value = getattr(record, name)
        if not include_empty and (value is None or value == "" or value == () or value == {}):
            continue
        if name in ("prices", "calibration") and isinstance(value, tuple):
            for i, item in enumerate(value):
                out.append(
                    FieldValue(
                        f"{name}[{i}]",
                        item,
                        fmt(item),
                        item.source,
                        item.confidence,
                        getattr(item, "as_of", record.as_of),
                    )
                )
            continue
        if isinstance(value, Price):
            out.append(FieldValue(name, value, fmt(value), value.source, value.confidence, value.as_of))
            continue
        out.append(
            FieldValue(
                name, value, fmt(value), record.source_of(name), record.confidence_of(name), record.as_of
            )
        )
    return out


def compare_rows(records: Sequence[Sourced]) -> list[tuple[str, list[FieldValue | None]]]:
    """Rows of (field, one FieldValue per record or None), in schema order; fields empty
    in every record are dropped."""
    kinds = {type(r) for r in records}
    if len(kinds) != 1:
        names = ", ".join(f"{r.id} ({type(r).__name__})" for r in records)
        raise InputError(
            field="ids", value=names, allowed="records of one kind (all accelerators, all servers...)"
        )
    per_record = [{fv.field: fv for fv in field_values(r)} for r in records]
    fields: list[str] = []
    for table in per_record:
        for name in table:
            if name not in fields:
                fields.append(name)
    order = {n: i for i, n in enumerate(type(records[0]).model_fields)}
    fields.sort(key=lambda f: (order.get(f.split("[")[0], 999), f))
    return [(f, [t.get(f) for t in per_record]) for f in fields]


def headline(cat: Catalog, record: Sourced) -> dict[str, Any]:
    """The few values a list row shows, by kind (also part of --json list output)."""
    if isinstance(record, Accelerator):
        return {
            "vendor": record.vendor,
            "name": record.name,
            "hbm_gib": record.hbm_gib,
            "hbm_bandwidth_gbps": record.hbm_bandwidth_gbps,
            "bf16_dense_tflops": record.bf16_dense_tflops,
            "fp8_dense_tflops": record.fp8_dense_tflops,
            "intra_node_link": record.intra_node_link,
            "intra_node_link_gbps": record.intra_node_link_gbps,
            "tdp_w": record.tdp_w,
            "markets": list(record.markets),
        }
    if isinstance(record, Server):
        return {
            "name": record.name,
            "accelerator": record.accelerator,
            "accelerators_per_node": record.accelerators_per_node,
            "topology": record.topology,
            "compute_gbit_per_s": record.compute_gbit_per_s,
            "network": record.network,
            "cpu_cores": record.cpu_cores,
            "ram_gib": record.ram_gib,
        }
    if isinstance(record, Network):
        return {
            "name": record.name,
            "kind": record.kind,
            "nic_gbit_per_s": record.nic_gbit_per_s,
            "latency_us": record.latency_us,
            "bw_efficiency": record.term("bw_efficiency"),
            "alpha_us": record.term("alpha_us"),
        }
    if isinstance(record, Instance):
        acc = accelerator_of(cat, record)
        usd, basis = hourly_usd(cat, record)
        return {
            "provider": record.provider,
            "name": record.name,
            "server": record.server,
            "accelerator": acc.id if acc else None,
            "accelerator_count": record.accelerator_count,
            "tenancy": record.tenancy,
            "rdma_network": record.rdma_network,
            "market": record.market,
            "on_demand": _price_dict(record.price("on_demand_hourly", distressed=True)),
            "spot": _price_dict(record.price("spot_hourly", distressed=True)),
            "monthly": _price_dict(record.price("monthly", distressed=True)),
            "usd_per_hour": usd,
            "usd_per_hour_basis": basis,
            "usd_per_accelerator_hour": usd / record.accelerator_count if usd is not None else None,
        }
    if isinstance(record, Storage):
        price = record.prices[0] if record.prices else None
        return {
            "provider": record.provider,
            "name": record.name,
            "kind": record.kind,
            "market": record.market,
            "throughput_mb_s_per_tib": record.throughput_mb_s_per_tib,
            "max_throughput_gb_s": record.max_throughput_gb_s,
            "price_per_tib_month": _price_dict(price),
        }
    return {}


def hourly_usd(cat: Catalog, inst: Instance) -> tuple[float | None, str]:
    """The instance's hourly cost in USD: on-demand when published, else monthly / 730 h,
    else yearly / 8760 h; with the basis used ('' when no price is known)."""
    for kind in ("on_demand_hourly", "monthly", "yearly"):
        value = inst.hourly("USD", cat.rates, kind, distressed=cat.pricing.use_distressed)
        if value is not None:
            return value, kind
    return None, ""


def _price_dict(p: Price | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "amount": p.amount,
        "currency": p.currency,
        "region": p.region,
        "as_of": p.as_of,
        "confidence": p.confidence,
        "basis": p.basis,
        "distressed": p.distressed,
    }
