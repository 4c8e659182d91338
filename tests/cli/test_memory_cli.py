"""The memory CLI: JSON contract, tables, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app

runner = CliRunner()
CONTRACT = ["params_total", "params_active", "params_trainable", "weights_bytes", "gradients_bytes",
            "optimizer_bytes", "activations_bytes", "kv_cache_bytes", "other_bytes", "total_bytes", "assumptions"]


def test_train_json_contract() -> None:
    res = runner.invoke(app, ["memory", "train", "--model", "llama3-8b", "--seq-len", "2048", "--micro-batch", "2",
                              "--method", "lora", "--lora-rank", "8", "--recompute", "full", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in CONTRACT:
        assert key in out
    assert out["params_trainable"] < out["params_total"]
    assert out["assumptions"]["recompute"] == "full"


def test_the_notes_are_written_in_the_asked_language() -> None:
    """Buyer check: `memory train --lang zh` listed its notes ('gradients accumulate in fp32 main-gradient buffers',
    'optimizer-step temporaries count only ...') in English under the Chinese '说明'. The JSON keeps `notes` in
    English and adds `notes_zh`, one for one."""
    args = ["memory", "train", "--model", "llama3-70b", "--framework", "megatron", "--tp", "8", "--seq-len", "4096",
            "--micro-batch", "1", "--recompute", "full"]
    zh = runner.invoke(app, [*args, "--lang", "zh"], env={"COLUMNS": "300"})
    assert zh.exit_code == 0, zh.output
    text = " ".join(zh.output.split())
    assert "梯度在 fp32 主梯度缓冲区中累加（megatron：每参数 4 字节）" in text
    assert "gradients accumulate" not in text and "optimizer-step temporaries" not in text
    out = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["assumptions"]
    assert len(out["notes"]) == len(out["notes_zh"]) >= 2
    assert any("fp32 main-gradient" in n for n in out["notes"])
    infer = json.loads(runner.invoke(app, ["memory", "infer", "--model", "llama3-8b", "--json"]).stdout)
    assert len(infer["assumptions"]["notes_zh"]) == len(infer["assumptions"]["notes"]) == 2


def test_train_compile_keeps_16bit_logits_and_says_so() -> None:
    """--compile (torchtune compile=True): the compiled loss keeps the 16-bit logits, not fp32 log-probabilities,
    and compiled layers save what fused kernels save, so the peak drops and the JSON says why."""
    base = ["memory", "train", "-m", "llama3-8b", "--seq-len", "2048", "--micro-batch", "2", "--method", "lora",
            "--recompute", "full", "--loss", "chunked", "--json"]
    eager, compiled = (json.loads(runner.invoke(app, base + extra).stdout) for extra in ([], ["--compile"]))
    assert compiled["assumptions"]["loss"] == "chunked (8 chunks) under torch.compile"
    assert "torch.compile" in compiled["assumptions"]["activation_model"]
    # 4096 tokens x 128256 logits: 4 bytes of fp32 log-probabilities saved become the 2-byte logits
    saved = 4096 * 128256
    assert eager["activations_bytes"] - compiled["activations_bytes"] == pytest.approx(2 * saved, rel=0.01)
    assert compiled["total_bytes"] < eager["total_bytes"]


def test_infer_json_and_table() -> None:
    res = runner.invoke(app, ["memory", "infer", "-m", "deepseek-v3", "--weights", "fp8", "--tp", "8",
                              "--batch", "4", "--context", "8192", "--device-memory-gib", "141", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["kv_cache_bytes"] == 4 * 8192 * 61 * 576 * 2  # MLA latent, replicated over TP
    assert out["max_batch_fits"] > 0
    table = runner.invoke(app, ["memory", "infer", "-m", "llama3-8b"])
    assert table.exit_code == 0 and "KV cache" in table.stdout


def test_train_table_shows_breakdown_and_calibration() -> None:
    res = runner.invoke(app, ["memory", "train", "-m", "qwen2.5-7b", "--zero", "3", "--dp", "8"])
    assert res.exit_code == 0, res.output
    for word in ("weights", "optimizer", "activations", "calibration", "allocator_fragmentation"):
        assert word in res.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (["memory", "train", "-m", "llama3-8b", "--seq-len", "0"], "seq-len"),
    (["memory", "train", "-m", "llama3-8b", "--micro-batch", "-1"], "micro-batch"),
    (["memory", "train", "-m", "llama3-8b", "--tp", "3"], "tp=3"),
    (["memory", "train", "-m", "llama3-8b", "--pp", "64"], "pp=64"),
    (["memory", "train", "-m", "llama3-9b"], "llama3-8b"),
    (["memory", "train", "-m", "llama3-8b", "--method", "dora"], "lora"),
    (["memory", "train", "-m", "llama3-8b", "--precision", "fp4"], "bf16"),
    (["memory", "train", "-m", "llama3-8b", "--optimizer", "adamx"], "adamw"),
    (["memory", "infer", "-m", "llama3-8b", "--weights", "int3"], "int4"),
    (["memory", "infer", "-m", "llama3-8b", "--batch", "0"], "batch"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], needle: str) -> None:
    res = runner.invoke(app, args)
    exited(res, 2)
    assert needle in res.output


@pytest.mark.parametrize(("cfg", "needle"), [
    ({"hidden_size": 100, "num_attention_heads": 3}, "num_heads"),
    ({"num_key_value_heads": 5}, "num_kv_heads"),
    ({"hidden_size": 0}, "hidden_size"),
])
def test_bad_config_json_exits_2(tmp_path: Path, cfg: dict[str, int], needle: str) -> None:
    base = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 8, "intermediate_size": 512, "vocab_size": 1000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**base, **cfg}))
    res = runner.invoke(app, ["memory", "train", "--model", str(path)])
    exited(res, 2)
    assert needle in res.output


def test_recipe_options_reach_the_estimate() -> None:
    """The recipe fields of the memory model are CLI options and show in the assumptions."""
    base = ["memory", "train", "-m", "qwen2.5-7b", "--method", "qlora", "--seq-len", "1024", "--json"]
    nf4 = json.loads(runner.invoke(app, base).stdout)
    res = runner.invoke(app, [*base, "--quant-format", "gptq", "--zero-impl", "deepspeed", "--no-loss-upcast",
                              "--kernels", "hf"])
    assert res.exit_code == 0, res.output
    gptq = json.loads(res.stdout)
    a = gptq["assumptions"]
    assert a["quant_format"] == "gptq" and a["zero_impl"] == "deepspeed" and a["loss_upcast"] is False
    assert gptq["details_bytes"]["other"]["gptq_dequantized_weights"] > 0
    assert gptq["weights_bytes"] > nf4["weights_bytes"]  # GPTQ int4 + scales vs NF4 double quantization
    pool = json.loads(runner.invoke(app, ["memory", "infer", "-m", "qwen2.5-7b", "--context", "8192",
                                          "--json"]).stdout)
    cat = json.loads(runner.invoke(app, ["memory", "infer", "-m", "qwen2.5-7b", "--context", "8192",
                                         "--kv-layout", "concat", "--generated", "8191", "--json"]).stdout)
    assert cat["total_bytes"] > pool["total_bytes"]  # torch.cat growth keeps an old and a new copy


def test_usable_memory_rule_matches_the_planner() -> None:
    """23.7 GiB on a 24 GiB RTX 4090 is over the 95% usable share the training planner applies."""
    res = runner.invoke(app, ["memory", "train", "-m", "llama3-8b", "--method", "lora", "--seq-len", "940",
                              "--accelerator", "rtx4090", "--json"])
    assert res.exit_code == 0, res.output
    assert res.exception is None
    out = json.loads(res.stdout)
    assert 22.8 * 2**30 < out["total_bytes"] < 24 * 2**30
    assert out["usable_memory_fraction"] == 0.95
    assert out["usable_memory_bytes"] == round(24 * 2**30 * 0.95)
    assert out["fits"] is False
    # the nearest fix keeps the model's numerics (recomputation) before it quantizes the base (QLoRA)
    assert out["nearest_fix"]["flags"] == "--recompute full" and out["nearest_fix"]["fits"] is True
    table = runner.invoke(app, ["memory", "train", "-m", "llama3-8b", "--method", "lora", "--seq-len", "940",
                                "--accelerator", "rtx4090"])
    assert table.exit_code == 0 and table.exception is None
    assert "23.7 GiB needed, 22.8 GiB usable (95% of 24). --recompute full fits: 18.0 GiB" in table.stdout


def test_the_memory_fix_keeps_the_models_numerics_first() -> None:
    """Buyer check: a LoRA of Qwen2.5-7B at 4096 tokens on an RTX 4090 (47.9 GiB) was told '--method qlora
    --recompute full fits', quantizing the base to 4 bits, although recomputation with a chunked loss fits in bf16
    (21.5 GiB); a full fine-tune that nothing fits was shown a QLoRA figure, another method. The suggestion now runs
    recomputation, a chunked loss, both, ZeRO, then QLoRA for a LoRA job only; the flags it prints run as given."""
    args = ["memory", "train", "-m", "qwen2.5-7b", "--method", "lora", "--seq-len", "4096", "--micro-batch", "1",
            "--accelerator", "rtx4090", "--json"]
    out = json.loads(runner.invoke(app, args).stdout)
    assert out["nearest_fix"]["flags"] == "--recompute full --loss chunked" and out["nearest_fix"]["fits"]
    again = json.loads(runner.invoke(app, [*args, "--recompute", "full", "--loss", "chunked"]).stdout)
    assert again["fits"] is True and again["total_bytes"] == out["nearest_fix"]["total_bytes"]
    full = json.loads(runner.invoke(app, ["memory", "train", "-m", "llama3.1-70b", "--method", "full",
                                          "--accelerator", "h100-sxm5-80gb", "--json"]).stdout)
    assert full["nearest_fix"]["fits"] is False and "qlora" not in full["nearest_fix"]["flags"]


def test_memory_fix_recompute_first_when_qlora_is_set() -> None:
    res = runner.invoke(app, ["memory", "train", "-m", "llama3-8b", "--method", "qlora", "--seq-len", "8192",
                              "--device-memory-gib", "24", "--json"])
    assert res.exit_code == 0 and res.exception is None, res.output
    out = json.loads(res.stdout)
    assert out["fits"] is False and out["nearest_fix"]["flags"] == "--recompute full"


def test_infer_fit_uses_the_same_rule() -> None:
    res = runner.invoke(app, ["memory", "infer", "-m", "llama3-8b", "--batch", "16", "--context", "8192",
                              "--accelerator", "rtx4090", "--json"])
    assert res.exit_code == 0 and res.exception is None, res.output
    out = json.loads(res.stdout)
    assert out["fits"] is (out["total_bytes"] <= 0.95 * 24 * 2**30)
    assert out["fits"] is False and out["nearest_fix"]["fits"] is True


def test_seq_len_past_the_trained_context_warns_on_stderr() -> None:
    res = runner.invoke(app, ["memory", "train", "-m", "llama2-7b", "--seq-len", "8192", "--json"])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "--seq-len 8192" in res.stderr and "max_position_embeddings" in res.stderr
    assert res.stderr.count("\n") == 1
    assert json.loads(res.stdout)["assumptions"]["seq_len"] == 8192  # still estimated, JSON clean
    ok = runner.invoke(app, ["memory", "train", "-m", "llama2-7b", "--seq-len", "4096"])
    assert ok.exit_code == 0 and ok.exception is None and ok.stderr == ""
    infer = runner.invoke(app, ["memory", "infer", "-m", "llama2-7b", "--context", "16384"])
    assert infer.exit_code == 0 and infer.exception is None
    assert "--context 16384" in infer.stderr


def test_alias_note_on_memory_commands() -> None:
    res = runner.invoke(app, ["memory", "train", "-m", "llama3-8b", "--accelerator", "910b", "--json"])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "910b -> ascend-910b (also: ascend-910b2, ascend-910b3, ascend-910b4" in res.stderr
    single = runner.invoke(app, ["memory", "infer", "-m", "llama3-8b", "--accelerator", "h20"])
    assert single.exit_code == 0 and single.exception is None and single.stderr == ""  # h200 is no H20 variant


def test_train_recompute_modules_shrink_a_deepseek_stage_and_unknown_ones_exit_2() -> None:
    """`--recompute-modules` (Megatron-Core --recompute-modules): DeepSeek-V3's first PP4 stage on GB200 drops its
    per-head q, k, v, the experts' SwiGLU outputs and the separate norms' outputs; an unknown module names the
    allowed ones and exits 2."""
    base = ["memory", "train", "--model", "deepseek-v3", "--tp", "1", "--pp", "4", "--dp", "64", "--ep", "64",
            "--zero", "1", "--precision", "fp8", "--seq-len", "4096", "--json"]
    plain = runner.invoke(app, base)
    dropped = runner.invoke(app, [*base, "--recompute-modules", "mla_up_proj,moe_act,layernorm"])
    assert plain.exit_code == 0 and dropped.exit_code == 0, plain.output + dropped.output
    a, b = json.loads(plain.stdout), json.loads(dropped.stdout)
    assert b["activations_bytes"] < 0.7 * a["activations_bytes"]
    assert b["weights_bytes"] == a["weights_bytes"]
    bad = runner.invoke(app, [*base, "--recompute-modules", "mla_up"])
    assert bad.exit_code == 2
    assert "recompute-modules" in bad.output and "mla_up_proj" in bad.output and "Traceback" not in bad.output
