"""Rules on ecosystem, availability and compliance, reliability and growth.

Ecosystem risk, export notes, residency and compliance levels are data (advise/data/ecosystem.yaml,
compliance.yaml) with sources and dates. Power: node power = catalog server power, else
accelerators x TDP x `node_power_per_accelerator_tdp`; rack density = min(nodes, servers per rack)
x node power. Reliability uses the plan's Young (1974) / Daly (2006) interval and goodput.
"""

from __future__ import annotations

from typing import Any

from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import Figure, Finding, Provenance, Severity, Thresholds, advise_data, make_finding
from gpuplan.advise.rules_work import _ds, _est, _th
from gpuplan.i18n import Duration, tr

__all__ = ["MARKET_RULES", "effective_market", "export_notes", "hosting_market", "node_power_kw", "qlora_kernels"]

_ECO = "advise/data/ecosystem.yaml"
_COMP = "advise/data/compliance.yaml"


def _data(name: str, value: float | str | None, unit: str, source: str) -> Figure:
    return Figure(name=name, value=value, unit=unit, provenance="data", source=source)


def ecosystem(f: PlanFacts, th: Thresholds) -> list[Finding]:
    stacks = advise_data("ecosystem")["stacks"]
    stack = f.accelerator.software_stack
    data = stacks.get(stack, stacks["other"])
    if data["risk"] == "low":
        return []
    sev: Severity = "warn" if data["risk"] == "high" else "info"
    figs = (_data("porting_risk", data["risk"], "", f"{_ECO}: {data['source']}"),
            _data("poc_weeks", data["poc_weeks"], "weeks", _ECO))
    return [make_finding("ecosystem.porting", sev, figs, (), acc=f.accelerator.id, stack=stack,
                         detail=f.accelerator.software_stack_detail or stack, frameworks=data["frameworks"],
                         caveat=data["caveat"], weeks=data["poc_weeks"],
                         risk_en=tr(f"report.risk.{data['risk']}", "en"),
                         risk_zh=tr(f"report.risk.{data['risk']}", "zh"))]


