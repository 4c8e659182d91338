"""Shared pieces of the Markdown and HTML reports: tables as rows of text, in one language."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplan.i18n import Duration, tr
from gpuplan.render.trust_text import band_cost, band_duration, band_num, confidence_text, offer_text
from gpuplan.search.infer_fleet import layout_shape
from gpuplan.search.train_planner import billed_by_month
from gpuplan.units import sig

__all__ = ["INFER_COLS", "bottleneck_text", "engine_default_lines", "finding_rows", "fleet_units_text", "fmt",
           "fmt_sig", "growth_line", "prefix_tiers_line",
           "infer_job_lines",
           "infer_memory_rows", "infer_rows", "infer_rule_line", "job_lines", "plan_rows", "prov", "rel_line",
           "layout_text", "recommended_rule_line", "rule_line", "tco_lines", "tco_rows", "cost_text", "duration_text",
           "offer_text"]


def engine_default_lines(record: Mapping[str, Any] | None, lang: str) -> list[str]:
    """The engines the parts' stacks chose (a `plan infer` answer's `engine_default`): across stacks one short line
    (vLLM on the GPU parts, MindIE on the Ascend parts); a stack searched alone whose engine is not the general default
    (`--vendor Huawei`: MindIE) gets its line with the source; vLLM alone says nothing."""
    from gpuplan.workload.engines import default_engine

    if not record:
        return []
    general = default_engine(None)[0]
    by_stack = record.get("by_stack") or {}
    if by_stack:  # a search across stacks: one short line (the sources are in the JSON's engine_default)
        others = "; ".join(tr("cli.pinfer.engine_on_stack", lang, engine=e["engine"], stack=stack)
                           for stack, e in sorted(by_stack.items()))
        return [tr("cli.pinfer.engines_by_stack", lang, engine=record["engine"], others=others)]
    if record.get("stack") and record["engine"] != general:
        return [tr("cli.einfer.engine_default", lang, engine=record["engine"], stack=record["stack"],
                   source=record["source"])]
    return []


def prefix_tiers_line(plans: Sequence[Mapping[str, Any]], rec: Mapping[str, Any] | None, lang: str) -> str | None:
    """Where the recommended fleet's replicas (else the cheapest's) find the reused prefix set (`--prefix-set`:
    HBM, host memory, recomputed) and the hit it was sized at (search/infer_offload.py); None without one."""
    key = ("accelerator", "instance", "replicas", "weights")
    plan = next((p for p in plans if rec is not None and all(p.get(k) == rec.get(k) for k in key)),
                plans[0] if plans else None)
    t = (plan or {}).get("prefix_tiers")
    if not t:
        return None
    tier = tr(f"prefix.tier.{t['tier']}", lang, host=t["host_tokens"], gib=t["host_gib_per_device"],
              flag=t["offload"] or "-", engine=plan.get("engine") if plan else "-")
    reload = "-" if t["reload_s_per_1k_tokens"] is None else sig(t["reload_s_per_1k_tokens"] * 1e3)
    return tr("cli.pinfer.prefix_tiers", lang, acc=plan["accelerator"] if plan else "-", hbm=t["hbm_tokens"],
              set=t["prefix_set_tokens"], tier=tier, link=t["link_basis"], reload=reload,
              recompute=sig(t["recompute_s_per_1k_tokens"] * 1e3), eff=t["hit_effective"], hit=t["hit_stated"])


def fmt(value: Any, spec: str = ",.1f") -> str:
    if value is None:
        return "-"
    if isinstance(value, float | int) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


def fmt_sig(value: float | None, digits: int = 3) -> str:
    """A small price with enough significant figures (0.00825, 0.432), "-" when unknown."""
    return "-" if value is None else sig(value, digits)


def prov(kind: str, lang: str) -> str:
    """Provenance label (measured / estimated / datasheet / data / list price / market quote) in `lang`."""
    key = kind.split()[0] if kind else "estimated"
    known = ("measured", "estimated", "datasheet", "data", "list_price", "market_quote")
    return tr(f"report.prov.{key}", lang) if key in known else kind


def job_lines(doc: Mapping[str, Any], lang: str) -> list[str]:
    job = doc["job"]
    none = tr("report.none", lang)
    return [
        tr("report.job.line", lang, model=job["model"], params_b=job["params"] / 1e9, tokens=job["tokens"],
           method=job["method"], precision=job["precision"], seq_len=job["seq_len"],
           global_batch=job["global_batch"]),
        tr("report.job.constraints", lang, deadline=fmt(job.get("deadline_days"), ".0f") if job.get("deadline_days")
           else none, budget=fmt(job.get("budget_usd"), ",.0f") if job.get("budget_usd") else none,
           market=job.get("market") or none, max_devices=job.get("max_devices"),
           candidates=int(doc.get("candidates_evaluated", 0))),
    ]


PLAN_COLS = ("accelerator", "offer", "devices", "nodes", "layout", "time", "cost", "mfu", "memory", "provenance")


def cost_text(p: Mapping[str, Any], lang: str, no_price: str = "-", *, with_band: bool = True) -> str:
    """The plan's cost (with its band unless `with_band` is False), marked when the bill is whole months."""
    if not p.get("cost_usd") and p.get("purchase_usd"):  # an own cluster the catalog prices to buy
        return tr("report.buy_cost", lang, usd=f"{float(p['purchase_usd']):,.0f}")
    text = band_cost(p.get("cost_usd"), (p.get("band") or {}).get("cost_usd") if with_band else None, no_price)
    return text + " " + tr("report.billed_by_month", lang) if p.get("cost_usd") and billed_by_month(p) else text


