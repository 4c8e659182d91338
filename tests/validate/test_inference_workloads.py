"""Dataset lengths and row reading for the inference rows measured on public datasets."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.errors import GpuplanError
from gpuplan.validate.inference_workloads import _DatasetsFile, dataset, truncated_exponential
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


@pytest.mark.parametrize("key", ["mlperf_mixtral", "mlperf_openorca", "sharegpt"])
def test_each_datasets_lengths_give_back_its_published_means(key: str) -> None:
    d = dataset(key)
    rng = np.random.default_rng(1)
    assert float(d.input_lengths.sample(rng, 40000).mean()) == pytest.approx(d.input_mean, rel=0.04)
    assert float(d.output_lengths.sample(rng, 40000).mean()) == pytest.approx(d.output_mean, rel=0.04)


def test_mlperf_prompts_are_the_datasets_own_not_a_guess() -> None:
    """Regression: the MLPerf rows took 300-token mean prompts for both datasets; the datasets' token counts
    say 427 (Mixtral: a third are ~650-token GSM8K few-shot prompts) and 222 (Llama-2 OpenOrca)."""
    mix, orca = dataset("mlperf_mixtral"), dataset("mlperf_openorca")
    assert mix.input_mean == pytest.approx(427.4) and orca.input_mean == pytest.approx(222.3)
    x = mix.input_lengths.sample(np.random.default_rng(0), 30000)
    assert 0.3 < float(((x >= 630) & (x <= 710)).mean()) < 0.45  # the GSM8K mode
    assert x.max() <= 1948 and mix.input_max == 1948


def test_datasets_file_rejects_unknown_keys_and_half_given_shapes() -> None:
    side = {"mean_tokens": 100.0, "cap_tokens": 1024, "source": "s"}
    base = {"schema_version": 1, "as_of": "2026-12-03", "probabilities": [0.0, 1.0],
            "datasets": [{"key": "k", "source": "s", "input": side, "output": side}]}
    _DatasetsFile.model_validate(base)
    with pytest.raises(ValueError, match="extra"):
        _DatasetsFile.model_validate({**base, "mean_input": 3})
    both = {**side, "quantile_tokens": [1, 5]}
    with pytest.raises(ValueError, match="one of them"):
        _DatasetsFile.model_validate({**base, "datasets": [{"key": "k", "source": "s", "input": both, "output": side}]})
    short = {"mean_tokens": 3.0, "quantile_tokens": [1, 2, 3], "source": "s"}
    with pytest.raises(ValueError, match="one quantile per probability"):
        _DatasetsFile.model_validate({**base, "datasets": [
            {"key": "k", "source": "s", "input": short, "output": side}]})
