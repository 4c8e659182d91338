"""Framework profiles in the step-time model and the planner: overlaps, gradient reduction, eager attention."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.estimate.calibration import default_calibration
from gpuplan.estimate.flops import forward_flops
from gpuplan.hardware import load_catalog
from gpuplan.search.candidates import LayoutChoices, generate, why_no_layout
from gpuplan.search.cluster import cluster_hardware
from gpuplan.search.train_eval import evaluate_training
from gpuplan.search.train_search import PlanConstraints, choose_layout_family, plan_training
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
LLAMA70 = get_preset("llama3-70b").spec
MIXTRAL = get_preset("mixtral-8x7b").spec


def _eval(job: TrainingJob, *, tp: int = 8, pp: int = 1, ep: int = 1, zero: int = 1, devices: int = 16,
          spec=LLAMA70, accel: str = "h100-sxm5-80gb", calibration=None):  # type: ignore[no-untyped-def]
    hw = cluster_hardware(CAT, accel, "ib-ndr-400" if devices > 8 else None)
    choices = LayoutChoices(devices=[devices], tp=[tp], pp=[pp], cp=[1], ep=[ep], vpp=[1], zero=[zero],
                            micro_batch=[1], recompute=["full"])
    c = generate(spec, choices, seq_len=job.seq_len, global_batch=job.global_batch or 64)
    assert len(c) == 1
    return evaluate_training(spec, job, hw, c, calibration=calibration)


def test_tp_overlap_follows_the_framework_or_the_runs_statement() -> None:
    base = TrainingJob(seq_len=4096, global_batch=64)
    core = _eval(base.model_copy(update={"framework": "nemo"})).breakdown_s["tp_comm"][0]
    legacy = _eval(base.model_copy(update={"framework": "megatron_deepspeed"})).breakdown_s["tp_comm"][0]
    stated_off = _eval(base.model_copy(update={"framework": "nemo", "tp_comm_overlap": False})).breakdown_s
    overlap = default_calibration().value("tp_overlap")
    assert legacy == pytest.approx(core / (1 - overlap))
    assert stated_off["tp_comm"][0] == pytest.approx(legacy)


def test_megatron_reduces_bf16_gradients_in_fp32() -> None:
    """DDP (ZeRO-0) over the network: Megatron's fp32 gradient all-reduce moves twice the bytes of a bf16 one."""
    job = TrainingJob(seq_len=4096, global_batch=64)
    bf16 = _eval(job.model_copy(update={"framework": "nemo"}), tp=8, zero=0, devices=64)
    fp32 = _eval(job.model_copy(update={"framework": "megatron"}), tp=8, zero=0, devices=64)
    assert fp32.breakdown_s["dp_comm"][0] > 1.5 * bf16.breakdown_s["dp_comm"][0] > 0


def test_a_users_override_beats_the_frameworks_term() -> None:
    job = TrainingJob(seq_len=4096, global_batch=256, framework="dualpipe")
    hidden = _eval(job, spec=MIXTRAL, tp=1, ep=8, devices=64).breakdown_s["ep_comm"][0]
    cal = default_calibration().with_overrides({"ep_overlap": 0.0})
    hw = cluster_hardware(CAT, "h100-sxm5-80gb", "ib-ndr-400")
    c = generate(MIXTRAL, LayoutChoices(devices=[64], tp=[1], pp=[1], cp=[1], ep=[8], vpp=[1], zero=[1],
                                        micro_batch=[1], recompute=["full"]), seq_len=4096, global_batch=256)
    exposed = evaluate_training(MIXTRAL, job, hw, c, calibration=cal).breakdown_s["ep_comm"][0]
    assert exposed == pytest.approx(hidden / (1 - 0.95))


def test_eager_attention_costs_the_full_score_matrix() -> None:
    """Without FlashAttention the s x s scores are computed unmasked at the GEMM rate and pass through memory."""
    flash = TrainingJob(seq_len=8192, global_batch=64, framework="megatron")
    eager = flash.model_copy(update={"attention": "eager"})
    f, e = _eval(flash, tp=8, devices=8), _eval(eager, tp=8, devices=8)
    assert e.breakdown_s["compute"][0] > 1.1 * f.breakdown_s["compute"][0]
    assert np.array_equal(e.model_flops_per_token, f.model_flops_per_token)  # MFU counts the same model FLOPs


