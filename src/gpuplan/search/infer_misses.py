"""Why a part has no fleet in a serving plan: the question a buyer asks first ("why no Ascend?").

`plan infer` searches every part the policy allows; a part may end with no fleet because no deployment of it meets
the SLO even alone (its best unloaded TTFT or TPOT is over the limit), because no layout holds the model, or because
its fleets failed under the load (every part with a candidate fleet has its cheapest tried, past the plans
wanted). `plan infer --json` lists each such part with its best unloaded latencies and the layout that reached them
(`parts_without_plan`); the CLI prints one line.
"""

from __future__ import annotations

from typing import Any

from gpuplan.search.infer_load import InferSlo

__all__ = ["parts_without_plan"]


def parts_without_plan(considered: list[str], plans: list[dict[str, Any]], per_part: dict[str, dict[str, Any]],
                       slo: InferSlo, *, unsupported: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """Each part searched that no fleet in `plans` uses, with the reason a buyer asks for: its best unloaded p99-prompt
    TTFT or TPOT over the SLO (`ttft_slo` / `tpot_slo`: no deployment of it is fast enough even alone), no layout
    that holds the model (`out_of_memory`), no weight format asked for that the part runs (`weights_unsupported`:
    fp8 on a part without an fp8 peak; `unsupported` lists them per part), else `load` (fast enough alone, but no
    fleet of it met the SLO under the load within --max-devices)."""
    used = {p["accelerator"] for p in plans}
    out: list[dict[str, Any]] = []
    for acc in considered:
        if acc in used:
            continue
        b = per_part.get(acc, {})
        skipped = (unsupported or {}).get(acc, [])
        if not b and skipped:
            out.append({"accelerator": acc, "reason": "weights_unsupported", "weights": sorted(set(skipped))})
            continue
        if not b:
            reason = "out_of_memory"
        elif b["tpot_s"] > slo.tpot_p99_s:
            reason = "tpot_slo"
        elif b["ttft_s"] > slo.ttft_p99_s:
            reason = "ttft_slo"
        else:
            reason = "load"
        out.append({"accelerator": acc, "reason": reason, **b})
    return out
