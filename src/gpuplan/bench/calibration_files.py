"""The user's calibration folder and the file `gpuplan calibrate` writes there (torch-free, no bench imports).

`load_user_calibration` merges every file of the folder into the shipped terms; the bench's predictor and the
planners read it, `gpuplan calibrate` (bench.calibrate) writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan import yamlio
from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration, CalibrationTerm, default_calibration
from gpuplan.hardware.overrides import user_catalog_dir

__all__ = ["CalibrationFile", "RecordedFigure", "calibration_dir", "load_user_calibration"]


class RecordedFigure(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    unit: str
    source: str
    applied: Literal[False] = False
    note: str = ""


class CalibrationFile(BaseModel):
    """One accelerator's measured terms, written by `gpuplan calibrate`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    accelerator: str
    from_result: str
    measured_at: str
    written_at: str
    terms: dict[str, CalibrationTerm] = Field(default_factory=dict)
    recorded: dict[str, RecordedFigure] = Field(default_factory=dict)


def calibration_dir() -> Path:
    """The user's calibration folder (it need not exist): beside the user catalog folder."""
    return user_catalog_dir().parent / "calibration"


def load_user_calibration(directory: Path | None = None, base: Calibration | None = None) -> Calibration:
    """The shipped terms with every measured term of the calibration folder applied (marked overridden)."""
    cal = base or default_calibration()
    d = (directory or calibration_dir()).expanduser()
    if not d.is_dir():
        return cal
    terms = dict(cal.terms)
    for path in sorted(d.glob("*.yaml")):
        try:
            cf = CalibrationFile.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            raise InputError(field="calibration file", value=str(path), allowed="a file written by gpuplan calibrate",
                             hint=f"fix or delete it ({str(exc).splitlines()[0][:200]})") from None
        terms.update(cf.terms)
    if terms == cal.terms:
        return cal
    return cal.model_copy(update={"terms": terms})
