"""The sources section of a report: where each input of a plan came from, with its provenance kind."""

from __future__ import annotations

from collections.abc import Iterable

from gpuplan.advise.facts import PlanFacts
from gpuplan.hardware import Catalog

__all__ = ["plan_sources"]


def plan_sources(facts: PlanFacts, catalog: Catalog, *, prices: Iterable[tuple[str, str]],
                 model: tuple[str, str]) -> list[dict[str, str]]:
    """Accelerator, network and server datasheets, each price used (`(what, instance id)`), the
    estimating model (`(what, where it is documented)`) and the advisor's data files."""
    acc = facts.accelerator
    out = [{"what": f"accelerator {acc.id}", "source": acc.source, "as_of": str(acc.as_of), "kind": "datasheet"}]
    for label, rec in (("network", facts.network), ("server", facts.server)):
        if rec is not None:
            out.append({"what": f"{label} {rec.id}", "source": rec.source, "as_of": str(rec.as_of),
                        "kind": "datasheet"})
    for what, inst_id in dict.fromkeys(prices):
        inst = catalog.instances[inst_id]
        out.append({"what": what, "source": inst.source, "as_of": str(inst.as_of), "kind": "datasheet"})
    out.append({"what": model[0], "source": model[1], "as_of": "", "kind": "estimated"})
    out.append({"what": "advisor thresholds, ecosystem, compliance, TCO inputs",
                "source": "src/gpuplan/advise/data/*.yaml (each entry has its own source)", "as_of": "",
                "kind": "data"})
    return out
