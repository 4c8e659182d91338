"""Uploaded documents as planner input: a Hugging Face config.json as the model, a `gpuplan bench` result as
measured calibration. Content only (bytes or parsed JSON), never a file-system path; each has a size limit.

The config goes through the parser `gpuplan plan train -m config.json` uses (workload.hf_config); the bench
result through the schema `gpuplan calibrate` reads (bench.records.BenchResult, extra keys rejected) and the
same `calibration_from_result`. A calibration applied to a plan is the user's calibration folder with that
part's file replaced by the uploaded one: what `gpuplan calibrate RESULT` followed by `gpuplan plan train`
computes on the serving machine, without writing the folder or the shared catalog.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpuplan.errors import InputError

__all__ = ["MAX_BENCH_BYTES", "MAX_CONFIG_BYTES", "TERM_RANGES", "TooLarge", "calibration_for", "check_calibration",
           "check_config_size", "config_name", "histogram_bins", "parse_json", "spec_from_config"]

MAX_CONFIG_BYTES = 64 * 1024
MAX_BENCH_BYTES = 1024 * 1024
# the terms `gpuplan calibrate` writes for one part, and the range it clamps each to
TERM_RANGES: dict[str, tuple[float, float]] = {"compute_efficiency": (0.01, 1.0), "hbm_bandwidth_scale": (0.05, 2.0),
                                               "link_bw_scale": (0.05, 2.0)}


class TooLarge(InputError):
    """An upload over its size limit (HTTP 413)."""

    def __init__(self, field: str, size: int, limit: int, hint: str = "") -> None:
        super().__init__(field=field, value=f"{size} bytes", allowed=f"at most {limit} bytes ({limit // 1024} KiB)",
                         hint=hint)


def parse_json(data: bytes, field: str, limit: int, what: str) -> Any:
    """JSON text of at most `limit` bytes, parsed; TooLarge or InputError naming `field` otherwise."""
    if len(data) > limit:
        raise TooLarge(field, len(data), limit, hint=f"upload {what} itself, not an archive or a log")
    if not data.strip():
        raise InputError(field=field, value="<empty>", allowed=f"{what} (JSON)", hint="the upload is empty")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(field=field, value="<binary>", allowed=f"{what} (UTF-8 JSON text)",
                         hint="the file is not text") from None
    except json.JSONDecodeError as exc:
        raise InputError(field=field, value=f"line {exc.lineno} column {exc.colno}", allowed=f"{what} (JSON)",
                         hint=f"not valid JSON: {exc.msg}") from None


def histogram_bins(data: bytes, field: str, limit: int) -> str:
    """An uploaded length-histogram CSV (header `length,weight` or `low,high,weight`) as an inline `bins:` spec
    (simulate.lengths), so that the request carries the histogram itself and the server never reads a path."""
    import csv
    import io

    from gpuplan.simulate.lengths import bins_spec

    text = _csv_text(data, field, limit, size_hint="a length histogram is a few hundred rows at most",
                     what="the histogram")
    return bins_spec(list(csv.DictReader(io.StringIO(text))), field=field)


def _csv_text(data: bytes, field: str, limit: int, *, size_hint: str, what: str) -> str:
    """An uploaded CSV's text: TooLarge over `limit` bytes, InputError naming `field` when it is not UTF-8."""
    if len(data) > limit:
        raise TooLarge(field, len(data), limit, hint=size_hint)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(field=field, value="<binary>", allowed="a CSV text file",
                         hint=f"export {what} as CSV (UTF-8)") from None


def traffic_rows(data: bytes, field: str, limit: int) -> list[dict[str, object]]:
    """An uploaded traffic CSV (`hour,qps` or `day,hour,qps`, as `plan infer --traffic` reads) checked and turned
    into the request's inline `traffic` rows: the server keeps the rows, never a path."""
    from gpuplan.search.infer_traffic import DAYS, read_traffic

    text = _csv_text(data, field, limit, size_hint="one row an hour: 24 rows for a day, 168 for a week",
                     what="the traffic")
    curve = read_traffic(text, label=field)
    return [{**({"day": DAYS[r.day]} if r.day is not None else {}), "hour": r.hour, "qps": r.qps}
            for r in curve.rows]


