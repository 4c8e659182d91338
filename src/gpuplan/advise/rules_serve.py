"""Rules on an inference plan's growth headroom: the planner re-run at `growth_factor` x the load.

The report builder (report_infer) re-plans the same model, lengths and SLO at the grown request
rate on the recommended accelerator and weight format and puts the result in
`PlanFacts.serving["growth"]`: whether the planned fleet (same layout, at most the same replicas)
still meets the p99 SLO, and otherwise the cheapest fleet that does and its hourly cost.
"""

from __future__ import annotations

from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import Figure, Finding, Thresholds, make_finding
from gpuplan.advise.rules_work import _est, _th

__all__ = ["SERVE_RULES", "serve_growth"]

_SRC = "inference planner re-run at the grown load"


def serve_growth(f: PlanFacts, th: Thresholds) -> list[Finding]:
    g = f.serving.get("growth") if f.kind == "infer" else None
    if not g:
        return []
    used = ("growth_factor",)
    qps = float(f.serving["qps"])
    usd_h = float(f.serving["usd_per_hour"])
    base = (_est("grown_qps", g["qps"], "req/s", _SRC), _th(th, "growth_factor"))
    if g.get("holds"):
        return [make_finding("growth.serve_ok", "info", base, used, factor=g["factor"], qps=g["qps"],
                             devices=f.devices, acc=f.accelerator.id, usd_h=usd_h,
                             util=float(g.get("utilization") or 0.0))]
    if g.get("devices") is None:
        return [make_finding("growth.serve_none", "warn", base, used, factor=g["factor"], qps=g["qps"],
                             base_qps=qps, devices=f.devices, acc=f.accelerator.id)]
    figs: tuple[Figure, ...] = (*base, _est("grown_devices", g["devices"], "devices", _SRC),
                                _est("grown_usd_per_hour", g["usd_per_hour"], "USD/h", _SRC))
    if usd_h and g["usd_per_hour"] <= usd_h * (1 + 1e-9):  # the re-plan fits the instances already billed
        return [make_finding("growth.serve_spare", "info", figs, used, factor=g["factor"], qps=g["qps"],
                             devices=f.devices, acc=f.accelerator.id, need=g["devices"], grown_acc=g["accelerator"],
                             replicas=g["replicas"], usd_h=usd_h)]
    return [make_finding("growth.serve", "warn", figs, used, factor=g["factor"], qps=g["qps"], devices=f.devices,
                         acc=f.accelerator.id, need=g["devices"], grown_acc=g["accelerator"], replicas=g["replicas"],
                         usd_h=usd_h, grown_usd_h=g["usd_per_hour"], more=g["usd_per_hour"] / usd_h - 1 if usd_h
                         else 0.0)]


SERVE_RULES = (serve_growth,)
