"""The advisor: findings from computed plan facts, cost and TCO, recommendation of a plan."""

from gpuplan.advise.adapt_train import evaluate_fixed, training_facts
from gpuplan.advise.engine import FINDING_IDS, RULES, advise
from gpuplan.advise.facts import Growth, PlanFacts, Requirements
from gpuplan.advise.findings import Figure, Finding, Thresholds, default_thresholds, load_thresholds

__all__ = ["FINDING_IDS", "RULES", "Figure", "Finding", "Growth", "PlanFacts", "Requirements", "Thresholds",
           "advise", "default_thresholds", "evaluate_fixed", "load_thresholds", "training_facts"]