def check_config_size(cfg: Mapping[str, Any]) -> None:
    size = len(json.dumps(cfg, separators=(",", ":")).encode())
    if size > MAX_CONFIG_BYTES:
        raise TooLarge("hf_config", size, MAX_CONFIG_BYTES, hint="a Hugging Face config.json is a few KiB")


def spec_from_config(cfg: Any, name: str) -> Any:
    """The ModelSpec of an uploaded config.json (the parser of `plan train -m config.json`)."""
    from gpuplan.workload.hf_config import spec_from_hf_config

    if not isinstance(cfg, Mapping):
        raise InputError(field="hf_config", value=type(cfg).__name__, allowed="a JSON object (a Hugging Face "
                         "config.json)", hint="upload the model's config.json")
    check_config_size(cfg)
    return spec_from_hf_config(cfg, name=name, source="uploaded config.json")


def config_name(cfg: Any, file_name: str = "config.json") -> str:
    """The model name of an uploaded config, as `-m PATH` names it: `_name_or_path`, else the file's stem
    (`Qwen3-8B.json`; a bare `config.json` has no folder here), else its architecture or model_type. The
    config is checked on the way (InputError naming the key)."""
    spec = spec_from_config(cfg, "")
    stem = file_name.rsplit(".", 1)[0] if file_name.lower().endswith(".json") else file_name
    if "_name_or_path" not in cfg and stem and stem.lower() != "config":
        return stem[:100]
    return str(spec.name)[:100] or "config.json"


def check_calibration(cf: Any) -> None:
    """The uploaded terms are those `gpuplan calibrate` writes for its part, in the range it writes them."""
    acc = cf.accelerator
    for name, term in cf.terms.items():
        family, _, rest = name.partition(".")
        part = rest.split(".")[0] if rest else ""
        allowed = (f"compute_efficiency.{acc}.bf16|fp8, hbm_bandwidth_scale.{acc} or link_bw_scale.{acc}")
        ok = family in TERM_RANGES and part == acc and (
            rest in (f"{acc}.bf16", f"{acc}.fp8") if family == "compute_efficiency" else rest == acc)
        if not ok:
            raise InputError(field=f"calibration.terms.{name}", value=name, allowed=allowed,
                             hint="the terms gpuplan calibrate writes for the part the file names")
        lo, hi = TERM_RANGES[family]
        if not lo <= term.value <= hi:
            raise InputError(field=f"calibration.terms.{name}.value", value=term.value, allowed=f"{lo:g} to {hi:g}",
                             hint="the range gpuplan calibrate clamps it to")


def calibration_for(cf: Any | None) -> Any:
    """The calibration a plan uses: the user's folder (`load_user_calibration`), with the part of `cf` (a
    CalibrationFile) taking `cf`'s terms instead of that folder's file for it, as `gpuplan calibrate` would
    overwrite `<part>.yaml`."""
    from gpuplan.bench.calibrate import load_user_calibration
    from gpuplan.estimate.calibration import default_calibration

    cal = load_user_calibration()
    if cf is None:
        return cal
    check_calibration(cf)
    from gpuplan.hardware import load_catalog

    load_catalog().accelerator(cf.accelerator)  # a part this catalog has (InputError with close names otherwise)
    shipped = default_calibration().terms
    terms = {}
    for name, term in cal.terms.items():
        if name.split(".")[1:2] == [cf.accelerator] and name.split(".")[0] in TERM_RANGES:
            if name in shipped:
                terms[name] = shipped[name]
            continue  # the folder's file for this part is replaced
        terms[name] = term
    terms.update(cf.terms)
    return cal.model_copy(update={"terms": terms})
