"""Every numeric option of every command: zero, negative, NaN or infinite values get exit code 2 and one line
naming the option, never a crash and never a silent replacement.

At 55c5404 (before issue 17 item 1), `estimate train --ep 0`, `plan train --top 0`, `--server-price 0`, `estimate
infer --num-accels 0` and `--num-requests 0`, `bench --tp 0` and `--workers 0` exited 0 with the value ignored or
replaced; `estimate infer --pp 0` died with ZeroDivisionError, `memory infer --device-memory-gib nan` and `plan infer
--term load_headroom=nan` with ValueError; `memory train --tp 0` printed numpy warnings before its error, and
`memory infer --group-size 0` named a pydantic field (int4_group_size), not the option. (The ZeroDivisionError of
`estimate train --seq-len 0` and the silent `--global-batch 0`, `--nics-per-node 0`, `--gpus-per-node 0` were fixed
in 0b428b3; they are covered here too.)

The table is checked against the command tree: a new int or float option fails `test_every_numeric_option_is_listed`
until it is listed here with the base command that reaches its check.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cli_result import one_line_error
from gpuplan.cli.main import app

runner = CliRunner()

# A valid call of each command, quick to answer; the bad value replaces or joins these arguments.
BASE: dict[str, list[str]] = {
    "compare": ["compare", "-m", "llama3-8b", "--accelerators", "h100-sxm5-80gb", "--tokens", "1e9",
                "--max-devices", "8"],
    "serve": ["serve"],  # every bad number exits before the server starts
    "tco": ["tco", "--accelerator", "h100-sxm5-80gb", "--devices", "8", "--years", "3", "--utilization", "0.5"],
    "memory train": ["memory", "train", "-m", "llama3-8b"],
    "memory infer": ["memory", "infer", "-m", "llama3-8b"],
    "estimate train": ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "8"],
    "estimate infer": ["estimate", "infer", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--input-len", "512",
                       "--output-len", "64"],
    "plan train": ["plan", "train", "-m", "llama3-8b", "--tokens", "1e9", "--max-devices", "8"],
    "plan infer": ["plan", "infer", "-m", "llama3-8b", "--ttft-p99", "2", "--tpot-p99", "0.1", "--qps", "1",
                   "--max-devices", "8"],
    "catalog list": ["catalog", "list", "accelerators"],
    # the check comes before the suite runs (and before torch is imported): nothing is measured
    "bench": ["bench", "--device", "cpu", "--quick", "--only", "gemm"],
}

# Options where zero is a meaningful value: ZeRO stage 0, no generated tokens, no memory floor, no draft tokens.
ZERO_OK = {("memory train", "--zero"), ("estimate train", "--zero"), ("memory infer", "--generated"),
           ("catalog list", "--min-memory-gib"), ("estimate infer", "--draft-tokens"), ("plan infer", "--prefix-hit"),
           ("plan infer", "--shared-prefix"), ("plan infer", "--prefix-set"),  # 0: the prefix set taken as held
           ("tco", "--wacc")}  # no cost of capital is a valid question (the straight-line comparison)
NUMERIC = (int, float)


def _command(path: str) -> Any:
    root = typer.main.get_command(app)
    ctx = type(root).context_class(root)
    cmd = root
    for name in path.split():
        cmd = cmd.get_command(ctx, name)
    return cmd


def _numeric_options(path: str) -> list[tuple[str, type]]:
    out = []
    for p in _command(path).params:
        ann = p.type_descriptor.annotation
        base = [a for a in typing.get_args(ann) if a is not type(None)] or [ann]
        if p.param_type_name == "option" and base[0] in NUMERIC:
            out.append((p.opts[0], base[0]))
    return out


def _all_commands() -> list[str]:
    root = typer.main.get_command(app)
    ctx = type(root).context_class(root)
    found: list[str] = []

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])
        else:
            found.append(" ".join(path))

    walk(root, [])
    return found


def _cases() -> list[Any]:
    cases = []
    for path in BASE:
        for opt, _kind in _numeric_options(path):
            bad = ["-1", "nan", "inf"]  # an int option turns nan and inf away as typer's usage error
            if (path, opt) not in ZERO_OK:
                bad = ["0", *bad]
            for value in bad:
                cases.append(pytest.param(path, opt, value, id=f"{path.replace(' ', '-')}{opt}={value}"))
    return cases


def test_every_numeric_option_is_listed() -> None:
    """Each command with an int or float option has a base call here (so the parametrized test reaches it)."""
    missing = [path for path in _all_commands() if _numeric_options(path) and path not in BASE]
    assert not missing, f"add a base call for {missing}"
    assert len(_cases()) > 300


@pytest.mark.parametrize(("path", "opt", "value"), _cases())
def test_bad_number_is_one_line_exit_2(path: str, opt: str, value: str, tmp_path: Path) -> None:
    args = list(BASE[path])
    if path == "bench":
        args += ["--dir", str(tmp_path), "--out", str(tmp_path / "b.json")]
    if opt in args:
        args[args.index(opt) + 1] = value
    else:
        args += [opt, value]
    res = runner.invoke(app, [*args, "--lang", "en"])
    one_line_error(res, opt.lstrip("-"))
    assert not (Path(tmp_path) / "b.json").exists()  # bench measured nothing


@pytest.mark.parametrize(("path", "opt"), sorted(ZERO_OK))
def test_zero_where_it_means_something_is_accepted(path: str, opt: str) -> None:
    res = runner.invoke(app, [*BASE[path], opt, "0", "--json"])
    assert res.exception is None and res.exit_code == 0, res.output


def test_chinese_frame_names_the_option() -> None:
    res = runner.invoke(app, [*BASE["estimate train"], "--seq-len", "0", "--lang", "zh"])
    one_line_error(res, "seq-len")
    assert res.output.startswith("错误") and "不小于 1 的整数" in res.output


@pytest.mark.parametrize("args", [
    ["plan", "train", "-m", "llama3-8b", "--tokens", "1e9", "--max-devices", "8", "--threshold", "goodput_min=nan"],
    ["plan", "infer", "-m", "llama3-8b", "--ttft-p99", "2", "--tpot-p99", "0.1", "--qps", "1", "--max-devices", "8",
     "--term", "load_headroom=nan"],
    ["estimate", "infer", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--input-len", "512",
     "--output-len", "64", "--term", "gemm_efficiency=inf"],
])
def test_non_finite_term_override_is_one_line(args: list[str]) -> None:
    """`plan infer --term load_headroom=nan` raised ValueError in the replica count before issue 17 (55c5404)."""
    res = runner.invoke(app, args)
    one_line_error(res, args[-1].split("=")[0])