def plan_rows(plans: list[Mapping[str, Any]], lang: str) -> tuple[list[str], list[list[str]]]:
    head = [tr(f"report.col.{c}", lang) for c in PLAN_COLS]
    rows = [[p["accelerator"], offer_text(p, lang), str(p["devices"]), str(p["nodes"]), p["layout"],
             band_duration(p.get("time_s") if p.get("time_s") is not None
                           else (p["days"] * 86400.0 if p.get("days") is not None else None),
                           (p.get("band") or {}).get("time_to_train_s"), lang),
             cost_text(p, lang), fmt(p["mfu"], ".1%"),
             fmt(p["memory_gib"]), confidence_text(p.get("confidence"), lang) if p.get("confidence")
             else prov("estimated", lang)]
            for p in plans]
    return head, rows


def finding_rows(findings: list[Mapping[str, Any]], lang: str) -> tuple[list[str], list[list[str]]]:
    head = [tr(f"report.col.{c}", lang) for c in ("severity", "finding", "fix", "numbers")]
    rows = []
    for f in findings:
        nums = "; ".join(f"{g['name']} = {fmt(g['value'], ',.3g')} {g['unit']} ({prov(g['provenance'], lang)})"
                         for g in f["figures"])
        rows.append([tr(f"report.sev.{f['severity']}", lang), f["message"][lang], f["fix"][lang], nums])
    return head, rows


def tco_rows(t: Mapping[str, Any], lang: str) -> tuple[list[str], list[list[str]]]:
    head = [tr("report.col.option", lang), tr("report.tco.rate", lang), tr("report.tco.job", lang),
            tr("report.col.provenance", lang)]
    rows = []
    for kind in ("on_demand", "monthly", "yearly", "spot", "buy"):
        if kind not in t["job_cost_usd"]:
            continue
        rate = t["usd_per_device_hour"].get(kind)
        rows.append([tr(f"report.tco.{kind}", lang), fmt(rate, ",.3f"), fmt(t["job_cost_usd"][kind], ",.0f"),
                     prov("estimated", lang)])
    return head, rows


def tco_lines(t: Mapping[str, Any], lang: str) -> list[str]:
    out = []
    if t.get("spot_lost_share") is not None:
        out.append(tr("report.tco.spot_lost", lang, lost=t["spot_lost_share"]))
    buy = t.get("buy")
    if buy is None:
        out.append(tr("report.tco.no_buy", lang))
    else:
        for kind, u in t["break_even_utilization"].items():
            label = tr(f"report.tco.{kind}", lang)
            if u is None:
                out.append(tr("report.tco.never", lang, kind=label))
            elif u > 1:
                out.append(tr("report.tco.above_full", lang, server=buy["server"], kind=label, u=u))
            else:
                out.append(tr("report.tco.break_even", lang, server=buy["server"], price=buy["price_usd"],
                              kw=buy["power_kw"], years=t["inputs"]["years"], kind=label, u=u))
    inputs = ", ".join(f"{k}={v}" for k, v in t["inputs"].items() if v not in (None, []))
    out.append(tr("report.tco.inputs", lang, inputs=inputs))
    return out


def rel_line(rel: Mapping[str, Any], lang: str) -> str:
    return tr("report.rel.line", lang, ckpt_gb=rel["checkpoint_bytes"] / 1e9, write_s=rel["checkpoint_write_s"],
              interval_min=rel["checkpoint_interval_s"] / 60, goodput=rel["goodput"])