@pytest.mark.parametrize("fid", ["deepspeed", "torchtune", "llmfoundry"])
def test_a_data_parallel_framework_plans_no_model_parallelism(fid: str) -> None:
    spec = get_preset("llama3-8b").spec
    family, why = choose_layout_family("full_ft", fid, 8e9, default_calibration())
    assert family == fid and fid in why
    job = TrainingJob(seq_len=4096, global_batch=128, framework=fid)
    res = plan_training(spec, job, CAT, PlanConstraints(max_devices=64, layout_family=family, framework=fid,
                                                         accelerators=("h100-sxm5-80gb",)), tokens=1e10)
    assert res.plans
    for p in res.plans:
        lay = p["layout"]
        assert (lay["tp"], lay["pp"], lay["cp"], lay["ep"]) == (1, 1, 1, 1)
        assert p["assumptions"]["framework"]["id"] == fid


def test_plan_train_with_paddle_finds_plans() -> None:
    """Regression: --framework paddle looked up a catalog support field that does not exist ('paddle' instead of
    'paddlepaddle') and rejected every part as policy."""
    r = CliRunner().invoke(app, ["plan", "train", "-m", "llama3.1-8b", "--tokens", "1e11", "--framework", "paddle",
                                 "--json", "--top", "1", "--max-devices", "64"])
    exited(r, 0)
    plan = json.loads(r.stdout)["plans"][0]
    assert plan["assumptions"]["framework"]["id"] == "paddle"


def test_plan_train_rejects_an_unknown_framework_with_the_choices() -> None:
    r = CliRunner().invoke(app, ["plan", "train", "-m", "llama3.1-8b", "--tokens", "1e11", "--framework", "megatrn"])
    exited(r, 2)
    assert "megatron" in r.output


@pytest.mark.parametrize(("args", "field"), [
    (["--framework", "deepspeed", "--tp", "2"], "tp"),  # DeepSpeed ZeRO with HF models has no tensor parallelism
    (["--framework", "megatron_deepspeed", "--zero", "3"], "zero"),  # ZeRO-3 cannot pipeline there
    (["--framework", "deepspeed", "--recompute", "selective"], "recompute"),
])
def test_a_layout_the_framework_cannot_run_is_refused(args: list[str], field: str) -> None:
    """Regression: `estimate train --framework deepspeed --tp 2` timed a TP2 layout under DeepSpeed without a word."""
    from cli_result import one_line_error

    r = CliRunner().invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb",
                                 "--num-accels", "8", *args])
    one_line_error(r, field)


def test_memory_train_refuses_a_layout_the_framework_cannot_run_and_accepts_its_own() -> None:
    from cli_result import one_line_error

    one_line_error(CliRunner().invoke(app, ["memory", "train", "-m", "llama3-8b", "--framework", "deepspeed",
                                            "--tp", "2"]), "tp")
    ok = CliRunner().invoke(app, ["memory", "train", "-m", "llama3-8b", "--framework", "nemo", "--tp", "2", "--json"])
    exited(ok, 0)


def test_dualpipe_runs_its_expert_gemms_at_the_dense_rate() -> None:
    """DeepSeek's stack (DeepGEMM) runs DeepSeek-V3's grouped expert GEMMs at the dense FP8 rate: a plan named
    after it must not take Megatron-Core's grouped-GEMM and narrow-expert penalties (regression: the published
    DeepSeek-V3 pretraining on 2048 H800s ran 2.3x faster than planned)."""
    spec = get_preset("deepseek-v3").spec
    job = TrainingJob(seq_len=4096, global_batch=256, precision="fp8")

    # the GEMMs and attention alone: the two stacks keep different tensors for backward (Megatron-Core weights the
    # experts' outputs inside their activation and does not keep them), so their memory-bound passes differ too
    gemms_only = default_calibration().with_overrides({"elementwise_passes": 0.0})

    def compute(framework: str | None) -> float:
        ev = _eval(job.model_copy(update={"framework": framework}), tp=1, pp=16, ep=8, devices=128, spec=spec,
                   accel="h800-sxm5-80gb", calibration=gemms_only)
        return float(ev.breakdown_s["compute"][0])

    flops = forward_flops(spec, 4096).by_part()
    expert_share = flops["experts_routed"] / forward_flops(spec, 4096).total
    cal = default_calibration()
    fe = spec.moe.expert_ffn_size  # type: ignore[union-attr]
    penalty = cal.value("moe_gemm_efficiency") * fe / (fe + cal.value("moe_expert_half_width"))
    megatron, dualpipe = compute("megatron"), compute("dualpipe")
    assert dualpipe < megatron
    # only the routed experts speed up: by 1/penalty, no more
    assert megatron / dualpipe < 1 / penalty
    assert megatron / dualpipe > 1 + expert_share


