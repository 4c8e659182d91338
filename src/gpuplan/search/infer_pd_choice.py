"""When a prefill/decode-disaggregated fleet is the recommendation: a pure rule over a `plan infer` document.

The planner sizes colocated fleets (its `plans`) and, beside them, disaggregated fleets pool by pool
(search/infer_pd_sim.py); the advisor names the cheapest one whose part draws no blocking finding
(`what_if_pd`, advise/report_infer.named_pd). That fleet is recommended instead of the colocated one when:

1. both pools were simulated to the SLO (a closed form alone is never recommended);
2. it costs less than the recommended colocated fleet; and
3. like for like: it also costs less than every colocated fleet listed at its own weight format, so a cheaper
   disaggregated fp8 fleet is never set against an int4 colocated one only (each format is shown).

Its launch is `--emit sglang --disaggregated` (emit/serve_pd.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["disaggregated_recommendation"]


def disaggregated_recommendation(run: Mapping[str, Any],
                                 eligible: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any] | None:
    """{"fleet", "instead_of", "same_format"} for the disaggregated fleet to recommend over `run["recommended"]`,
    else None (rules 1-3 of the module docstring). `eligible`: the colocated fleets the buyer could be recommended
    (its market's, none blocked: advise.trust.eligible_fleets); every listed fleet by default."""
    pd, rec = run.get("what_if_pd"), run.get("recommended")
    if not pd or not rec or not pd.get("simulated"):
        return None
    usd = float(pd["usd_per_hour"])
    if usd >= float(rec["cost_usd_per_hour"]):
        return None
    pool = run.get("plans") or [] if eligible is None else eligible
    same = [p for p in pool if p.get("weights") == pd.get("weights")]
    if any(float(p["cost_usd_per_hour"]) <= usd for p in same):
        return None
    best_same = min(same, key=lambda p: float(p["cost_usd_per_hour"])) if same else None
    return {"fleet": dict(pd), "weights": pd.get("weights"),
            "instead_of": {k: rec.get(k) for k in ("accelerator", "instance", "replicas", "devices", "weights",
                                                     "cost_usd_per_hour")},
            "saving": 1.0 - usd / float(rec["cost_usd_per_hour"]),
            "colocated_same_format": None if best_same is None else {
                k: best_same.get(k) for k in ("accelerator", "replicas", "devices", "weights", "cost_usd_per_hour")},
            "launch": "--emit sglang --disaggregated",
            "basis": "both pools simulated to the SLO behind the run's router; cheaper than the recommended colocated "
                     "fleet and than every colocated fleet listed at its weight format"}
