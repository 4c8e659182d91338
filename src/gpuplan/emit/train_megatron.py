"""Megatron-family training formats: Megatron-LM `pretrain_gpt.py`, MindSpeed-LLM (Ascend), NeMo 2 /
Megatron-Bridge recipe overrides. Each maps the plan's layout, model shape, batch, precision,
recomputation and checkpoint interval onto the tool's own flag or field names (data/flags)."""

from __future__ import annotations

import shlex

import yaml

from gpuplan.emit.context import TrainTarget, header
from gpuplan.emit.megatron_model import model_args, nemo_model
from gpuplan.errors import InputError
from gpuplan.estimate.pipeline_split import balanced_split

__all__ = ["Arg", "array_lines", "megatron_args", "megatron_files", "mindspeed_args", "mindspeed_files", "nemo_files",
           "nemo_overrides"]

Arg = tuple[str, str | None]  # (--flag, value or None for a switch)


def _no_lora(t: TrainTarget, fmt: str) -> None:
    if t.method in ("lora", "qlora"):
        raise InputError(field="emit", value=fmt, allowed="torchtune for a LoRA/QLoRA plan",
                         hint=f"{fmt}'s pretraining script has no LoRA flags in the targeted version")


def megatron_args(t: TrainTarget, *, ascend: bool = False) -> list[Arg]:
    """`pretrain_gpt.py` arguments for the plan (Megatron-Core models, mock data for the trial run)."""
    _no_lora(t, "mindspeed" if ascend else "megatron")
    s, lay = t.spec, t.layout
    a: list[Arg] = [("--tensor-model-parallel-size", str(t.deg("tp"))),
                    ("--pipeline-model-parallel-size", str(t.deg("pp"))),
                    ("--context-parallel-size", str(t.deg("cp"))),
                    ("--expert-model-parallel-size", str(t.deg("ep")))]
    if t.deg("vpp") > 1:
        a.append(("--num-layers-per-virtual-pipeline-stage", str(max(1, s.num_layers // (t.deg("pp") * t.deg("vpp"))))))
    elif (split := balanced_split(s, t.seq_len, t.deg("pp"))) is not None:
        # the plan times balanced stages (estimate/pipeline_split.py): fewer layers beside the LM head
        a += [("--decoder-first-pipeline-num-layers", str(split[0])),
              ("--decoder-last-pipeline-num-layers", str(split[1]))]
    if t.deg("tp") > 1 and lay.get("seq_parallel", True):
        a.append(("--sequence-parallel", None))
    zero = t.deg("zero_stage") if lay.get("zero_stage") else 0
    if zero == 3 and ascend:  # Megatron core 0.12 (MindSpeed-LLM's) shards parameters with torch FSDP2
        a.append(("--use-torch-fsdp2", None))
    elif zero == 3:
        a += [("--use-megatron-fsdp", None), ("--data-parallel-sharding-strategy", "optim_grads_params")]
    elif zero >= 1:
        a += [("--use-distributed-optimizer", None), ("--overlap-grad-reduce", None), ("--overlap-param-gather", None)]
    a += [("--micro-batch-size", str(t.deg("micro_batch"))), ("--global-batch-size", str(t.global_batch)),
          ("--seq-length", str(t.seq_len)), *model_args(t, ascend=ascend)[0]]
    precision: dict[str, list[Arg]] = {"bf16": [("--bf16", None)], "fp16": [("--fp16", None)], "fp32": [],
                                       "fp8": [("--bf16", None), ("--fp8-format", "hybrid")]}
    a += precision[t.precision]
    rc = lay.get("recompute", "none")
    if rc == "selective":
        a.append(("--recompute-granularity", "selective"))
    elif rc == "full":
        a += [("--recompute-granularity", "full"), ("--recompute-method", "uniform"), ("--recompute-num-layers", "1")]
    if not ascend:
        a.append(("--transformer-impl", "transformer_engine"))
    a += [("--train-iters", str(t.train_iters)), ("--save-interval", str(t.save_interval)),
          ("--save", "${CKPT_DIR:-checkpoints}"), ("--load", "${CKPT_DIR:-checkpoints}"),
          ("--lr", "3.0e-4"), ("--min-lr", "3.0e-5"), ("--lr-decay-style", "cosine"), ("--weight-decay", "0.1"),
          ("--clip-grad", "1.0"), ("--log-interval", "10"),
          ("--mock-data", None), ("--tokenizer-type", "NullTokenizer")]
    if ascend:  # MindSpeed-LLM's fused Ascend kernels and local transformer (its examples/mcore pretrain scripts)
        a += [("--use-mcore-models", None), ("--use-flash-attn", None)]
        if s.norm == "rmsnorm":
            a.append(("--use-fused-rmsnorm", None))
        if s.position_embedding == "rope":
            a.append(("--use-fused-rotary-pos-emb", None))
        if s.mlp == "swiglu":
            a.append(("--use-fused-swiglu", None))
        a.append(("--transformer-impl", "local"))
    return a


def mindspeed_args(t: TrainTarget) -> list[Arg]:
    """MindSpeed-LLM's `pretrain_gpt.py` arguments: Megatron's plus its fused Ascend kernels."""
    return megatron_args(t, ascend=True)


def array_lines(args: list[Arg]) -> str:
    """One `--flag value` per line of a bash array (values are shell words; ${VAR} stays expandable)."""
    return "\n".join(f"    {k}" + (f" {v}" if v is not None else "") for k, v in args)


def _script(t: TrainTarget, fmt: str, entry: str, args: list[Arg], notes: tuple[str, ...]) -> str:
    return ("#!/usr/bin/env bash\n" + header(t, fmt, notes=notes) + "set -euo pipefail\n"
            f"# Run through a launcher (gpuplan ... --emit {fmt},torchrun|slurm|pytorchjob) on every node.\n"
            "GPUPLAN_ARGS=(\n" + array_lines(args) + "\n)\n"
            f'exec ${{LAUNCH:-python}} {shlex.quote(entry)} "${{GPUPLAN_ARGS[@]}}" "$@"\n')


_DATA_NOTE = ("Data: --mock-data/NullTokenizer make the trial run self-contained; for the real run replace them "
              "with --data-path and --tokenizer-type HuggingFaceTokenizer --tokenizer-model.",
              "Learning-rate settings are common defaults, not planned figures.")


_MOE_NOTE = ("MoE load balancing (--moe-router-load-balancing-type, --moe-aux-loss-coeff) and the all-to-all "
             "dispatcher are common settings, not planned figures.",)


_DATA_NOTE_ASCEND = ("Data: --mock-data/NullTokenizer make the trial run self-contained; for the real run replace them "
                     "with --data-path, --tokenizer-type PretrainedFromHF --tokenizer-name-or-path (MindSpeed-LLM's) "
                     "and drop --vocab-size: --padded-vocab-size keeps the embedding at the model's vocabulary.",
                     _DATA_NOTE[1])


def _notes(t: TrainTarget, ascend: bool) -> tuple[str, ...]:
    return (*model_args(t, ascend=ascend)[1], *(_DATA_NOTE_ASCEND if ascend else _DATA_NOTE),
            *(_MOE_NOTE if t.spec.moe is not None else ()))


def megatron_files(t: TrainTarget) -> dict[str, str]:
    return {"megatron.sh": _script(t, "megatron", "pretrain_gpt.py", megatron_args(t), _notes(t, False))}


def mindspeed_files(t: TrainTarget) -> dict[str, str]:
    return {"mindspeed.sh": _script(t, "mindspeed", "pretrain_gpt.py", mindspeed_args(t), _notes(t, True))}


def nemo_overrides(t: TrainTarget) -> dict[str, dict[str, object]]:
    """Megatron-Bridge ConfigContainer overrides (model / train / checkpoint sections)."""
    _no_lora(t, "nemo")
    lay = t.layout
    model: dict[str, object] = {
        **nemo_model(t)[0],
        "tensor_model_parallel_size": t.deg("tp"), "pipeline_model_parallel_size": t.deg("pp"),
        "context_parallel_size": t.deg("cp"), "expert_model_parallel_size": t.deg("ep"),
        "sequence_parallel": bool(t.deg("tp") > 1 and lay.get("seq_parallel", True)), "seq_length": t.seq_len,
        "bf16": t.precision in ("bf16", "fp8"), "fp16": t.precision == "fp16"}
    if t.deg("vpp") > 1:
        model["virtual_pipeline_model_parallel_size"] = t.deg("vpp")
    elif (split := balanced_split(t.spec, t.seq_len, t.deg("pp"))) is not None:  # balanced stages, as planned
        model.update(num_layers_in_first_pipeline_stage=split[0], num_layers_in_last_pipeline_stage=split[1])
    if t.precision == "fp8":
        model["fp8"] = "hybrid"
    rc = lay.get("recompute", "none")
    if rc != "none":
        model["recompute_granularity"] = rc
        if rc == "full":
            model.update(recompute_method="uniform", recompute_num_layers=1)
    return {"model": model,
            "train": {"micro_batch_size": t.deg("micro_batch"), "global_batch_size": t.global_batch,
                      "train_iters": t.train_iters},
            "checkpoint": {"save_interval": t.save_interval, "save": "checkpoints"}}


def nemo_files(t: TrainTarget) -> dict[str, str]:
    body = yaml.safe_dump(nemo_overrides(t), sort_keys=False)
    note = ("Overrides for a Megatron-Bridge GPT recipe of the model's family: the model section carries the plan's "
            "model (shape, RoPE base, norms, vocabulary, MoE) over the recipe's; pass as the recipe script's "
            "--config-file, or as key=value overrides.", *nemo_model(t)[1])
    return {"nemo_overrides.yaml": header(t, "nemo", notes=note) + body}
