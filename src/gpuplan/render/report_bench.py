"""The report section of `gpuplan bench` results: measured next to gpuplan's prediction, per machine.

The document carries the results under `bench` (gpuplan.bench.report.bench_section, added by
`gpuplan report ... --bench RESULT.json`); report_io appends this section to the Markdown and
HTML reports of every kind.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from gpuplan.i18n import tr
from gpuplan.render.report_text import fmt, prov

__all__ = ["bench_html", "bench_markdown", "bench_rows"]


def _machine_line(sec: Mapping[str, Any], lang: str) -> str:
    line = tr("report.bench.machine", lang, device=sec["device"], backend=sec["backend"], devices=sec["devices"],
              host=sec["host"], created=sec["created_at"], file=sec["file"],
              acc=sec["accelerator"] or tr("report.bench.no_part", lang))
    return line if sec["complete"] else f"{line} {tr('report.bench.partial', lang)}"


def _num(v: float | None) -> str:
    """40,000 / 612.3 / 0.0704 / 6.36e-05: thousands grouped, 4 significant digits otherwise."""
    if v is None:
        return "-"
    return fmt(v, ",.0f") if abs(v) >= 1e4 else fmt(v, ".4g")


def bench_rows(sec: Mapping[str, Any], lang: str) -> tuple[list[str], list[list[str]]]:
    head = [tr("report.bench.col.measurement", lang), tr("report.bench.col.measured", lang),
            tr("report.bench.col.predicted", lang), tr("report.bench.col.ratio", lang),
            tr("report.bench.col.spread", lang), tr("report.bench.col.basis", lang)]
    rows = [[r["name"], f"{_num(r['measured'])} {r['unit']} ({prov('measured', lang)})",
             (f"{_num(r['predicted'])} {r['unit']} ({prov('estimated', lang)})"
              if r["predicted"] is not None else "-"),
             fmt(r["ratio"], ".2f"), fmt(r["spread"], ".0%"), r["basis"]] for r in sec["rows"]]
    return head, rows


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


def bench_markdown(sections: Sequence[Mapping[str, Any]], lang: str) -> str:
    out = [f"\n## {tr('report.section.bench', lang)}\n", tr("report.bench.intro", lang)]
    for sec in sections:
        out += ["", f"### {sec['device']}", "", _machine_line(sec, lang), "", _md_table(*bench_rows(sec, lang))]
        out += [""] + [f"- {n}" for n in sec["notes"]] if sec["notes"] else []
    return "\n".join(out) + "\n"


def bench_html(sections: Sequence[Mapping[str, Any]], lang: str) -> str:
    def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        return ("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
                + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
                + "</tbody></table>")

    out = [f'<h2 id="sec-bench">{html.escape(tr("report.section.bench", lang))}</h2>',
           f"<p>{html.escape(tr('report.bench.intro', lang))}</p>"]
    for sec in sections:
        out += [f"<h3>{html.escape(str(sec['device']))}</h3>",
                f'<p class="muted">{html.escape(_machine_line(sec, lang))}</p>', table(*bench_rows(sec, lang))]
        if sec["notes"]:
            out += ["<ul>", *(f"<li>{html.escape(n)}</li>" for n in sec["notes"]), "</ul>"]
    return "".join(out)
