"""advise/data/compliance.yaml and ecosystem.yaml are checked against their schemas when they are loaded."""

from __future__ import annotations

from importlib import resources

import pytest
from pydantic import ValidationError

from gpuplan import yamlio
from gpuplan.advise.data_schema import ComplianceFile, EcosystemFile
from gpuplan.advise.findings import advise_data


def _shipped(name: str = "compliance") -> dict[str, object]:
    path = resources.files("gpuplan.advise") / "data" / f"{name}.yaml"
    data: dict[str, object] = yamlio.safe_load(path.read_text(encoding="utf-8"))
    return data


def test_the_shipped_file_validates_and_its_rented_overrides_never_harden_a_note() -> None:
    """Renting cards already in a market softens a block where they came in legally (A100, A800/H800): the rented
    text is never more severe than buying new, and grey-market stock (H100, Blackwell in China) stays blocked."""
    f = ComplianceFile.model_validate(advise_data("compliance"))
    order = {"info": 0, "warn": 1, "critical": 2}
    rented = {n.id: n for n in f.export_notes if n.rented is not None}
    assert all(order[n.rented.severity] <= order[n.severity] for n in rented.values() if n.rented)
    softened = {i for i, n in rented.items() if n.severity == "critical" and n.rented and n.rented.severity == "warn"}
    assert softened == {"us-bis-2022-10", "us-bis-2023-10"}
    still = {i for i, n in rented.items() if n.rented and n.rented.severity == "critical"}
    assert still == {"us-bis-2022-10-h100", "us-bis-2023-10-blackwell"}
    # every note is dated and sourced, and says whose market it reads
    assert all(n.date and n.source and n.applies_by in ("hosting", "buyer") for n in f.export_notes)


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


def test_the_ecosystem_file_validates_and_rejects_a_misspelt_stack_key() -> None:
    eco = EcosystemFile.model_validate(advise_data("ecosystem"))
    assert eco.stacks["cuda"].qlora_4bit == "official" and eco.stacks["cann"].qlora_4bit == "none"
    data = _shipped("ecosystem")
    stacks = {k: dict(v) for k, v in data["stacks"].items()}  # type: ignore[attr-defined]
    stacks["cuda"]["qlora4bit"] = "official"
    with pytest.raises(ValidationError, match="qlora4bit"):
        EcosystemFile.model_validate({**data, "stacks": stacks})