def test_a_user_override_of_the_expert_gemm_rate_beats_the_frameworks() -> None:
    spec = get_preset("deepseek-v3").spec
    job = TrainingJob(seq_len=4096, global_batch=256, precision="fp8", framework="dualpipe")
    cal = default_calibration().with_overrides({"moe_gemm_efficiency": 0.44})
    hw = cluster_hardware(CAT, "h800-sxm5-80gb", "ib-ndr-400")
    choices = LayoutChoices(devices=[128], tp=[1], pp=[16], cp=[1], ep=[8], vpp=[1], zero=[1], micro_batch=[1],
                            recompute=["none"])
    c = generate(spec, choices, seq_len=4096, global_batch=256)
    slow = evaluate_training(spec, job, hw, c, calibration=cal).breakdown_s["compute"][0]
    fast = evaluate_training(spec, job, hw, c).breakdown_s["compute"][0]
    assert slow > fast


def test_without_sequence_parallelism_every_tp_rank_runs_the_norms_whole() -> None:
    """A run without --sequence-parallel (Megatron-DeepSpeed before its rebase) keeps the norm, dropout and
    residual activations whole on each TP rank: more memory traffic and more memory than with it (regression:
    the row's stated seq_parallel=false was dropped and the run planned as sequence-parallel)."""
    sp = TrainingJob(seq_len=4096, global_batch=64, framework="megatron")
    no_sp = sp.model_copy(update={"sequence_parallel": False})
    a, b = _eval(sp, tp=8, devices=8), _eval(no_sp, tp=8, devices=8)
    assert b.breakdown_s["compute"][0] > a.breakdown_s["compute"][0]
    assert b.memory_bytes[0] > a.memory_bytes[0]
    assert np.array_equal(a.breakdown_s["tp_comm"], b.breakdown_s["tp_comm"])  # all-reduce = RS + AG volume


def test_no_fit_under_a_framework_says_what_its_layouts_lack() -> None:
    """DeepSeek-V3 at 16k tokens a sequence with DualPipe's layouts (PP and EP, ZeRO-1, no full recomputation) fits
    no part sold in China in gpuplan's memory model: the error says what the profile offers and that the open search
    has more, instead of only "try recomputation", which the profile does not offer. (At 4k tokens it fits 1024 H20s
    since DualPipe recomputes the norms, MLA up projections and SwiGLU outputs, as the DeepSeek-V3 report says.)"""
    res = CliRunner().invoke(app, ["plan", "train", "-m", "deepseek-v3", "--tokens", "1e12", "--framework",
                                   "dualpipe", "--precision", "fp8", "--market", "cn", "--max-devices", "2048",
                                   "--seq-len", "16384"])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "offers recompute none, selective" in text and "without --framework" in text


def test_internevo_pays_one_broadcast_per_zero_shard_owner() -> None:
    """InternEvo's HybridZeroOptimizer returns the updated 16-bit parameters as one broadcast per rank of the ZeRO-1
    group: over all 1024 ranks (zero1=-1) that chain costs seconds per step, within 8 ranks of a node (zero1=8)
    nothing. Megatron-Core's all-gather per bucket does not pay it. Regression: the InternEvo 7B row on 1024 A100s
    with zero1=-1 was predicted 55% too fast (published 2271 tokens/s per GPU)."""
    from gpuplan.workload.presets import get_preset

    spec = get_preset("llama2-7b").spec
    job = TrainingJob(seq_len=2048, global_batch=8192, framework="internevo")

    def dp_comm(j: TrainingJob, devices: int) -> float:
        hw = cluster_hardware(CAT, "a100-sxm4-80gb", "roce-100", nics_per_node=4)
        c = generate(spec, LayoutChoices(devices=[devices], tp=[1], pp=[1], cp=[1], ep=[1], vpp=[1], zero=[1],
                                         micro_batch=[2], recompute=["none"]), seq_len=2048, global_batch=8192)
        return float(evaluate_training(spec, j, hw, c).breakdown_s["dp_comm"][0])

    whole, in_node = dp_comm(job.model_copy(update={"zero_group": 1024}), 1024), dp_comm(job, 1024)
    megatron = dp_comm(job.model_copy(update={"framework": "megatron"}), 1024)
    assert job.zero_shard_group() == 8  # InternEvo's shipped configs shard within 8 ranks unless told otherwise
    assert in_node == pytest.approx(dp_comm(job.model_copy(update={"zero_group": 8}), 1024))
    assert whole - in_node > 1.0  # 1024 chains of 1023 steps, 127 of them over the network
    assert in_node < megatron + 0.5 and whole > megatron + 1.0
    assert dp_comm(job.model_copy(update={"zero_group": 64}), 64) - dp_comm(job, 64) < 0.05  # 64 ranks: ms


