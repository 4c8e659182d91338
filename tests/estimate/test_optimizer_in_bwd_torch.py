"""Optimizer steps inside backward (torchtune `optimizer_in_bwd`) against real PyTorch on the CPU (issue 13).

torchtune registers `register_post_accumulate_grad_hook` on every parameter: the hook steps that parameter's
own optimizer and frees its gradient, so gradients never pile up. gpuplan's `optimizer_in_bwd` must count
exactly the largest single gradient; without it, every gradient of the step.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.estimate.memory_train import estimate_training_memory, largest_gradient_bytes
from gpuplan.validate.torch_probe import TINY_SPECS, build_hf_model
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.params import count_params

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _live_gradient_peak(in_bwd: bool, spec_name: str) -> tuple[int, int]:
    """(peak bytes of live gradients during one step, bytes of all parameters) of a tiny HF model in bf16."""
    model = build_hf_model(TINY_SPECS[spec_name])
    params = [p for p in model.parameters() if p.requires_grad]
    peak = 0

    def live() -> int:
        return sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)

    if in_bwd:
        optims = {p: torch.optim.AdamW([p], lr=1e-4) for p in params}

        def hook(p: object) -> None:
            nonlocal peak
            peak = max(peak, live())
            optims[p].step()  # type: ignore[index]
            optims[p].zero_grad(set_to_none=True)  # type: ignore[index]

        for p in params:
            p.register_post_accumulate_grad_hook(hook)
    ids = torch.randint(0, TINY_SPECS[spec_name].vocab_size, (2, 32))
    model(input_ids=ids, labels=ids).loss.backward()
    peak = max(peak, live())
    return peak, sum(p.numel() * p.element_size() for p in params)


@pytest.mark.parametrize("spec_name", ["llama-gqa", "mixtral-moe"])
def test_one_gradient_live_at_a_time_is_the_largest_parameter(spec_name: str) -> None:
    spec = TINY_SPECS[spec_name]
    in_bwd, total = _live_gradient_peak(True, spec_name)
    all_grads, _ = _live_gradient_peak(False, spec_name)
    assert all_grads == total and in_bwd < total
    job = TrainingJob(seq_len=32, micro_batch=2, optimizer_in_bwd=True)
    predicted = largest_gradient_bytes(spec, count_params(spec), job, True, True, 1, 2.0)
    assert float(predicted) == in_bwd
    mem = estimate_training_memory(spec, job, Layout())
    assert mem.gradients_bytes == pytest.approx(in_bwd)
    assert estimate_training_memory(spec, job.model_copy(update={"optimizer_in_bwd": False})).gradients_bytes \
        == pytest.approx(total)


def test_offloaded_optimizer_leaves_no_states_or_step_temporaries_on_the_device() -> None:
    spec = TINY_SPECS["llama-gqa"]
    base = TrainingJob(seq_len=32, optimizer="adamw_foreach")
    on = estimate_training_memory(spec, base)
    off = estimate_training_memory(spec, base.model_copy(update={"optimizer_offload": "cpu"}))
    assert on.optimizer_bytes > 0 and off.optimizer_bytes == 0
    assert off.details["other"].get("optimizer_step_excess", 0.0) == 0.0
    assert off.weights_bytes == on.weights_bytes and off.gradients_bytes == on.gradients_bytes
    assert off.assumptions["optimizer_offload"] == "cpu"
    assert np.isclose(on.total_bytes - off.total_bytes,
                      on.optimizer_bytes + on.details["other"].get("optimizer_step_excess", 0.0))
