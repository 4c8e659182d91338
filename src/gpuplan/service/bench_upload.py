"""An uploaded `gpuplan bench` result: checked against its schema, shown measured vs predicted, and turned into
calibration terms as `gpuplan calibrate` does (nothing is written: the terms travel with the plan request).

`read_result` takes the uploaded bytes (never a path); `bench_answer` is the JSON `POST /api/v1/bench` answers
and the bench page renders: the machine, the headline rows (what the result measured beside gpuplan's
prediction for the same part, from `gpuplan report --bench`'s section), and the calibration: every measured
term beside the value the server's estimates use today, or why there is none (a CPU run, no catalog part).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from gpuplan.bench.records import BenchResult
from gpuplan.errors import GpuplanError, InputError
from gpuplan.service.uploads import MAX_BENCH_BYTES, parse_json

__all__ = ["bench_answer", "read_result", "safe_name"]

SCHEMA_HINT = "a file written by gpuplan bench --out (docs/bench-result.schema.json)"


def safe_name(name: str | None, default: str = "bench-result.json") -> str:
    """The base name of an uploaded file, kept to letters, digits and `._-` (it is only shown and recorded)."""
    base = re.split(r"[\\/]", name or "")[-1]
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", base)[:80].lstrip(".")
    return clean or default


def read_result(data: bytes) -> BenchResult:
    """The bench result in `data`; TooLarge over the limit, InputError naming the first key that does not
    follow the schema (unknown keys included)."""
    doc = parse_json(data, "result", MAX_BENCH_BYTES, "a gpuplan bench result")
    if not isinstance(doc, dict):
        raise InputError(field="result", value=type(doc).__name__, allowed="a JSON object", hint=SCHEMA_HINT)
    try:
        return BenchResult.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        value = first.get("input")
        if not isinstance(value, (str, int, float, bool, type(None))):
            value = type(value).__name__
        msg = str(first.get("msg", "a valid result"))
        if first.get("type") == "extra_forbidden":
            msg = "no such key in a bench result"
        raise InputError(field=f"result.{loc}" if loc else "result", value=value, allowed=msg,
                         hint=SCHEMA_HINT) from None


def _terms_table(cf: Any) -> list[dict[str, Any]]:
    """Each measured term beside the value the server's estimates use today for it."""
    from gpuplan.bench.calibrate import load_user_calibration

    today = load_user_calibration().terms
    rows = []
    for name, term in cf.terms.items():
        current = today.get(name)
        if current is None and name.startswith("compute_efficiency."):
            current = today.get(f"compute_efficiency.default.{name.rsplit('.', 1)[-1]}")
        rows.append({"name": name, "current": current.value if current is not None else 1.0,
                     "measured": term.value, "unit": term.unit, "source": term.source, "applied": True})
    for name, fig in cf.recorded.items():
        rows.append({"name": name, "current": None, "measured": fig.value, "unit": fig.unit, "source": fig.source,
                     "applied": False})
    return rows


def bench_answer(result: BenchResult, file_name: str, accelerator: str | None = None,
                 lang: str = "en") -> dict[str, Any]:
    """Measured vs predicted and the calibration of `result` (for `accelerator`, else the one it names)."""
    from gpuplan.bench.calibrate import calibration_from_result
    from gpuplan.bench.report import bench_section
    from gpuplan.hardware import load_catalog
    from gpuplan.service.checks import error_line

    out: dict[str, Any] = {"file": file_name, "gpuplan_version": result.gpuplan_version, "quick": result.quick,
                           "bench": bench_section(result, file_name), "calibration": None, "terms": [],
                           "calibration_error": None}
    try:
        cf = calibration_from_result(result, load_catalog(), accelerator=accelerator or None,
                                     result_path=file_name)
    except GpuplanError as exc:
        detail: dict[str, Any] = {"field": "calibration", "value": None, "allowed": "", "hint": "",
                                  "message": error_line(exc, lang)}
        if isinstance(exc, InputError):
            detail |= {"field": exc.field, "value": exc.value if isinstance(exc.value, (str, int, float, bool))
                       else None, "allowed": exc.allowed, "hint": exc.hint}
        out["calibration_error"] = detail
        return out
    out["calibration"] = cf.model_dump(mode="json")
    out["terms"] = _terms_table(cf)
    return out
