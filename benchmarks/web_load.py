"""Load test of `gpuplan serve`: N concurrent users against a server started here on loopback.

Starts `gpuplan serve` on 127.0.0.1 on a free port (a fresh SQLite file unless --database-url), stores one plan,
then runs two phases and prints one Markdown table per phase (requests, throughput, p50/p99 latency, errors,
429s, 5xx, timeouts per endpoint):

1. burst: `--users` plan searches at once, each a request not stored yet (answered, or 429 = queued: the client
   is told to come back; never a timeout or a 5xx);
2. mix: `--users` users for `--seconds`, each in a loop of memory requests, views of the stored plan's page
   (`/p/<id>`), the listing pages `/` and `/history` (`--listing-share`, over `--stored-plans` plans imported
   before the run) and, now and then, a plan search (`--search-share`), each user waiting `--think` seconds on
   average between requests (0, the default: no pause, the server saturated).

Exits 1 on any 5xx, timeout or error (a connection failure or an unexpected status); with --targets also when
a p99 misses its target (cached page and listings 200 ms, memory 100 ms). Nothing leaves the machine.
Usage: python benchmarks/web_load.py --users 20 --seconds 20 [--slots 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

TARGETS_MS = {"page /p/<id>": 200.0, "memory POST /api/v1/memory/train": 100.0, "page /": 200.0,
              "page /history": 200.0}
EXPECTED = {"memory POST /api/v1/memory/train": {200}, "page /p/<id>": {200}, "page /": {200},
            "page /history": {200}, "search POST /api/v1/plan/train": {200, 429}}


@dataclass
class Tally:
    """What one endpoint answered in one phase."""

    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    errors: int = 0
    timeouts: int = 0

    def row(self, name: str, seconds: float) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        n = len(lat) + self.errors + self.timeouts

        def pct(p: float) -> float | None:
            return lat[min(len(lat) - 1, int(round(p * (len(lat) - 1))))] if lat else None

        return {"endpoint": name, "requests": n, "per_s": n / seconds if seconds else 0.0, "p50_ms": pct(0.5),
                "p99_ms": pct(0.99), "ok": self.statuses.get(200, 0), "busy_429": self.statuses.get(429, 0),
                "server_5xx": sum(v for k, v in self.statuses.items() if k >= 500),
                "other_4xx": sum(v for k, v in self.statuses.items() if 400 <= k < 500 and k != 429),
                "errors": self.errors, "timeouts": self.timeouts}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, slots: int, time_limit: float, database_url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GPUPLAN_DATABASE_URL": database_url}
    cmd = [sys.executable, "-m", "gpuplan.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--slots", str(slots), "--time-limit", str(time_limit)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_healthy(base: str, proc: subprocess.Popen[bytes], limit_s: float = 60) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"gpuplan serve exited with {proc.returncode}: "
                             f"{(proc.stderr.read() if proc.stderr else b'').decode()[-2000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("gpuplan serve did not answer /healthz within a minute")


class Load:
    """The users' requests and what came back, per phase and endpoint."""

    def __init__(self, client: httpx.AsyncClient, plan_id: str, seed: int, timeout_s: float) -> None:
        self.client = client
        self.plan_id = plan_id
        self.rng = random.Random(seed)
        self.timeout_s = timeout_s
        self.tallies: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
        self.searches = 0

    async def call(self, phase: str, name: str, method: str, url: str, body: dict[str, Any] | None = None) -> None:
        tally = self.tallies[phase][name]
        start = time.perf_counter()
        try:
            r = await self.client.request(method, url, json=body, timeout=self.timeout_s)
        except httpx.TimeoutException:
            tally.timeouts += 1
            return
        except httpx.HTTPError:
            tally.errors += 1
            return
        tally.latencies_ms.append((time.perf_counter() - start) * 1e3)
        tally.statuses[r.status_code] += 1
        if r.status_code not in EXPECTED[name] and r.status_code < 500:
            tally.errors += 1

    def search_body(self) -> dict[str, Any]:
        """A training plan no one has asked for yet (so it is searched, not read from the store)."""
        self.searches += 1
        return {"model": self.rng.choice(["llama3-8b", "llama3.1-8b", "qwen2.5-7b"]),
                "tokens": 1e11 * (1 + self.searches / 997), "deadline": self.rng.choice([20, 30, 60]), "top": 3}

    async def search(self, phase: str) -> None:
        await self.call(phase, "search POST /api/v1/plan/train", "POST", "/api/v1/plan/train", self.search_body())

    async def memory(self, phase: str) -> None:
        body = {"model": "llama3-8b", "tp": self.rng.choice([1, 2, 4, 8]), "seq_len": self.rng.choice([2048, 4096]),
                "accelerator": self.rng.choice(["h100-sxm5-80gb", "h20-96gb", "a100-sxm4-80gb"])}
        await self.call(phase, "memory POST /api/v1/memory/train", "POST", "/api/v1/memory/train", body)

    async def page(self, phase: str) -> None:
        await self.call(phase, "page /p/<id>", "GET", f"/p/{self.plan_id}?lang=" + self.rng.choice(["en", "zh"]))

    async def listing(self, phase: str) -> None:
        if self.rng.random() < 0.5:
            await self.call(phase, "page /", "GET", "/?lang=" + self.rng.choice(["en", "zh"]))
        else:
            await self.call(phase, "page /history", "GET", "/history?page=" + self.rng.choice(["1", "1", "2"]))

    async def user(self, phase: str, until: float, search_share: float, think_s: float,
                   listing_share: float = 0.0) -> None:
        while time.monotonic() < until:
            if think_s:  # a person reading between clicks: 0 to twice the mean
                await asyncio.sleep(self.rng.uniform(0, 2 * think_s))
            x = self.rng.random()
            if x < search_share:
                await self.search(phase)
            elif x < search_share + listing_share:
                await self.listing(phase)
            elif x < search_share + listing_share + (1 - search_share - listing_share) / 2:
                await self.memory(phase)
            else:
                await self.page(phase)


