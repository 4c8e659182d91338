"""advise/data/compliance.yaml is checked against its schema when it is loaded."""

from __future__ import annotations

from importlib import resources

import pytest
from pydantic import ValidationError

from gpuplan import yamlio
from gpuplan.advise.compliance_schema import ComplianceFile
from gpuplan.advise.findings import advise_data


def _shipped() -> dict[str, object]:
    path = resources.files("gpuplan.advise") / "data" / "compliance.yaml"
    data: dict[str, object] = yamlio.safe_load(path.read_text(encoding="utf-8"))
    return data


def test_the_shipped_file_validates_and_its_rented_overrides_soften_the_blocks() -> None:
    f = ComplianceFile.model_validate(advise_data("compliance"))
    rented = [n for n in f.export_notes if n.rented is not None]
    assert rented and all(n.severity == "critical" and n.rented.severity == "warn" for n in rented if n.rented)


@pytest.mark.parametrize(("where", "key"), [("note", "rentd"), ("rented", "severty"), ("top", "export_note")])
def test_a_misspelt_key_is_an_error_naming_it(where: str, key: str) -> None:
    data = _shipped()
    notes = [dict(n) for n in data["export_notes"]]  # type: ignore[attr-defined]
    if where == "note":
        notes[0][key] = {"severity": "warn", "en": "x", "zh": "x"}
    elif where == "rented":
        notes[0]["rented"] = {**notes[0]["rented"], key: "warn"}
    else:
        data[key] = []
    with pytest.raises(ValidationError, match=key):
        ComplianceFile.model_validate({**data, "export_notes": notes})
