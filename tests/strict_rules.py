"""Test helper: the shipped export-control notes without their `rented` override, so that renting an
export-controlled part in its market is blocked as buying it is (the rule before rentals were told apart): the
mechanisms that mark and skip blocked parts need some part to block, and no shipped rule blocks a rental."""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["block_rentals_too"]


def block_rentals_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuplan.advise import rules_market
    from gpuplan.advise.findings import advise_data

    def strict(name: str) -> dict[str, Any]:
        data = advise_data(name)
        if name == "compliance":
            data = {**data, "export_notes": [{k: v for k, v in n.items() if k != "rented"}
                                             for n in data["export_notes"]]}
        return data

    monkeypatch.setattr(rules_market, "advise_data", strict)
