"""Rules on an inference plan: its growth headroom, and the cheaper deployments the planner sized in closed form.

Growth: the planner re-run at `growth_factor` x the load.

The report builder (report_infer) re-plans the same model, lengths and SLO at the grown request
rate on the recommended accelerator and weight format and puts the result in
`PlanFacts.serving["growth"]`: whether the planned fleet (same layout, at most the same replicas)
still meets the p99 SLO, and otherwise the cheapest fleet that does and its hourly cost.
Alternatives: wide expert parallelism if the servers had RDMA (`what_if_rdma`, search/infer_whatif.py) and a
prefill/decode-disaggregated fleet (`what_if_pd`, search/infer_pd_fleet.py) and another engine on the same part
(`what_if_engine`, search/infer_engines.py), each named only when it saves at least its threshold; a setting of the
engine in use (`what_if_setting`: MindIE SplitFuse) is named when it saves as much, or when it meets no SLO, why.
KV-forced TP: the part holds the weights at a smaller TP than the KV cache of the load needs (`kv_forced_tp`,
search/infer_kv_tp.py).
"""

from __future__ import annotations

from typing import Any

from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import Figure, Finding, Thresholds, make_finding
from gpuplan.advise.rules_work import _est, _th
from gpuplan.errors import GpuplanError
from gpuplan.search.infer_fleet import layout_shape
from gpuplan.workload.engines import engine

__all__ = ["SERVE_RULES", "serve_engine", "serve_engine_setting", "serve_growth", "serve_kv_tp", "serve_pd",
           "serve_rdma"]

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


def _cheaper(f: PlanFacts, th: Thresholds, key: str, threshold: str) -> tuple[dict[str, Any], float] | None:
    """(the alternative fleet `f.serving[key]`, the recommended fleet's USD/h) when the alternative saves at least
    the `threshold` share of its cost; None otherwise."""
    w = f.serving.get(key) if f.kind == "infer" else None
    usd_h = float(f.serving.get("usd_per_hour") or 0.0)
    if not w or not usd_h or w["usd_per_hour"] > usd_h * (1.0 - th.value(threshold)):
        return None
    return dict(w), usd_h


