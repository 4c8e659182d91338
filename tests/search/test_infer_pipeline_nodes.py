"""Serving a model no node holds: pipeline stages over whole instances (vLLM --pipeline-parallel-size over a Ray
cluster, SGLang --pp-size with --nnodes). Regression of a gap found by asking the planner what a team serving
Llama-3.1-405B in BF16 on H100s asks: it answered 'no layout on its offers holds the model' for the H100, whose
standard deployment is two 8-GPU nodes, tensor parallel inside each and two pipeline stages across them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.estimate.links import Link
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_fleet import fleet_offers
from gpuplan.search.infer_layouts import placements
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
SPEC = get_preset("llama3.1-405b").spec
runner = CliRunner()


def test_pipeline_stages_across_nodes_send_over_the_network() -> None:
    acc = CAT.accelerator("h100-sxm5-80gb")
    net = Link(3.0, 30e-6, label="tcp")
    lay = Layout(tp=8, pp=2)
    cm = step_cost_model(SPEC, accelerator=acc, layout=lay, weights="bf16", kv_dtype="bf16", engine=engine("vllm"),
                         scale_out=net)
    # one send between the two stages, across the nodes: its latency, and per token the hidden state and residual
    # (2 x h 16-bit values), each of the 8 TP ranks sending its eighth over its share of the link
    assert cm.pp_stages == 2
    assert cm.pp_comm_fixed == pytest.approx(30e-6)
    assert cm.pp_comm_per_token == pytest.approx(2 * SPEC.hidden_size * 2 / 8 / 3.0e9)
    assert cm.assumptions["pp_link"] == "tcp"
    assert any("batches in flight" in n for n in cm.assumptions["notes"])
    with pytest.raises(InputError, match="pipeline stages over whole nodes"):
        step_cost_model(SPEC, accelerator=acc, layout=lay, weights="bf16", kv_dtype="bf16", engine=engine("vllm"))


def test_placements_span_whole_instances_only_when_asked() -> None:
    offers = [o for o in fleet_offers(CAT, "h100-sxm5-80gb", market="global") if o.cards_per_host is None]
    assert offers
    inside = placements(SPEC, 8, offers)
    assert all(lay.tp * lay.pp <= 8 for lay, _, _ in inside)
    across = [(lay, offs, link) for lay, offs, link in placements(SPEC, 8, offers, node=8) if lay.tp * lay.pp > 8]
    assert {(lay.tp, lay.pp) for lay, _, _ in across} == {(8, 2), (8, 4)}
    assert all(len(offs) == 1 and offs[0].accelerator_count == 8 and link is offs[0].hop_link
               for _, offs, link in across)


def test_405b_bf16_is_planned_on_two_h100_nodes() -> None:
    res = runner.invoke(app, ["plan", "infer", "-m", "llama3.1-405b", "--weights", "bf16", "--qps", "1",
                              "--input-len", "1000", "--output-len", "300", "--ttft-p99", "5", "--tpot-p99", "0.1",
                              "--market", "global", "--json"])
    exited(res, 0)
    out = json.loads(res.stdout)
    h100 = [p for p in out["plans"] if p["accelerator"] == "h100-sxm5-80gb"]
    assert h100, [m for m in out["parts_without_plan"] if m["accelerator"] == "h100-sxm5-80gb"]
    best = h100[0]
    assert best["layout"]["tp"] == 8 and best["layout"]["pp"] == 2
    assert best["devices"] == 16 and best["instances"] == 2
    assert best["tpot_s"]["p99"] <= 0.1


def test_the_emitted_launch_spans_the_two_instances(tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["plan", "infer", "-m", "llama3.1-405b", "--weights", "bf16", "--qps", "1", "--input-len", "1000",
            "--output-len", "300", "--ttft-p99", "5", "--tpot-p99", "0.1", "--market", "global", "--vendor", "nvidia"]
    out = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    pick = next(i for i, p in enumerate(out["plans"], 1) if p["layout"]["pp"] == 2)
    res = runner.invoke(app, [*args, "--emit", "sglang", "--pick", str(pick), "--out", str(tmp_path)])
    exited(res, 0)
    text = (tmp_path / "sglang.sh").read_text(encoding="utf-8")
    assert "--tp-size 8" in text and "--pp-size 2" in text and "--nnodes 2" in text
    assert "pipeline stage" in text and "DeepEP" not in text
    # vLLM spans the instances as a Ray cluster (its multi-node recipe): workers join the head, which serves
    vllm = runner.invoke(app, [*args, "--emit", "vllm", "--pick", str(pick), "--out", str(tmp_path / "v")])
    exited(vllm, 0)
    script = (tmp_path / "v" / "vllm.sh").read_text(encoding="utf-8")
    assert "ray start --head" in script and 'ray start --address="${MASTER_ADDR:?}:6379"' in script
    assert "--tensor-parallel-size 8" in script and "--pipeline-parallel-size 2" in script
    assert "--distributed-executor-backend ray" in script
    from gpuplan.emit.flags import unknown
    from gpuplan.emit.serve import command_words

    words = command_words(script)
    assert words[:3] == ["exec", "vllm", "serve"] and unknown(["vllm"], [w for w in words if w.startswith("--")]) == []
    import subprocess

    assert subprocess.run(["bash", "-n", str(tmp_path / "v" / "vllm.sh")], check=False).returncode == 0


def test_a_pipeline_replica_keeps_a_batch_per_stage_in_flight() -> None:
    """vLLM runs pipeline_parallel_size batches at once (max_concurrent_batches): a pp-2 replica serves as two
    engines, each with half its KV cache and running-request cap, at the full step latency; its SLO-bound capacity
    is twice one such engine's (it was counted as one batch at a time, half the throughput)."""
    from gpuplan.search.infer_capacity import capacity, length_moments
    from gpuplan.simulate.engine_sim import EngineConfig
    from gpuplan.simulate.lengths import parse_length_dist
    from gpuplan.simulate.pipeline import pipeline_batch

    acc = CAT.accelerator("h100-sxm5-80gb")
    cm = step_cost_model(SPEC, accelerator=acc, layout=Layout(tp=8, pp=2), weights="bf16", kv_dtype="bf16",
                         engine=engine("vllm"), scale_out=Link(47.0, 5e-6))
    cfg = EngineConfig(max_num_seqs=256)
    one, one_cfg = pipeline_batch(cm, cfg, 2)
    assert one.kv_capacity_tokens == cm.kv_capacity_tokens // 2 and one_cfg.max_num_seqs == 128
    assert one.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=8, decode_kv_tokens=8000) == \
        cm.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=8, decode_kv_tokens=8000)
    assert pipeline_batch(cm, cfg, 1) == (cm, cfg)
    m = length_moments(parse_length_dist("fixed:1000"), parse_length_dist("fixed:300"))
    seq = capacity(cm, cfg, m, 0.1)
    half = capacity(one, one_cfg, m, 0.1)
    # the TPOT limit binds well before the KV cache here: each half-engine serves what the replica served one batch
    # at a time, so the replica (two of them) serves twice that
    assert seq.limited_by == "tpot" and half.limited_by == "tpot"
    assert half.requests_per_s == pytest.approx(seq.requests_per_s, rel=0.05)


