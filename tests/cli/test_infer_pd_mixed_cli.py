"""plan infer with prefill on one part and decode on another (search/infer_pd_mixed.py): JSON, table, zh, launch."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gpuplan.cli.main import app

# Llama-3.1-70B, 8000-token prompts at a 40 ms TPOT on AWS: H100 prefill + A100 int8 decode is the cheapest fleet
ARGS = ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-len", "8000", "--output-len", "500",
        "--ttft-p99", "3", "--tpot-p99", "0.04", "--provider", "aws", "--top", "2"]


@cache
def _plan() -> dict[str, Any]:
    res = CliRunner().invoke(app, [*ARGS, "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_the_pair_is_recommended_instead_of_the_colocated_fleet() -> None:
    plan = _plan()
    rec = plan["recommended_disaggregated"]
    assert rec is not None and rec["fleet"]["heterogeneous"] is True
    assert rec["fleet"]["accelerators"] == {"prefill": "h100-sxm5-80gb", "decode": "a100-sxm4-80gb"}
    assert rec["instead_of"]["accelerator"] == "b200-sxm-180gb" and 0.05 < rec["saving"] < 0.15  # 412 vs 456 USD/h
    assert plan["what_if_pd"]["accelerators"] == rec["fleet"]["accelerators"]


def test_the_table_names_both_parts_the_provider_and_the_assumption_en_and_zh() -> None:
    pd = _plan()["what_if_pd"]
    en = " ".join(CliRunner().invoke(app, [*ARGS, "--lang", "en"], terminal_width=400).output.split())
    assert (f"Recommended instead: prefill/decode disaggregated on two parts (each pool simulated), "
            f"{pd['prefill']['devices']} x h100-sxm5-80gb prefilling + {pd['decode']['devices']} x a100-sxm4-80gb "
            f"decoding, int8, at {pd['usd_per_hour']:,.2f} USD/hour") in en
    assert "both pools on aws's RDMA fabric (same provider and market)" in en
    zh = " ".join(CliRunner().invoke(app, [*ARGS, "--lang", "zh"], terminal_width=400).output.split())
    assert "两种硬件的预填充/解码分离" in zh and f"{pd['prefill']['devices']} 张 h100-sxm5-80gb 做预填充" in zh


def test_the_launch_puts_each_pool_on_its_own_part(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*ARGS, "--emit", "sglang", "--disaggregated", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    pre = (tmp_path / "sglang_prefill.sh").read_text(encoding="utf-8")
    dec = (tmp_path / "sglang_decode.sh").read_text(encoding="utf-8")
    assert "of h100-sxm5-80gb (" in pre and "of a100-sxm4-80gb (" in dec
    assert "prefill server(s) of 2 x h100-sxm5-80gb and 7 decode server(s) of 8 x a100-sxm4-80gb" in pre
