"""Fleet formats: a Kubernetes Deployment (the plan's replica count, device requests, a readiness
probe on the engine's health endpoint) and a SkyPilot service YAML for the cloud instance the plan
chose. Both run one replica of the chosen engine's command (serve.py)."""

from __future__ import annotations

from typing import Any

import yaml

from gpuplan.emit.context import ServeTarget, header
from gpuplan.emit.serve import PORT, lmdeploy_args, sglang_args, trtllm_args, vllm_args

__all__ = ["deployed_engine", "image", "deployment_files", "deployment_object", "skypilot_files", "skypilot_object"]

IMAGES = {"vllm": "vllm/vllm-openai:v0.11.0", "sglang": "lmsysorg/sglang:v0.5.4",
          "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:1.2.0", "lmdeploy": "openmmlab/lmdeploy:v0.10.0",
          "mindie": "${MINDIE_IMAGE}"}
# on Ascend: vLLM through its hardware plugin's image (vllm-ascend README / quick start: quay.io/ascend/vllm-ascend, the
# release matching vLLM 0.11.0); other engines' NPU images are the operator's to name
ASCEND_IMAGES = {"vllm": "quay.io/ascend/vllm-ascend:v0.11.0rc0", "mindie": "${MINDIE_IMAGE}"}
HEALTH = {"vllm": "/health", "sglang": "/health", "trtllm": "/health", "lmdeploy": "/v1/models",
          "mindie": "/health"}


def deployed_engine(t: ServeTarget) -> str:
    """The engine a Deployment / SkyPilot service runs: the fleet's (vllm-ascend, mindie-ascend: vLLM, MindIE)."""
    e = str(t.fleet.get("engine") or "vllm")
    e = "mindie" if e == "mindie_splitfuse" else e  # MindIE with SplitFuse on: the same image, another config
    return e.removesuffix("-ascend") if e.removesuffix("-ascend") in IMAGES else "vllm"


_engine = deployed_engine


def _argv(t: ServeTarget, engine: str) -> list[str]:
    fn = {"vllm": vllm_args, "sglang": sglang_args, "trtllm": trtllm_args, "lmdeploy": lmdeploy_args}.get(engine)
    if fn is None:
        return []
    head = {"vllm": ["vllm", "serve", "$(MODEL_PATH)"], "sglang": ["python", "-m", "sglang.launch_server"],
            "trtllm": ["trtllm-serve", "$(MODEL_PATH)"], "lmdeploy": ["lmdeploy", "serve", "api_server",
                                                                      "$(MODEL_PATH)"]}[engine]
    out = list(head)
    for k, v in fn(t):
        if k == "--config":
            continue  # the trtllm options file would need a ConfigMap; the defaults apply without it
        out += [k] + ([v.replace("${MODEL_PATH}", "$(MODEL_PATH)")] if v is not None else [])
    return out


def image(t: ServeTarget, eng: str) -> str:
    """The container image of `eng` for the fleet's part."""
    if t.ascend:
        return ASCEND_IMAGES.get(eng, f"${{{eng.upper()}_ASCEND_IMAGE}}")
    return IMAGES[eng]


def deployment_object(t: ServeTarget) -> dict[str, Any]:
    eng = _engine(t)
    resource = "huawei.com/Ascend910" if t.ascend else "nvidia.com/gpu"
    labels = {"app": "gpuplan-serve", "app.kubernetes.io/managed-by": "gpuplan"}
    argv = _argv(t, eng)
    container: dict[str, Any] = {
        "name": eng, "image": image(t, eng),
        "env": [{"name": "MODEL_PATH", "value": "/models/" + t.model_id}],
        "ports": [{"containerPort": PORT, "name": "http"}],
        "resources": {"limits": {resource: t.devices_per_replica}, "requests": {resource: t.devices_per_replica}},
        "readinessProbe": {"httpGet": {"path": HEALTH[eng], "port": PORT}, "initialDelaySeconds": 60,
                           "periodSeconds": 10, "failureThreshold": 60}}
    if argv:
        container["command"], container["args"] = argv[:1], argv[1:]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "gpuplan-serve", "labels": labels},
            "spec": {"replicas": t.server_replicas, "selector": {"matchLabels": {"app": "gpuplan-serve"}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [container]}}}}


def deployment_files(t: ServeTarget) -> dict[str, str]:
    note = ("Mount the weights at /models/ (a PersistentVolume); one pod per replica, "
            f"{t.devices_per_replica} device(s) each.",)
    return {"deployment.yaml": header(t, "k8s", notes=note) + yaml.safe_dump(deployment_object(t), sort_keys=False)}


_SKY_ACC = {"h100": "H100", "h200": "H200", "a100-sxm4-80gb": "A100-80GB", "a100": "A100", "l40s": "L40S",
            "b200": "B200", "h20": "H20", "a10g": "A10G", "l4": "L4"}


def _sky_accelerator(acc: str) -> str:
    for prefix, name in _SKY_ACC.items():
        if acc.startswith(prefix):
            return name
    return acc


def skypilot_object(t: ServeTarget) -> dict[str, Any]:
    eng = _engine(t)
    argv = [w.replace("$(MODEL_PATH)", "$MODEL_PATH") for w in _argv(t, eng)]
    return {"name": "gpuplan-serve",
            "resources": {"accelerators": f"{_sky_accelerator(str(t.fleet['accelerator']))}:{t.devices_per_replica}",
                          "ports": PORT},
            "envs": {"MODEL_PATH": t.model_id},
            "service": {"readiness_probe": {"path": HEALTH[eng], "initial_delay_seconds": 600},
                        "replicas": t.server_replicas},
            "setup": f"pip install {eng}" if eng in ("vllm", "sglang", "lmdeploy") else "true",
            "run": " ".join(argv) if argv else "bash mindie.sh"}


def skypilot_files(t: ServeTarget) -> dict[str, str]:
    note = (f"The plan's instance: {t.fleet.get('instance')} ({t.fleet.get('instances')} in all); SkyPilot "
            "places each replica on the cheapest cloud offering the accelerators unless you add resources.cloud.",)
    return {"skypilot.yaml": header(t, "skypilot", notes=note) + yaml.safe_dump(skypilot_object(t), sort_keys=False)}
