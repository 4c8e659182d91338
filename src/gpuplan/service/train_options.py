"""Options that `estimate train`, `plan train` and `compare` share: the job they describe and the planner's
constraints, checked."""

from __future__ import annotations

from collections.abc import Mapping

from gpuplan.errors import InputError, unknown_name
from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import Catalog
from gpuplan.hardware.query import check_policy_names
from gpuplan.search.train_search import PlanConstraints, choose_layout_family
from gpuplan.service.checks import positives
from gpuplan.validate.memory_cases import recipe_job_fields
from gpuplan.workload.jobs import TrainingJob, default_global_batch

__all__ = ["plan_constraints", "training_job"]


def plan_constraints(cat: Catalog, spec_params: float, cal: Calibration, *, method: str, framework: str | None,
                     deadline: float | None, budget: float | None, max_devices: int, market: str | None,
                     vendor: str | None = None, provider: str | None = None, domestic_only: bool = False,
                     network: str | None = None, nics_per_node: float | None = None,
                     gpus_per_node: int | None = None, accelerators: tuple[str, ...] = (),
                     trust: str = "low", lang: str = "en",
                     capacity: Mapping[str, float] | None = None) -> PlanConstraints:
    """The planner's constraints from the options `plan train` and `compare` share, checked; `capacity`:
    --capacity OFFER=N pairs (an instance id, or * for every offer)."""
    positives(lang, ("deadline", deadline, False), ("budget", budget, False), ("max-devices", max_devices, True),
              ("nics-per-node", nics_per_node, False), ("gpus-per-node", gpus_per_node, True))
    check_policy_names(cat, vendor=vendor, provider=provider)
    if network is not None:
        network = cat.network(network).id
    elif nics_per_node is not None:
        raise InputError(field="nics-per-node", value=nics_per_node, allowed="used together with --network",
                         hint="add --network ID (gpuplan catalog list networks); offers bring their own NICs")
    caps: list[tuple[str, int]] = []
    for name, value in (capacity or {}).items():
        if name != "*" and name not in cat.instances:
            raise unknown_name("capacity", name, ["*", *sorted(cat.instances)])
        if value != int(value) or value < 1:
            raise InputError(field=f"capacity.{name}", value=value, allowed="a whole number of devices >= 1",
                             hint=f"pass --capacity {name}=N with the devices the provider commits to")
        caps.append((name, int(value)))
    family, why = choose_layout_family(method, framework, spec_params, cal)
    return PlanConstraints(deadline_days=deadline, budget_usd=budget, max_devices=max_devices, market=market,
                           vendor=vendor, provider=provider, domestic_only=domestic_only, framework=framework,
                           network=network, nics_per_node=nics_per_node, gpus_per_node=gpus_per_node,
                           layout_family=family, layout_reason=why, accelerators=accelerators, trust=trust,
                           capacity=tuple(caps))


def training_job(method: str, seq_len: int, global_batch: int | None, precision: str, micro_batch: int | None = None,
                 *, kernels: str = "auto", data_loading: str = "pretokenized", framework: str | None = None,
                 recipe: str = "", devices: int = 1) -> TrainingJob:
    """The job of a CLI or web request; a named framework brings its kernels unless `kernels` is given; `recipe`
    sets the recipe facts in the case files' settings syntax (validate/memory_cases.recipe_job_fields).

    A stated `global_batch` is a requirement (every layout runs exactly it); without one the ~4M-token default
    (a multiple of `devices`) is a target that each layout rounds to a multiple of its data-parallel batch
    (TrainingJob.global_batch_fixed)."""
    m = "full" if method in ("pretrain", "full_ft") else method
    fields = recipe_job_fields(recipe, method=m) if recipe.strip() else {}
    fixed = global_batch is not None
    global_batch = global_batch if global_batch is not None else default_global_batch(seq_len, devices)
    return TrainingJob.model_validate({"method": m, "seq_len": seq_len, "global_batch": global_batch,
                                       "global_batch_fixed": fixed,
                                       "precision": precision, "micro_batch": micro_batch or 1, "kernels": kernels,
                                       "data_loading": data_loading, "framework": framework, **fields})
