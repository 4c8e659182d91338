"""The text of `plan infer --traffic` (CLI, HTML report, web page): the schedule in spans of equal replicas, the
scale-up time, the purchase mix against all on demand, the spot scenario and the prices' provenance (en/zh)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplan.i18n import tr
from gpuplan.units import sig

__all__ = ["kind_text", "schedule_spans", "traffic_lines"]


def kind_text(kind: str, lang: str) -> str:
    return tr(f"traffic.kind.{kind}", lang)


def _when(row: Mapping[str, Any], lang: str) -> str:
    day = row.get("day")
    return (tr(f"traffic.day.{day}", lang) + " " if day else "") + f"{int(row['hour']):02d}:00"


def schedule_spans(rows: Sequence[Mapping[str, Any]], lang: str) -> list[str]:
    """One line per run of hours with the same replicas: when, the rates it covers, replicas and instances; in a
    week, consecutive days with the same replicas hour by hour are written once ("Mon-Fri")."""
    if not rows or rows[0].get("day") is None:
        return _spans(rows, lang, "")
    days = [list(rows[i:i + 24]) for i in range(0, len(rows), 24)]
    out: list[str] = []
    i = 0
    while i < len(days):
        j = i
        same = [(r["replicas"], r["cost_usd_per_hour"]) for r in days[i]]
        while j + 1 < len(days) and [(r["replicas"], r["cost_usd_per_hour"]) for r in days[j + 1]] == same:
            j += 1
        first, last = (tr(f"traffic.day.{days[k][0]['day']}", lang) for k in (i, j))
        merged = [{**r, "day": None, "qps_all": [days[k][h]["qps"] for k in range(i, j + 1)]}
                  for h, r in enumerate(days[i])]
        out += _spans(merged, lang, first if i == j else f"{first}-{last}")
        i = j + 1
    return out


def _spans(rows: Sequence[Mapping[str, Any]], lang: str, days: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1]["replicas"] == rows[i]["replicas"] and (
                rows[j + 1].get("day") == rows[i].get("day")):
            j += 1
        qps = [float(q) for r in rows[i:j + 1] for q in r.get("qps_all", [r["qps"]])]
        end = int(rows[j]["hour"]) + 1
        rate = sig(min(qps)) if min(qps) == max(qps) else f"{sig(min(qps))}-{sig(max(qps))}"
        start = (days + " " if days else "") + _when(rows[i], lang)
        out.append(tr("traffic.span", lang, start=start, end=f"{end:02d}:00", rate=rate,
                      replicas=rows[i]["replicas"],
                      instances=rows[i]["instances"], devices=rows[i]["devices"],
                      usd=rows[i]["cost_usd_per_hour"]))
        i = j + 1
    return out


def _rate_line(r: Mapping[str, Any], lang: str) -> str:
    derived = tr("traffic.derived", lang, how=r["derived"]) if r.get("derived") else ""
    return tr("traffic.rate", lang, kind=kind_text(r["kind"], lang), usd=r["usd_per_instance_hour"],
              instance=r["instance"], source=r["source"], as_of=r["as_of"], confidence=r["confidence"],
              derived=derived)


def traffic_lines(doc: Mapping[str, Any], lang: str) -> list[str]:
    """The whole answer as lines of text, in `lang`."""
    t, mix = doc["traffic"], doc["purchase_mix"]
    fleet, up = mix["fleet"], mix["scale_up"]
    out = [tr("traffic.title", lang, span=tr("traffic.week" if t["weekly"] else "traffic.day", lang),
              label=t["label"], peak=sig(t["peak_qps"]), acc=fleet["accelerator"], instance=fleet["instance"],
              replicas=fleet["replicas"], devices=fleet["devices"], weights=fleet["weights"],
              tp=fleet["layout"]["tp"], pp=fleet["layout"]["pp"])]
    out += ["  " + s for s in schedule_spans(doc["schedule"], lang)]
    out.append(tr("traffic.scale_up", lang, total=up["total_s"], inst=up["instance_start_s"],
                  read=up["weights_read_s"], eng=up["engine_start_s"], lead=up["lead_hours"]))
    out.append(tr("traffic.caveat", lang))
    c, od = mix["chosen"], mix["all_on_demand"]
    rates = mix["rates"]
    if c is not None:
        # a baseline instance-hour: the committed rate, or owning's monthly cost over the baseline's hours
        rate = c["baseline_usd"] / (c["baseline_instances"] * 730.0) if c["baseline_instances"] else 0.0
        if c["commit"] == "on_demand":
            out.append(tr("traffic.mix_on_demand", lang, usd=c["monthly_usd"], per_m=sig(c["usd_per_million_tokens"]),
                          peak=mix["peak_instances"], instance=fleet["instance"]))
        elif c["burst"] is None:
            out.append(tr("traffic.mix_peak", lang, n=c["baseline_instances"], instance=fleet["instance"],
                          kind=kind_text(c["commit"], lang), rate=rate,
                          usd=c["monthly_usd"], per_m=sig(c["usd_per_million_tokens"])))
        else:
            out.append(tr("traffic.mix", lang, n=c["baseline_instances"], instance=fleet["instance"],
                          kind=kind_text(c["commit"], lang), rate=rate,
                          hours=c["burst_instance_hours"], od=rates["on_demand"]["usd_per_instance_hour"],
                          usd=c["monthly_usd"], per_m=sig(c["usd_per_million_tokens"]),
                          be=c["break_even_utilization"]))
    pub = mix.get("chosen_published")
    if mix.get("chosen_rate_derived") and pub is not None and c is not None:
        key = "traffic.published_on_demand" if pub["commit"] == "on_demand" else "traffic.published"
        out.append(tr(key, lang, kind=kind_text(c["commit"], lang),
                      pub_kind=kind_text(pub["commit"], lang), n=pub["baseline_instances"], usd=pub["monthly_usd"],
                      per_m=sig(pub["usd_per_million_tokens"])))
    if mix["no_on_demand"]:
        out.append(tr("traffic.no_on_demand", lang, instance=fleet["instance"]))
    if od is not None and c is not None and c["commit"] != "on_demand":
        out.append(tr("traffic.vs_on_demand", lang, usd=od["monthly_usd"], per_m=sig(od["usd_per_million_tokens"]),
                      save=mix["savings_vs_all_on_demand"] or 0.0))
    out.append(tr("traffic.always_on", lang, usd=mix["always_on_peak_usd"]))
    owned = next((o for o in mix["options"] if o["commit"] == "owned"), None)
    if owned is not None and (c is None or c["commit"] != "owned"):
        out.append(tr("traffic.owned", lang, n=owned["baseline_instances"], devices=owned["baseline_devices"],
                      usd=owned["monthly_usd"], per_m=sig(owned["usd_per_million_tokens"])))
    for s in mix["spot"]:
        if s["burst"] == "spot":
            key = "traffic.spot" if s["baseline_instances"] else "traffic.spot_all"
            out.append(tr(key, lang, n=s["baseline_instances"], kind=kind_text(s["commit"], lang),
                          usd=s["monthly_usd"], reclaims=s["expected_preemptions_per_month"],
                          secs=up["total_s"]))
    cheaper = mix.get("cheaper_fleet")
    if cheaper is not None:
        out.append(tr("traffic.cheaper", lang, acc=cheaper["accelerator"], instance=cheaper["instance"],
                      weights=cheaper["weights"], usd=cheaper["mix"]["monthly_usd"],
                      kind=kind_text(cheaper["mix"]["commit"], lang)))
    out.append(tr("traffic.prices", lang))
    out += ["  " + _rate_line(r, lang) for r in rates.values()]
    return out
