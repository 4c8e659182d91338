"""Print the accuracy of the memory estimator.

1. Activation bytes against real PyTorch: tiny transformers models (Llama GQA, Qwen2 bias,
   Qwen3 qk-norm, Mixtral MoE, DeepSeek-V3 MLA) built on the CPU, eager and SDPA
   attention, with and without gradient checkpointing (needs torch and transformers).
2. The measured rows of the shipped memory.csv (gpuplan/validate/data/ground_truth) (peak, model states, KV cache).

Usage: python benchmarks/memory_accuracy.py [--cases PATH] [--skip-torch]
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from pathlib import Path

from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.validate.ground_truth import shipped_dir
from gpuplan.validate.run import validate_file
from gpuplan.workload.jobs import TrainingJob

DEFAULT_CASES = shipped_dir() / "memory.csv"


def activation_table() -> list[float]:
    from gpuplan.validate.torch_probe import TINY_SPECS, build_hf_model, saved_activation_bytes

    print("## Activation bytes vs PyTorch saved tensors (bf16, CPU)")
    head = ("model", "attn", "ckpt", "b", "s", "measured", "estimated", "error")
    print("{:16s} {:5s} {:4s} {:>2s} {:>4s} {:>11s} {:>11s} {:>8s}".format(*head))
    errors = []
    for name, spec in TINY_SPECS.items():
        for attn in ("eager", "sdpa"):
            for ckpt in (False, True):
                if name == "deepseek-v3-mla" and attn == "sdpa" and not ckpt:
                    continue  # CPU SDPA math fallback upcasts MLA to fp32 (see docs/validation.md)
                for b, s in ((1, 64), (2, 256)):
                    model = build_hf_model(spec, attn_implementation=attn)
                    meas = saved_activation_bytes(model, b, s, checkpointing=ckpt)
                    job = TrainingJob(seq_len=s, micro_batch=b, attention="eager" if attn == "eager" else "flash",
                                      recompute="full" if ckpt else "none")
                    est = estimate_training_memory(spec, job).activations_bytes
                    err = (est - meas) / meas
                    errors.append(abs(err))
                    print(f"{name:16s} {attn:5s} {ckpt!s:4s} {b:2d} {s:4d} {meas:11d} {est:11.0f} {err:+8.2%}")
    print(f"cases {len(errors)}  max |error| {max(errors):.2%}  median |error| {statistics.median(errors):.3%}\n")
    return errors


def golden_table(path: Path) -> None:
    print(f"## Ground-truth memory rows ({path.name}, measured rows only)")
    print(f"{'id':5s} {'metric':24s} {'measured':>9s} {'predicted':>9s} {'APE':>7s}  detail")
    report = validate_file(path)
    for r in report.cases:
        print(f"{r.id:5s} {r.metric:24s} {r.measured:9.2f} {r.predicted:9.2f} {r.ape:7.1%}  {r.detail}")
    print(f"rows {len(report.cases)}  median APE {report.median_ape:.1%}  p90 APE {report.p90_ape:.1%}")
    worst = sorted(report.cases, key=lambda c: c.ape, reverse=True)[:5]
    print("worst: " + ", ".join(f"{c.id} {c.ape:.0%}" for c in worst))
    for rid, reason in report.skipped:
        print(f"skipped {rid}: {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--skip-torch", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if not args.skip_torch:
        activation_table()
    if args.cases.exists():
        golden_table(args.cases)
    else:
        print(f"no case file at {args.cases}")


if __name__ == "__main__":
    main()
