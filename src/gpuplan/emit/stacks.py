"""Which emitted formats run on a plan's part: a launch is written only for the frameworks and engines that run on
its software stack (vLLM-Ascend and MindIE on Ascend CANN, TensorRT-LLM on CUDA only, ROCm builds on AMD...).

Serving engines say where they run in workload/data/engines.yaml (`stacks`, with CUDA compute-capability floors);
training tools in their flag list (data/flags/<tool>.yaml `stacks`). Launchers (torchrun, Slurm, PyTorchJob)
and gpuplan's own DDP trial run (PyTorch on CUDA, ROCm or torch_npu) run wherever PyTorch does.
"""

from __future__ import annotations

from gpuplan.emit.flags import flag_list
from gpuplan.errors import InputError
from gpuplan.hardware.schema_devices import Accelerator
from gpuplan.workload.engines import engine

__all__ = ["check_runs", "runs_on", "why_not"]

SERVE_ENGINES = frozenset({"vllm", "sglang", "trtllm", "mindie", "lmdeploy"})
TRAIN_TOOLS = frozenset({"megatron", "mindspeed", "torchtitan", "deepspeed", "torchtune", "nemo"})
# SkyPilot places replicas on its clouds' accelerators: NVIDIA GPUs, AMD GPUs (its Kubernetes and RunPod backends)
# and TPUs; none offers Ascend NPUs (SkyPilot docs, Supported infra)
SKYPILOT_STACKS = ("cuda", "rocm")
SKYPILOT_SOURCE = "SkyPilot docs, Supported infra: NVIDIA and AMD GPUs and TPUs; no Ascend NPUs"


def runs_on(name: str, acc: Accelerator | None, *, wraps: str | None = None) -> bool:
    """Whether format `name` runs on `acc` (`wraps`: the engine a k8s/SkyPilot manifest runs). No part known: yes."""
    if acc is None:
        return True
    if name == "skypilot" and acc.software_stack not in SKYPILOT_STACKS:
        return False
    tool = wraps if name in ("k8s", "skypilot") and wraps else name
    if tool in SERVE_ENGINES:
        return engine(tool).runs_on(acc)
    if tool in TRAIN_TOOLS:
        return acc.software_stack in flag_list(tool).stacks
    return True


def why_not(name: str, acc: Accelerator) -> str:
    """One sentence: where `name` runs, with its source."""
    if name == "skypilot":
        return f"SkyPilot runs on {', '.join(SKYPILOT_STACKS)} ({SKYPILOT_SOURCE})"
    if name in SERVE_ENGINES:
        e = engine(name)
        if acc.software_stack in e.stacks:
            return (f"{e.name} needs CUDA compute capability {e.min_cuda_capability} or higher "
                    f"({e.min_cuda_capability_source})")
        return f"{e.name} runs on {', '.join(e.stacks)} ({e.stacks_source})"
    fl = flag_list(name)
    return f"{fl.tool} runs on {', '.join(fl.stacks)} ({fl.stacks_source})"


def check_runs(names: list[str], allowed: tuple[str, ...], acc: Accelerator | None, *,
               wraps: str | None = None) -> None:
    """InputError naming the formats that run on `acc` when one of `names` does not."""
    if acc is None:
        return
    for n in names:
        if not runs_on(n, acc, wraps=wraps):
            able = [a for a in allowed if runs_on(a, acc, wraps=wraps)]
            inner = n if n == "skypilot" and acc.software_stack not in SKYPILOT_STACKS else (
                wraps if n in ("k8s", "skypilot") and wraps else n)
            raise InputError(field="emit", value=n,
                             allowed=f"a format that runs on {acc.id} ({acc.software_stack}): {', '.join(able)}",
                             hint=why_not(inner, acc) + f"; the plan's part {acc.id} runs "
                                  f"{acc.software_stack_detail or acc.software_stack}")
