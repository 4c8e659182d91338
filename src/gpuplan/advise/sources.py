"""The sources section of a report: where each input of a plan came from, with its provenance kind.

A price is cited by its own source and date, as a list price or a market quote (with its confidence),
never as a datasheet.

Each entry has `what` and `source` in English and, where a translation exists, `what_zh` /
`source_zh` (labels from the message catalog); a report in Chinese shows those.
Catalog sources (vendor documents, price pages) are cited as published, untranslated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gpuplan.advise.facts import PlanFacts
from gpuplan.hardware import Catalog, Price
from gpuplan.i18n import LANGS, both, tr
from gpuplan.search.pricing import price_label, used_price

__all__ = ["plan_sources"]

# estimating-model labels the report builders pass -> their message keys
_MODEL_KEYS = {
    "step-time, memory and reliability model": "report.src.model_train",
    "per-step cost model and discrete-event simulation": "report.src.model_infer",
}
_PRICE_KIND = re.compile(r"^price (\w+): (.+)$")
_KIND_KEYS = {"on_demand": "report.src.kind.on_demand", "spot": "report.src.kind.spot",
              "monthly": "report.src.kind.monthly"}


def _entry(what: Mapping[str, str] | str, source: Mapping[str, str] | str, as_of: str, kind: str) -> dict[str, str]:
    out = {"what": what if isinstance(what, str) else what["en"],
           "source": source if isinstance(source, str) else source["en"], "as_of": as_of, "kind": kind}
    if not isinstance(what, str) and what["zh"] != what["en"]:
        out["what_zh"] = what["zh"]
    if not isinstance(source, str) and source["zh"] != source["en"]:
        out["source_zh"] = source["zh"]
    return out


def _price_label(what: str, inst_id: str) -> Mapping[str, str] | str:
    """'price on_demand: X' (training) or 'price X' (serving) in every language; other labels as given."""
    m = _PRICE_KIND.match(what)
    if m and m.group(2) == inst_id and m.group(1) in _KIND_KEYS:
        key = _KIND_KEYS[m.group(1)]
        return {lang: tr("report.src.price_kind", lang, kind=tr(key, lang), id=inst_id) for lang in LANGS}
    if what == f"price {inst_id}":
        return both("report.src.price", id=inst_id)
    return what


def _used(catalog: Catalog, what: str, inst_id: str) -> Price | None:
    """The catalog price behind 'price KIND: id' (training) or 'price id' (serving: on demand, else monthly)."""
    inst = catalog.instances[inst_id]
    m = _PRICE_KIND.match(what)
    kinds = {"on_demand": ("on_demand_hourly",), "spot": ("spot_hourly",), "monthly": ("monthly",)}.get(
        m.group(1) if m else "", ("on_demand_hourly", "monthly"))
    for kind in kinds:
        p = used_price(catalog, inst, kind)
        if p is not None:
            return p
    return None


def plan_sources(facts: PlanFacts, catalog: Catalog, *, prices: Iterable[tuple[str, str]],
                 model: tuple[str, str]) -> list[dict[str, str]]:
    """Accelerator, network and server datasheets, each price used (`(what, instance id)`) as a list price or
    market quote, the estimating model (`(what, where it is documented)`) and the advisor's data files."""
    acc = facts.accelerator
    out = [_entry(both("report.src.accelerator", id=acc.id), acc.source, str(acc.as_of), "datasheet")]
    for label, rec in (("network", facts.network), ("server", facts.server)):
        if rec is not None:
            out.append(_entry(both(f"report.src.{label}", id=rec.id), rec.source, str(rec.as_of), "datasheet"))
    for what, inst_id in dict.fromkeys(prices):
        inst = catalog.instances[inst_id]
        p = _used(catalog, what, inst_id)
        if p is None:
            out.append(_entry(_price_label(what, inst_id), inst.source, str(inst.as_of), "list_price"))
            continue
        source: dict[str, str] = {lang: price_label(p, lang) for lang in LANGS}
        out.append(_entry(_price_label(what, inst_id), source, p.as_of, p.basis))
    key = _MODEL_KEYS.get(model[0])
    out.append(_entry(both(key) if key else model[0], model[1], "", "estimated"))
    out.append(_entry(both("report.src.advisor_data"), both("report.src.advisor_data_source"), "", "data"))
    return out

