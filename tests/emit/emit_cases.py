"""The plans the emit tests use (README quick start, a 70B multi-node plan, the README's plan infer)."""

from __future__ import annotations

import shlex
from pathlib import Path

from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app

# --market global: without it the cheapest plan within the month is 512 L40S rented in China on TCP (issue 37: offers
# of unstated capacity are no longer capped at 64 devices); the emit tests want the InfiniBand multi-node plan
README_TRAIN = ["plan", "train", "--model", "llama3-8b", "--tokens", "1e12", "--deadline", "30", "--market", "global"]
TRAIN_70B = ["plan", "train", "--model", "llama3-70b", "--tokens", "2e12", "--deadline", "60",
             "--vendor", "nvidia"]
README_INFER = ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-dist", "uniform:512-2048",
                "--output-dist", "uniform:128-512", "--ttft-p99", "2", "--tpot-p99", "0.05"]


def emit(args: list[str], out: Path, fmt: str = "all") -> dict[str, str]:
    res = CliRunner().invoke(app, [*args, "--emit", fmt, "--out", str(out), "--json"])
    exited(res, 0)
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(out.iterdir())}


def array_args(text: str) -> list[tuple[str, str | None]]:
    """The (flag, value) pairs of an emitted Megatron/MindSpeed script's GPUPLAN_ARGS array, one flag a line, as the
    shell reads them (a value of several words, e.g. --spec MODULE layer_spec, stays one string)."""
    body = text[text.index("GPUPLAN_ARGS=(") + len("GPUPLAN_ARGS=("):text.index("\n)\n")]
    out: list[tuple[str, str | None]] = []
    for line in body.strip().splitlines():
        words = shlex.split(line)
        out.append((words[0], " ".join(words[1:]) or None))
    return out
