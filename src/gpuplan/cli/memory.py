"""`gpuplan memory train|infer`: per-device memory breakdowns."""

from __future__ import annotations

from typing import Literal, get_args

import typer
from pydantic import ValidationError

from gpuplan.cli.common import LANG_OPT, console, fail, flag, note, positive, positives, print_json, warn
from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.memory_fit import MemoryFit, MemoryFix, memory_fit, nearest_infer_fix, nearest_train_fix
from gpuplan.estimate.memory_infer import estimate_inference_memory, max_batch_that_fits
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.i18n import help_text, resolve_lang, tr
from gpuplan.render.memory_table import memory_tables
from gpuplan.search.candidates import offered, offered_choice
from gpuplan.service.memory_inputs import device_memory, fit_json
from gpuplan.units import GIB
from gpuplan.workload.context import seq_len_warning
from gpuplan.workload.frameworks import FrameworkId, RecomputeModule
from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.jobs import LORA_TARGETS, InferenceJob, Layout, TrainingJob, serving_layout
from gpuplan.workload.presets import load_model

app = typer.Typer(help=help_text("help.group.memory"),
                  no_args_is_help=True)

_MODEL = typer.Option(..., "--model", "-m", help=help_text("help.memory.model"))


def _print_fit(fit: MemoryFit | None, fix: MemoryFix | None, lang: str) -> None:
    """One line when the estimate does not fit: the usable-memory rule and the nearest change that fits."""
    if fit is None or fit.fits:
        return
    line = f"{fit.verdict(lang)}: {fit.text(lang)}"
    if fix is not None:
        line += f". {fix.text(lang)}"
    console.print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("train", help=help_text("help.memory_train"))
