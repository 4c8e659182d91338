"""The Markdown report (the same document as the HTML report, tables instead of charts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplan.i18n import not_recommended, tr
from gpuplan.render.report_text import (
    bottleneck_text,
    cost_text,
    finding_rows,
    fmt,
    fmt_sig,
    growth_line,
    infer_job_lines,
    infer_memory_rows,
    infer_rows,
    infer_rule_line,
    job_lines,
    offer_text,
    plan_rows,
    prov,
    rel_line,
    rule_line,
    tco_lines,
    tco_rows,
)
from gpuplan.render.split_text import split_lines
from gpuplan.render.traffic_text import traffic_lines
from gpuplan.render.trust_text import band_duration, confidence_text, trust_lines

__all__ = ["md_table", "render_markdown"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _section(key: str, lang: str) -> str:
    return f"\n## {tr(f'report.section.{key}', lang)}\n"


def render_markdown(doc: Mapping[str, Any], lang: str) -> str:
    """The report document as Markdown in `lang`, with no raw HTML: names a user chose (a model's name from an
    uploaded config.json, a quote's provider) could hold tags, which Markdown viewers render; every `<` is written
    as `&lt;` (shown as `<`, never read as a tag)."""
    kind = doc["kind"]
    text = _compare(doc, lang) if kind in ("compare", "compare_infer") else \
        _infer(doc, lang) if kind == "infer" else _train(doc, lang)
    return text.replace("<", "&lt;")


def _train(doc: Mapping[str, Any], lang: str) -> str:
    out = [f"# {tr('report.title.train', lang, model=doc['job']['model'])}", "",
           tr("report.generated", lang, date=doc["generated"], version=doc["gpuplan_version"]),
           _section("job", lang), *job_lines(doc, lang)]
    rec = doc.get("recommendation")
    if rec is None:
        out += ["", tr("report.no_plan", lang), tr("report.rejected", lang, rejected=doc.get("rejected"))]
        return "\n".join(out) + "\n"
    out += [_section("recommendation", lang), md_table(*plan_rows([rec], lang)), "",
            rule_line(rec, lang), "", *(f"- {line}" for line in trust_lines(rec, lang)), "",
            f"{tr('report.col.bottleneck', lang)}: {bottleneck_text(doc['breakdown_s'], lang)}"]
    if doc["runners_up"]:
        out += [_section("runners_up", lang), md_table(*plan_rows(doc["runners_up"], lang))]
    out += [_section("findings", lang), md_table(*finding_rows(doc["findings"], lang))]
    out += [_section("pareto", lang), md_table(*plan_rows(doc["pareto"], lang))]
    est = prov("estimated", lang)
    out += [_section("memory", lang), md_table(
        [tr("report.col.part", lang), "GiB", tr("report.col.provenance", lang)],
        [[tr(f"report.part.{k}", lang), fmt(v, ".2f"), est] for k, v in doc["memory_gib"].items()]
        + [[tr("report.chart.device_memory", lang), fmt(doc["device_memory_gib"], ".1f"), prov("datasheet", lang)]])]
    out += [_section("step", lang), md_table(
        [tr("report.col.part", lang), "s", "%", tr("report.col.provenance", lang)],
        [[tr(f"report.step.{k}", lang), fmt(v, ".3f"), fmt(v / max(sum(doc["breakdown_s"].values()), 1e-12), ".0%"),
          est] for k, v in doc["breakdown_s"].items() if v])]
    out += [_section("scaling", lang), md_table(*plan_rows(doc["scaling"], lang))]
    if doc.get("tco"):
        out += [_section("tco", lang), md_table(*tco_rows(doc["tco"], lang)), "",
                *[f"- {line}" for line in tco_lines(doc["tco"], lang)]]
    rel = doc["reliability"]
    out += [_section("assumptions", lang),
            *[f"- {tr('report.assume.line', lang, name=k, value=v)}" for k, v in doc["assumptions"].items()],
            "- " + rel_line(rel, lang),
            f"- {tr('report.rejected', lang, rejected=doc.get('rejected'))}"]
    out += [_section("calibration", lang), md_table(
        [tr(f"report.col.{c}", lang) for c in ("name", "value", "source", "provenance")],
        [[c["name"], f"{fmt(c['value'], 'g')} {c['unit']}", c["source"], prov(c["provenance"], lang)]
         for c in doc["calibration"]])]
    if doc.get("thresholds"):
        out += [_section("thresholds", lang), md_table(
            [tr(f"report.col.{c}", lang) for c in ("name", "value", "source")],
            [[k, f"{fmt(v['value'], 'g')} {v['unit']}", v["source"]] for k, v in doc["thresholds"].items()])]
    out += [_section("sources", lang), md_table(
        [tr(f"report.col.{c}", lang) for c in ("what", "source", "provenance")],
        [[s.get(f"what_{lang}", s["what"]), f"{s.get(f'source_{lang}', s['source'])} {s['as_of']}".strip(),
          prov(s["kind"], lang)] for s in doc["sources"]])]
    return "\n".join(out) + "\n"


def compare_rows(doc: Mapping[str, Any], lang: str) -> tuple[list[str], list[list[str]]]:
    cols = ("accelerator", "offer", "devices", "time", "cost", "mfu", "headroom", "risk", "findings", "provenance")
    head = [tr(f"report.col.{c}", lang) for c in cols]
    rows = []
    for o in doc["options"]:
        p = o["plan"]
        crit = sum(f["severity"] == "critical" for f in o["findings"])
        warn = sum(f["severity"] == "warn" for f in o["findings"])
        if p is None:
            blocked = o.get("not_recommended")
            rows.append([o["accelerator"], "-", "-", "-", "-", "-", "-", tr(f"report.risk.{o['ecosystem_risk']}", lang),
                         not_recommended(blocked, lang) if blocked
                         else tr("report.no_plan_short", lang), "-"])
            continue
        rows.append([o["accelerator"], offer_text(p, lang), str(p["devices"]),
                     band_duration(p.get("time_s") if p.get("time_s") is not None
                                   else (p["days"] * 86400.0 if p.get("days") is not None else None),
                                   (p.get("band") or {}).get("time_to_train_s"), lang),
                     cost_text(p, lang, tr("cli.plan.no_price", lang)),  # a purchase shows its capex
                     fmt(p["mfu"], ".1%"), fmt(o["memory_headroom"], ".0%"),
                     tr(f"report.risk.{o['ecosystem_risk']}", lang),
                     f"{crit}/{warn}" + (f"; {not_recommended(o['not_recommended'], lang)}"
                                         if o.get("not_recommended") else ""),
                     confidence_text(p.get("confidence"), lang) if p.get("confidence") else prov("estimated", lang)])
    return head, rows


def compare_infer_rows(doc: Mapping[str, Any], lang: str) -> tuple[list[str], list[list[str]]]:
    cols = ("accelerator", "devices", "weights", "usd_h", "usd_m", "ttft", "tpot", "util", "risk", "findings",
            "provenance")
    head = [tr(f"report.col.{c}", lang) for c in cols]
    rows = []
    for o in doc["options"]:
        p = o["plan"]
        risk = tr(f"report.risk.{o['ecosystem_risk']}", lang)
        if p is None:
            rows.append([o["accelerator"], "-", "-", "-", "-", "-", "-", "-", risk, tr("report.no_plan_short", lang),
                         "-"])
            continue
        crit = sum(f["severity"] == "critical" for f in o["findings"])
        warn = sum(f["severity"] == "warn" for f in o["findings"])
        rows.append([o["accelerator"], str(p["devices"]), p["weights"], fmt(p["usd_per_hour"], ",.2f"),
                     fmt_sig(p["usd_per_million_tokens"]), fmt(p["ttft_p99_s"], ".3f"),
                     fmt(p["tpot_p99_s"] * 1e3, ".1f"), fmt(p["utilization"], ".0%"), risk, f"{crit}/{warn}",
                     prov("estimated", lang)])
    return head, rows


def _compare(doc: Mapping[str, Any], lang: str) -> str:
    infer = doc["kind"] == "compare_infer"
    rows = compare_infer_rows(doc, lang) if infer else compare_rows(doc, lang)
    out = [f"# {tr('report.title.compare', lang, model=doc['job']['model'])}", "",
           tr("report.generated", lang, date=doc["generated"], version=doc["gpuplan_version"]),
           _section("job", lang), *(infer_job_lines(doc, lang) if infer else job_lines(doc, lang)),
           _section("options", lang), md_table(*rows)]
    for o in doc["options"]:
        if o["plan"] is None:
            out += [f"\n### {o['accelerator']}\n", tr("report.rejected", lang, rejected=o["rejected"])]
        elif o["findings"]:
            out += [f"\n### {o['accelerator']}\n", md_table(*finding_rows(o["findings"], lang))]
    return "\n".join(out) + "\n"


def _infer(doc: Mapping[str, Any], lang: str) -> str:
    out = [f"# {tr('report.title.infer', lang, model=doc['job']['model'])}", "",
           tr("report.generated", lang, date=doc["generated"], version=doc["gpuplan_version"]),
           _section("job", lang), *infer_job_lines(doc, lang)]
    rec = doc.get("recommendation")
    if rec is None:
        out += ["", tr("report.no_plan", lang), tr("report.rejected", lang, rejected=doc.get("rejected"))]
        return "\n".join(out) + "\n"
    out += [_section("recommendation", lang), md_table(*infer_rows([rec], lang)), "", infer_rule_line(rec, lang),
            "", *(f"- {line}" for line in trust_lines(rec, lang))]
    if doc["runners_up"]:
        out += [_section("runners_up", lang), md_table(*infer_rows(doc["runners_up"], lang))]
    out += [_section("findings", lang), md_table(*finding_rows(doc["findings"], lang))]
    out += [_section("cost_latency", lang), md_table(*infer_rows(doc["plans"], lang))]
    lat = doc["latency"]
    out += [_section("latency", lang), md_table(
        ["", "mean", "p50", "p90", "p99", tr("report.col.provenance", lang)],
        [[k.removesuffix("_s").upper(), *(fmt(v[q], ".4f") for q in ("mean", "p50", "p90", "p99")),
          prov("estimated", lang)] for k, v in lat.items()])]
    if doc.get("memory"):
        head, rows, line = infer_memory_rows(doc["memory"], lang)
        out += [_section("memory", lang), md_table(head, rows), "", line]
    grow = growth_line(doc, lang)
    if grow:
        out += [_section("growth", lang), grow]
    split = split_lines(doc, lang)  # a cheap part for short requests (search/infer_length_split.py)
    if split:
        out += [_section("length_split", lang), *[f"- {line}" for line in split]]
    if doc.get("traffic"):  # plan infer --traffic: schedule and purchase mix (render/traffic_text.py)
        out += [_section("traffic", lang), *[f"- {line.strip()}" for line in traffic_lines(doc["traffic"], lang)]]
    if doc.get("tco"):
        out += [_section("tco", lang), md_table(*tco_rows(doc["tco"], lang)), "",
                *[f"- {line}" for line in tco_lines(doc["tco"], lang)]]
    out += [_section("assumptions", lang),
            *[f"- {tr('report.assume.line', lang, name=k, value=v)}" for k, v in doc["assumptions"].items()],
            f"- {tr('report.rejected', lang, rejected=doc.get('rejected'))}"]
    out += [_section("calibration", lang), md_table(
        [tr(f"report.col.{c}", lang) for c in ("name", "value", "source", "provenance")],
        [[c["name"], f"{fmt(c['value'], 'g')} {c['unit']}", c["source"], prov(c["provenance"], lang)]
         for c in doc["calibration"]])]
    out += [_section("sources", lang), md_table(
        [tr(f"report.col.{c}", lang) for c in ("what", "source", "provenance")],
        [[s.get(f"what_{lang}", s["what"]), f"{s.get(f'source_{lang}', s['source'])} {s['as_of']}".strip(),
          prov(s["kind"], lang)] for s in doc["sources"]])]
    return "\n".join(out) + "\n"