def bottleneck_text(breakdown: Mapping[str, float], lang: str) -> str:
    """The largest non-compute share of a step, in `lang` (compute-bound below 5%)."""
    total = sum(breakdown.values()) or 1.0
    rest = [(k, v) for k, v in breakdown.items() if k != "compute"]
    name, value = max(rest, key=lambda kv: kv[1]) if rest else ("compute", 0.0)
    if value / total < 0.05:
        return tr("report.bottleneck.compute", lang, share=breakdown.get("compute", 0.0) / total)
    return tr("report.bottleneck.part", lang, part=tr(f"report.step.{name}", lang), share=value / total)


INFER_COLS = ("accelerator", "devices", "replicas", "layout", "weights", "usd_h", "usd_m", "ttft", "tpot", "util",
              "tenancy", "provenance")


def fleet_text(p: Mapping[str, Any], lang: str) -> str:
    """A serving fleet's hardware and layout in words: 'h200-sxm-141gb tp8 ep8 fp8', or for attention data
    parallelism (ep > tp) 'h200-sxm-141gb DP8 attention, EP8 fp8'."""
    return f"{p['accelerator']} {layout_shape(p['layout'], lang)} {p['weights']}"


def fleet_units_text(p: Mapping[str, Any], lang: str) -> str:
    """What a serving fleet rents: '2 repl. on 2 x <instance>', or for a per-card rental the cards of one host per
    replica."""
    key = "cli.pinfer.fleet_cards" if p.get("per_card") else "cli.pinfer.fleet"
    return tr(key, lang, replicas=p["replicas"], instances=p["instances"], instance=p["instance"])


def infer_rows(plans: list[Mapping[str, Any]], lang: str) -> tuple[list[str], list[list[str]]]:
    head = [tr(f"report.col.{c}", lang) for c in INFER_COLS]
    mixed = len({p.get("engine") for p in plans}) > 1  # parts planned with their own stacks' engines: name each
    rows = [[p["accelerator"], str(p["devices"]), str(p["replicas"]), p["layout"],
             f"{p['weights']} ({p['engine']})" if mixed else p["weights"],
             band_num(p["usd_per_hour"], (p.get("band") or {}).get("cost_usd_per_hour"), ",.2f"),
             fmt_sig(p["usd_per_million_tokens"]),
             band_num(p["ttft_p99_s"], (p.get("band") or {}).get("ttft_s.p99"), ".3f"),
             band_num(p["tpot_p99_s"], (p.get("band") or {}).get("tpot_s.p99"), ".1f", 1e3),
             fmt(p["utilization"], ".0%"),
             tr(f"report.tenancy.{p['tenancy']}", lang) if p["tenancy"] in ("dedicated", "shared") else p["tenancy"],
             confidence_text(p.get("confidence"), lang) if p.get("confidence") else prov("estimated", lang)]
            for p in plans]
    return head, rows


def infer_job_lines(doc: Mapping[str, Any], lang: str) -> list[str]:
    j = doc["job"]
    return [tr("report.job.infer", lang, model=j["model"], engine=j.get("engine") or "-",
               router=j.get("router") or "-", qps=j["qps"],
               input_len=j.get("input_len") or "-", input_mean=j["input_len_mean"], output_len=j.get("output_len")
               or "-", output_mean=j["output_len_mean"], ttft=j["ttft_p99_s"], tpot=j["tpot_p99_s"],
               candidates=int(doc.get("candidates_evaluated", 0)), simulated=int(doc.get("simulated", 0)))]


def rule_line(rec: Mapping[str, Any], lang: str) -> str:
    """The training recommendation rule as applied: the measure, tolerance, target time and outcome."""
    rule = rec["rule"]
    days = rule.get("target_days")
    if days is None:  # a report saved before the rule named its target time
        from gpuplan.advise.findings import default_thresholds

        days = default_thresholds().value("recommend_target_days")
    if "outcome" not in rule:  # a report saved before the rule said how it ended
        return tr("report.rec.rule", lang, tol=rule["recommend_cost_tolerance"], days=days)
    if rule["outcome"] == "none":
        return tr("report.rec.rule.none", lang)
    deadline = rule.get("deadline_days")
    target = (tr("report.rec.target.deadline", lang, days=deadline) if deadline and deadline <= days
              else tr("report.rec.target.default", lang, days=days))
    line = tr(f"report.rec.rule.{rule['outcome']}", lang, tol=rule["recommend_cost_tolerance"],
              measure=tr(f"report.rec.measure.{rule['measure']}", lang), target=target)
    if rule.get("own_to_deadline"):
        line += " " + tr("report.rec.own_to_deadline", lang)
    if rule.get("not_compared"):
        line += " " + tr("report.rec.not_compared", lang, parts=", ".join(rule["not_compared"]))
    if rule.get("dominated"):
        line += " " + tr("report.rec.dominated", lang, n=rule["dominated"], margin=rule["dominance_margin"])
    for ex in rule.get("excluded") or ():
        line += " " + tr("report.rec.excluded", lang, acc=ex.get("option") or ex["accelerator"], finding=ex["finding"])
    if rule.get("buyer_market_default"):
        line += " " + tr("report.rec.buyer_market", lang, market=tr(f"trust.market.{rule['buyer_market']}", lang))
    return line


