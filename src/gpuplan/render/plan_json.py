"""Compact `--json` of `plan train`: the first `top` plans in full, the rest as a summary.

A full plan carries its memory breakdown, step-time assumptions, reliability and data-pipeline
detail (about 20 KB each); a summary keeps what a table row or a script needs (accelerator,
devices, layout, time, cost, MFU, bottleneck with the step breakdown it is read from, in any language,
offer) and, like every full plan, its `band`,
`band_basis` and `confidence` (the trust contract). `--all` keeps every plan in full. Each
plan says which it is in `detail` ("full" or "summary").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SUMMARY_KEYS", "compact_plans", "plan_brief", "ranked_rows"]

# top-level fields of a training plan that a summary keeps as they are
SUMMARY_KEYS = (
    "accelerator", "devices", "billed_devices", "layout", "layout_family", "time_to_train_s", "time_to_train_days",
    "device_hours", "cost_usd", "purchase_usd", "purchase", "mfu", "hfu", "tokens_per_s", "tokens_per_s_per_device",
    "step_time_s", "energy_mwh", "bottleneck", "breakdown_s", "band", "band_basis", "confidence",
)


def plan_brief(p: Mapping[str, Any]) -> dict[str, Any]:
    """The summary form of one training plan."""
    out = {k: p[k] for k in SUMMARY_KEYS if k in p}
    opt = p.get("hardware_option") or {}
    # where the cluster comes from, as render.report_text.offer_text reads it (own cluster on which fabric)
    out["hardware_option"] = {k: opt.get(k) for k in ("kind", "offer", "network")}
    out["offer"] = opt.get("offer")
    out["network"] = (p.get("assumptions") or {}).get("network")
    mem = p.get("memory") or {}
    if "total_bytes" in mem:
        out["memory"] = {"total_bytes": mem["total_bytes"]}
    out["detail"] = "summary"
    return out


def compact_plans(plans: Sequence[Mapping[str, Any]], top: int, everything: bool = False) -> list[dict[str, Any]]:
    """`plans` in their order: the first `top` (all with `everything`) in full, the rest as summaries."""
    n = len(plans) if everything else max(top, 0)
    return [{**p, "detail": "full"} if i < n else plan_brief(p) for i, p in enumerate(plans)]


def ranked_rows(plans: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """The best plan of each accelerator first (in rank order), then the rest by rank, `top` in all
    (never fewer than one per accelerator); the table puts the recommended plan above them."""
    best: dict[str, dict[str, Any]] = {}
    for p in plans:
        best.setdefault(p["accelerator"], p)
    firsts = list(best.values())
    rest = [p for p in plans if all(p is not b for b in firsts)]
    return firsts + rest[:max(top - len(firsts), 0)]
