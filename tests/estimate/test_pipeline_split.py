"""Pipeline stage splits: the heaviest stage over the mean (estimate/pipeline_split.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuplan.estimate.flops import forward_flops
from gpuplan.estimate.pipeline_split import stage_imbalance
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.model_spec import ModelSpec

# BLOOM-176B (bigscience tr11 README): 70 layers, hidden 14336, 112 heads, GELU 4h MLP, vocabulary 250,880
BLOOM = ModelSpec(name="bloom-176b", num_layers=70, hidden_size=14336, num_heads=112, ffn_hidden_size=57344,
                  vocab_size=250880, mlp="gelu", norm="layernorm")


def _layer_and_head(spec: ModelSpec, seq: int) -> tuple[float, float]:
    fw = forward_flops(spec, seq, causal=True)
    return (fw.total - fw.lm_head) / spec.num_layers, fw.lm_head


def test_blooms_stated_split_by_hand() -> None:
    """BLOOM's 'type:transformer|embedding' split over 12 stages (tr11 README): [embed | 5 blocks], 10 x [6 blocks],
    [5 blocks | embed]; the last stage also runs the LM head, 2 x 14336 x 250880 FLOPs per token, about 1.4 layers."""
    layer, head = _layer_and_head(BLOOM, 2048)
    assert 1.3 < head / layer < 1.5
    mean = (70 * layer + head) / 12
    assert stage_imbalance(BLOOM, 2048, 12, "layers_and_embeddings") == pytest.approx((5 * layer + head) / mean)
    # equal layers: 70 = 10 x 6 + 2 x 5 (the first ten stages one more), the head on a 5-layer last stage
    assert stage_imbalance(BLOOM, 2048, 12, "layers") == pytest.approx(max(6 * layer, 5 * layer + head) / mean)


def test_megatron_split_puts_the_head_on_the_last_stage() -> None:
    spec = ModelSpec(name="gpt", num_layers=96, hidden_size=12288, num_heads=96, ffn_hidden_size=49152,
                     vocab_size=51200, mlp="gelu", norm="layernorm")
    layer, head = _layer_and_head(spec, 2048)
    assert stage_imbalance(spec, 2048, 8, "layers") == pytest.approx((12 * layer + head) / ((96 * layer + head) / 8))
    assert stage_imbalance(spec, 2048, 8, "balanced") == 1.0
    assert stage_imbalance(spec, 2048, 1, "layers") == 1.0


def test_an_unknown_split_is_refused() -> None:
    with pytest.raises(ValidationError, match="pp_partition"):
        TrainingJob(method="full", seq_len=2048, global_batch=64, pp_partition="even")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pp_partition"):
        stage_imbalance(BLOOM, 2048, 4, "even")


@pytest.mark.ground_truth("training.csv")
def test_bloom_runs_at_its_heaviest_stages_pace() -> None:
    """Regression: BLOOM-176B's rows (150 hardware TFLOPs per A100, 104.7 s per step) were predicted 8% fast held out:
    the step averaged the LM head over the 12 stages, but the run's split ('type:transformer|embedding', stated in
    its README) leaves the head beside 5 layers on the last stage, 8% above the mean stage. Stated, the row is
    predicted slower by that factor."""
    from pathlib import Path

    from gpuplan.estimate.calibration import load_calibration
    from gpuplan.hardware import load_catalog
    from gpuplan.validate.cases import read_rows
    from gpuplan.validate.training_cases import evaluate_training_row
    from ground_truth import GROUND_TRUTH

    row = next(r for r in read_rows(Path(GROUND_TRUTH) / "training.csv") if r["id"] == "bloom176b_tr11_tflops_gbs2048")
    cat, cal = load_catalog(use_user_dir=False), load_calibration({})
    recipe = "framework=megatron_deepspeed;attention=eager"
    copy = {**row, "id": "bloom-copy"}  # the shipped overlay states the split for the row's own id
    stated = evaluate_training_row({**copy, "settings": recipe + ";pp_partition=layers_and_embeddings"}, cat, cal)
    balanced = evaluate_training_row({**copy, "settings": recipe}, cat, cal)
    assert evaluate_training_row(row, cat, cal).predicted == pytest.approx(stated.predicted)  # the overlay states it
    layer, head = _layer_and_head(BLOOM, 2048)
    factor = (5 * layer + head) / ((70 * layer + head) / 12)
    assert balanced.predicted / stated.predicted == pytest.approx(factor, rel=0.02)
    assert abs(stated.predicted / stated.measured - 1) < abs(balanced.predicted / balanced.measured - 1)
