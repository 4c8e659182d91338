"""The public API is small, sorted, and every listed name exists."""

from __future__ import annotations

import gpuplan


def test_all_is_sorted_and_importable() -> None:
    names = [n for n in gpuplan.__all__ if n != "__version__"]
    assert names == sorted(names)
    for name in gpuplan.__all__:
        assert hasattr(gpuplan, name), name


def test_estimate_through_the_public_api() -> None:
    spec = gpuplan.get_preset("qwen3-8b").spec
    mem = gpuplan.estimate_training_memory(spec, gpuplan.TrainingJob(method="lora", seq_len=1024),
                                           gpuplan.Layout(dp=2, zero_stage=2))
    assert 0 < mem.params_trainable < mem.params_total
    assert gpuplan.kv_bytes_per_token(spec) == 36 * 2 * 8 * 128 * 2
