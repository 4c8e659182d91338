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


def _llama7b_server_row(rate: int, settings: str) -> dict[str, str]:
    return {"id": "X-server", "model": "llama2-7b", "accelerator": "h100-sxm5-80gb", "num_accels": "8", "tp": "1",
            "pp": "1", "engine": "trtllm", "weight_precision": "fp8", "kv_precision": "fp8", "batch": str(rate),
            "scenario": "server", "metric": "requests_per_s", "value": str(rate), "settings": settings}


def test_a_server_rows_stated_prompt_count_sets_the_simulated_arrivals() -> None:
    """`num_prompts` of a server row is the number of Poisson arrivals simulated (split over the replicas), as it is
    the number of queued prompts of an offline row. Before: the server path drew SERVER_REQUESTS (3000) whatever
    the row stated, so an MLPerf Server run of 2400 s (hundreds of thousands of queries) ran as 3000."""
    from gpuplan.estimate.infer_step import step_cost_model
    from gpuplan.hardware import load_catalog
    from gpuplan.validate.inference_workloads import simulate_row
    from gpuplan.workload.engines import engine
    from gpuplan.workload.jobs import serving_layout
    from gpuplan.workload.presets import load_model

    cat = load_catalog()
    acc = cat.accelerator("h100-sxm5-80gb")
    eng = engine("trtllm").on_part(acc)
    model = step_cost_model(load_model("llama2-7b"), accelerator=acc, layout=serving_layout(tp=1), weights="fp8",
                            kv_dtype="fp8", engine=eng)
    m = simulate_row(model, eng, dataset("mlperf_openorca"), scenario="server", rate_or_cap=5.0, prompts=700)
    assert m.requests == 700
    default = simulate_row(model, eng, dataset("mlperf_openorca"), scenario="server", rate_or_cap=5.0, prompts=None)
    assert default.requests == 3000


def test_a_server_rows_rate_is_split_over_the_replicas_unrounded() -> None:
    """A server row's rate goes to each replica as rate / replicas, a fraction if need be: 4 req/s over 8 replicas
    is 0.5 req/s each, so the deployment serves about 4 req/s. Before: the share was rounded to a whole number
    (at least 1), so the row was simulated at 8 req/s (and MLPerf's 101 req/s over 8 GPUs at 13 each, not
    12.625: 3% more load on a run near saturation)."""
    from gpuplan.hardware import load_catalog
    from gpuplan.validate.inference_cases import evaluate_inference_row

    r = evaluate_inference_row(_llama7b_server_row(4, "dataset=mlperf_openorca;num_prompts=4000"), load_catalog())
    assert r.predicted == pytest.approx(4.0, rel=0.1)
