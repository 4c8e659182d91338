"""Config-file training formats: torchtitan TOML, DeepSpeed ds_config JSON, torchtune recipe YAML,
and `ddp`: gpuplan's own DDP/FSDP trial run (gpuplan.bench.train_dist) of the plan's data-parallel
part, the short run that proves a plan on the machine before buying."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import yaml

from gpuplan.emit.context import TrainTarget, header
from gpuplan.emit.torchtitan_model import titan_model
from gpuplan.errors import InputError
from gpuplan.workload.presets import get_preset

__all__ = ["ddp_files", "ddp_layout", "deepspeed_config", "deepspeed_files", "torchtitan_config", "torchtitan_files",
           "torchtune_builder", "torchtune_files", "torchtune_overrides"]

_TT_AC = {"none": "none", "selective": "selective", "full": "full"}


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))  # a TOML basic string is a JSON string for these values


def toml_text(doc: dict[str, dict[str, Any]]) -> str:
    """Tables of scalars and arrays (all torchtitan's job config needs)."""
    return "\n".join(f"[{sec}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in body.items())
                     for sec, body in doc.items())


def torchtitan_config(t: TrainTarget) -> dict[str, dict[str, Any]]:
    """torchtitan job config sections (v0.2.2 field names; data/flags/torchtitan.yaml).

    Batch as the plan times it (torchtitan train.py: gradient accumulation steps = global_batch_size /
    (local_batch_size x data-parallel degree)): without pipeline stages one forward holds the plan's micro-batch,
    so local_batch_size is the micro-batch and torchtitan accumulates the rest; with pipeline stages
    local_batch_size is what one pipeline step runs, split into microbatches of pipeline_parallel_microbatch_size
    (the plan's micro-batch), so it holds all of the plan's microbatches."""
    if t.method in ("lora", "qlora"):
        raise InputError(field="emit", value="torchtitan", allowed="torchtune for a LoRA/QLoRA plan",
                         hint="torchtitan 0.2 trains full models only")
    lay = t.layout
    zero = int(lay.get("zero_stage") or 0)
    shard = t.deg("dp") if zero >= 1 else 1  # torchtitan shards with FSDP2 (ZeRO-3-like) or replicates
    replicate = 1 if zero >= 1 else t.deg("dp")
    par: dict[str, Any] = {"data_parallel_replicate_degree": replicate, "data_parallel_shard_degree": shard,
                           "tensor_parallel_degree": t.deg("tp"), "pipeline_parallel_degree": t.deg("pp"),
                           "context_parallel_degree": t.deg("cp"), "expert_parallel_degree": t.deg("ep")}
    micro = t.deg("micro_batch")
    local = micro
    if t.deg("pp") > 1:
        par["pipeline_parallel_schedule"] = "Interleaved1F1B" if t.deg("vpp") > 1 else "1F1B"
        par["pipeline_parallel_microbatch_size"] = micro
        local = micro * t.grad_accum
    model = titan_model(t.model_id, t.spec)
    doc: dict[str, dict[str, Any]] = {
        "job": {"dump_folder": "./outputs", "description": f"gpuplan plan: {t.model_id}"},
        "model": {"name": model.name, "flavor": model.flavor, "hf_assets_path": f"./assets/hf/{t.model_id}"},
        "training": {"local_batch_size": local, "global_batch_size": t.global_batch,
                     "seq_len": t.seq_len, "steps": t.train_iters,
                     "mixed_precision_param": "bfloat16" if t.precision in ("bf16", "fp8") else "float32"},
        "parallelism": par,
        "activation_checkpoint": {"mode": _TT_AC[str(lay.get("recompute", "none"))]},
        "checkpoint": {"enable": True, "folder": "checkpoint", "interval": t.save_interval},
    }
    if t.precision == "fp8":
        doc["model"]["converters"] = ["quantize.linear.float8"]
    return doc


def torchtitan_files(t: TrainTarget) -> dict[str, str]:
    cfg = torchtitan_config(t)
    tr = cfg["training"]
    dp = t.deg("dp")
    accum = tr["global_batch_size"] // (tr["local_batch_size"] * dp)
    batch = (f"Batch: {tr['local_batch_size']} sequence(s) "
             + (f"per pipeline step in microbatches of {t.deg('micro_batch')}" if t.deg("pp") > 1 else "per forward")
             + f" on each of {dp} data-parallel rank(s) x {accum} accumulation step(s) = global batch "
             f"{tr['global_batch_size']}, as planned.")
    notes = (*titan_model(t.model_id, t.spec).notes, batch)
    toml = header(t, "torchtitan", notes=notes) + toml_text(cfg)
    script = ("#!/usr/bin/env bash\n" + header(t, "torchtitan") + "set -euo pipefail\n"
              'exec ${LAUNCH:-python} -m torchtitan.train --job.config_file "$(dirname "$0")/torchtitan.toml" "$@"\n')
    return {"torchtitan.toml": toml, "torchtitan.sh": script}


def deepspeed_config(t: TrainTarget) -> dict[str, Any]:
    if t.deg("tp") > 1 or t.deg("pp") > 1:
        raise InputError(field="emit", value="deepspeed", allowed="a plan with tp=1 and pp=1 (DeepSpeed ZeRO is "
                         "data parallel)", hint="use --emit megatron for TP/PP plans")
    zero = int(t.layout.get("zero_stage") or 0)
    cfg: dict[str, Any] = {
        "train_batch_size": t.global_batch, "train_micro_batch_size_per_gpu": t.deg("micro_batch"),
        "gradient_accumulation_steps": t.grad_accum, "gradient_clipping": 1.0, "steps_per_print": 10,
        "bf16": {"enabled": t.precision in ("bf16", "fp8")}, "fp16": {"enabled": t.precision == "fp16"},
        "zero_optimization": {"stage": zero, "overlap_comm": True, "contiguous_gradients": True},
        "wall_clock_breakdown": False}
    if t.layout.get("recompute", "none") != "none":
        cfg["activation_checkpointing"] = {"partition_activations": zero >= 1, "contiguous_memory_optimization": False}
    return cfg


def deepspeed_files(t: TrainTarget) -> dict[str, str]:
    cfg = deepspeed_config(t)
    script = ("#!/usr/bin/env bash\n" + header(t, "deepspeed", notes=(
        "ds_config.json (JSON has no comments: this header is its provenance). Your training script must call "
        "deepspeed.initialize(config='ds_config.json'); activation checkpointing is your model's "
        "(deepspeed.checkpointing).",)) + "set -euo pipefail\n"
        f'exec deepspeed --num_nodes {t.nodes} --num_gpus {t.gpus_per_node} --hostfile "${{HOSTFILE:-hostfile}}" '
        '"${TRAIN_SCRIPT:-train.py}" --deepspeed --deepspeed_config "$(dirname "$0")/ds_config.json" "$@"\n')
    return {"ds_config.json": json.dumps(cfg, indent=2) + "\n", "deepspeed.sh": script}


def torchtune_overrides(t: TrainTarget) -> dict[str, Any]:
    """Keys to override in a torchtune distributed recipe config (full_finetune / lora_finetune)."""
    if t.deg("pp") > 1 or t.deg("ep") > 1:
        raise InputError(field="emit", value="torchtune", allowed="a plan with pp=1 and ep=1",
                         hint="torchtune's distributed recipes shard data/tensor/context parallel only")
    o: dict[str, Any] = {
        "batch_size": t.deg("micro_batch"), "gradient_accumulation_steps": t.grad_accum, "epochs": 1,
        "max_steps_per_epoch": t.train_iters, "dtype": "bf16" if t.precision in ("bf16", "fp8") else "fp32",
        "enable_activation_checkpointing": t.layout.get("recompute", "none") != "none",
        "tensor_parallel_dim": t.deg("tp"), "context_parallel_dim": t.deg("cp"),
        "save_every_n_steps": t.save_interval, "tokenizer": {"max_seq_len": t.seq_len}}
    if int(t.layout.get("zero_stage") or 0) < 3:
        o["data_parallel_replicate_dim"] = t.deg("dp")
        o["data_parallel_shard_dim"] = 1
    builder = torchtune_builder(t.model_id)
    if builder is not None:  # the model the recipe builds: the plan's (its LoRA builder for LoRA/QLoRA)
        mod, _, fn = builder.rpartition(".")
        o["model"] = {"_component_": f"{mod}.lora_{fn}" if t.method in ("lora", "qlora") else builder}
    if t.method in ("lora", "qlora"):
        attn = [m for m in ("q_proj", "k_proj", "v_proj", "output_proj")
                if m.removesuffix("_proj") in {x.removesuffix("_proj") for x in t.lora_targets} or
                (m == "output_proj" and "o_proj" in t.lora_targets)]
        o.setdefault("model", {}).update(
            lora_rank=t.lora_rank, lora_alpha=2 * t.lora_rank, lora_attn_modules=attn,
            apply_lora_to_mlp=any(x in t.lora_targets for x in ("gate_proj", "up_proj", "down_proj")))
        if t.method == "qlora":  # torchtune's qlora_* builders are partial(lora_*, quantize_base=True)
            o["model"]["quantize_base"] = True
    return o


@cache
def _torchtune_builders() -> dict[str, str]:
    text = resources.files("gpuplan.emit").joinpath("data/torchtune_models.yaml").read_text(encoding="utf-8")
    builders: dict[str, str] = yaml.safe_load(text)["builders"]
    return builders


def torchtune_builder(model_id: str) -> str | None:
    """torchtune's builder of the preset `model_id` or one of its aliases (data/torchtune_models.yaml), None when it
    has none (or the model is not a preset)."""
    try:
        preset = get_preset(model_id).id
    except InputError:
        return None
    return _torchtune_builders().get(preset)


def torchtune_files(t: TrainTarget) -> dict[str, str]:
    recipe = "lora_finetune_distributed" if t.method in ("lora", "qlora") else "full_finetune_distributed"
    model = (f"model._component_ builds the plan's model with torchtune's {torchtune_builder(t.model_id)} builder"
             if torchtune_builder(t.model_id) else
             f"torchtune (bd2a0fc7) has no builder of {t.spec.name}: set model._component_ to a builder of its shape "
             f"({t.spec.num_layers} layers, hidden {t.spec.hidden_size}, FFN {t.spec.ffn_hidden_size}, vocab "
             f"{t.spec.vocab_size})")
    note = (f"Overrides for `tune run --nnodes {t.nodes} --nproc_per_node {t.gpus_per_node} {recipe} --config "
            "<model config> --config torchtune.yaml`-style merging: copy into the recipe's config.", model + ".")
    return {"torchtune.yaml": header(t, "torchtune", notes=note) + yaml.safe_dump(torchtune_overrides(t),
                                                                                sort_keys=False)}


def ddp_layout(t: TrainTarget) -> dict[str, int | str]:
    """The bench's data-parallel layout nearest the plan: every device a DP rank (TP/PP/CP/EP folded in)."""
    zero = int(t.layout.get("zero_stage") or 0)
    rc = str(t.layout.get("recompute", "none"))
    return {"dp": t.devices, "zero": 3 if zero >= 2 else zero, "micro_batch": t.deg("micro_batch"),
            "microbatches": max(1, t.global_batch // (t.deg("micro_batch") * t.devices)),
            "recompute": "full" if rc != "none" else "none"}


def ddp_files(t: TrainTarget) -> dict[str, str]:
    lay = ddp_layout(t)
    folded = [f"{k}{t.deg(k)}" for k in ("tp", "pp", "cp", "ep") if t.deg(k) > 1]
    notes = ("gpuplan's trial run (gpuplan.bench.train_dist): DDP (ZeRO 0), DDP + ZeroRedundancyOptimizer "
             "(ZeRO 1) or FSDP2 (ZeRO 3) on every device" +
             (f"; {' '.join(folded)} folded into data parallelism (the nearest layout it runs)" if folded else ""),)
    script = ("#!/usr/bin/env bash\n" + header(t, "ddp", notes=notes) + "set -euo pipefail\n"
              'here="$(cd "$(dirname "$0")" && pwd)"\n'
              "exec ${LAUNCH:-python} -m gpuplan.bench.train_dist --device \"${DEVICE:-auto}\" "
              '--spec "$here/model.json" '
              f"--layout '{json.dumps(lay)}' --seq-len {t.seq_len} --warmup 1 "
              '--repeats "${REPEATS:-3}" --timeout "${TIMEOUT:-600}" --out "${OUT:-$here/progress.json}" "$@"\n')
    return {"ddp.sh": script, "model.json": t.spec.model_dump_json(indent=2) + "\n"}
