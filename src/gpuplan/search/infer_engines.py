"""Would another engine that runs on the same parts serve the load: where none meets the SLO, or for less?

Engines differ most where the software is young: on Ascend, vLLM-Ascend pays about 1 ms of host-bound launches
per layer and iteration where MindIE pays half (workload/data/engines.yaml, `layer_overhead_s`), so a TPOT that no
vLLM-Ascend fleet reaches may be an ordinary MindIE plan, and a vLLM-Ascend fleet may need half again the devices.
- `with_engine_hint`: a buyer told "infeasible" would stop there; the planner re-plans with every other shipped
  engine (default terms, no what-ifs) and the error names the cheapest that meets the SLO ("with --engine mindie
  the SLO is met: ..."). Only the failing path pays for it.
- `engine_what_ifs`: when the cheapest plan is on a part outside CUDA (where the engines' maturity differs most and
  their terms say so), the same part re-planned with each other engine that runs on its stack; the advisor names
  the cheapest when it saves enough (advise/rules_serve.serve_engine). CUDA plans skip it: one more plan per engine
  on every request, for differences the engine profiles put at a few percent.
- `setting_what_if`: a setting of the engine in use (a profile with `variant_of`: MindIE with SplitFuse on), re-planned
  on the parts of the stack it runs on (SplitFuse: 910B only; advise.report_infer.named_setting): its fleet, or why
  none meets the SLO; the advisor names either (advise/rules_serve.serve_engine_setting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplan.errors import InputError
from gpuplan.search.infer_fleet import layout_shape
from gpuplan.workload.engines import EngineProfile, load_engines

__all__ = ["engine_that_meets", "engine_what_ifs", "setting_what_if", "with_engine_hint"]

# the errors of plan_inference that another engine can cure (not a model too large, a policy or a missing price)
SLO_FIELDS = frozenset({"ttft-p99", "tpot-p99", "slo", "max-devices"})

Replan = Callable[[EngineProfile], list[dict[str, Any]]]


def _deployable(asked: str, stack: str | None = None, variants: bool = True) -> list[EngineProfile]:
    """Every shipped engine but the one asked and the modelling baselines, optionally only those running on `stack`
    and without the settings of an engine (`variant_of`: MindIE SplitFuse, named by `setting_what_if`)."""
    return [p for eid, p in sorted(load_engines().items())
            if eid != asked and not p.baseline and (stack is None or stack in p.stacks)
            and (variants or not p.variant_of)]


def _cheapest_per_engine(asked: str, stack: str | None, replan: Replan,
                         variants: bool = True) -> list[tuple[EngineProfile, dict[str, Any]]]:
    """(profile, its cheapest plan) of every other deployable engine (on `stack`, if given) whose re-plan meets the
    SLO, cheapest first; `replan` plans with one engine profile (empty, or InputError, when none meets)."""
    found: list[tuple[EngineProfile, dict[str, Any]]] = []
    # the shipped profiles: default terms, as `gpuplan plan infer --engine ID`
    for prof in _deployable(asked, stack, variants):
        try:
            plans = replan(prof)
        except InputError:
            continue
        if plans:
            found.append((prof, plans[0]))
    return sorted(found, key=lambda fp: fp[1]["cost_usd_per_hour"])


def engine_what_ifs(asked: str, stack: str, replan: Replan) -> list[dict[str, Any]]:
    """The cheapest fleet of each other engine that runs on `stack` and meets the SLO (`replan` plans with one engine
    profile, on the same part), cheapest first; [] on CUDA (see the module docstring). The settings of an engine
    (`variant_of`) are `setting_what_if`'s."""
    if stack == "cuda":
        return []
    return [_record(prof, p) for prof, p in _cheapest_per_engine(asked, stack, replan, variants=False)]


def setting_what_if(asked: str, stack: str, replan: Replan) -> dict[str, Any] | None:
    """A setting of the engine asked that runs on `stack` (a profile whose `variant_of` is `asked`: MindIE with
    SplitFuse on) re-planned for the same load: its cheapest fleet, or where none meets the SLO
    {"missed": True, "field", "detail"} from the planner's error; None where the engine has no such setting or the
    stack is CUDA. `replan` plans it on the parts it runs on."""
    if stack == "cuda":
        return None
    for prof in _deployable(asked, stack):
        if prof.variant_of != asked:
            continue
        try:
            plans = replan(prof)
        except InputError as exc:
            return {**_about(prof), "missed": True, "field": exc.field, "detail": exc.hint or exc.allowed}
        if not plans:
            return {**_about(prof), "missed": True, "field": "accelerator",
                    "detail": "no part of the request's stack that it runs on"}
        return _record(prof, plans[0])
    return None


def _about(prof: EngineProfile) -> dict[str, Any]:
    return {"engine": prof.id, "engine_name": prof.name, "variant_of": prof.variant_of, "enable": prof.enable,
            "accelerators": list(prof.accelerators)}


def _record(prof: EngineProfile, p: dict[str, Any]) -> dict[str, Any]:
    return {**_about(prof), "accelerator": p["accelerator"], "layout": p["layout"],
            "weights": p["weights"], "replicas": p["replicas"], "devices": p["devices"], "instances": p["instances"],
            "instance": p["instance"], "usd_per_hour": p["cost_usd_per_hour"], "ttft_p99_s": p["ttft_s"]["p99"],
            "tpot_p99_s": p["tpot_s"]["p99"], "confidence": p.get("confidence"),
            "basis": f"the inference planner re-run with {prof.name}'s profile on {p['accelerator']} "
                     "(simulated, as the recommended fleet)"
                     + (f"; estimated from the {prof.variant_of} profile with its scheduler changed, not validated"
                        if prof.variant_of else "")}


def engine_that_meets(asked: str, replan: Replan) -> tuple[str, dict[str, Any]] | None:
    """(engine id, its cheapest plan) of the cheapest other engine whose plans meet the SLO, or None."""
    found = _cheapest_per_engine(asked, None, replan)
    return (found[0][0].id, found[0][1]) if found else None


def with_engine_hint(exc: InputError, asked: str, replan: Replan) -> InputError:
    """`exc` with the cheapest fleet another engine offers appended to its hint (unchanged if none does)."""
    if exc.field not in SLO_FIELDS:
        return exc
    found = engine_that_meets(asked, replan)
    if found is None:
        return exc
    eid, p = found
    fleet = (f"{p['accelerator']} {layout_shape(p['layout'], 'en')} {p['weights']}, {p['replicas']} replica(s) on "
             f"{p['instances']} x {p['instance']}, {p['cost_usd_per_hour']:.2f} USD/h, p99 TTFT "
             f"{p['ttft_s']['p99']:.2f} s, TPOT {p['tpot_s']['p99'] * 1000:.0f} ms")
    hint = (exc.hint + "; " if exc.hint else "") + f"with --engine {eid} the SLO is met: {fleet}"
    return InputError(field=exc.field, value=exc.value, allowed=exc.allowed, hint=hint)
