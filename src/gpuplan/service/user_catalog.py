"""A request's own catalog records: price quotes and custom hardware, in the catalog's own schema.

`UserCatalog` holds records as a `--catalog DIR` file holds them (`accelerators`, `servers`, `instances`), each
validated by the catalog's pydantic models, so the web and the CLI share one schema. `catalog_for` plans on the
built-in catalog (and the server's own user folder) plus these records as one more user layer, in memory: the
shared catalog files are never written. `user_catalog_yaml` is the same records as a file for `--catalog DIR`.
`quotes_from_form` turns the web form's quote fields into records: a quote of an accelerator becomes an
instance of one of its catalog servers (or of a server made for a custom accelerator) with one on-demand price.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan.errors import InputError
from gpuplan.hardware import Accelerator, Catalog, CatalogError, Instance, Server

__all__ = ["LABEL", "PROVIDER", "UserCatalog", "catalog_for", "quotes_from_form", "user_catalog_yaml"]

LABEL = "<your quotes>"  # the origin path of these records in the merged catalog
PROVIDER = "your-quote"
FORM_PREFIXES = ("quote_", "custom_")


class UserCatalog(BaseModel):
    """Catalog records that come with one request (the sections of a `--catalog DIR` file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accelerators: list[Accelerator] = Field(default_factory=list, max_length=4)
    servers: list[Server] = Field(default_factory=list, max_length=4)
    instances: list[Instance] = Field(default_factory=list, max_length=16)

    def records(self) -> dict[str, list[Any]]:
        return {"accelerators": list(self.accelerators), "servers": list(self.servers),
                "instances": list(self.instances)}

    def is_empty(self) -> bool:
        return not (self.accelerators or self.servers or self.instances)


def catalog_for(extra: UserCatalog | None) -> Catalog:
    """The catalog a request plans on, as `--catalog DIR` would give it; InputError naming the first record field
    that does not fit the catalog (an unknown server id, an id that names a record of another kind...)."""
    from gpuplan.hardware import load_catalog

    if extra is None or extra.is_empty():
        return load_catalog()
    try:
        return load_catalog(records=extra.records(), label=LABEL)
    except CatalogError as exc:
        first = next((i for i in exc.issues if i.path == LABEL), exc.issues[0] if exc.issues else None)
        if first is None:
            raise
        where = f"user_catalog.{first.kind or 'records'}"
        if first.line:
            where += f"[{first.line - 1}]"
        raise InputError(field=where + (f".{first.field}" if first.field else ""), value=first.record or None,
                         allowed=first.message, hint="records must fit the catalog as a --catalog DIR file does "
                         "(gpuplan catalog validate DIR)") from None


def user_catalog_yaml(extra: UserCatalog) -> str:
    """The records as a catalog file (values left at their defaults left out)."""
    import yaml

    data = {k: [r.model_dump(mode="json", exclude_defaults=True) for r in v] for k, v in extra.records().items() if v}
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _num(form: Mapping[str, Any], key: str, required: bool = False) -> float | None:
    raw = str(form.get(key) or "").strip()
    if not raw:
        if required:
            raise InputError(field=key, value=None, allowed="a positive number", hint="fill it in or clear the quote")
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InputError(field=key, value=raw[:40], allowed="a positive number") from None
    if not value > 0 or value == float("inf"):
        raise InputError(field=key, value=raw[:40], allowed="a positive number")
    return value


def _validated(cls: type[BaseModel], data: dict[str, Any], prefix: str) -> Any:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        from gpuplan.service.checks import input_error_from_validation

        raise input_error_from_validation(exc, prefix) from None


def _custom(form: Mapping[str, Any], when: str, source: str) -> tuple[Accelerator, Server] | None:
    acc_id = str(form.get("custom_id") or "").strip().lower()
    if not acc_id:
        return None
    per_node = int(_num(form, "custom_per_node") or 8)
    link = _num(form, "custom_link_gbps")
    acc = _validated(Accelerator, {
        "id": acc_id, "source": source, "as_of": when, "confidence": "low", "vendor": "custom",
        "name": str(form.get("custom_name") or acc_id)[:100], "hbm_gib": _num(form, "custom_hbm_gib", True),
        "hbm_bandwidth_gbps": _num(form, "custom_hbm_bandwidth_gbps", True),
        "bf16_dense_tflops": _num(form, "custom_bf16_tflops", True), "tdp_w": _num(form, "custom_tdp_w"),
        "flops_basis": "dense_published", "intra_node_link": "other" if link else "pcie",
        "intra_node_link_gbps": link, "fully_connected_domain": per_node if link else 1,
        "software_stack": "cuda", "markets": ["cn", "global"],
        "frameworks": {"pytorch": "native", "deepspeed": "native", "megatron": "native", "vllm": "native"}}, "custom_")
    srv = _validated(Server, {"id": f"{acc_id}-node", "source": source, "as_of": when, "confidence": "low",
                              "vendor": "custom", "name": f"{acc.name} x{per_node}", "accelerator": acc_id,
                              "accelerators_per_node": per_node, "topology": "other", "network": "ib-ndr-400"},
                     "custom_")
    return acc, srv


def quotes_from_form(form: Mapping[str, Any], cat: Catalog) -> UserCatalog | None:
    """The records of the form's quote fields (None when the quote is left empty): the price is per GPU-hour,
    stored as the on-demand price of a whole node of the quoted accelerator."""
    acc_name = str(form.get("quote_accelerator") or "").strip()
    if not acc_name and not str(form.get("custom_id") or "").strip():
        return None
    when = str(form.get("quote_as_of") or "").strip() or _today()
    source = (str(form.get("quote_source") or "").strip() or "quoted by you")[:200]
    custom = _custom(form, when, source)
    if not acc_name and custom is not None:
        acc_name = custom[0].id
    if not acc_name:
        raise InputError(field="quote_accelerator", value=None, allowed="an accelerator id or alias",
                         hint="name the accelerator the price is for")
    if custom is not None and acc_name.lower() == custom[0].id:
        acc_id, server = custom[0].id, custom[1]
    else:
        try:
            acc_id = cat.accelerator(acc_name).id
        except InputError as exc:
            raise InputError(field="quote_accelerator", value=acc_name[:100], allowed=exc.allowed,
                             hint=exc.hint) from None
        servers = sorted((s for s in cat.servers.values() if s.accelerator == acc_id),
                         key=lambda s: (-s.accelerators_per_node, s.id))
        if not servers:
            raise InputError(field="quote_accelerator", value=acc_name, allowed="an accelerator with a server in the "
                             "catalog", hint="or describe it as a custom accelerator below")
        server = servers[0]
    price = _num(form, "quote_price", True)
    assert price is not None
    per_node = server.accelerators_per_node
    network = cat.networks.get(server.network or "") if custom is None else cat.networks.get("ib-ndr-400")
    inst = _validated(Instance, {
        "id": f"quote-{acc_id}", "source": source, "as_of": when, "confidence": "medium", "provider": PROVIDER,
        "name": f"your quote: {acc_id} x{per_node}", "server": server.id, "accelerator_count": per_node,
        "tenancy": "bare_metal", "market": str(form.get("quote_market") or "global"),
        "rdma_network": network.id if network is not None else None,
        "rdma_gbit_per_s": network.nic_gbit_per_s * per_node if network is not None else None,
        "max_devices": int(_num(form, "quote_max_devices") or 0) or None,
        "prices": [{"kind": "on_demand_hourly", "amount": round(price * per_node, 6),
                    "currency": str(form.get("quote_currency") or "USD"), "source": source, "as_of": when,
                    "confidence": "medium", "basis": "market_quote"}]}, "quote_")
    return UserCatalog(accelerators=[custom[0]] if custom else [], servers=[custom[1]] if custom else [],
                       instances=[inst])


def _today() -> str:
    from datetime import date

    return date.today().isoformat()
