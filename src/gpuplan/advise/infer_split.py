"""The length-split answer of a `plan infer` run (search/infer_length_split.py), named once for the CLI and the API.

Each side is planned by the planner's own search (`plan_inference`, no what-ifs) with the run's constraints,
engines and terms, and its fleets are drawn as the recommendation is: the buyer's market, no offer with a
blocking finding (advise.report_infer.choose_fleet on the side's own fleets).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpuplan.advise.report_infer import choose_fleet
from gpuplan.advise.trust import eligible_fleets
from gpuplan.hardware import Catalog

if TYPE_CHECKING:
    from gpuplan.advise.facts import Requirements
    from gpuplan.advise.findings import Thresholds
    from gpuplan.estimate.calibration import Calibration
    from gpuplan.search.infer_load import InferLoad, InferSlo
    from gpuplan.search.infer_search import InferConstraints
    from gpuplan.workload.engines import EngineProfile
    from gpuplan.workload.model_spec import ModelSpec

__all__ = ["named_split"]


def named_split(run: Mapping[str, Any], *, spec: ModelSpec, load: InferLoad, slo: InferSlo, catalog: Catalog,
                constraints: InferConstraints, engine_profile: EngineProfile, terms: Calibration,
                stack_engines: Mapping[str, EngineProfile] | None, th: Thresholds,
                requirements: Requirements | None, blocked: Mapping[str, str]) -> dict[str, Any]:
    """`run["length_split"]`: the cheapest split by prompt length and whether it is recommended over
    `run["recommended"]` (infer_length_split.length_split); `blocked`: the run's blocked offers."""
    from gpuplan.search.infer_length_split import length_split
    from gpuplan.search.infer_search import plan_inference

    residency = requirements.data_residency if requirements else None

    def plan_side(side: InferLoad) -> list[dict[str, Any]]:
        plans = plan_inference(spec, side, slo, catalog, constraints, engine_profile=engine_profile, terms=terms,
                               alternatives=False, suggest_engines=False, stack_engines=stack_engines).plans
        _, side_blocked = choose_fleet(run, plans, catalog, th, requirements, constraints.market)
        return eligible_fleets(plans, catalog, constraints.market, side_blocked, residency)

    singles = eligible_fleets(run.get("plans") or [], catalog, constraints.market, blocked, residency)
    term = terms.used("length_split_min_saving")["length_split_min_saving"]
    return length_split(load, slo, plan_side, recommended=run.get("recommended"), singles=singles,
                        min_saving=terms.value("length_split_min_saving"), min_saving_term=term)
