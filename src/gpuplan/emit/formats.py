"""The format names `--emit` takes and their parsing. Light on purpose: the CLI checks a format before any planning
(a typo fails fast with exit 2) without loading the emitters; emit/dispatch.py maps each name to its emitter."""

from __future__ import annotations

from gpuplan.errors import InputError

__all__ = ["LAUNCHERS", "SERVE_FORMATS", "TRAIN_CONFIGS", "TRAIN_FORMATS", "parse_formats"]

TRAIN_CONFIGS = ("megatron", "mindspeed", "torchtitan", "deepspeed", "torchtune", "nemo", "ddp")
LAUNCHERS = ("torchrun", "slurm", "pytorchjob")
TRAIN_FORMATS = (*TRAIN_CONFIGS, *LAUNCHERS)
SERVE_FORMATS = ("vllm", "sglang", "trtllm", "mindie", "lmdeploy", "k8s", "skypilot")


def parse_formats(text: str, allowed: tuple[str, ...]) -> list[str]:
    """'a,b' or 'all' -> format names in order; an unknown name is an InputError naming the allowed ones."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(allowed)
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise InputError(field="emit", value=text, allowed=", ".join((*allowed, "all")),
                         hint="a comma list, e.g. --emit megatron,slurm")
    return list(dict.fromkeys(names))