def test_internevo_returns_its_parameters_after_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """InternEvo's shipped configs run hybrid_zero_optimizer overlap_sync_param=False (configs/7B_sft.py at c628a8c):
    the parameter broadcast follows the step. On one node its volume (7/8 of the 16-bit model per rank) was hidden
    under the last backward with the gradient reduction; it is now exposed whole, and a profile that overlapped it
    would hide it again."""
    import gpuplan.search.train_eval as te
    from gpuplan.workload.frameworks import framework as framework_profile
    from gpuplan.workload.presets import get_preset

    prof = framework_profile("internevo")
    assert prof.zero_param_overlap is False and "overlap_sync_param=False" in prof.zero_param_overlap_source
    spec = get_preset("llama2-7b").spec
    job = TrainingJob(seq_len=2048, global_batch=64, micro_batch=2, framework="internevo")
    hw = cluster_hardware(CAT, "a100-sxm4-80gb", None)
    c = generate(spec, LayoutChoices(devices=[8], tp=[1], pp=[1], cp=[1], ep=[1], vpp=[1], zero=[1],
                                     micro_batch=[2], recompute=["none"]), seq_len=2048, global_batch=64)
    exposed = float(evaluate_training(spec, job, hw, c).breakdown_s["dp_comm"][0])
    monkeypatch.setattr(te, "framework_profile",
                        lambda fid: framework_profile(fid).model_copy(update={"zero_param_overlap": True}))
    hidden = float(evaluate_training(spec, job, hw, c).breakdown_s["dp_comm"][0])
    # 6.7e9 bf16 parameters, 7/8 of them to every rank over NVLink: tens of milliseconds
    assert hidden < 0.005 < 0.02 < exposed - hidden < 0.2


def test_a_zero_group_shards_the_optimizer_over_its_ranks_only() -> None:
    from gpuplan.estimate.memory_train import estimate_training_memory
    from gpuplan.workload.jobs import Layout
    from gpuplan.workload.presets import get_preset

    spec = get_preset("llama2-7b").spec
    job = TrainingJob(seq_len=2048, global_batch=512)
    layout = Layout(dp=64, zero_stage=1)
    whole = estimate_training_memory(spec, job, layout).optimizer_bytes
    grouped = estimate_training_memory(spec, job.model_copy(update={"zero_group": 8}), layout).optimizer_bytes
    assert grouped == pytest.approx(8 * whole, rel=0.01)  # 1/8 of the states per rank instead of 1/64


def test_internevo_tp_replicates_norms_and_residuals_unless_told_otherwise() -> None:
    """InternEvo's default tensor mode (mtp) is Megatron TP without sequence parallelism (launch.py sets
    parallel.sequence_parallel False): each TP rank keeps and computes the norm, dropout and residual tensors
    whole. Regression: InternEvo TP=2 plans and its published tp=2 rows were costed with them split."""
    from gpuplan.search.train_eval import _elementwise_s

    spec = get_preset("llama2-7b").spec
    job = TrainingJob(seq_len=2048, global_batch=512, micro_batch=4, framework="internevo")
    assert job.sequence_parallel_on() is False
    assert job.model_copy(update={"sequence_parallel": True}).sequence_parallel_on() is True
    assert TrainingJob(seq_len=2048).sequence_parallel_on() is True  # no framework: Megatron-Core's default
    hw = cluster_hardware(CAT, "a100-sxm4-80gb", None)
    c = generate(spec, LayoutChoices(devices=[8], tp=[2], pp=[1], cp=[1], ep=[1], vpp=[1], zero=[1],
                                     micro_batch=[4], recompute=["none"]), seq_len=2048, global_batch=512)
    cal = default_calibration()
    replicated = float(_elementwise_s(spec, job, hw, c, cal, 1.0)[0])
    split = float(_elementwise_s(spec, job.model_copy(update={"sequence_parallel": True}), hw, c, cal, 1.0)[0])
    assert replicated > 1.2 * split
    mem_off = evaluate_training(spec, job, hw, c).memory_bytes[0]
    mem_on = evaluate_training(spec, job.model_copy(update={"sequence_parallel": True}), hw, c).memory_bytes[0]
    assert mem_off > mem_on


