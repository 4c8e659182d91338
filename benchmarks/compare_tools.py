"""Score gpuplan side by side with NVIDIA aiconfigurator (serving) and Calculon (training) on the shipped rows.

Usage (from the repository root; 3 to 8 minutes on 2 shared CPU cores):
    PYTHONPATH=src .venv/bin/python benchmarks/compare_tools.py \
        --aic-python .venv-aic/bin/python --calculon .calculon --json compare_tools.json

Rows: every shipped ground-truth row (validate.ground_truth.case_files: dev, released/ and added_rows/) of the
`inference` family (against aiconfigurator) and the `training` family (against Calculon). gpuplan's figure for a row
is what `gpuplan validate` prints (gpuplan.validate.run.validate_file on the family); the other tool's figure comes
from the mapping below. Each tool is scored on the rows it can express; gpuplan's median/p90 APE is shown on exactly
those rows. Rows a tool cannot express are counted with the reason.

aiconfigurator (pip install aiconfigurator==0.12.0 in its own Python 3.11 virtualenv; run by benchmarks/aic_worker.py)
- system: h100-sxm5-80gb -> h100_sxm, h200-sxm-141gb -> h200_sxm, a100-sxm4-80gb -> a100_sxm, b200-sxm-180gb ->
  b200_sxm, gb200-186gb -> gb200, l40s-48gb -> l40s; other parts (H20, H800, MI300X, Ascend, A100-40GB) have no
  system file. backend: trtllm, vllm, sglang as the row's engine (lmdeploy, mindie, generic: none); version: the
  tool's default (the newest kernel tables it ships for that system and backend; the row's own engine version is not
  among them, which is part of what is being compared).
- model: a gpuplan preset with a config cached in aiconfigurator-core (Llama-3.1 8B/70B/405B, Qwen3 8B/32B/30B-A3B/
  235B-A22B, Mixtral-8x7B, DeepSeek-V3) uses that config; any other dense model is written as a local LlamaForCausalLM
  config.json from the row's architecture (layers, hidden, heads, kv_heads, ffn, vocab; a plain-MLP model's ffn becomes
  2/3 of it so the SwiGLU block has the same weights and FLOPs); other MoE models: not expressible.
- precision: weights bf16/fp16 -> bfloat16, fp8 -> fp8 (DeepSeek-V3: fp8_block), nvfp4 -> nvfp4, int8 -> int8_wo,
  int4 -> int4_wo; KV fp8 -> fp8, int8 -> int8, else bfloat16.
- layout: the row's tp/pp/ep; an unstated tp is searched over 1, 2, 4, 8 (dividing the devices), best for the row's
  metric, as gpuplan does; MoE expert parallelism = the row's ep, else tp. Devices beyond tp x pp are replicas.
- scenario fixed_batch -> mode "static" (one batch of `batch` requests, ISL/OSL as stated; batch split over replicas);
  offline -> mode "agg" (in-flight batching) at the largest batch that fits (tried 2048, 1024, ... 1, capped by the
  row's batch) with a prefill budget of max(ISL, 8192) tokens a step (TensorRT-LLM's default max_num_tokens; the
  tool's own default, ISL, admits one prefill a step and halves short-prompt throughput); server rows (a request
  rate and a latency target) and rows without stated lengths: not expressible.
- metric: output_tokens_per_s(_per_device) <- tokens/s(/gpu) x replicas; total_tokens_per_s <- output x (isl+osl)/osl;
  requests_per_s <- seq/s; ttft_ms, tpot_ms as given; e2e_latency_s <- request_latency / 1000.

Calculon (github calculon-ai/calculon, pure Python; --calculon PATH is a checkout of it)
- system: a100-sxm4-80gb -> systems/a100_80g.json, h100-sxm5-80gb -> systems/h100_80g_nvl8.json; nothing else.
- model: hidden, seq_size, attn_heads, attn_size = hidden/heads, num_blocks = layers; feedforward = ffn for a plain MLP,
  1.5 x ffn for SwiGLU (same weights and FLOPs in Calculon's two-matrix MLP). Grouped-query attention is run as
  multi-head (Calculon knows multihead and multiquery only). It has no embedding/LM-head compute. Not expressible: MoE,
  LoRA/QLoRA, a stated context parallelism, a stated ZeRO-2/3 or FSDP, FP8 on A100. Where Calculon's memory model
  says a published run does not fit, it is timed anyway with unlimited memory (flagged in the JSON), as gpuplan's
  validate does with its own memory model.
- execution: the row's tp/pp/dp/micro_batch/recompute/vpp where stated, the rest from the layout gpuplan chose for
  the row (the `detail` of its validate result; gpuplan's own context parallelism folds into data parallelism and an
  unstated ZeRO stage is ZeRO-1, the most Calculon has). A row that states none of tp/pp/dp gets the fastest layout
  that fits Calculon's memory among gpuplan's and a grid (calculon_layouts: tp 1-8, pp 1-16, micro-batch 1-2, each
  recompute mode); recompute none/selective/full -> none/attn_only/full; sequence
  parallelism (rs_ag) unless the row says seq_parallel false; ZeRO-1 -> optimizer_sharding; DP gradient overlap on;
  tensor/pipeline/data groups on the NVLink network while they fit in 8 devices, else the scale-out network; global
  batch as gpuplan uses it.
- metric: Calculon's batch time t gives tokens/s/device = batch x seq / (t x devices). Other metrics use gpuplan's own
  conversion for the same row and layout (metric / tokens-per-second of gpuplan's prediction, evaluated again with
  metric tokens_per_s_per_device), so both tools are converted the same way.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_catalog
from gpuplan.validate.cases import Row, model_for_row, opt_int, read_rows
from gpuplan.validate.ground_truth import case_files
from gpuplan.validate.run import validate_file
from gpuplan.validate.training_cases import evaluate_training_row
from gpuplan.workload.jobs import default_global_batch
from gpuplan.workload.model_spec import ModelSpec

AIC_SYSTEMS = {"h100-sxm5-80gb": "h100_sxm", "h200-sxm-141gb": "h200_sxm", "a100-sxm4-80gb": "a100_sxm",
               "b200-sxm-180gb": "b200_sxm", "gb200-186gb": "gb200", "l40s-48gb": "l40s"}
AIC_BACKENDS = ("trtllm", "vllm", "sglang")
AIC_HF = {"llama3.1-8b": "meta-llama/Meta-Llama-3.1-8B", "llama3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
          "llama3.1-405b": "meta-llama/Meta-Llama-3.1-405B", "qwen3-8b": "Qwen/Qwen3-8B", "qwen3-32b": "Qwen/Qwen3-32B",
          "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B", "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
          "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1", "deepseek-v3": "deepseek-ai/DeepSeek-V3"}
AIC_GEMM = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "nvfp4": "nvfp4", "int8": "int8_wo",
            "int4": "int4_wo"}
AIC_KV = {"fp8": "fp8", "int8": "int8"}
AIC_CTX_TOKENS = 8192  # prefill token budget per step in agg mode: TensorRT-LLM's default max_num_tokens (8192)
AIC_BATCHES = (2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
CALCULON_SYSTEMS = {"a100-sxm4-80gb": "systems/a100_80g.json", "h100-sxm5-80gb": "systems/h100_80g_nvl8.json"}
_THROUGHPUT = ("tokens_per_s_per_device", "tflops_per_device", "hw_tflops_per_device", "mfu", "hfu")
_TIME = ("step_time_s", "device_hours", "time_to_train_days")
_LAYOUT = re.compile(r"tp(\d+) pp(\d+) dp(\d+) cp(\d+) ep(\d+) vpp(\d+) z(\d+) mb(\d+) rc=(\w+)")


@dataclass(frozen=True, slots=True)
class Skip:
    reason: str


# ---------- aiconfigurator mapping (pure) ----------

def llama_config(spec: ModelSpec) -> dict[str, Any]:
    """A HuggingFace LlamaForCausalLM config.json for a dense spec (aiconfigurator reads it from a local folder)."""
    ffn = spec.ffn_hidden_size if spec.mlp == "swiglu" else round(spec.ffn_hidden_size * 2 / 3)
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": spec.num_layers,
            "hidden_size": spec.hidden_size, "num_attention_heads": spec.num_heads,
            "num_key_value_heads": spec.num_kv_heads or spec.num_heads, "intermediate_size": ffn,
            "vocab_size": spec.vocab_size, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
            "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False}


def aic_jobs(row: Row, spec: ModelSpec | None, model_path: str | None,
             available: dict[str, set[str]]) -> list[dict[str, Any]] | Skip:
    """aiconfigurator jobs (one per candidate tp) for a row, or why the row cannot be expressed."""
    system = AIC_SYSTEMS.get(row.get("accelerator", ""))
    if system is None:
        return Skip(f"no aiconfigurator system for {row.get('accelerator')}")
    backend = row.get("engine", "")
    if backend not in AIC_BACKENDS or backend not in available.get(system, set()):
        return Skip(f"no aiconfigurator data for engine {backend} on {system}")
    if model_path is None:
        return Skip("model architecture not known to aiconfigurator (MoE without a cached config)")
    scenario = row.get("scenario", "")
    if scenario not in ("fixed_batch", "offline"):
        return Skip(f"scenario {scenario}: a request rate with a latency target, not a static/agg estimate")
    isl, osl = opt_int(row, "input_len"), opt_int(row, "output_len")
    if not isl or not osl:
        return Skip("input/output lengths not stated (a dataset workload)")
    wp = row.get("weight_precision") or "bf16"
    if wp not in AIC_GEMM:
        return Skip(f"weight precision {wp} has no aiconfigurator GEMM mode")
    gemm = "fp8_block" if wp == "fp8" and row.get("model") == "deepseek-v3" else AIC_GEMM[wp]
    kvp = row.get("kv_precision") or ("bf16" if wp not in ("fp8",) else "bf16")
    kv = AIC_KV.get(kvp, "bfloat16")
    n = opt_int(row, "num_accels") or (opt_int(row, "tp") or 1) * (opt_int(row, "pp") or 1)
    pp = opt_int(row, "pp") or 1
    tps = [opt_int(row, "tp")] if opt_int(row, "tp") else [t for t in (1, 2, 4, 8) if t * pp <= n and n % (t * pp) == 0]
    moe = spec is not None and spec.moe is not None
    batch = opt_int(row, "batch")
    jobs: list[dict[str, Any]] = []
    for tp in tps:
        assert tp is not None
        replicas = max(1, n // (tp * pp))
        if scenario == "fixed_batch":
            if not batch:
                return Skip("fixed_batch row without a batch")
            batches = [max(1, -(-batch // replicas))]
        else:
            batches = [b for b in AIC_BATCHES if not batch or b <= max(1, batch // replicas)]
        ep = opt_int(row, "ep") or tp
        jobs.append({"key": f"{row['id']}|tp{tp}", "model_path": model_path, "system": system, "backend": backend,
                     "mode": "static" if scenario == "fixed_batch" else "agg", "isl": isl, "osl": osl,
                     "batches": batches, "tp": tp, "pp": pp, "gemm": gemm, "kv": kv,
                     "ctx_tokens": max(isl, AIC_CTX_TOKENS) if scenario == "offline" else None,
                     "moe_ep": ep if moe else None, "moe_tp": (tp // ep if ep <= tp and tp % ep == 0 else 1)
                     if moe else None, "replicas": replicas})
    return jobs


def aic_metric(metric: str, raw: dict[str, Any], replicas: int) -> float | None:
    """The row's metric from aiconfigurator's result dict (per replica) and the number of replicas."""
    isl, osl = float(raw["isl"]), float(raw["osl"])
    table = {"output_tokens_per_s_per_device": raw.get("tokens/s/gpu"),
             "output_tokens_per_s": raw["tokens/s"] * replicas,
             "total_tokens_per_s": raw["tokens/s"] * replicas * (isl + osl) / osl,
             "requests_per_s": raw["seq/s"] * replicas,
             "ttft_ms": raw.get("ttft"), "tpot_ms": raw.get("tpot"),
             "e2e_latency_s": raw["request_latency"] / 1000.0 if raw.get("request_latency") else None}
    v = table.get(metric)
    return float(v) if v is not None else None


# ---------- Calculon mapping (pure) ----------

def parse_layout(detail: str) -> dict[str, Any] | None:
    """gpuplan's chosen layout from a training CaseResult.detail ('tp1 pp2 dp4 cp1 ep1 vpp1 z1 mb2 rc=full')."""
    m = _LAYOUT.search(detail)
    if not m:
        return None
    keys = ("tp", "pp", "dp", "cp", "ep", "vpp", "zero", "mb")
    return {**{k: int(v) for k, v in zip(keys, m.groups()[:8], strict=True)}, "recompute": m.group(9)}


