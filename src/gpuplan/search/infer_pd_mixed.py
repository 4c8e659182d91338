"""Prefill on one part, decode on another: heterogeneous disaggregated fleets, in closed form.

Prefill is compute-bound and decode memory-bandwidth- and capacity-bound (DistServe, Zhong et al. 2024, sec. 2;
Splitwise, Patel et al. 2024, sec. 4, which runs prefill on H100 and decode on A100), so a pair of parts can cost
less than either alone. Each pool is sized as `infer_pd_fleet` sizes it (the same `prefill_pool` and `decode_pool`)
on its own part; the pair is then simulated pool by pool with the same-part fleets (`infer_pd_sim`).

Assumptions, stated in each record (`kv_assumption`):

* one network: both pools rent from the same provider on offers with an RDMA fabric, taken to be one fabric (one
  region and cluster); a pair across providers or markets has no network both sides share and is not formed;
* the KV cache moves at the slower of the two sides: each prefill device sends its shard (its per-device KV bytes
  per token) over its NIC share while each decode device receives its own over its share, in parallel
  (Mooncake / NIXL RDMA writes; DistServe sec. 4.3); the latency is the larger of the two links';
* one KV format: the same engine (SGLang, whose launch `--emit sglang --disaggregated` writes), the same weight
  format and KV dtype on both sides, so the KV blocks are compatible. Not modelled: a KV layout conversion when the
  two sides' tensor-parallel degrees differ (engines that split KV heads differently re-shard on receive; NIXL does
  it in the transfer), and parts of different vendors (no common transfer engine: the pair is not formed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuplan.estimate.links import Link
from gpuplan.search.infer_capacity import LengthMoments
from gpuplan.search.infer_load import InferSlo
from gpuplan.search.infer_pd_fleet import PdFleet, PdInput, decode_pool, prefill_pool
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.units import GB

__all__ = ["MIXED_KEPT", "KV_ASSUMPTION", "mixed_pd_fleets", "pair_s_per_token"]

MIXED_KEPT = 3  # heterogeneous pairs kept (the cheapest in closed form), each cheaper than both of its parts alone

KV_ASSUMPTION = ("prefill and decode pools rent from the same provider and market, on one RDMA fabric; the KV cache "
                 "moves at the slower of the prefill devices sending and the decode devices receiving their shards; "
                 "the same engine (SGLang), weight format and KV dtype on both sides keep the KV blocks compatible "
                 "(not modelled: a re-shard when the two tensor-parallel degrees differ)")


def pair_s_per_token(pre: PdInput, pre_link: Link, dec: PdInput, dec_link: Link) -> float:
    """Seconds per prompt token to move the KV cache from a prefill device of `pre` to a decode device of `dec`:
    each side moves its own shard over its own NIC share at once, the slower sets the pace (DistServe sec. 4.3)."""
    send = pre.cost.kv_bytes_per_token / (float(pre_link.bandwidth_gbyte_s) * GB)
    receive = dec.cost.kv_bytes_per_token / (float(dec_link.bandwidth_gbyte_s) * GB)
    return max(send, receive)


def _on(x: PdInput, provider: str, provider_of: Mapping[str, str]) -> PdInput:
    return replace(x, offers=[o for o in x.offers
                              if o.scale_out is not None and provider_of.get(o.instance) == provider])


def _slowest(xs: Sequence[PdInput]) -> Link | None:
    """The narrowest RDMA share among the offers of `xs` (conservative when a part has several instance types)."""
    links = [o.scale_out for x in xs for o in x.offers if o.scale_out is not None]
    return min(links, key=lambda ln: float(ln.bandwidth_gbyte_s)) if links else None


def mixed_pd_fleets(inputs: Mapping[str, Sequence[PdInput]], *, vendor_of: Mapping[str, str],
                    provider_of: Mapping[str, str], same_part: Sequence[PdFleet], moments: LengthMoments,
                    slo: InferSlo, qps: float, headroom: float, cfg: EngineConfig, tpot_p99_over_mean: float,
                    max_devices: int) -> list[PdFleet]:
    """The `MIXED_KEPT` cheapest fleets with prefill on one part and decode on another (`inputs`: each part's
    layouts, as `infer_pd_fleet.pd_fleet` takes them), each cheaper in closed form than the same-part fleet of
    either of its parts (`same_part`); `provider_of` maps an instance id to its provider, `vendor_of` a part to
    its vendor."""
    load = qps * (1.0 + headroom)
    alone = {f.record["accelerator"]: float(f.record["usd_per_hour"]) for f in same_part}
    providers = sorted({provider_of[o.instance] for xs in inputs.values() for x in xs for o in x.offers
                        if o.scale_out is not None and o.instance in provider_of})
    best: dict[tuple[str, str], PdFleet] = {}
    for prov in providers:
        mine = {acc: [y for x in xs if (y := _on(x, prov, provider_of)).offers] for acc, xs in inputs.items()}
        mine = {acc: xs for acc, xs in mine.items() if xs}
        for dec_acc, dec_xs in mine.items():
            for w in sorted({x.weights for x in dec_xs}):
                dec_w = [x for x in dec_xs if x.weights == w]
                decs = [r for x in dec_w if (r := decode_pool(x, moments=moments, slo=slo, qps=load, cfg=cfg,
                                                              tpot_p99_over_mean=tpot_p99_over_mean,
                                                              max_devices=max_devices))]
                dec_link = _slowest(dec_w)
                if not decs or dec_link is None:
                    continue
                d, dx = min(decs, key=lambda r: (r[0]["usd_per_hour"], r[0]["devices"]))
                for pre_acc, pre_xs in mine.items():
                    if pre_acc == dec_acc or vendor_of.get(pre_acc) != vendor_of.get(dec_acc):
                        continue
                    fleet = _pair(pre_acc, [x for x in pre_xs if x.weights == w], dec_acc, d, dx, dec_link, w, prov,
                                  moments=moments, slo=slo, qps=load, cfg=cfg, max_devices=max_devices,
                                  tpot_p99_over_mean=tpot_p99_over_mean, headroom=headroom)
                    if fleet is None or fleet.record["usd_per_hour"] >= min(alone.get(pre_acc, float("inf")),
                                                                            alone.get(dec_acc, float("inf"))):
                        continue
                    key = (pre_acc, dec_acc)
                    if key not in best or fleet.record["usd_per_hour"] < best[key].record["usd_per_hour"]:
                        best[key] = fleet
    return sorted(best.values(), key=lambda f: float(f.record["usd_per_hour"]))[:MIXED_KEPT]


def _pair(pre_acc: str, pre_xs: Sequence[PdInput], dec_acc: str, d: dict[str, Any], dx: PdInput, dec_link: Link,
          weights: str, provider: str, *, moments: LengthMoments, slo: InferSlo, qps: float, cfg: EngineConfig,
          max_devices: int, tpot_p99_over_mean: float, headroom: float) -> PdFleet | None:
    """The cheapest prefill pool on `pre_acc` in front of the decode pool `d` (of `dx`), as one fleet."""
    pre_link = _slowest(pre_xs)
    if pre_link is None:
        return None
    pres = []
    for x in pre_xs:
        per_token = pair_s_per_token(x, pre_link, dx, dec_link)
        transfer = max(float(pre_link.latency_s), float(dec_link.latency_s)) + per_token * moments.in_p99
        r = prefill_pool(x, transfer, moments=moments, slo=slo, qps=qps, cfg=cfg, max_devices=max_devices)
        if r is not None:
            pres.append((r, per_token, transfer))
    if not pres:
        return None
    (p, px), per_token, transfer = min(pres, key=lambda t: (t[0][0]["usd_per_hour"], t[0][0]["devices"]))
    if p["devices"] + d["devices"] > max_devices:
        return None
    slower = pre_link if float(pre_link.bandwidth_gbyte_s) <= float(dec_link.bandwidth_gbyte_s) else dec_link
    kv_link = Link(slower.bandwidth_gbyte_s, max(float(pre_link.latency_s), float(dec_link.latency_s)),
                   label=f"{pre_link.label} (prefill side) / {dec_link.label} (decode side)")
    usd = float(p["usd_per_hour"]) + float(d["usd_per_hour"])
    return PdFleet(record={
        "accelerator": dec_acc, "heterogeneous": True, "accelerators": {"prefill": pre_acc, "decode": dec_acc},
        "provider": provider, "weights": weights,
        "prefill": {**p, "accelerator": pre_acc}, "decode": {**d, "accelerator": dec_acc},
        "usd_per_hour": usd, "devices": p["devices"] + d["devices"], "kv_link": kv_link.label,
        "kv_transfer_p99_s": transfer, "kv_assumption": KV_ASSUMPTION, "simulated": False,
        "ttft_p99_s": p["ttft_p99_s"], "tpot_p99_s": d["tpot_s"] * tpot_p99_over_mean,
        "basis": f"closed form (not simulated): prefill pool on {pre_acc} as an M/D/1 queue at the TTFT SLO (Kingman), "
                 f"decode pool on {dec_acc} at the largest batch within the TPOT SLO, {headroom:.0%} headroom; the KV "
                 f"cache moves over {kv_link.label}"},
        prefill=px, decode=dx, kv_link=kv_link, pair_s_per_token=per_token)
