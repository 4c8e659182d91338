"""Check that a speed change moved no answer: the JSON of four planning questions, before and after.

`save DIR` runs each question as a process (`python -m gpuplan.cli.main`, the gpuplan on your PYTHONPATH) and
writes DIR/<name>.json, and for `plan infer` also the text answer DIR/<name>.txt (it adds the advisor's findings
and the growth re-plan, which the JSON leaves out), plus DIR/counts.txt; `compare A B` compares two such folders
value by value (every key, every number, every string; lists in order) and the text line by line, and prints
each difference with its JSON path or line, exit 1 if any. The questions:

    readme        plan infer, the README example (llama3.1-70b, 20 req/s)
    long_context  plan infer, Qwen3-32B at 2 req/s of 32-64k-token prompts, --market global
    deepseek      plan infer, DeepSeek-V3 at 20 req/s (4096 in, 1024 out, p99 TTFT 3 s, TPOT 80 ms)
    train         plan train, the README example (llama3.1-70b on 15T tokens), --json --all

Usage: PYTHONPATH=src python benchmarks/plan_equality.py save /tmp/after
       python benchmarks/plan_equality.py compare /tmp/before /tmp/after
About two minutes of CPU for `save` on the development machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

QUESTIONS: dict[str, list[str]] = {
    "readme": ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-dist", "uniform:512-2048",
               "--output-dist", "uniform:128-512", "--ttft-p99", "2", "--tpot-p99", "0.05"],
    "long_context": ["plan", "infer", "-m", "qwen3-32b", "--qps", "2", "--input-dist", "uniform:32768-65536",
                     "--output-len", "256", "--ttft-p99", "20", "--tpot-p99", "0.1", "--market", "global"],
    "deepseek": ["plan", "infer", "-m", "deepseek-v3", "--qps", "20", "--input-len", "4096", "--output-len", "1024",
                 "--ttft-p99", "3", "--tpot-p99", "0.08"],
    "train": ["plan", "train", "-m", "llama3.1-70b", "--tokens", "15e12", "--all"],
}


def _run(name: str, args: list[str]) -> tuple[bytes, float]:
    """stdout of `gpuplan ARGS` and the CPU seconds it took."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    t0 = os.times()
    res = subprocess.run([sys.executable, "-m", "gpuplan.cli.main", *args], capture_output=True, check=False,
                         env=env)
    t1 = os.times()
    if res.returncode != 0:
        raise SystemExit(f"{name}: exit {res.returncode}\n{res.stderr.decode(errors='replace')}")
    return res.stdout, (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)


def save(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, args in QUESTIONS.items():
        doc, cpu = _run(name, [*args, "--json"])
        (out / f"{name}.json").write_bytes(doc)
        line = f"{name}: --json {cpu:.2f} s CPU, {len(doc):,} bytes"
        if args[1] == "infer":
            text, cpu = _run(name, args)
            (out / f"{name}.txt").write_bytes(text)
            line += f"; text {cpu:.2f} s CPU"
        lines.append(line)
        print(line, flush=True)
    (out / "counts.txt").write_text("\n".join(lines) + "\n")


def diff(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'after' if k in b else 'before'}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b or type(a) is not type(b):
        out.append(f"{path}: {a!r} -> {b!r}")


def compare(before: Path, after: Path) -> int:
    bad = 0
    for name in QUESTIONS:
        a = json.loads((before / f"{name}.json").read_text())
        b = json.loads((after / f"{name}.json").read_text())
        out: list[str] = []
        diff(a, b, name, out)
        if (before / f"{name}.txt").exists():
            ta = (before / f"{name}.txt").read_text().splitlines()
            tb = (after / f"{name}.txt").read_text().splitlines()
            out += [f"text line {i + 1}: {x!r} -> {y!r}"
                    for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y]
            if len(ta) != len(tb):
                out.append(f"text: {len(ta)} lines before, {len(tb)} after")
        print(f"{name}: {'identical' if not out else f'{len(out)} differences'}")
        for line in out[:40]:
            print("  " + line)
        bad += len(out)
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("dir", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.cmd == "save":
        save(args.dir)
    else:
        raise SystemExit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
