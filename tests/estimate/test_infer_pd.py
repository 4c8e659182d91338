"""Attention data parallelism with wide expert parallelism, disaggregated instances and MTP decoding."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.estimate.infer_pd import decode_instance_perf, speculative_tokens, verify_step_s
from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.estimate.links import inter_node_link
from gpuplan.hardware import load_catalog
from gpuplan.units import GB
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
DSV3 = get_preset("deepseek-v3").spec
H20 = CAT.accelerator("h20-96gb")
RDMA = inter_node_link(CAT.network("ib-ndr-400"), nics_per_node=8, gpus_per_node=8)


def _model(tp: int = 1, ep: int = 16, *, fp8_attention: bool = False):  # type: ignore[no-untyped-def]
    return step_cost_model(DSV3, accelerator=H20, layout=Layout(tp=tp, ep=ep, dp=max(ep // tp, 1)), weights="fp8",
                           kv_dtype="fp8", engine=engine("sglang"), scale_out=RDMA, attention_fp8=fp8_attention)


def test_speculative_tokens_is_the_expected_accepted_chain() -> None:
    assert speculative_tokens(0, 0.85) == 1.0
    assert speculative_tokens(1, 0.85) == pytest.approx(1.85)
    assert speculative_tokens(2, 0.85) == pytest.approx(1 + 0.85 + 0.85**2)
    with pytest.raises(InputError):
        speculative_tokens(1, 1.5)


def test_attention_data_parallel_group_holds_its_share_of_the_experts() -> None:
    """ep 16 over tp 1: every device holds 16 of the 256 experts whole, and all of attention and the dense layers."""
    wide = _model()
    counts = count_params(DSV3)
    experts = DSV3.num_moe_layers * counts.moe_layer.experts_matrix  # type: ignore[union-attr]
    fp8 = 1.0 + 4.0 / DSV3.hidden_size  # one byte per weight and an fp32 scale per output channel
    stream = 78 * 1.98e9 * 14.0  # fp8 weights stream through tiled GEMMs, capped by the H20's 78 SMs
    assert wide.moe_read_all == pytest.approx(experts / 16 * fp8 / stream, rel=1e-6)
    k, e = DSV3.moe.top_k, DSV3.moe.num_experts  # type: ignore[union-attr]
    assert wide.moe_untouched_base == pytest.approx((1 - k / e) ** 16)  # the experts meet all 16 groups' tokens
    assert wide.assumptions["attention_groups"] == 16


def test_decode_all_to_all_by_hand_and_prefill_deduplicated_by_node() -> None:
    """Decode (DeepEP low-latency kernels): top_k copies of each token over RDMA, fp8 dispatch + bf16 combine.
    Prefill (normal kernels): one copy per remote node, N = 2 nodes: (N - 1)(1 - (1 - 1/N)^8) of them."""
    m = _model()
    per_copy = DSV3.hidden_size * 3.0  # 1 byte out, 2 bytes back
    bw = RDMA.bandwidth_gbyte_s * GB
    assert m.ep_comm_per_token == pytest.approx(DSV3.num_moe_layers * 8 * per_copy / bw)
    remote = 1 * (1 - 0.5**8)
    assert m.ep_comm_per_prefill_token is not None and m.ep_comm_per_prefill_token < m.ep_comm_per_token
    assert m.ep_comm_per_prefill_token >= DSV3.num_moe_layers * remote * per_copy / bw * (1 - 1e-9)


def test_a_group_across_nodes_needs_its_network() -> None:
    with pytest.raises(InputError) as err:
        step_cost_model(DSV3, accelerator=H20, layout=Layout(tp=1, ep=16, dp=16), weights="fp8", kv_dtype="fp8",
                        engine=engine("sglang"))
    assert err.value.field == "ep"
    inside = step_cost_model(DSV3, accelerator=CAT.accelerator("h200-sxm-141gb"), layout=Layout(tp=1, ep=8, dp=8),
                             weights="fp8", kv_dtype="fp8", engine=engine("sglang"))
    assert "NVLink" in str(inside.assumptions["ep_link"]) or inside.assumptions["ep_link"]


def test_fp8_attention_runs_decode_attention_at_the_fp8_peak() -> None:
    bf16, fp8 = _model(), _model(fp8_attention=True)
    assert fp8.decode_attn_flops_per_token == pytest.approx(bf16.decode_attn_flops_per_token / 2, rel=0.01)
    with pytest.raises(InputError, match="fp8"):
        step_cost_model(DSV3, accelerator=H20, layout=Layout(tp=8), weights="fp8", kv_dtype="bf16",
                        engine=engine("sglang"), attention_fp8=True)


def test_verify_step_costs_more_than_a_plain_step_and_mtp_raises_throughput() -> None:
    m = _model(fp8_attention=True)
    plain = verify_step_s(m, 32, 4864, 0)
    one = verify_step_s(m, 32, 4864, 1)
    assert plain < one < 2 * plain
    base = decode_instance_perf(m, batch=32, input_len=4096, output_len=1536, replicas=16, devices_per_replica=1)
    mtp = decode_instance_perf(m, batch=32, input_len=4096, output_len=1536, draft_tokens=1, acceptance=0.85,
                               replicas=16, devices_per_replica=1)
    assert mtp.output_tokens_per_s > base.output_tokens_per_s
    assert mtp.tpot_s == pytest.approx(one / 1.85)


def test_estimate_infer_decode_instance_cli() -> None:
    args = ["estimate", "infer", "-m", "deepseek-v3", "--accelerator", "h20-96gb", "--num-accels", "16", "--tp", "1",
            "--ep", "16", "--weights", "fp8", "--kv-dtype", "fp8", "--engine", "sglang", "--input-len", "4096",
            "--output-len", "1536", "--batch", "32", "--instance", "decode", "--draft-tokens", "1",
            "--attention-fp8", "--json"]
    r = CliRunner().invoke(app, args)
    exited(r, 0)
    import json

    d = json.loads(r.stdout)
    assert d["scenario"] == "decode_instance" and d["replicas"] == 16
    assert 300 < d["output_tokens_per_s_per_device"] < 1500  # the published figure is 675 (G2I015)
    bad = CliRunner().invoke(app, args[:-5] + ["--draft-tokens", "1", "--json"])
    exited(bad, 2)
    assert "draft_tokens" in bad.output or "draft-tokens" in bad.output


def test_a_decode_instance_ttft_includes_the_prompts_kv_transfer() -> None:
    """The decode instance's first token waits for the prompt's KV cache from the prefill instance: each device
    receives its shard over its link (here one H20's share of 8 x 400 Gb/s). It had been the request overhead
    alone."""
    m = _model()
    # MLA latent + rope key in fp8: (512 + 64) bytes per token and layer, 61 layers, replicated on every device
    per_token = (512 + 64) * 61
    assert m.kv_bytes_per_token == pytest.approx(per_token)
    transfer = float(RDMA.latency_s) + per_token * 4096 / (float(RDMA.bandwidth_gbyte_s) * GB)
    with_link = decode_instance_perf(m, batch=32, input_len=4096, output_len=1024, kv_link=RDMA)
    without = decode_instance_perf(m, batch=32, input_len=4096, output_len=1024)
    assert with_link.ttft_s == pytest.approx(m.request_overhead + transfer)
    assert without.ttft_s == pytest.approx(m.request_overhead) and with_link.tpot_s == without.tpot_s
    assert with_link.e2e_s - without.e2e_s == pytest.approx(transfer)
    assert "MB per device" in with_link.assumptions["ttft"] and "left out" in without.assumptions["ttft"]
