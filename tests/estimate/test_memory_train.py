"""Behaviour of the training-memory estimator: ZeRO, TP, PP, LoRA/QLoRA, recompute, contract."""

from __future__ import annotations

import pytest

from gpuplan.errors import InputError
from gpuplan.estimate.activations import activation_breakdown
from gpuplan.estimate.calibration import load_calibration
from gpuplan.estimate.memory_train import NF4_BYTES_PER_PARAM, estimate_training_memory, stage_layers
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

LLAMA = get_preset("llama3-8b").spec
JOB = TrainingJob(seq_len=2048, micro_batch=1)


def test_mixed_precision_adam_is_16_bytes_per_param() -> None:
    """ZeRO paper: 2 + 2 + 12 bytes per parameter without sharding."""
    m = estimate_training_memory(LLAMA, JOB)
    n = count_params(LLAMA).total
    assert m.weights_bytes == 2 * n
    assert m.gradients_bytes == 2 * n
    assert m.optimizer_bytes == 12 * n


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_stages_shard_what_the_paper_says(stage: int) -> None:
    n = count_params(LLAMA).total
    m = estimate_training_memory(LLAMA, JOB, Layout(dp=8, zero_stage=stage))  # type: ignore[arg-type]
    assert m.optimizer_bytes == pytest.approx(12 * n / (8 if stage >= 1 else 1))
    assert m.gradients_bytes == pytest.approx(2 * n / (8 if stage >= 2 else 1))
    assert m.weights_bytes == pytest.approx(2 * n / (8 if stage >= 3 else 1))


@pytest.mark.parametrize("framework", ["megatron", "mindspeed", "megatron_deepspeed"])
@pytest.mark.parametrize(("zero", "dp"), [(0, 1), (1, 8), (1, 64)])
def test_megatron_keeps_fp32_main_gradients(framework: str, zero: int, dp: int) -> None:
    """Megatron-LM docs (user-guide/features/dist_optimizer.md), 'bf16 parameters, fp32 gradients': 18 bytes per
    parameter without the distributed optimizer, 6 + 12/d with it. Before, gradients were counted in 16 bits for
    every framework (16 and 4 + 12/d), though the step model already reduced them in fp32 for these frameworks."""
    n = count_params(LLAMA).total
    job = JOB.model_copy(update={"framework": framework})
    m = estimate_training_memory(LLAMA, job, Layout(dp=dp, zero_stage=zero))  # type: ignore[arg-type]
    per_param = (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes) / n
    assert per_param == pytest.approx(18.0 if zero == 0 else 6 + 12 / dp)
    assert any("fp32 main-gradient" in note for note in m.assumptions["notes"])
    # frameworks that reduce 16-bit gradients (FSDP mixed precision, DeepSpeed) and fp32 runs keep the weights' width
    fsdp = estimate_training_memory(LLAMA, JOB.model_copy(update={"framework": "fsdp"}), Layout(dp=dp, zero_stage=zero))
    assert fsdp.gradients_bytes == pytest.approx(2 * n)
    assert job.model_copy(update={"precision": "fp32"}).gradient_bytes() == 4.0


def test_more_devices_never_raise_memory_under_zero3() -> None:
    totals = [estimate_training_memory(LLAMA, JOB, Layout(dp=d, zero_stage=3)).total_bytes for d in (1, 2, 4, 8, 64)]
    assert all(a >= b for a, b in zip(totals, totals[1:], strict=False))


def test_tensor_parallel_splits_matrices_but_not_norms() -> None:
    one = estimate_training_memory(LLAMA, JOB, Layout(tp=1))
    eight = estimate_training_memory(LLAMA, JOB, Layout(tp=8))
    norms = count_params(LLAMA).by_part()["norms"]
    assert eight.weights_bytes == pytest.approx((one.weights_bytes - 2 * norms) / 8 + 2 * norms)
    assert eight.activations_bytes < one.activations_bytes / 4  # sequence parallel splits the rest too