def qlora_kernels(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """QLoRA runs its frozen base through bitsandbytes' 4-bit (NF4) kernels: on a stack where they do not exist the
    plan cannot run as planned (critical: not recommended), where they are experimental it is a risk (warn)."""
    if f.method != "qlora":
        return []
    stacks = advise_data("ecosystem")["stacks"]
    stack = f.accelerator.software_stack
    data = stacks.get(stack, stacks["other"])
    support = data.get("qlora_4bit", "none")
    if support == "official":
        return []
    sev: Severity = "critical" if support == "none" else "warn"
    figs = (_data("qlora_4bit_support", support, "", f"{_ECO}: {data.get('qlora_4bit_source', '')}"),)
    return [make_finding(f"method.qlora_{support}", sev, figs, (), acc=f.accelerator.id, stack=stack,
                         detail=f.accelerator.software_stack_detail or stack)]


def effective_market(f: PlanFacts) -> str:
    """The buyer's market: given (--market), else the residency region, else where the part is sold when that is
    one market, else global (the default buyer)."""
    if f.market:
        return f.market
    if f.requirements.data_residency:
        return f.requirements.data_residency
    return "cn" if tuple(f.accelerator.markets) == ("cn",) else "global"


def hosting_market(f: PlanFacts) -> str:
    """Where the plan's cards are: a rental's offer market, else the buyer's (an own cluster is hosted at home)."""
    if f.hosting == "rented" and f.hosting_market:
        return f.hosting_market
    return effective_market(f)


def export_notes(accelerator: str, *, buyer: str, where: str, rented: bool) -> list[tuple[dict[str, Any], str,
                                                                                         dict[str, Any]]]:
    """(note, the market it applies in, the text that applies: its `rented` one for a rental there) of every export
    note of compliance.yaml for `accelerator`, bought by a buyer in `buyer` with the cards in `where`."""
    out = []
    for note in advise_data("compliance")["export_notes"]:
        market = buyer if note.get("applies_by", "hosting") == "buyer" else where
        if market not in note["markets"] or not any(accelerator.startswith(p) for p in note["applies_to"]):
            continue
        # a rental in the market runs on the provider's cards already there: the rule limits new supply, not that
        text = (note.get("rented") if rented and where == market else None) or note
        out.append((note, market, text))
    return out


def export(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """Each export note applies where its `applies_by` says: an export control where the cards are (a rental in
    China is judged by China's rules whoever rents it), guidance on use in the buyer's market."""
    rented = f.hosting == "rented" and f.hosting_market is not None
    out: list[Finding] = []
    for note, market, text in export_notes(f.accelerator.id, buyer=effective_market(f), where=hosting_market(f),
                                           rented=rented):
        figs = (_data("date", note["date"], "", f"{_COMP}: {note['source']}"),)
        out.append(make_finding("market.export", text["severity"], figs, (), acc=f.accelerator.id, market=market,
                                note_en=text["en"], note_zh=text["zh"], date=note["date"]))
    return out


def residency(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """The data must stay in a region: the plan's cards (a rental's offer market, else the buyer's) must be there."""
    region = f.requirements.data_residency
    if not region:
        return []
    data = advise_data("compliance")["data_residency"].get(region)
    market = (f.hosting_market if f.hosting == "rented" and f.hosting_market else f.market) or "global"
    if data is None or market in data["markets"]:
        return []
    figs = (_data("data_residency", region, "", f"{_COMP}: {data['source']}"),)
    return [make_finding("market.residency", "warn", figs, (), region=region, market=market, rule_en=data["en"],
                         rule_zh=data["zh"])]


def compliance(f: PlanFacts, th: Thresholds) -> list[Finding]:
    levels = advise_data("compliance")["compliance_levels"]
    out: list[Finding] = []
    for level in f.requirements.compliance:
        data = levels.get(level)
        if data is None:
            continue
        if f.provider and f.provider in data["providers"]:
            continue
        figs = (Figure(name=level, value=", ".join(data["providers"]), unit="providers", provenance="data",
                       source=f"{_COMP}: {data['source']} (as of {data['as_of']})"),)
        out.append(make_finding("market.compliance", "warn", figs, (), level=data["name"],
                                provider=f.provider or "?", providers=", ".join(data["providers"])))
    return out


def node_power_kw(f: PlanFacts, th: Thresholds) -> tuple[float | None, str]:
    """Node power in kW and where it came from."""
    if f.server is not None and f.server.power_kw is not None:
        return f.server.power_kw, f"datasheet (catalog server {f.server.id})"
    if f.accelerator.tdp_w is None:
        return None, ""
    kw = f.gpus_per_node * f.accelerator.tdp_w * th.value("node_power_per_accelerator_tdp") / 1000.0
    return kw, "estimated (accelerators x TDP x node_power_per_accelerator_tdp)"


def ecc(f: PlanFacts, th: Thresholds) -> list[Finding]:
    consumer = advise_data("ecosystem")["consumer_parts"]
    days = (f.time_s or 0.0) / 86400.0
    if f.accelerator.id not in consumer["ids"] or days <= th.value("consumer_long_job_days"):
        return []
    figs = (_est("days", days, "days"), _th(th, "consumer_long_job_days"),
            Figure(name="consumer_part", value=f.accelerator.id, unit="", provenance="data",
                   source=f"{_ECO}: {consumer['source']}"))
    return [make_finding("reliability.ecc", "warn", figs, ("consumer_long_job_days",), acc=f.accelerator.id,
                         days=days)]


def cooling(f: PlanFacts, th: Thresholds) -> list[Finding]:
    kw, how = node_power_kw(f, th)
    if kw is None or f.hosting == "rented":  # a rental's racks are the provider's to power and cool
        return []
    sv = f.server
    racks = sv.racks if sv is not None else None
    if sv is not None and racks:  # a rack-scale system (NVL72, CloudMatrix): its power spreads over its own racks
        rack = kw / racks
        what_en = f"one {sv.id} of {kw:.0f} kW over {racks} rack(s)"
        what_zh = f"一套 {sv.id}，{kw:.0f} kW，占 {racks} 个机柜"
    else:
        per_rack = min(f.nodes, int(th.value("servers_per_rack")))
        rack = per_rack * kw
        what_en, what_zh = f"{per_rack} nodes of {kw:.1f} kW", f"{per_rack} 台 {kw:.1f} kW 节点"
    if rack <= th.value("liquid_cooling_rack_kw"):
        return []
    used = ("servers_per_rack", "liquid_cooling_rack_kw")
    prov: Provenance = "datasheet" if how.startswith("datasheet") else "estimated"
    figs = (Figure(name="node_power_kw", value=kw, unit="kW", provenance=prov, source=how),
            _est("rack_kw", rack, "kW", "rack-scale system power / its racks" if racks else
                 "node power x servers per rack"), _th(th, used[0]), _th(th, used[1]))
    owned = f.hosting == "owned"  # an own cluster: the team's racks; not known: say for whom it holds
    return [make_finding("reliability.cooling", "warn", figs, used, rack=rack,
                         limit=th.value("liquid_cooling_rack_kw"), what_en=what_en, what_zh=what_zh,
                         lead_en="Rack" if owned else "If you buy and host these servers: rack",
                         lead_zh="机柜" if owned else "若自购并托管这些服务器：机柜",
                         tail_en="" if owned else " On a cloud rental the provider cools the racks: nothing to do.",
                         tail_zh="" if owned else "租用云实例时由云厂商负责散热，无需处理。")]


def power(f: PlanFacts, th: Thresholds) -> list[Finding]:
    kw, how = node_power_kw(f, th)
    if kw is None:
        return []
    total = kw * f.nodes
    if total <= th.value("power_redundancy_min_kw"):
        return []
    figs = (_est("it_power_kw", total, "kW", how), _th(th, "power_redundancy_min_kw"))
    # a training run stops as a whole; independent serving replicas fail by feed
    fid = "reliability.power" if f.kind == "train" else "reliability.power_serve"
    return [make_finding(fid, "info", figs, ("power_redundancy_min_kw",), total=total, nodes=f.nodes)]


def checkpoint(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if f.goodput is None or f.goodput >= th.value("goodput_min"):
        return []
    figs = (_est("goodput", f.goodput, "fraction", "Young 1974 / Daly 2006 (plan figures)"),
            _est("mtbf_h", (f.mtbf_s or 0) / 3600, "h"), _est("checkpoint_interval_min",
                                                              (f.checkpoint_interval_s or 0) / 60, "min"),
            _est("checkpoint_write_s", f.checkpoint_write_s, "s"), _th(th, "goodput_min"))
    return [make_finding("reliability.checkpoint", "warn", figs, ("goodput_min",), goodput=f.goodput,
                         mtbf_h=(f.mtbf_s or 0) / 3600, interval_min=(f.checkpoint_interval_s or 0) / 60,
                         write_s=f.checkpoint_write_s or 0.0, devices=f.devices)]


def growth(f: PlanFacts, th: Thresholds) -> list[Finding]:
    g = f.growth
    if g is None:
        return []
    out: list[Finding] = []
    used = ("growth_factor",)
    if not g.model_fits:
        figs: tuple[Figure, ...] = (
        _est("devices_needed", g.model_devices_needed, "devices", "training planner, grown model re-planned"),
                _th(th, "growth_factor"))
        need = str(g.model_devices_needed) if g.model_devices_needed else f">{8 * f.devices}"
        out.append(make_finding("growth.model", "warn", figs, used, factor=g.factor, devices=f.devices, need=need,
                                acc=f.accelerator.id))
    if f.deadline_s:
        worst = max(t for t in (g.data_time_s, g.model_time_s, 0.0) if t is not None)
        if worst > f.deadline_s:
            figs2 = (_est("grown_days", worst / 86400, "days", "training planner, grown job re-planned"),
                    _ds("deadline_days", f.deadline_s / 86400, "days", "user input"), _th(th, "growth_factor"))
            out.append(make_finding("growth.deadline", "warn", figs2, used, factor=g.factor, days=Duration(worst),
                                    deadline=f.deadline_s / 86400))
    return out


MARKET_RULES = (ecosystem, qlora_kernels, export, residency, compliance, ecc, cooling, power, checkpoint, growth)
