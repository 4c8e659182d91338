"""LoRA at scale in fp8: the frozen base stored in fp8 (issue 35, LoRA 70B peak memory on B200 about 2x).

NVIDIA's MLPerf Llama 2 70B LoRA recipe (mlcommons/training_results_v4.0, NVIDIA/benchmarks/llama2_70b_lora/
implementations/nemo/conf/megatron_gpt_peft_tuning_config.yaml) sets `fp8_params: ${FP8}` beside `fp8: ${FP8}`:
with FP8 on, Transformer Engine keeps the primary weights of its linear layers in fp8 (fp8_model_init), one
byte each; the base is frozen, so no 16-bit master copy exists. Its DGX B200 config runs TP1 PP1 on 8 GPUs (each
GPU holds the whole base), LoRA rank 16 on the attention projections, packed 8192-token sequences, MBS 1.
gpuplan stored the frozen matrices in 16 bits whatever the precision: 128.5 GiB of weights per GPU, not 64.7.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.units import GIB
from gpuplan.validate.memory_cases import recipe_job_fields
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

LLAMA2_70B = get_preset("llama2-70b").spec
RECIPE = {"method": "lora", "lora_rank": 16, "lora_targets": ("q", "k", "v", "o"), "precision": "fp8",
          "seq_len": 8192, "micro_batch": 1, "recompute": "full"}
LAYOUT = Layout(tp=1, pp=1, dp=8)


def test_frozen_base_of_an_fp8_params_lora_run_is_one_byte_per_matrix_weight() -> None:
    counts = count_params(LLAMA2_70B)
    layer = counts.dense_layer
    assert layer is not None
    matrices = LLAMA2_70B.num_layers * (layer.attention_matrix + layer.mlp_matrix)
    assert matrices == pytest.approx(68.45e9, rel=0.001)  # 80 x (151.0M attention + 704.6M MLP)
    fp8 = estimate_training_memory(LLAMA2_70B, TrainingJob.model_validate({**RECIPE, "fp8_params": True}), LAYOUT)
    bf16 = estimate_training_memory(LLAMA2_70B, TrainingJob.model_validate(RECIPE), LAYOUT)
    frozen_fp8 = fp8.details["weights"]["frozen_base"]
    frozen_16 = bf16.details["weights"]["frozen_base"]
    # the matrices drop from 2 bytes to 1; embeddings, norms and the LM head stay 16-bit
    assert frozen_16 - frozen_fp8 == pytest.approx(matrices * 1.0, rel=1e-6)
    assert frozen_fp8 / GIB == pytest.approx(64.7, abs=0.1)  # before: 128.5 GiB
    assert bf16.total_bytes - fp8.total_bytes == pytest.approx(matrices, rel=0.01)
    assert any("fp8_params" in n for n in fp8.assumptions["notes"])


def test_fp8_params_needs_an_fp8_lora_run() -> None:
    with pytest.raises(ValueError, match="fp8_params"):
        TrainingJob.model_validate({**RECIPE, "precision": "bf16", "fp8_params": True})
    with pytest.raises(InputError, match="fp8_params"):
        recipe_job_fields("fp8_params=true", method="full")
    assert recipe_job_fields("fp8_params=true", method="lora") == {"fp8_params": True}


def test_memory_cli_takes_fp8_params_and_refuses_it_without_fp8() -> None:
    runner = CliRunner()
    base = ["memory", "train", "--model", "llama2-70b", "--method", "lora", "--lora-rank", "16", "--lora-targets",
            "q,k,v,o", "--seq-len", "4096", "--micro-batch", "1", "--recompute", "full"]
    ok = runner.invoke(app, [*base, "--precision", "fp8", "--fp8-params", "--json"])
    assert ok.exit_code == 0, ok.output
    res = runner.invoke(app, [*base, "--precision", "bf16", "--fp8-params"])
    exited(res, 2)
    assert "fp8_params" in res.output
