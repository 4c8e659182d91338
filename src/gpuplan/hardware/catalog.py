"""The merged catalog: built-in data plus user layers, checked as a whole.

Layers apply in order (built-in, the user's config folder, then each --catalog DIR);
a later record with the same id and kind replaces the earlier one. After merging,
ids and aliases must be unique across every kind, and every reference (instance ->
server -> accelerator, server/instance -> network) must resolve. Any problem in any
layer means no catalog at all: `build_catalog` raises CatalogError listing them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, TypeVar

from gpuplan.errors import unknown_name
from gpuplan.hardware.issues import CatalogError, CatalogIssue
from gpuplan.hardware.parse import KINDS, Entry, ParsedFiles, RatesEntry
from gpuplan.hardware.schema_base import CurrencyRates, PricingPolicy, Sourced
from gpuplan.hardware.schema_devices import Accelerator, Server
from gpuplan.hardware.schema_offers import Instance, Network, Storage

__all__ = ["Catalog", "Layer", "Origin", "build_catalog"]

R = TypeVar("R", bound=Sourced)


@dataclass(frozen=True)
class Origin:
    """Where a record came from; `layer` is 'builtin' or 'user'."""

    layer: Literal["builtin", "user"]
    path: str
    line: int
    replaces_builtin: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "path": self.path,
            "line": self.line,
            "replaces_builtin": self.replaces_builtin,
        }


@dataclass(frozen=True)
class Layer:
    """One source of records: the built-in data or one user directory."""

    name: Literal["builtin", "user"]
    parsed: ParsedFiles


class Catalog:
    """Read-only view of every record, by kind, with id/alias lookup and provenance."""

    def __init__(
        self,
        records: Mapping[str, Mapping[str, Sourced]],
        origins: Mapping[str, Origin],
        rates: CurrencyRates,
        rates_origin: Origin,
        index: Mapping[str, str],
        pricing: PricingPolicy | None = None,
    ) -> None:
        self._records = {k: MappingProxyType(dict(v)) for k, v in records.items()}
        self._origins = MappingProxyType(dict(origins))
        self._index = MappingProxyType(dict(index))
        self.rates = rates
        self.rates_origin = rates_origin
        self.pricing = pricing or PricingPolicy()  # which prices planning may use (distressed or not)

    def with_pricing(self, policy: PricingPolicy) -> Catalog:
        """The same records under another pricing policy (e.g. planning with distressed prices too)."""
        out = Catalog({k: dict(v) for k, v in self._records.items()}, self._origins, self.rates,
                      self.rates_origin, self._index, policy)
        return out

    # --- typed views -------------------------------------------------------------
    @property
    def accelerators(self) -> Mapping[str, Accelerator]:
        return self._records["accelerators"]  # type: ignore[return-value]

    @property
    def servers(self) -> Mapping[str, Server]:
        return self._records["servers"]  # type: ignore[return-value]

    @property
    def networks(self) -> Mapping[str, Network]:
        return self._records["networks"]  # type: ignore[return-value]

    @property
    def instances(self) -> Mapping[str, Instance]:
        return self._records["instances"]  # type: ignore[return-value]

    @property
    def storage(self) -> Mapping[str, Storage]:
        return self._records["storage"]  # type: ignore[return-value]

    def records(self, kind: str) -> list[Sourced]:
        """Every record of `kind` (accelerators, servers, ...), sorted by id."""
        if kind not in self._records:
            raise unknown_name("kind", kind, self._records)
        table = self._records[kind]
        return [table[k] for k in sorted(table)]

    # --- lookup --------------------------------------------------------------------
    def resolve(self, name: str) -> str:
        """The canonical id for an id or alias (case-insensitive); InputError otherwise."""
        key = name.strip().lower()
        if key in self._index:
            return self._index[key]
        raise unknown_name("id", name, self._origins, aliases=self._index)

    def kind_of(self, record_id: str) -> str:
        for kind, table in self._records.items():
            if record_id in table:
                return kind
        raise unknown_name("id", record_id, self._origins)

    def get(self, name: str) -> Sourced:
        """Any record by id or alias."""
        rid = self.resolve(name)
        return self._records[self.kind_of(rid)][rid]

    def _typed(self, kind: str, name: str, cls: type[R]) -> R:
        key = name.strip().lower()
        rid = self._index.get(key)
        table = self._records[kind]
        if rid is None or rid not in table:
            raise unknown_name(kind.rstrip("s"), name, table, aliases=self._index)
        record = table[rid]
        assert isinstance(record, cls)
        return record

    def variants(self, name: str, kind: str = "accelerators") -> tuple[str, tuple[str, ...]] | None:
        """(chosen id, other ids) when `name` is an alias that several records of `kind` could be meant by.

        An alias such as 'h100' resolves to one record (h100-sxm5-80gb); the others are the records whose id
        or an alias extends it past a word boundary ('h100-pcie', 'h100 nvl', '910b' -> '910b2'; 'h20' is no
        prefix of 'h200'). None for an exact id, an unknown name or an alias with no such variant."""
        key = name.strip().lower()
        rid = self._index.get(key)
        table: Mapping[str, Sourced] = self._records.get(kind, {})
        if rid is None or rid not in table or key == rid.lower():
            return None
        others = []
        for other_id, record in table.items():
            if other_id == rid:
                continue
            names = (other_id, *getattr(record, "aliases", ()))
            if any(_extends(n.strip().lower(), key) for n in names):
                others.append(other_id)
        return (rid, tuple(sorted(others))) if others else None

    def accelerator(self, name: str) -> Accelerator:
        return self._typed("accelerators", name, Accelerator)

    def server(self, name: str) -> Server:
        return self._typed("servers", name, Server)

    def network(self, name: str) -> Network:
        return self._typed("networks", name, Network)

    def host_cards(self, inst: Instance) -> int | None:
        """The cards of one machine a per-card rental puts in one rental (`cards_per_host`, at most its server's
        accelerators); None for an instance that is its own node."""
        if inst.cards_per_host is None:
            return None
        return min(inst.cards_per_host, self.server(inst.server).accelerators_per_node)

    def rented_server(self, inst: Instance, cards: int) -> Server:
        """The node a rental of `cards` devices on `inst` supplies: its server for an instance that is a whole node,
        the instance's own vCPUs and RAM for an instance smaller than its server (a VM slice);
        for a per-card rental (`cards_per_host`), a pod of that host whose CPU cores and RAM are the instance's
        per-card figures times the cards (unknown where the offer states none) and whose local disk is the
        provider's allotment, not the host's NVMe drives (unknown)."""
        sv = self.server(inst.server)
        if inst.cards_per_host is None and inst.accelerator_count < sv.accelerators_per_node:
            # a VM slice of a larger server (1 x B200 of a DGX B200, 4 GB200 of an NVL72 rack): the renter's node
            # is the instance, with the vCPUs and RAM it states (unknown where it states none), not the host's
            return sv.model_copy(update={"cpu_cores": inst.vcpus, "ram_gib": inst.ram_gib, "local_nvme_tb": None})
        if inst.cards_per_host is None:
            return sv
        return sv.model_copy(update={
            "cpu_cores": inst.vcpus * cards if inst.vcpus else None,
            "ram_gib": inst.ram_gib * cards if inst.ram_gib else None,
            "local_nvme_tb": None})

    def instance(self, name: str) -> Instance:
        return self._typed("instances", name, Instance)

    def origin(self, record_id: str) -> Origin:
        return self._origins[record_id]

    def is_user(self, record_id: str) -> bool:
        return self._origins[record_id].layer == "user"


def _extends(name: str, prefix: str) -> bool:
    """`name` is `prefix` followed by more at a word boundary: a separator, or a letter/digit change."""
    if len(name) <= len(prefix) or not name.startswith(prefix) or not prefix:
        return False
    nxt, last = name[len(prefix)], prefix[-1]
    return not nxt.isalnum() or not last.isalnum() or nxt.isalpha() != last.isalpha()


def _merge(layers: Sequence[Layer], issues: list[CatalogIssue]) -> tuple[dict[str, Entry], dict[str, Origin]]:
    merged: dict[str, Entry] = {}
    origins: dict[str, Origin] = {}
    for layer in layers:
        seen: dict[str, Entry] = {}
        for e in layer.parsed.entries:
            rid = e.record.id
            if rid in seen:
                first = seen[rid]
                issues.append(
                    CatalogIssue(
                        e.path,
                        e.line_of("id"),
                        f"duplicate id (first at {first.path}:{first.line})",
                        kind=e.kind,
                        record=rid,
                        field="id",
                    )
                )
                continue
            seen[rid] = e
            prev = merged.get(rid)
            if prev is not None and prev.kind != e.kind:
                issues.append(
                    CatalogIssue(
                        e.path,
                        e.line_of("id"),
                        f"id already names a record of kind {prev.kind}",
                        kind=e.kind,
                        record=rid,
                        field="id",
                    )
                )
                continue
            builtin_before = prev is not None and origins[rid].layer == "builtin"
            merged[rid] = e
            origins[rid] = Origin(
                layer.name,
                e.path,
                e.line,
                replaces_builtin=builtin_before or (prev is not None and origins[rid].replaces_builtin),
            )
    return merged, origins


def _index(merged: Mapping[str, Entry], issues: list[CatalogIssue]) -> dict[str, str]:
    index: dict[str, str] = {}
    for rid in merged:
        index[rid] = rid
    for rid, e in merged.items():
        for alias in e.record.aliases:
            key = alias.strip().lower()
            owner = index.get(key)
            if owner is not None and owner != rid:
                issues.append(
                    CatalogIssue(
                        e.path,
                        e.line_of("aliases"),
                        f"alias {alias!r} already names {owner!r}",
                        kind=e.kind,
                        record=rid,
                        field="aliases",
                    )
                )
                continue
            index[key] = rid
    return index


def _ref(
    e: Entry,
    field: str,
    target: str | None,
    table: Mapping[str, Entry],
    kind: str,
    issues: list[CatalogIssue],
) -> None:
    if target is None:
        return
    hit = table.get(target)
    if hit is None or hit.kind != kind:
        near = unknown_name(field, target, [k for k, v in table.items() if v.kind == kind]).hint
        issues.append(
            CatalogIssue(
                e.path,
                e.line_of(field),
                f"unknown {kind.rstrip('s')} id {target!r}" + (f"; {near}" if near else ""),
                kind=e.kind,
                record=e.record.id,
                field=field,
            )
        )


def _check_refs(merged: Mapping[str, Entry], issues: list[CatalogIssue]) -> None:
    for e in merged.values():
        rec = e.record
        if isinstance(rec, Server):
            _ref(e, "accelerator", rec.accelerator, merged, "accelerators", issues)
            _ref(e, "network", rec.network, merged, "networks", issues)
        elif isinstance(rec, Instance):
            _ref(e, "server", rec.server, merged, "servers", issues)
            _ref(e, "rdma_network", rec.rdma_network, merged, "networks", issues)
            srv = merged.get(rec.server)
            if srv is None or not isinstance(srv.record, Server):
                continue
            # an instance holds at most its server's scale-up domain (a whole CloudMatrix384 is 384), not a fixed cap
            per_node = srv.record.accelerators_per_node
            for name, count in (("accelerator_count", rec.accelerator_count), ("cards_per_host", rec.cards_per_host)):
                if count is not None and count > per_node:
                    issues.append(CatalogIssue(e.path, e.line_of(name),
                                               f"{name} {count:g} exceeds the server's {per_node} per node",
                                               kind=e.kind, record=rec.id, field=name))


def _pick_rates(layers: Sequence[Layer], issues: list[CatalogIssue]) -> tuple[CurrencyRates, Origin] | None:
    chosen: tuple[CurrencyRates, Origin] | None = None
    for layer in layers:
        entries: list[RatesEntry] = layer.parsed.rates
        if len(entries) > 1:
            issues.append(
                CatalogIssue(
                    entries[1].path,
                    entries[1].line,
                    f"currency is set twice in one layer (also {entries[0].path})",
                    kind="currency",
                )
            )
        if entries:
            chosen = (entries[-1].rates, Origin(layer.name, entries[-1].path, entries[-1].line))
    return chosen


def build_catalog(layers: Sequence[Layer]) -> Catalog:
    """Merge `layers` in order and check the whole; CatalogError lists every problem."""
    issues: list[CatalogIssue] = [i for layer in layers for i in layer.parsed.issues]
    merged, origins = _merge(layers, issues)
    index = _index(merged, issues)
    _check_refs(merged, issues)
    rates = _pick_rates(layers, issues)
    if rates is None:
        issues.append(
            CatalogIssue("<catalog>", None, "no currency section with cny_per_usd", kind="currency")
        )
    if issues:
        raise CatalogError(_sorted(issues))
    assert rates is not None
    records: dict[str, dict[str, Sourced]] = {k: {} for k in KINDS}
    for rid, e in merged.items():
        records[e.kind][rid] = e.record
    policies = [p for layer in layers for p in layer.parsed.pricing]
    return Catalog(records, origins, rates[0], rates[1], index, policies[-1] if policies else None)


def _sorted(issues: Iterable[CatalogIssue]) -> list[CatalogIssue]:
    return sorted(issues, key=lambda i: (i.path, i.line or 0, i.field))
