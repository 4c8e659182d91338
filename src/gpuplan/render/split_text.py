"""Lines on the length split of a `plan infer` run (`length_split`, search/infer_length_split.py), en and zh.

The CLI table, the web plan page and the HTML/Markdown reports print the same lines: the split (its threshold,
each side's fleet, its cost against the recommendation, whether it is recommended) and the router rule that
launches it; or, when a split was tried and none met the SLO on both sides, that it was tried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.i18n import tr
from gpuplan.render.trust_text import band_num
from gpuplan.search.infer_fleet import layout_shape

__all__ = ["split_lines"]


def _side(side: Mapping[str, Any], lang: str) -> str:
    return tr("cli.pinfer.split.side", lang, replicas=side["replicas"], acc=side["accelerator"],
              layout=layout_shape(side["layout"], lang), instance=side["instance"],
              usd=float(side["cost_usd_per_hour"]), ttft=float(side["ttft_p99_s"]),
              tpot=float(side["tpot_p99_s"]) * 1e3, share=float(side["share"]),
              util=float(side.get("utilization") or 0.0))


def _why(ls: Mapping[str, Any], split: Mapping[str, Any], diff: float, lang: str) -> str:
    """Why a split is not recommended: dearer, saving less than the term, or a single fleet at its weights cheaper."""
    if ls.get("recommended"):
        return ""
    if diff >= 0.0:
        return tr("cli.pinfer.split.why_dearer", lang)
    same = split.get("single_same_format") or {}
    if same and float(same["cost_usd_per_hour"]) <= float(split["usd_per_hour"]):
        return tr("cli.pinfer.split.why_format", lang, usd=float(same["cost_usd_per_hour"]))
    return tr("cli.pinfer.split.why_saving", lang, saving=-diff, min=float(ls.get("min_saving") or 0.0))


def split_lines(result: Mapping[str, Any], lang: str) -> list[str]:
    """The split's line and its router rule ([] when no split was tried)."""
    ls = result.get("length_split")
    if not ls or not ls.get("tried"):
        return []
    split = ls.get("split")
    if not split:
        tried = ", ".join(f"{int(t['threshold_tokens']):,}" for t in ls.get("thresholds") or [])
        return [tr("cli.pinfer.split.none", lang, thresholds=tried, spread=float(ls["spread_p99_over_p50"]),
                   min=float(ls.get("min_saving") or 0.0))]
    rec_usd = float((split.get("instead_of") or {}).get("cost_usd_per_hour") or 0.0)  # the recommended fleet
    diff = float(split["usd_per_hour"]) / rec_usd - 1.0 if rec_usd else 0.0
    key = "cli.pinfer.split_recommended" if ls.get("recommended") else "cli.pinfer.split"
    # like for like: a split at other weights than the recommendation's says so (as the disaggregated line does)
    rec_weights = str((split.get("instead_of") or {}).get("weights") or "")
    formats = (tr("cli.pinfer.pd.formats", lang, rec_weights=rec_weights)
               if rec_weights and rec_weights != split["weights"] else "")
    return [tr(key, lang, t=int(split["threshold_tokens"]), short=_side(split["short"], lang),
               long=_side(split["long"], lang), weights=split["weights"],
               usd=band_num(float(split["usd_per_hour"]), split.get("band_usd_per_hour"), ",.2f"),
               diff=diff, spread=float(ls["spread_p99_over_p50"]), why=_why(ls, split, diff, lang),
               formats=formats),
            tr("cli.pinfer.split.router", lang, t=int(split["threshold_tokens"]))]
