"""Training-framework profiles (workload/data/frameworks.yaml): loading, names, the layouts each offers."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from gpuplan.errors import InputError
from gpuplan.hardware.schema_devices import FrameworkSupport
from gpuplan.search.candidates import family_choices
from gpuplan.workload.frameworks import FrameworkId, framework, load_frameworks
from gpuplan.workload.jobs import TrainingJob


def test_every_profile_is_sourced_and_names_a_catalog_support_field() -> None:
    profiles = load_frameworks()
    assert set(profiles) == set(get_args(FrameworkId))
    for p in profiles.values():
        assert p.source and p.as_of
        assert p.support in FrameworkSupport.model_fields
        assert (p.family == "data_parallel") == (not p.axes)
        for term in p.terms.values():
            assert term.source


def test_an_unknown_framework_names_the_field_and_the_closest_ids() -> None:
    with pytest.raises(InputError) as err:
        framework("megatrn")
    assert err.value.field == "framework" and "megatron" in str(err.value)
    with pytest.raises(ValidationError, match="framework"):
        TrainingJob(framework="megatrn")


@pytest.mark.parametrize(("fid", "kernels"), [("megatron", "fused"), ("deepspeed", "hf"), ("torchtitan", "hf"),
                                                ("mindspeed", "fused")])
def test_a_named_framework_brings_its_kernels_unless_the_job_states_them(fid: str, kernels: str) -> None:
    assert TrainingJob(framework=fid).kernels == kernels
    assert TrainingJob(framework=fid, kernels="hf").kernels == "hf"


def test_a_framework_searches_only_the_axes_it_offers() -> None:
    ds = family_choices("deepspeed", [64], 8)
    assert (tuple(ds.tp), tuple(ds.pp), tuple(ds.cp), tuple(ds.ep), tuple(ds.vpp)) == ((1,),) * 5
    assert tuple(ds.zero) == (0, 1, 3)
    mds = family_choices("megatron_deepspeed", [64], 8)
    assert tuple(mds.cp) == (1,) and tuple(mds.ep) == (1,) and tuple(mds.vpp) == (1,)
    assert 8 in mds.tp and 16 in mds.pp and 3 not in mds.zero
    dual = family_choices("dualpipe", [2048], 8)
    assert tuple(dual.tp) == (1,) and 64 in dual.ep and tuple(dual.zero) == (1,)
    # the family names keep their meaning
    assert tuple(family_choices("data_parallel", [8], 8).tp) == (1,)
    assert 8 in family_choices("megatron", [8], 8).tp


def test_only_pytorch_checkpoint_stacks_stop_recomputation_early_and_say_why() -> None:
    """Full recomputation skips each layer's down projection only under PyTorch's non-reentrant checkpoint (LLM Foundry,
    torchtitan, torchtune, the transformers 5 Trainer); Megatron, NeMo, DeepSpeed, InternEvo and LLaMA-Factory (its
    use_reentrant_gc=True) rerun the whole layer; a job can state either."""
    on = {fid for fid, p in load_frameworks().items() if p.recompute_early_stop}
    assert on == {"llmfoundry", "torchtitan", "torchtune", "hf_trainer"}
    for fid in on:
        src = framework(fid).recompute_early_stop_source
        assert "NO_REENTRANT" in src or "reentrant: false" in src or "'use_reentrant': False" in src
    assert "use_reentrant_gc=True" in framework("llamafactory").recompute_early_stop_source
    assert TrainingJob(framework="hf_trainer").recompute_early_stop_on()
    assert not TrainingJob(framework="llamafactory").recompute_early_stop_on()
    assert TrainingJob(framework="llmfoundry").recompute_early_stop_on()
    assert not TrainingJob(framework="megatron").recompute_early_stop_on()
    assert not TrainingJob().recompute_early_stop_on()
    assert not TrainingJob(framework="torchtune", recompute_early_stop=False).recompute_early_stop_on()
    assert TrainingJob(framework="internevo", recompute_early_stop=True).recompute_early_stop_on()


@pytest.mark.parametrize(("name", "value"), [("main_grad_fp32", True), ("moe_act_input_fp8", True),
                                             ("adamw_variant", "adamw_bf16_moments")])
def test_a_storage_fact_without_its_source_is_rejected(name: str, value: object) -> None:
    """fp32 main gradients, fp8 SwiGLU inputs and an AdamW variant change a memory estimate: a profile names where
    each comes from (Megatron-LM docs, the DeepSeek-V3 report) or does not load."""
    data = framework("megatron").model_dump()
    data.update({"main_grad_fp32": False, "main_grad_fp32_source": "", name: value, f"{name}_source": ""})
    with pytest.raises(ValidationError, match=f"{name} needs {name}_source"):
        type(framework("megatron")).model_validate(data)
    data[f"{name}_source"] = "a source"
    assert getattr(type(framework("megatron")).model_validate(data), name) == value
    # the shipped profiles that set them say why
    for p in load_frameworks().values():
        if getattr(p, name):
            assert getattr(p, f"{name}_source"), p.id
