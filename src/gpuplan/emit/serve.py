"""Serving-engine formats: `vllm serve`, SGLang `launch_server`, `trtllm-serve` (+ its --config YAML),
MindIE Service config.json, `lmdeploy serve api_server`. One replica's command (or config) per
file; the fleet's replica count goes into the Deployment / SkyPilot service (deploy.py).

Settings: parallel sizes from the fleet's layout, max sequences, memory fraction and token budget
from the engine profile (workload/data/engines.yaml) the plan was simulated with (for another
engine, that engine's profile), max model length from the load's longest request, weight format
and KV-cache dtype from the plan."""

from __future__ import annotations

import json
import shlex
from typing import Any

import yaml

from gpuplan.emit.context import ServeTarget, header
from gpuplan.workload.engines import EngineProfile, engine

__all__ = ["Arg", "command_words", "lmdeploy_args", "mindie_config", "serve_files", "sglang_args", "trtllm_args",
           "vllm_args"]

Arg = tuple[str, str | None]
PORT = 8000


def _profile(t: ServeTarget, engine_id: str) -> EngineProfile:
    return engine(engine_id)


def _quant_note(t: ServeTarget) -> tuple[str, ...]:
    w = t.fleet["weights"]
    if w in ("int8", "int4"):
        return (f"Weights {w}: serve a pre-quantized checkpoint ({'AWQ/GPTQ' if w == 'int4' else 'W8A8/SmoothQuant'}); "
                "the engine reads its format from the checkpoint's quantization config.",)
    if w in ("nvfp4", "mxfp4"):
        return (f"Weights {w}: serve a pre-quantized {w.upper()} checkpoint (NVIDIA ModelOpt FP4 for NVFP4, AMD Quark "
                "for MXFP4); the engine reads its format from the checkpoint's quantization config.",)
    return ()


def vllm_args(t: ServeTarget) -> list[Arg]:
    p = _profile(t, "vllm")
    a: list[Arg] = [("--host", "0.0.0.0"), ("--port", str(PORT)), ("--tensor-parallel-size", str(t.tp)),
                    ("--pipeline-parallel-size", str(t.pp))]
    if t.cp > 1:  # prefill context parallelism: world size tp x cp (search/data/context_parallel.yaml)
        a.append(("--prefill-context-parallel-size", str(t.cp)))
    if t.ep > t.tp:  # attention data parallelism: ep/tp engine ranks share the experts (vLLM data parallel docs)
        a.append(("--data-parallel-size", str(t.attention_groups)))
    if t.ep > 1:
        a.append(("--enable-expert-parallel", None))  # vLLM's EP size is TP x DP of the replica
    a += [("--max-num-seqs", str(p.max_num_seqs)), ("--max-model-len", str(t.max_model_len)),
          ("--max-num-batched-tokens", str(p.max_batched_tokens)),
          ("--gpu-memory-utilization", f"{p.gpu_memory_fraction:g}")]
    if t.fleet["weights"] == "fp8":
        a.append(("--quantization", "fp8"))
    a.append(("--kv-cache-dtype", "fp8" if t.run.get("kv_dtype") in ("fp8", "int8") else "auto"))
    a += _offload_args(t, "vllm")
    return a


def _offload_args(t: ServeTarget, engine_id: str) -> list[Arg]:
    """The host KV tier the plan was sized with (its `prefix_tiers.offload`, search/infer_offload.py) as options,
    when the plan was made for `engine_id`."""
    tiers = t.fleet.get("prefix_tiers") or {}
    flag = tiers.get("offload")
    if not flag or t.fleet.get("engine") != engine_id:
        return []
    words = str(flag).split()
    return [(w, words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None)
            for i, w in enumerate(words) if w.startswith("--")]


def sglang_args(t: ServeTarget) -> list[Arg]:
    p = _profile(t, "sglang")
    # with attention data parallelism SGLang's tp-size counts every GPU of the server and dp-size the attention
    # groups (SGLang server arguments: --enable-dp-attention)
    a: list[Arg] = [("--model-path", "${MODEL_PATH}"), ("--host", "0.0.0.0"), ("--port", str(PORT)),
                    ("--tp-size", str(max(t.tp, t.ep))), ("--pp-size", str(t.pp))]
    if t.ep > t.tp:  # the plan's step model times the expert all-to-all as DeepEP's
        a += [("--dp-size", str(t.attention_groups)), ("--enable-dp-attention", None), ("--moe-a2a-backend", "deepep")]
    if t.ep > 1:
        a.append(("--ep-size", str(t.ep)))
    if t.nodes_per_server > 1:  # one server over several instances: run this command on each, rank 0 first
        a += [("--nnodes", str(t.nodes_per_server)), ("--node-rank", "${NODE_RANK:?}"),
              ("--dist-init-addr", "${MASTER_ADDR:?}:5000")]
    a += [("--max-running-requests", str(p.max_num_seqs)), ("--context-length", str(t.max_model_len)),
          ("--mem-fraction-static", f"{p.gpu_memory_fraction:g}"),
          ("--chunked-prefill-size", str(p.max_batched_tokens))]
    if t.fleet["weights"] == "fp8":
        a.append(("--quantization", "fp8"))
    if t.run.get("kv_dtype") in ("fp8", "int8"):
        a.append(("--kv-cache-dtype", "fp8_e4m3"))
    if t.ascend:
        a += [("--device", "npu"), ("--attention-backend", "ascend")]
    return a


