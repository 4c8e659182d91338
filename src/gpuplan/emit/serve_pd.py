"""SGLang launch of a prefill/decode-disaggregated fleet (`what_if_pd_all`, search/infer_pd_sim.py): one server
script per pool and the router in front (SGLang PD disaggregation: `--disaggregation-mode prefill|decode` with
the Mooncake transfer engine over the instances' RDMA NICs, `python -m sglang_router.launch_router
--pd-disaggregation`; flag lists in data/flags/sglang.yaml and sglang_router.yaml).

The fleet is not a plan: gpuplan sized it (simulated per pool where `simulated` is true) for the advisor's
`serve.pd_disaggregation`; the scripts say so in their header. Each pool's server takes the pool's layout
(attention data parallelism and DeepEP for wide expert groups, as the colocated SGLang script does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan._version import __version__
from gpuplan.emit.context import ServeTarget
from gpuplan.emit.serve import PORT, Arg, _cmd, sglang_args
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["BOOTSTRAP_PORT", "ROUTER_PORT", "pd_files", "pd_targets"]

BOOTSTRAP_PORT = 8998  # SGLang's default --disaggregation-bootstrap-port on a prefill server
ROUTER_PORT = 30000
_TRANSFER: list[Arg] = [("--disaggregation-transfer-backend", "mooncake"),
                        ("--disaggregation-ib-device", "${IB_DEVICES:?}")]


def _pool_fleet(pd: Mapping[str, Any], pool: str) -> dict[str, Any]:
    """One pool as the fleet record a ServeTarget reads (its header figures are the whole fleet's p99s)."""
    p = pd[pool]
    # a heterogeneous fleet (search/infer_pd_mixed.py) names each pool's part
    return {"accelerator": p.get("accelerator") or pd["accelerator"], "weights": pd["weights"], "engine": "sglang",
            "layout": p["layout"], "replicas": p["groups"], "devices": p["devices"], "instance": p["instance"],
            "instances": p["instances"],
            "cost_usd_per_hour": p["usd_per_hour"], "utilization": p.get("utilization") or 0.0,
            "ttft_s": {"p99": pd.get("ttft_p99_s") or 0.0}, "tpot_s": {"p99": pd.get("tpot_p99_s") or 0.0},
            "confidence": {"level": "low"}}


def _per_instance(t: ServeTarget) -> int:
    """Servers of one pool on its fullest instance (at least one)."""
    per_instance = max(1, -(-int(t.fleet["devices"]) // max(int(t.fleet["instances"]), 1)))
    return max(1, per_instance // t.devices_per_replica)


def pd_targets(*, model_id: str, spec: ModelSpec, run: Mapping[str, Any], pd: Mapping[str, Any], max_model_len: int,
               stated: frozenset[str]) -> tuple[ServeTarget, ServeTarget]:
    """(prefill pool, decode pool) as serving targets."""
    pre, dec = (ServeTarget(model_id=model_id, spec=spec, fleet=_pool_fleet(pd, pool), run=run,
                            max_model_len=max_model_len, stated=stated) for pool in ("prefill", "decode"))
    return pre, dec


def pd_files(*, model_id: str, spec: ModelSpec, run: Mapping[str, Any], pd: Mapping[str, Any], max_model_len: int,
             stated: frozenset[str] = frozenset()) -> dict[str, str]:
    """sglang_prefill.sh, sglang_decode.sh and sglang_router.sh of the disaggregated fleet `pd`."""
    pre, dec = pd_targets(model_id=model_id, spec=spec, run=run, pd=pd, max_model_len=max_model_len, stated=stated)
    how = "simulated per pool" if pd.get("simulated") else "closed form, not simulated"
    fleet = (f"Disaggregated fleet sized by gpuplan ({how}; not a plan): {pre.server_replicas} prefill server(s) of "
             f"{pre.devices_per_replica} x {pre.fleet['accelerator']} and {dec.server_replicas} decode server(s) of "
             f"{dec.devices_per_replica}" + (f" x {dec.fleet['accelerator']}" if pd.get("heterogeneous") else "")
             + f"; the KV cache moves over {pd['kv_link']}.")
    rec = run.get("recommended") or {}
    if rec.get("cost_usd_per_hour"):  # say what it costs against the plan gpuplan recommends
        ratio = float(pd["usd_per_hour"]) / float(rec["cost_usd_per_hour"]) - 1.0
        fleet += (f" It costs {pd['usd_per_hour']:,.2f} USD/h, {abs(ratio):.0%} {'more' if ratio >= 0 else 'less'} "
                  f"than the recommended colocated fleet ({rec.get('devices')} x {rec.get('accelerator')}, "
                  f"{float(rec['cost_usd_per_hour']):,.2f} USD/h).")
    run_on = ("Run one per {pool} server (up to {per} per {inst}): give each its GPUs (CUDA_VISIBLE_DEVICES) and, when "
              "several share an instance, its own --port{boot}; IB_DEVICES names the instance's RDMA NICs "
              "(e.g. mlx5_0,mlx5_1). Start sglang_router.sh once every server is up.")
    files = {
        "sglang_prefill.sh": _cmd(pre, "sglang", "python -m sglang.launch_server", [
            *sglang_args(pre), ("--disaggregation-mode", "prefill"),
            ("--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT)), *_TRANSFER],
            (fleet, run_on.format(pool="prefill", per=_per_instance(pre), inst=pd["prefill"]["instance"],
                                  boot=" and --disaggregation-bootstrap-port"))),
        "sglang_decode.sh": _cmd(dec, "sglang", "python -m sglang.launch_server", [
            *sglang_args(dec), ("--disaggregation-mode", "decode"), *_TRANSFER],
            (fleet, run_on.format(pool="decode", per=_per_instance(dec), inst=pd["decode"]["instance"], boot=""))),
    }
    router: list[Arg] = [("--pd-disaggregation", None), ("--policy", "round_robin")]
    router += [("--prefill", f"http://${{PREFILL_ADDR_{i}:?}} ${{PREFILL_BOOTSTRAP_{i}:-{BOOTSTRAP_PORT}}}")
               for i in range(1, pre.server_replicas + 1)]
    router += [("--decode", f"http://${{DECODE_ADDR_{i}:?}}") for i in range(1, dec.server_replicas + 1)]
    router += [("--host", "0.0.0.0"), ("--port", str(ROUTER_PORT))]
    words = " \\\n    ".join(k + (f" {v}" if v is not None else "") for k, v in router)
    head = [f"Emitted by gpuplan {__version__} (sglang router); disaggregated fleet of {model_id}, not a plan",
            fleet,
            f"Predicted ({how}): p99 TTFT s: {float(pd.get('ttft_p99_s') or 0):.3f}; p99 TPOT ms: "
            f"{float(pd.get('tpot_p99_s') or 0) * 1e3:.1f}; cost USD/h: {float(pd['usd_per_hour']):,.2f} "
            f"({pd['devices']} devices, weights {pd['weights']})",
            f"Set PREFILL_ADDR_1..{pre.server_replicas} and DECODE_ADDR_1..{dec.server_replicas} to the servers' "
            f"host:port (port {PORT} unless several share an instance) and PREFILL_BOOTSTRAP_i where a prefill server "
            f"moved its bootstrap port from {BOOTSTRAP_PORT}; clients talk to this router."]
    files["sglang_router.sh"] = ("#!/usr/bin/env bash\n" + "".join(f"# {ln}\n" for ln in head) + "set -euo pipefail\n"
                                 f"exec python -m sglang_router.launch_router \\\n    {words} \"$@\"\n")
    return files
