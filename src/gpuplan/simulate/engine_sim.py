"""Discrete-event simulation of a continuous-batching engine with a paged KV cache.

The engine runs iterations (Yu et al. 2022, Orca: iteration-level scheduling); each
iteration's wall time comes from a step cost model. Scheduling follows vLLM (Kwon et al.
2023, PagedAttention; vLLM v1 scheduler docs):

- KV cache in blocks of `kv_block_tokens`; a request holds ceil(tokens / block) blocks,
  allocated as its context grows. Admission needs free blocks for the (chunk of the)
  prompt; `max_num_seqs` caps running requests; `max_batched_tokens` caps the tokens of one
  iteration (decodes count one each).
- When a running request cannot get its next block, the most recently admitted running
  request is preempted by recompute: its blocks are freed and it re-enters the front of the
  queue; on re-admission its prompt plus the tokens generated so far are prefilled again.
- `decode_first` and `fcfs` (vLLM v1, TensorRT-LLM, LMDeploy): every iteration runs all
  decodes, then fills the rest of the token budget with prompts in arrival order, split
  into chunks when `chunked_prefill` is on, else whole (a prompt that does not fit waits).
  `prefill_first` (vLLM v0, SGLang, MindIE): an iteration with admissible prompts runs only
  prompts (chunks of the budget when chunking) while the running decodes pause.
- `static` (FasterTransformer, TensorRT-LLM before in-flight batching): prompts are admitted only while
  no request decodes; the batch then decodes until its last request ends (a row's `batching=static`).
- `batching=False` serves one request at a time (an M/D/1 server for fixed lengths).

Speed: time advances per iteration only while a prompt is being prefilled. Between
events (an arrival that can be admitted, a completion, a KV-cache overflow) the iterations
are pure decode, and the k iterations are summed in closed form: with n decoding requests
the kv tokens grow by n per step, and step_s is affine in decode_kv_tokens for fixed n
(checked per n at three points; where it is not, the run is summed from `step_s_array`,
so the result stays exact). Blocks in use are counted in O(block size) from a histogram of
context lengths modulo the block size, so no per-token or per-request loop runs per step.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Generator
from typing import cast

import numpy as np

from gpuplan.errors import InputError
from gpuplan.simulate.arrivals import Workload
from gpuplan.simulate.decode_table import DecodeTable
from gpuplan.simulate.engine_config import EngineConfig, EngineResult, RawRun, StepCost

__all__ = ["EngineConfig", "EngineResult", "RawRun", "StepCost", "check_fits", "engine_loop", "positional_step",
           "raw_run", "simulate_engine"]

_NO_CHUNKS: list[tuple[int, int, int]] = []  # never appended to (the fast path's empty prompt work)


def simulate_engine(workload: Workload, cost: StepCost, config: EngineConfig | None = None, *,
                    max_run_steps: int | None = None) -> RawRun:
    """Simulate one engine replica serving `workload`; raises InputError if a request can never fit.

    `max_run_steps` caps the pure-decode steps summed at once (1: step by step, the reference the
    closed-form runs are tested against); None jumps from event to event.
    """
    cfg = config or EngineConfig()
    cap = int(cost.kv_capacity_tokens) // cfg.kv_block_tokens
    check_fits(int((workload.input_len + workload.output_len).max()), cap * cfg.kv_block_tokens)
    arr = workload.arrival_s.tolist()
    arr.append(math.inf)  # sentinel: no arrival after the last
    hit = workload.cached_len.tolist() if workload.cached_len is not None else None
    loop = engine_loop(arr, workload.input_len.tolist(), workload.output_len.tolist(), cost, cfg, hit=hit,
                       max_run_steps=max_run_steps)
    try:
        next(loop)
    except StopIteration as stop:
        return raw_run(workload, cfg, stop.value)
    raise AssertionError("an engine with every arrival known never waits for the router")  # pragma: no cover


def positional_step(cost: StepCost) -> Callable[[int, float, int, int], float]:
    """`cost.step_s` taking (prefill tokens, attention pairs, decode sequences, KV tokens) by position: the cost
    model's own `step_s_args` where it has one (estimate.infer_step_model, simulate.lockstep), else a wrapper."""
    fast = getattr(cost, "step_s_args", None)
    if fast is not None:
        return cast(Callable[[int, float, int, int], float], fast)

    def step(prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int, decode_kv_tokens: int) -> float:
        return cost.step_s(prefill_tokens=prefill_tokens, prefill_attn_pairs=prefill_attn_pairs,
                           decode_seqs=decode_seqs, decode_kv_tokens=decode_kv_tokens)

    return step


