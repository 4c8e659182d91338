"""Launch configs that run: each carries the plan's model (torchtitan flavour or model args, Megatron/MindSpeed model
arguments), the batch as the plan times it, and is written only for the frameworks/engines that run on the plan's
part; every flag is parsed with the tool's own argument definitions (data/flags, read from its source)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml
from emit_cases import array_args, emit
from test_emit_formats import _keys
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.emit.context import TrainTarget
from gpuplan.emit.flags import arg_problems, flag_list, key_problems, unknown
from gpuplan.emit.serve import command_words
from gpuplan.emit.train_configs import torchtitan_config, torchtitan_files, torchtune_overrides
from gpuplan.emit.train_megatron import megatron_args, mindspeed_args, nemo_overrides
from gpuplan.workload.presets import list_presets, load_model

QWEN3_NVIDIA = ["plan", "train", "-m", "qwen3-32b", "--tokens", "1e11", "--deadline", "30", "--vendor", "nvidia"]
QWEN3_ASCEND = ["plan", "train", "-m", "qwen3-32b", "--tokens", "1e11", "--deadline", "30", "--vendor", "huawei"]
SERVE_CN = ["plan", "infer", "-m", "qwen3-32b", "--qps", "5", "--input-len", "2000", "--output-len", "500",
            "--ttft-p99", "3", "--tpot-p99", "0.1", "--market", "cn"]


def _target(model: str, **layout: Any) -> TrainTarget:
    lay = {"tp": 8, "pp": 1, "dp": 4, "cp": 1, "ep": 1, "vpp": 1, "micro_batch": 1, "zero_stage": 1, **layout}
    devices = lay["tp"] * lay["pp"] * lay["dp"] * lay["cp"]
    return TrainTarget(model_id=model, spec=load_model(model), plan={"layout": lay, "accelerator": "h100-sxm5-80gb",
                       "devices": devices}, method="full", seq_len=4096, global_batch=256, precision="bf16",
                       lora_rank=16, lora_targets=(), tokens=None)


def _chosen(text: str, key: str) -> int:
    m = re.search(rf"Chosen by gpuplan: .*\b{key}=(\d+)", text)
    assert m is not None, text[:800]
    return int(m.group(1))


# -- torchtitan: the flavour of the plan's model and its batch --------------------------------------------------------
def test_torchtitan_toml_of_a_70b_plan_names_the_70b_flavour_and_the_plans_micro_batch(
        train_70b: dict[str, str]) -> None:
    """Llama 3 70B said flavor "8B" and put micro-batch x accumulation sequences in one forward; now the 70B flavour
    (torchtitan v0.2.2 llama3_args["70B"]: 80 layers, dim 8192, FFN 28672) and the plan's micro-batch per forward,
    with torchtitan accumulating to the plan's global batch."""
    text = train_70b["torchtitan.toml"]
    toml = tomllib.loads(text)
    assert (toml["model"]["name"], toml["model"]["flavor"]) == ("llama3", "70B")
    assert key_problems("torchtitan", toml) == []
    micro, dp, gb = (_chosen(text, k) for k in ("micro_batch", "dp", "global_batch"))
    tr, par = toml["training"], toml["parallelism"]
    if par["pipeline_parallel_degree"] == 1:  # one forward carries the plan's micro-batch
        assert tr["local_batch_size"] == micro
    else:  # a pipeline step carries local_batch_size sequences in microbatches of the plan's micro-batch
        assert par["pipeline_parallel_microbatch_size"] == micro and tr["local_batch_size"] % micro == 0
    assert tr["global_batch_size"] == gb and gb % (tr["local_batch_size"] * dp) == 0  # torchtitan train.py asserts it
    assert "WARNING: flavour 70B applies RoPE scaling llama3 x8; Meta-Llama-3-70B has none" in text


def test_torchtitan_pipeline_plan_runs_all_its_microbatches_in_one_pipeline_step() -> None:
    t = _target("llama3.1-70b", tp=8, pp=4, dp=2, micro_batch=2)
    cfg = torchtitan_config(t)
    assert cfg["parallelism"]["pipeline_parallel_microbatch_size"] == 2
    assert cfg["training"]["local_batch_size"] == 2 * t.grad_accum == 256 // 2  # 64 microbatches of 2 per step
    assert cfg["training"]["global_batch_size"] == 256 and (cfg["model"]["name"], cfg["model"]["flavor"]) == (
        "llama3", "70B")
    assert "WARNING" not in torchtitan_files(t)["torchtitan.toml"]  # Llama 3.1 is the flavour's RoPE


@pytest.mark.parametrize(("model", "name", "flavor"), [
    ("llama3-8b", "llama3", "8B"), ("llama3.1-405b", "llama3", "405B"), ("qwen3-32b", "qwen3", "32B"),
    ("qwen3-30b-a3b", "qwen3", "30B-A3B"), ("deepseek-v3", "deepseek_v3", "671B")])
