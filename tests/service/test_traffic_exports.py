"""A stored traffic plan's CLI command writes the rows as the CSV `--traffic` reads, and plans the same curve."""

from __future__ import annotations

from gpuplan.search.infer_traffic import read_traffic
from gpuplan.service.exports import cli_command
from gpuplan.service.requests import InferPlanRequest


def test_cli_command_writes_the_traffic_csv() -> None:
    rows = [{"day": d, "hour": h, "qps": 3.5 if h == 12 else 1} for d in ("mon", "tue", "wed", "thu", "fri", "sat",
                                                                         "sun") for h in range(24)]
    req = InferPlanRequest.model_validate({"model": "llama3.1-8b", "traffic": rows, "ttft_p99": 2, "tpot_p99": 0.05})
    cmd = cli_command(req)
    lines = cmd.splitlines()
    assert lines[0] == "cat > traffic.csv <<'GPUPLAN_EOF'" and lines[-2] == "GPUPLAN_EOF"
    assert "--traffic traffic.csv" in lines[-1] and "--qps" not in lines[-1] and "{" not in lines[-1]
    curve = read_traffic("\n".join(lines[1:-2]))
    assert curve.weekly and len(curve.rows) == 168 and curve.peak_qps == 3.5