def test_sequence_parallel_off_keeps_norm_activations_replicated() -> None:
    on = estimate_training_memory(LLAMA, JOB, Layout(tp=4, seq_parallel=True))
    off = estimate_training_memory(LLAMA, JOB, Layout(tp=4, seq_parallel=False))
    assert off.activations_bytes > on.activations_bytes


def test_pipeline_first_stage_holds_pp_microbatches() -> None:
    job = TrainingJob(seq_len=2048, micro_batch=1, global_batch=64, kernels="hf")
    m = estimate_training_memory(LLAMA, job, Layout(pp=4, dp=1))
    assert m.assumptions["pipeline_rank_reported"] in (0, 3)
    assert m.details["activations"]["dense_layers"] == pytest.approx(
        4 * 8 * estimate_training_memory(LLAMA, job).details["activations"]["dense_layers"] / 32)


def test_stage_layers_cover_all_layers_and_interleave() -> None:
    ds = get_preset("deepseek-v3").spec
    split = stage_layers(ds, Layout(pp=16, dp=16))
    assert sum(d + m for d, m in split) == ds.num_layers
    assert split[0][0] == ds.num_dense_layers  # the leading dense layers sit on the first stage
    inter = stage_layers(LLAMA, Layout(pp=4, vpp=2))
    assert [d for d, _ in inter] == [8, 8, 8, 8]


def test_lora_below_full_and_qlora_below_lora() -> None:
    full = estimate_training_memory(LLAMA, JOB)
    lora = estimate_training_memory(LLAMA, JOB.model_copy(update={"method": "lora"}))
    qlora = estimate_training_memory(LLAMA, JOB.model_copy(update={"method": "qlora"}))
    assert qlora.total_bytes < lora.total_bytes < full.total_bytes
    assert lora.params_trainable < full.params_trainable / 100


def test_lora_adapter_count_by_hand() -> None:
    """r*(in+out) per targeted linear: q,k,v,o and gate,up,down for Llama-3-8B, r=8."""
    job = JOB.model_copy(update={"method": "lora", "lora_rank": 8})
    h, kv, f = 4096, 1024, 14336
    per_layer = 8 * ((h + h) + 2 * (h + kv) + (h + h) + 3 * (h + f))
    assert estimate_training_memory(LLAMA, job).params_trainable == 32 * per_layer


def test_qlora_base_is_nf4_with_double_quant() -> None:
    assert pytest.approx(4.127, abs=1e-3) == NF4_BYTES_PER_PARAM * 8  # QLoRA paper: 0.127 bits overhead
    job = JOB.model_copy(update={"method": "qlora"})
    m = estimate_training_memory(LLAMA, job)
    c = count_params(LLAMA)
    matrix = c.layers_total - c.dense_layer.norms * LLAMA.num_layers
    expected = matrix * NF4_BYTES_PER_PARAM + (c.total - matrix) * 2
    assert m.details["weights"]["frozen_base"] == pytest.approx(expected)


def test_recompute_orders_activation_memory() -> None:
    acts = {rc: estimate_training_memory(LLAMA, JOB.model_copy(update={"recompute": rc, "attention": "eager"}))
            .activations_bytes for rc in ("none", "selective", "full")}
    assert acts["none"] > acts["selective"] > acts["full"]


def test_calibration_terms_are_named_and_overridable() -> None:
    base = estimate_training_memory(LLAMA, JOB)
    cal = load_calibration({"runtime_context_gib": 2.0})
    more = estimate_training_memory(LLAMA, JOB, calibration=cal)
    assert more.other_bytes - base.other_bytes == pytest.approx(1.25 * 2**30)
    assert more.assumptions["calibration"]["runtime_context_gib"]["overridden"] is True


