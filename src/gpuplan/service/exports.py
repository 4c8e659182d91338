"""A saved plan as text: the CLI command that reproduces it and its ranked plans as CSV.

`cli_command` is built from the canonical request: every field that differs from the CLI's default becomes
the option of the same name (`seq_len` -> `--seq-len`, lists repeat the option, `true` is a bare flag); the
model, the required numbers and nothing else are always written. The command plans with the same catalog
and calibration as the server when run on the serving machine (`gpuplan plan ... --json` prints the stored
result). `plans_csv` writes one row per ranked plan with fixed English column names (data, not a page).
"""

from __future__ import annotations

import csv
import io
import shlex
from collections.abc import Mapping
from typing import Any

from gpuplan.service.requests import InferPlanRequest, TrainPlanRequest

__all__ = ["INFER_CSV", "TRAIN_CSV", "cli_command", "csv_cell", "plans_csv", "request_of"]

QUOTES_DIR = "gpuplan-quotes"  # the folder the command writes the request's own catalog records into
TRAFFIC_FILE = "traffic.csv"  # the file the command writes the request's traffic rows into (plan infer --traffic)
COMMANDS = {"train": ("plan", "train"), "infer": ("plan", "infer")}
TRAIN_CSV = ("rank", "accelerator", "offer", "devices", "tp", "pp", "dp", "cp", "ep", "zero_stage", "micro_batch",
             "recompute", "days", "days_p10", "days_p90", "cost_usd", "cost_usd_p10", "cost_usd_p90", "device_hours",
             "mfu", "tokens_per_s", "confidence", "bottleneck")
INFER_CSV = ("rank", "accelerator", "instance", "instances", "replicas", "devices", "tp", "pp", "ep", "weights",
             "engine", "cost_usd_per_hour", "cost_usd_per_hour_p10", "cost_usd_per_hour_p90",
             "cost_usd_per_million_input_tokens", "cost_usd_per_million_output_tokens", "utilization",
             "ttft_p99_s", "ttft_p99_s_p10", "ttft_p99_s_p90", "tpot_p99_s", "tpot_p99_s_p10", "tpot_p99_s_p90",
             "confidence", "tenancy")


def request_of(kind: str, request: Mapping[str, Any]) -> TrainPlanRequest | InferPlanRequest:
    """The request model of a stored plan's request (as stored: every field); an InputError when the stored
    request no longer reads as one (a field this version of gpuplan does not have)."""
    from pydantic import ValidationError

    from gpuplan.service.checks import input_error_from_validation

    cls = TrainPlanRequest if kind == "train" else InferPlanRequest
    try:
        return cls.model_validate(dict(request))
    except ValidationError as exc:
        raise input_error_from_validation(exc) from None


def _num(v: float | int) -> str:
    if isinstance(v, bool) or not isinstance(v, float):
        return str(v)
    text = repr(v)  # the shortest text that reads back as the same float
    return text[:-2] if text.endswith(".0") and "e" not in text else text


def _notes(req: TrainPlanRequest | InferPlanRequest, lang: str) -> list[str]:
    """Shell comments before the command for what a request carries that no option holds (uploaded content)."""
    from gpuplan.i18n import tr

    notes = []
    if isinstance(req, TrainPlanRequest) and req.hf_config is not None:
        notes.append(tr("web.cli_note.hf_config", lang))
    if isinstance(req, TrainPlanRequest) and req.calibration is not None:
        cf = req.calibration
        notes.append(tr("web.cli_note.calibration", lang, acc=cf.accelerator, file=cf.from_result or "result.json",
                        measured=cf.measured_at))
    if req.user_catalog is not None:
        notes.append(tr("web.quotes.cli_note", lang))
    return [f"# {n}" for n in notes]


def cli_command(req: TrainPlanRequest | InferPlanRequest, lang: str = "en") -> str:
    """`gpuplan plan train|infer ...` for this request, one line, shell-quoted; a request with an uploaded
    config.json (`--model config.json`) or measured calibration gets comment lines first saying where they go; one
    with its own catalog records (`user_catalog`) gets the lines that write them as `gpuplan-quotes/quotes.yaml`
    first and `--catalog gpuplan-quotes` on the command."""
    fields = type(req).model_fields
    args = ["gpuplan", *COMMANDS[req.kind]]
    for name, value in req.model_dump(mode="json").items():
        if name in ("kind", "hf_config", "calibration", "user_catalog", "traffic") or value is None:
            continue
        if name == "model" and isinstance(req, TrainPlanRequest) and req.hf_config is not None:
            value = "config.json"
        default = fields[name].default
        if name != "model" and fields[name].is_required() is False and value == default:
            continue
        opt = "--" + name.replace("_", "-")
        if isinstance(value, bool):  # a default-on flag turned off is --no-NAME (--no-context-parallel)
            args.append(opt if value else "--no-" + name.replace("_", "-"))
        elif isinstance(value, list):
            for item in value:
                args += [opt, str(item)]
        elif isinstance(value, dict):  # --capacity OFFER=N, repeated
            for key, item in value.items():
                args += [opt, f"{key}={_num(item)}"]
        else:
            args += [opt, _num(value) if isinstance(value, (int, float)) else str(value)]
    if req.user_catalog is not None:
        args += ["--catalog", QUOTES_DIR]
    if isinstance(req, InferPlanRequest) and req.traffic is not None:
        args += ["--traffic", TRAFFIC_FILE]
    return "\n".join([*_notes(req, lang), *_quotes_file(req), *_traffic_file(req),
                      " ".join(shlex.quote(a) for a in args)])


