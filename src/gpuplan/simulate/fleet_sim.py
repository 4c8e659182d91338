"""A fleet of engine replicas behind a router: each request goes to one replica when it arrives.

Every replica is the engine of `engine_sim` (its event loop, `engine_loop`), advanced in time order: before a
request is routed at time a, the replicas the router looks at run up to their first iteration boundary at or
after a, so the router sees their completions up to a, exactly. A replica's trajectory depends only on the
requests it was given, so it is the one `simulate_engine` gives for them (tests/simulate/test_fleet_sim.py).

Routers (the policies of production LLM routers):

- `random`: a uniformly random replica (the SGLang model gateway's `random`; a Poisson stream split at random
  is a Poisson stream of qps / replicas per replica: what `plan infer` simulated before routers).
- `round-robin`: replicas in turn (vLLM production stack `roundrobin`, SGLang `round_robin`).
- `least-load`: the replica with the fewest outstanding tokens, i.e. prompt + output tokens of the requests
  routed to it and not finished (Ray Serve's KV-aware router routes to the lowest token load; llm-d scores queue
  depth; SGLang's cache-aware policy falls back to the least-loaded worker). An idle replica has none, so no
  request is sent to a busy replica while another is idle; among idle replicas, one the router already knows
  to be idle is taken (a replica stays idle until a request is routed to it), without looking at the others.
- `cache-aware`: the replica that already served the request's prefix group (a session or a shared document)
  holds its prefix in cache: the request goes there, unless that replica is imbalanced against the least-loaded
  one by more than `BALANCE_ABS` requests and `BALANCE_REL` times as many (the SGLang model gateway's and
  vLLM router's cache_aware defaults, 64 and 1.5); otherwise, and for a group not seen yet, the least-loaded
  replica. A request hits the cache (its `prefix_len` tokens are not recomputed) only on a replica that served
  its group before; the cache is taken to keep every prefix it served (no eviction is modelled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from gpuplan.errors import InputError
from gpuplan.simulate.arrivals import Workload
from gpuplan.simulate.decode_table import DecodeTable
from gpuplan.simulate.engine_sim import EngineConfig, EngineResult, RawRun, StepCost, check_fits, engine_loop

__all__ = ["BALANCE_ABS", "BALANCE_REL", "ROUTERS", "FleetRun", "Router", "simulate_fleet"]

Router = Literal["random", "round-robin", "least-load", "cache-aware"]
ROUTERS: tuple[Router, ...] = ("least-load", "cache-aware", "round-robin", "random")
BALANCE_ABS = 64  # SGLang model gateway / vllm-router cache_aware: --balance-abs-threshold default
BALANCE_REL = 1.5  # ... --balance-rel-threshold default


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FleetRun:
    """One fleet simulation: which replica served each request, and all requests' times as one run."""

    router: str
    replicas: int
    replica_of: np.ndarray  # per request
    cached_len: np.ndarray  # prompt tokens each request found in its replica's prefix cache
    idle_at_arrival: np.ndarray  # per request: replicas with nothing outstanding when it was routed
    chosen_was_idle: np.ndarray  # per request: its replica had nothing outstanding when it was routed
    runs: tuple[RawRun, ...]  # per replica, over the requests it served
    merged: RawRun  # every request in arrival order; totals over replicas (busy_s: the mean replica's)


def _check(workload: Workload, replicas: int, router: str, prefix_group: np.ndarray | None,
           prefix_len: np.ndarray | None) -> None:
    if not isinstance(replicas, int) or replicas < 1:
        raise InputError(field="replicas", value=replicas, allowed="a positive integer")
    if router not in ROUTERS:
        raise InputError(field="router", value=router, allowed=", ".join(ROUTERS),
                         hint="least-load is what production routers run (llm-d, SGLang, vLLM router)")
    if (prefix_group is None) != (prefix_len is None):
        raise InputError(field="prefix_group", value="one of prefix_group, prefix_len",
                         allowed="both or neither")
    if prefix_len is not None and prefix_group is not None:
        if len(prefix_len) != workload.n or len(prefix_group) != workload.n:
            raise InputError(field="prefix_len", value=len(prefix_len), allowed=f"{workload.n} values, one a request")
        if (prefix_len < 0).any() or (prefix_len >= workload.input_len).any():
            raise InputError(field="prefix_len", value=int(prefix_len.max()), allowed="0 <= prefix_len < input_len",
                             hint="an engine computes at least the last prompt token")