def train_cmd(
    model: str = _MODEL,
    method: Literal["full", "pretrain", "full_ft", "lora", "qlora"] = typer.Option(
        "full", help=help_text("help.memory_train.method")),
    seq_len: int = typer.Option(4096, help=help_text("help.memory_train.seq_len")),
    micro_batch: int = typer.Option(1, help=help_text("help.memory_train.micro_batch")),
    global_batch: int = typer.Option(None, help=help_text("help.memory_train.global_batch")),
    precision: Literal["bf16", "fp16", "fp32", "fp8", "nvfp4", "mxfp4"] = typer.Option("bf16"),
    optimizer: str = typer.Option("adamw", help=help_text("help.memory_train.optimizer")),
    tp: int = typer.Option(1, help=help_text("help.memory_train.tp")),
    pp: int = typer.Option(1, help=help_text("help.memory_train.pp")),
    dp: int = typer.Option(1, help=help_text("help.memory_train.dp")),
    cp: int = typer.Option(1, help=help_text("help.memory_train.cp")),
    ep: int = typer.Option(1, help=help_text("help.memory_train.ep")),
    vpp: int = typer.Option(1, help=help_text("help.memory_train.vpp")),
    zero: int = typer.Option(0, min=0, max=3, help=help_text("help.memory_train.zero")),
    seq_parallel: bool | None = flag(None, "--seq-parallel/--no-seq-parallel",
                                     help=help_text("help.estimate_train.seq_parallel")),
    recompute: Literal["none", "selective", "full"] = typer.Option("none"),
    recompute_modules: str | None = typer.Option(None, help=help_text("help.memory_train.recompute_modules")),
    attention: Literal["flash", "eager"] = typer.Option("flash"),
    kernels: Literal["auto", "hf", "fused"] = typer.Option(
        "auto", help=help_text("help.memory_train.kernels")),
    framework: FrameworkId | None = typer.Option(None, help=help_text("help.memory_train.framework")),
    zero_impl: Literal["torch", "deepspeed"] = typer.Option(
        "torch", help=help_text("help.memory_train.zero_impl")),
    quant_format: Literal["nf4", "gptq"] = typer.Option("nf4", help=help_text("help.memory_train.quant_format")),
    loss_upcast: bool = flag(True, "--loss-upcast/--no-loss-upcast",
                                     help=help_text("help.memory_train.loss_upcast")),
    lora_rank: int = typer.Option(16),
    lora_targets: str = typer.Option(",".join(LORA_TARGETS), help=help_text("help.memory_train.lora_targets")),
    trainable_extra: str = typer.Option("", help=help_text("help.memory_train.trainable_extra")),
    loss: Literal["full", "chunked", "fused"] = typer.Option("full", help=help_text("help.memory_train.loss")),
    loss_chunks: int = typer.Option(8, help=help_text("help.memory_train.loss_chunks")),
    compile_model: bool = flag(False, "--compile/--no-compile", help=help_text("help.memory_train.compile")),
    optimizer_offload: Literal["none", "cpu", "nvme"] = typer.Option(
        "none", help=help_text("help.memory_train.optimizer_offload")),
    optimizer_in_bwd: bool = flag(False, "--optimizer-in-bwd/--no-optimizer-in-bwd",
                                          help=help_text("help.memory_train.optimizer_in_bwd")),
    fp8_params: bool = flag(False, "--fp8-params/--no-fp8-params", help=help_text("help.memory_train.fp8_params")),
    accelerator: str = typer.Option(None, help=help_text("help.memory_train.accelerator")),
    device_memory_gib: float = typer.Option(None, help=help_text("help.memory_train.device_memory_gib")),
    json_out: bool = flag(False, "--json", help=help_text("help.common.json_out")),
    lang: str = LANG_OPT,
) -> None:
    """Training memory per device (the most loaded pipeline rank)."""
    try:
        language = resolve_lang(lang)
        positives(language, ("seq-len", seq_len, True), ("micro-batch", micro_batch, True),
                  ("global-batch", global_batch, True), ("tp", tp, True), ("pp", pp, True), ("dp", dp, True),
                  ("cp", cp, True), ("ep", ep, True), ("vpp", vpp, True), ("lora-rank", lora_rank, True),
                  ("loss-chunks", loss_chunks, True),
                  ("device-memory-gib", device_memory_gib, False))
        spec = load_model(model)
        targets = tuple(t.strip() for t in lora_targets.split(",") if t.strip())
        for t in targets:
            if t not in LORA_TARGETS:
                raise InputError(field="lora-targets", value=t, allowed=", ".join(LORA_TARGETS))
        extra = tuple(t.strip() for t in trainable_extra.split(",") if t.strip())
        for t in extra:
            if t not in ("embed", "head"):
                raise InputError(field="trainable-extra", value=t, allowed="embed, head",
                                 hint="e.g. --trainable-extra embed,head (PEFT modules_to_save)")
        modules = None
        if recompute_modules is not None:
            modules = tuple(m.strip() for m in recompute_modules.split(",") if m.strip())
            for m in modules:
                if m not in get_args(RecomputeModule):
                    raise InputError(field="recompute-modules", value=m, allowed=", ".join(get_args(RecomputeModule)),
                                     hint="e.g. --recompute-modules mla_up_proj,moe_act (Megatron-Core "
                                          "--recompute-modules; core_attn is --recompute selective)")
        if extra and method not in ("lora", "qlora"):
            raise InputError(field="trainable-extra", value=trainable_extra, allowed="used with --method lora or qlora",
                             hint="full fine-tuning trains every module already")
        job = TrainingJob(method="full" if method in ("pretrain", "full_ft") else method,
                          seq_len=seq_len, micro_batch=micro_batch, global_batch=global_batch,
                          precision=precision, optimizer=optimizer,
                          recompute=recompute, attention=attention, kernels=kernels, zero_impl=zero_impl,
                          quant_format=quant_format, loss_upcast=loss_upcast,
                          lora_rank=lora_rank, lora_targets=targets, trainable_extra=extra, loss=loss,
                          loss_chunks=loss_chunks, compile=compile_model, optimizer_offload=optimizer_offload,
                          optimizer_in_bwd=optimizer_in_bwd, fp8_params=fp8_params, framework=framework,
                          recompute_modules=modules)
        layout = Layout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, vpp=vpp, zero_stage=zero,
                        seq_parallel=job.sequence_parallel_on() if seq_parallel is None else seq_parallel)
        if framework is not None:  # a layout the named framework cannot run is refused, naming those that can
            prof = framework_profile(framework)
            for axis, degree in (("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep), ("vpp", vpp)):
                offered(prof, axis, degree, [degree])  # type: ignore[arg-type]
            offered_choice(prof, "zero", zero, list(prof.zero_stages), [zero])
            offered_choice(prof, "recompute", recompute, list(prof.recompute), [recompute])
        mem = estimate_training_memory(spec, job, layout)
        device, chosen = device_memory(accelerator, device_memory_gib, language)
        fit = memory_fit(mem.total_bytes, device) if device is not None else None
        fix = nearest_train_fix(spec, job, layout, fit.device_bytes) if fit is not None and not fit.fits else None
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    note(chosen)
    warn(seq_len_warning(spec, seq_len, language))
    if json_out:
        out = mem.to_json()
        if fit is not None:
            out.update(fit_json(fit, fix))
        print_json(out)
        return
    console.print(memory_tables(mem, title=tr("cli.mem.title_train", language, model=spec.name),
                                fit=fit, lang=language))
    _print_fit(fit, fix, language)


@app.command("infer", help=help_text("help.memory_infer"))
def infer_cmd(
    model: str = _MODEL,
    weights: Literal["bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4"] = typer.Option("bf16"),
    kv_dtype: Literal["bf16", "fp16", "fp8", "int8", "nvfp4"] | None = typer.Option(
        None, help=help_text("help.memory_infer.kv_dtype")),
    batch: int = typer.Option(1, help=help_text("help.memory_infer.batch")),
    context: int = typer.Option(4096, help=help_text("help.memory_infer.context")),
    tp: int = typer.Option(1),
    pp: int = typer.Option(1),
    ep: int = typer.Option(1, help=help_text("help.memory_infer.ep")),
    group_size: int = typer.Option(128, help=help_text("help.memory_infer.group_size")),
    memory_fraction: float = typer.Option(0.9, help=help_text("help.memory_infer.memory_fraction")),
    quant_scope: Literal["all", "mlp"] = typer.Option("all", help=help_text("help.memory_infer.quant_scope")),
    kv_layout: Literal["pool", "concat"] = typer.Option(
        "pool", help=help_text("help.memory_infer.kv_layout")),
    generated: int = typer.Option(0, help=help_text("help.memory_infer.generated")),
    prompt_logits: Literal["last", "all"] = typer.Option("last", help=help_text("help.memory_infer.prompt_logits")),
    accelerator: str = typer.Option(None, help=help_text("help.memory_infer.accelerator")),
    device_memory_gib: float = typer.Option(None, help=help_text("help.memory_infer.device_memory_gib")),
    json_out: bool = flag(False, "--json", help=help_text("help.common.json_out")),
    lang: str = LANG_OPT,
) -> None:
    """Inference memory per device, and the largest batch that fits a device."""
    try:
        language = resolve_lang(lang)
        positives(language, ("batch", batch, True), ("context", context, True), ("tp", tp, True), ("pp", pp, True),
                  ("ep", ep, True), ("group-size", group_size, True), ("memory-fraction", memory_fraction, False),
                  ("device-memory-gib", device_memory_gib, False))
        positive("generated", generated, language, integer=True, zero_ok=True)
        spec = load_model(model)
        job = InferenceJob(weights=weights, kv_dtype=kv_dtype, batch=batch, context=context,
                           int4_group_size=group_size, memory_fraction=memory_fraction, quant_scope=quant_scope,
                           kv_layout=kv_layout, generated=generated, prompt_logits=prompt_logits)
        layout = serving_layout(tp=tp, pp=pp, ep=ep)
        mem = estimate_inference_memory(spec, job, layout)
        device, chosen = device_memory(accelerator, device_memory_gib, language)
        fit = max_batch_that_fits(spec, job, device, layout) if device else None
        usable = memory_fit(mem.total_bytes, device) if device else None
        fix = nearest_infer_fix(spec, job, layout, device) if device and usable and not usable.fits else None
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    note(chosen)
    warn(seq_len_warning(spec, context, language, option="--context"))
    if json_out:
        out = mem.to_json()
        if usable is not None:
            out.update(fit_json(usable, fix))
        if fit is not None:
            out["device_memory_bytes"] = round(fit.device_memory_bytes)
            out["kv_budget_bytes"] = round(fit.kv_budget_bytes)
            out["max_batch_fits"] = fit.max_batch
            out["max_kv_tokens_fit"] = fit.max_tokens
        print_json(out)
        return
    console.print(memory_tables(mem, title=tr("cli.mem.title_infer", language, model=spec.name),
                                fit=usable, lang=language))
    _print_fit(usable, fix, language)
    if fit is not None:
        console.print(tr("cli.mem.max_batch", language, context=context, fraction=memory_fraction,
                         gib=fit.device_memory_bytes / GIB, batch=f"[bold]{fit.max_batch}[/]", tokens=fit.max_tokens))
