"""seq_len_warning: one line past max_position_embeddings, worded for RoPE and for learned positions."""

from __future__ import annotations

from gpuplan.workload.context import seq_len_warning
from gpuplan.workload.presets import load_model


def test_seq_len_warning() -> None:
    llama = load_model("llama2-7b")  # 4096 positions, RoPE
    assert seq_len_warning(llama, 4096) is None
    text = seq_len_warning(llama, 4097)
    assert text is not None and "4097" in text and "4096" in text and "\n" not in text
    gpt3 = load_model("gpt3-175b")  # 2048 learned positions
    learned = seq_len_warning(gpt3, 4096, "zh", option="--context")
    assert learned is not None and "--context 4096" in learned and "位置嵌入" in learned