def test_torchtitan_flavour_matches_the_models_shape(model: str, name: str, flavor: str) -> None:
    cfg = torchtitan_config(_target(model))
    assert (cfg["model"]["name"], cfg["model"]["flavor"]) == (name, flavor)


def test_torchtitan_model_without_a_flavour_gets_its_args_never_another_flavour() -> None:
    """Llama 2 7B has no llama3 flavour: a placeholder flavour that stops torchtitan at start and the model args to
    register (FFN 11008 from ffn_dim_multiplier/multiple_of, RoPE base 10000, no Llama 3.1 scaling); Qwen2.5 (q/k/v
    biases) has no torchtitan model at all."""
    toml_text = torchtitan_files(_target("llama2-7b"))["torchtitan.toml"]
    toml = tomllib.loads(toml_text)
    assert (toml["model"]["name"], toml["model"]["flavor"]) == ("llama3", "gpuplan-llama2-7b")
    assert ('"gpuplan-llama2-7b": TransformerModelArgs(dim=4096, n_layers=32, n_heads=32, n_kv_heads=32, '
            "vocab_size=32000, ffn_dim_multiplier=1.0078740157480315, multiple_of=256") in toml_text
    assert "rope_theta=10000, rope_scaling_args=RoPEScalingArgs(scaling_factor=1.0)" in toml_text
    # torchtitan's FeedForward: multiple_of x ceil(int(m x int(2 x 4 x dim / 3)) / multiple_of) == 11008
    hidden = int(2 * 4 * 4096 / 3)
    assert 256 * -(-int(1.0078740157480315 * hidden) // 256) == 11008
    qwen = torchtitan_files(_target("qwen2.5-7b"))["torchtitan.toml"]
    assert "has no model of Qwen2.5-7B's architecture (q/k/v biases)" in qwen
    assert 'flavor = "gpuplan-qwen2.5-7b"' in qwen


def test_qwen3_235b_flavour_rope_base_differs_from_the_released_model() -> None:
    text = torchtitan_files(_target("qwen3-235b-a22b", ep=8))["torchtitan.toml"]
    assert 'flavor = "235B-A22B"' in text
    assert "sets rope_theta=5000000; Qwen3-235B-A22B's config.json has 1000000" in text


# -- Megatron / MindSpeed / NeMo: the model arguments -----------------------------------------------------------------
def test_megatron_script_for_qwen3_carries_rotary_base_and_the_model(tmp_path: Path) -> None:
    """Qwen3-32B (config.json: rope_theta 1e6, rms_norm_eps 1e-6, 64 layers, 5120 wide, FFN 25600, 64 heads, 8 KV
    groups of 128, 40960 positions, vocab 151936): Megatron's defaults would be --rotary-base 10000 and 1e-5."""
    files = emit(QWEN3_NVIDIA, tmp_path, "megatron,nemo")
    args = array_args(files["megatron.sh"])
    assert arg_problems("megatron", args) == []
    a = dict(args)
    assert a["--rotary-base"] == "1000000" and a["--norm-epsilon"] == "1e-06"
    assert (a["--num-layers"], a["--hidden-size"], a["--ffn-hidden-size"], a["--num-attention-heads"]) == (
        "64", "5120", "25600", "64")
    assert (a["--num-query-groups"], a["--kv-channels"], a["--max-position-embeddings"], a["--vocab-size"]) == (
        "8", "128", "40960", "151936")
    assert "--qk-layernorm" in a and "--group-query-attention" in a and a["--position-embedding-type"] == "rope"
    micro, gb = _chosen(files["megatron.sh"], "micro_batch"), _chosen(files["megatron.sh"], "global_batch")
    assert (a["--micro-batch-size"], a["--global-batch-size"]) == (str(micro), str(gb))
    tp = _chosen(files["megatron.sh"], "tp")
    assert 151936 % (int(a["--make-vocab-size-divisible-by"]) * tp) == 0  # no padded rows beyond the checkpoint's
    nemo = yaml.safe_load(files["nemo_overrides.yaml"])
    assert nemo["model"]["rotary_base"] == 1000000 and nemo["model"]["num_query_groups"] == 8
    assert unknown(["nemo"], [f"{sec}.{k}" for sec, body in nemo.items() for k in body]) == []


def test_mindspeed_script_on_an_ascend_plan_parses_with_mindspeed_llms_arguments(tmp_path: Path) -> None:
    files = emit(QWEN3_ASCEND, tmp_path, "all")
    assert "mindspeed.sh" in files and not {"megatron.sh", "torchtitan.toml", "nemo_overrides.yaml"} & set(files)
    args = array_args(files["mindspeed.sh"])
    assert arg_problems("mindspeed", args) == []  # Megatron core 0.12.1 + MindSpeed + MindSpeed-LLM parsers
    a = dict(args)
    assert a["--rotary-base"] == "1000000" and a["--norm-epsilon"] == "1e-06" and "--qk-layernorm" in a
    assert a["--spec"] == "mindspeed_llm.tasks.models.spec.qwen3_spec layer_spec"  # its Qwen3 examples
    assert (a["--padded-vocab-size"], a["--vocab-size"]) == ("151936", "151935")  # core 0.12's NullTokenizer adds eod
    assert a["--transformer-impl"] == "local"
    assert "mindspeed.sh" in files["torchrun.sh"] or "mindspeed" in files["slurm.sbatch"]


@pytest.mark.parametrize("preset", [p.id for p in list_presets()])
def test_every_presets_megatron_and_mindspeed_arguments_parse(preset: str) -> None:
    """Every model the tool knows, on a TP/PP/EP layout with ZeRO-3, parses with each tool's parser."""
    spec = load_model(preset)
    t = _target(preset, tp=4, pp=2, ep=4 if spec.moe else 1, zero_stage=3, recompute="full")
    assert arg_problems("megatron", megatron_args(t)) == []
    assert arg_problems("mindspeed", mindspeed_args(t)) == []
    assert unknown(["nemo"], [f"{s}.{k}" for s, body in nemo_overrides(t).items() for k in body]) == []
    if spec.rope_theta is not None:
        assert dict(megatron_args(t))["--rotary-base"] == str(round(spec.rope_theta))


def test_moe_and_mla_arguments_of_deepseek_v3_and_qwen3_moe() -> None:
    """DeepSeek-V3 (config.json: 3 dense layers, sigmoid router over 8 groups choosing 4, routed scaling 2.5,
    noaux_tc bias, yarn x40 with mscale 1.0) and Qwen3-235B-A22B (128 experts, top-8, expert FFN 1536)."""
    v3 = dict(megatron_args(_target("deepseek-v3", ep=8)))
    assert v3["--moe-layer-freq"] == "([0]*3+[1]*58)" and v3["--moe-router-score-function"] == "sigmoid"
    assert (v3["--moe-router-num-groups"], v3["--moe-router-group-topk"]) == ("8", "4")
    assert v3["--moe-router-topk-scaling-factor"] == "2.5" and "--moe-router-enable-expert-bias" in v3
    assert (v3["--rope-type"], v3["--rotary-scaling-factor"], v3["--mscale"]) == ("yarn", "40", "1")
    assert v3["--moe-shared-expert-intermediate-size"] == "2048" and v3["--kv-lora-rank"] == "512"
    ms_v3 = dict(mindspeed_args(_target("deepseek-v3", ep=8)))
    assert (ms_v3["--rope-scaling-type"], ms_v3["--rope-scaling-original-max-position-embeddings"]) == ("yarn", "4096")
    q = dict(megatron_args(_target("qwen3-235b-a22b", ep=8)))
    assert (q["--num-experts"], q["--moe-router-topk"], q["--moe-ffn-hidden-size"]) == ("128", "8", "1536")
    assert q["--moe-token-dispatcher-type"] == "alltoall" and q["--moe-router-load-balancing-type"] == "aux_loss"
    assert "--norm-topk-prob" in dict(mindspeed_args(_target("qwen3-235b-a22b", ep=8)))


def test_llama31_rope_scaling_in_each_tool() -> None:
    a = dict(megatron_args(_target("llama3.1-70b")))
    assert "--use-rope-scaling" in a and a["--rope-scaling-factor"] == "8" and a["--rotary-base"] == "500000"
    m = dict(mindspeed_args(_target("llama3.1-70b")))
    assert (m["--rope-scaling-type"], m["--low-freq-factor"], m["--high-freq-factor"],
            m["--original-max-position-embeddings"]) == ("llama3", "1", "4", "8192")
    assert "--use-rope-scaling" not in dict(megatron_args(_target("llama3-70b")))  # Llama 3: none


def test_the_parser_check_rejects_what_the_tool_would() -> None:
    """--rotary-base is an int in Megatron (arguments.py type=int): 1e6 or 1000000.0 would stop it at start."""
    assert arg_problems("megatron", [("--rotary-base", "1000000.0")])
    assert arg_problems("megatron", [("--swiglu", "1")]) and arg_problems("megatron", [("--num-layers", None)])
    assert arg_problems("megatron", [("--normalization", "rmsnorm")])  # choices are LayerNorm, RMSNorm
    assert arg_problems("mindspeed", [("--use-megatron-fsdp", None)])  # not in Megatron core 0.12
    assert key_problems("torchtitan", {"training": {"local_batch_size": "4"}})
    for tool in ("megatron", "mindspeed", "torchtitan"):
        fl = flag_list(tool)
        assert fl.repo and fl.commit and fl.as_of and fl.stacks and set(fl.types) == set(fl.flags)


# -- a launch only for what runs on the part --------------------------------------------------------------------------
def test_no_mindie_file_for_an_nvidia_h800_plan(tmp_path: Path) -> None:
    plans = json.loads(CliRunner().invoke(app, [*SERVE_CN, "--json"]).stdout)["plans"]
    h800 = next(i for i, p in enumerate(plans, 1) if p["accelerator"].startswith("h800"))
    res = CliRunner().invoke(app, [*SERVE_CN, "--pick", str(h800), "--emit", "mindie", "--out", str(tmp_path / "m")])
    exited(res, 2)
    out = " ".join(res.output.split())
    assert "emit='mindie'" in out and "h800-sxm5-80gb (cuda): vllm, sglang, trtllm, lmdeploy, k8s, skypilot" in out
    assert "runs on cann" in out and not (tmp_path / "m").exists()
    files = emit([*SERVE_CN, "--pick", str(h800)], tmp_path / "all", "all")
    assert "trtllm.sh" in files and not {"mindie.sh", "mindie_config.json"} & set(files)


def test_ascend_serving_plan_gets_mindie_and_vllm_ascend_not_tensorrt_llm(tmp_path: Path) -> None:
    args = [*SERVE_CN, "--vendor", "huawei", "--engine", "mindie"]
    files = emit(args, tmp_path / "a", "all")
    assert {"mindie.sh", "mindie_config.json", "vllm.sh", "deployment.yaml"} <= set(files)
    assert not {"trtllm.sh", "skypilot.yaml"} & set(files)
    assert unknown(["mindie"], _keys(json.loads(files["mindie_config.json"]))) == []
    assert "vllm-ascend" in files["vllm.sh"]
    assert unknown(["vllm"], [w for w in command_words(files["vllm.sh"]) if w.startswith("--")]) == []
    res = CliRunner().invoke(app, [*args, "--emit", "trtllm", "--out", str(tmp_path / "t")])
    exited(res, 2)
    assert "mindie" in res.output and "TensorRT-LLM" in res.output and not (tmp_path / "t").exists()


def test_training_framework_of_another_stack_exits_2_naming_those_that_run(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*QWEN3_NVIDIA, "--emit", "mindspeed", "--out", str(tmp_path / "a")])
    exited(res, 2)
    assert "megatron" in res.output and "torchtitan" in res.output and not (tmp_path / "a").exists()
    res = CliRunner().invoke(app, [*QWEN3_ASCEND, "--emit", "megatron", "--out", str(tmp_path / "b")])
    exited(res, 2)
    assert "mindspeed" in res.output and not (tmp_path / "b").exists()