def simulate_fleet(workload: Workload, cost: StepCost, config: EngineConfig | None = None, *, replicas: int,
                   router: Router = "least-load", seed: int = 0, prefix_group: np.ndarray | None = None,
                   prefix_len: np.ndarray | None = None) -> FleetRun:
    """Simulate `replicas` identical replicas behind `router` serving `workload`.

    `prefix_group`/`prefix_len` (per request): the group whose prefix a request shares and that prefix's tokens;
    a replica that served the group before computes the prompt past the prefix. `workload.cached_len`, if set,
    is a hit stated up front (`--prefix-hit`): it applies on any replica, and a group's hit replaces it where
    longer.
    """
    cfg = config or EngineConfig()
    _check(workload, replicas, router, prefix_group, prefix_len)
    cap_tokens = int(cost.kv_capacity_tokens) // cfg.kv_block_tokens * cfg.kv_block_tokens
    check_fits(int((workload.input_len + workload.output_len).max()), cap_tokens)
    n = workload.n
    arrival = workload.arrival_s.tolist()
    inp_all = workload.input_len.tolist()
    out_all = workload.output_len.tolist()
    stated = workload.cached_len.tolist() if workload.cached_len is not None else [0] * n
    groups = prefix_group.tolist() if prefix_group is not None else None
    plen = prefix_len.tolist() if prefix_len is not None else None
    tokens = [a + b for a, b in zip(inp_all, out_all, strict=True)]
    first = arrival[0]
    arrs: list[list[float]] = [[first] for _ in range(replicas)]
    inps: list[list[int]] = [[] for _ in range(replicas)]
    outs: list[list[int]] = [[] for _ in range(replicas)]
    hits: list[list[int]] = [[] for _ in range(replicas)]
    logs: list[list[tuple[float, int]]] = [[] for _ in range(replicas)]
    ids: list[list[int]] = [[] for _ in range(replicas)]  # fleet request ids by replica-local id
    table = DecodeTable(cost, int(cost.kv_capacity_tokens))  # one per fleet: its replicas share the step cost
    loops = [engine_loop(arrs[k], inps[k], outs[k], cost, cfg, hit=hits[k], done_log=logs[k], table=table)
             for k in range(replicas)]
    clock = [0.0] * replicas
    quiet = [0.0] * replicas  # no request of replica k finishes before quiet[k] unless one is routed to it
    for k, loop in enumerate(loops):  # each waits at the first arrival
        clock[k], quiet[k] = next(loop)
    read = [0] * replicas  # completions the router has seen, per replica
    load_tok = [0] * replicas  # outstanding tokens per replica
    load_req = [0] * replicas  # outstanding requests per replica
    served: dict[int, set[int]] = {}  # prefix group -> replicas holding its prefix
    home: dict[int, int] = {}  # prefix group -> the replica the router last sent it to
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, replicas, size=n).tolist() if router == "random" else None
    replica_of = [0] * n
    cached = [0] * n
    idle_at = [0] * n
    chosen_idle = [False] * n
    look_all = router in ("least-load", "cache-aware")  # routers that compare replicas' loads

    def advance(k: int, a: float) -> None:
        """Run replica k to time a and take in its completions up to a."""
        if clock[k] < a and quiet[k] <= a:
            arrs[k][-1] = a
            clock[k], quiet[k] = next(loops[k])
        log, p = logs[k], read[k]
        while p < len(log) and log[p][0] <= a:
            j = ids[k][log[p][1]]
            load_tok[k] -= tokens[j]
            load_req[k] -= 1
            p += 1
        read[k] = p

    idle = set(range(replicas))  # replicas with nothing outstanding when last looked at (they stay so until routed to)

    def balance() -> int:
        """The least-loaded replica at the arrival: an idle one if any is known (all tie at zero tokens), else
        every replica is brought up to now and compared (fewest outstanding tokens, then requests, then index)."""
        if idle:
            return min(idle)
        best, best_tok, best_req = 0, -1, 0
        for k in range(replicas):
            if clock[k] < a and quiet[k] <= a:
                arrs[k][-1] = a
                clock[k], quiet[k] = next(loops[k])
            log, p = logs[k], read[k]
            if p < len(log) and log[p][0] <= a:
                advance(k, a)
            tok, req = load_tok[k], load_req[k]
            if not req:
                idle.add(k)
            if best_tok < 0 or tok < best_tok or (tok == best_tok and req < best_req):
                best, best_tok, best_req = k, tok, req
        return min(idle) if idle else best

    for j in range(n):
        a = arrival[j]
        if router == "least-load":
            k = balance()
        elif router == "cache-aware":
            k = balance()
            g = groups[j] if groups is not None else None
            h = home.get(g) if g is not None else None
            if h is not None and not (load_req[h] - load_req[k] > BALANCE_ABS
                                      and load_req[h] > BALANCE_REL * load_req[k]):
                k = h
        elif router == "round-robin":
            k = j % replicas
        else:
            assert picks is not None
            k = picks[j]
        advance(k, a)
        if look_all:
            idle_at[j] = len(idle)
        chosen_idle[j] = load_req[k] == 0
        idle.discard(k)
        hit = stated[j]
        if groups is not None and plen is not None:
            g = groups[j]
            if k in served.get(g, ()):
                hit = max(hit, plen[j])
            served.setdefault(g, set()).add(k)
            home[g] = k
        replica_of[j] = k
        cached[j] = hit
        load_tok[k] += tokens[j]
        load_req[k] += 1
        ids[k].append(j)
        quiet[k] = 0.0  # its next completion may now come sooner
        arr = arrs[k]
        arr[-1] = a
        arr.append(arrival[j + 1] if j + 1 < n else math.inf)
        inps[k].append(inp_all[j])
        outs[k].append(out_all[j])
        hits[k].append(hit)
    results: list[EngineResult] = []
    for k in range(replicas):
        arrs[k][-1] = math.inf
        try:
            next(loops[k])
        except StopIteration as stop:
            results.append(stop.value)
            continue
        raise AssertionError("a replica with its last arrival known waited for the router")  # pragma: no cover
    return _assemble(workload, cfg, router, replicas, replica_of, cached, idle_at, chosen_idle, ids, results)


