"""Run NVIDIA aiconfigurator estimates for benchmarks/compare_tools.py, in aiconfigurator's own virtualenv.

Reads one JSON job per line on stdin, writes one JSON result per line on stdout. A job:
  {"key": str, "model_path": str, "system": str, "backend": str, "mode": "static" | "agg",
   "isl": int, "osl": int, "batches": [int, ...], "tp": int, "pp": int, "gemm": str|null, "kv": str|null,
   "moe_ep": int|null, "moe_tp": int|null, "ctx_tokens": int|null}
For each batch in the order given it calls aiconfigurator.cli.api.cli_estimate (the Python twin of
`aiconfigurator cli estimate`) and stops at the first that fits in memory (aiconfigurator raises "OOM" otherwise),
so a descending list finds the largest batch that fits. Result: {"key", "ok", "batch", "raw" | "error"}.
It uses only the kernel tables installed with aiconfigurator-core (no downloads: model_path is a local folder
or one of the configs the package caches).
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any


def _local(model_path: str) -> str:
    """A HuggingFace id whose config.json aiconfigurator-core ships but does not list as pre-downloaded (Mixtral):
    copied into a local folder, so the tool reads it instead of trying a download."""
    import shutil
    import tempfile
    from pathlib import Path

    import aiconfigurator_core  # type: ignore[import-not-found]
    from aiconfigurator_core.sdk.common import DefaultHFModels  # type: ignore[import-not-found]

    if Path(model_path).is_dir() or model_path in DefaultHFModels:
        return model_path
    name = f"{model_path.replace('/', '--')}_config.json"
    cached = Path(aiconfigurator_core.__file__).parent / "model_configs" / name
    if not cached.exists():
        return model_path
    folder = Path(tempfile.mkdtemp(prefix="aic-model-"))
    shutil.copy(cached, folder / "config.json")
    return str(folder)


def _run(job: dict[str, Any]) -> dict[str, Any]:
    from aiconfigurator.cli.api import cli_estimate  # type: ignore[import-not-found]

    last = "no batch tried"
    model_path = _local(job["model_path"])
    for bs in job["batches"]:
        try:
            r = cli_estimate(model_path, job["system"], mode=job["mode"], backend_name=job["backend"],
                             isl=job["isl"], osl=job["osl"], batch_size=bs, tp_size=job["tp"], pp_size=job["pp"],
                             gemm_quant_mode=job.get("gemm"), kvcache_quant_mode=job.get("kv"),
                             moe_ep_size=job.get("moe_ep"), moe_tp_size=job.get("moe_tp"),
                             ctx_tokens=job.get("ctx_tokens"))
        except Exception as exc:  # noqa: BLE001 - every failure of the tool is a reported reason
            last = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            if "OOM" in last or "does not fit" in last or "exceeds" in last.lower():
                continue
            return {"key": job["key"], "ok": False, "error": last}
        raw = {k: v for k, v in r.raw.items() if isinstance(v, (int, float, str)) or v is None}
        return {"key": job["key"], "ok": True, "batch": bs, "raw": raw}
    return {"key": job["key"], "ok": False, "error": last}


def main() -> None:
    logging.disable(logging.WARNING)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(_run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
