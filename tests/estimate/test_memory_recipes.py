"""Recipe-dependent memory terms: optimizer-step temporaries, DeepSpeed ZeRO, GPTQ bases, 16-bit loss,
FP8 scope and torch.cat KV growth. Hand-computed values; the foreach temporaries counted on real torch."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.estimate.activations import activation_breakdown
from gpuplan.estimate.calibration import default_calibration
from gpuplan.estimate.kv_cache import kv_cache
from gpuplan.estimate.memory_infer import estimate_inference_memory
from gpuplan.estimate.memory_train import (
    GPTQ_BYTES_PER_PARAM,
    NF4_BYTES_PER_PARAM,
    estimate_training_memory,
    trainable_params,
)
from gpuplan.estimate.optimizers import get_optimizer
from gpuplan.search.candidates import LayoutChoices, generate
from gpuplan.search.memory_vec import candidate_memory_bytes
from gpuplan.units import GIB
from gpuplan.workload.jobs import InferenceJob, Layout, TrainingJob
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

LLAMA = get_preset("llama3-8b").spec
N = count_params(LLAMA).total


def _backward_working_set(m: object) -> float:
    """Activations plus the transients the step outlives (everything in `other` but the step itself
    and the fixed overheads)."""
    d = m.details  # type: ignore[attr-defined]
    fixed = {"optimizer_step_excess", "runtime_context", "collective_buffers", "deepspeed_buckets",
             "allocator_fragmentation"}
    return float(sum(d["activations"].values()) + sum(v for k, v in d["other"].items() if k not in fixed))


# --- torch foreach AdamW: one state-dtype temporary per parameter (counted on the CPU) -------------------

def _step_temp_bytes(params: list[object], **kw: object) -> int:
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Count(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if not func.overloadpacket.__name__.endswith("_"):  # out-of-place: a new tensor
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor) and t.dim() > 0:
                        Count.total += t.numel() * t.element_size()
            return out

    opt_cls = kw.pop("cls")
    opt = opt_cls(params, **kw)  # type: ignore[operator]
    for p in params:
        p.grad = torch.randn_like(p)  # type: ignore[attr-defined]
    opt.step()  # the first step creates the states (persistent, not temporaries)
    with Count():
        opt.step()
    return Count.total


@pytest.mark.parametrize(("name", "dtype_bytes", "kw"), [
    ("adamw_foreach", 4, {"foreach": True}),
    ("adamw", 4, {"fused": True}),
    ("adamw_bf16", 2, {"foreach": True}),
    ("sgd", 4, {"foreach": True, "momentum": 0.9}),
])
def test_optimizer_step_temporaries_match_torch(name: str, dtype_bytes: int, kw: dict[str, object]) -> None:
    torch = pytest.importorskip("torch")
    dtype = torch.float32 if dtype_bytes == 4 else torch.bfloat16
    params = [torch.nn.Parameter(torch.randn(300, 70, dtype=dtype)), torch.nn.Parameter(torch.randn(130, dtype=dtype))]
    n = sum(p.numel() for p in params)
    cls = torch.optim.SGD if name == "sgd" else torch.optim.AdamW
    kwargs = dict(kw)
    if name == "sgd":
        kwargs["lr"] = 0.1
    measured = _step_temp_bytes(params, cls=cls, **kwargs)  # type: ignore[arg-type]
    assert measured == get_optimizer(name).step_temp_bytes_per_param * n


# --- the step runs after the backward pass: its temporaries count only beyond what backward held ----------

def test_foreach_step_excess_is_beyond_the_backward_working_set() -> None:
    # full fine-tune, full recompute, 128 tokens: the 4 B/param sqrt(v) list dwarfs the activations
    job = TrainingJob(seq_len=128, recompute="full", kernels="hf", optimizer="adamw_foreach")
    m = estimate_training_memory(LLAMA, job)
    assert m.details["other"]["optimizer_step_excess"] == pytest.approx(4.0 * N - _backward_working_set(m))
    fused = estimate_training_memory(LLAMA, job.model_copy(update={"optimizer": "adamw"}))
    assert "optimizer_step_excess" not in fused.details["other"]
    assert m.total_bytes - fused.total_bytes == pytest.approx(4.0 * N - _backward_working_set(m))


def test_step_excess_vanishes_under_long_sequences() -> None:
    # LoRA on 8B: 4 B per adapter parameter is far below the 32k-token activations
    job = TrainingJob(method="lora", seq_len=32768, recompute="none", kernels="hf", optimizer="adamw_foreach")
    assert "optimizer_step_excess" not in estimate_training_memory(LLAMA, job).details["other"]


def test_zero1_shards_the_foreach_temporaries() -> None:
    job = TrainingJob(seq_len=128, recompute="full", kernels="hf", optimizer="adamw_foreach")
    m = estimate_training_memory(LLAMA, job, Layout(dp=8, zero_stage=1))
    assert m.details["other"]["optimizer_step_excess"] == pytest.approx(4.0 * N / 8 - _backward_working_set(m))


# --- DeepSpeed ZeRO ----------------------------------------------------------------------------------------

def test_deepspeed_zero2_step_flattens_and_upcasts_the_gradient_partition() -> None:
    # stage_1_and_2.py step(): flatten (16-bit copy, 2 B) then .to(fp32) (4 B) of the local partition
    job = TrainingJob(seq_len=128, recompute="full", kernels="hf", zero_impl="deepspeed")
    m = estimate_training_memory(LLAMA, job, Layout(dp=4, zero_stage=2))
    assert m.details["other"]["optimizer_step_excess"] == pytest.approx(6.0 * N / 4 - _backward_working_set(m))
    assert m.details["other"]["deepspeed_buckets"] == pytest.approx(3.35 * GIB)
    assert "deepspeed_buckets_gib" in m.assumptions["calibration"]
    # the model states themselves are the ZeRO paper's
    assert m.optimizer_bytes == pytest.approx(12 * N / 4)
    assert m.gradients_bytes == pytest.approx(2 * N / 4)


def test_deepspeed_fp32_training_only_flattens() -> None:
    job = TrainingJob(seq_len=128, recompute="full", kernels="hf", zero_impl="deepspeed", precision="fp32")
    m = estimate_training_memory(LLAMA, job, Layout(dp=4, zero_stage=2))
    assert m.details["other"]["optimizer_step_excess"] == pytest.approx(4.0 * N / 4 - _backward_working_set(m))


def test_deepspeed_zero3_step_per_partition_and_no_stage2_buckets() -> None:
    job = TrainingJob(seq_len=128, recompute="full", kernels="hf", zero_impl="deepspeed")
    m = estimate_training_memory(LLAMA, job, Layout(dp=4, zero_stage=3))
    assert m.details["other"]["optimizer_step_excess"] == pytest.approx(6.0 * N / 4 - _backward_working_set(m))
    assert "deepspeed_buckets" not in m.details["other"]


def test_deepspeed_bucket_term_is_the_documented_footprint() -> None:
    # HF DeepSpeed docs: 2e8 x 2 bytes x 2 x 4.5 = 3.6e9 bytes
    assert default_calibration().value("deepspeed_buckets_gib") == pytest.approx(3.6e9 / GIB, abs=0.01)


# --- QLoRA bases ---------------------------------------------------------------------------------------------

def test_gptq_base_bytes_and_dequantized_weights() -> None:
    assert pytest.approx(0.5 + 2.5 / 128) == GPTQ_BYTES_PER_PARAM  # qweight + fp16 scale + 4-bit zero per 128
    c = count_params(LLAMA)
    layer_matrix = c.dense_layer.attention_matrix + c.dense_layer.mlp_matrix
    matrix = LLAMA.num_layers * layer_matrix
    job = TrainingJob(method="qlora", seq_len=2048, recompute="full", quant_format="gptq")
    m = estimate_training_memory(LLAMA, job)
    assert m.details["weights"]["frozen_base"] == pytest.approx(
        matrix * GPTQ_BYTES_PER_PARAM + (c.total - matrix) * 2)
    # full recomputation: one layer's fp16 dequantized weights are kept for its backward
    assert m.details["other"]["gptq_dequantized_weights"] == pytest.approx(2.0 * layer_matrix)
    # without recomputation every layer's matmul keeps its fp16 weight: a whole 16-bit copy
    no_rc = estimate_training_memory(LLAMA, job.model_copy(update={"recompute": "none"}))
    assert no_rc.details["other"]["gptq_dequantized_weights"] == pytest.approx(2.0 * matrix)
    nf4 = estimate_training_memory(LLAMA, job.model_copy(update={"quant_format": "nf4"}))
    assert "gptq_dequantized_weights" not in nf4.details["other"]
    assert nf4.details["weights"]["frozen_base"] == pytest.approx(
        matrix * NF4_BYTES_PER_PARAM + (c.total - matrix) * 2)


# --- cross-entropy of 16-bit logits ----------------------------------------------------------------------

def test_loss_without_upcast_keeps_16bit_log_probs() -> None:
    job = TrainingJob(method="lora", seq_len=4096, recompute="full", kernels="hf")
    t, v = 4096, LLAMA.vocab_size
    acts = activation_breakdown(LLAMA, job, Layout())
    assert acts.logits_transient_bytes == pytest.approx((2 + 4) * t * v)
    assert acts.last_stage_extra["log_probs"] == pytest.approx(4 * t * v)
    acts16 = activation_breakdown(LLAMA, job.model_copy(update={"loss_upcast": False}), Layout())
    assert acts16.logits_transient_bytes == pytest.approx((2 + 2) * t * v)
    assert acts16.last_stage_extra["log_probs"] == pytest.approx(2 * t * v)
    up = estimate_training_memory(LLAMA, job)
    down = estimate_training_memory(LLAMA, job.model_copy(update={"loss_upcast": False}))
    # log-probs 4 -> 2 bytes, the fp32 upcast -> a 16-bit shifted copy: 2 + 2 bytes per token x vocab
    assert up.details["activations"]["loss_side"] - down.details["activations"]["loss_side"] == pytest.approx(2 * t * v)
    assert up.details["other"]["logits_transient"] - down.details["other"]["logits_transient"] == pytest.approx(
        2 * t * v)
    fp32 = job.model_copy(update={"precision": "fp32"})
    assert estimate_training_memory(LLAMA, fp32.model_copy(update={"loss_upcast": False})).total_bytes == \
        pytest.approx(estimate_training_memory(LLAMA, fp32).total_bytes)


# --- the planner's vectorized memory stays exactly the estimator's ------------------------------------------

@pytest.mark.parametrize("update", [
    {"method": "qlora", "quant_format": "gptq", "zero_impl": "deepspeed", "loss_upcast": False},
    {"method": "full", "zero_impl": "deepspeed"},
    {"method": "lora", "optimizer": "adamw_foreach", "lora_rank": 64},
    {"method": "full", "optimizer": "adamw_foreach"},
    {"method": "full", "zero_group": 4},
])
def test_vector_memory_matches_scalar_with_recipe_fields(update: dict[str, object]) -> None:
    spec = get_preset("qwen2.5-7b").spec
    job = TrainingJob.model_validate({"seq_len": 1024, "global_batch": 64, **update})
    c = generate(spec, LayoutChoices(devices=[8, 32]), seq_len=1024, global_batch=64)
    vec = candidate_memory_bytes(spec, job, c)
    for i in np.random.default_rng(1).choice(len(c), size=20, replace=False):
        r = c.row(int(i))
        lay = Layout(tp=r["tp"], pp=r["pp"], dp=r["dp"], cp=r["cp"], ep=r["ep"], vpp=r["vpp"],
                     zero_stage=r["zero"])  # type: ignore[arg-type]
        one = estimate_training_memory(
            spec, job.model_copy(update={"micro_batch": r["micro_batch"], "recompute": r["recompute"]}), lay)
        assert vec[i] == pytest.approx(one.total_bytes, rel=1e-9), r


def test_lora_rank_scales_the_adapter_states() -> None:
    j16 = TrainingJob(method="lora", seq_len=256, lora_rank=16)
    j64 = j16.model_copy(update={"lora_rank": 64})
    c = count_params(LLAMA)
    assert trainable_params(LLAMA, c, j64) == 4 * trainable_params(LLAMA, c, j16)


# --- inference ---------------------------------------------------------------------------------------------

def test_fp8_mlp_scope_keeps_attention_16bit() -> None:
    c = count_params(LLAMA)
    attn = LLAMA.num_layers * c.dense_layer.attention_matrix
    mlp = LLAMA.num_layers * c.dense_layer.mlp_matrix
    rest = c.total - attn - mlp
    job = InferenceJob(weights="fp8", quant_scope="mlp", context=1024)
    m = estimate_inference_memory(LLAMA, job)
    assert m.weights_bytes == pytest.approx(mlp * (1 + 4 / LLAMA.hidden_size) + (attn + rest) * 2)


def test_concat_kv_growth_adds_the_generated_share_of_the_cache() -> None:
    kv = kv_cache(LLAMA, context=8192, batch=1, kv_dtype="bf16", tp=1, layers=LLAMA.num_layers).bytes_total
    pool = estimate_inference_memory(LLAMA, InferenceJob(context=8192))
    grown = estimate_inference_memory(LLAMA, InferenceJob(context=8192, kv_layout="concat", generated=8191))
    assert grown.other_bytes - pool.other_bytes == pytest.approx(kv * 8191 / 8192)
    prompt = estimate_inference_memory(LLAMA, InferenceJob(context=8192, kv_layout="concat", generated=0))
    assert prompt.total_bytes == pytest.approx(pool.total_bytes)


def test_prompt_logits_for_every_prompt_token() -> None:
    last = estimate_inference_memory(LLAMA, InferenceJob(context=2048))
    every = estimate_inference_memory(LLAMA, InferenceJob(context=2048, prompt_logits="all"))
    assert every.details["activations"]["prompt_logits"] == pytest.approx(2 * 2048 * LLAMA.vocab_size)
    assert every.total_bytes - last.total_bytes == pytest.approx(2 * 2048 * LLAMA.vocab_size)
    # a decode-only request (one prompt token) holds one token's logits
    gen = estimate_inference_memory(LLAMA, InferenceJob(context=2048, generated=2048, prompt_logits="all"))
    assert gen.details["activations"]["prompt_logits"] == pytest.approx(2 * LLAMA.vocab_size)


# --- the saved tensors behind the GPTQ and 16-bit-loss terms, seen by autograd on the CPU -------------------

def _saved_bytes(fn: object) -> int:
    torch = pytest.importorskip("torch")
    seen: dict[int, int] = {}

    def pack(t: object) -> object:
        assert isinstance(t, torch.Tensor)
        if not isinstance(t, torch.nn.Parameter):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()  # type: ignore[operator]
    return sum(seen.values())


def test_matmul_with_a_dequantized_weight_keeps_the_16bit_weight() -> None:
    torch = pytest.importorskip("torch")
    # auto-gptq (qlinear_cuda_old, >= 128 tokens): weight = scales * (w_int - zeros); torch.matmul(x.half(), weight)
    x = torch.randn(256, 512, dtype=torch.bfloat16, requires_grad=True)
    w_int = torch.randint(0, 16, (512, 384), dtype=torch.int8)
    scales = torch.rand(1, 384, dtype=torch.bfloat16)
    saved = _saved_bytes(lambda: torch.matmul(x, scales * (w_int - 8)))
    assert saved == 512 * 384 * 2  # the dequantized 16-bit weight (x is the leaf input: not an activation)


def test_cross_entropy_of_16bit_logits_saves_16bit_log_probs() -> None:
    torch = pytest.importorskip("torch")
    t, v = 64, 1000
    logits = torch.randn(t, v, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, v, (t,))
    down = _saved_bytes(lambda: torch.nn.functional.cross_entropy(logits, labels))
    up = _saved_bytes(lambda: torch.nn.functional.cross_entropy(logits.float(), labels))
    assert down == pytest.approx(2 * t * v, rel=0.01)  # bf16 log-softmax output (+ the int64 labels)
    assert up == pytest.approx(4 * t * v, rel=0.01)  # fp32 log-softmax output