def _assemble(workload: Workload, cfg: EngineConfig, router: str, replicas: int, replica_of: list[int],
              cached: list[int], idle_at: list[int], chosen_idle: list[bool], ids: list[list[int]],
              results: list[EngineResult]) -> FleetRun:
    n = workload.n
    sched = np.full(n, np.nan)
    first = np.full(n, np.nan)
    fin = np.full(n, np.nan)
    npre = np.zeros(n, dtype=np.int64)
    runs = []
    hit = np.asarray(cached, dtype=np.int64)
    for k, res in enumerate(results):
        idx = np.asarray(ids[k], dtype=np.int64)
        m = len(idx)
        s_k, f_k, e_k, p_k, t, busy, iters, bsum, bmax, kv_ts, kv_peak, cap = res
        sched[idx], first[idx], fin[idx] = s_k[:m], f_k[:m], e_k[:m]
        npre[idx] = p_k[:m]
        if m:
            w = Workload(arrival_s=workload.arrival_s[idx], input_len=workload.input_len[idx],
                         output_len=workload.output_len[idx], label=f"{workload.label} replica {k}",
                         cached_len=hit[idx] if hit.any() else None)
        else:
            w = workload  # a replica that got nothing: its run is empty (its arrays index no request)
        runs.append(RawRun(workload=w, config=cfg, scheduled_s=np.array(s_k[:m]), first_token_s=np.array(f_k[:m]),
                           finish_s=np.array(e_k[:m]), preemptions=np.array(p_k[:m], dtype=np.int64), end_s=t,
                           busy_s=busy, iterations=iters, batch_sum=bsum, batch_max=bmax, kv_token_seconds=kv_ts,
                           kv_peak_blocks=kv_peak, kv_capacity_blocks=cap, kv_block_tokens=cfg.kv_block_tokens))
    merged_w = Workload(arrival_s=workload.arrival_s, input_len=workload.input_len, output_len=workload.output_len,
                        label=f"{workload.label} on {replicas} replicas ({router})",
                        cached_len=hit if hit.any() else None)
    merged = RawRun(workload=merged_w, config=cfg, scheduled_s=sched, first_token_s=first, finish_s=fin,
                    preemptions=npre, end_s=max(r.end_s for r in runs),
                    busy_s=sum(r.busy_s for r in runs) / replicas, iterations=sum(r.iterations for r in runs),
                    batch_sum=sum(r.batch_sum for r in runs), batch_max=max(r.batch_max for r in runs),
                    kv_token_seconds=sum(r.kv_token_seconds for r in runs),
                    kv_peak_blocks=sum(r.kv_peak_blocks for r in runs),
                    kv_capacity_blocks=sum(r.kv_capacity_blocks for r in runs), kv_block_tokens=cfg.kv_block_tokens)
    return FleetRun(router=router, replicas=replicas, replica_of=np.asarray(replica_of, dtype=np.int64),
                    cached_len=hit, idle_at_arrival=np.asarray(idle_at, dtype=np.int64),
                    chosen_was_idle=np.asarray(chosen_idle, dtype=bool), runs=tuple(runs), merged=merged)


# --- end of the compiled twin: the lines below pick it where it was built from this source (simulate/native.py)
from gpuplan.simulate.native import twin as _twin  # noqa: E402

if (_compiled := _twin("fleet_sim")) is not None:
    simulate_fleet = _compiled.simulate_fleet  # noqa: F811 - the same function, compiled with mypyc