def test_torchtune_overrides_build_the_plans_model(tmp_path: Path) -> None:
    """torchtune's recipe builds model._component_: the plan's model's builder (its lora_ builder for LoRA, with
    quantize_base for QLoRA, as torchtune's qlora_* partials do), never the recipe's default model."""
    base = ["estimate", "train", "-m", "qwen3-32b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8",
            "--tp", "1", "--pp", "1"]
    lora = yaml.safe_load(emit([*base, "--method", "lora"], tmp_path / "l", "torchtune")["torchtune.yaml"])
    assert lora["model"]["_component_"] == "torchtune.models.qwen3.lora_qwen3_32b" and lora["model"]["lora_rank"] > 0
    assert unknown(["torchtune"], [f"model.{k}" for k in lora["model"]]) == []
    t = _target("llama3.1-8b", tp=1, dp=8)
    assert torchtune_overrides(t)["model"] == {"_component_": "torchtune.models.llama3_1.llama3_1_8b"}
    q = torchtune_overrides(TrainTarget(**{**t.__dict__, "method": "qlora", "lora_targets": ("q_proj", "v_proj")}))
    assert q["model"]["_component_"] == "torchtune.models.llama3_1.lora_llama3_1_8b" and q["model"]["quantize_base"]
    assert "model" not in torchtune_overrides(_target("yi-34b", tp=1, dp=8))  # no torchtune builder: said in the note


def test_glm_partial_interleaved_rope_reaches_megatron_and_nemo() -> None:
    """GLM-4-9B (config.json partial_rotary_factor 0.5; transformers' GLM rotates adjacent pairs) and ChatGLM3 (remote
    code: rotary_dim = kv_channels // 2, pairs): Megatron's default would rotate every dimension in halves."""
    for model in ("glm4-9b", "chatglm3-6b"):
        t = _target(model, tp=2, dp=4)
        a = dict(megatron_args(t))
        assert a["--rotary-percent"] == "0.5" and "--rotary-interleaved" in a and a["--rotary-base"] == "10000"
        m = nemo_overrides(t)["model"]
        assert (m["rotary_percent"], m["rotary_interleaved"]) == (0.5, True)