def serve_rdma(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """A wide expert-parallel fleet on the same kind of servers with an RDMA fabric would cost less
    (search/infer_whatif.py): say what asking for RDMA is worth, and that the figure is closed form."""
    alt = _cheaper(f, th, "what_if_rdma", "rdma_what_if_min_saving")
    if alt is None:
        return []
    w, usd_h = alt
    figs = (_est("what_if_devices", w["devices"], "devices", "closed form, RDMA assumed"),
            _est("what_if_usd_per_hour", w["usd_per_hour"], "USD/h", "closed form, RDMA assumed"))
    return [make_finding("net.rdma_wide_ep", "warn", (*figs, _th(th, "rdma_what_if_min_saving")),
                         ("rdma_what_if_min_saving",), devices=f.devices, acc=f.accelerator.id,
                         usd_h=usd_h, alt_devices=w["devices"], alt_acc=w["accelerator"], ep=w["layout"]["ep"],
                         alt_usd_h=w["usd_per_hour"], saving=1.0 - w["usd_per_hour"] / usd_h,
                         instance=w["instance"], network=w["network"])]


def serve_pd(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """A prefill/decode-disaggregated fleet of the same or another part would cost less
    (search/infer_pd_fleet.py, simulated per pool by search/infer_pd_sim.py): name it, never as a plan."""
    alt = _cheaper(f, th, "what_if_pd", "pd_what_if_min_saving")
    if alt is None:
        return []
    w, usd_h = alt
    p, d = w["prefill"], w["decode"]
    sim = bool(w.get("simulated"))
    # a heterogeneous fleet (search/infer_pd_mixed.py) prefills on one part and decodes on another: name the second
    dec_part = f"{d['accelerator']}, " if w.get("heterogeneous") else ""
    src = ("simulated per pool (search/infer_pd_sim)" if sim else
           "closed form (search/infer_pd_fleet): M/D/1 prefill queue, decode batch at the TPOT SLO")
    figs = (_est("pd_prefill_devices", p["devices"], "devices", src),
            _est("pd_decode_devices", d["devices"], "devices", src),
            _est("pd_usd_per_hour", w["usd_per_hour"], "USD/h", src), _th(th, "pd_what_if_min_saving"))
    return [make_finding("serve.pd_disaggregation", "info", figs, ("pd_what_if_min_saving",), devices=f.devices,
                         acc=f.accelerator.id, usd_h=usd_h, alt_acc=p.get("accelerator") or w["accelerator"],
                         weights=w["weights"],
                         p_devices=p["devices"], p_layout_en=layout_shape(p["layout"], "en"),
                         p_layout_zh=layout_shape(p["layout"], "zh"), p_util=p["utilization"],
                         d_devices=d["devices"], d_layout_en=dec_part + layout_shape(d["layout"], "en"),
                         d_layout_zh=dec_part + layout_shape(d["layout"], "zh"),
                         batch=d["batch"] * int(d.get("batches_in_flight", 1)),  # pp batches in flight per group
                         alt_usd_h=w["usd_per_hour"], saving=1.0 - w["usd_per_hour"] / usd_h,
                         link=w["kv_link"], ttft=float(w.get("ttft_p99_s") or 0.0),
                         tpot_ms=float(w.get("tpot_p99_s") or 0.0) * 1e3,
                         how_en=("Each pool simulated, not a plan" if sim else "Closed-form estimate, not simulated"),
                         how_zh=("两个池均经模拟，但不作为方案" if sim else "此为闭式估算，未经模拟"))]


def _engine_name(eid: str) -> str:
    try:
        return engine(eid).name
    except GpuplanError:  # an engine this catalog does not ship: its id
        return eid


def _engine_fleet(f: PlanFacts, th: Thresholds, key: str, finding: str, **args: Any) -> list[Finding]:
    """The `finding` naming the fleet `f.serving[key]` (another engine, or a setting of this one) and its saving, when
    it saves at least `engine_what_if_min_saving`."""
    alt = _cheaper(f, th, key, "engine_what_if_min_saving")
    if alt is None:
        return []
    w, usd_h = alt
    src = str(w.get("basis") or "inference planner re-run with the other engine")
    figs = (_est("engine_devices", w["devices"], "devices", src), _est("engine_usd_per_hour", w["usd_per_hour"],
                                                                       "USD/h", src),
            _th(th, "engine_what_if_min_saving"))
    return [make_finding(finding, "warn", figs, ("engine_what_if_min_saving",), **args,
                         devices=f.devices, acc=f.accelerator.id, usd_h=usd_h,
                         engine=_engine_name(str(f.serving.get("engine") or "")), alt_engine=w["engine"],
                         alt_name=w["engine_name"], alt_acc=w["accelerator"], alt_devices=w["devices"],
                         alt_usd_h=w["usd_per_hour"], saving=1.0 - w["usd_per_hour"] / usd_h,
                         layout_en=layout_shape(w["layout"], "en"), layout_zh=layout_shape(w["layout"], "zh"),
                         weights=w["weights"], ttft=float(w["ttft_p99_s"]), tpot_ms=float(w["tpot_p99_s"]) * 1e3)]


def serve_engine(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """Another engine that runs on the recommended part serves the same load and SLO for less (search/infer_engines:
    the planner re-run with that engine's profile on the same part, simulated like the recommended fleet)."""
    return _engine_fleet(f, th, "what_if_engine", "serve.engine_alternative")


def serve_engine_setting(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """A setting of the engine in use (MindIE with SplitFuse on; search/infer_engines.setting_what_if) serves the load
    for less on the parts it runs on (warn: its fleet, saving and the configuration that turns it on), or was
    re-planned and meets no SLO there (info: why, so that the answer says it was weighed). Its figures are the base
    profile's terms under another scheduler: the finding says they are estimated, not validated."""
    w = f.serving.get("what_if_setting") if f.kind == "infer" else None
    if not w:
        return []
    about = {"enable": w.get("enable") or "", "base": _engine_name(str(w.get("variant_of") or ""))}
    if w.get("missed"):
        return [make_finding("serve.engine_setting_missed", "info", (), (), **about, alt_name=w["engine_name"],
                             alt_engine=w["engine"], engine=_engine_name(str(f.serving.get("engine") or "")),
                             parts=", ".join(w.get("accelerators") or []) or "-", field=w.get("field") or "",
                             detail=str(w.get("detail") or ""))]
    return _engine_fleet(f, th, "what_if_setting", "serve.engine_setting", **about)


def serve_kv_tp(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """The part's HBM holds the weights at a smaller TP than the KV cache of this load needs (search/infer_kv_tp)."""
    k = f.serving.get("kv_forced_tp") if f.kind == "infer" else None
    if not k:
        return []
    src = "inference planner: smallest TP holding the weights vs the smallest whose KV cache serves the load"
    figs = (_est("weights_tp", k["weights_tp"], "TP", src), _est("kv_tp", k["kv_tp"], "TP", src),
            _est("kv_tokens_at_weights_tp", k["kv_tokens_at_weights_tp"], "tokens", src))
    limit = "short" if k["limit"] == "kv_too_small" else "rate"
    fp8 = "fp8" if str(f.serving.get("kv_dtype") or "bf16") in ("fp8", "int8") else "bf16"
    return [make_finding(f"serve.kv_forces_tp_{limit}", "info", figs, (), acc=f.accelerator.id,
                         hbm=float(f.accelerator.memory_gib or 0.0), weights=f.precision, wtp=k["weights_tp"],
                         wgib=k["weights_gib_per_device_at_weights_tp"], kv_w=k["kv_tokens_at_weights_tp"],
                         need=k["longest_request_tokens"], kvtp=k["kv_tp"], kv=k["kv_tokens"], tp=k["tp"],
                         extra=k["tp"] - k["weights_tp"], kv_note_en="" if fp8 == "bf16" else " (already fp8)",
                         kv_note_zh="" if fp8 == "bf16" else "（已是 fp8）")]


SERVE_RULES = (serve_growth, serve_rdma, serve_pd, serve_engine, serve_engine_setting, serve_kv_tp)
