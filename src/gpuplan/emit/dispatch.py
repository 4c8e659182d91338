"""Format names -> emitters. `--emit` takes a comma list; `all` is every format of the kind. Launchers
(torchrun, slurm, pytorchjob) wrap the first launchable training format named (megatron, mindspeed,
torchtitan, ddp), else the plan's own family (mindspeed on Ascend, megatron for TP/PP, else ddp)."""

from __future__ import annotations

from collections.abc import Callable

from gpuplan.emit.context import ServeTarget, TrainTarget
from gpuplan.emit.deploy import deployed_engine, deployment_files, skypilot_files
from gpuplan.emit.formats import LAUNCHERS, SERVE_FORMATS, TRAIN_FORMATS, parse_formats
from gpuplan.emit.launchers import LAUNCHABLE, pytorchjob_files, slurm_files, torchrun_files
from gpuplan.emit.serve import serve_files
from gpuplan.emit.stacks import check_runs, runs_on
from gpuplan.emit.train_configs import ddp_files, deepspeed_files, torchtitan_files, torchtune_files
from gpuplan.emit.train_megatron import megatron_files, mindspeed_files, nemo_files
from gpuplan.errors import InputError

__all__ = ["LAUNCHERS", "SERVE_FORMATS", "TRAIN_FORMATS", "emit_serve", "emit_train", "parse_formats"]

_TRAIN: dict[str, Callable[[TrainTarget], dict[str, str]]] = {
    "megatron": megatron_files, "mindspeed": mindspeed_files, "torchtitan": torchtitan_files,
    "deepspeed": deepspeed_files, "torchtune": torchtune_files, "nemo": nemo_files, "ddp": ddp_files}
_LAUNCH: dict[str, Callable[[TrainTarget, str], dict[str, str]]] = {
    "torchrun": torchrun_files, "slurm": slurm_files, "pytorchjob": pytorchjob_files}
MULTI_NODE_SERVE = frozenset({"sglang"})  # formats that launch one server over several instances


def _wrapped(t: TrainTarget, names: list[str]) -> str:
    for n in names:
        if n in LAUNCHABLE:
            return n
    if t.ascend:
        return "mindspeed"
    return "megatron" if max(t.deg("tp"), t.deg("pp"), t.deg("cp"), t.deg("ep")) > 1 else "ddp"


def emit_train(t: TrainTarget, names: list[str]) -> dict[str, str]:
    """{file name: text} for the training formats `names` (launchers add the script they wrap); a framework that does
    not run on the plan's part is an InputError naming those that do."""
    if names == list(TRAIN_FORMATS):  # `all`: every framework that runs on the part and fits the plan
        names = [n for n in names if runs_on(n, t.accelerator) and _fits(t, n)]
    check_runs(names, TRAIN_FORMATS, t.accelerator)
    files: dict[str, str] = {}
    launchers = [n for n in names if n in _LAUNCH]
    for n in names:
        if n in _TRAIN:
            files.update(_TRAIN[n](t))
    if launchers:
        inner = _wrapped(t, names)
        files.update(_TRAIN[inner](t))
        for n in launchers:
            files.update(_LAUNCH[n](t, f"{inner}.sh"))
    return files


def _fits(t: TrainTarget, name: str) -> bool:
    if name not in _TRAIN:
        return True
    try:
        _TRAIN[name](t)
    except InputError:
        return False
    return True


def emit_serve(t: ServeTarget, names: list[str]) -> dict[str, str]:
    """{file name: text} for the serving formats `names`; an engine that does not run on the fleet's part is an
    InputError naming those that do (`all`: the engines that run on it)."""
    wraps = deployed_engine(t)
    if names == list(SERVE_FORMATS):
        names = [n for n in names if runs_on(n, t.accelerator, wraps=wraps)]
    check_runs(names, SERVE_FORMATS, t.accelerator, wraps=wraps)
    files: dict[str, str] = {}
    # vLLM spans instances with a Ray cluster for pipeline stages (its multi-node recipe), not for a DeepEP group
    multi = MULTI_NODE_SERVE | ({"vllm"} if t.ep <= t.tp else set())
    if t.nodes_per_server > 1 and set(names) - multi:
        raise InputError(field="emit", value=",".join(names), allowed=", ".join(sorted(multi)),
                         hint=f"this fleet's servers each span {t.nodes_per_server} instances ("
                              + ("an expert-parallel group" if t.ep > t.tp else "pipeline stages")
                              + f" over {t.devices_per_replica} devices); gpuplan writes the multi-node launch "
                              "for these formats only")
    for n in names:
        if n == "k8s":
            files.update(deployment_files(t))
        elif n == "skypilot":
            files.update(skypilot_files(t))
        else:
            files.update(serve_files(t, n))
    return files
