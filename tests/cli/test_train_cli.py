"""estimate train, plan train and validate through the CLI: JSON contracts and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from ground_truth import GROUND_TRUTH

runner = CliRunner()
SHARED = GROUND_TRUTH


def test_estimate_train_json_contract() -> None:
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "H100", "--num-accels", "16",
                              "--tp", "2", "--seq-len", "4096", "--global-batch", "128", "--tokens", "1e11", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("memory", "step_time_s", "breakdown_s", "tokens_per_s", "tokens_per_s_per_device",
                "tflops_per_device", "mfu", "hfu", "time_to_train_s", "device_hours", "cost", "layout", "assumptions"):
        assert key in out, key
    assert out["layout"]["tp"] == 2
    assert set(out["breakdown_s"]) >= {"compute", "tp_comm", "dp_comm", "pp_bubble", "pp_comm", "ep_comm",
                                       "cp_comm", "other"}
    assert out["memory"]["total_bytes"] > 0


@pytest.mark.parametrize(("args", "needle"), [
    (["--tp", "3"], "tp=3"),
    (["--tp", "2", "--pp", "2", "--dp", "2", "--cp", "1"], "tp*pp*dp*cp=8"),
    (["--tp", "16"], "tensor parallelism across the network"),
    (["--accelerator", "H1000"], "h100"),
    (["--num-accels", "0"], "num-accels"),
])
def test_estimate_train_bad_input(args: list[str], needle: str) -> None:
    base = ["estimate", "train", "-m", "llama3-8b", "--num-accels", "16"]
    if "--accelerator" not in args:
        base += ["--accelerator", "h100-sxm5-80gb"]
    res = runner.invoke(app, base + args)
    exited(res, 2)
    assert needle.lower() in res.output.lower()


def test_model_that_fits_nowhere_says_so() -> None:
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3.1-405b", "--accelerator", "l40s-48gb",
                              "--num-accels", "8"])
    assert res.exit_code == 2 and "nearest feasible" in res.output


def test_plan_train_json() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64",
                              "--market", "cn", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("candidates_evaluated", "plans", "pareto", "rejected"):
        assert key in out
    assert out["plans"] and out["candidates_evaluated"] > 0
    assert all("bottleneck" in p for p in out["plans"])


def test_plan_train_impossible_deadline_exits_2() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-70b", "--tokens", "1e13", "--max-devices", "16",
                              "--deadline", "1"])
    assert res.exit_code == 2 and "deadline" in res.output
    # the nearest feasible alternative: the quickest plan that fits, with the deadline it needs
    assert "fastest plan that fits takes" in res.output and "--deadline" in res.output


def test_plan_train_over_budget_names_the_cheapest_plan() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64",
                              "--budget", "1"])
    assert res.exit_code == 2 and "cheapest plan that fits costs" in res.output


def test_plan_train_model_too_big_for_the_cluster_names_the_smallest_fit() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3.1-405b", "--tokens", "1e12", "--max-devices", "8"])
    exited(res, 2)
    assert "smallest cluster that fits is" in res.output


@pytest.mark.ground_truth("memory.csv")
def test_validate_json_shape() -> None:
    res = runner.invoke(app, ["validate", str(SHARED / "memory.csv"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) >= {"cases", "median_ape", "p90_ape", "skipped"}
    assert {"id", "metric", "measured", "predicted", "ape"} <= set(out["cases"][0])


def test_validate_missing_file_exits_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["validate", str(tmp_path / "nope.csv")])
    assert res.exit_code == 2


def _plan_json(*args: str) -> dict:
    res = runner.invoke(app, ["plan", "train", *args, "--json"])
    assert res.exit_code == 0 and res.exception is None, res.output
    return json.loads(res.stdout)


def test_plan_train_and_compare_answer_tcp_vs_infiniband() -> None:
    """'2-4 nodes over TCP vs InfiniBand' gets a quantified answer from plan and compare (issue 11, items 1-2)."""
    base = ["-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "32", "--accelerators"]
    # 8-GPU nodes: round-2 prices made a 72-GPU GB200 rack the cheapest answer (one node, no network question);
    # a buyer in China (outside it, the default buyer's cheapest own cluster is one 8-GPU node: no network question)
    tcp = _plan_json(*base[:6], "--gpus-per-node", "8", "--network", "eth-25-tcp", "--nics-per-node", "1",
                     "--market", "cn")
    ib = _plan_json(*base[:6], "--gpus-per-node", "8", "--network", "ib-ndr-400", "--nics-per-node", "8",
                    "--market", "cn")
    assert tcp["recommended"]["time_s"] > ib["recommended"]["time_s"]
    rdma = [f for f in tcp["findings"] if f["id"].startswith("net.rdma")]
    assert rdma and any(g["name"].startswith("step") or "tcp" in g["name"] for g in rdma[0]["figures"])
    res = runner.invoke(app, ["compare", *base[:6], "--accelerators", "h100-sxm5-80gb", "--network", "eth-25-tcp",
                              "--nics-per-node", "1", "--json"])
    assert res.exit_code == 0 and res.exception is None, res.output
    slow = json.loads(res.stdout)["options"][0]["plan"]
    res = runner.invoke(app, ["compare", *base[:6], "--accelerators", "h100-sxm5-80gb", "--network", "ib-ndr-400",
                              "--json"])
    fast = json.loads(res.stdout)["options"][0]["plan"]
    assert fast["network"] == "ib-ndr-400" and fast["devices"] > 8
    assert slow["time_s"] > fast["time_s"]


def test_plan_train_honours_a_one_device_cap_and_lists_the_best_per_accelerator_first() -> None:
    out = _plan_json("-m", "qwen2.5-7b", "--tokens", "2e9", "--method", "lora", "--max-devices", "1")
    assert {p["devices"] for p in out["plans"]} == {1}
    assert out["layout_family"]["family"] == "data_parallel"
    res = runner.invoke(app, ["plan", "train", "-m", "qwen2.5-7b", "--tokens", "2e9", "--method", "lora",
                              "--max-devices", "1", "--top", "3"])
    assert res.exit_code == 0 and res.exception is None, res.output
    # every accelerator with a plan appears in the table even with --top 3
    for acc in out["best_per_hardware"]:
        assert acc[:8] in res.stdout, acc


@pytest.mark.parametrize("flag,value", [("--max-devices", "0"), ("--nics-per-node", "0"), ("--gpus-per-node", "0"),
                                        ("--deadline", "nan"), ("--budget", "-5"), ("--network", "eth-25")])
def test_plan_train_bad_cluster_options_exit_2_naming_the_field(flag: str, value: str) -> None:
    extra = ["--network", "eth-25-tcp"] if flag == "--nics-per-node" else []
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", flag, value, *extra])
    assert res.exit_code == 2, res.output
    assert flag.removeprefix("--") in res.output or "network" in res.output


def test_estimate_train_shows_campaign_efficiency_and_the_network() -> None:
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb",
                              "--num-accels", "16", "--tokens", "1e12", "--network", "eth-25-tcp", "--nics-per-node",
                              "1"])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "campaign efficiency" in res.stdout and "70%" in res.stdout and "eth-25-tcp" in res.stdout
    out = json.loads(runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb",
                                         "--num-accels", "16", "--tokens", "1e12", "--json"]).stdout)
    tps, goodput = out["tokens_per_s"], out["reliability"]["goodput"]
    camp = out["campaign_efficiency"]["value"]
    assert out["time_to_train_s"] == pytest.approx(1e12 / tps / goodput / camp)


def test_short_plans_print_hours_not_zero_days() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e8", "--max-devices", "8"])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "0.0 days" not in res.stdout and "0.0 天" not in res.stdout


def test_estimate_train_uses_the_usable_memory_rule_and_rejects_bad_numbers() -> None:
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "rtx4090-24gb",
                              "--num-accels", "1", "--tokens", "1e9"])
    assert res.exit_code == 2 and "usable (95% of 24)" in res.output
    for flag, value in (("--seq-len", "0"), ("--tokens", "nan"), ("--global-batch", "0"), ("--nics-per-node", "0"),
                        ("--gpus-per-node", "0"), ("--tokens", "inf")):
        res = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb",
                                  "--num-accels", "8", flag, value])
        assert res.exit_code == 2, (flag, value, res.output)
        assert flag.removeprefix("--") in res.output


def test_estimate_train_without_sequence_parallelism() -> None:
    """--no-seq-parallel keeps norms and residuals whole on each TP rank: slower and larger than with it, and the
    memory breakdown says which was assumed."""
    base = ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8",
            "--tp", "8", "--pp", "1", "--dp", "1", "--cp", "1", "--recompute", "none", "--json"]
    sp, no_sp = (json.loads(runner.invoke(app, base + extra).output) for extra in ([], ["--no-seq-parallel"]))
    assert no_sp["step_time_s"] > sp["step_time_s"]
    assert no_sp["memory"]["total_bytes"] > sp["memory"]["total_bytes"]
    assert sp["memory"]["assumptions"]["layout"]["seq_parallel"] is True
    assert no_sp["memory"]["assumptions"]["layout"]["seq_parallel"] is False


def test_estimate_and_plan_train_take_the_recipe_in_the_settings_syntax() -> None:
    """Issue 13: each recipe key a CLI option of memory, estimate and plan. `--recipe "key=value;..."` takes the case
    files' settings syntax (one schema); a key that sets no training field, or one that needs LoRA on a full
    fine-tune, is exit 2 naming it."""
    base = ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8",
            "--method", "lora", "--json"]
    plain = json.loads(runner.invoke(app, base).stdout)
    res = runner.invoke(app, [*base, "--recipe", "loss=chunked;compile=true;lora_targets=q_proj,v_proj"])
    assert res.exit_code == 0, res.output
    mem = json.loads(res.stdout)["memory"]
    assert mem["assumptions"]["loss"] == "chunked (8 chunks) under torch.compile"
    assert mem["assumptions"]["lora"]["targets"] == ["q", "v"]
    assert plain["memory"]["assumptions"]["loss"] == "full"
    for recipe, word in (("batching=static", "batching"), ("loss=bogus", "bogus"), ("trainable_extra=embed", "lora"),
                         ("compile=maybe", "recipe compile")):
        bad = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb",
                                  "--recipe", recipe])
        assert bad.exit_code == 2 and "recipe" in bad.output and word in bad.output, bad.output
    planned = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e8", "--method", "lora",
                                  "--market", "global", "--recipe", "compile=true", "--json"])
    assert planned.exit_code == 0, planned.output



def test_a_gradient_reduction_after_the_backward_is_exposed_whole() -> None:
    """Recipe fact grad_reduce_overlap=false (Megatron-LM 2022: "we do not use any overlapping of gradient all-reduces
    with back-propagation"; DeepSpeed ZeRO-1/2 with overlap_comm false): the data-parallel gradient reduction adds
    to the step whole instead of hiding under the last backward."""
    base = ["estimate", "train", "-m", "llama2-7b", "--accelerator", "a100-sxm4-80gb", "--num-accels", "32",
            "--tp", "1", "--pp", "1", "--zero", "1", "--micro-batch", "1", "--global-batch", "32",
            "--network", "roce-100", "--nics-per-node", "1", "--json"]
    over = runner.invoke(app, base)
    after = runner.invoke(app, [*base, "--recipe", "grad_reduce_overlap=false"])
    assert over.exit_code == 0 and after.exit_code == 0, (over.output, after.output)
    a, b = json.loads(over.stdout)["breakdown_s"]["dp_comm"], json.loads(after.stdout)["breakdown_s"]["dp_comm"]
    assert b > a and b > 0


def test_full_recompute_under_a_pytorch_checkpoint_skips_the_down_projection() -> None:
    """Recipe fact recompute_early_stop (PyTorch's non-reentrant checkpoint, torch >= 2.1, stops recomputing once the
    backward's tensors are rebuilt: each layer's MLP down projection is not rerun). LLM Foundry and torchtitan default
    to it; a Megatron-class job reruns the whole layer; the recipe overrides either way."""
    base = ["estimate", "train", "-m", "llama2-7b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8",
            "--tp", "1", "--pp", "1", "--zero", "3", "--micro-batch", "4", "--global-batch", "64",
            "--recompute", "full", "--json"]

    def run(*extra: str) -> dict[str, Any]:
        out = runner.invoke(app, [*base, *extra])
        assert out.exit_code == 0, out.output
        return dict(json.loads(out.stdout))

    plain, foundry = run(), run("--framework", "llmfoundry")
    stated_off = run("--framework", "llmfoundry", "--recipe", "recompute_early_stop=false")
    stated_on = run("--recipe", "recompute_early_stop=true")
    # llama2-7b's down projections are 1/3 of its MLP: about a tenth of the recomputed forward
    assert foundry["hfu"] / foundry["mfu"] < plain["hfu"] / plain["mfu"] - 0.05
    assert stated_off["hfu"] / stated_off["mfu"] == pytest.approx(plain["hfu"] / plain["mfu"])
    assert stated_on["hfu"] / stated_on["mfu"] == pytest.approx(foundry["hfu"] / foundry["mfu"])
    assert stated_on["step_time_s"] < plain["step_time_s"]
    bad = runner.invoke(app, [*base, "--recipe", "recompute_early_stop=maybe"])
    assert bad.exit_code == 2 and "recompute_early_stop" in bad.output


def test_plan_and_compare_tables_say_what_recipe_and_layouts_they_assumed() -> None:
    """A plan table read alone (a screenshot in a review) must say the recipe it was computed under: `plan train` and
    `compare` print the layouts searched and the --recipe facts below their tables, in the chosen language."""
    common = ["-m", "qwen2.5-7b", "--tokens", "5e8", "--method", "lora", "--market", "cn", "--framework",
              "llamafactory", "--recipe", "loss=chunked"]
    plan = runner.invoke(app, ["plan", "train", *common, "--top", "1", "--lang", "en"])
    assert plan.exit_code == 0, plan.output
    assert "Recipe facts every plan assumes (--recipe): loss=chunked" in plan.output
    cmp = runner.invoke(app, ["compare", "--accelerators", "h20-96gb,ascend-910b", *common, "--lang", "zh"])
    assert cmp.exit_code == 0, cmp.output
    flat = " ".join(cmp.output.split())
    assert "所有方案采用的训练配方（--recipe）：loss=chunked" in flat and "--framework llamafactory" in flat
    bare = runner.invoke(app, ["compare", "--accelerators", "h20-96gb", "-m", "qwen2.5-7b", "--tokens", "5e8",
                               "--market", "cn", "--lang", "en"])
    assert bare.exit_code == 0 and "Layouts searched" in bare.output and "--recipe" not in bare.output
