"""Model presets: one YAML file per model under `data/models/`, loaded through pydantic.

A preset holds the published config of a model (the HF config.json or paper table it
cites) as a `ModelSpec`, and optionally the parameter counts its authors publish, which
the tests check our counts against.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan import yamlio
from gpuplan.errors import InputError, unknown_name
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["Preset", "PublishedCounts", "get_preset", "list_presets", "load_model"]


class PublishedCounts(BaseModel):
    """Parameter counts as the model's authors state them (for golden tests)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total_params: int | None = Field(default=None, gt=0)
    active_params: int | None = Field(default=None, gt=0)
    rel_tolerance: float = Field(default=0.01, gt=0, description="rounding of the published figure")
    source: str = Field(min_length=1)
    note: str = ""


class Preset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    aliases: tuple[str, ...] = ()
    as_of: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    spec: ModelSpec
    published: PublishedCounts | None = None


def _data_dir() -> Path:
    return Path(str(resources.files("gpuplan.workload") / "data" / "models"))


@cache
def _load_all() -> dict[str, Preset]:
    presets: dict[str, Preset] = {}
    for path in sorted(_data_dir().glob("*.yaml")):
        raw = yamlio.safe_load(path.read_text(encoding="utf-8"))
        try:
            preset = Preset.model_validate(raw)
        except ValidationError as exc:  # a broken shipped file is a bug: say which file
            raise RuntimeError(f"invalid model preset {path.name}: {exc}") from exc
        for key in (preset.id, *preset.aliases):
            if key in presets:
                raise RuntimeError(f"duplicate model preset id or alias {key!r} in {path.name}")
            presets[key] = preset
    return presets


def list_presets() -> list[Preset]:
    """Every preset once, sorted by id."""
    seen = {p.id: p for p in _load_all().values()}
    return [seen[k] for k in sorted(seen)]


def get_preset(model_id: str) -> Preset:
    """The preset with this id or alias; InputError with close matches otherwise."""
    table = _load_all()
    key = model_id.strip().lower()
    if key in table:
        return table[key]
    raise unknown_name("model", model_id, {p.id for p in table.values()})


def load_model(model: str | Path) -> ModelSpec:
    """A preset id, a path to a Hugging Face config.json, or a model folder holding one, as a ModelSpec."""
    text = str(model)
    path = Path(text)
    if path.is_dir() and (path / "config.json").is_file():  # a downloaded model's folder
        path, text = path / "config.json", str(path / "config.json")
    elif path.is_dir() and text not in _load_all():
        raise InputError(
            field="model",
            value=text,
            allowed="a preset id (gpuplan model list), a config.json path or a folder holding config.json",
            hint=f"no config.json in {text}",
        )
    if text.endswith(".json") or path.is_file():
        from gpuplan.workload.hf_config import spec_from_hf_config_file

        return spec_from_hf_config_file(path)
    if "/" in text and not Path(text).exists():
        raise InputError(
            field="model",
            value=text,
            allowed="a preset id (gpuplan model list) or a local config.json path",
            hint="gpuplan never downloads: save the model's config.json and pass its path",
        )
    return get_preset(text).spec
