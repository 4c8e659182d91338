"""Dataset lengths and row reading for the inference rows measured on public datasets."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.errors import GpuplanError
from gpuplan.validate.inference_workloads import dataset, truncated_exponential
from gpuplan.validate.row_settings import resolve_row


@pytest.mark.parametrize(("mean", "cap"), [(245.0, 1024), (145.0, 1024), (300.0, 2048)])
def test_truncated_exponential_has_the_requested_mean_and_bounds(mean: float, cap: int) -> None:
    d = truncated_exponential(mean, cap)
    assert d.mean == pytest.approx(mean, rel=0.01)
    x = d.sample(np.random.default_rng(0), 20000)
    assert x.min() >= 4 and x.max() <= cap
    assert float(x.mean()) == pytest.approx(mean, rel=0.05)
    assert d.quantile(0.99) > 3 * mean  # heavy right tail, as conversation lengths


def test_dataset_and_prompt_count_come_from_the_rows_settings_not_their_notes() -> None:
    row = {"id": "X1", "notes": "Throughput tests: 200 ShareGPT prompts",
           "settings": "dataset=sharegpt;num_prompts=200"}
    _, st = resolve_row(row)
    assert st.dataset == "sharegpt" and st.num_prompts == 200
    assert dataset("mlperf_mixtral").output_mean < dataset("mlperf_openorca").output_mean  # not plain OpenOrca
    # words in the notes choose nothing
    _, bare = resolve_row({"id": "X2", "notes": "200 ShareGPT prompts, Mixtral MLPerf dataset"})
    assert bare.dataset is None and bare.num_prompts is None
    with pytest.raises(GpuplanError, match="unknown dataset"):
        dataset("lmsys-chat")
