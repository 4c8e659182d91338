"""Model presets: the required ids exist, each matches its published config.json, and each
agrees with the parameter counts its authors publish within the tolerance the preset states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.errors import InputError
from gpuplan.workload.hf_config import spec_from_hf_config
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset, list_presets, load_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"

REQUIRED = [
    "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.1-70b",
    "llama3.1-405b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b",
    "qwen3-30b-a3b", "qwen3-235b-a22b", "chatglm3-6b", "glm4-9b", "deepseek-v2-lite", "deepseek-v3",
    "mixtral-8x7b", "mixtral-8x22b", "baichuan2-13b", "yi-34b", "internlm2.5-7b", "gpt3-175b",
]
PRESET_IDS = [p.id for p in list_presets()]


def test_every_required_preset_exists() -> None:
    assert set(REQUIRED) <= set(PRESET_IDS)


@pytest.mark.parametrize("preset_id", PRESET_IDS)
def test_preset_matches_its_published_config(preset_id: str) -> None:
    """The preset is what the importer reads from the shipped config.json, field by field."""
    preset = get_preset(preset_id)
    cfg = json.loads((FIXTURES / f"{preset_id}.json").read_text(encoding="utf-8"))
    imported = spec_from_hf_config(cfg, name=preset.spec.name)
    skip = {"name", "source"}
    assert imported.model_dump(exclude=skip) == preset.spec.model_dump(exclude=skip)
    assert count_params(imported).total == count_params(preset.spec).total
    assert preset.spec.source, "every preset cites where its numbers come from"


@pytest.mark.parametrize("preset_id", PRESET_IDS)
def test_published_parameter_counts(preset_id: str) -> None:
    preset = get_preset(preset_id)
    pub = preset.published
    assert pub is not None, f"{preset_id} has no published counts"
    counts = count_params(preset.spec)
    checks = [("total", counts.total, pub.total_params)]
    if preset.spec.moe is not None:
        assert pub.active_params is not None, f"MoE preset {preset_id} needs a published active count"
    checks.append(("active", counts.active, pub.active_params))
    for what, ours, published in checks:
        if published is None:
            continue
        err = ours / published - 1
        print(f"{preset_id} {what}: ours {ours:,} published {published:,} error {err:+.2%} "
              f"(tolerance {pub.rel_tolerance:.1%}; {pub.source})")
        assert abs(err) <= pub.rel_tolerance


@pytest.mark.parametrize(
    ("alias", "preset_id"),
    [("Meta-Llama-3.1-70B", "llama3.1-70b"), ("qwen2.5-72b-instruct", "qwen2.5-72b"),
     ("Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"), ("DeepSeek-R1", "deepseek-v3"), ("GPT-3", "gpt3-175b")],
)
def test_aliases_resolve(alias: str, preset_id: str) -> None:
    assert get_preset(alias).id == preset_id
    assert load_model(alias) == get_preset(preset_id).spec


def test_unknown_preset_suggests_close_ids() -> None:
    with pytest.raises(InputError) as info:
        get_preset("qwen2.5-71b")
    assert "qwen2.5-72b" in str(info.value)
