"""Rules on the network and the numeric precision.

Every penalty is the planner's own figure: the same layout re-evaluated (adapt_train) on the
part's RDMA fabric vs TCP, with one NIC per device, at a 2:1 oversubscribed fabric, in FP8.
loss = step(variant) / step(plan) - 1; extra days = time to train x loss.
"""

from __future__ import annotations

from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import Figure, Finding, Severity, Thresholds, advise_data, make_finding
from gpuplan.advise.rules_work import _ds, _est, _th
from gpuplan.i18n import Duration
from gpuplan.units import DTYPE_BYTES, GIB

__all__ = ["NET_RULES"]

_RE = "training planner, same layout re-evaluated"


def rdma_required(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if not f.multi_node or f.network is None or f.network.rdma:
        return []
    tcp, rdma = f.step_s_tcp or f.step_time_s, f.step_s_rdma
    if not tcp or not rdma:
        return [make_finding("net.rdma_required_unquantified", "critical", (), (), nodes=f.nodes, net=f.network.id)]
    loss = tcp / rdma - 1
    extra_days = (f.time_s or 0.0) * (1 - rdma / tcp) / 86400.0
    figs = (_est("step_s_tcp", tcp, "s", f"{_RE} on {f.network.id}"),
            _est("step_s_rdma", rdma, "s", f"{_RE} on {f.rdma_network}"), _est("tcp_loss", loss, "fraction", _RE),
            _est("extra_days", extra_days, "days", _RE), _th(th, "tcp_max_loss"))
    if loss <= th.value("tcp_negligible_loss"):  # the job barely talks across nodes (LoRA, small DP grads)
        return [make_finding("net.tcp_enough", "info", figs, ("tcp_negligible_loss",), nodes=f.nodes,
                             net=f.network.id, tcp=tcp, rdma=rdma, rdma_net=f.rdma_network or "", loss=loss)]
    sev: Severity = "critical" if loss > th.value("tcp_max_loss") else "warn"
    return [make_finding("net.rdma_required", sev, figs, ("tcp_max_loss",), nodes=f.nodes, net=f.network.id,
                         tcp=tcp, rdma=rdma, rdma_net=f.rdma_network or "", loss=loss,
                         extra_days=Duration(extra_days * 86400.0))]


def roce_lossless(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if not f.multi_node or f.network is None or f.network.kind != "roce_v2":
        return []
    figs = (_ds("network", f.network.id, "", f"catalog network {f.network.id}"),)
    return [make_finding("net.roce_lossless", "warn", figs, (), net=f.network.id, nodes=f.nodes)]


def nics(f: PlanFacts, th: Thresholds) -> list[Finding]:
    per_dev = f.nics_per_node / f.gpus_per_node
    if not f.multi_node or per_dev >= th.value("nics_per_device_min") or not f.step_time_s:
        return []
    full = f.step_s_full_nics
    loss = f.step_time_s / full - 1 if full else None
    figs = (_est("nics_per_device", per_dev, "NICs/device", "plan hardware"), _est("loss", loss, "fraction", _RE),
            _th(th, "nics_per_device_min"))
    sev: Severity = "warn" if loss is None or loss > th.value("tcp_max_loss") else "info"
    return [make_finding("net.nics", sev, figs, ("nics_per_device_min",), per_dev=per_dev, nics=f.nics_per_node,
                         gpn=f.gpus_per_node, loss=loss or 0.0)]


def rail(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if f.nodes < th.value("rail_optimized_min_nodes") or f.network is None or not f.network.rdma:
        return []
    figs = (_est("nodes", f.nodes, "nodes", "plan"), _th(th, "rail_optimized_min_nodes"))
    return [make_finding("net.rail", "info", figs, ("rail_optimized_min_nodes",), nodes=f.nodes,
                         gpn=f.gpus_per_node)]


def oversubscription(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if not f.multi_node or not f.step_s_oversubscribed or not f.step_time_s:
        return []
    loss = f.step_s_oversubscribed / f.step_time_s - 1
    if loss <= th.value("oversubscription_max_loss"):
        return []
    used = ("oversubscription_ratio_checked", "oversubscription_max_loss")
    figs = (_est("step_s_oversubscribed", f.step_s_oversubscribed, "s", _RE), _est("loss", loss, "fraction", _RE),
            _th(th, used[0]), _th(th, used[1]))
    return [make_finding("net.oversubscription", "warn", figs, used, ratio=th.value("oversubscription_ratio_checked"),
                         loss=loss)]


def precision(f: PlanFacts, th: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    if f.kind == "infer" and f.precision in ("int8", "int4", "fp8"):
        saving = 1 - DTYPE_BYTES[f.precision] / DTYPE_BYTES["bf16"]
        qfigs: tuple[Figure, ...] = (_ds("weights", f.precision, "", "inference plan"),
                 _est("weight_memory_saving_vs_bf16", saving, "fraction", "bytes per parameter (scales excluded)"))
        wide = f.serving.get("wider_weights") or {}
        key, extra = "precision.quantized", {}
        usd_h = float(f.serving.get("usd_per_hour") or 0.0)
        if wide.get("weights") and usd_h and wide["usd_per_hour"] > usd_h:  # the same part, wider weights: the saving
            key = "precision.quantized_vs"
            qfigs += (_est("wider_usd_per_hour", wide["usd_per_hour"], "USD/h", "inference plan, same part"),)
            extra = {"acc": f.accelerator.id, "wide": wide["weights"], "wide_devices": wide["devices"],
                     "wide_usd_h": wide["usd_per_hour"],
                     "more": wide["usd_per_hour"] / usd_h - 1.0}
        elif "weights" in wide:  # no wider fleet of this part met the SLO: quantization is what makes it fit
            key, extra = "precision.quantized_only", {"acc": f.accelerator.id}
        out.append(make_finding(key, "info", qfigs, (), weights=f.precision, saving=saving, **extra))
    if f.precision in ("fp32", "fp16"):
        out.append(make_finding(f"precision.{f.precision}", "warn",
                                (_ds("precision", f.precision, "", "plan input"),), (), acc=f.accelerator.id))
    elif f.kind == "train" and f.precision == "bf16" and f.accelerator.dense_tflops("bf16") is None:
        # pre-Ampere parts (V100) have no BF16 tensor cores: the planner times the job at the FP16 peak
        # (search/cluster.ClusterHardware.peak_flops), and it trains in FP16 with loss scaling
        peaks = (_ds("bf16_dense_tflops", None, "TFLOPS", f"catalog {f.accelerator.id}"),
                 _ds("fp16_dense_tflops", f.accelerator.dense_tflops("fp16"), "TFLOPS", f"catalog {f.accelerator.id}"))
        out.append(make_finding("precision.no_bf16", "warn", peaks, (), acc=f.accelerator.id))
    stack = advise_data("ecosystem")["stacks"].get(f.accelerator.software_stack, {})
    framework = stack.get("fp8_framework", "")
    if f.step_s_fp8 is None or not f.step_time_s or not framework:
        return out
    gain = 1 - f.step_s_fp8 / f.step_time_s
    if gain < th.value("fp8_min_gain"):
        return out
    mem_gib = (f.memory_per_device_bytes - (f.memory_fp8_bytes or f.memory_per_device_bytes)) / GIB
    figs = (_ds("fp8_dense_tflops", f.accelerator.fp8_dense_tflops, "TFLOPS", f"catalog {f.accelerator.id}"),
            _est("step_s_fp8", f.step_s_fp8, "s", _RE), _est("step_gain", gain, "fraction", _RE),
            _est("memory_saved", mem_gib, "GiB", _RE), _th(th, "fp8_min_gain"))
    days = (f.time_s or 0.0) * gain / 86400.0
    out.append(make_finding("precision.fp8", "info", figs, ("fp8_min_gain",), gain=gain, mem_gib=mem_gib,
                            days=Duration(days * 86400.0),
                            framework=framework, acc=f.accelerator.id))
    return out


NET_RULES = (rdma_required, roce_lossless, nics, rail, oversubscription, precision)