def test_memory_train_takes_the_frameworks_sequence_parallel_default() -> None:
    runner = CliRunner()
    args = ["memory", "train", "--model", "llama2-7b", "--tp", "2", "--seq-len", "2048", "--micro-batch", "4",
            "--json"]
    internevo = json.loads(runner.invoke(app, [*args, "--framework", "internevo"]).output)
    stated = json.loads(runner.invoke(app, [*args, "--framework", "internevo", "--seq-parallel"]).output)
    megatron = json.loads(runner.invoke(app, [*args, "--framework", "megatron"]).output)
    assert internevo["activations_bytes"] > stated["activations_bytes"] == megatron["activations_bytes"]


def test_the_estimate_says_what_the_framework_decided_for_the_layout() -> None:
    """A buyer checking an InternEvo estimate sees the choices behind its step time: TP without sequence
    parallelism and without TP overlap, the optimizer sharded over 8 ranks (zero1=8), in words and in the JSON."""
    runner = CliRunner()
    args = ["estimate", "train", "-m", "llama2-7b", "--accelerator", "a100-sxm4-80gb", "--num-accels", "16",
            "--tp", "2", "--zero", "1", "--seq-len", "2048", "--framework", "internevo"]
    res = runner.invoke(app, [*args, "--lang", "en"], env={"COLUMNS": "200"})
    exited(res, 0)
    assert "InternEvo: sequence parallel off, TP overlap off, ZeRO shards over 8 ranks" in res.output
    stated = runner.invoke(app, [*args, "--seq-parallel", "--lang", "en"], env={"COLUMNS": "200"})
    assert "sequence parallel on" in stated.output
    doc = json.loads(runner.invoke(app, [*args, "--json"]).output)
    fw = doc["assumptions"]["framework"]
    assert fw["sequence_parallel"] is False and fw["zero_group"] == 8 and doc["layout"]["seq_parallel"] is False
    zh = runner.invoke(app, [*args, "--lang", "zh"], env={"COLUMNS": "200"})
    assert "序列并行关" in zh.output


def test_a_zero_group_keeps_zero3_collectives_and_the_optimizer_shard_inside_it() -> None:
    """Memory shards ZeRO-3 weights and the optimizer over the ZeRO group (InternEvo zero1=N with fsdp, hybrid
    sharding); the step time now does the same: per-layer all-gathers within the group (one node here) plus one
    cross-group gradient all-reduce per step, and each rank updates 1/z of the parameters, not 1/dp. Before,
    the collectives ran over all 64 ranks and the optimizer step was that of a 64-way shard."""
    spec = get_preset("llama2-7b").spec
    job = TrainingJob(seq_len=2048, global_batch=512, micro_batch=1)
    hw = cluster_hardware(CAT, "a100-sxm4-80gb", "ib-hdr-200")
    c = generate(spec, LayoutChoices(devices=[64], tp=[1], pp=[1], cp=[1], ep=[1], vpp=[1], zero=[3],
                                     micro_batch=[1], recompute=["none"]), seq_len=2048, global_batch=512)
    cal = default_calibration().with_overrides({"zero3_overlap": 0.0})  # the collectives' own time, none hidden
    whole = evaluate_training(spec, job, hw, c, calibration=cal).breakdown_s
    grouped = evaluate_training(spec, job.model_copy(update={"zero_group": 8}), hw, c, calibration=cal).breakdown_s
    assert grouped["dp_comm"][0] < whole["dp_comm"][0]
    assert grouped["other"][0] == pytest.approx(8 * whole["other"][0], rel=1e-6)


