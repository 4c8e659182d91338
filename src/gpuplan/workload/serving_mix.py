"""Several models served by one team: the `plan infer --workload FILE.yaml` file (docs/inference.md, "Several models").

```yaml
models:
  - model: qwen3-32b        # a model id or preset (gpuplan model list)
    qps: 5                  # requests per second
    input_len: 2000         # or input_dist: lognormal:2000:0.8 (as --input-dist)
    output_len: 300         # or output_dist
    ttft_p99_s: 2           # the model's own SLO
    tpot_p99_s: 0.05
  - model: qwen3-8b
    name: qwen3-8b-rag      # optional: a name per entry (default the model id), unique in the file
    ...
```

Validated by pydantic models that reject unknown keys; every error names the field (`models[1].qps`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from gpuplan import yamlio
from gpuplan.errors import InputError

__all__ = ["MAX_MODELS", "MAX_WORKLOAD_BYTES", "ServedModel", "ServingMix", "read_workload"]

MAX_MODELS = 16  # models in one file: each is planned on its own (one planner run each)
MAX_WORKLOAD_BYTES = 64 * 1024


class ServedModel(BaseModel):
    """One model of the mix: its rate, lengths and p99 SLO (the options of `plan infer` for one model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    name: str | None = Field(default=None, min_length=1, max_length=64)
    qps: float = Field(gt=0, le=1e6)
    input_len: int | None = Field(default=None, gt=0)
    output_len: int | None = Field(default=None, gt=0)
    input_dist: str | None = None
    output_dist: str | None = None
    ttft_p99_s: float = Field(gt=0)
    tpot_p99_s: float = Field(gt=0)

    @field_validator("input_dist", "output_dist")
    @classmethod
    def _one_of_each(cls, v: str | None, info: ValidationInfo) -> str | None:
        fixed = str(info.field_name).replace("_dist", "_len")
        if v is not None and info.data.get(fixed) is not None:
            raise ValueError(f"left out when {fixed} is given (one of {fixed}, every request that long, or "
                             f"{info.field_name}, a distribution)")
        return v

    @property
    def label(self) -> str:
        return self.name or self.model


class ServingMix(BaseModel):
    """The workload file: the models one team serves, each at its own rate and SLO."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[ServedModel] = Field(min_length=1, max_length=MAX_MODELS)

    @field_validator("models")
    @classmethod
    def _unique(cls, v: list[ServedModel]) -> list[ServedModel]:
        seen: dict[str, int] = {}
        for i, m in enumerate(v):
            if m.label in seen:
                raise ValueError(f"distinct names: models[{seen[m.label]}] and models[{i}] are both {m.label!r}; "
                                 "give one a `name`")
            seen[m.label] = i
        return v


def read_workload(text: str, *, label: str = "workload") -> ServingMix:
    """The workload file's text, validated; InputError naming the field (`workload.models[1].qps`) otherwise."""
    try:
        raw: Any = yamlio.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - any YAML error is the file's, reported in one line
        raise InputError(field="workload", value=label, allowed="a YAML file with a list `models`",
                         hint=f"the YAML does not parse: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise InputError(field="workload", value=label, allowed="a YAML mapping with a list `models`",
                         hint="start the file with 'models:' (docs/inference.md, 'Several models on one fleet')")
    try:
        return ServingMix.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.get("loc", ()))
        rule, value = first["msg"].removeprefix("Value error, "), first.get("input")
        if isinstance(value, (dict, list)):  # a whole entry: its field is named, its text would only be long
            value = "..."
        if first["type"] == "missing":
            rule, value = "a value: the field is required", None
        elif first["type"] == "extra_forbidden":
            rule = ("a known key: models; per model: model, name, qps, input_len, output_len, input_dist, "
                    "output_dist, ttft_p99_s, tpot_p99_s")
        raise InputError(field=f"workload{loc}", value=value, allowed=rule,
                         hint=f"fix {label} (docs/inference.md, 'Several models on one fleet')") from None
