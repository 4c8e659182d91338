"""The report document of a training plan or a comparison: plain JSON, both languages, no rendering.

`training_report` turns a planner result into the document that the Markdown and HTML renderers
(render/report_md.py, render/report_html.py) draw and that `gpuplan report FILE.json` re-renders:
the recommendation and runners-up, the Pareto front, every plan for the cost-vs-time chart,
memory and step-time breakdowns, the scaling curve (the planner re-run at every cluster size of
the recommended part), findings, TCO, assumptions, calibration terms and sources. Every number
carries its provenance (measured / estimated / datasheet / data).

The recommendation rule itself (`recommend_rule`, printed as applied) is advise/recommend_rule.py. A critical
export, residency or compliance finding for the requested market removes a part from the recommendation (it stays
listed, marked).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuplan import __version__
from gpuplan.advise.adapt_train import training_facts
from gpuplan.advise.buy_option import buy_option
from gpuplan.advise.engine import advise
from gpuplan.advise.facts import PlanFacts, Requirements
from gpuplan.advise.findings import Thresholds, advise_data, default_thresholds
from gpuplan.advise.recommend_rule import recommend, recommend_rule
from gpuplan.advise.rules_market import node_power_kw
from gpuplan.advise.sources import plan_sources
from gpuplan.advise.tco import tco, tco_inputs
from gpuplan.advise.trust import (
    buyer_market,
    capacity_caveat,
    caveats,
    deadline_caveat,
    in_buyer_market,
    is_confirmed,
    memory_caveat,
    plan_markets,
    split_by_market,
)
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.hardware import Catalog
from gpuplan.search.cluster import ClusterHardware, cluster_hardware, usual_network
from gpuplan.search.train_planner import billed_by_month
from gpuplan.search.train_search import PlanConstraints, PlanResult, plan_training
from gpuplan.units import GIB
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["BLOCKING_FINDINGS", "REPORT_SCHEMA", "SCENARIO_MARK", "blocked_finding", "choose", "compare_training",
           "is_scenario", "max_days",
           "option_key", "plan_hardware", "plan_summary", "recommend", "recommend_rule", "target_days",
           "training_report"]

REPORT_SCHEMA = "gpuplan.report/1"
MEMORY_PARTS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "kv_cache_bytes",
                "other_bytes")



# A critical finding of these rules (export control, residency, compliance for the requested market)
# removes a plan from the recommendation; the plan stays listed, marked.
BLOCKING_FINDINGS = ("market.export", "market.residency", "market.compliance", "method.qlora_none")
# an offer priced only at distressed (surplus-capacity) rents: planned and listed as a scenario, never recommended
SCENARIO_MARK = "price.distressed"


def is_scenario(plan: Mapping[str, Any]) -> bool:
    """Does `plan` run on an offer priced only at distressed rents (search/offers.py `scenario`)?"""
    return bool((plan.get("hardware_option") or {}).get("scenario"))


def _blocking(findings: Sequence[Any]) -> list[Any]:
    return [f for f in findings if f.severity == "critical" and f.id in BLOCKING_FINDINGS]


def target_days(cons: PlanConstraints, th: Thresholds) -> float:
    """The time the recommendation aims at: the deadline, but never beyond `recommend_target_days`."""
    soon = th.value("recommend_target_days")
    return min(cons.deadline_days, soon) if cons.deadline_days else soon


def max_days(cons: PlanConstraints, th: Thresholds) -> float:
    """The longest run a priced plan may take before an own cluster is preferred: the deadline, else
    `recommend_max_days`."""
    return cons.deadline_days or th.value("recommend_max_days")


def _layout_text(lay: Mapping[str, Any]) -> str:
    return (f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} cp{lay['cp']} ep{lay['ep']} vpp{lay['vpp']} "
            f"zero{lay['zero_stage']} mb{lay['micro_batch']} recompute={lay['recompute']}")


def plan_summary(p: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of one plan that tables show, with provenance."""
    lay = p["layout"]
    return {"accelerator": p["accelerator"], "devices": p["devices"],
            "nodes": max(1, -(-int(p["devices"]) // int(lay["gpus_per_node"]))), "layout": _layout_text(lay),
            "days": p["time_to_train_s"] / 86400.0 if p.get("time_to_train_s") else None,
            "cost_usd": p.get("cost_usd"), "mfu": p["mfu"], "tokens_per_s": p["tokens_per_s"],
            "step_time_s": p["step_time_s"], "memory_gib": p["memory"]["total_bytes"] / GIB,
            "bottleneck": p.get("bottleneck", ""), "network": p["assumptions"].get("network"),
            "time_s": p.get("time_to_train_s"), "device_hours": p.get("device_hours"),
            "offer": (p.get("hardware_option") or {}).get("offer"), "billed_by_month": billed_by_month(p),
            "hardware_option": p.get("hardware_option"),
            "provenance": _provenance(p), "band": p.get("band", {}), "band_basis": p.get("band_basis", {}),
            "confidence": p.get("confidence"), "purchase_usd": p.get("purchase_usd"),
            "purchase": p.get("purchase")}


def _provenance(p: Mapping[str, Any]) -> dict[str, str]:
    """Per figure: estimated (and on which efficiency), or estimated from which kind of price."""
    conf = p.get("confidence") or {}
    eff = (conf.get("efficiency") or {}).get("provenance", "default")
    price = conf.get("price")
    buy = price is not None and price.get("kind") == "purchase"
    cost = ("unknown: no price" if price is None or buy else
            f"estimated from a {str(price['basis']).replace('_', ' ')} ({price['confidence']} confidence)")
    out = {"days": f"estimated ({eff} efficiency)", "cost_usd": cost, "mfu": f"estimated ({eff} efficiency)",
           "memory_gib": "estimated"}
    if buy and price is not None:  # an own cluster: no rental cost, a purchase at the server's list price
        out["purchase_usd"] = f"quoted: catalog list price of {price['instance']} ({price['confidence']} confidence)"
    return out


def _tco(facts: PlanFacts, catalog: Catalog, cal: Calibration, th: Thresholds,
         overrides: Mapping[str, float] | None) -> dict[str, Any] | None:
    if not facts.time_s or facts.checkpoint_write_s is None or facts.mtbf_s is None:
        return None
    kw, _ = node_power_kw(facts, th)
    res = tco(catalog=catalog, accelerator=facts.accelerator.id, devices=facts.devices,
              gpus_per_node=facts.gpus_per_node, device_hours=facts.devices * facts.time_s / 3600.0,
              time_s=facts.time_s, prices=facts.price_usd_per_device_hour,
              checkpoint_write_s=facts.checkpoint_write_s, mtbf_s=facts.mtbf_s,
              restart_s=cal.value("restart_overhead_s"), server=facts.server, node_power_kw=kw,
              inp=tco_inputs(facts.market, pue=cal.value("pue"), overrides=overrides), market=facts.market)
    return res.to_json()


def _calibration_rows(terms: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "value": t["value"], "unit": t.get("unit", ""), "source": t["source"],
             "provenance": "measured" if str(t["source"]).startswith("gpuplan calibrate") else "data"}
            for name, t in terms.items()]


def plan_hardware(plan: Mapping[str, Any], catalog: Catalog) -> ClusterHardware:
    """The cluster a plan ran on: its hardware option's node shape and fabric (no fabric within one node)."""
    opt = plan.get("hardware_option") or {}
    gpn = int(plan["layout"]["gpus_per_node"])
    net = opt.get("network") if "network" in opt else usual_network(catalog, plan["accelerator"])[0]
    if plan["devices"] <= gpn:
        net = None
    return cluster_hardware(catalog, plan["accelerator"], net, gpus_per_node=gpn,
                            nics_per_node=opt.get("nics_per_node"))


def _facts_for(plan: dict[str, Any], spec: ModelSpec, job: TrainingJob, catalog: Catalog, cal: Calibration,
               th: Thresholds, cons: PlanConstraints, tokens: float, requirements: Requirements | None,
               light: bool = False) -> PlanFacts:
    return training_facts(spec, job, plan_hardware(plan, catalog), plan, catalog=catalog, tokens=tokens,
                          calibration=cal, thresholds=th, deadline_days=cons.deadline_days, market=cons.market,
                          provider=cons.provider, requirements=requirements, layout_family=cons.layout_family,
                          growth=not light, fabric_variants=not light)


def option_key(plan: Mapping[str, Any]) -> str:
    """What a blocked plan is listed under in `not_recommended`: its accelerator, and for a rental also the offer.
    A rule can read where the cards are (export control: renting stock already in a market is not buying new), so a
    blocked own cluster of a part does not rule out that part's rentals, nor a blocked rental the part's clusters."""
    option = plan.get("hardware_option")
    # a plan carries its hardware option; a plan_summary only the offer it rents (None for an own cluster)
    offer = (option.get("offer") if option.get("kind") == "offer" else None) if option else plan.get("offer")
    return f"{plan['accelerator']} ({offer})" if offer else str(plan["accelerator"])


def blocked_finding(plan: Mapping[str, Any], blocked: Mapping[str, str]) -> str | None:
    """The blocking finding that rules `plan`'s hardware option out (`not_recommended`), or None."""
    return blocked.get(option_key(plan))


def choose(plans: Sequence[dict[str, Any]], spec: ModelSpec, job: TrainingJob, catalog: Catalog, cal: Calibration,
           th: Thresholds, cons: PlanConstraints, tokens: float, requirements: Requirements | None,
           light: bool = False, skip_blocked: bool = True
           ) -> tuple[dict[str, Any] | None, dict[str, Any], PlanFacts | None, Sequence[Any]]:
    """(recommended plan, rule as applied, its facts, its findings): the rule of `recommend_rule`, skipping
    accelerators whose plan draws a blocking finding (export control, residency, compliance). `light`: only the
    plan matters (an alternative), so its facts leave out growth and the fabric variants, which no blocking
    finding reads. `skip_blocked=False`: the rule's first pick whatever it draws (the plan a comparison shows,
    marked, for a part the rule rules out)."""
    tol = th.value("recommend_cost_tolerance")
    target = target_days(cons, th)
    excluded: dict[str, tuple[str, str]] = {}  # option_key -> (accelerator, finding)
    pool = [p for p in plans if not is_scenario(p)]  # distressed-rent scenarios are listed, never recommended
    # the buyer's market (--market, else the residency region, else global): another market's plans are shown
    # beside the recommendation (best_per_market), not chosen for a buyer who cannot rent them (issue 37)
    residency = requirements.data_residency if requirements else None
    buyer = buyer_market(cons.market, residency)
    drawn = any(buyer in plan_markets(p, catalog) for p in pool)  # else every market's plans (in_buyer_market)
    pool = in_buyer_market(pool, catalog, cons.market, residency)
    while pool:
        picked = recommend_rule(pool, tol, target, max_days(cons, th), th.value("recommend_dominance_margin"),
                                deadline_days=cons.deadline_days)
        if picked is None:
            break
        best, rule = picked
        facts = _facts_for(best, spec, job, catalog, cal, th, cons, tokens, requirements, light)
        findings = advise(facts, th)
        blocks = _blocking(findings)
        if not blocks or not skip_blocked:
            rule["deadline_days"] = cons.deadline_days
            rule["buyer_market"] = buyer
            rule["buyer_market_default"] = cons.market is None and residency is None and drawn
            rule["excluded"] = [{"accelerator": a, "option": k, "finding": f} for k, (a, f) in excluded.items()]
            return best, rule, facts, findings
        key = option_key(best)
        excluded[key] = (best["accelerator"], blocks[0].id)
        pool = [p for p in pool if option_key(p) != key]
    rule = {"measure": None, "recommend_cost_tolerance": tol, "target_days": target, "outcome": "none",
            "deadline_days": cons.deadline_days, "buyer_market": buyer,
            "excluded": [{"accelerator": a, "option": k, "finding": f} for k, (a, f) in excluded.items()]}
    return None, rule, None, []


def training_report(spec: ModelSpec, job: TrainingJob, catalog: Catalog, cons: PlanConstraints, *, tokens: float,
                    result: PlanResult | None = None, calibration: Calibration | None = None,
                    thresholds: Thresholds | None = None, requirements: Requirements | None = None,
                    tco_overrides: Mapping[str, float] | None = None, runners_up: int = 4) -> dict[str, Any]:
    """The report document of `plan train` (see the module docstring)."""
    cal = calibration or default_calibration()
    th = thresholds or default_thresholds()
    res = result or plan_training(spec, job, catalog, cons, tokens=tokens, calibration=cal)
    tol = th.value("recommend_cost_tolerance")
    target = target_days(cons, th)
    best, rule, facts, findings = choose(res.plans, spec, job, catalog, cal, th, cons, tokens, requirements)
    blocked = {e["option"]: e["finding"] for e in rule["excluded"]}
    doc: dict[str, Any] = {"schema": REPORT_SCHEMA, "kind": "train", "generated": dt.date.today().isoformat(),
                           "gpuplan_version": __version__, "job": _job(spec, job, tokens, cons),
                           "candidates_evaluated": res.candidates_evaluated, "rejected": res.rejected,
                           "not_recommended": blocked}
    if best is None or facts is None:
        doc.update(recommendation=None, runners_up=[], pareto=[], plans=[], scaling=[], findings=[], rule=rule)
        return doc
    others: dict[str, list[dict[str, Any]]] = {}
    for p in res.plans:
        if p["accelerator"] != best["accelerator"]:
            others.setdefault(p["accelerator"], []).append(p)
    runners = [r for r in (recommend(v, tol, target, max_days(cons, th), th.value("recommend_dominance_margin"),
                                     deadline_days=cons.deadline_days)
                           for v in others.values()) if r is not None]
    runners.sort(key=lambda p: (p.get("cost_usd") is None, p.get("cost_usd") or 0.0, p["time_to_train_s"]))
    # every listed part is judged as the recommendation is, not only those the rule reached before its pick: the best
    # plan of each part's own clusters and of each of its offers (a rule reads where the cards are: option_key; a
    # B200 rented in China is blocked while the B200 rented elsewhere that the rule picked is not) is checked, and
    # a blocked one is marked wherever that option is listed (the same mark compare shows)
    options: dict[str, list[dict[str, Any]]] = {}
    for p in res.plans:
        options.setdefault(option_key(p), []).append(p)
    for key, group in options.items():
        if any(is_scenario(p) for p in group):  # priced at distressed rents only: a scenario, marked as such
            blocked[key] = SCENARIO_MARK
            continue
        r = recommend(group, tol, target, max_days(cons, th), th.value("recommend_dominance_margin"),
                      deadline_days=cons.deadline_days)
        if r is None or option_key(r) in blocked or option_key(r) == option_key(best):
            continue
        hits = _blocking(advise(_facts_for(r, spec, job, catalog, cal, th, cons, tokens, requirements, light=True),
                                th))
        if hits:
            blocked[option_key(r)] = hits[0].id
    scaling = [plan_summary(p) for p in sorted(
        (p for p in res.plans if p["accelerator"] == best["accelerator"]), key=lambda p: p["devices"])]
    if len(scaling) < 3:  # deadline or budget cut the curve: re-run the planner for this part alone
        alone = plan_training(spec, job, catalog, replace(
            cons, deadline_days=None, budget_usd=None, accelerators=(best["accelerator"],)), tokens=tokens,
            calibration=cal)
        scaling = [plan_summary(p) for p in sorted(alone.plans, key=lambda p: p["devices"])]
    mem = best["memory"]
    doc.update(
        recommendation=_with_trust(best, rule, res.plans, spec, job, catalog, cal, th, cons, tokens, requirements,
                                   findings),
        runners_up=[{**plan_summary(p), "not_recommended": blocked_finding(p, blocked)}
                    for p in runners[:runners_up]],
        pareto=[plan_summary(p) for p in res.pareto],
        plans=[{"accelerator": p["accelerator"], "devices": p["devices"], "days": p["time_to_train_s"] / 86400.0,
                "cost_usd": p.get("cost_usd"), "purchase_usd": p.get("purchase_usd"), "mfu": p["mfu"],
                "band_days": (p.get("band") or {}).get("time_to_train_days"),
                "band_cost_usd": (p.get("band") or {}).get("cost_usd"),
                "confidence": (p.get("confidence") or {}).get("level")} for p in res.plans],
        scaling=scaling,
        memory_gib={k.removesuffix("_bytes"): mem[k] / GIB for k in MEMORY_PARTS if mem.get(k)},
        device_memory_gib=facts.device_memory_bytes / GIB,
        breakdown_s=best["breakdown_s"],
        findings=[f.to_json() for f in findings],
        tco=_tco(facts, catalog, cal, th, tco_overrides),
        buy_option=buy_option(res.plans, blocked, target),  # owning instead of renting, when a server has a price
        reliability=best["reliability"],
        data_pipeline={k: v for k, v in best["data_pipeline"].items() if k != "note"},
        assumptions={"mfu_convention": best["assumptions"]["mfu_convention"],
                     "network": best["assumptions"]["network"], "nics_per_node": best["assumptions"]["nics_per_node"],
                     "gpus_per_node": best["layout"]["gpus_per_node"], "server": facts.server.id if facts.server
                     else None, "memory_model": mem.get("assumptions", {}).get("activation_model", "")},
        calibration=_calibration_rows(best["assumptions"]["calibration"]),
        thresholds=th.used(*sorted({t for f in findings for t in f.thresholds})),
        sources=plan_sources(facts, catalog, prices=[(f"price {kind}: {inst}", inst) for kind, inst in
                                                    (best.get("cost", {}).get("instances") or {}).items() if inst],
                             model=("step-time, memory and reliability model", "docs/training.md, docs/memory.md")),
    )
    return doc


# a critical finding of these rules does not block a plan (its time and cost already pay the TCP fabric), but the
# recommendation then also names the best plan that needs no cross-node TCP: RDMA between nodes, or one node
_TCP_CRITICAL = ("net.rdma_required", "net.rdma_required_unquantified")


def _without_tcp_risk(plan: Mapping[str, Any], catalog: Catalog) -> bool:
    """A plan on one node or on an RDMA fabric between nodes (no multi-node TCP)."""
    net = plan_hardware(plan, catalog).network
    return net is None or bool(net.rdma)


def _with_trust(best: dict[str, Any], rule: dict[str, Any], plans: Sequence[dict[str, Any]], spec: ModelSpec,
                job: TrainingJob, catalog: Catalog, cal: Calibration, th: Thresholds, cons: PlanConstraints,
                tokens: float, requirements: Requirements | None, findings: Sequence[Any] = ()) -> dict[str, Any]:
    """The recommendation with what it rests on (advise/trust.py): caveats with break-even values against
    the best plan on confirmed inputs, the best plan of each market when no --market was given, and, when the
    recommendation is critical for multi-node TCP (`net.rdma_required`), the best plan without it."""
    def pick(pool: Sequence[dict[str, Any]], market: str | None = None) -> dict[str, Any] | None:
        """The rule's pick in `pool`, for a buyer in `market` (the run's own by default)."""
        asked = cons if market is None else replace(cons, market=market)
        return choose(pool, spec, job, catalog, cal, th, asked, tokens, requirements, light=True)[0] if pool else None

    alt = None if is_confirmed(best) else pick([p for p in plans if is_confirmed(p)])
    per_market = {}
    if cons.market is None:
        for market, pool in sorted(split_by_market(plans, catalog).items()):
            chosen = pick(pool, market)  # judged as a buyer there would be (its export rules, its offers)
            if chosen is not None:
                per_market[market] = plan_summary(chosen)
    late = deadline_caveat(best, plans, cons.deadline_days, pick, plan_summary)
    tight = memory_caveat(best, plans, catalog, pick, plan_summary)
    supply = capacity_caveat(best)
    rdma_alt = None
    if any(f.severity == "critical" and f.id in _TCP_CRITICAL for f in findings):
        rdma_alt = pick([p for p in plans if _without_tcp_risk(p, catalog)])
    return {**plan_summary(best), "rule": rule,
            "rdma_alternative": plan_summary(rdma_alt) if rdma_alt is not None else None,
            "caveats": caveats(best, alt, rule.get("measure"), catalog, cons.deadline_days)
            + [c for c in (late, tight, supply) if c],
            "confirmed_alternative": plan_summary(alt) if alt is not None else None,
            "best_per_market": per_market}


def _job(spec: ModelSpec, job: TrainingJob, tokens: float, cons: PlanConstraints) -> dict[str, Any]:
    return {"model": spec.name, "params": float(count_params(spec).total), "tokens": tokens, "method": job.method,
            "precision": job.precision, "seq_len": job.seq_len, "global_batch": job.global_batch,
            "deadline_days": cons.deadline_days, "budget_usd": cons.budget_usd, "market": cons.market,
            "max_devices": cons.max_devices, "framework": job.framework,
            "sequence_parallel": job.sequence_parallel_on(), "zero_group": job.zero_shard_group()}


def compare_training(spec: ModelSpec, job: TrainingJob, catalog: Catalog, accelerators: Sequence[str],
                     cons: PlanConstraints, *, tokens: float, calibration: Calibration | None = None,
                     thresholds: Thresholds | None = None, requirements: Requirements | None = None
                     ) -> dict[str, Any]:
    """One recommended plan per accelerator with its time, cost, memory headroom, ecosystem risk and findings."""
    cal = calibration or default_calibration()
    th = thresholds or default_thresholds()
    stacks = advise_data("ecosystem")["stacks"]
    options: list[dict[str, Any]] = []
    for acc_name in accelerators:
        acc = catalog.accelerator(acc_name)
        res = plan_training(spec, job, catalog, replace(cons, accelerators=(acc.id,)), tokens=tokens,
                            calibration=cal)
        # one part per call: its pick, whatever it draws; a part the rule rules out still shows the plan it would
        # have had, marked, as `plan train` lists it
        best, rule, facts, found = choose(res.plans, spec, job, catalog, cal, th, cons, tokens, requirements,
                                          skip_blocked=False)
        risk = stacks.get(acc.software_stack, stacks["other"])["risk"]
        hits = _blocking(found)
        blocked = hits[0].id if hits else None
        if best is None or facts is None:
            options.append({"accelerator": acc.id, "plan": None, "rejected": res.rejected, "ecosystem_risk": risk,
                            "band": {}, "confidence": None,
                            "findings": [], "not_recommended": blocked, "nearest": res.nearest})
            continue
        options.append({"accelerator": acc.id, "plan": plan_summary(best), "rule": rule, "rejected": res.rejected,
                        "band": best.get("band", {}), "confidence": best.get("confidence"),
                        "memory_headroom": 1 - facts.memory_per_device_bytes / facts.device_memory_bytes,
                        "ecosystem_risk": risk, "findings": [f.to_json() for f in found],
                        "tco": _tco(facts, catalog, cal, th, None), "not_recommended": blocked})
    return {"schema": REPORT_SCHEMA, "kind": "compare", "generated": dt.date.today().isoformat(),
            "gpuplan_version": __version__, "job": _job(spec, job, tokens, cons), "options": options}
