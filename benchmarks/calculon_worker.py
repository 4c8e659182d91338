"""Run Calculon (calculon-ai/calculon) batch-time estimates for benchmarks/compare_tools.py.

Usage: PYTHON calculon_worker.py CALCULON_CHECKOUT < jobs. Calculon's package imports pandas, so PYTHON is one that has
it (the aiconfigurator virtualenv does). One JSON job per line on stdin: {"key", "app", "exe", "system"} (Calculon's
application and execution JSON and a system file path inside the checkout); one JSON result per line on stdout:
{"key", "ok", "total_time_s" | "error"}: Llm(app).compile(system, execution).run(system).get_total_time(), the time of
one global batch, as Calculon's `calculon llm` command computes it.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any


def _batch_time(llm: Any, system: Any, logger: logging.Logger, job: dict[str, Any], sys_json: dict[str, Any]) -> float:
    model = llm(llm.Application(job["app"]), logger)
    model.compile(system(sys_json), llm.Execution.from_json(job["exe"]))
    model.run(system(sys_json))
    return float(model.get_total_time())


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    sys.path.insert(0, str(root))
    from calculon.llm import Llm  # type: ignore[import-not-found]
    from calculon.system import System  # type: ignore[import-not-found]

    logger = logging.getLogger("calculon")
    for line in sys.stdin:
        if not line.strip():
            continue
        job: dict[str, Any] = json.loads(line)
        try:
            sys_json = json.loads((root / job["system"]).read_text())
            oom = False
            try:
                t = _batch_time(Llm, System, logger, job, sys_json)
            except Llm.Error as exc:
                if "Mem tier1" not in str(exc):
                    raise
                # the run was published, so it fit: Calculon's memory model disagrees; time it anyway (as
                # gpuplan's validate does with its own memory model) and say so
                oom = True
                t = _batch_time(Llm, System, logger, job, {**sys_json, "mem1": {**sys_json["mem1"], "GiB": 1e6}})
            out = {"key": job["key"], "ok": True, "total_time_s": t, "calculon_oom": oom}
        except (Llm.Error, AssertionError, ZeroDivisionError) as exc:
            out = {"key": job["key"], "ok": False, "error": (str(exc).splitlines() or [type(exc).__name__])[0][:200]}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
