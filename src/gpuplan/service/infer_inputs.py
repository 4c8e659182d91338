"""The serving load a request describes, checked (the CLI's `plan infer` and the web app's serving form)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuplan.errors import InputError

if TYPE_CHECKING:
    from gpuplan.hardware import Catalog
    from gpuplan.search.infer_load import InferLoad
    from gpuplan.search.infer_search import InferConstraints
    from gpuplan.search.infer_traffic import TrafficCurve
    from gpuplan.workload.engines import EngineProfile

__all__ = ["ServingEngines", "infer_load", "serving_engines", "traffic_file", "user_text_file"]


@dataclass(frozen=True, slots=True)
class ServingEngines:
    """The engines a `plan infer` search plans with: `profile` for every part, except the parts of the stacks in
    `by_stack` (their stack's default engine); `default` is the `engine_default` record the answer carries when no
    engine was named (None when one was)."""

    profile: EngineProfile
    by_stack: dict[str, EngineProfile] = field(default_factory=dict)
    default: dict[str, Any] | None = None


def serving_engines(catalog: Catalog, constraints: InferConstraints, engine_id: str | None) -> ServingEngines:
    """The engines of `plan infer` (the CLI, the API and the web form alike): `engine_id` on every part when named;
    else each part's stack's default engine (engines.yaml stack_default_engines: MindIE on CANN, vLLM elsewhere),
    over the parts the policy filters leave (market, vendor, provider, domestic-only)."""
    from gpuplan.search.train_search import policy_rejection
    from gpuplan.workload.engines import default_engine, default_engines_by_stack, engine

    if engine_id is not None:
        return ServingEngines(profile=engine(engine_id))
    policy = constraints.policy()
    stacks = default_engines_by_stack(a for a in catalog.accelerators.values() if policy_rejection(a, policy) is None)
    if len(stacks) == 1:  # one stack (e.g. --vendor Huawei): its engine for every part
        (stack, (eid, why)), = stacks.items()
        return ServingEngines(profile=engine(eid), default={"engine": eid, "stack": stack, "source": why})
    main, main_why = default_engine(None)
    others = {stack: pair for stack, pair in sorted(stacks.items()) if pair[0] != main}
    record: dict[str, Any] = {"engine": main, "source": main_why}
    if others:  # across stacks: each part is planned with its own stack's engine, and each plan row names it
        record["by_stack"] = {stack: {"engine": eid, "source": why} for stack, (eid, why) in others.items()}
    return ServingEngines(profile=engine(main), by_stack={stack: engine(eid) for stack, (eid, _) in others.items()},
                          default=record)


def traffic_file(path: Path, qps: float | None, trace: Path | None) -> TrafficCurve:
    """`--traffic FILE.csv` (the CLI, on its own user's machine): the curve, read and checked; it sets the rate,
    so `--qps` and `--trace` are left out."""
    from gpuplan.search.infer_traffic import MAX_TRAFFIC_BYTES, read_traffic

    for name, v in (("qps", qps), ("trace", trace)):
        if v is not None:
            raise InputError(field=name, value=str(v), allowed="left out with --traffic (the curve sets the rates)",
                             hint=f"drop --{name}, or drop --traffic to plan for one rate")
    return read_traffic(user_text_file(path, field="traffic", kind="CSV", max_bytes=MAX_TRAFFIC_BYTES),
                        label=path.name)


def user_text_file(path: Path, *, field: str, kind: str, max_bytes: int) -> str:
    """A file the CLI's user names (`--traffic`, `--workload`), read as UTF-8: at most `max_bytes` + 1 bytes, so
    that the reader can say the file is too long; InputError naming `field` when it cannot be read."""
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(field=field, value=str(path), allowed=f"a readable {kind} file",
                         hint=f"{exc.strerror or exc}; check the path") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(field=field, value=str(path), allowed="UTF-8 text",
                         hint=f"save the {kind} as UTF-8") from None


def infer_load(qps: float | None, trace: Path | None, input_len: int | None, output_len: int | None,
          input_dist: str | None, output_dist: str | None, *, files: bool = False) -> InferLoad:
    """The load of `plan infer`: a trace, or a rate with lengths or length distributions. `files=True` (the CLI,
    on its own user's machine) lets a distribution read a `hist:FILE.csv`; a client's request never does."""
    from gpuplan.search.infer_load import InferLoad
    from gpuplan.simulate.arrivals import read_trace
    from gpuplan.simulate.lengths import parse_length_dist

    if trace is not None:
        if qps is not None:
            raise InputError(field="qps", value=qps, allowed="left out with --trace (the trace sets the load)",
                             hint="drop --qps, or drop --trace to plan for a rate")
        for name, v in (("input-len", input_len), ("output-len", output_len), ("input-dist", input_dist),
                        ("output-dist", output_dist)):
            if v is not None:
                raise InputError(field=name, value=v, allowed="left out with --trace (the trace sets the lengths)",
                                 hint=f"drop --{name}, or drop --trace")
        return InferLoad.from_trace(read_trace(trace))
    if qps is None:
        raise InputError(field="qps", value=None, allowed="a positive number, or --trace FILE",
                         hint="give the request rate with --qps (requests per second)")
    if input_len is not None and input_dist is not None:
        raise InputError(field="input-dist", value=input_dist, allowed="left out when --input-len is given",
                         hint="give one of --input-len (every prompt that long) or --input-dist (a distribution)")
    if output_len is not None and output_dist is not None:
        raise InputError(field="output-dist", value=output_dist, allowed="left out when --output-len is given",
                         hint="give one of --output-len (every output that long) or --output-dist (a distribution)")
    inp = parse_length_dist(input_dist if input_dist is not None else (1024 if input_len is None else input_len),
                            field="input-dist" if input_dist is not None else "input-len", files=files)
    out = parse_length_dist(output_dist if output_dist is not None else (256 if output_len is None else output_len),
                            field="output-dist" if output_dist is not None else "output-len", files=files)
    return InferLoad(qps=qps, input_len=inp, output_len=out)
