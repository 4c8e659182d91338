"""Stored results as rows, lines and chart data for the templates, in one language.

Presentation only: every figure comes from the result document (the CLI's `--json`); texts come from the
render helpers the CLI and the reports use (trust_text, report_text), so a page says what the CLI says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.advise.report_train import blocked_finding
from gpuplan.estimate.memory_fit import MemoryFix
from gpuplan.i18n import not_recommended, tr
from gpuplan.render.report_text import (
    bottleneck_text,
    cost_text,
    engine_default_lines,
    fleet_text,
    fleet_units_text,
    layout_text,
    offer_text,
    prefix_tiers_line,
    recommended_rule_line,
    rule_line,
)
from gpuplan.render.split_text import split_lines
from gpuplan.render.trust_text import band_duration, band_num, confidence_text, misses_line, pd_line, trust_lines
from gpuplan.units import GIB, sig

__all__ = ["compare_view", "findings", "infer_chart", "infer_rows", "memory_parts", "pareto_chart", "plan_pair",
           "recommendation", "train_rows", "validation_view"]

KINDS = ("train", "serve", "memory")

MEMORY_KEYS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "kv_cache_bytes",
               "other_bytes")


def _is_rec(p: Mapping[str, Any], rec: Mapping[str, Any] | None) -> bool:
    return rec is not None and (p["accelerator"], p["devices"], p.get("offer") or (p.get("hardware_option") or {})
                                .get("offer")) == (rec["accelerator"], rec["devices"], rec.get("offer"))


def train_rows(result: Mapping[str, Any], lang: str, top: int = 12) -> list[dict[str, Any]]:
    """The ranked table as the CLI shows it: the recommended plan, the best per accelerator, then by rank."""
    from gpuplan.render.plan_json import ranked_rows

    plans = result["plans"]
    rec = result.get("recommended")
    blocked = result.get("not_recommended") or {}
    picked = [p for p in plans if _is_rec(p, rec)][:1]
    rows = []
    for p in picked + [p for p in ranked_rows(plans, top) if not _is_rec(p, rec)]:
        band = p.get("band") or {}
        where = str(p.get("offer")) if p.get("detail") == "summary" and p.get("offer") else offer_text(p, lang)
        rows.append({
            "accelerator": p["accelerator"], "where": where, "devices": p["devices"],
            "layout": layout_text(p["layout"]),
            "time": band_duration(p["time_to_train_s"], band.get("time_to_train_s"), lang),
            "cost": cost_text(p, lang, tr("cli.plan.no_price", lang)),
            "mfu": f"{p['mfu']:.0%}", "confidence": confidence_text(p.get("confidence"), lang),
            "level": (p.get("confidence") or {}).get("level", "low"),
            "bottleneck": bottleneck_text(p["breakdown_s"], lang) if "breakdown_s" in p else str(p.get("bottleneck")),
            "recommended": _is_rec(p, rec),
            "blocked": not_recommended(hit, lang)
            if (hit := blocked_finding(p, blocked)) is not None else "",
        })
    return rows


def _err(points: list[Mapping[str, Any]], key: str, scale: float) -> dict[str, Any]:
    lo: list[float] = []
    hi: list[float] = []
    for p in points:
        b = (p.get("band") or {}).get(key)
        v = p.get(key)
        if b is None or v is None:
            hi.append(0.0)
            lo.append(0.0)
            continue
        hi.append(max(b[1] - v, 0) / scale)
        lo.append(max(v - b[0], 0) / scale)
    return {"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "thickness": 1}


def pareto_chart(result: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """Plotly data and layout: every ranked plan with a price (time vs cost, 80% bands as error bars) and the
    Pareto front as a line."""
    priced = [p for p in result["plans"] if p.get("cost_usd")]
    bought = [p for p in result["plans"] if not p.get("cost_usd") and p.get("purchase_usd")]
    front = sorted(result.get("pareto") or [], key=lambda p: p["time_to_train_s"])
    day = 86400.0

    def label(p: Mapping[str, Any]) -> str:
        return f"{p['devices']} x {p['accelerator']}"

    data = [
        {"type": "scatter", "mode": "markers", "name": tr("web.chart.plans", lang),
         "x": [p["time_to_train_s"] / day for p in priced], "y": [p["cost_usd"] for p in priced],
         "text": [label(p) for p in priced], "error_x": _err(priced, "time_to_train_s", day),
         "error_y": _err(priced, "cost_usd", 1.0), "marker": {"size": 8, "opacity": 0.7}},
        {"type": "scatter", "mode": "lines+markers", "name": tr("web.chart.front", lang),
         "x": [p["time_to_train_s"] / day for p in front], "y": [p["cost_usd"] for p in front],
         "text": [label(p) for p in front], "line": {"shape": "hv"}},
    ]
    if bought:  # own clusters the catalog prices to buy: their capex, not a run's cost, on the same axis
        data.append({"type": "scatter", "mode": "markers", "name": tr("web.chart.purchases", lang),
                     "x": [p["time_to_train_s"] / day for p in bought], "y": [p["purchase_usd"] for p in bought],
                     "text": [label(p) for p in bought], "marker": {"size": 9, "symbol": "diamond-open"}})
    layout: dict[str, Any] = {"xaxis": {"title": {"text": tr("web.chart.days", lang)}},
                              "yaxis": {"title": {"text": tr("web.chart.cost", lang)}}, "margin": {"t": 20},
                              "legend": {"orientation": "h"}, "height": 420}
    if not priced and not bought:  # nothing to draw: say why instead of showing empty axes
        layout["annotations"] = [{"text": tr("web.chart.no_prices", lang), "showarrow": False, "xref": "paper",
                                  "yref": "paper", "x": 0.5, "y": 0.5, "font": {"size": 14}}]
        layout["xaxis"]["visible"] = layout["yaxis"]["visible"] = False
    return {"data": data, "layout": layout}


def recommendation(result: Mapping[str, Any], lang: str, kind: str = "train") -> dict[str, Any] | None:
    """The recommended plan in one line, the rule as applied and every trust line (caveats with break-evens)."""
    rec = result.get("recommended")
    if not rec:
        return None
    if kind == "train":
        head = tr("cli.plan.recommended_on", lang, devices=rec["devices"], acc=rec["accelerator"],
                  offer=offer_text(rec, lang), time=band_duration(rec["time_s"], (rec.get("band") or {}).get(
                      "time_to_train_s"), lang),
                  cost=cost_text(rec, lang, with_band=False))
        return {"head": head, "rule": rule_line(rec, lang), "lines": trust_lines(rec, lang)}
    rule = recommended_rule_line(result.get("plans") or [], rec, lang)  # the recommended fleet's own, not plans[0]
    head = tr("cli.pinfer.recommended", lang, acc=rec["accelerator"], rule=rule)
    pd = pd_line(result, lang)  # the disaggregated fleet the advisor would name, as the CLI prints it
    slo = result.get("slo") or {}
    missed = misses_line(result.get("parts_without_plan") or [], float(slo.get("ttft_p99_s") or 0.0),
                         float(slo.get("tpot_p99_s") or 0.0), lang)  # the parts searched without a fleet, and why
    engines = engine_default_lines(result.get("engine_default"), lang)  # the stacks' engines, as the CLI names them
    tiers = prefix_tiers_line(result.get("plans") or [], rec, lang)  # where the prefix set is kept (--prefix-set)
    return {"head": head, "rule": "", "lines": [*engines, *((tiers,) if tiers else ()), *trust_lines(rec, lang),
                                                *(x for x in (pd, missed) if x), *split_lines(result, lang)]}


def findings(result: Mapping[str, Any], lang: str, limit: int = 12) -> list[dict[str, str]]:
    out = []
    for f in (result.get("findings") or [])[:limit]:
        msg, fix = f.get("message") or {}, f.get("fix") or {}
        out.append({"severity": f.get("severity", "info"), "sev_text": tr(f"report.sev.{f.get('severity', 'info')}",
                                                                          lang) if f.get("severity") in (
            "info", "warn", "critical") else str(f.get("severity")),
                    "message": msg.get(lang) or msg.get("en", ""), "fix": fix.get(lang) or fix.get("en", "")})
    return out


def infer_rows(result: Mapping[str, Any], lang: str, top: int = 10) -> list[dict[str, Any]]:
    rows = []
    plans = (result.get("plans") or [])[:top]
    mixed = len({p.get("engine") for p in plans}) > 1  # parts planned with their own stacks' engines: name each
    for p in plans:
        band = p.get("band") or {}
        rows.append({
            "hardware": fleet_text(p, lang) + (f" {p['engine']}" if mixed else ""),
            "fleet": fleet_units_text(p, lang),
            "usd_h": band_num(p["cost_usd_per_hour"], band.get("cost_usd_per_hour"), ",.2f"),
            "usd_m": f"{sig(p['cost_usd_per_million_input_tokens'])} | "
                     f"{sig(p['cost_usd_per_million_output_tokens'])}",
            "util": f"{p['utilization']:.0%}",
            "latency": band_num(p["ttft_s"]["p99"], band.get("ttft_s.p99"), ".2f") + " s | "
            + band_num(p["tpot_s"]["p99"], band.get("tpot_s.p99"), ".0f", 1e3) + " ms",
            "confidence": confidence_text(p.get("confidence"), lang),
            "level": (p.get("confidence") or {}).get("level", "low"),
        })
    return rows


def infer_chart(result: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """Cost per hour vs p99 TPOT of each fleet, with 80% bands."""
    plans = (result.get("plans") or [])[:20]
    x = [p["tpot_s"]["p99"] * 1e3 for p in plans]
    y = [p["cost_usd_per_hour"] for p in plans]
    lo = [max(p["cost_usd_per_hour"] - ((p.get("band") or {}).get("cost_usd_per_hour") or [p["cost_usd_per_hour"]]
                                        * 2)[0], 0) for p in plans]
    hi = [max(((p.get("band") or {}).get("cost_usd_per_hour") or [0, p["cost_usd_per_hour"]])[1]
              - p["cost_usd_per_hour"], 0) for p in plans]
    data = [{"type": "scatter", "mode": "markers", "name": tr("web.chart.fleets", lang), "x": x, "y": y,
             "text": [f"{p['replicas']} x {p['accelerator']} {p['weights']}" for p in plans],
             "error_y": {"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "thickness": 1}}]
    layout = {"xaxis": {"title": {"text": tr("web.chart.tpot", lang)}},
              "yaxis": {"title": {"text": tr("web.chart.usd_h", lang)}}, "margin": {"t": 20}, "height": 380}
    return {"data": data, "layout": layout}


def traffic_chart(result: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """plan infer --traffic: committed and burst instances per hour (stacked bars) and the cost per hour (line)."""
    rows = result.get("schedule") or []
    x = [(tr(f"traffic.day.{r['day']}", lang) + " " if r.get("day") else "") + f"{r['hour']:02d}" for r in rows]
    data = [{"type": "bar", "name": tr("report.chart.baseline", lang), "x": x,
             "y": [r["baseline_instances"] for r in rows]},
            {"type": "bar", "name": tr("report.chart.burst", lang), "x": x, "y": [r["burst_instances"] for r in rows]},
            {"type": "scatter", "mode": "lines+markers", "name": tr("report.chart.cost_mix", lang), "x": x,
             "y": [r["cost_usd_per_hour"] for r in rows], "yaxis": "y2"}]
    layout = {"barmode": "stack", "xaxis": {"title": {"text": tr("report.axis.hour", lang)}},
              "yaxis": {"title": {"text": tr("report.axis.instances", lang)}},
              "yaxis2": {"title": {"text": tr("report.axis.usd_h", lang)}, "overlaying": "y", "side": "right",
                         "rangemode": "tozero"},
              "margin": {"t": 20}, "height": 380}
    return {"data": data, "layout": layout}


def _fix_text(fix: Mapping[str, Any] | None, lang: str) -> str | None:
    """The nearest change's sentence as the CLI words it (`MemoryFix.text`): that it fits, or that no single change
    does and what even it needs."""
    if not fix:
        return None
    return MemoryFix(flags=str(fix["flags"]), needed_bytes=float(fix["total_bytes"]), fits=bool(fix["fits"])).text(lang)


def memory_parts(result: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """Memory by part in GiB, a bar chart of it and the fit line."""
    parts = [(k.removesuffix("_bytes"), result.get(k) or 0) for k in MEMORY_KEYS]
    rows = [{"part": tr(f"report.part.{name}", lang), "gib": f"{v / GIB:,.2f}"} for name, v in parts]
    chart = {"data": [{"type": "bar", "orientation": "h", "x": [v / GIB for _, v in parts],
                       "y": [r["part"] for r in rows]}],
             "layout": {"xaxis": {"title": {"text": "GiB"}}, "margin": {"t": 10, "l": 120}, "height": 260}}
    fits = result.get("fits")
    said = result.get("assumptions") or {}
    return {"rows": rows, "total": f"{result['total_bytes'] / GIB:,.2f}", "chart": chart, "fits": fits,
            "usable": f"{result['usable_memory_bytes'] / GIB:,.1f}" if result.get("usable_memory_bytes") else None,
            "fix": _fix_text(result.get("nearest_fix"), lang),
            "notes": (said.get("notes_zh") if lang == "zh" else None) or said.get("notes") or []}


def compare_view(doc: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """`gpuplan compare` as the CLI shows it: the table (each figure with its 80% band, each option with its
    confidence), a line per option (confidence, rule, why no plan, the worst finding) and a chart of the options."""
    from gpuplan.render.report_md import compare_rows

    infer = doc["kind"] == "compare_infer"
    if infer:
        cols = ("accelerator", "devices", "weights", "usd_h", "usd_m", "ttft", "tpot", "util", "risk", "findings",
                "confidence")
        head = [tr(f"report.col.{c}", lang) for c in cols]
        rows = []
        for o in doc["options"]:
            p, band = o["plan"], o.get("band") or {}
            risk = tr(f"report.risk.{o['ecosystem_risk']}", lang)
            if p is None:
                rows.append([o["accelerator"], *["-"] * 7, risk, tr("report.no_plan_short", lang), "-"])
                continue
            rows.append([o["accelerator"], str(p["devices"]), p["weights"],
                         band_num(p["usd_per_hour"], band.get("cost_usd_per_hour"), ",.2f"),
                         band_num(p["usd_per_million_tokens"], band.get("cost_usd_per_million_tokens"), ".3g"),
                         band_num(p["ttft_p99_s"], band.get("ttft_s.p99"), ".3f"),
                         band_num(p["tpot_p99_s"], band.get("tpot_s.p99"), ".1f", 1e3), f"{p['utilization']:.0%}",
                         risk, _finding_counts(o), confidence_text(o.get("confidence"), lang)])
    else:
        head, rows = compare_rows(doc, lang)
        head[-1] = tr("report.col.confidence", lang)
    notes = []
    for o in doc["options"]:
        p = o["plan"]
        lines = []
        if p is not None and o.get("confidence"):
            lines.append(tr("trust.recommended_conf", lang, text=confidence_text(o["confidence"], lang, short=False)))
        if p is not None and o.get("rule"):
            lines.append(rule_line(p | {"rule": o["rule"]}, lang))
        if p is None:
            lines.append(tr("report.rejected", lang, rejected=o["rejected"]))
        worst = next((f for f in o["findings"] if f["severity"] != "info"), None)
        if worst:
            msg = worst["message"].get(lang) or worst["message"]["en"]
            lines.append(f"{tr('cli.compare.top_finding', lang)}: {msg}")
        notes.append({"accelerator": o["accelerator"], "lines": lines})
    return {"head": head, "rows": rows, "notes": notes, "infer": infer, "chart": _compare_chart(doc, lang)}


def _finding_counts(o: Mapping[str, Any]) -> str:
    sev = [f["severity"] for f in o["findings"]]
    return f"{sev.count('critical')}/{sev.count('warn')}"


def _compare_chart(doc: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """One point per option with a plan: days vs cost (training) or p99 TPOT vs USD per hour (serving), bands as
    error bars on both axes."""
    infer = doc["kind"] == "compare_infer"
    opts = [o for o in doc["options"] if o["plan"] is not None and (infer or o["plan"].get("cost_usd") is not None)]
    xk, yk, xs, bx, by = (("tpot_p99_s", "usd_per_hour", 1e-3, "tpot_s.p99", "cost_usd_per_hour") if infer
                          else ("days", "cost_usd", 1.0, "time_to_train_days", "cost_usd"))

    def bars(key: str, band_key: str, scale: float) -> dict[str, Any]:
        pts: list[Mapping[str, Any]] = [{key: o["plan"][key], "band": {key: (o.get("band") or {}).get(band_key)}}
                                        for o in opts]
        return _err(pts, key, scale)

    data = [{"type": "scatter", "mode": "markers+text", "textposition": "top center", "name": "",
             "x": [o["plan"][xk] / xs for o in opts], "y": [o["plan"][yk] for o in opts],
             "text": [o["accelerator"] for o in opts], "error_x": bars(xk, bx, xs), "error_y": bars(yk, by, 1.0),
             "marker": {"size": 10}}]
    layout = {"xaxis": {"title": {"text": tr("web.chart.tpot" if infer else "web.chart.days", lang)}},
              "yaxis": {"title": {"text": tr("web.chart.usd_h" if infer else "web.chart.cost", lang)}},
              "margin": {"t": 20}, "height": 380, "showlegend": False}
    return {"data": data, "layout": layout}


def _headline(saved: Any, lang: str) -> dict[str, str]:
    """The recommended (else first) plan of a stored result, its figures with bands and its confidence."""
    if saved.kind == "train":
        rows = train_rows(saved.result, lang, top=1)
        if not rows:
            return {}
        r = rows[0]
        return {"plan": f"{r['devices']} x {r['accelerator']} ({r['where']})", "layout": r["layout"],
                "figures": f"{r['time']} · {r['cost']} USD · MFU {r['mfu']}", "confidence": r["confidence"],
                "level": r["level"]}
    rows = infer_rows(saved.result, lang, top=1)
    if not rows:
        return {}
    r = rows[0]
    return {"plan": f"{r['hardware']}: {r['fleet']}", "layout": "",
            "figures": f"{r['usd_h']} USD/h · {r['latency']}", "confidence": r["confidence"], "level": r["level"]}


def plan_pair(a: Any, b: Any, lang: str) -> dict[str, Any]:
    """Two stored plans side by side: headline of each, and every input field with the differing ones marked
    (versions included: the same inputs on another catalog are another plan)."""
    ra = {**a.request, "gpuplan_version": a.gpuplan_version, "catalog_version": a.catalog_version}
    rb = {**b.request, "gpuplan_version": b.gpuplan_version, "catalog_version": b.catalog_version}
    fields = []
    for key in sorted(set(ra) | set(rb), key=lambda k: (k not in ("kind", "model"), k)):
        va, vb = ra.get(key), rb.get(key)
        fields.append({"field": key, "a": _value(va), "b": _value(vb), "differs": va != vb})
    return {"fields": fields, "differ": sum(f["differs"] for f in fields), "total": len(fields),
            "a": {"saved": a, **_headline(a, lang), "rec": recommendation(a.result, lang, a.kind)},
            "b": {"saved": b, **_headline(b, lang), "rec": recommendation(b.result, lang, b.kind)}}


def _value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def validation_view(data: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """The shipped cross-validation result (estimate.uncertainty.accuracy_data) as tables: coverage of the 80%
    bands per kind, accuracy per part (in-sample, held-out source, held-out part), per source and per class."""
    cov = data.get("coverage") or {}
    coverage = [{"kind": tr(f"web.validation.kind.{k}", lang), "rows": cov[k]["rows"],
                 "coverage": _pct(cov[k]["coverage"])} for k in KINDS if k in cov]
    parts = []
    for k in KINDS:
        per = (data.get("parts") or {}).get(k) or {}
        rows = [{"part": name, "rows": v["rows"], "sources": v["sources"], "in_sample": _pct(v["in_sample_median_ape"]),
                 "cv": _pct(v["cv_median_ape"]), "cv_p90": _pct(v["cv_p90_ape"]),
                 "default": _pct(v.get("default_median_ape"))}
                for name, v in sorted(per.items(), key=lambda kv: (-kv[1]["rows"], kv[0]))]
        if rows:
            parts.append({"kind": k, "title": tr("web.validation.parts", lang, kind=tr(f"web.validation.kind.{k}",
                                                                                       lang)), "rows": rows})
    from gpuplan.estimate.uncertainty import source_accuracy

    sources = [{"kind": k, "title": tr("web.validation.by_source", lang, kind=tr(f"web.validation.kind.{k}", lang)),
                "rows": [{"source": r["source"], "rows": r["rows"], "parts": ", ".join(r["parts"]),
                          "in_sample": _pct(r["in_sample_median_ape"]), "cv": _pct(r["cv_median_ape"]),
                          "cv_p90": _pct(r["cv_p90_ape"])} for r in per]}
               for k, per in source_accuracy(data).items() if k in KINDS]
    classes = [{"key": c["key"], "n": c["n"], "sources": c["sources"], "median": _pct(c["median_ape"]),
                "band": f"{c['q10']:.2f}-{c['q90']:.2f}"}
               for _, c in sorted((data.get("classes") or {}).items())]
    return {"coverage": coverage, "parts": parts, "sources": sources, "classes": classes,
            "produced": tr("web.validation.produced", lang, by=data.get("produced_by", ""),
                           date=data.get("as_of", ""), version=data.get("gpuplan_version", ""),
                           method=data.get("method", ""))}
