"""Serving parts the advisor rules out, marked as `gpuplan plan infer` marks them.

A part whose fleet draws a blocking finding (a critical export, residency or compliance finding for the
market: advise.report_train.BLOCKING_FINDINGS, applied by advise.report_infer.choose_fleet) stays listed,
marked "not recommended: <finding>" (report.not_recommended, the CLI's words), and is skipped by the
recommendation. A stored plan carries the parts in `not_recommended`; a serving comparison carries each
option's findings, so the same rule is read off them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.advise.trust import fleet_block
from gpuplan.i18n import not_recommended
from gpuplan.web import views

__all__ = ["blocking_finding", "mark_compare", "marked_infer_rows"]


def marked_infer_rows(result: Mapping[str, Any], lang: str, top: int = 10) -> list[dict[str, Any]]:
    """`views.infer_rows` with `blocked` (the CLI's mark, or "") and `recommended` on each row."""
    rows = views.infer_rows(result, lang, top)
    blocked: Mapping[str, str] = result.get("not_recommended") or {}
    rec = result.get("recommended") or {}
    key = (rec.get("accelerator"), rec.get("instance"), rec.get("replicas"), rec.get("weights"))
    for row, p in zip(rows, (result.get("plans") or [])[:top], strict=False):
        acc = p["accelerator"]
        hit = fleet_block(p, blocked)
        row["blocked"] = not_recommended(hit, lang) if hit is not None else ""
        row["recommended"] = bool(rec) and (acc, p["instance"], p["replicas"], p["weights"]) == key
    return rows


def blocking_finding(findings: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first finding that rules a part out (choose_fleet's test), or None."""
    from gpuplan.advise.report_train import BLOCKING_FINDINGS

    return next((f for f in findings if f.get("severity") == "critical" and f.get("id") in BLOCKING_FINDINGS), None)


def mark_compare(doc: Mapping[str, Any], view: dict[str, Any], lang: str) -> dict[str, Any]:
    """A serving comparison's view with each ruled-out option marked in its row and its notes (a training
    comparison already marks them: its rows carry the option's `not_recommended` in the findings column)."""
    view["blocked"] = {}
    if doc.get("kind") != "compare_infer":
        return view
    for o, row, note in zip(doc["options"], view["rows"], view["notes"], strict=False):
        hit = blocking_finding(o.get("findings") or []) if o.get("plan") is not None else None
        if hit is None:
            continue
        mark = not_recommended(hit["id"], lang)
        view["blocked"][o["accelerator"]] = mark
        row[0] = f"{row[0]} ({mark})"
        msg = (hit.get("message") or {}).get(lang) or (hit.get("message") or {}).get("en", "")
        note["lines"].insert(0, f"{mark}: {msg}" if msg else mark)
    return view
