"""`plan train --json` is compact by default (issue 16): --top plans in full, the rest as summaries that keep the
trust contract (band, confidence) and what scripts read; --all gives every plan in full."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuplan.cli.main import app
from gpuplan.render.plan_json import compact_plans, plan_brief

runner = CliRunner()
QUICK = ["plan", "train", "--model", "llama3-8b", "--tokens", "1e12", "--deadline", "30", "--max-devices", "64",
         "--json"]


def _plans(*extra: str) -> list[dict[str, object]]:
    res = runner.invoke(app, [*QUICK, *extra])
    assert res.exit_code == 0, res.output
    plans: list[dict[str, object]] = json.loads(res.output)["plans"]
    return plans


def test_json_gives_top_plans_in_full_and_the_rest_as_summaries_with_band_and_confidence() -> None:
    compact, everything = _plans("--top", "3"), _plans("--all")
    assert len(compact) == len(everything) > 3
    assert [p["detail"] for p in compact[:3]] == ["full"] * 3
    assert {p["detail"] for p in compact[3:]} == {"summary"} and {p["detail"] for p in everything} == {"full"}
    for short, full in zip(compact, everything, strict=True):
        for key in ("accelerator", "devices", "time_to_train_s", "cost_usd", "bottleneck", "band", "confidence",
                    "layout", "mfu"):
            assert short[key] == full[key], key
    assert "assumptions" in compact[0] and "assumptions" not in compact[-1]
    assert len(json.dumps(compact)) < len(json.dumps(everything)) / 2


def test_plan_brief_keeps_the_offer_network_and_memory_total() -> None:
    p = {"accelerator": "a", "devices": 8, "band": {"time_to_train_s": [1, 2]}, "confidence": {"level": "low"},
         "hardware_option": {"offer": "x"}, "assumptions": {"network": "ib"}, "memory": {"total_bytes": 5, "w": 1}}
    b = plan_brief(p)
    assert b["offer"] == "x" and b["network"] == "ib" and b["memory"] == {"total_bytes": 5}
    assert b["band"] == p["band"] and b["confidence"] == p["confidence"] and b["detail"] == "summary"
    assert [q["detail"] for q in compact_plans([p, p, p], 0)] == ["summary"] * 3


def test_a_summarized_own_cluster_still_names_its_fabric() -> None:
    """The web app stores all but the first plans as summaries; its table printed "own cluster, -" for them (the
    recommended 512 x H100 own cluster of a 70B month plan among them) because the summary dropped the option."""
    from gpuplan.render.report_text import offer_text

    p = {"accelerator": "h100-sxm5-80gb", "devices": 512, "assumptions": {"network": "ib-ndr-400"},
         "hardware_option": {"kind": "own", "offer": None, "network": "ib-ndr-400", "network_basis": "long text"}}
    b = plan_brief(p)
    assert offer_text(b, "en") == offer_text(p, "en") and "ib-ndr-400" in offer_text(b, "en")
    assert "network_basis" not in b["hardware_option"]