def test_json_contract_has_integer_bytes() -> None:
    out = estimate_training_memory(LLAMA, JOB).to_json()
    keys = ["params_total", "params_active", "params_trainable", "weights_bytes", "gradients_bytes",
            "optimizer_bytes", "activations_bytes", "kv_cache_bytes", "other_bytes", "total_bytes"]
    for k in keys:
        assert isinstance(out[k], int), k
    assert out["total_bytes"] == sum(out[k] for k in keys[3:9])
    assert isinstance(out["assumptions"], dict)


@pytest.mark.parametrize(("layout", "field"), [
    (Layout(tp=3), "tp"),
    (Layout(pp=33), "pp"),
    (Layout(ep=2, dp=2), "ep"),
])
def test_bad_layouts_name_the_field(layout: Layout, field: str) -> None:
    with pytest.raises(InputError) as err:
        estimate_training_memory(LLAMA, JOB, layout)
    assert err.value.field == field


def test_unknown_optimizer_suggests_close_names() -> None:
    with pytest.raises(InputError, match="adamw"):
        estimate_training_memory(LLAMA, JOB.model_copy(update={"optimizer": "adam"}))


def test_fused_kernels_save_less_than_hf_modules() -> None:
    # Fused RMSNorm keeps its 16-bit input (not an fp32 copy plus the output) and fused SwiGLU
    # keeps two of the three ffn-wide tensors: per layer 2 norms x (4 bytes x t x h) and 2 x t x ffn fewer.
    job = TrainingJob(seq_len=2048, micro_batch=1, global_batch=8)
    hf = activation_breakdown(LLAMA, job.model_copy(update={"kernels": "hf"}), Layout())
    fused = activation_breakdown(LLAMA, job.model_copy(update={"kernels": "fused"}), Layout())
    t, h, f = 2048, LLAMA.hidden_size, LLAMA.ffn_hidden_size
    assert hf.dense_layer_bytes - fused.dense_layer_bytes == pytest.approx(2 * 4 * t * h + 2 * t * f)
    # auto: Megatron-class (fused) kernels with TP or PP, HF modules for pure data parallelism
    assert activation_breakdown(LLAMA, job, Layout()).dense_layer_bytes == hf.dense_layer_bytes
    assert activation_breakdown(LLAMA, job, Layout(tp=2)).dense_layer_bytes == pytest.approx(
        activation_breakdown(LLAMA, job.model_copy(update={"kernels": "fused"}), Layout(tp=2)).dense_layer_bytes)


def test_megatron_core_moe_keeps_no_expert_outputs() -> None:
    """Megatron-Core applies the router's probabilities inside the experts' activation since April 2025
    (ADLR/megatron-lm!2668, weighted SwiGLU), so the experts' outputs are not saved for their gradient; Hugging Face
    MoE blocks multiply the outputs by the probabilities and keep them (e x top-k x hidden per token)."""
    spec = get_preset("deepseek-v3").spec
    layout = Layout(tp=1, pp=4, ep=64, dp=64, seq_parallel=True)
    job = TrainingJob(seq_len=4096, micro_batch=1, precision="fp8")
    core = activation_breakdown(spec, job.model_copy(update={"framework": "nemo"}), layout)
    hf = activation_breakdown(spec, job.model_copy(update={"framework": "fsdp"}), layout)
    assert "expert_output" not in core.moe_layer
    assert hf.moe_layer["expert_output"] == 2 * 4096 * spec.moe.top_k * spec.hidden_size  # type: ignore[union-attr]
    planned = activation_breakdown(spec, job, layout)  # no framework: a pipelined layout is planned as Megatron-Core
    assert "expert_output" not in planned.moe_layer


