"""Acceptance: the emitted torchrun + DDP trial run of a plan trains a tiny model for a few steps on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from emit_cases import emit

TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}


@pytest.mark.torch
def test_emitted_torchrun_ddp_runs_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY), encoding="utf-8")
    out = tmp_path / "emit"
    files = emit(["estimate", "train", "-m", str(cfg), "--accelerator", "h100-sxm5-80gb", "--num-accels", "2",
                  "--gpus-per-node", "2", "--seq-len", "32", "--global-batch", "4", "--tp", "1", "--pp", "1",
                  "--cp", "1", "--zero", "1", "--micro-batch", "1"], out, "ddp,torchrun")
    assert "--nproc-per-node 2" in files["torchrun.sh"] and "--standalone" in files["torchrun.sh"]
    env = {**os.environ, "DEVICE": "cpu", "REPEATS": "2", "TIMEOUT": "240", "OMP_NUM_THREADS": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", str(out / "torchrun.sh"), "--plain"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    progress = json.loads((out / "progress.json").read_text(encoding="utf-8"))
    assert progress["status"] == "done" and len(progress["samples"]) == 2
    assert all(s > 0 for s in progress["samples"])