async def store_plans(client: httpx.AsyncClient, plan_id: str, n: int) -> None:
    """`n` more stored plans for the listings: the seed plan's export imported with its result varied (each import
    is a plan of its own; importing is cheap, searching n plans would not be)."""
    doc = (await client.get(f"/api/v1/plans/{plan_id}", params={"download": "1"})).json()
    for i in range(n):
        r = await client.post("/api/v1/plans/import", json=doc | {"candidates_evaluated": i + 1, "plan_id": None,
                                                                    "title": f"load test plan {i}"})
        r.raise_for_status()


def table(rows: list[dict[str, Any]]) -> str:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:,.1f}"

    out = ["| endpoint | requests | per s | p50 ms | p99 ms | 200 | 429 | 5xx | other 4xx | errors | timeouts |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['endpoint']} | {r['requests']} | {r['per_s']:.1f} | {ms(r['p50_ms'])} | {ms(r['p99_ms'])} "
                   f"| {r['ok']} | {r['busy_429']} | {r['server_5xx']} | {r['other_4xx']} | {r['errors']} "
                   f"| {r['timeouts']} |")
    return "\n".join(out)


async def run(base: str, args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    limits = httpx.Limits(max_connections=args.users * 2, max_keepalive_connections=args.users * 2)
    async with httpx.AsyncClient(base_url=base, limits=limits) as client:
        seed = await client.post("/api/v1/plan/train", json={"model": "llama3-8b", "tokens": 1e12, "deadline": 30},
                                 timeout=args.request_timeout)
        seed.raise_for_status()
        load = Load(client, seed.json()["plan_id"], args.seed, args.request_timeout)
        await store_plans(client, seed.json()["plan_id"], args.stored_plans)
        start = time.monotonic()
        await asyncio.gather(*(load.search("burst") for _ in range(args.users)))
        burst_s = time.monotonic() - start
        start = time.monotonic()
        until = start + args.seconds
        await asyncio.gather(*(load.user("mix", until, args.search_share, args.think, args.listing_share)
                               for _ in range(args.users)))
        mix_s = time.monotonic() - start
        return {"burst": [t.row(n, burst_s) for n, t in sorted(load.tallies["burst"].items())],
                "mix": [t.row(n, mix_s) for n, t in sorted(load.tallies["mix"].items())]}


def verdict(result: dict[str, list[dict[str, Any]]], targets: str | None) -> list[str]:
    """Why the run fails (empty when it passes)."""
    bad = []
    for phase, rows in result.items():
        for r in rows:
            for key in ("server_5xx", "timeouts", "errors"):
                if r[key]:
                    bad.append(f"{phase}: {r['endpoint']}: {r[key]} {key}")
            limit = TARGETS_MS.get(r["endpoint"])
            if targets == "pages" and not r["endpoint"].startswith("page "):
                limit = None
            if targets and phase == "mix" and limit is not None and r["p99_ms"] is not None and r["p99_ms"] > limit:
                bad.append(f"{phase}: {r['endpoint']}: p99 {r['p99_ms']:.1f} ms over the {limit:.0f} ms target")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=20, help="concurrent users (1-200)")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of the mixed phase (1-600)")
    ap.add_argument("--slots", type=int, default=2, help="gpuplan serve --slots")
    ap.add_argument("--time-limit", type=float, default=120.0, help="gpuplan serve --time-limit")
    ap.add_argument("--search-share", type=float, default=0.05, help="share of the mixed requests that search")
    ap.add_argument("--request-timeout", type=float, default=60.0, help="seconds before a request counts as timed out")
    ap.add_argument("--think", type=float, default=0.0,
                    help="mean seconds a user waits between requests (0: none, the server saturated)")
    ap.add_argument("--listing-share", type=float, default=0.15, help="share of the mixed requests to / and /history")
    ap.add_argument("--stored-plans", type=int, default=60, help="plans stored before the run (the listings' rows)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--database-url", help="GPUPLAN_DATABASE_URL for the server (default: a fresh SQLite file)")
    ap.add_argument("--targets", nargs="?", const="all", choices=("all", "pages"),
                    help="also fail when a p99 misses its target (pages: the plan page and the listings only)")
    ap.add_argument("--json", type=Path, help="write the figures here as well")
    args = ap.parse_args(argv)
    if not (1 <= args.users <= 200 and 1 <= args.seconds <= 600 and args.search_share >= 0
            and args.listing_share >= 0 and args.search_share + args.listing_share <= 1
            and 0 <= args.stored_plans <= 1000):
        ap.error("--users must be 1-200, --seconds 1-600, --search-share and --listing-share 0-1 together, "
                 "--stored-plans 0-1000")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_server(port, args.slots, args.time_limit, args.database_url or f"sqlite:///{tmp}/load.db")
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc)
            result = asyncio.run(run(base, args))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"## burst: {args.users} plan searches at once (--slots {args.slots})\n\n{table(result['burst'])}\n")
    print(f"## mix: {args.users} users for {args.seconds:g} s, think {args.think:g} s\n\n{table(result['mix'])}\n")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **result}, indent=1))
    bad = verdict(result, args.targets)
    for line in bad:
        print(f"FAIL {line}")
    print("PASS" if not bad else f"FAIL ({len(bad)})")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
