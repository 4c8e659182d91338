"""Long-context plans launch as they were sized: a prefill context-parallel fleet names its CP ranks, one sized with
a host KV tier names the tier (vLLM options read from vLLM's own config classes: emit/data/flags/vllm.yaml)."""

from __future__ import annotations

from gpuplan.emit.context import ServeTarget
from gpuplan.emit.flags import unknown
from gpuplan.emit.serve import vllm_args
from gpuplan.hardware import load_catalog
from gpuplan.workload.presets import load_model

OFFLOAD = "--kv-offloading-backend native --kv-offloading-size 512"


def _target(layout: dict[str, int], engine: str = "vllm", offload: str | None = None) -> ServeTarget:
    fleet = {"layout": layout, "weights": "bf16", "engine": engine, "devices": 16, "instances": 2,
             **({"prefix_tiers": {"offload": offload}} if offload else {})}
    return ServeTarget(model_id="meta-llama/Llama-3.1-8B-Instruct", spec=load_model("llama3.1-8b"), fleet=fleet,
                       run={"kv_dtype": "bf16", "engine": engine}, max_model_len=131072,
                       accelerator=load_catalog(()).accelerator("h100-sxm5-80gb"))


def test_a_context_parallel_fleet_launches_tp_x_cp_ranks() -> None:
    t = _target({"tp": 4, "pp": 1, "ep": 1, "cp": 2})
    args = dict(vllm_args(t))
    assert args["--tensor-parallel-size"] == "4" and args["--prefill-context-parallel-size"] == "2"
    assert t.devices_per_replica == 8
    assert "--prefill-context-parallel-size" not in dict(vllm_args(_target({"tp": 8, "pp": 1, "ep": 1})))
    assert unknown(["vllm"], [k for k, _ in vllm_args(t)]) == []


def test_a_host_kv_tier_is_launched_only_with_the_engine_it_was_sized_for() -> None:
    args = vllm_args(_target({"tp": 4, "pp": 1, "ep": 1}, offload=OFFLOAD))
    assert ("--kv-offloading-backend", "native") in args and ("--kv-offloading-size", "512") in args
    assert unknown(["vllm"], [k for k, _ in args]) == []
    sglang_plan = _target({"tp": 4, "pp": 1, "ep": 1}, engine="sglang", offload="--enable-hierarchical-cache")
    other = dict(vllm_args(sglang_plan))
    assert "--kv-offloading-size" not in other and "--enable-hierarchical-cache" not in other