def test_fsdp2_with_pipeline_stages_is_a_torchtitan_layout_and_the_refusal_names_its_rule() -> None:
    # torchtitan composes FSDP2 (data_parallel_shard_degree) with TP and PP (torchtitan docs, composability; its
    # Llama 3.1 405B config sets shard, tensor and pipeline degrees together). Before: the candidate mask refused
    # ZeRO-3 with pp > 1 for every framework, and the CLI said the degrees' product was not 512 (8 x 8 divides 512).
    args = ["estimate", "train", "-m", "llama3.1-405b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "512",
            "--tp", "8", "--pp", "8", "--zero", "3", "--seq-len", "8192", "--json"]
    res = CliRunner().invoke(app, [*args, "--framework", "torchtitan"])
    exited(res, 0)
    lay = json.loads(res.output)["layout"]
    assert (lay["tp"], lay["pp"], lay["dp"], lay["zero_stage"]) == (8, 8, 8, 3)
    res = CliRunner().invoke(app, [*args, "--framework", "megatron"])
    exited(res, 2)
    assert "ZeRO-2/3 (FSDP) only without pipeline stages" in res.output and "product" not in res.output


def test_why_no_layout_names_the_first_rule_no_layout_meets() -> None:
    choices = LayoutChoices(devices=[12], tp=[8], pp=[1], cp=[1], ep=[1], vpp=[1], zero=[1], micro_batch=[1],
                            recompute=["full"])
    assert why_no_layout(LLAMA70, choices, seq_len=4096, global_batch=64) == "tp x pp x cp divides the device count"
    heads = LayoutChoices(devices=[48], tp=[3], pp=[1], cp=[1], ep=[1], vpp=[1], zero=[1], micro_batch=[1],
                          recompute=["full"], max_tp=8)
    assert why_no_layout(LLAMA70, heads, seq_len=4096, global_batch=64) == "tp divides the 64 attention heads"


def test_tensor_parallelism_never_splits_a_key_value_head() -> None:
    # Qwen3-235B-A22B has 4 KV heads: Megatron-Core rejects num_query_groups 4 with TP8 and torchtitan shards
    # wk/wv by head. Before: TP8 passed the mask (only the 64 query heads were checked) and the CPU bench, handed a
    # TP2 plan for its 1-KV-head model, failed with "tp=2 does not divide the heads".
    qwen = get_preset("qwen3-235b-a22b").spec
    assert qwen.kv_heads == 4
    tp8 = LayoutChoices(devices=[64], tp=[8], pp=[1], cp=[1], ep=[8], vpp=[1], zero=[1], micro_batch=[1],
                        recompute=["full"], max_tp=8)
    assert why_no_layout(qwen, tp8, seq_len=4096, global_batch=64) == "tp divides the 4 key-value heads"
    tp4 = LayoutChoices(devices=[64], tp=[4], pp=[1], cp=[1], ep=[8], vpp=[1], zero=[1], micro_batch=[1],
                        recompute=["full"], max_tp=8)
    assert why_no_layout(qwen, tp4, seq_len=4096, global_batch=64) == "none (a layout exists)"


def test_a_deadline_miss_capped_by_the_default_batch_names_the_batch_not_more_devices() -> None:
    """Regression (found planning DeepSeek-V3 with DualPipe in China): no plan met 365 days and the answer was "the
    fastest plan takes 1088 days on 1024 H20s ... raise --max-devices", though --max-devices was already 8192. What
    capped the cluster was the ~4M-token default batch: on 2048 H20s the layouts that fit need pipeline stages of at
    least pp micro-batches each. The answer now names the batch that plans them (2048 sequences: pp x dp)."""
    res = CliRunner().invoke(app, ["plan", "train", "-m", "deepseek-v3", "--tokens", "14.8e12", "--framework",
                                   "dualpipe", "--precision", "fp8", "--market", "cn", "--max-devices", "8192",
                                   "--deadline", "365"])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "1024 x h20-96gb" in text and "--global-batch 2048 or more" in text and "changes nothing" in text
    bigger = CliRunner().invoke(app, ["plan", "train", "-m", "deepseek-v3", "--tokens", "14.8e12", "--framework",
                                      "dualpipe", "--precision", "fp8", "--market", "cn", "--max-devices", "8192",
                                      "--deadline", "2000", "--global-batch", "2048", "--json"])
    assert bigger.exit_code == 0, bigger.output
    assert max(p["devices"] for p in json.loads(bigger.stdout)["plans"]) >= 2048
