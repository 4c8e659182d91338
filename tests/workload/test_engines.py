"""Engine profiles: shipped data, documented defaults, overrides and bad names."""

from __future__ import annotations

import pytest

from gpuplan.errors import InputError
from gpuplan.workload.engines import ENGINE_TERMS, engine, engine_ids, hardware_terms, load_engines


def test_all_engines_ship_with_every_term() -> None:
    assert set(engine_ids()) == {"vllm", "sglang", "trtllm", "lmdeploy", "mindie", "mindie_splitfuse", "generic",
                                "hf_transformers"}
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


# --- engine x hardware terms ---------------------------------------------------------------


def test_hardware_terms_replace_the_engine_default_on_their_parts() -> None:
    v = engine("vllm")
    on_ascend = v.for_accelerator("ascend-910b3")  # a glob ("ascend-910b*") covers the 910B bins
    assert on_ascend.value("layer_overhead_s") == 0.001
    assert on_ascend.terms["layer_overhead_s"].scope == "vllm-ascend"
    assert on_ascend.value("gemm_efficiency") == v.value("gemm_efficiency")  # terms no entry names stay
    mindie = engine("mindie").for_accelerator("ascend-910b")
    assert mindie.value("layer_overhead_s") == 0.0005  # MindIE on Ascend is not vllm-ascend
    rocm = v.for_accelerator("mi300x-192gb")
    assert rocm.value("gemm_efficiency_8bit") == 0.35 and rocm.terms["gemm_efficiency_8bit"].scope == "vllm-rocm-mi300"


def test_terms_for_every_engine_apply_to_each_engine_on_the_part() -> None:
    for eid in ("sglang", "vllm", "hf_transformers"):
        assert engine(eid).for_accelerator("h20-96gb").value("attention_efficiency") == 0.65


def test_parts_and_engines_no_entry_names_fall_back_to_the_engine_default() -> None:
    v = engine("vllm")
    assert v.for_accelerator("h100-sxm5-80gb") == v
    assert engine("hf_transformers").for_accelerator("mi300x-192gb").value("layer_overhead_s") == \
        engine("hf_transformers").value("layer_overhead_s")  # the vllm-rocm-mi300 entry names vllm only
    # regression: eager transformers on torch_npu was planned at CUDA's launch time; it pays at least vllm-ascend's
    assert engine("hf_transformers").for_accelerator("ascend-910b").value("layer_overhead_s") == \
        engine("vllm").for_accelerator("ascend-910b").value("layer_overhead_s") > \
        engine("hf_transformers").value("layer_overhead_s")
    assert engine("trtllm").for_accelerator("mi300x-192gb").value("gemm_efficiency_8bit") == 0.60


def test_user_overrides_win_over_hardware_terms() -> None:
    e = engine("vllm", terms={"layer_overhead_s": 0.0002}).for_accelerator("ascend-910b")
    assert e.value("layer_overhead_s") == 0.0002 and e.terms["layer_overhead_s"].overridden


def test_every_hardware_term_is_sourced_and_says_what_it_was_tuned_on() -> None:
    assert hardware_terms()
    for h in hardware_terms():
        for t in h.terms.values():
            assert t.source and t.explanation and t.note
            # a term read from an engine's source (moe_layer_overhead_ratio: operators counted) is not tuned: no
            # rows to name, and cross-validation keeps it in every fold (validate.serving_terms.engine_for)
            assert (t.tuned_on is not None and t.tuned_on.file == "inference") or "not tuned" in t.note