def trtllm_args(t: ServeTarget) -> list[Arg]:
    p = _profile(t, "trtllm")
    # attention data parallelism: tp_size counts every GPU and enable_attention_dp (trtllm_config.yaml) splits
    # the attention over them (TensorRT-LLM DeepSeek-R1 deployment guide)
    a: list[Arg] = [("--host", "0.0.0.0"), ("--port", str(PORT)), ("--backend", "pytorch"),
                    ("--tp_size", str(max(t.tp, t.ep))), ("--pp_size", str(t.pp))]
    if t.ep > 1:
        a.append(("--ep_size", str(t.ep)))
    a += [("--max_batch_size", str(p.max_num_seqs)), ("--max_num_tokens", str(p.max_batched_tokens)),
          ("--max_seq_len", str(t.max_model_len)),
          ("--kv_cache_free_gpu_memory_fraction", f"{p.gpu_memory_fraction:g}"),
          ("--config", "trtllm_config.yaml")]
    return a


def trtllm_options(t: ServeTarget) -> dict[str, Any]:
    kv = {"fp8": "fp8", "int8": "fp8"}.get(str(t.run.get("kv_dtype")), "auto")
    out: dict[str, Any] = {"kv_cache_config": {"dtype": kv,
                                               "free_gpu_memory_fraction": _profile(t, "trtllm").gpu_memory_fraction}}
    if t.ep > t.tp:
        out["enable_attention_dp"] = True
    return out


def lmdeploy_args(t: ServeTarget) -> list[Arg]:
    p = _profile(t, "lmdeploy")
    a: list[Arg] = [("--server-name", "0.0.0.0"), ("--server-port", str(PORT)),
                    ("--backend", "pytorch" if t.ascend or t.pp > 1 or t.ep > t.tp else "turbomind"),
                    ("--tp", str(t.tp))]
    if t.ep > t.tp:  # attention data parallelism (LMDeploy PyTorch engine: --dp with --ep)
        a.append(("--dp", str(t.attention_groups)))
    if t.ep > 1:
        a.append(("--ep", str(t.ep)))
    a += [("--session-len", str(t.max_model_len)), ("--max-batch-size", str(p.max_num_seqs)),
          ("--cache-max-entry-count", f"{p.gpu_memory_fraction:g}")]
    if t.fleet["weights"] == "int4":
        a.append(("--model-format", "awq"))
    kv = str(t.run.get("kv_dtype"))
    if kv in ("int8", "fp8"):
        a.append(("--quant-policy", "8"))
    if t.ascend:
        a.append(("--device", "ascend"))
    return a


