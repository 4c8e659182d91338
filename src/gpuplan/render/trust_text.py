"""How sure a plan is, in words: figures with their 80% band, the confidence column, the caveats.

Used by the CLI tables and the Markdown/HTML reports alike; all text comes from the message catalog
(English and Chinese).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplan.i18n import Duration, tr
from gpuplan.units import sig

__all__ = ["band_cost", "band_duration", "band_num", "caveat_lines", "confidence_text", "market_lines", "misses_line",
           "offer_text", "trust_lines"]


def _unit(seconds: float) -> tuple[float, str]:
    if seconds < 3600:
        return 60.0, "min"
    if seconds < 48 * 3600:
        return 3600.0, "h"
    return 86400.0, "d"


def _num(v: float) -> str:
    return f"{v:.2g}" if v < 10 else f"{v:,.0f}"


def band_duration(seconds: float | None, band: Sequence[float] | None, lang: str) -> str:
    """'21.1 d (17-27)': the figure in its unit, then the band in the same unit."""
    if seconds is None:
        return "-"
    text = Duration(seconds).text(lang)
    if not band:
        return text
    div, _ = _unit(seconds)
    return f"{text} ({_num(band[0] / div)}-{_num(band[1] / div)})"


def _short_money(v: float) -> str:
    """Two significant digits with k/M: 115k, 1.7M, 950."""
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            x = v / div
            return f"{x:.2g}{suffix}" if x < 100 else f"{x:.0f}{suffix}"
    return f"{v:.2g}" if v < 100 else f"{v:.0f}"


def band_cost(usd: float | None, band: Sequence[float] | None, no_price: str) -> str:
    """'136,079 (115k-171k)', or the no-price text."""
    if not usd:
        return no_price
    if not band or band[1] - band[0] <= 1e-9 * usd:  # no band, or a fixed bill (whole months of a commitment)
        return f"{usd:,.0f}"
    return f"{usd:,.0f} ({_short_money(band[0])}-{_short_money(band[1])})"


def band_num(value: float | None, band: Sequence[float] | None, spec: str, scale: float = 1.0) -> str:
    """'2.13 (1.8-2.6)': a figure with its band in the same format (`scale` multiplies both)."""
    if value is None:
        return "-"
    text = format(value * scale, spec)
    return f"{text} ({format(band[0] * scale, spec)}-{format(band[1] * scale, spec)})" if band else text


def _level(level: str, lang: str) -> str:
    return tr(f"trust.level.{level}", lang) if level in ("low", "medium", "high", "none") else level


def confidence_text(conf: Mapping[str, Any] | None, lang: str, short: bool = True) -> str:
    """'low: default efficiency, price low' or the full sentence (short=False)."""
    if not conf:
        return "-"
    eff = conf.get("efficiency") or {}
    prov = eff.get("provenance", "default")
    cv = eff.get("cv_median_ape")
    key = "trust.eff.default_engine" if prov == "default" and eff.get("value") is None else f"trust.eff.{prov}"
    if prov == "validated" and eff.get("thin"):
        key = "trust.eff.validated_thin"
    eff_text = tr(key, lang, rows=eff.get("rows", 0), sources=eff.get("sources", 0),
                  cv=f"{cv:.0%}" if cv is not None else "-", value=eff.get("value"), term=eff.get("term", ""))
    price = conf.get("price")
    level = tr(f"trust.level.{conf.get('level', 'low')}", lang)
    if short:  # the level, then what lowers it
        bits = ([tr("trust.eff_short.default", lang)] if prov == "default" else
                [tr("trust.eff_short.thin", lang)] if prov == "validated" and eff.get("thin") else [])
        if price is not None and price["confidence"] != "high":
            bits.append(tr("trust.price_short", lang))
        return tr("trust.short", lang, level=level, why=tr("trust.sep", lang).join(bits)) if bits else level
    price_text = (tr("trust.price_not_costed" if conf.get("costed") is False else "trust.price_none", lang)
                  if price is None else
                  tr("trust.price", lang, basis=tr(f"trust.basis.{price['basis']}", lang), source=price["source"],
                     as_of=price["as_of"], confidence=_level(price["confidence"], lang)))
    return tr("trust.sentence", lang, level=level, eff=eff_text, price=price_text)


def _safe_text(safe: Mapping[str, Any] | None, margin: str, lang: str) -> str:
    """The plan a margin caveat (`deadline`, `memory`) names, or what to do when there is none."""
    if not safe:
        return tr(f"trust.{margin}_none", lang)
    return tr(f"trust.{margin}_safe", lang, devices=safe["devices"], acc=safe["accelerator"], offer=_where(safe, lang),
              time=band_duration(safe.get("time_s"), (safe.get("band") or {}).get("time_to_train_s"), lang),
              cost=_usd(safe.get("cost_usd"), lang, safe.get("purchase_usd")))


def caveat_lines(rec: Mapping[str, Any], lang: str) -> list[str]:
    """One line per caveat of the recommendation, then the best plan on confirmed inputs."""
    lines = []
    for c in rec.get("caveats") or []:
        be = c.get("break_even")
        if c["input"] == "efficiency" and "mfu" in c["value"]:
            flip = (tr("trust.flip.mfu_deadline" if be.get("deadline_bound") else "trust.flip.mfu", lang,
                       mfu=f"{be['mfu']:.0%}") if be else
                    tr("trust.flip.unpriced" if c.get("alternative_unpriced") else "trust.flip.none", lang))
            lines.append(tr("trust.caveat.efficiency_thin" if c["value"].get("thin") else "trust.caveat.efficiency",
                            lang, acc=c["accelerator"], mfu=f"{c['value']['mfu']:.0%}",
                            term=c["value"].get("term") or "", flip=flip, rows=c["value"].get("rows", 0),
                            sources=c["value"].get("sources", 0)))
        elif c["input"] == "deadline":
            v = c["value"]
            lines.append(tr("trust.caveat.deadline", lang, acc=c["accelerator"], days=f"{v['days']:.1f}",
                            high=f"{v['band_high_days']:.1f}", deadline=f"{v['deadline_days']:g}",
                            safe=_safe_text(c.get("safe_alternative"), "deadline", lang)))
        elif c["input"] == "capacity":
            v = c["value"]
            key = "trust.caveat.capacity_typical" if v["provenance"] == "typical" else "trust.caveat.capacity"
            lines.append(tr(key, lang, acc=c["accelerator"], offer=v["offer"], devices=v["devices"],
                            typical=v.get("max_devices") or 0))
        elif c["input"] == "memory":
            v = c["value"]
            lines.append(tr("trust.caveat.memory", lang, acc=c["accelerator"], gib=f"{v['gib']:.1f}",
                            high=f"{v['band_high_gib']:.1f}", device=f"{v['device_gib']:.1f}",
                            safe=_safe_text(c.get("safe_alternative"), "memory", lang)))
        elif c["input"] == "purchase":
            v = c["value"]
            flip = (tr("trust.flip.purchase", lang, usd=f"{be['usd']:,.0f}") if be else
                    tr("trust.flip.purchase_unpriced" if c.get("alternative_unpriced") else "trust.flip.none", lang))
            lines.append(tr("trust.caveat.purchase", lang, acc=c["accelerator"], servers=v["servers"],
                            server=v["server"], usd=f"{float(v['usd']):,.0f}", confidence=_level(v["confidence"], lang),
                            source=v["source"], as_of=v["as_of"], flip=flip))
        elif c["input"] == "efficiency":
            key = "capacity_requests_per_s_per_replica"
            flip = (tr("trust.flip.capacity", lang, rps=sig(be[key])) if be else tr("trust.flip.none", lang))
            lines.append(tr("trust.caveat.serving_thin" if c["value"].get("thin") else "trust.caveat.serving", lang,
                            acc=c["accelerator"], rps=sig(c["value"][key]), term=c["value"].get("term") or "",
                            flip=flip, rows=c["value"].get("rows", 0), sources=c["value"].get("sources", 0)))
        else:
            v = c["value"]
            if be and "amount" in be:
                flip = tr("trust.flip.price_native", lang, usd=f"{be['usd_per_device_hour']:.2f}",
                          amount=f"{be['amount']:,.0f}", currency=be["currency"],
                          per=tr(f"trust.per.{be['per']}", lang))
            elif be:
                flip = tr("trust.flip.price", lang, usd=f"{be['usd_per_device_hour']:.2f}")
            else:
                flip = tr("trust.flip.none", lang)
            lines.append(tr("trust.caveat.price", lang, acc=c["accelerator"], usd=f"{v['usd_per_device_hour']:.2f}",
                            source=v["source"], as_of=v["as_of"], confidence=_level(v["confidence"], lang),
                            instance=v["instance"], flip=flip))
    alt = rec.get("confirmed_alternative")
    if any(c["input"] in ("efficiency", "price", "purchase") for c in rec.get("caveats") or []):
        if alt and "cost_usd_per_hour" in alt:
            lines.append(tr("trust.confirmed_fleet", lang, replicas=alt["replicas"], acc=alt["accelerator"],
                            instance=alt.get("instance") or "-", cost=f"{alt['cost_usd_per_hour']:,.2f}"))
        elif alt:
            lines.append(_alt_line("trust.confirmed_alt", alt, lang))
        else:
            lines.append(tr("trust.no_confirmed", lang))
    rdma = rec.get("rdma_alternative")
    if rdma:  # the recommendation crosses nodes over TCP, which the advisor calls critical
        lines.append(_alt_line("trust.rdma_alt", rdma, lang))
    return lines


def _alt_line(key: str, alt: Mapping[str, Any], lang: str) -> str:
    """One alternative training plan under the table: devices x part (offer), time with its band, cost."""
    return tr(key, lang, devices=alt["devices"], acc=alt["accelerator"], offer=_where(alt, lang),
              time=band_duration(alt.get("time_s"), (alt.get("band") or {}).get("time_to_train_s"), lang),
              cost=_usd(alt.get("cost_usd"), lang, alt.get("purchase_usd")))


def market_lines(rec: Mapping[str, Any], lang: str) -> list[str]:
    """The best plan of each market, when plans of several markets were ranked together."""
    per = rec.get("best_per_market") or {}
    if len(per) < 2:
        return []
    items = tr("trust.list_sep", lang).join(
        tr("trust.market_fleet", lang, market=tr(f"trust.market.{m}", lang), replicas=p["replicas"],
           acc=p["accelerator"], instance=p.get("instance") or "-", cost=f"{p['cost_usd_per_hour']:,.2f}")
        if "cost_usd_per_hour" in p else
        tr("trust.market_item", lang, market=tr(f"trust.market.{m}", lang), devices=p["devices"],
           acc=p["accelerator"], offer=_where(p, lang), time=Duration(p["time_s"]).text(lang),
           cost=_usd(p.get("cost_usd"), lang, p.get("purchase_usd"))) for m, p in per.items())
    return [tr("trust.per_market", lang, items=items)]


def _usd(cost: float | None, lang: str, purchase: float | None = None) -> str:
    if not cost and purchase:  # an own cluster the catalog prices to buy
        return tr("report.buy_cost", lang, usd=f"{purchase:,.0f}") + " USD"
    return tr("trust.usd", lang, usd=f"{cost:,.0f}") if cost else tr("cli.plan.no_price", lang)


def _where(plan: Mapping[str, Any], lang: str) -> str:
    """The offer, or "own cluster, <fabric>" (offer_text)."""
    return offer_text(plan, lang)


def _basis_text(group: str, b: Any, lang: str) -> str:
    """'throughput: train/validated/... (127 rows, 15 sources)' in `lang` (old reports stored a string)."""
    if not isinstance(b, Mapping):
        return f"{group}: {b}"
    text = tr("trust.basis_item", lang, group=tr(f"trust.group.{group}", lang), cls=b["class"], rows=b["rows"],
              sources=b["sources"])
    text += tr("trust.widened", lang, cls=b["widened_to"]) if b.get("widened_to") else ""
    if b.get("novelty_factor"):  # estimate/uncertainty.novelty_factor: learned from the held-out folds
        why = tr("trust.list_sep", lang).join(tr(f"trust.novelty.{k}", lang) for k in b.get("novelty", ()))
        text += tr("trust.novelty", lang, factor=f"{float(b['novelty_factor']):.2f}", why=why)
    return text


def trust_lines(rec: Mapping[str, Any], lang: str) -> list[str]:
    """Everything the CLI prints under the table about how sure the recommendation is."""
    lines = [tr("trust.recommended_conf", lang, text=confidence_text(rec.get("confidence"), lang, short=False))]
    basis = rec.get("band_basis") or {}
    if basis:
        lines.append(tr("trust.band_basis", lang, basis=tr("trust.list_sep", lang).join(
            _basis_text(k, v, lang) for k, v in basis.items())))
    return lines + caveat_lines(rec, lang) + market_lines(rec, lang)


def pd_line(result: Mapping[str, Any], lang: str) -> str:
    """One line on the disaggregated fleet the advisor would name (`what_if_pd`, never a plan): how it was sized
    and its cost against the recommendation; "" without one."""
    pd = result.get("what_if_pd")
    rec = result.get("recommended") or {}
    if not pd or not rec.get("cost_usd_per_hour"):
        return ""
    diff = float(pd["usd_per_hour"]) / float(rec["cost_usd_per_hour"]) - 1.0
    # like for like: a fleet at other weights than the recommendation's says so (an fp8 fleet against int4)
    weights, rec_weights = str(pd.get("weights") or ""), str(rec.get("weights") or "")
    formats = (tr("cli.pinfer.pd.formats", lang, rec_weights=rec_weights)
               if weights and rec_weights and weights != rec_weights else "")
    key = "cli.pinfer.pd_recommended" if result.get("recommended_disaggregated") else "cli.pinfer.pd"
    if pd.get("heterogeneous"):  # prefill on one part, decode on another (search/infer_pd_mixed.py)
        key += "_mixed"
    return tr(key, lang, p=pd["prefill"]["devices"], d=pd["decode"]["devices"], acc=pd["accelerator"],
              p_acc=pd["prefill"].get("accelerator", ""), d_acc=pd["decode"].get("accelerator", ""),
              provider=pd.get("provider", ""),
              weights=weights, usd=float(pd["usd_per_hour"]), diff=diff, formats=formats,
              how=tr("cli.pinfer.pd.simulated" if pd.get("simulated") else "cli.pinfer.pd.closed", lang))


def misses_line(parts: Sequence[Mapping[str, Any]], ttft_limit_s: float, tpot_limit_s: float, lang: str) -> str:
    """One line on the parts searched that have no fleet (`parts_without_plan`) and why; "" without any."""
    if not parts:
        return ""
    items = []
    for m in parts:
        why = m["reason"]
        if why == "tpot_slo":
            text = tr("cli.pinfer.miss.tpot", lang, ms=float(m["tpot_s"]) * 1e3, limit=tpot_limit_s * 1e3,
                      on=m.get("tpot_on", ""))
        elif why == "ttft_slo":
            text = tr("cli.pinfer.miss.ttft", lang, s=float(m["ttft_s"]), limit=ttft_limit_s, on=m.get("ttft_on", ""))
        elif why == "weights_unsupported":
            text = tr("cli.pinfer.miss.weights_unsupported", lang, weights=", ".join(m.get("weights") or []))
        else:
            text = tr(f"cli.pinfer.miss.{why}", lang)
        items.append(tr("cli.pinfer.miss_item", lang, acc=m["accelerator"], why=text))
    return tr("cli.pinfer.misses", lang, items=tr("trust.list_sep", lang).join(items))


def offer_text(plan: Mapping[str, Any], lang: str) -> str:
    """Where a plan's cluster comes from: the offer that prices it, or an own / as-specified cluster."""
    opt = plan.get("hardware_option") or {}
    if opt.get("offer"):
        return str(opt["offer"])
    net = opt.get("network") or "-"
    return tr("report.offer.as_specified" if opt.get("kind") == "as_specified" else "report.offer.own", lang, net=net)