def test_deepseek_v3_fits_a_gb200_the_way_megatron_bridge_ran_it() -> None:
    """Megatron-Bridge 26.04.01 ran DeepSeek-V3 MXFP8 on 256 GB200s at PP4 VPP4 EP64, micro-batch 1, sequence 4096,
    4,256 tokens/s per GPU, recomputing only the dense layers' MLP (recipe at cd2da76:
    scripts/performance/configs/deepseek/deepseek_workload_base_configs.py, recompute_modules=["mlp"]; three of 61
    layers). The first pipeline stage without recompute must fit the GB200's 186 GB (it held 198 GiB by our count
    while the experts' outputs were kept, and validation charged the row a full recompute: 1.42x slow)."""
    spec = get_preset("deepseek-v3").spec
    job = TrainingJob(seq_len=4096, micro_batch=1, global_batch=4096, precision="fp8", framework="nemo")
    m = estimate_training_memory(spec, job, Layout(tp=1, pp=4, vpp=4, ep=64, dp=64, zero_stage=1, seq_parallel=True))
    assert m.total_bytes < 186e9


def test_output_discarding_recompute_modules_drop_what_megatron_core_drops() -> None:
    """Megatron-Core --recompute-modules (TransformerConfig.recompute_modules; output-discarding checkpoints):
    mla_up_proj drops MLA's per-head q, k and v (rebuilt from the saved latents), moe_act the experts' SwiGLU output
    (the second expert GEMM's input), layernorm the outputs of the norms that are modules of their own (MLA's
    input_layernorm, a MoE layer's pre_mlp_layernorm). The dropped tensors of one layer are rebuilt at a time; under
    full recompute the modules change nothing."""
    spec = get_preset("deepseek-v3").spec
    assert spec.moe is not None and spec.mla is not None
    layout = Layout(tp=1, pp=16, ep=64, dp=128, seq_parallel=True)
    job = TrainingJob(seq_len=4096, micro_batch=1, precision="fp8", framework="nemo")
    plain = activation_breakdown(spec, job, layout)
    t, a = 4096, spec.num_heads
    m = spec.mla
    up = activation_breakdown(spec, job.model_copy(update={"recompute_modules": ("mla_up_proj",)}), layout)
    qkv = 2 * t * a * (m.qk_head_dim + m.qk_head_dim + m.qk_nope_head_dim + m.v_head_dim)  # bf16 q, k, v
    assert plain.moe_layer_bytes - up.moe_layer_bytes == pytest.approx(qkv)
    assert plain.dense_layer_bytes - up.dense_layer_bytes == pytest.approx(qkv)
    assert up.recompute_working_bytes == pytest.approx(qkv) and plain.recompute_working_bytes == 0
    act = activation_breakdown(spec, job.model_copy(update={"recompute_modules": ("moe_act",)}), layout)
    fc2_input = 1 * t * spec.moe.top_k * spec.moe.expert_ffn_size  # fp8: linear inputs kept in one byte
    assert plain.moe_layer_bytes - act.moe_layer_bytes == pytest.approx(fc2_input)
    assert act.dense_layer_bytes == plain.dense_layer_bytes
    norm = activation_breakdown(spec, job.model_copy(update={"recompute_modules": ("layernorm",)}), layout)
    assert plain.moe_layer_bytes - norm.moe_layer_bytes == pytest.approx(2 * 1 * t * spec.hidden_size)
    assert plain.dense_layer_bytes - norm.dense_layer_bytes == pytest.approx(1 * t * spec.hidden_size)
    full = job.model_copy(update={"recompute": "full"})
    assert (activation_breakdown(spec, full.model_copy(update={"recompute_modules": ("mla_up_proj", "moe_act")}),
                                 layout) == activation_breakdown(spec, full, layout))
    # a model without MLA has no up projections to drop
    dense = TrainingJob(seq_len=4096, micro_batch=1, recompute_modules=("mla_up_proj",))
    assert activation_breakdown(LLAMA, dense, Layout(tp=8)) == activation_breakdown(
        LLAMA, dense.model_copy(update={"recompute_modules": ()}), Layout(tp=8))