def mindie_config(t: ServeTarget) -> dict[str, Any]:
    split = t.fleet.get("engine") == "mindie_splitfuse"  # the fleet was planned with SplitFuse on
    p = _profile(t, "mindie_splitfuse" if split else "mindie")
    world = t.devices_per_replica
    cfg = {
        "Version": "1.0.0",
        "ServerConfig": {"ipAddress": "0.0.0.0", "port": PORT, "httpsEnabled": False},
        "BackendConfig": {
            "npuDeviceIds": [list(range(world))], "multiNodesInferEnabled": False,
            "ModelDeployConfig": {
                "maxSeqLen": t.max_model_len, "maxInputTokenLen": t.max_model_len, "truncation": False,
                "ModelConfig": [{"modelInstanceType": "Standard", "modelName": t.model_id,
                                 "modelWeightPath": "/data/model", "worldSize": world, "backendType": "atb",
                                 "trustRemoteCode": False}]},
            "ScheduleConfig": {"maxBatchSize": p.max_num_seqs, "maxPrefillBatchSize": max(1, p.max_num_seqs // 4),
                               "maxPrefillTokens": p.max_batched_tokens, "maxIterTimes": t.max_model_len}},
        "LogConfig": {"logLevel": "Info"}}
    # MindIE Service 2.1.RC1 "SplitFuse" (mindie_service0128): the plugin, the Mix template and a chunk of
    # maxBatchSize tokens; the prefill cap stays mindie's
    if split:
        deploy: Any = cfg["BackendConfig"]
        deploy["ModelDeployConfig"]["ModelConfig"][0]["plugin_params"] = json.dumps({"plugin_type": "splitfuse"})
        deploy["ScheduleConfig"].update(templateType="Mix", enableSplit=True, splitChunkTokens=p.max_batched_tokens,
                                        maxPrefillTokens=_profile(t, "mindie").max_batched_tokens)
    return cfg


_ASCEND_VLLM = ("Ascend: run in the vllm-ascend image (quay.io/ascend/vllm-ascend:v0.11.0rc0) or with the vllm-ascend "
                "plugin installed beside vLLM 0.11 (pip install vllm-ascend): the same `vllm serve` command and flags "
                "on the NPUs.",)


def _cmd(t: ServeTarget, fmt: str, entry: str, args: list[Arg], notes: tuple[str, ...] = ()) -> str:
    words = " \\\n    ".join(k + (f" {v}" if v is not None else "") for k, v in args)
    return ("#!/usr/bin/env bash\n" + header(t, fmt, notes=notes + _quant_note(t)) + "set -euo pipefail\n"
            f"exec {entry} \\\n    {words} \"$@\"\n")


def _vllm_ray(t: ServeTarget) -> str:
    """vLLM over several instances (pipeline stages): a Ray cluster of the instances, then one server on its head
    (vLLM docs, parallelism and scaling: tensor_parallel_size = GPUs per node, pipeline_parallel_size = nodes,
    `ray start --head` on one node and `ray start --address` on the others)."""
    args = [*vllm_args(t), ("--distributed-executor-backend", "ray")]
    words = " \\\n    ".join(k + (f" {v}" if v is not None else "") for k, v in args)
    notes = (f"One server spans {t.nodes_per_server} instances as {t.pp} pipeline stages: run this script on each "
             f"with NODE_RANK=0..{t.nodes_per_server - 1} and MASTER_ADDR set to the rank-0 instance; rank 0 starts "
             "the Ray head and the server once the others have joined.",)
    return ("#!/usr/bin/env bash\n" + header(t, "vllm", notes=notes + _quant_note(t)) + "set -euo pipefail\n"
            'if [ "${NODE_RANK:?}" != "0" ]; then\n'
            '  exec ray start --address="${MASTER_ADDR:?}:6379" --block\n'
            "fi\n"
            "ray start --head --port=6379\n"
            f"until [ \"$(ray status 2>/dev/null | grep -c 'node_')\" -ge {t.nodes_per_server} ]; do sleep 5; done\n"
            f'exec vllm serve "${{MODEL_PATH}}" \\\n    {words} "$@"\n')


def serve_files(t: ServeTarget, fmt: str) -> dict[str, str]:
    """The files of one serving format."""
    if fmt == "vllm":
        if t.nodes_per_server > 1:
            return {"vllm.sh": _vllm_ray(t)}
        return {"vllm.sh": _cmd(t, fmt, 'vllm serve "${MODEL_PATH}"', vllm_args(t), _ASCEND_VLLM if t.ascend else ())}
    if fmt == "sglang":
        how = ("the expert all-to-all runs over their RDMA fabric, DeepEP" if t.ep > t.tp else
               "each pipeline stage keeps its tensor parallelism inside an instance and sends one hidden-state vector "
               "per token to the next over the network")
        notes = ((f"One server spans {t.nodes_per_server} instances: run this script on each with NODE_RANK=0.."
                  f"{t.nodes_per_server - 1} and MASTER_ADDR set to the rank-0 instance ({how}).",)
                 if t.nodes_per_server > 1 else ())
        return {"sglang.sh": _cmd(t, fmt, "python -m sglang.launch_server", sglang_args(t), notes)}
    if fmt == "trtllm":
        opts = header(t, fmt) + yaml.safe_dump(trtllm_options(t), sort_keys=False)
        return {"trtllm.sh": _cmd(t, fmt, 'trtllm-serve "${MODEL_PATH}"', trtllm_args(t)),
                "trtllm_config.yaml": opts}
    if fmt == "lmdeploy":
        return {"lmdeploy.sh": _cmd(t, fmt, 'lmdeploy serve api_server "${MODEL_PATH}"', lmdeploy_args(t))}
    if fmt == "mindie":
        cfg = mindie_config(t)
        run = ("#!/usr/bin/env bash\n" + header(t, fmt, notes=(
            "mindie_config.json (JSON has no comments: this header is its provenance) goes to "
            "$MIES_INSTALL_PATH/conf/config.json; put the weights at /data/model.",)) + "set -euo pipefail\n"
            'cp "$(dirname "$0")/mindie_config.json" "${MIES_INSTALL_PATH:?}/conf/config.json"\n'
            'cd "$MIES_INSTALL_PATH" && exec ./bin/mindieservice_daemon\n')
        return {"mindie_config.json": json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", "mindie.sh": run}
    raise ValueError(fmt)


def command_words(text: str) -> list[str]:
    """The words of the server's exec line of an emitted serving script, the last one (tests parse them back)."""
    body = text[text.rindex("exec "):].replace("\\\n", " ")
    return shlex.split(body.splitlines()[0])
