"""The bench page's tables and a training plan's uploaded inputs, in one language.

Presentation only: the bench rows are those `gpuplan report --bench` renders (render.report_bench), the
calibration terms those `gpuplan calibrate` prints (name, value, applied or recorded, source).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpuplan.i18n import tr

__all__ = ["bench_view", "scenario"]


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def bench_view(answer: Mapping[str, Any], lang: str) -> dict[str, Any]:
    """Machine line, measured-vs-predicted table, calibration terms (or why there are none)."""
    from gpuplan.render.report_bench import bench_rows

    sec = answer["bench"]
    machine = tr("report.bench.machine", lang, device=sec["device"], backend=sec["backend"], devices=sec["devices"],
                 host=sec["host"], created=sec["created_at"], file=sec["file"],
                 acc=sec["accelerator"] or tr("report.bench.no_part", lang))
    if not sec["complete"]:
        machine = f"{machine} {tr('report.bench.partial', lang)}"
    head, rows = bench_rows(sec, lang)
    cal = answer.get("calibration")
    terms = [{"name": r["name"], "current": _num(r["current"]), "measured": _num(r["measured"]), "unit": r["unit"],
              "applied": tr("cli.calibrate.yes" if r["applied"] else "cli.calibrate.recorded", lang),
              "source": r["source"]} for r in answer.get("terms") or []]
    err = answer.get("calibration_error")
    return {"file": answer["file"], "machine": machine, "head": head, "rows": rows, "notes": sec["notes"],
            "quick": answer.get("quick"), "version": answer.get("gpuplan_version"),
            "accelerator": cal["accelerator"] if cal else None, "terms": terms,
            "error": err["message"] if err else None, "applied": sum(1 for r in answer.get("terms") or []
                                                                       if r["applied"])}


def _calibrated_best(result: Mapping[str, Any], acc: str, lang: str) -> dict[str, Any] | None:
    """The best plan on the calibrated part (the planner's order), its row and the full confidence sentence
    (which names the efficiency's provenance); None when no plan on it met the constraints."""
    from gpuplan.render.trust_text import confidence_text
    from gpuplan.web.views import train_rows

    plans = [p for p in result.get("plans") or [] if p["accelerator"] == acc]
    if not plans:
        return None
    row = train_rows({"plans": plans[:1]}, lang, top=1)[0]
    conf = plans[0].get("confidence") or {}
    return {**row, "provenance": (conf.get("efficiency") or {}).get("provenance", "default"),
            "sentence": confidence_text(conf, lang, short=False)}


def scenario(request: Mapping[str, Any], lang: str, result: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """What a stored training request carries besides options: an uploaded config.json and measured
    calibration with the best plan on its part (None when it carries neither)."""
    cfg = request.get("hf_config")
    cal = request.get("calibration")
    if cfg is None and cal is None:
        return None
    out: dict[str, Any] = {"config": None, "calibration": None}
    if cfg is not None:
        out["config"] = {"line": tr("web.scenario.config", lang, name=request.get("model", ""),
                                    model_type=cfg.get("model_type", "?")),
                         "json": json.dumps(cfg, indent=2, ensure_ascii=False, sort_keys=True)}
    if cal is not None:
        out["calibration"] = {
            "line": tr("web.scenario.calibration", lang, acc=cal.get("accelerator", ""),
                       file=cal.get("from_result", ""), measured=cal.get("measured_at", "")),
            "terms": [{"name": k, "value": f"{v.get('value', 0):.4g}", "source": v.get("source", "")}
                      for k, v in (cal.get("terms") or {}).items()],
            "best": _calibrated_best(result or {}, str(cal.get("accelerator", "")), lang),
            "none": tr("web.scenario.no_plan", lang, acc=cal.get("accelerator", ""))}
    return out
