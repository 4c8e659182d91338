"""Time the routed fleet simulations of one `plan infer` question alone, and count their work.

`plan infer` spends most of its time in `simulate.fleet_sim.simulate_fleet` (docs/speed.md). This script runs a
question once in-process (`gpuplan` from your PYTHONPATH) while recording the arguments of every fleet simulation,
then replays those simulations `--repeat` times and prints the minimum CPU time of a replay. With `--base SRC`
(another tree's `src` folder, e.g. a `git archive` of the commit before a change), that tree's `fleet_sim` and
`engine_sim` replay the same simulations, alternating with this tree's round by round (so both see the same load
on a shared machine), and every run's times, replicas and KV figures are checked identical (exit 1 if not).
`--count` also prints the work of one replay, counted by cProfile: fleet simulations, requests, engine-loop
resumptions (generator resumes), step-cost calls (prompt steps) and router looks (`balance`).

Usage: PYTHONPATH=src python benchmarks/sim_replay.py [readme|long_context|deepseek] [--repeat N]
           [--base /tmp/base/src] [--count]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_equality import QUESTIONS  # noqa: E402  (the same questions as the equality check)

Call = tuple[tuple[Any, ...], dict[str, Any]]


def record(question: str) -> list[Call]:
    """Run `plan infer` for `question` in-process; the arguments of every fleet simulation it ran."""
    import gpuplan.search.infer_route as route
    from gpuplan.cli.main import main

    calls: list[Call] = []
    names = vars(route)  # the planner's reference to the simulator, swapped for a recording one meanwhile
    real = names["simulate_fleet"]

    def rec(*a: Any, **k: Any) -> Any:
        calls.append((a, k))
        return real(*a, **k)

    names["simulate_fleet"] = rec
    argv = sys.argv
    sys.argv = ["gpuplan", *QUESTIONS[question], "--json"]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main()
    finally:
        sys.argv = argv
        names["simulate_fleet"] = real
    return calls


TWIN_MARKER = "# --- end of the compiled twin"  # as in hatch_build.py


def _load(name: str, path: Path, text: str) -> ModuleType:
    mod = ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod  # before its dataclasses are made
    exec(compile(text, str(path), "exec"), mod.__dict__)  # noqa: S102  (a tree the user named)
    return mod


def base_fleet(src: Path) -> Callable[..., Any]:
    """`simulate_fleet` of another tree: its fleet_sim over its engine_sim (the rest is this tree's)."""
    sim = src / "gpuplan" / "simulate"

    def source(name: str) -> str:  # interpreted: the lines that pick a compiled twin (simulate/native.py) are cut
        return (sim / f"{name}.py").read_text().split(TWIN_MARKER, 1)[0]

    _load("replay_base_engine_sim", sim / "engine_sim.py", source("engine_sim"))
    text = source("fleet_sim").replace("from gpuplan.simulate.engine_sim import", "from replay_base_engine_sim import")
    return _load("replay_base_fleet_sim", sim / "fleet_sim.py", text).simulate_fleet  # type: ignore[no-any-return]


def same(x: Any, y: Any) -> bool:
    m, n = x.merged, y.merged
    return (all(np.array_equal(getattr(m, f), getattr(n, f), equal_nan=True)
                for f in ("scheduled_s", "first_token_s", "finish_s", "preemptions"))
            and np.array_equal(x.replica_of, y.replica_of)
            and (m.end_s, m.busy_s, m.iterations, m.kv_token_seconds, m.kv_peak_blocks)
            == (n.end_s, n.busy_s, n.iterations, n.kv_token_seconds, n.kv_peak_blocks))


def count(calls: list[Call], fleet: Callable[..., Any]) -> None:
    prof = cProfile.Profile()
    prof.enable()
    for a, k in calls:
        fleet(*a, **k)
    prof.disable()
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    by_name: dict[str, int] = {}
    for (_file, _line, name), (_cc, nc, *_rest) in stats.items():
        by_name[name] = by_name.get(name, 0) + nc
    print(f"work of one replay: {len(calls)} fleet simulations, {sum(a[0].n for a, _ in calls):,} requests, "
          f"{by_name.get('engine_loop', 0):,} engine-loop resumptions, {by_name.get('step', 0):,} step-cost calls "
          f"by the closure, {by_name.get('balance', 0):,} router looks")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("question", nargs="?", default="readme", choices=[q for q in QUESTIONS if q != "train"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--base", type=Path, help="another tree's src folder to replay alternately and compare")
    ap.add_argument("--count", action="store_true", help="count the work of one replay (cProfile)")
    args = ap.parse_args()
    calls = record(args.question)
    from gpuplan.simulate.fleet_sim import simulate_fleet

    impls: dict[str, Callable[..., Any]] = {"this tree": simulate_fleet}
    if args.base is not None:
        impls = {"base": base_fleet(args.base), **impls}
    cpu: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(args.repeat):
        for name, fleet in impls.items():
            t = time.process_time()
            for a, k in calls:
                fleet(*a, **k)
            cpu[name].append(time.process_time() - t)
    for name, v in cpu.items():
        print(f"{name}: replay CPU min {min(v):.2f} s (rounds: {' '.join(f'{x:.2f}' for x in v)})")
    if args.count:
        count(calls, simulate_fleet)
    if args.base is not None:
        print(f"this tree / base (min): {min(cpu['this tree']) / min(cpu['base']):.3f}")
        bad = sum(not same(impls["base"](*a, **k), simulate_fleet(*a, **k)) for a, k in calls)
        print(f"{len(calls) - bad} of {len(calls)} fleet runs identical")
        if bad:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