def _traffic_file(req: TrainPlanRequest | InferPlanRequest) -> list[str]:
    """Shell lines that write the request's traffic rows as the CSV `--traffic` reads."""
    if not isinstance(req, InferPlanRequest) or req.traffic is None:
        return []
    weekly = req.traffic[0].day is not None
    rows = [("day,hour,qps" if weekly else "hour,qps")]
    rows += [(f"{r.day}," if weekly else "") + f"{r.hour},{_num(r.qps)}" for r in req.traffic]
    return [f"cat > {TRAFFIC_FILE} <<'GPUPLAN_EOF'", *rows, "GPUPLAN_EOF"]


def _quotes_file(req: TrainPlanRequest | InferPlanRequest) -> list[str]:
    """Shell lines that write the request's own catalog records as a catalog file for `--catalog`."""
    if req.user_catalog is None:
        return []
    from gpuplan.service.user_catalog import user_catalog_yaml

    body = user_catalog_yaml(req.user_catalog).rstrip("\n")
    return [f"mkdir -p {QUOTES_DIR} && cat > {QUOTES_DIR}/quotes.yaml <<'GPUPLAN_EOF'", body, "GPUPLAN_EOF"]


def _band(p: Mapping[str, Any], key: str, i: int) -> Any:
    b = (p.get("band") or {}).get(key)
    return b[i] if b else ""


def _train_row(rank: int, p: Mapping[str, Any]) -> list[Any]:
    lay = p["layout"]
    offer = p.get("offer") or (p.get("hardware_option") or {}).get("offer") or ""
    return [rank, p["accelerator"], offer, p["devices"], lay["tp"], lay["pp"], lay["dp"], lay.get("cp", 1),
            lay.get("ep", 1), lay.get("zero_stage", ""), lay.get("micro_batch", ""), lay.get("recompute", ""),
            p["time_to_train_s"] / 86400.0, _band(p, "time_to_train_days", 0), _band(p, "time_to_train_days", 1),
            p.get("cost_usd") if p.get("cost_usd") is not None else "", _band(p, "cost_usd", 0),
            _band(p, "cost_usd", 1), p.get("device_hours", ""), p["mfu"], p.get("tokens_per_s", ""),
            (p.get("confidence") or {}).get("level", ""), p.get("bottleneck", "")]


def _infer_row(rank: int, p: Mapping[str, Any]) -> list[Any]:
    lay = p["layout"]
    return [rank, p["accelerator"], p["instance"], p["instances"], p["replicas"], p["devices"], lay["tp"],
            lay["pp"], lay["ep"], p["weights"], p.get("engine", ""), p["cost_usd_per_hour"],
            _band(p, "cost_usd_per_hour", 0), _band(p, "cost_usd_per_hour", 1),
            p["cost_usd_per_million_input_tokens"], p["cost_usd_per_million_output_tokens"], p["utilization"],
            p["ttft_s"]["p99"], _band(p, "ttft_s.p99", 0), _band(p, "ttft_s.p99", 1), p["tpot_s"]["p99"],
            _band(p, "tpot_s.p99", 0), _band(p, "tpot_s.p99", 1), (p.get("confidence") or {}).get("level", ""),
            (p.get("advice") or {}).get("tenancy", "")]


def plans_csv(kind: str, result: Mapping[str, Any]) -> str:
    """Every ranked plan of a stored result, in the planner's order, one CSV row each (bands: 10th and 90th
    percentile of the 80% band; empty where there is none)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    head, row = (TRAIN_CSV, _train_row) if kind == "train" else (INFER_CSV, _infer_row)
    w.writerow(head)
    for i, p in enumerate(result.get("plans") or [], 1):
        w.writerow([csv_cell(v) for v in row(i, p)])
    return out.getvalue()


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet shows as text, never runs: a string starting with =, +, -, @, tab or CR gets a leading
    apostrophe (OWASP, "CSV Injection"). Numbers stay numbers (a negative number is a number, not a formula)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        try:
            float(value)
            return value
        except ValueError:
            return "'" + value
    return value
