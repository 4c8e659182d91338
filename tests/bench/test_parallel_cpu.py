"""Tensor and pipeline parallelism of the training step on the CPU (torchrun, gloo): the same model, the same loss."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.bench.layout import BenchLayout
from gpuplan.bench.parallel import stage_layers
from gpuplan.workload.model_spec import ModelSpec

SPEC = ModelSpec(name="tiny-tp", num_layers=4, hidden_size=64, num_heads=4, num_kv_heads=2, ffn_hidden_size=128,
                 vocab_size=256, max_position_embeddings=64)


def test_pipeline_stages_split_the_layers_evenly() -> None:
    assert [stage_layers(4, 2, s) for s in (0, 1)] == [(0, 2), (2, 4)]
    assert [stage_layers(5, 2, s) for s in (0, 1)] == [(0, 3), (3, 5)]  # the earlier stage takes the extra layer
    assert [stage_layers(7, 3, s) for s in range(3)] == [(0, 3), (3, 5), (5, 7)]
    with pytest.raises(ValueError):
        stage_layers(2, 4, 0)  # a stage without a layer


@pytest.mark.torch
def test_pipeline_stages_hold_the_whole_models_weights() -> None:
    torch = pytest.importorskip("torch")
    from gpuplan.bench.llama import build_torch_llama, causal_lm_loss

    whole = build_torch_llama(SPEC)
    first, last = build_torch_llama(SPEC, stage=(0, 2)), build_torch_llama(SPEC, stage=(2, 4))
    ids = torch.randint(0, SPEC.vocab_size, (2, 32), generator=torch.Generator().manual_seed(0))
    assert first.lm_head is None and last.embed is None and list(last.layers) == ["2", "3"]
    assert torch.equal(whole.layers[3].down.weight, last.layers["3"].down.weight)
    assert causal_lm_loss(last(first(ids)), ids).item() == pytest.approx(whole(input_ids=ids, labels=ids).loss.item(),
                                                                          rel=1e-6)


def _run(**axes: int) -> Any:
    from gpuplan.bench.backend import detect_backend
    from gpuplan.bench.train_dist import launch_train

    layout = BenchLayout(dp=1, zero=0, micro_batch=2, microbatches=2, recompute="none", **axes)
    return launch_train(detect_backend("cpu"), SPEC.model_dump_json(), layout, seq_len=32, warmup=1, repeats=2,
                        timeout_s=120, use_transformers=False)


@pytest.fixture(scope="module")
def reference() -> Any:
    """One process, the whole model: the loss TP and PP must reproduce (the same seed and data)."""
    pytest.importorskip("torch")
    res = _run()
    assert res.error is None and res.nproc == 1, res.error
    return res


@pytest.mark.torch
def test_tensor_parallel_two_ranks_train_the_same_model(reference: Any) -> None:
    res = _run(tp=2)
    assert res.error is None, res.error
    assert res.nproc == 2 and res.dist_backend == "gloo" and "TP2 (DTensor" in res.implementation
    assert len(res.samples) == 2 and all(s > 0 for s in res.samples)
    assert len(res.losses) == 3  # one warm-up and two timed steps
    # first step: the same model on the same data (bf16 GEMMs split over two ranks: rounding only)
    assert res.losses[0] == pytest.approx(reference.losses[0], rel=1e-3)
    assert res.losses[2] == pytest.approx(reference.losses[2], rel=1e-3)  # and the same AdamW updates
    assert res.losses[2] < res.losses[0]


@pytest.mark.torch
def test_pipeline_parallel_two_stages_train_the_same_model(reference: Any) -> None:
    res = _run(pp=2)
    assert res.error is None, res.error
    assert res.nproc == 2 and "PP2 (Schedule1F1B, 2 micro-batches" in res.implementation
    assert len(res.samples) == 2 and all(s > 0 for s in res.samples)
    # the stages hold the same weights and the schedule's micro-batches are the accumulation steps
    assert res.losses[0] == pytest.approx(reference.losses[0], rel=1e-5)
    assert res.losses[2] == pytest.approx(reference.losses[2], rel=1e-4)
