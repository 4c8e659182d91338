"""`--emit FORMAT [--out DIR] [--pick N]` on `plan train`, `estimate train` and `plan infer`: a thin
door to gpuplan.emit (pick the plan, build the target, write atomically, say what was written);
`plan infer --emit sglang --disaggregated` writes the disaggregated fleet the advisor names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuplan.cli.common import note
from gpuplan.emit.formats import SERVE_FORMATS, TRAIN_FORMATS, parse_formats
from gpuplan.errors import InputError
from gpuplan.hardware import Catalog
from gpuplan.i18n import tr
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["check_disaggregated", "check_formats", "pick_plan", "write_serve", "write_serve_pd", "write_train"]


def check_formats(emit: str | None, kind: str) -> list[str]:
    """The format names of --emit (checked before any planning, so a typo fails fast with exit 2)."""
    if emit is None:
        return []
    return parse_formats(emit, TRAIN_FORMATS if kind == "train" else SERVE_FORMATS)


def check_disaggregated(disaggregated: bool, formats: list[str], pick: int | None) -> None:
    """--disaggregated writes SGLang's prefill/decode launch: it needs --emit sglang and takes no --pick."""
    if not disaggregated:
        return
    if formats != ["sglang"]:
        raise InputError(field="emit", value=",".join(formats) or "(none)", allowed="sglang with --disaggregated",
                         hint="gpuplan writes the launch of a disaggregated fleet for SGLang only "
                              "(--disaggregation-mode prefill|decode and its router): pass --emit sglang")
    if pick is not None:
        raise InputError(field="pick", value=pick, allowed="left out with --disaggregated",
                         hint="--disaggregated emits the disaggregated fleet the advisor names, not a ranked plan")


def pick_plan(plans: Sequence[Mapping[str, Any]], pick: int | None, recommended: Mapping[str, Any] | None,
              keys: tuple[str, ...]) -> Mapping[str, Any]:
    """The N-th ranked plan (1-based), else the recommended one, else the first."""
    if pick is not None:
        if not 1 <= pick <= len(plans):
            raise InputError(field="pick", value=pick, allowed=f"1..{len(plans)} (the ranked plans)")
        return plans[pick - 1]
    if recommended:
        for p in plans:
            if all(_get(p, k) == recommended.get(k) for k in keys):
                return p
    return plans[0]


def _get(p: Mapping[str, Any], key: str) -> Any:
    if key == "offer":
        return (p.get("hardware_option") or {}).get("offer")
    return p.get(key)


def write_train(names: list[str], out: Path, *, model_id: str, spec: ModelSpec, job: TrainingJob,
                plan: Mapping[str, Any], tokens: float | None, stated: set[str], lang: str,
                catalog: Catalog | None = None) -> None:
    from gpuplan.emit import TrainTarget, emit_train  # the emitters load only when a command writes files

    t = TrainTarget(model_id=model_id, spec=spec, plan=plan, method=job.method, seq_len=job.seq_len,
                    accelerator=catalog.accelerator(str(plan["accelerator"])) if catalog is not None else None,
                    # the batch the plan's layout runs (its step time counts those sequences)
                    global_batch=int(plan["layout"].get("global_batch") or job.global_batch or plan["layout"]["dp"]),
                    precision=job.precision,
                    lora_rank=job.lora_rank, lora_targets=tuple(job.lora_targets), tokens=tokens,
                    stated=frozenset(stated))
    _write(emit_train(t, names), out, lang)


def write_serve(names: list[str], out: Path, *, model_id: str, spec: ModelSpec, run: Mapping[str, Any],
                fleet: Mapping[str, Any], max_model_len: int, stated: set[str], lang: str,
                catalog: Catalog | None = None) -> None:
    from gpuplan.emit import ServeTarget, emit_serve

    t = ServeTarget(model_id=model_id, spec=spec, fleet=fleet, run=run, max_model_len=max_model_len,
                    accelerator=catalog.accelerator(str(fleet["accelerator"])) if catalog is not None else None,
                    stated=frozenset(stated))
    _write(emit_serve(t, names), out, lang)


def write_serve_pd(out: Path, *, model_id: str, spec: ModelSpec, run: Mapping[str, Any], lang: str,
                   max_model_len: int) -> None:
    """The SGLang launch of the disaggregated fleet the advisor would name (`run["what_if_pd"]`: the cheapest in
    `what_if_pd_all` whose part draws no blocking finding in its market, advise.report_infer.named_pd)."""
    from gpuplan.emit.serve_pd import pd_files

    if not run.get("what_if_pd_all"):
        raise InputError(field="disaggregated", value=True, allowed="a load some disaggregated fleet serves",
                         hint="no part has an offer with an RDMA fabric (the KV cache moves between instances) and "
                              "pools that meet the SLO; plan without --disaggregated")
    pd = run.get("what_if_pd")
    if pd is None:
        raise InputError(field="disaggregated", value=True, allowed="a disaggregated fleet on a part the market allows",
                         hint="every disaggregated fleet's part draws a blocking finding (export, residency or "
                              "compliance) in its offer's market")
    _write(pd_files(model_id=model_id, spec=spec, run=run, pd=pd, max_model_len=max_model_len,
                    stated=frozenset({"kv_dtype"})), out, lang)


def _write(files: Mapping[str, str], out: Path, lang: str) -> None:
    from gpuplan.emit.write import write_files

    written = write_files(files, out)
    note(tr("cli.emit.written", lang, n=len(written), out=str(out), files=", ".join(p.name for p in written)))
