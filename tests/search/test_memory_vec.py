"""The vectorized candidate memory equals the one-layout estimator on every sampled candidate."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.search.candidates import LayoutChoices, generate
from gpuplan.search.memory_vec import candidate_memory_bytes
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.presets import get_preset


@pytest.mark.parametrize("preset", ["llama3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen2.5-7b"])
@pytest.mark.parametrize("method", ["full", "lora"])
def test_vector_memory_matches_scalar(preset: str, method: str) -> None:
    spec = get_preset(preset).spec
    job = TrainingJob(method=method, seq_len=4096, global_batch=256)  # type: ignore[arg-type]
    c = generate(spec, LayoutChoices(devices=[16, 64, 256]), seq_len=4096, global_batch=256)
    assert len(c) > 50
    vec = candidate_memory_bytes(spec, job, c)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(c), size=25, replace=False):
        r = c.row(int(i))
        lay = Layout(tp=r["tp"], pp=r["pp"], dp=r["dp"], cp=r["cp"], ep=r["ep"], vpp=r["vpp"],
                     zero_stage=r["zero"])  # type: ignore[arg-type]
        one = estimate_training_memory(
            spec, job.model_copy(update={"micro_batch": r["micro_batch"], "recompute": r["recompute"]}), lay)
        # the planner looks at the first and last rank; the estimator at all ranks
        assert vec[i] == pytest.approx(one.total_bytes, rel=1e-9), r
