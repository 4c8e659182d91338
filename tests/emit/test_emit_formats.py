"""Every emitted file parses with its format's rules, and names only flags of the targeted tool version."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from typing import Any

import pytest
import tomllib
import yaml
from emit_cases import README_INFER, README_TRAIN, array_args, emit
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.emit.deploy import _sky_accelerator
from gpuplan.emit.flags import arg_problems, flag_list, key_problems, schema, unknown
from gpuplan.emit.serve import command_words

TRAIN_FILES = {"megatron.sh", "torchtitan.toml", "torchtitan.sh", "nemo_overrides.yaml", "ddp.sh",
               "model.json", "torchrun.sh", "slurm.sbatch", "pytorchjob.yaml"}
SERVE_FILES = {"vllm.sh", "sglang.sh", "trtllm.sh", "trtllm_config.yaml", "lmdeploy.sh", "deployment.yaml",
               "skypilot.yaml"}


def _array_flags(text: str) -> list[str]:
    body = text[text.index("GPUPLAN_ARGS=(") + len("GPUPLAN_ARGS=("):text.index("\n)\n")]
    return [w for w in shlex.split(body, posix=True) if w.startswith("--")]


def _keys(doc: Any, prefix: str = "", lists: bool = True) -> list[str]:
    out: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            path = f"{prefix}{k}"
            sub = _keys(v, path + ".", lists)
            out += sub if (sub and isinstance(v, dict | list)) else [path]
    elif isinstance(doc, list) and lists:
        for item in doc:
            if isinstance(item, dict):
                out += _keys(item, prefix, lists)
    return out


def _header(text: str, marker: str = "#") -> None:
    lines = [ln for ln in text.splitlines() if not ln.startswith("#!")]
    assert lines[0].startswith(f"{marker} Emitted by gpuplan"), lines[0]
    head = "\n".join(lines[:10])
    assert "plan train-" in head or "plan serve-" in head
    assert "80% band" in head and "Chosen by gpuplan:" in head and "Stated by you:" in head


def _required(obj: Any, path: str) -> None:
    parts = path.split(".")
    cur: list[Any] = [obj]
    for p in parts:
        nxt: list[Any] = []
        for c in cur:
            key = p.removesuffix("[]")
            assert isinstance(c, dict) and key in c, f"missing {path}"
            nxt += c[key] if p.endswith("[]") else [c[key]]
        cur = nxt
    assert cur, path


def _check_schema(kind: str, obj: dict[str, Any]) -> None:
    s = schema(kind)
    for path in s.required:
        _required(obj, path)
    for k, v in s.constants.items():
        assert obj[k] == v


@pytest.mark.parametrize("plan", ["readme_train", "train_70b"])
def test_training_formats(plan: str, request: pytest.FixtureRequest) -> None:
    files: dict[str, str] = request.getfixturevalue(plan)
    assert set(files) >= TRAIN_FILES, sorted(files)
    for name, text in files.items():
        if not name.endswith(".json"):  # JSON has no comments: ds_config.json's provenance heads deepspeed.sh
            _header(text)
    if "ds_config.json" in files:
        assert "ds_config.json" in files["deepspeed.sh"].split("\n\n")[0]
    assert "mindspeed.sh" not in files  # an NVIDIA plan: MindSpeed-LLM runs on Ascend only
    assert unknown(["megatron"], _array_flags(files["megatron.sh"])) == []
    assert arg_problems("megatron", array_args(files["megatron.sh"])) == []  # Megatron's parser takes every value
    toml = tomllib.loads(files["torchtitan.toml"])
    assert unknown(["torchtitan"], _keys(toml)) == []
    assert key_problems("torchtitan", toml) == []
    nemo = yaml.safe_load(files["nemo_overrides.yaml"])
    assert unknown(["nemo"], _keys(nemo)) == []
    # the layout travels unchanged into every format
    lay = re.search(r"Chosen by gpuplan: tp=(\d+), pp=(\d+), dp=(\d+), cp=(\d+)", files["megatron.sh"])
    assert lay is not None
    tp, pp, dp, cp = map(int, lay.groups())
    assert f"--tensor-model-parallel-size {tp}\n" in files["megatron.sh"]
    assert toml["parallelism"]["tensor_parallel_degree"] == tp and toml["parallelism"]["pipeline_parallel_degree"] == pp
    par = toml["parallelism"]
    assert par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"] == dp
    assert nemo["model"]["context_parallel_size"] == cp
    sb = [ln for ln in files["slurm.sbatch"].splitlines() if ln.startswith("#SBATCH")]
    assert unknown(["slurm"], [ln.split()[1].split("=")[0] for ln in sb]) == []
    job = yaml.safe_load(files["pytorchjob.yaml"])
    _check_schema("pytorchjob", job)
    nodes = int(next(ln for ln in sb if "--nodes" in ln).split("=")[1])
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] + specs.get("Worker", {}).get("replicas", 0) == nodes
    assert set(job["spec"]) <= set(schema("pytorchjob").allowed["spec"])


def test_torchrun_command_parses_with_torchs_own_parser(readme_train: dict[str, str]) -> None:
    torch_run = pytest.importorskip("torch.distributed.run")
    line = next(ln for ln in readme_train["torchrun.sh"].splitlines() if ln.startswith("export LAUNCH="))
    expanded = subprocess.run(["bash", "-c", f'NODE_RANK=0 MASTER_ADDR=node0; {line}; printf "%s" "$LAUNCH"'],
                              capture_output=True, text=True, check=True).stdout  # as the shell expands it
    words = shlex.split(expanded)[1:]  # less "torchrun"
    args = torch_run.get_args_parser().parse_args([*words, "megatron.sh"])
    assert args.nnodes == "4" and int(args.nproc_per_node) == 8
    assert unknown(["torchrun"], [w for w in words if w.startswith("--")]) == []
    assert "NCCL_IB_HCA" in readme_train["torchrun.sh"]  # InfiniBand plan: the advisor's RDMA settings


def test_serving_formats(readme_infer: dict[str, str]) -> None:
    files = readme_infer
    assert set(files) >= SERVE_FILES, sorted(files)
    for name, text in files.items():
        if not name.endswith(".json"):
            _header(text)
    for name, tool in (("vllm.sh", "vllm"), ("sglang.sh", "sglang"), ("trtllm.sh", "trtllm"),
                       ("lmdeploy.sh", "lmdeploy")):
        words = command_words(files[name])
        flags = [w for w in words if w.startswith("--")]
        assert flags and unknown([tool], flags) == [], name
    # the emitted fleet is the recommended one of the same run (a part its blocking finding rules out is skipped)
    rec = _recommended_fleet()
    vllm = command_words(files["vllm.sh"])
    assert vllm[vllm.index("--tensor-parallel-size") + 1] == str(rec["layout"]["tp"])
    assert unknown(["trtllm"], _keys(yaml.safe_load(files["trtllm_config.yaml"]))) == []
    assert not {"mindie_config.json", "mindie.sh"} & set(files)  # MindIE runs on Ascend only
    dep = yaml.safe_load(files["deployment.yaml"])
    _check_schema("deployment", dep)
    assert dep["spec"]["replicas"] == rec["replicas"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert set(container) <= set(schema("deployment").allowed["container"])
    assert unknown(["vllm"], [w for w in container["args"] if w.startswith("--")]) == []
    sky = yaml.safe_load(files["skypilot.yaml"])
    _check_schema("skypilot", sky)
    assert set(sky) <= set(schema("skypilot").allowed["top"])
    assert set(sky["service"]) <= set(schema("skypilot").allowed["service"])
    assert sky["resources"]["accelerators"] == f"{_sky_accelerator(rec['accelerator'])}:{rec['layout']['tp']}"
    assert sky["service"]["replicas"] == rec["replicas"]


def _recommended_fleet() -> dict[str, Any]:
    res = CliRunner().invoke(app, [*README_INFER, "--json"])
    assert res.exit_code == 0, res.output
    rec: dict[str, Any] = json.loads(res.stdout)["recommended"]
    return rec


def test_flag_lists_carry_source_and_version() -> None:
    for tool in ("megatron", "mindspeed", "torchtitan", "deepspeed", "torchtune", "nemo", "vllm", "sglang",
                 "trtllm", "lmdeploy", "mindie", "torchrun", "slurm"):
        fl = flag_list(tool)
        assert fl.source and fl.version and fl.flags


def test_deepspeed_and_torchtune_on_a_data_parallel_plan(tmp_path: Any) -> None:
    args = ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "16",
            "--tp", "1", "--pp", "1", "--cp", "1", "--zero", "3", "--tokens", "1e10"]
    files = emit(args, tmp_path, "deepspeed,torchtune,torchtitan")
    ds = json.loads(files["ds_config.json"])
    assert unknown(["deepspeed"], _keys(ds)) == []
    assert ds["zero_optimization"]["stage"] == 3
    assert ds["train_batch_size"] == ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] * 16
    launcher = next(ln for ln in files["deepspeed.sh"].splitlines() if ln.startswith("exec deepspeed"))
    assert unknown(["deepspeed"], [w for w in shlex.split(launcher)[2:] if w.startswith("--") and "_" in w
                                   and w not in ("--deepspeed_config",)]) == []
    tune = yaml.safe_load(files["torchtune.yaml"])
    assert unknown(["torchtune"], _keys(tune)) == []
    assert "Stated by you: tp=1, pp=1, cp=1, zero_stage=3" in files["torchtune.yaml"]


def test_lora_plan_goes_to_torchtune_and_megatron_says_why(tmp_path: Any) -> None:
    args = ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8",
            "--method", "lora", "--tp", "1", "--pp", "1"]
    tune = yaml.safe_load(emit(args, tmp_path / "a", "torchtune")["torchtune.yaml"])
    assert tune["model"]["lora_rank"] > 0 and tune["model"]["lora_attn_modules"]
    res = CliRunner().invoke(app, [*args, "--emit", "megatron", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "torchtune" in res.output
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_bad_format_exits_2_naming_the_allowed_values(tmp_path: Any) -> None:
    res = CliRunner().invoke(app, [*README_TRAIN, "--emit", "megatorn", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "megatron" in res.output and "torchtitan" in res.output and "pytorchjob" in res.output
    assert not (tmp_path / "x").exists()


def test_attention_data_parallel_fleet_emits_each_engines_flags(tmp_path: Any) -> None:
    """A DeepSeek-V3 fleet at high load is planned attention data-parallel (ep > tp): one server holds the whole
    expert-parallel group, and each engine gets its own data-parallel-attention flags, all known to that engine."""
    args = ["plan", "infer", "-m", "deepseek-v3", "--qps", "30", "--input-len", "2000", "--output-len", "500",
            "--ttft-p99", "5", "--tpot-p99", "0.15", "--weights", "fp8"]
    files = emit(args, tmp_path, "vllm,sglang,trtllm,lmdeploy,k8s")
    rec = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)["recommended"]
    lay = rec["layout"]
    assert lay["ep"] > lay["tp"], lay
    groups = lay["ep"] // lay["tp"]
    sglang = command_words(files["sglang.sh"])
    assert "--enable-dp-attention" in sglang and sglang[sglang.index("--dp-size") + 1] == str(groups)
    assert sglang[sglang.index("--tp-size") + 1] == str(lay["ep"])
    vllm = command_words(files["vllm.sh"])
    assert vllm[vllm.index("--data-parallel-size") + 1] == str(groups) and "--enable-expert-parallel" in vllm
    assert yaml.safe_load(files["trtllm_config.yaml"])["enable_attention_dp"] is True
    lmd = command_words(files["lmdeploy.sh"])
    assert lmd[lmd.index("--dp") + 1] == str(groups) and lmd[lmd.index("--backend") + 1] == "pytorch"
    for name, tool in (("vllm.sh", "vllm"), ("sglang.sh", "sglang"), ("trtllm.sh", "trtllm"),
                       ("lmdeploy.sh", "lmdeploy")):
        assert unknown([tool], [w for w in command_words(files[name]) if w.startswith("--")]) == [], name
    assert unknown(["trtllm"], _keys(yaml.safe_load(files["trtllm_config.yaml"]))) == []
    dep = yaml.safe_load(files["deployment.yaml"])
    assert dep["spec"]["replicas"] == rec["replicas"] // groups
    limits = dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert list(limits.values()) == [lay["ep"]]


def test_a_server_across_instances_launches_per_node_or_names_the_formats_that_can(tmp_path: Any) -> None:
    """Wide expert parallelism over several RDMA-connected instances (DeepSeek-V3 on H100: EP16-32 over two to four
    8-GPU nodes): SGLang gets its multi-node launch; formats gpuplan cannot launch that way exit 2 naming sglang."""
    args = ["plan", "infer", "-m", "deepseek-v3", "--qps", "30", "--input-len", "2000", "--output-len", "500",
            "--ttft-p99", "5", "--tpot-p99", "0.15", "--weights", "fp8", "--vendor", "nvidia", "--max-devices", "64"]
    plans = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)["plans"]
    wide = [i for i, p in enumerate(plans, 1) if p["layout"]["ep"] > 8 and p["accelerator"].startswith("h100")]
    assert wide, [(p["accelerator"], p["layout"]) for p in plans]
    pick = ["--pick", str(wide[0])]
    files = emit([*args, *pick], tmp_path, "sglang")
    words = command_words(files["sglang.sh"])
    nodes = plans[wide[0] - 1]["layout"]["ep"] // 8  # the expert group spans whole 8-GPU instances
    assert nodes >= 2
    assert words[words.index("--nnodes") + 1] == str(nodes) and "--node-rank" in words and "--dist-init-addr" in words
    assert words[words.index("--moe-a2a-backend") + 1] == "deepep"
    assert unknown(["sglang"], [w for w in words if w.startswith("--")]) == []
    res = CliRunner().invoke(app, [*args, *pick, "--emit", "vllm", "--out", str(tmp_path / "v")])
    exited(res, 2)
    assert "sglang" in res.output and not (tmp_path / "v").exists()


PD_INFER = ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-len", "8000", "--output-len", "500",
            "--ttft-p99", "3", "--tpot-p99", "0.04", "--market", "global"]


def test_a_disaggregated_fleet_gets_its_sglang_prefill_decode_and_router_launch(tmp_path: Any) -> None:
    """`--emit sglang --disaggregated`: the fleet the advisor would name, one script per pool and the router."""
    plan = json.loads(CliRunner().invoke(app, [*PD_INFER, "--json"]).stdout)
    pd = plan["what_if_pd_all"][0]
    files = emit([*PD_INFER, "--disaggregated"], tmp_path, "sglang")
    assert set(files) == {"sglang_prefill.sh", "sglang_decode.sh", "sglang_router.sh"}
    pre, dec, router = (command_words(files[f"sglang_{n}.sh"]) for n in ("prefill", "decode", "router"))
    assert pre[pre.index("--disaggregation-mode") + 1] == "prefill" and "--disaggregation-bootstrap-port" in pre
    assert dec[dec.index("--disaggregation-mode") + 1] == "decode"
    for words in (pre, dec):
        assert words[words.index("--disaggregation-transfer-backend") + 1] == "mooncake"
        assert unknown(["sglang"], [w for w in words if w.startswith("--")]) == []
    assert dec[dec.index("--tp-size") + 1] == str(max(pd["decode"]["layout"]["tp"], pd["decode"]["layout"]["ep"]))
    assert unknown(["sglang_router"], [w for w in router if w.startswith("--")]) == []
    assert "--pd-disaggregation" in router
    # one --prefill (with its bootstrap port) per prefill server, one --decode per decode server
    per_server = {n: max(pd[n]["layout"]["tp"], pd[n]["layout"]["ep"]) * pd[n]["layout"]["pp"] for n in pd
                  if n in ("prefill", "decode")}
    assert router.count("--prefill") == pd["prefill"]["devices"] // per_server["prefill"]
    assert router.count("--decode") == pd["decode"]["devices"] // per_server["decode"]
    assert all("not a plan" in text for text in files.values())
    assert "Predicted (no band)" in files["sglang_prefill.sh"] and "80% band" not in files["sglang_decode.sh"]


def test_disaggregated_emission_is_sglang_only_and_takes_no_pick(tmp_path: Any) -> None:
    for extra, field in ((["--emit", "vllm"], "emit"), (["--emit", "sglang", "--pick", "1"], "pick")):
        res = CliRunner().invoke(app, [*PD_INFER, *extra, "--disaggregated", "--out", str(tmp_path / field)])
        exited(res, 2)
        assert f"{field}=" in res.output and not (tmp_path / field).exists()


def test_a_pipeline_launch_balances_the_stage_beside_the_lm_head() -> None:
    """The planner times balanced pipeline stages (pp_partition 'balanced'); Megatron's default split puts the LM
    head beside an equal share of layers on the last stage (Llama 3.1 8B at PP2: 16 + head against 16, 3% over the
    mean). The emitted launch gives the first and last stages the layer counts that balance them, in Megatron's
    flags and in the Megatron-Bridge overrides; an interleaved or head-light plan keeps the default."""
    from gpuplan.emit.context import TrainTarget
    from gpuplan.emit.train_megatron import megatron_args, nemo_overrides
    from gpuplan.estimate.pipeline_split import balanced_split
    from gpuplan.workload.presets import load_model

    spec = load_model("llama3.1-8b")
    plan = {"layout": {"tp": 1, "pp": 2, "dp": 4, "cp": 1, "ep": 1, "vpp": 1, "micro_batch": 1}}
    t = TrainTarget(model_id="llama3.1-8b", spec=spec, plan=plan, method="full", seq_len=4096, global_batch=64,
                    precision="bf16", lora_rank=16, lora_targets=(), tokens=None)
    split = balanced_split(spec, 4096, 2)
    assert split is not None and sum(split) == spec.num_layers and split[0] > split[1]
    args = dict(megatron_args(t))
    assert args["--decoder-first-pipeline-num-layers"] == str(split[0])
    assert args["--decoder-last-pipeline-num-layers"] == str(split[1])
    model = nemo_overrides(t)["model"]
    assert (model["num_layers_in_first_pipeline_stage"], model["num_layers_in_last_pipeline_stage"]) == split
    assert unknown(["megatron"], list(args)) == []
    inter = TrainTarget(**{**t.__dict__, "plan": {"layout": {**plan["layout"], "pp": 2, "vpp": 2}}})
    assert "--decoder-first-pipeline-num-layers" not in dict(megatron_args(inter))


def test_the_format_names_are_the_emitters_names() -> None:
    """`--emit` is checked against emit/formats.py (light, before planning); each name must have its emitter."""
    from gpuplan.emit import dispatch, formats

    assert tuple(dispatch._TRAIN) == formats.TRAIN_CONFIGS
    assert tuple(dispatch._LAUNCH) == formats.LAUNCHERS
    assert set(formats.SERVE_FORMATS) >= {"vllm", "sglang"}
    for name in formats.SERVE_FORMATS:  # every serving name reaches an emitter (an unknown one would raise)
        assert dispatch.parse_formats(name, formats.SERVE_FORMATS) == [name]


def test_a_plan_that_writes_nothing_loads_no_emitter_and_no_benchmark_record() -> None:
    """The CLI's training command loads the emitters and the benchmark records' schemas only when it uses them."""
    import subprocess
    import sys

    code = ("import sys, gpuplan.cli.main, gpuplan.cli.train, gpuplan.cli.infer_plan; "
            "print(sorted(m for m in ('gpuplan.emit.dispatch', 'gpuplan.bench.records') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