def check_fits(need_tokens: int, cap_tokens: int) -> None:
    """InputError when a request of `need_tokens` (prompt + output) exceeds the whole KV cache."""
    if need_tokens > cap_tokens:
        raise InputError(field="request length", value=need_tokens,
                         allowed=f"at most {cap_tokens} tokens of KV cache on this deployment",
                         hint="a request longer than the whole KV cache can never be served; use more memory, "
                              "more tensor parallelism or shorter requests")


def raw_run(workload: Workload, cfg: EngineConfig, res: EngineResult) -> RawRun:
    """The RawRun of `workload` from an engine loop's result."""
    (sched, first, fin, npre, t, busy, iters, batch_sum, batch_max, kv_ts, kv_peak, cap) = res
    n = workload.n
    return RawRun(workload=workload, config=cfg, scheduled_s=np.array(sched[:n]), first_token_s=np.array(first[:n]),
                  finish_s=np.array(fin[:n]), preemptions=np.array(npre[:n], dtype=np.int64), end_s=t, busy_s=busy,
                  iterations=iters, batch_sum=batch_sum, batch_max=batch_max, kv_token_seconds=kv_ts,
                  kv_peak_blocks=kv_peak, kv_capacity_blocks=cap, kv_block_tokens=cfg.kv_block_tokens)




