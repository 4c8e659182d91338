"""Engine profiles: shipped data, documented defaults, overrides and bad names."""

from __future__ import annotations

import pytest

from gpuplan.errors import InputError
from gpuplan.workload.engines import ENGINE_TERMS, engine, engine_ids, load_engines


def test_all_six_engines_ship_with_every_term() -> None:
    assert set(engine_ids()) == {"vllm", "sglang", "trtllm", "lmdeploy", "mindie", "generic"}
    for prof in load_engines().values():
        assert set(prof.terms) == set(ENGINE_TERMS)
        assert all(t.source and t.explanation for t in prof.terms.values())


def test_vllm_documented_defaults() -> None:
    v = engine("vllm")
    # vLLM engine args: gpu_memory_utilization 0.9, block_size 16, max_num_seqs 256
    assert (v.gpu_memory_fraction, v.kv_block_tokens, v.max_num_seqs) == (0.9, 16, 256)
    assert v.chunked_prefill and v.scheduling == "decode_first"


def test_overrides_are_applied_and_marked() -> None:
    e = engine("vllm", terms={"gemm_efficiency": 0.5}, settings={"max_num_seqs": 64})
    assert e.value("gemm_efficiency") == 0.5
    assert e.terms["gemm_efficiency"].overridden
    assert e.terms["gemm_efficiency"].source == "user override"
    assert e.max_num_seqs == 64
    assert not engine("vllm").terms["gemm_efficiency"].overridden  # the shipped profile is untouched


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"terms": {"gemm_eff": 0.5}}, "engine term"),
    ({"terms": {"gemm_efficiency": 1.5}}, "engine term gemm_efficiency"),
    ({"settings": {"max_seqs": 4}}, "engine setting"),
    ({"settings": {"max_num_seqs": 0}}, "max_num_seqs"),
])
def test_bad_overrides_raise_input_error(kwargs: dict[str, dict[str, float]], field: str) -> None:
    with pytest.raises(InputError) as err:
        engine("vllm", **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_unknown_engine_suggests_close_match() -> None:
    with pytest.raises(InputError, match="Did you mean vllm"):
        engine("vlm")
