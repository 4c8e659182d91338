"""The findings engine: run every rule on a plan's facts; most severe first."""

from __future__ import annotations

from collections.abc import Callable

from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import SEVERITIES, Finding, Thresholds, default_thresholds
from gpuplan.advise.rules_market import MARKET_RULES
from gpuplan.advise.rules_net import NET_RULES
from gpuplan.advise.rules_serve import SERVE_RULES
from gpuplan.advise.rules_work import WORK_RULES

__all__ = ["FINDING_IDS", "RULES", "advise"]

Rule = Callable[[PlanFacts, Thresholds], list[Finding]]
RULES: tuple[Rule, ...] = (*WORK_RULES, *NET_RULES, *MARKET_RULES, *SERVE_RULES)

# every id a rule can emit (the message catalog must hold finding.<id>.msg and .fix in every language)
FINDING_IDS = (
    "stage.finetune", "stage.pretrain_small", "stage.pretrain_large", "stage.serve",
    "host.cpu", "host.cpu_unknown", "host.cpu_serve", "host.cpu_serve_unknown",
    "host.ram_low", "host.ram_high", "host.ram_unknown", "host.nvme",
    "host.nvme_unknown", "storage.read", "storage.checkpoint", "storage.parallel_fs", "storage.model_load",
    "train.moe_host_wait",
    "net.rdma_required", "net.rdma_required_unquantified", "net.tcp_enough", "net.roce_lossless", "net.nics",
    "net.rail",
    "net.oversubscription", "precision.fp32", "precision.fp16", "precision.no_bf16", "precision.fp8",
    "precision.quantized", "precision.quantized_vs", "precision.quantized_only",
    "ecosystem.porting", "method.qlora_none", "method.qlora_experimental",
    "market.export", "market.residency", "market.compliance",
    "reliability.ecc", "reliability.cooling", "reliability.power", "reliability.power_serve", "reliability.checkpoint",
    "growth.model", "growth.deadline", "growth.serve", "growth.serve_ok", "growth.serve_spare",
    "growth.serve_none", "net.rdma_wide_ep", "serve.pd_disaggregation", "serve.engine_alternative",
    "serve.engine_setting", "serve.engine_setting_missed", "serve.kv_forces_tp_short", "serve.kv_forces_tp_rate",
)


def advise(facts: PlanFacts, thresholds: Thresholds | None = None) -> tuple[Finding, ...]:
    """All findings of all rules for one plan, critical first, then warn, then info (rule order within)."""
    th = thresholds or default_thresholds()
    out = [finding for rule in RULES for finding in rule(facts, th)]
    return tuple(sorted(out, key=lambda x: SEVERITIES.index(x.severity)))
