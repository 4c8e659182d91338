"""LoRA with modules trained in full (PEFT modules_to_save) against real PEFT on the CPU (issue 13).

PEFT wraps each listed module in a ModulesToSaveWrapper: the original stays frozen and a deep copy
is trained. gpuplan's `trainable_extra` must count the same parameters, in the module's dtype.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.memory_train import estimate_training_memory, trainable_params
from gpuplan.validate.torch_probe import TINY_SPECS, build_hf_model
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.params import count_params

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

TARGETS = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
           "down": "down_proj"}


@pytest.mark.parametrize("extra", [(), ("embed",), ("head",), ("embed", "head")])
def test_trainable_embed_and_head_count_as_peft_counts_them(extra: tuple[str, ...]) -> None:
    spec = TINY_SPECS["llama-gqa"]
    model = build_hf_model(spec)
    save = [{"embed": "embed_tokens", "head": "lm_head"}[e] for e in extra]
    cfg = peft.LoraConfig(r=8, lora_alpha=16, target_modules=list(TARGETS.values()), modules_to_save=save or None)
    wrapped = peft.get_peft_model(model, cfg)
    trainable = [p for p in wrapped.parameters() if p.requires_grad]
    copies = sum(p.numel() for n, p in wrapped.named_parameters() if p.requires_grad and "modules_to_save" in n)
    job = TrainingJob(method="lora", lora_rank=8, lora_targets=tuple(TARGETS), trainable_extra=extra,  # type: ignore[arg-type]
                      seq_len=64)
    assert trainable_params(spec, count_params(spec), job) == sum(p.numel() for p in trainable)
    mem = estimate_training_memory(spec, job)
    copy_dtype_bytes = {p.dtype.itemsize for n, p in wrapped.named_parameters() if "modules_to_save" in n} or {2}
    assert copy_dtype_bytes == {2}  # the copy keeps the bf16 dtype of the module it copies
    # the trainable copies: weights and gradients at 2 bytes, AdamW's two states in the parameter's dtype
    assert mem.details["weights"].get("trainable_copies", 0.0) == pytest.approx(2.0 * copies)
    assert mem.details["gradients"].get("trainable_copies", 0.0) == pytest.approx(2.0 * copies)
    assert mem.details["optimizer"].get("trainable_copies", 0.0) == pytest.approx(4.0 * copies)
    # the frozen originals stay where they were: total weights grow by exactly the copies
    base = estimate_training_memory(spec, job.model_copy(update={"trainable_extra": ()}))
    assert mem.weights_bytes - base.weights_bytes == pytest.approx(2.0 * copies)


def test_torch_adamw_keeps_its_states_in_the_parameter_dtype() -> None:
    """The 2 x dtype optimizer bytes of a bf16 trainable copy are what torch.optim.AdamW allocates."""
    p = torch.nn.Parameter(torch.zeros(1000, dtype=torch.bfloat16))
    opt = torch.optim.AdamW([p], lr=1e-3)
    p.grad = torch.ones_like(p)
    opt.step()
    st = opt.state[p]
    assert st["exp_avg"].dtype == torch.bfloat16 and st["exp_avg_sq"].dtype == torch.bfloat16
