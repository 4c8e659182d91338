#!/usr/bin/env bash
# The real-GPU record of `gpuplan bench` (docs/bench.md): one prepared run for a machine with a
# CUDA GPU (planned: 1 x H200, under ~8 minutes in all; an 8-GPU node runs the same script). Needs
# python3 with a CUDA build of torch and gpuplan's dependencies (pydantic, typer, rich, PyYAML, numpy); transformers and
# nvidia-ml-py are optional (without them the plain-torch decoder and torch memory counters are used).
# No network access is needed: gpuplan runs from src/ of this checkout.
#
# Writes into $OUT/docs/bench-records/ when $OUT is set (the device tool brings $OUT back),
# else into docs/bench-records/ of this checkout:
#   bench-<device>.json         the result (validates against docs/bench-result.schema.json)
#   bench-<device>.md           measured vs predicted table (benchmarks/bench_table.py)
#   calibration-<device>.yaml   what `gpuplan calibrate` writes for the part
#   estimate-<device>.txt       llama3.1-8b step time before and after that calibration
#   env.txt, bench.log, pytest-gpu.log
# Usage: bash benchmarks/gpu_record.sh [extra gpuplan bench flags, e.g. --accelerator h200-sxm-141gb]
# (a dry run of the flow on a CPU: DEVICE=cpu OUT=/tmp/rec bash benchmarks/gpu_record.sh --quick)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
DEST="${OUT:-.}/docs/bench-records"
mkdir -p "$DEST"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
t0=$(date +%s)

# 1. environment (what the record was measured with)
timeout 60 "$PY" - > "$DEST/env.txt" 2>&1 <<'PYEOF'
import importlib, platform
import torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
print("cuda available", torch.cuda.is_available(), "devices", torch.cuda.device_count())
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(i, p.name, p.total_memory, f"cc {p.major}.{p.minor}", p.multi_processor_count, "SMs")
for mod in ("transformers", "pynvml", "pydantic", "typer", "rich", "yaml", "numpy", "pytest"):
    try:
        m = importlib.import_module(mod)
        print(mod, getattr(m, "__version__", "ok"))
    except ImportError as exc:
        print(mod, "MISSING", exc)
PYEOF
cat "$DEST/env.txt"
slug=$("$PY" -c "import torch; print(torch.cuda.get_device_name(0).lower().replace('nvidia','').strip().replace(' ','-'))" \
       2>/dev/null || echo unknown)
RESULT="$DEST/bench-$slug.json"

# 2. the suite at full sizes (one GPU: d2d and collectives are skipped with the reason); the result
#    file is rewritten after every benchmark, so a timeout still leaves a partial, valid record.
#    The end-to-end training step goes first: gpuplan's planned layout for the bench model on all
#    local GPUs, one torchrun process per GPU (8 GPUs: DDP/ZeRO/FSDP over 8 ranks; 1 GPU: one rank),
#    with the planner's step time, tokens/s, MFU and memory for the layout run; --timeout caps each
#    torchrun launch (training step, collectives) at 150 s, start-up included.
timeout 420 "$PY" -m gpuplan.cli.main bench --device "${DEVICE:-cuda}" --dir "$WORK" --out "$RESULT" --timeout 150 \
    --only train,decode,gemm,memory,transfer,d2d,collectives,storage,dataloader "$@" > "$DEST/bench.log" 2>&1
echo "bench exit $? after $(( $(date +%s) - t0 )) s"
tail -60 "$DEST/bench.log"

# 3. measured vs predicted table, and the training layout (planned, run, why)
"$PY" benchmarks/bench_table.py "$RESULT" > "$DEST/bench-$slug.md" 2>&1 && cat "$DEST/bench-$slug.md"
"$PY" - "$RESULT" <<'PYEOF'
import sys
from gpuplan.bench import load_result
res = load_result(sys.argv[1])
for s in res.benchmarks:
    if s.name == "train":
        print("train:", s.status, s.error or "", *s.notes, sep="\n  ")
for m in res.measurements:
    if m.benchmark == "train":
        print(f"  {m.name}: measured {m.value:.4g} {m.unit}, predicted {m.predicted.value}, ratio {m.ratio}")
PYEOF

# 4. calibration into a private config folder, and its effect on an estimate for the same part
export XDG_CONFIG_HOME="$WORK/config"
acc=$("$PY" -c "import sys; from gpuplan.bench import load_result; print(load_result(sys.argv[1]).accelerator or '')" \
      "$RESULT" 2>/dev/null)
if [ -n "$acc" ]; then
    est=(estimate train -m llama3.1-8b --accelerator "$acc" --num-accels 8 --seq-len 4096 --global-batch 64 --json)
    {
        echo "before: $("$PY" -m gpuplan.cli.main "${est[@]}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')"
        "$PY" -m gpuplan.cli.main calibrate "$RESULT"
        echo "after:  $("$PY" -m gpuplan.cli.main "${est[@]}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')"
    } > "$DEST/estimate-$slug.txt" 2>&1
    cp "$XDG_CONFIG_HOME/gpuplan/calibration/$acc.yaml" "$DEST/calibration-$slug.yaml" 2>/dev/null
    cat "$DEST/estimate-$slug.txt"
fi

# 5. the GPU-marked tests (skipped on CPU-only machines), if pytest is there
if "$PY" -c "import pytest" 2>/dev/null; then
    timeout 120 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/bench/test_gpu.py > "$DEST/pytest-gpu.log" 2>&1
    tail -3 "$DEST/pytest-gpu.log"
fi
echo "done in $(( $(date +%s) - t0 )) s; files in $DEST"