def calculon_inputs(row: Row, spec: ModelSpec, layout: dict[str, Any],
                    ) -> tuple[dict[str, Any], dict[str, Any], str] | Skip:
    """Calculon's application and execution JSON and system file for a training row, or why not expressible."""
    acc = row.get("accelerator", "")
    if acc not in CALCULON_SYSTEMS:
        return Skip(f"no Calculon system file for {acc}")
    if spec.moe is not None:
        return Skip("MoE model: Calculon models dense transformer blocks only")
    if row.get("method", "") not in ("", "pretrain", "full_ft"):
        return Skip(f"method {row.get('method')}: Calculon has no LoRA/QLoRA")
    prec = row.get("precision") or "bf16"
    if prec == "fp8" and acc != "h100-sxm5-80gb" or prec not in ("bf16", "fp16", "fp8"):
        return Skip(f"precision {prec} on {acc}: no matching Calculon datatype")
    tp, pp, dp = (opt_int(row, k) or layout[k] for k in ("tp", "pp", "dp"))
    if (opt_int(row, "cp") or 1) > 1:
        return Skip("context parallelism stated: not in Calculon")
    if not opt_int(row, "dp"):  # gpuplan's own context-parallel split, when the row left it open, becomes data
        dp *= layout["cp"]      # parallelism (the same devices and batch; Calculon has no CP)
    zero = opt_int(row, "zero_stage")
    if zero is not None and zero > 1:
        return Skip(f"ZeRO-{zero}/FSDP stated: Calculon shards the optimizer only (ZeRO-1)")
    if zero is None:  # not stated: the best Calculon can run, the Megatron distributed optimizer (ZeRO-1)
        zero = 1
    rc_code = row.get("recompute") or layout["recompute"]
    rc = {"none": "none", "selective": "attn_only", "full": "full"}.get(rc_code)
    if rc is None:
        return Skip(f"recompute {rc_code}: no Calculon equivalent")
    seq = opt_int(row, "seq_len") or 4096
    n = tp * pp * dp
    gb = opt_int(row, "global_batch_seqs") or default_global_batch(seq, opt_int(row, "num_accels") or n)
    mb = opt_int(row, "micro_batch") or layout["mb"]
    if gb % dp or (gb // dp) % mb:
        return Skip(f"global batch {gb} does not split into dp {dp} x micro-batch {mb}")
    vpp = opt_int(row, "vpp") or layout["vpp"] if pp > 1 else 1
    ffn = spec.ffn_hidden_size * (1.5 if spec.mlp == "swiglu" else 1.0)
    app = {"hidden": spec.hidden_size, "feedforward": int(ffn), "seq_size": seq, "attn_heads": spec.num_heads,
           "attn_size": spec.hidden_size // spec.num_heads, "num_blocks": spec.num_layers}
    sp = row.get("seq_parallel", "").lower() not in ("false", "0", "no")
    exe = {"num_procs": n, "tensor_par": tp, "pipeline_par": pp, "data_par": dp,
           "tensor_par_net": 0 if tp <= 8 else 1, "pipeline_par_net": 0 if tp * pp <= 8 else 1,
           "data_par_net": 0 if n <= 8 else 1, "batch_size": gb, "microbatch_size": mb,
           "datatype": "float8" if prec == "fp8" else "float16", "fused_activation": True,
           "attention_type": "multihead", "activation_recompute": rc, "pipeline_interleaving": vpp,
           "optimizer_sharding": zero >= 1 and dp > 1, "tensor_par_comm_type": "rs_ag" if sp and tp > 1 else "ar",
           "tensor_par_overlap": "none", "seq_par_ag_redo": False, "data_par_overlap": dp > 1,
           "weight_offload": False, "activations_offload": False, "optimizer_offload": False, "training": True}
    return app, exe, CALCULON_SYSTEMS[acc]


def calculon_layouts(row: Row, layout: dict[str, Any]) -> list[dict[str, Any]]:
    """Layouts to give Calculon: gpuplan's (whose stated parts are the row's) when the row states tp, pp or dp; else
    also a grid of its own (tp 1-8, pp 1-16, micro-batch 1-2, each recompute mode, ZeRO-1) on the same devices, of
    which the fastest that fits Calculon's memory is used (a search like Calculon's own optimal_execution)."""
    if any(opt_int(row, k) for k in ("tp", "pp", "dp")):
        return [layout]
    n = layout["tp"] * layout["pp"] * layout["dp"] * layout["cp"]
    grid = [{"tp": tp, "pp": pp, "dp": n // (tp * pp), "cp": 1, "ep": 1, "vpp": 1, "zero": 1, "mb": mb,
             "recompute": rc}
            for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8, 16) if n % (tp * pp) == 0
            for mb in (1, 2) for rc in ("none", "selective", "full")]
    return [layout, *grid]


def convert_training(metric: str, gp_pred: float, gp_tokens: float, tool_tokens: float) -> float:
    """The tool's figure in the row's metric, through gpuplan's own metric/throughput ratio for the row."""
    if metric in _THROUGHPUT:
        return gp_pred * tool_tokens / gp_tokens
    if metric in _TIME:
        return gp_pred * gp_tokens / tool_tokens
    raise GpuplanError(f"metric {metric} has no throughput conversion")


def ape(pred: float, measured: float) -> float:
    return abs(pred - measured) / abs(measured)


def stats(apes: list[float]) -> tuple[float | None, float | None]:
    return (float(np.median(apes)), float(np.percentile(apes, 90))) if apes else (None, None)


# ---------- running ----------

def heldout(file: str) -> dict[str, float]:
    """gpuplan's held-out prediction per row id: the leave-one-source-out fold of the shipped cross-validation
    (estimate/data/accuracy.json, written by benchmarks/cross_validate.py), i.e. with every term refitted without the
    row's own source, as the other tools never saw it either."""
    from importlib import resources

    data = json.loads((resources.files("gpuplan.estimate") / "data" / "accuracy.json").read_text())
    return {r["id"]: float(r["cv_pred"]) for r in data["rows"]
            if r["file"] == file and r["fold"] == "source" and r.get("cv_pred") is not None}


def _family(name: str) -> tuple[dict[str, Row], dict[str, Any]]:
    rows = {r["id"]: r for p in case_files(name) for r in read_rows(p)}
    report = validate_file(Path(name))
    return rows, {c.id: c for c in report.cases}


def _run_worker(cmd: list[str], jobs: list[dict[str, Any]], cwd: Path | None,
                ) -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Feed jobs (JSON lines) to a tool's worker; each row's jobs (keys 'ROWID|n') with their results."""
    proc = subprocess.run(cmd, cwd=cwd, input="".join(json.dumps(j) + "\n" for j in jobs), capture_output=True,
                          text=True)
    if proc.returncode:
        raise SystemExit(f"{Path(cmd[1]).name} failed: {proc.stderr.strip().splitlines()[-1:]}")
    by_key = {r["key"]: r for r in (json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{"))}
    per_row: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for j in jobs:
        per_row.setdefault(j["key"].split("|")[0], []).append(
            (j, by_key.get(j["key"], {"ok": False, "error": "no result"})))
    return per_row


def _aic_available(aic_python: str) -> dict[str, set[str]]:
    code = ("import aiconfigurator_core, pathlib, json; d = pathlib.Path(aiconfigurator_core.__file__).parent / "
            "'systems' / 'data'; print(json.dumps({s.name: [b.name for b in (s / 'gemm').iterdir()] "
            "for s in d.iterdir() if (s / 'gemm').is_dir()}))")
    out = subprocess.run([aic_python, "-c", code], capture_output=True, text=True, check=True).stdout
    return {k: set(v) for k, v in json.loads(out).items()}


def run_aic(aic_python: str, tmp: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows, cases = _family("inference")
    available = _aic_available(aic_python)
    results: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    jobs: list[dict[str, Any]] = []
    for rid, row in rows.items():
        if rid not in cases:
            skipped["gpuplan cannot evaluate the row (validate skips it)"] = skipped.get(
                "gpuplan cannot evaluate the row (validate skips it)", 0) + 1
            continue
        spec = model_for_row(row)
        model_path: str | None = AIC_HF.get(row.get("model", ""))
        if model_path is None and spec.moe is None:
            folder = tmp / rid
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.json").write_text(json.dumps(llama_config(spec)))
            model_path = str(folder)
        got = aic_jobs(row, spec, model_path, available)
        if isinstance(got, Skip):
            skipped[got.reason] = skipped.get(got.reason, 0) + 1
            continue
        jobs.extend(got)
    per_row = _run_worker([aic_python, str(Path(__file__).with_name("aic_worker.py"))], jobs, tmp)
    for rid, tries in per_row.items():
        row, case = rows[rid], cases[rid]
        metric = row["metric"]
        lower = metric in ("ttft_ms", "tpot_ms", "e2e_latency_s")
        best: tuple[float, dict[str, Any], dict[str, Any]] | None = None
        errors = []
        for j, r in tries:
            if not r.get("ok"):
                errors.append(f"tp{j['tp']}: {r.get('error')}")
                continue
            v = aic_metric(metric, r["raw"], j["replicas"])
            if v is not None and v > 0 and (best is None or (v < best[0] if lower else v > best[0])):
                best = (v, j, r)
        if best is None:
            reason = "aiconfigurator failed: " + (errors[0].split(":")[1].strip() if errors else "no figure")
            skipped[reason[:120]] = skipped.get(reason[:120], 0) + 1
            continue
        v, j, r = best
        results.append({"id": rid, "metric": metric, "measured": case.measured, "gpuplan": case.predicted,
                        "gpuplan_ape": case.ape, "tool": v, "tool_ape": ape(v, case.measured),
                        "tool_config": {k: j[k] for k in ("system", "backend", "mode", "tp", "pp", "isl", "osl",
                                                          "gemm", "kv", "replicas")} | {
                            "batch": r["batch"], "version": r["raw"].get("version")},
                        "model": row.get("model") or "(architecture)", "accelerator": row["accelerator"],
                        "engine": row.get("engine"), "scenario": row.get("scenario")})
    return results, skipped


def run_calculon(path: Path, python: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows, cases = _family("training")
    catalog = load_catalog()
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    jobs: list[dict[str, Any]] = []
    for rid, row in rows.items():
        case = cases.get(rid)
        if case is None:
            skip("gpuplan cannot evaluate the row (validate skips it)")
            continue
        layout = parse_layout(case.detail)
        if layout is None:
            skip("gpuplan's layout not stated in its result")
            continue
        spec = model_for_row(row)
        tries = [calculon_inputs(row, spec, lay) for lay in calculon_layouts(row, layout)]
        ok = [t for t in tries if not isinstance(t, Skip)]
        if not ok:
            skip(tries[0].reason if isinstance(tries[0], Skip) else "no layout")
            continue
        jobs.extend({"key": f"{rid}|{i}", "app": t[0], "exe": t[1], "system": t[2]} for i, t in enumerate(ok))
    per_row = _run_worker([python, str(Path(__file__).with_name("calculon_worker.py")), str(path)], jobs, None)
    results: list[dict[str, Any]] = []
    for rid, tries_r in per_row.items():
        row, case = rows[rid], cases[rid]
        done = [(j, r) for j, r in tries_r if r["ok"]]
        if not done:
            skip(f"Calculon rejects the configuration: {tries_r[0][1]['error'][:90]}")
            continue
        # the fastest layout that fits Calculon's memory, else (a published run fitted) the fastest of all
        j, r = min(done, key=lambda jr: (bool(jr[1]["calculon_oom"]), jr[1]["total_time_s"]))
        app_j, exe_j, t = j["app"], j["exe"], float(r["total_time_s"])
        tool_tokens = exe_j["batch_size"] * app_j["seq_size"] / (t * exe_j["num_procs"])
        metric = row["metric"]
        if metric == "tokens_per_s_per_device":
            gp_tokens = case.predicted
        else:
            gp_tokens = evaluate_training_row(dict(row, metric="tokens_per_s_per_device"), catalog).predicted
        v = convert_training(metric, case.predicted, gp_tokens, tool_tokens)
        results.append({"id": rid, "metric": metric, "measured": case.measured, "gpuplan": case.predicted,
                        "gpuplan_ape": case.ape, "tool": v, "tool_ape": ape(v, case.measured),
                        "gpuplan_layout": case.detail,
                        "tool_config": {"system": j["system"], **{k: exe_j[k] for k in (
                            "tensor_par", "pipeline_par", "data_par", "batch_size", "microbatch_size",
                            "activation_recompute", "datatype", "pipeline_interleaving")}, "feedforward":
                            app_j["feedforward"], "batch_time_s": t, "calculon_memory_says_oom": r.get("calculon_oom"),
                                        "layouts_tried": len(tries_r)},
                        "model": row.get("model") or "(architecture)", "accelerator": row["accelerator"]})
    return results, skipped


def _print(tool: str, results: list[dict[str, Any]], skipped: dict[str, int], file: str) -> dict[str, Any]:
    cv = heldout(file)
    for r in results:
        r["gpuplan_heldout"] = cv.get(r["id"])
        r["gpuplan_heldout_ape"] = ape(cv[r["id"]], r["measured"]) if r["id"] in cv else None
    gm, gp = stats([r["gpuplan_ape"] for r in results])
    tm, tpp = stats([r["tool_ape"] for r in results])
    held = [r for r in results if r["gpuplan_heldout_ape"] is not None]
    hm, hp = stats([r["gpuplan_heldout_ape"] for r in held])
    htm, htp = stats([r["tool_ape"] for r in held])
    wins = sum(r["gpuplan_ape"] < r["tool_ape"] for r in results)
    print(f"\n== {tool}: {len(results)} rows both tools ran; {sum(skipped.values())} not expressible")
    print(f"{'':34}{'median APE':>12}{'p90 APE':>10}")
    if results:
        print(f"{'gpuplan (in sample)':34}{gm:>12.1%}{gp:>10.1%}\n{tool:34}{tm:>12.1%}{tpp:>10.1%}")
        print(f"gpuplan closer on {wins} of {len(results)} rows")
    if held and hm is not None and hp is not None and htm is not None and htp is not None:
        print(f"on the {len(held)} rows with a held-out (leave-one-source-out) gpuplan figure:")
        print(f"{'gpuplan (source held out)':34}{hm:>12.1%}{hp:>10.1%}\n{tool:34}{htm:>12.1%}{htp:>10.1%}")
    for reason, k in sorted(skipped.items(), key=lambda x: -x[1]):
        print(f"  not expressible ({k}): {reason}")
    return {"rows": len(results), "gpuplan_median_ape": gm, "gpuplan_p90_ape": gp, "tool_median_ape": tm,
            "tool_p90_ape": tpp, "heldout_rows": len(held), "gpuplan_heldout_median_ape": hm,
            "gpuplan_heldout_p90_ape": hp, "tool_median_ape_on_heldout_rows": htm, "tool_p90_ape_on_heldout_rows": htp,
            "gpuplan_closer_rows": wins, "skipped": skipped, "per_row": results}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aic-python", help="python of a virtualenv with aiconfigurator installed (skip if absent)")
    ap.add_argument("--calculon", type=Path, help="a checkout of calculon-ai/calculon (skip if absent)")
    ap.add_argument("--calculon-python", help="python with pandas to run Calculon (default: --aic-python)")
    ap.add_argument("--json", type=Path, default=Path("compare_tools.json"), help="per-row detail file")
    ap.add_argument("--rescore", type=Path, help="print the table again from a per-row file this script wrote")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d")}
    t0 = time.time()
    if args.rescore:  # the tools' figures as recorded; gpuplan's held-out column from today's accuracy.json
        old = json.loads(args.rescore.read_text())
        for tool, file in (("aiconfigurator", "inference"), ("calculon", "training")):
            if tool in old:
                out[tool] = _print(tool, old[tool]["per_row"], old[tool]["skipped"], file)
        args.json.write_text(json.dumps(out, indent=1))
        return 0
    if args.aic_python:
        with tempfile.TemporaryDirectory() as tmp:
            res, sk = run_aic(str(Path(args.aic_python).absolute()), Path(tmp))
        out["aiconfigurator"] = _print("aiconfigurator", res, sk, "inference")
    if args.calculon:
        res, sk = run_calculon(args.calculon, args.calculon_python or args.aic_python or sys.executable)
        out["calculon"] = _print("calculon", res, sk, "training")
    args.json.write_text(json.dumps(out, indent=1))
    print(f"\nper-row detail: {args.json}; {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