def test_estimate_infer_counts_the_batches_in_flight_as_the_planner_does() -> None:
    """`estimate infer --pp 2` over two nodes: offline throughput is that of two batch engines, each with half the
    KV cache and request cap (it was one batch at a time, half what the planner sizes the same replica for)."""
    from gpuplan.estimate.infer_estimate import estimate_inference
    from gpuplan.estimate.infer_perf import offline_perf

    acc = CAT.accelerator("h100-sxm5-80gb")
    link = Link(47.0, 5e-6)
    eng = engine("vllm").on_part(acc)  # the request cap vLLM starts with on an H100 (part_defaults)
    est = estimate_inference(SPEC, accelerator=acc, engine=eng, input_len=1000, output_len=300, tp=8, pp=2,
                             weights="bf16", catalog=CAT, scale_out=link)
    cm = step_cost_model(SPEC, accelerator=acc, layout=Layout(tp=8, pp=2), weights="bf16", kv_dtype="bf16",
                         engine=eng, scale_out=link)
    one_at_a_time = offline_perf(cm, input_len=1000, output_len=300, max_num_seqs=eng.max_num_seqs,
                                 max_batched_tokens=eng.max_batched_tokens, scheduling=eng.scheduling,
                                 chunked_prefill=eng.chunked_prefill, kv_block_tokens=eng.kv_block_tokens)
    assert est.perf.replicas == 1 and est.perf.devices_per_replica == 16
    assert est.perf.output_tokens_per_s > 1.6 * one_at_a_time.output_tokens_per_s
    assert est.perf.batch <= eng.max_num_seqs