def duration_text(seconds: float | None, lang: str) -> str:
    """A time to train in the unit that reads best: minutes below an hour, hours below two days, else days."""
    return "-" if seconds is None else Duration(seconds).text(lang)


def infer_rule_line(rec: Mapping[str, Any], lang: str) -> str:
    adv = rec.get("advice", {})
    tenancy = rec["tenancy"]
    label = tr(f"report.tenancy.{tenancy}", lang) if tenancy in ("dedicated", "shared") else tenancy
    return tr("report.rec.infer_rule", lang, tenancy=label, util=float(adv.get("utilization", rec["utilization"])),
              growth=float(adv.get("p99_growth_at_headroom", 0.0)))


def layout_text(lay: Mapping[str, Any]) -> str:
    """A training layout in one short line: tp, pp, dp, then cp, ep, vpp and the ZeRO stage where they are in use
    (a 70B LoRA on four 80 GB cards reads 'dp4 z3': the frozen base is sharded, not replicated), and recompute."""
    extra = [f"{k}{lay[k]}" for k in ("cp", "ep", "vpp") if int(lay.get(k, 1) or 1) > 1]
    zero = int(lay.get("zero_stage") or 0)
    return " ".join([f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']}", *extra, *([f"z{zero}"] if zero else []),
                     f"rc={lay['recompute']}"])


def recommended_rule_line(plans: Sequence[Mapping[str, Any]], recommended: Mapping[str, Any] | None,
                          lang: str) -> str:
    """The rule line of the recommended serving fleet, from its own plan record (its tenancy, utilization and growth);
    "" when no plan is the recommended one. The recommendation may skip cheaper plans (a blocking finding)."""
    if not recommended:
        return ""
    keys = ("accelerator", "instance", "replicas", "layout", "weights")
    best = next((p for p in plans if all(p.get(k) == recommended.get(k) for k in keys)), None)
    if best is None:
        return ""
    return infer_rule_line({"tenancy": best["advice"]["tenancy"], "utilization": best["utilization"],
                            "advice": best["advice"]}, lang)


def infer_memory_rows(mem: Mapping[str, Any], lang: str) -> tuple[list[str], list[list[str]], str]:
    """The per-device memory table of an inference report, and the line explaining it."""
    head = [tr("report.col.part", lang), "GiB", tr("report.col.provenance", lang)]
    est = prov("estimated", lang)
    rows = [[tr(f"report.part.{k}", lang), fmt(v, ".2f"), est] for k, v in mem["parts_gib"].items()]
    rows += [[tr("report.chart.engine_budget", lang), fmt(mem["engine_budget_gib"], ".1f"), prov("data", lang)],
             [tr("report.chart.device_memory", lang), fmt(mem["device_memory_gib"], ".1f"), prov("datasheet", lang)]]
    line = tr("report.mem.infer_line", lang, batch=mem["batch"], context=mem["context"],
              fraction=mem["memory_fraction"], budget=mem["engine_budget_gib"], used=mem.get("kv_used_fraction") or 0.0)
    return head, rows, line


def growth_line(doc: Mapping[str, Any], lang: str) -> str | None:
    """One sentence on the re-plan at the grown load of an inference report (None when not computed)."""
    g = doc.get("growth")
    if not g:
        return None
    if g.get("holds"):
        return tr("report.growth.holds", lang, factor=g["factor"], qps=g["qps"],
                  usd_h=doc["recommendation"]["usd_per_hour"])
    if g.get("devices") is None:
        return tr("report.growth.none", lang, factor=g["factor"], qps=g["qps"])
    return tr("report.growth.replan", lang, factor=g["factor"], qps=g["qps"], devices=g["devices"],
              acc=g["accelerator"], replicas=g["replicas"], grown_usd_h=g["usd_per_hour"],
              usd_h=doc["recommendation"]["usd_per_hour"])
