"""Options that `plan train` and `compare` share, checked and turned into the planner's constraints."""

from __future__ import annotations

from gpuplan.cli.common import positives
from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import Catalog
from gpuplan.search.train_search import PlanConstraints, choose_layout_family

__all__ = ["plan_constraints"]


def plan_constraints(cat: Catalog, spec_params: float, cal: Calibration, *, method: str, framework: str | None,
                     deadline: float | None, budget: float | None, max_devices: int, market: str | None,
                     vendor: str | None = None, provider: str | None = None, domestic_only: bool = False,
                     network: str | None = None, nics_per_node: float | None = None,
                     gpus_per_node: int | None = None, accelerators: tuple[str, ...] = (),
                     trust: str = "low", lang: str = "en") -> PlanConstraints:
    """The planner's constraints from the options `plan train` and `compare` share, checked."""
    positives(lang, ("deadline", deadline, False), ("budget", budget, False), ("max-devices", max_devices, True),
              ("nics-per-node", nics_per_node, False), ("gpus-per-node", gpus_per_node, True))
    if network is not None:
        network = cat.network(network).id
    elif nics_per_node is not None:
        raise InputError(field="nics-per-node", value=nics_per_node, allowed="used together with --network",
                         hint="add --network ID (gpuplan catalog list networks); offers bring their own NICs")
    family, why = choose_layout_family(method, framework, spec_params, cal)
    return PlanConstraints(deadline_days=deadline, budget_usd=budget, max_devices=max_devices, market=market,
                           vendor=vendor, provider=provider, domestic_only=domestic_only, framework=framework,
                           network=network, nics_per_node=nics_per_node, gpus_per_node=gpus_per_node,
                           layout_family=family, layout_reason=why, accelerators=accelerators, trust=trust)
