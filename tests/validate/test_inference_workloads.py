"""Dataset lengths and row reading for the inference rows measured on public datasets."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.validate.inference_workloads import dataset_for_row, num_prompts, truncated_exponential


@pytest.mark.parametrize(("mean", "cap"), [(245.0, 1024), (145.0, 1024), (300.0, 2048)])
def test_truncated_exponential_has_the_requested_mean_and_bounds(mean: float, cap: int) -> None:
    d = truncated_exponential(mean, cap)
    assert d.mean == pytest.approx(mean, rel=0.01)
    x = d.sample(np.random.default_rng(0), 20000)
    assert x.min() >= 4 and x.max() <= cap
    assert float(x.mean()) == pytest.approx(mean, rel=0.05)
    assert d.quantile(0.99) > 3 * mean  # heavy right tail, as conversation lengths


def test_dataset_and_prompt_count_come_from_the_notes() -> None:
    row = {"notes": "Throughput tests: 200 ShareGPT prompts (fixed seed), outputs = dataset lengths"}
    d = dataset_for_row(row)
    assert d is not None and d.key == "sharegpt"
    assert num_prompts(row) == 200
    mix = {"notes": "Mixtral MLPerf dataset (OpenOrca+GSM8K+MBXP); server constraints"}
    d2 = dataset_for_row(mix)
    assert d2 is not None and d2.key == "mixtral mlperf dataset"  # not plain OpenOrca
    assert dataset_for_row({"notes": "no dataset here"}) is None
    assert num_prompts({"notes": "batch = cap 128 from 'max batch 128, 3000 prompts'"}) == 3000
