"""When a part's HBM forces tensor parallelism for the KV cache alone: the weights fit a smaller TP group, but the KV
the load's concurrency holds within the SLO does not.

While it searches, the planner notes for each part and weight format the smallest TP group of one node whose
replica holds the weights and the smallest whose KV cache does not stop it (`note`: the longest request did not fit,
`kv_too_small`, or the SLO-bound capacity was limited by the KV cache, `kv_cache`, in search/infer_capacity.py). A
fleet planned at that TP or above, when it is larger than the weights need, carries `kv_forced_tp` (`annotate`),
which the advisor turns into a finding (advise/rules_serve.serve_kv_tp).
"""

from __future__ import annotations

from typing import Any

from gpuplan.units import GIB

__all__ = ["annotate", "note"]

KV_LIMITS = ("kv_too_small", "kv_cache")


def note(floors: dict[tuple[str, str], dict[int, dict[str, Any]]], *, accelerator: str, weights: str, tp: int,
         rejected: str | None, limited_by: str | None, kv_tokens: int, weights_bytes_per_device: float) -> None:
    """Keep how the replica of TP `tp` of (`accelerator`, `weights`) fared, where it holds the weights (not
    `out_of_memory`): its KV tokens and whether the KV cache stopped it."""
    if rejected == "out_of_memory" or kv_tokens <= 0:
        return
    limit = rejected if rejected in KV_LIMITS else limited_by
    seen = floors.setdefault((accelerator, weights), {})
    if tp not in seen or (seen[tp]["limit"] in KV_LIMITS and limit not in KV_LIMITS):
        seen[tp] = {"kv_tokens": kv_tokens, "limit": limit, "weights_gib_per_device": weights_bytes_per_device / GIB}


def annotate(plans: list[dict[str, Any]], floors: dict[tuple[str, str], dict[int, dict[str, Any]]], *,
             need_tokens: int) -> None:
    """`kv_forced_tp` on each plan whose part and format hold the weights at a smaller TP than the smallest whose KV
    cache does not stop the replica, the plan running at that TP or above."""
    for p in plans:
        seen = floors.get((str(p["accelerator"]), str(p["weights"])))
        lay = p["layout"]
        if not seen or int(lay.get("pp", 1)) > 1 or int(lay.get("cp", 1)) > 1:
            continue
        weights_tp = min(seen)
        kv_tp = min((t for t, v in seen.items() if v["limit"] not in KV_LIMITS), default=None)
        tp = int(lay["tp"])
        if kv_tp is None or kv_tp <= weights_tp or tp < kv_tp:
            continue
        first = seen[weights_tp]
        p["kv_forced_tp"] = {"weights_tp": weights_tp, "kv_tp": kv_tp, "tp": tp, "limit": first["limit"],
                             "kv_tokens_at_weights_tp": first["kv_tokens"], "kv_tokens": seen[kv_tp]["kv_tokens"],
                             "weights_gib_per_device_at_weights_tp": first["weights_gib_per_device"],
                             "longest_request_tokens": need_tokens}