def test_dualpipe_recomputes_what_the_deepseek_v3_report_says() -> None:
    """DeepSeek-V3 report sec. 3.2.3 (all RMSNorms and MLA up projections recomputed) and 3.3.2 (the SwiGLU output
    recomputed from its cached input): the framework's default, which a job's statement replaces. Before, its own
    layout (PP16 EP64, no TP, 80 GB H800s) needed 125.7 GiB a device by our count; with the modules 84.7 GiB, and
    with the report's low-precision storage (sec. 3.3.3, test below) 79.4 GiB: within the 80 GB it ran on."""
    job = TrainingJob(seq_len=4096, micro_batch=1, global_batch=15360, precision="fp8", framework="dualpipe")
    assert job.recompute_modules_on() == {"layernorm", "mla_up_proj", "moe_act"}
    assert job.model_copy(update={"recompute_modules": ()}).recompute_modules_on() == frozenset()
    assert TrainingJob(framework="nemo").recompute_modules_on() == frozenset()
    spec = get_preset("deepseek-v3").spec
    layout = Layout(tp=1, pp=16, ep=64, dp=128, zero_stage=1, seq_parallel=True)
    with_modules = estimate_training_memory(spec, job, layout).total_bytes / 2**30
    without = estimate_training_memory(spec, job.model_copy(update={"recompute_modules": ()}), layout).total_bytes
    assert 78 < with_modules < 80 and without / 2**30 > 115


def test_dualpipe_stores_what_the_deepseek_v3_report_says_in_low_precision() -> None:
    """DeepSeek-V3 report sec. 3.3.3: AdamW's moments in BF16, master weights and gradients kept in FP32, the MoE
    SwiGLU inputs cached in FP8. Each moves the published layout's count the way the report says (before: 84.7 GiB,
    gradients in 16 bits, fp32 moments, 16-bit SwiGLU inputs)."""
    spec = get_preset("deepseek-v3").spec
    layout = Layout(tp=1, pp=16, ep=64, dp=128, zero_stage=1, seq_parallel=True)
    job = TrainingJob(seq_len=4096, micro_batch=1, global_batch=15360, precision="fp8", framework="dualpipe")
    m = estimate_training_memory(spec, job, layout)
    assert job.optimizer_on() == "adamw_bf16_moments" and m.assumptions["optimizer"] == "adamw_bf16_moments"
    assert m.gradients_bytes == pytest.approx(2 * m.weights_bytes)  # fp32 gradients beside 16-bit weights
    assert m.details["optimizer"]["states"] == pytest.approx(m.details["optimizer"]["fp32_master"])  # 2 + 2 vs 4
    # a job that names another optimizer keeps it
    assert job.model_copy(update={"optimizer": "adam8bit"}).optimizer_on() == "adam8bit"
    # the SwiGLU input halves in fp8; a bf16 run, or a framework that keeps it in 16 bits, does not
    fp8 = activation_breakdown(spec, job, layout).moe_layer["expert_ffn"]
    megatron = activation_breakdown(spec, job.model_copy(update={"framework": "megatron",
                                                                 "recompute_modules": ("moe_act",)}), layout)
    assert fp8 == pytest.approx(megatron.moe_layer["expert_ffn"] / 2)
    bf16 = activation_breakdown(spec, job.model_copy(update={"precision": "bf16"}), layout).moe_layer["expert_ffn"]
    assert bf16 == pytest.approx(2 * fp8)


def test_an_unknown_recompute_module_names_the_allowed_ones() -> None:
    from pydantic import ValidationError

    from gpuplan.validate.row_settings import parse_settings

    with pytest.raises(InputError) as err:
        parse_settings("recompute_modules=mla_up_proj,core_atten", row_id="r1")
    assert "layernorm" in str(err.value) and "mla_up_proj" in str(err.value) and "moe_act" in str(err.value)
    assert parse_settings("recompute_modules=mla_up_proj,moe_act").recompute_modules == ("mla_up_proj", "moe_act")
    with pytest.raises(ValidationError):
        TrainingJob(recompute_modules=("core_attn",))  # type: ignore[arg-type]
