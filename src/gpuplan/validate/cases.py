"""Read published-measurement cases (the ground-truth CSV format) into gpuplan inputs.

The format is described in the shared ground-truth README: one row per published figure
with the model (a preset id and/or architecture columns), hardware, layout and one
measured metric. Empty fields mean "not stated"; architecture columns override the preset.
"""

from __future__ import annotations

import csv
from pathlib import Path

from gpuplan.errors import GpuplanError, InputError
from gpuplan.workload.model_spec import ModelSpec, MoESpec
from gpuplan.workload.presets import get_preset

__all__ = ["Row", "model_for_row", "opt_bool", "opt_float", "opt_int", "read_rows"]

Row = dict[str, str]

_ARCH = {"layers": "num_layers", "hidden": "hidden_size", "heads": "num_heads", "kv_heads": "num_kv_heads",
         "ffn": "ffn_hidden_size", "vocab": "vocab_size"}


def read_rows(path: Path) -> list[Row]:
    """Rows of a case CSV as dicts of stripped strings; InputError if the file cannot be read."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in csv.DictReader(fh)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(field="cases", value=str(path), allowed="a readable UTF-8 CSV file",
                         hint=str(exc)) from None
    if not rows:
        raise InputError(field="cases", value=str(path),
                         allowed="a case CSV: a header with id, metric and value, and at least one row",
                         hint="see the ground-truth README for the case format (docs/validation.md)")
    missing = [c for c in ("id", "metric", "value") if c not in rows[0]]
    if missing:
        raise InputError(field="cases", value=str(path), allowed=f"a CSV with the header columns {', '.join(missing)}",
                         hint="see the ground-truth README for the case format (docs/validation.md)")
    return rows


def opt_int(row: Row, key: str) -> int | None:
    v = row.get(key, "")
    return int(float(v)) if v else None


def opt_float(row: Row, key: str) -> float | None:
    v = row.get(key, "")
    return float(v) if v else None


def opt_bool(row: Row, key: str) -> bool | None:
    """A yes/no column as the row states it; empty: not stated (None)."""
    v = row.get(key, "").strip().lower()
    if not v:
        return None
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise GpuplanError(f"{key} {row.get(key)!r} is not a yes/no value (true, false or empty)")


def model_for_row(row: Row) -> ModelSpec:
    """The row's model: its preset with filled architecture columns applied, or the columns alone."""
    arch = {field: opt_int(row, col) for col, field in _ARCH.items() if row.get(col)}
    moe_cols = {k: opt_int(row, k) for k in ("moe_experts", "moe_topk", "moe_ffn") if row.get(k)}
    if row.get("model"):
        spec = get_preset(row["model"]).spec
        update: dict[str, object] = dict(arch)
        if moe_cols and spec.moe is not None:
            update["moe"] = spec.moe.model_copy(update={
                k2: moe_cols[k1] for k1, k2 in (("moe_experts", "num_experts"), ("moe_topk", "top_k"),
                                                  ("moe_ffn", "expert_ffn_size")) if k1 in moe_cols})
        return ModelSpec.model_validate({**spec.model_dump(), **update})
    missing = [c for c in ("layers", "hidden", "heads", "vocab") if not row.get(c)]
    if missing:
        raise InputError(field=missing[0], value="", allowed="a value when the row names no preset model")
    hidden = int(arch["hidden_size"] or 0)
    ffn = arch.get("ffn_hidden_size") or 4 * hidden
    # README rule: an unstated ffn is 4 x hidden with a plain MLP; a SwiGLU model states its ffn.
    mlp = "gelu" if ffn == 4 * hidden else "swiglu"
    moe = None
    if moe_cols.get("moe_experts"):
        if not moe_cols.get("moe_ffn") and not arch.get("ffn_hidden_size"):
            # 4 x hidden is the README default of a dense MLP, not of an expert: fine-grained
            # experts are 5-20x narrower, so guessing would misstate the model's FLOPs
            raise InputError(field="moe_ffn", value="", allowed="the expert width (or ffn) for a MoE row that "
                             "names no preset model", hint="fill moe_ffn from the model's config")
        moe = MoESpec(num_experts=int(moe_cols["moe_experts"] or 1), top_k=int(moe_cols.get("moe_topk") or 2),
                      expert_ffn_size=int(moe_cols.get("moe_ffn") or ffn))
    return ModelSpec(name=row.get("id", "case"), family="case", num_layers=int(arch["num_layers"] or 0),
                     hidden_size=hidden, num_heads=int(arch["num_heads"] or 0),
                     num_kv_heads=arch.get("num_kv_heads"), ffn_hidden_size=int(ffn),
                     vocab_size=int(arch["vocab_size"] or 0), mlp=mlp, moe=moe)
