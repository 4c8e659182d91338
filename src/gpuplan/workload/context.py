"""Sequence length against the model's trained context: one check for every command that takes --seq-len.

A sequence longer than `max_position_embeddings` runs positions the model was never trained on
(RoPE models degrade without a scaling such as YaRN or a context-extension run; models with
learned absolute positions have no embedding past it). gpuplan still estimates the asked length,
so this is a warning, not an error.
"""

from __future__ import annotations

from gpuplan.i18n import tr
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["seq_len_warning"]


def seq_len_warning(spec: ModelSpec, seq_len: int, lang: str = "en", *, option: str = "--seq-len") -> str | None:
    """One line when `seq_len` exceeds the model's `max_position_embeddings`, else None.

    `option` names the flag in the text (--seq-len for training, --context for serving)."""
    limit = spec.max_position_embeddings
    if seq_len <= limit:
        return None
    if spec.position_embedding == "learned":
        return tr("warn.seq_len.learned", lang, option=option, seq_len=seq_len, model=spec.name, limit=limit)
    return tr("warn.seq_len.long", lang, option=option, seq_len=seq_len, model=spec.name, limit=limit)