def engine_loop(arr: list[float], inp: list[int], out: list[int], cost: StepCost, cfg: EngineConfig, *,
                hit: list[int] | None = None, done_log: list[tuple[float, int]] | None = None,
                max_run_steps: int | None = None,
                table: DecodeTable | None = None) -> Generator[tuple[float, float], None, EngineResult]:
    """The engine's event loop over requests `arr`/`inp`/`out` (arrival order), `arr` ending in one more time.

    With every arrival known, that last time is inf and the loop runs to the end without yielding. A fleet
    (simulate.fleet_sim) feeds arrivals as its router assigns them: the last time is then the next arrival to
    the fleet (the horizon); when the engine reaches it, it yields its clock, and the fleet either appends the
    request (its arrival before the new horizon) or moves the horizon on (inf after the last arrival). The
    engine only ever waits at the horizon, so its trajectory is the one `simulate_engine` gives for the
    requests it was assigned. It yields (clock, quiet): no request can finish before `quiet` unless one is
    added (the end of the decode run it was cut from; inf when idle), so the fleet need not resume it to see
    its completions before then. `hit[i]`: prompt tokens of request i found in the prefix cache (vLLM automatic
    prefix caching, SGLang RadixAttention): its prefill starts past them, attending to them, and its KV holds
    them (a shared prefix's blocks are counted per request: conservative). `done_log` receives (time, request)
    as requests finish, in time order (the router's view of completions). `table`: the pure-decode step times
    of `cost` (simulate.decode_table), shared by the replicas of a fleet; else one of its own.
    """
    B = cfg.kv_block_tokens
    cap_tokens = int(cost.kv_capacity_tokens)
    cap = cap_tokens // B
    max_seqs = cfg.max_num_seqs if cfg.batching else 1
    budget_max = cfg.max_batched_tokens if cfg.batching else 1 << 62
    chunked = cfg.chunked_prefill and cfg.batching
    # static batching (FasterTransformer, TensorRT-LLM before in-flight batching, gptSessionBenchmark): a
    # batch is formed, prefilled and decoded until its longest request ends; nobody joins a decoding batch
    static = cfg.scheduling == "static"
    prefill_only = cfg.scheduling in ("prefill_first", "static") or not cfg.batching
    n_req = len(arr) - 1
    size = n_req
    hits = hit if hit is not None else [0] * n_req
    log = done_log if done_log is not None else []
    if table is None:
        table = DecodeTable(cost, cap_tokens)
    step_s = positional_step(cost)

    sched = [math.nan] * size
    first = [math.nan] * size
    fin = [math.nan] * size
    npre = [0] * size
    gen = [0] * size  # output tokens generated (valid while not decoding)
    target = [0] * size  # tokens to prefill (prompt + generated, after preemption)
    base = [0] * size  # decoding: kv tokens at decode counter G are base + G
    fin_g = [-1] * size  # decoding: counter value at which it completes; -1 if not decoding

    waiting: deque[int] = deque()
    running: dict[int, None] = {}  # admission order (victim = last)
    prefilling: dict[int, int] = {}  # id -> prompt tokens computed
    heap: list[tuple[int, int]] = []  # (fin_g, id) of decoding requests (lazy deletion)
    cnt = [0] * B  # decoding requests by base mod B
    n_dec = 0
    sum_base = 0
    pf_blocks = 0
    pf_tokens = 0
    t = 0.0
    G = 0
    nxt = 0  # next arrival index
    done = 0
    busy = 0.0
    iters = 0
    batch_sum = 0.0
    batch_max = 0
    kv_ts = 0.0
    kv_peak = 0
    inf = math.inf
    quiet = 0.0
    heappush, heappop, sqrt, ceil = heapq.heappush, heapq.heappop, math.sqrt, math.ceil
    coef = table.coef
    run_cap = max_run_steps if max_run_steps is not None else 1 << 62

    def dec_blocks(g: int) -> int:
        s = 0
        for r in range(B):
            c = cnt[r]
            if c:
                s += c * ((-(r + g)) % B)
        return (sum_base + n_dec * g + s) // B

    while done < n_req or arr[n_req] != inf:
        # arrivals up to now join the queue
        while arr[nxt] <= t:
            if nxt == n_req:  # the fleet's horizon: its router decides where the next request goes
                yield t, quiet
                n_req = len(arr) - 1
                if n_req > len(sched):  # room for the requests the fleet gave it
                    more = max(n_req - len(sched), len(sched))
                    for times in (sched, first, fin):
                        times.extend([math.nan] * more)
                    for counts in (npre, gen, target, base):
                        counts.extend([0] * more)
                    fin_g.extend([-1] * more)
                continue
            waiting.append(nxt)
            nxt += 1
            quiet = 0.0
        quiet = 0.0  # no request can finish before this time (set by a decode run; inf when idle)
        if not running and not waiting:
            t = arr[nxt]
            quiet = inf
            continue
        if (not waiting and not prefilling and n_dec
                and (sum_base + n_dec * (G + B - 1)) // B + pf_blocks <= cap):
            # fast path: nothing to admit and the decodes' next blocks surely fit
            preempted = False
            chunks = _NO_CHUNKS
        else:
            # 1. decodes need their next block; preempt the latest admitted until they fit
            preempted = False
            need = 0
            exact = True  # `need` is exact, else an upper bound (sum of ceilings <= (sum + n (B-1)) / B)
            if n_dec:
                need = (sum_base + n_dec * G + n_dec * (B - 1)) // B
                exact = False
                if need + pf_blocks > cap:
                    need = dec_blocks(G)
                    exact = True
                while need + pf_blocks > cap:
                    v, _ = running.popitem()
                    preempted = True
                    npre[v] += 1
                    if fin_g[v] >= 0:
                        gen[v] = out[v] - (fin_g[v] - G)
                        bv = base[v]
                        cnt[bv % B] -= 1
                        sum_base -= bv
                        n_dec -= 1
                        fin_g[v] = -1
                    else:
                        c = prefilling.pop(v)
                        pf_blocks -= -(-c // B)
                        pf_tokens -= c
                    target[v] = inp[v] + gen[v]
                    waiting.appendleft(v)
                    need = dec_blocks(G) if n_dec else 0
            # 2. prompt work for this iteration
            chunks = []  # (id, offset, length)
            p_tok = 0
            pairs = 0.0
            free = cap - pf_blocks - need
            with_decodes = True
            budget = budget_max if prefill_only else budget_max - n_dec
            if chunked:
                for i, c in prefilling.items():
                    if budget <= 0:
                        break
                    x = min(target[i] - c, budget)
                    nb = -(-(c + x) // B) - (-(-c // B))
                    if nb > free and not exact:
                        exact = True
                        e = dec_blocks(G)
                        free += need - e
                        need = e
                    if nb > free:
                        break
                    free -= nb
                    budget -= x
                    chunks.append((i, c, x))
                    p_tok += x
                    pairs += x * c + x * (x + 1) / 2.0  # causal attention pairs of the chunk
            if not preempted and waiting and budget > 0 and not (static and n_dec):
                while waiting and len(running) < max_seqs and budget > 0:
                    i = waiting[0]
                    c0 = 0 if target[i] else hits[i]  # a fresh prompt starts past its cached prefix
                    x = (target[i] if target[i] else inp[i]) - c0
                    if not chunked and x > budget and (chunks or (n_dec and not prefill_only)):
                        break
                    if chunked:
                        x = min(x, budget)
                    nb = -(-(c0 + x) // B)
                    if nb > free and not exact:
                        exact = True
                        e = dec_blocks(G)
                        free += need - e
                        need = e
                    if nb > free:
                        break
                    waiting.popleft()
                    if target[i] == 0:
                        target[i] = inp[i]
                    if sched[i] != sched[i]:
                        sched[i] = t
                    running[i] = None
                    prefilling[i] = c0
                    if c0:
                        pf_blocks += -(-c0 // B)
                        pf_tokens += c0
                    free -= nb
                    budget -= x
                    chunks.append((i, c0, x))
                    p_tok += x
                    pairs += x * c0 + x * (x + 1) / 2.0
            if prefill_only and chunks:
                with_decodes = False  # a prefill-only iteration: running decodes pause
        if chunks:
            # one iteration with prompt work, per-iteration cost call
            nd = n_dec if with_decodes else 0
            kv = sum_base + n_dec * G if nd else 0
            dt = step_s(p_tok, pairs, nd, kv)
            t += dt
            busy += dt
            iters += 1
            bsz = nd + len(chunks)
            batch_sum += bsz
            if bsz > batch_max:
                batch_max = bsz
            held = cap - free  # decodes' blocks for this step, prompts' blocks after it
            if held > kv_peak and not exact:
                held -= need - dec_blocks(G)
            if held > kv_peak:
                kv_peak = held
            if nd:
                G += 1
            for i, c, x in chunks:
                cx = c + x
                pf_blocks += -(-cx // B) - (-(-c // B))
                pf_tokens += x
                if cx < target[i]:
                    prefilling[i] = cx
                    continue
                # prompt done: this iteration emits a token
                del prefilling[i]
                pf_blocks -= -(-cx // B)
                pf_tokens -= cx
                g = gen[i] + 1
                gen[i] = g
                if g == 1:
                    first[i] = t
                if g >= out[i]:
                    fin[i] = t
                    log.append((t, i))
                    del running[i]
                    done += 1
                    continue
                bv = cx + 1 - G
                base[i] = bv
                fin_g[i] = G + out[i] - g
                cnt[bv % B] += 1
                sum_base += bv
                n_dec += 1
                heappush(heap, (fin_g[i], i))
            kv_ts += dt * (sum_base + n_dec * G + pf_tokens)
        elif n_dec:
            # a run of pure decode steps up to the next event
            top = heap[0]
            while top[0] != fin_g[top[1]]:
                heappop(heap)
                top = heap[0]
            k = top[0] - G
            k0 = sum_base + n_dec * G
            # KV overflow: the last step of the run must still fit
            if (k0 + n_dec * (k - 1) + n_dec * (B - 1)) // B + pf_blocks > cap:
                lo, hi = 1, k  # step G + lo - 1 fits (checked above), find the last that fits
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if dec_blocks(G + mid - 1) + pf_blocks <= cap:
                        lo = mid
                    else:
                        hi = mid - 1
                k = lo
            ab = coef[n_dec] if n_dec in coef else table.get(n_dec)
            # an arrival matters only if it could be admitted (FCFS: nothing blocked ahead of it)
            delta = arr[nxt] - t if (not waiting and len(running) < max_seqs) else inf
            if preempted:
                k = 1
            elif k > run_cap:
                k = run_cap
            if ab is not None:
                a, b = ab
                s0 = a + b * k0
                d = b * n_dec
                dt = k * s0 + d * k * (k - 1) / 2.0
                quiet = t + dt
                if dt > delta:
                    # smallest k with k s0 + d k (k - 1) / 2 >= delta (the quadratic's root, then exact)
                    if d <= 0.0:
                        k = max(1, ceil(delta / s0))
                    else:
                        lin = s0 - d / 2.0
                        k = max(1, ceil((sqrt(lin * lin + 2.0 * d * delta) - lin) / d))
                    while k > 1 and (k - 1) * s0 + d * (k - 1) * (k - 2) / 2.0 >= delta:
                        k -= 1
                    while k * s0 + d * k * (k - 1) / 2.0 < delta:
                        k += 1
                    dt = k * s0 + d * k * (k - 1) / 2.0
                # time integral of KV tokens: sum_j (s0 + d j)(k0 + n j), j < k
                s1 = k * (k - 1) / 2.0
                s2 = (k - 1) * k * (2 * k - 1) / 6.0
                kv_ts += s0 * k0 * k + (s0 * n_dec + d * k0) * s1 + d * n_dec * s2
            else:
                ts = table.times(n_dec, k0, k)
                cum = np.cumsum(ts)
                quiet = t + float(cum[-1])
                if cum[-1] > delta:
                    k = int(np.searchsorted(cum, delta)) + 1
                dt = float(cum[k - 1])
                kv_ts += float(ts[:k] @ (k0 + n_dec * np.arange(k, dtype=np.float64)))
            kv_ts += dt * pf_tokens
            t += dt
            busy += dt
            iters += k
            batch_sum += n_dec * k
            if n_dec > batch_max:
                batch_max = n_dec
            held = pf_blocks + (k0 + n_dec * (k - 1) + n_dec * (B - 1)) // B
            if held > kv_peak:
                held = pf_blocks + dec_blocks(G + k - 1)
                if held > kv_peak:
                    kv_peak = held
            G += k
        elif prefilling:
            # partly prefilled prompts hold the cache and none can grow: recompute the latest admitted
            v, _ = running.popitem()
            c = prefilling.pop(v)
            pf_blocks -= -(-c // B)
            pf_tokens -= c
            npre[v] += 1
            target[v] = inp[v] + gen[v]
            waiting.appendleft(v)
            continue
        else:
            if arr[nxt] == inf:  # pragma: no cover - guarded by the length check (check_fits)
                raise InputError(field="workload", value=n_req, allowed="requests that fit the KV cache")
            t = max(t, arr[nxt])
            continue
        # completions at counter G
        while heap and heap[0][0] <= G:
            g_end, i = heappop(heap)
            if fin_g[i] != g_end:
                continue
            fin[i] = t
            log.append((t, i))
            bv = base[i]
            cnt[bv % B] -= 1
            sum_base -= bv
            n_dec -= 1
            fin_g[i] = -1
            del running[i]
            done += 1

    return (sched, first, fin, npre, t, busy, iters, batch_sum, batch_max, kv_ts, kv_peak, cap)


# --- end of the compiled twin: the lines below pick it where it was built from this source (simulate/native.py)
from gpuplan.simulate.native import twin as _twin  # noqa: E402

if (_compiled := _twin("engine_sim")) is not None:
    engine_loop = _compiled.engine_loop  # noqa: F811 - the same function, compiled with mypyc
