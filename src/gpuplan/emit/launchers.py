"""Launchers for a training format's script: `torchrun` per node, a Slurm batch script, a Kubeflow
PyTorchJob. Each sets the collective-library environment the plan's fabric needs (netenv.py) and
runs the wrapped script (megatron.sh, mindspeed.sh, torchtitan.sh or ddp.sh) with `LAUNCH` set to the
torchrun command for the plan's node count."""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from gpuplan.emit.context import TrainTarget, header
from gpuplan.emit.netenv import collective_env

__all__ = ["LAUNCHABLE", "pytorchjob_files", "pytorchjob_object", "slurm_directives", "slurm_files",
           "torchrun_argv", "torchrun_files"]

LAUNCHABLE = ("megatron", "mindspeed", "torchtitan", "ddp")  # formats whose script runs under ${LAUNCH}
_DEFAULT = re.compile(r"^\$\{[A-Z_]+:-(.*)\}$")


def _env(t: TrainTarget) -> list[tuple[str, str, str]]:
    return collective_env(t.network_kind, ascend=t.ascend, multi_node=t.nodes > 1)


def torchrun_argv(t: TrainTarget) -> list[str]:
    """torchrun options for one node of the plan (node rank and rendezvous host from the environment)."""
    if t.nodes == 1:
        return ["--standalone", "--nnodes", "1", "--nproc-per-node", str(t.gpus_per_node)]
    return ["--nnodes", str(t.nodes), "--nproc-per-node", str(t.gpus_per_node), "--node-rank", "${NODE_RANK}",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", "${MASTER_ADDR}:${MASTER_PORT:-29500}",
            "--rdzv-id", "${RDZV_ID:-gpuplan}", "--max-restarts", "3"]


def torchrun_files(t: TrainTarget, script: str) -> dict[str, str]:
    env = "".join(f"export {k}={v}  # {why}\n" for k, v, why in _env(t))
    need = ("" if t.nodes == 1 else
            ': "${NODE_RANK:?set NODE_RANK (0..' + str(t.nodes - 1) + ') on each node}"\n'
            ': "${MASTER_ADDR:?set MASTER_ADDR to node 0 on every node}"\n')
    text = ("#!/usr/bin/env bash\n" + header(t, f"torchrun + {script}", notes=(
        f"Run on each of the {t.nodes} node(s).",)) + "set -euo pipefail\n" + env + need +
        f'export LAUNCH="torchrun {" ".join(torchrun_argv(t))}"\n'
        f'exec bash "$(dirname "$0")/{script}" "$@"\n')
    return {"torchrun.sh": text}


def slurm_directives(t: TrainTarget) -> list[tuple[str, str | None]]:
    days = float(t.plan.get("time_to_train_s") or 0) / 86400
    limit = "2-00:00:00" if days <= 0 else f"{min(int(days * 1.2) + 1, 30)}-00:00:00"
    gres = ("--gres", f"npu:{t.gpus_per_node}") if t.ascend else ("--gpus-per-node", str(t.gpus_per_node))
    return [("--job-name", "gpuplan-train"), ("--nodes", str(t.nodes)), ("--ntasks-per-node", "1"), gres,
            ("--exclusive", None), ("--time", limit), ("--output", "gpuplan-%j.out"), ("--requeue", None)]


def slurm_files(t: TrainTarget, script: str) -> dict[str, str]:
    sb = "".join(f"#SBATCH {k}" + (f"={v}" if v is not None else "") + "\n" for k, v in slurm_directives(t))
    body = ('export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"\n'
            "export MASTER_PORT=${MASTER_PORT:-29500}\n"
            "export RDZV_ID=$SLURM_JOB_ID\n"
            'here="${SLURM_SUBMIT_DIR:-$(pwd)}"\n'
            "srun --kill-on-bad-exit=1 bash -c 'NODE_RANK=$SLURM_NODEID exec bash \"$0/torchrun.sh\"' \"$here\"\n")
    # sbatch reads #SBATCH lines up to the first command; the header is comments, so it may come first
    text = "#!/usr/bin/env bash\n" + header(t, f"slurm + {script}", notes=(
        "Time limit: the predicted time to train plus 20% (at most 30 days); checkpoints every "
        f"{t.save_interval} steps let --requeue resume.",)) + sb + "set -euo pipefail\n" + body
    return {"slurm.sbatch": text, **torchrun_files(t, script)}


def pytorchjob_object(t: TrainTarget, script: str, image: str = "${IMAGE}") -> dict[str, Any]:
    resource = "huawei.com/Ascend910" if t.ascend else "nvidia.com/gpu"
    env: list[dict[str, Any]] = [{"name": k, "value": m.group(1) if (m := _DEFAULT.match(v)) else v}
           for k, v, _ in _env(t) if ":?" not in v]
    launch = ("torchrun --nnodes=${PET_NNODES} --nproc-per-node=" + str(t.gpus_per_node) +
              " --node-rank=${RANK} --master-addr=${MASTER_ADDR} --master-port=${MASTER_PORT}")
    container = {"name": "pytorch", "image": image, "command": ["bash", "-c"],
                 "args": [f'export LAUNCH="{launch}"; exec bash /workspace/gpuplan/{shlex.quote(script)}'],
                 "env": env, "resources": {"limits": {resource: t.gpus_per_node}}}
    if t.ascend:
        env.append({"name": "HCCL_IF_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})

    def replica(n: int) -> dict[str, Any]:
        return {"replicas": n, "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [container]}}}

    specs = {"Master": replica(1)}
    if t.nodes > 1:
        specs["Worker"] = replica(t.nodes - 1)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "gpuplan-train", "labels": {"app.kubernetes.io/managed-by": "gpuplan"}},
            "spec": {"nprocPerNode": str(t.gpus_per_node), "pytorchReplicaSpecs": specs}}


def pytorchjob_files(t: TrainTarget, script: str) -> dict[str, str]:
    note = ("The image must hold the emitted files under /workspace/gpuplan/ (or mount them from a ConfigMap); "
            "replace ${IMAGE}. The operator sets MASTER_ADDR, MASTER_PORT, RANK (the node) and PET_NNODES.",)
    return {"pytorchjob.yaml": header(t, f"pytorchjob + {script}", notes=note) +
            yaml.safe_dump(pytorchjob_object(t, script), sort_keys=False)}
