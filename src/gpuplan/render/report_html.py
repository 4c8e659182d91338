"""The self-contained HTML report: the Markdown report's tables plus plotly charts.

plotly.js is embedded from the installed plotly package (no network needed to open the file).
Charts: cost vs time of every plan with the Pareto front and the recommendation, memory per
device against the device memory, the step-time breakdown, the scaling curve (devices vs days,
cost and MFU: the planner re-run at each cluster size), and job cost by rental kind.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from gpuplan.i18n import tr
from gpuplan.render.report_md import compare_infer_rows, compare_rows
from gpuplan.render.report_text import (
    bottleneck_text,
    finding_rows,
    fmt,
    growth_line,
    infer_job_lines,
    infer_memory_rows,
    infer_rows,
    infer_rule_line,
    job_lines,
    plan_rows,
    prov,
    rel_line,
    rule_line,
    tco_lines,
    tco_rows,
)
from gpuplan.render.split_text import split_lines
from gpuplan.render.traffic_text import traffic_lines
from gpuplan.render.trust_text import trust_lines

__all__ = ["render_html", "render_infer_html"]

FONT = "'Noto Sans CJK SC', 'Noto Sans SC', 'PingFang SC', 'Microsoft YaHei', 'Helvetica Neue', Arial, sans-serif"
CSS = f"""
body {{ font-family: {FONT}; margin: 2rem auto; max-width: 1180px; color: #1f2933; line-height: 1.45; }}
h1 {{ font-size: 1.7rem; margin-bottom: .2rem; }} h2 {{ margin-top: 2rem; border-bottom: 1px solid #d9e2ec; }}
table {{ border-collapse: collapse; width: 100%; font-size: .85rem; margin: .6rem 0; }}
th, td {{ border: 1px solid #d9e2ec; padding: .3rem .45rem; text-align: left; vertical-align: top; }}
th {{ background: #f0f4f8; }} .muted {{ color: #627d98; font-size: .85rem; }}
.sev-critical {{ color: #fff; background: #c53030; }} .sev-warn {{ background: #fbd38d; }}
.sev-info {{ background: #e6fffa; }} .chart {{ min-height: 360px; }}
"""


@cache
def _plotly_js() -> str:
    return str(get_plotlyjs())


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], sev_col: int | None = None,
           sev: Sequence[str] = ()) -> str:
    out = ["<table><thead><tr>", *(f"<th>{html.escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        out.append("<tr>")
        for j, cell in enumerate(row):
            cls = f' class="sev-{sev[i]}"' if sev_col is not None and j == sev_col and i < len(sev) else ""
            out.append(f"<td{cls}>{html.escape(cell)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _chart(fig: go.Figure, div_id: str) -> str:
    fig.update_layout(font={"family": FONT}, margin={"l": 60, "r": 20, "t": 50, "b": 50}, template="plotly_white")
    body: str = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                            config={"displayModeBar": False, "responsive": True})
    return f'<div class="chart">{body}</div>'


def _error_bars(ps: Sequence[Mapping[str, Any]], key: str, band_key: str | None = None,
                scale: float = 1.0) -> dict[str, Any]:
    """Asymmetric error bars from each plan's 80% band: `band_<key>` ([low, high]) or `band[band_key]`."""
    bands = [p.get(f"band_{key}") if band_key is None else (p.get("band") or {}).get(band_key) for p in ps]
    if not any(bands):
        return {"visible": False}
    return {"type": "data", "symmetric": False, "thickness": 1, "width": 2,
            "array": [(b[1] - p[key]) * scale if b else 0.0 for p, b in zip(ps, bands, strict=True)],
            "arrayminus": [(p[key] - b[0]) * scale if b else 0.0 for p, b in zip(ps, bands, strict=True)]}


def _pareto_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    fig = go.Figure()
    by_acc: dict[str, list[Mapping[str, Any]]] = {}
    for p in doc["plans"]:
        if p["cost_usd"] is not None:
            by_acc.setdefault(p["accelerator"], []).append(p)
    for acc, ps in by_acc.items():
        fig.add_trace(go.Scatter(x=[p["days"] for p in ps], y=[p["cost_usd"] for p in ps], mode="markers", name=acc,
                                 text=[f"{acc} x {p['devices']}" for p in ps], marker={"size": 7, "opacity": .6},
                                 error_x=_error_bars(ps, "days"), error_y=_error_bars(ps, "cost_usd")))
    front = doc["pareto"]
    fig.add_trace(go.Scatter(x=[p["days"] for p in front], y=[p["cost_usd"] for p in front], mode="lines+markers",
                             name=tr("report.chart.front", lang), line={"color": "black", "dash": "dot"}))
    rec = doc["recommendation"]
    if rec["cost_usd"] is not None:
        fig.add_trace(go.Scatter(x=[rec["days"]], y=[rec["cost_usd"]], mode="markers",
                                 name=tr("report.chart.recommended", lang),
                                 marker={"symbol": "star", "size": 18, "color": "#c53030"}))
    fig.update_layout(title=tr("report.section.pareto", lang), height=460,
                      xaxis={"title": tr("report.axis.days", lang), "type": "log"},
                      yaxis={"title": tr("report.axis.cost", lang), "type": "log"})
    return fig


def _memory_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    fig = go.Figure()
    label = [f"{doc['recommendation']['accelerator']}"]
    for part, gib in doc["memory_gib"].items():
        fig.add_trace(go.Bar(x=label, y=[gib], name=tr(f"report.part.{part}", lang)))
    fig.add_hline(y=doc["device_memory_gib"], line_dash="dash", line_color="#c53030",
                  annotation_text=f"{tr('report.chart.device_memory', lang)} {doc['device_memory_gib']:.0f} GiB")
    fig.update_layout(barmode="stack", title=tr("report.section.memory", lang), height=420,
                      yaxis={"title": tr("report.axis.gib", lang)})
    return fig


def _step_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    items = [(tr(f"report.step.{k}", lang), v) for k, v in doc["breakdown_s"].items() if v]
    fig = go.Figure(go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h"))
    fig.update_layout(title=tr("report.section.step", lang), height=360,
                      xaxis={"title": tr("report.axis.seconds", lang)})
    return fig


def _scaling_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    pts = doc["scaling"]
    fig = make_subplots(rows=1, cols=3, subplot_titles=(tr("report.axis.days", lang), tr("report.axis.cost", lang),
                                                        tr("report.axis.mfu", lang)))
    x = [p["devices"] for p in pts]
    fig.add_trace(go.Scatter(x=x, y=[p["days"] for p in pts], mode="lines+markers", name=tr("report.col.days", lang)),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=[p["cost_usd"] for p in pts], mode="lines+markers",
                             name=tr("report.col.cost", lang)), row=1, col=2)
    fig.add_trace(go.Scatter(x=x, y=[p["mfu"] for p in pts], mode="lines+markers", name="MFU"), row=1, col=3)
    for col in (1, 2, 3):
        fig.update_xaxes(type="log", title_text=tr("report.axis.devices", lang), row=1, col=col)
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_yaxes(tickformat=".0%", row=1, col=3)
    fig.update_layout(title=f"{tr('report.section.scaling', lang)} ({doc['recommendation']['accelerator']})",
                      height=400, showlegend=False)
    return fig


def _tco_chart(t: Mapping[str, Any], lang: str) -> go.Figure:
    items = [(tr(f"report.tco.{k}", lang), v) for k, v in t["job_cost_usd"].items() if v is not None]
    fig = go.Figure(go.Bar(x=[k for k, _ in items], y=[v for _, v in items]))
    fig.update_layout(title=tr("report.section.tco", lang), height=380, yaxis={"title": tr("report.axis.cost", lang)})
    return fig


def _compare_charts(doc: Mapping[str, Any], lang: str) -> list[str]:
    opts = [o for o in doc["options"] if o["plan"] is not None]
    names = [o["accelerator"] for o in opts]
    if doc["kind"] == "compare_infer":
        left, right = ("usd_per_hour", "report.axis.usd_h"), ("tpot_p99_s", "report.axis.tpot_ms")
    else:
        left, right = ("days", "report.axis.days"), ("cost_usd", "report.axis.cost")
    fig = make_subplots(rows=1, cols=2, subplot_titles=(tr(left[1], lang), tr(right[1], lang)))
    scale = 1e3 if right[0] == "tpot_p99_s" else 1.0
    fig.add_trace(go.Bar(x=names, y=[o["plan"][left[0]] for o in opts]), row=1, col=1)
    fig.add_trace(go.Bar(x=names, y=[o["plan"][right[0]] * scale if o["plan"][right[0]] is not None else None
                                     for o in opts]), row=1, col=2)
    fig.update_layout(title=tr("report.section.options", lang), height=420, showlegend=False)
    return [_chart(fig, "chart-compare")]


def _head(title: str, lang: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style><script>{_plotly_js()}</script></head><body>")


def _h2(key: str, lang: str) -> str:
    return f'<h2 id="sec-{key}">{html.escape(tr(f"report.section.{key}", lang))}</h2>'


def _p(text: str, cls: str = "") -> str:
    return f'<p{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>{html.escape(text)}</p>'


def _findings(findings: list[Mapping[str, Any]], lang: str) -> str:
    return _table(*finding_rows(findings, lang), sev_col=0, sev=[f["severity"] for f in findings])


def render_html(doc: Mapping[str, Any], lang: str) -> str:
    """The report document as one self-contained HTML page in `lang`."""
    if doc["kind"] == "infer":
        return render_infer_html(doc, lang)
    kind = "compare" if doc["kind"] in ("compare", "compare_infer") else "train"
    infer = doc["kind"] == "compare_infer"
    title = tr(f"report.title.{kind}", lang, model=doc["job"]["model"])
    out = [_head(title, lang), f"<h1>{html.escape(title)}</h1>",
           _p(tr("report.generated", lang, date=doc["generated"], version=doc["gpuplan_version"]), "muted"),
           _p(tr("report.offline", lang), "muted"), _h2("job", lang),
           *(_p(line) for line in (infer_job_lines(doc, lang) if infer else job_lines(doc, lang)))]
    if kind == "compare":
        rows = compare_infer_rows(doc, lang) if infer else compare_rows(doc, lang)
        out += [_h2("options", lang), _table(*rows), *_compare_charts(doc, lang)]
        for o in doc["options"]:
            if o["plan"] is None:
                out += [f"<h3>{html.escape(o['accelerator'])}</h3>",
                        _p(tr("report.rejected", lang, rejected=o["rejected"]))]
            elif o["findings"]:
                out += [f"<h3>{html.escape(o['accelerator'])}</h3>", _findings(o["findings"], lang)]
        return "".join(out) + "</body></html>\n"
    rec = doc.get("recommendation")
    if rec is None:
        out += [_p(tr("report.no_plan", lang)), _p(tr("report.rejected", lang, rejected=doc.get("rejected")))]
        return "".join(out) + "</body></html>\n"
    out += [_h2("recommendation", lang), _table(*plan_rows([rec], lang)),
            _p(rule_line(rec, lang), "muted"), *(_p(line, "trust") for line in trust_lines(rec, lang)),
            _p(f"{tr('report.col.bottleneck', lang)}: {bottleneck_text(doc['breakdown_s'], lang)}")]
    if doc["runners_up"]:
        out += [_h2("runners_up", lang), _table(*plan_rows(doc["runners_up"], lang))]
    out += [_h2("findings", lang), _findings(doc["findings"], lang)]
    out += [_h2("pareto", lang), _chart(_pareto_chart(doc, lang), "chart-pareto"), _table(*plan_rows(doc["pareto"],
                                                                                                   lang))]
    est = prov("estimated", lang)
    out += [_h2("memory", lang), _chart(_memory_chart(doc, lang), "chart-memory"), _table(
        [tr("report.col.part", lang), "GiB", tr("report.col.provenance", lang)],
        [[tr(f"report.part.{k}", lang), fmt(v, ".2f"), est] for k, v in doc["memory_gib"].items()]
        + [[tr("report.chart.device_memory", lang), fmt(doc["device_memory_gib"], ".1f"), prov("datasheet", lang)]])]
    out += [_h2("step", lang), _chart(_step_chart(doc, lang), "chart-step")]
    out += [_h2("scaling", lang), _chart(_scaling_chart(doc, lang), "chart-scaling"),
            _table(*plan_rows(doc["scaling"], lang))]
    if doc.get("tco"):
        out += [_h2("tco", lang), _chart(_tco_chart(doc["tco"], lang), "chart-tco"),
                _table(*tco_rows(doc["tco"], lang)),
                *(_p(line) for line in tco_lines(doc["tco"], lang))]
    out += [_h2("assumptions", lang), "<ul>",
            *(f"<li>{html.escape(tr('report.assume.line', lang, name=k, value=v))}</li>"
              for k, v in doc["assumptions"].items()),
            f"<li>{html.escape(rel_line(doc['reliability'], lang))}</li>",
            f"<li>{html.escape(tr('report.rejected', lang, rejected=doc.get('rejected')))}</li></ul>"]
    out += [_h2("calibration", lang), _table(
        [tr(f"report.col.{c}", lang) for c in ("name", "value", "source", "provenance")],
        [[c["name"], f"{fmt(c['value'], 'g')} {c['unit']}", c["source"], prov(c["provenance"], lang)]
         for c in doc["calibration"]])]
    if doc.get("thresholds"):
        out += [_h2("thresholds", lang), _table(
            [tr(f"report.col.{c}", lang) for c in ("name", "value", "source")],
            [[k, f"{fmt(v['value'], 'g')} {v['unit']}", v["source"]] for k, v in doc["thresholds"].items()])]
    out += [_h2("sources", lang), _table(
        [tr(f"report.col.{c}", lang) for c in ("what", "source", "provenance")],
        [[s.get(f"what_{lang}", s["what"]), f"{s.get(f'source_{lang}', s['source'])} {s['as_of']}".strip(),
          prov(s["kind"], lang)] for s in doc["sources"]])]
    return "".join(out) + "</body></html>\n"


def _cost_latency_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    fig = go.Figure()
    by_acc: dict[str, list[Mapping[str, Any]]] = {}
    for p in doc["plans"]:
        by_acc.setdefault(p["accelerator"], []).append(p)
    for acc, ps in by_acc.items():
        fig.add_trace(go.Scatter(x=[p["tpot_p99_s"] * 1e3 for p in ps], y=[p["usd_per_hour"] for p in ps],
                                 mode="markers", name=acc, marker={"size": 9},
                                 text=[f"{acc} {p['layout']} {p['weights']} x{p['replicas']}" for p in ps],
                                 error_x=_error_bars(ps, "tpot_p99_s", "tpot_s.p99", 1e3),
                                 error_y=_error_bars(ps, "usd_per_hour", "cost_usd_per_hour")))
    rec = doc["recommendation"]
    fig.add_trace(go.Scatter(x=[rec["tpot_p99_s"] * 1e3], y=[rec["usd_per_hour"]], mode="markers",
                             name=tr("report.chart.recommended", lang),
                             marker={"symbol": "star", "size": 18, "color": "#c53030"}))
    fig.add_vline(x=doc["job"]["tpot_p99_s"] * 1e3, line_dash="dash", line_color="#627d98",
                  annotation_text=f"SLO {doc['job']['tpot_p99_s'] * 1e3:g} ms")
    fig.update_layout(title=tr("report.section.cost_latency", lang), height=440,
                      xaxis={"title": tr("report.axis.tpot_ms", lang)}, yaxis={"title": tr("report.axis.usd_h", lang)})
    return fig


def _latency_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    fig = go.Figure()
    for q in ("p50", "p90", "p99"):
        fig.add_trace(go.Bar(x=[k.removesuffix("_s").upper() for k in doc["latency"]],
                             y=[v[q] for v in doc["latency"].values()], name=q))
    fig.update_layout(barmode="group", title=tr("report.section.latency", lang), height=380,
                      yaxis={"title": tr("report.axis.latency_s", lang), "type": "log"})
    return fig


def _infer_memory_chart(doc: Mapping[str, Any], lang: str) -> go.Figure:
    mem = doc["memory"]
    fig = go.Figure()
    rec = doc["recommendation"]
    label = [f"{rec['accelerator']} {rec['layout']} {rec['weights']}"]
    for part, gib in mem["parts_gib"].items():
        fig.add_trace(go.Bar(x=label, y=[gib], name=tr(f"report.part.{part}", lang)))
    fig.add_hline(y=mem["device_memory_gib"], line_dash="dash", line_color="#c53030",
                  annotation_text=f"{tr('report.chart.device_memory', lang)} {mem['device_memory_gib']:.0f} GiB")
    fig.add_hline(y=mem["engine_budget_gib"], line_dash="dot", line_color="#627d98",
                  annotation_text=f"{tr('report.chart.engine_budget', lang)} {mem['engine_budget_gib']:.1f} GiB",
                  annotation_position="bottom right")
    fig.update_layout(barmode="stack", title=tr("report.section.memory", lang), height=420,
                      yaxis={"title": tr("report.axis.gib", lang)})
    return fig


def _traffic_chart(t: Mapping[str, Any], lang: str) -> go.Figure:
    """Replicas per hour (bars: the committed baseline and the burst) and the fleet's cost per hour (line)."""
    rows = t["schedule"]
    x = [(tr(f"traffic.day.{r['day']}", lang) + " " if r.get("day") else "") + f"{r['hour']:02d}" for r in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=x, y=[r["baseline_instances"] for r in rows], name=tr("report.chart.baseline", lang),
                         marker={"color": "#2b6cb0"}, customdata=[[r["replicas"], r["qps"]] for r in rows],
                         hovertemplate="%{y} / %{customdata[0]} replicas, %{customdata[1]} req/s"),
                  secondary_y=False)
    fig.add_trace(go.Bar(x=x, y=[r["burst_instances"] for r in rows], name=tr("report.chart.burst", lang),
                         marker={"color": "#90cdf4"}), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r["cost_usd_per_hour"] for r in rows], mode="lines+markers",
                             name=tr("report.chart.cost_mix", lang), line={"color": "#c53030"}), secondary_y=True)
    if all(r["on_demand_usd_per_hour"] is not None for r in rows):
        fig.add_trace(go.Scatter(x=x, y=[r["on_demand_usd_per_hour"] for r in rows], mode="lines",
                                 name=tr("report.chart.cost_on_demand", lang),
                                 line={"color": "#627d98", "dash": "dot"}), secondary_y=True)
    fig.update_layout(barmode="stack", title=tr("report.section.traffic", lang), height=420,
                      xaxis={"title": tr("report.axis.hour", lang)})
    fig.update_yaxes(title_text=tr("report.axis.instances", lang), secondary_y=False)
    fig.update_yaxes(title_text=tr("report.axis.usd_h", lang), secondary_y=True, rangemode="tozero")
    return fig


def render_infer_html(doc: Mapping[str, Any], lang: str) -> str:
    """The inference report document (kind "infer") as one self-contained HTML page."""
    title = tr("report.title.infer", lang, model=doc["job"]["model"])
    out = [_head(title, lang), f"<h1>{html.escape(title)}</h1>",
           _p(tr("report.generated", lang, date=doc["generated"], version=doc["gpuplan_version"]), "muted"),
           _p(tr("report.offline", lang), "muted"), _h2("job", lang),
           *(_p(line) for line in infer_job_lines(doc, lang))]
    rec = doc.get("recommendation")
    if rec is None:
        out += [_p(tr("report.no_plan", lang)), _p(tr("report.rejected", lang, rejected=doc.get("rejected")))]
        return "".join(out) + "</body></html>\n"
    out += [_h2("recommendation", lang), _table(*infer_rows([rec], lang)), _p(infer_rule_line(rec, lang), "muted"),
            *(_p(line, "trust") for line in trust_lines(rec, lang))]
    if doc["runners_up"]:
        out += [_h2("runners_up", lang), _table(*infer_rows(doc["runners_up"], lang))]
    out += [_h2("findings", lang), _findings(doc["findings"], lang)]
    out += [_h2("cost_latency", lang), _chart(_cost_latency_chart(doc, lang), "chart-cost-latency"),
            _table(*infer_rows(doc["plans"], lang))]
    out += [_h2("latency", lang), _chart(_latency_chart(doc, lang), "chart-latency")]
    if doc.get("memory"):
        head, rows, line = infer_memory_rows(doc["memory"], lang)
        out += [_h2("memory", lang), _chart(_infer_memory_chart(doc, lang), "chart-memory"), _table(head, rows),
                _p(line, "muted")]
    grow = growth_line(doc, lang)
    if grow:
        out += [_h2("growth", lang), _p(grow)]
    split = split_lines(doc, lang)  # a cheap part for short requests (search/infer_length_split.py)
    if split:
        out += [_h2("length_split", lang), *(_p(line) for line in split)]
    if doc.get("traffic"):  # plan infer --traffic: replicas and cost per hour, then the mix in words
        out += [_h2("traffic", lang), _chart(_traffic_chart(doc["traffic"], lang), "chart-traffic"),
                *(_p(line.strip()) for line in traffic_lines(doc["traffic"], lang))]
    if doc.get("tco"):
        out += [_h2("tco", lang), _chart(_tco_chart(doc["tco"], lang), "chart-tco"),
                _table(*tco_rows(doc["tco"], lang)), *(_p(line) for line in tco_lines(doc["tco"], lang))]
    out += [_h2("assumptions", lang), "<ul>",
            *(f"<li>{html.escape(tr('report.assume.line', lang, name=k, value=v))}</li>"
              for k, v in doc["assumptions"].items()),
            f"<li>{html.escape(tr('report.rejected', lang, rejected=doc.get('rejected')))}</li></ul>"]
    out += [_h2("calibration", lang), _table(
        [tr(f"report.col.{c}", lang) for c in ("name", "value", "source", "provenance")],
        [[c["name"], f"{fmt(c['value'], 'g')} {c['unit']}", c["source"], prov(c["provenance"], lang)]
         for c in doc["calibration"]])]
    out += [_h2("sources", lang), _table(
        [tr(f"report.col.{c}", lang) for c in ("what", "source", "provenance")],
        [[s.get(f"what_{lang}", s["what"]), f"{s.get(f'source_{lang}', s['source'])} {s['as_of']}".strip(),
          prov(s["kind"], lang)] for s in doc["sources"]])]
    return "".join(out) + "</body></html>\n"
