"""Each rule: a plan that triggers it and one that does not."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from gpuplan.advise import (
    FINDING_IDS,
    Finding,
    PlanFacts,
    Requirements,
    advise,
    evaluate_fixed,
    load_thresholds,
    training_facts,
)
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.i18n import LANGS
from gpuplan.workload.jobs import TrainingJob, default_global_batch
from gpuplan.workload.presets import load_model


@cache
def catalog() -> Catalog:
    return load_catalog(())


@cache
def plan_facts(model: str, acc: str, n: int, net: str | None = None, nics: float | None = None,
               tokens: float = 1e12, method: str = "full", deadline_days: float | None = None,
               market: str | None = None, gpn: int | None = None) -> PlanFacts:
    spec = load_model(model)
    job = TrainingJob(method=method, seq_len=4096, global_batch=default_global_batch(4096, n), precision="bf16")
    out = evaluate_fixed(spec, job, catalog(), acc, n, tokens=tokens, network=net, nics_per_node=nics,
                         gpus_per_node=gpn)
    assert out is not None
    hw, fig = out
    return training_facts(spec, job, hw, fig, catalog=catalog(), tokens=tokens, deadline_days=deadline_days,
                          market=market)


H100 = "h100-sxm5-80gb"


def ids(f: PlanFacts, **th: float) -> dict[str, Finding]:
    return {x.id: x for x in advise(f, load_thresholds(th) if th else None)}


def fig(x: Finding, name: str) -> float:
    return float(next(f.value for f in x.figures if f.name == name))  # type: ignore[arg-type]


def test_rdma_required_on_tcp_is_quantified_by_the_planner() -> None:
    f = plan_facts("llama3-70b", H100, 16, "eth-25-tcp", 1)
    x = ids(f)["net.rdma_required"]
    assert f.step_s_tcp == f.step_time_s and f.step_s_rdma is not None
    loss = fig(x, "tcp_loss")
    assert loss == pytest.approx(f.step_s_tcp / f.step_s_rdma - 1) and loss > 0
    assert x.severity == ("critical" if loss > 0.05 else "warn")  # tcp_max_loss
    assert fig(x, "extra_days") == pytest.approx((f.time_s or 0) * (1 - f.step_s_rdma / f.step_s_tcp) / 86400)
    assert "ib-ndr-400" in x.text("en") and f"{loss:.0%}" in x.text("en") and "RDMA" in x.text("zh")


def test_no_rdma_finding_on_one_node_or_on_infiniband() -> None:
    assert "net.rdma_required" not in ids(plan_facts("llama3-8b", H100, 8))
    assert "net.rdma_required" not in ids(plan_facts("llama3-70b", H100, 16))


def test_stage_is_derived_from_the_numbers() -> None:
    assert "stage.pretrain_small" in ids(plan_facts("llama3-8b", H100, 8))
    assert "stage.pretrain_large" in ids(plan_facts("llama3-70b", H100, 16))
    small = ids(plan_facts("llama3-8b", H100, 8, tokens=5e9))
    assert "stage.finetune" in small and "stage.pretrain_small" not in small
    assert "stage.finetune" in ids(plan_facts("llama3-8b", H100, 8, method="lora", tokens=1e11))


def test_host_cpu() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    assert f.server is not None and f.server.cpu_cores
    assert not any(k.startswith("host.cpu") for k in ids(f))
    small = replace(f, server=f.server.model_copy(update={"cpu_cores": 16}))
    x = ids(small)["host.cpu"]
    assert x.severity == "warn" and fig(x, "cores_needed_per_node") > 16


def test_host_cpu_does_not_round_a_trace_of_tokenizing_up_to_a_core() -> None:
    """Regression: 256 A100s pretraining a 7B tokenize 30,605 tokens/s per node online, 0.03 of a core, and the
    finding said 'size the node for 33 cores (32 for loaders ... plus 0.0 to tokenize online)'."""
    f = plan_facts("llama3-8b", H100, 8)
    assert f.server is not None
    for tok, need in ((0.03, 32.0), (0.45, 33.0), (1.2, 34.0)):
        x = ids(replace(f, tokenize_cores_per_node=tok, server=None))["host.cpu_unknown"]
        assert fig(x, "cores_needed_per_node") == need
        assert f"{need:.0f} cores" in x.message["en"]


def test_host_cpu_of_a_serving_fleet_speaks_of_serving() -> None:
    """A serving plan's host-CPU finding had told a fleet to 'pre-tokenize the data offline' and counted 'loaders'."""
    f = plan_facts("llama3-8b", H100, 8)
    assert f.server is not None
    serve = replace(f, kind="infer", server=f.server.model_copy(update={"cpu_cores": 16}))
    x = ids(serve)["host.cpu_serve"]
    assert x.severity == "warn" and fig(x, "cores_needed_per_node") > 16
    assert "API server" in x.message["en"] and "pre-tokeniz" not in x.fix["en"].lower()
    assert "host.cpu_serve_unknown" in ids(replace(serve, server=None))
    assert "host.cpu" not in ids(serve)


def test_a_fraction_of_a_tokenizer_core_is_not_printed_as_zero() -> None:
    """Buyer check: 'plus 0 for the API server to tokenize 21,667 tokens/s per node'; the cores a node needs are
    whole cores (rounded up) and the tokenizer's share prints its tenths."""
    f = plan_facts("llama3-8b", H100, 8)
    serve = replace(f, kind="infer", server=None, tokenize_cores_per_node=0.3)
    x = ids(serve)["host.cpu_serve_unknown"]
    assert "plus 0.3 for the API server" in x.message["en"] and "另需 0.3 核" in x.message["zh"]
    assert fig(x, "cores_needed_per_node") == float(int(fig(x, "cores_needed_per_node")))
    assert fig(x, "cores_needed_per_node") > fig(x, "tokenizer_cores_per_node")
    # a share under a tenth (DeepSeek-V3 at 7,000 tokens/s a node) printed 'plus 0.0': it keeps two digits
    tiny = ids(replace(f, kind="infer", server=None, tokenize_cores_per_node=0.0042))["host.cpu_serve_unknown"]
    assert "plus 0.0042 for the API server" in tiny.message["en"] and "另需 0.0042 核" in tiny.message["zh"]


def test_host_ram_ratio() -> None:
    f = plan_facts("llama3-8b", H100, 8)  # dgx-h100: 2048 GiB for 8 x 80 GiB = 3.2x
    assert not any(k.startswith("host.ram") for k in ids(f))
    assert f.server is not None
    low = replace(f, server=f.server.model_copy(update={"ram_gib": 512.0}))
    assert ids(low)["host.ram_low"].severity == "warn"
    high = replace(f, server=f.server.model_copy(update={"ram_gib": 4096.0}))
    assert "host.ram_high" in ids(high)


def test_host_ram_low_not_on_vendor_reference_nodes() -> None:
    """DGX/HGX H200 ship 2 TB of RAM for 8 x 141 GB of HBM (1.8x): a standard node, not a finding."""
    for acc, server in (("h200-sxm-141gb", "hgx-h200-8"), (H100, "dgx-h100")):
        f = plan_facts("llama3-8b", acc, 8)
        assert f.server is not None and f.server.id == server
        assert "host.ram_low" not in ids(f), server
    f = plan_facts("llama3-8b", "h200-sxm-141gb", 8)
    assert f.server is not None
    short = replace(f, server=f.server.model_copy(update={"ram_gib": 1024.0}))  # 0.9x of 1128 GiB
    x = ids(short)["host.ram_low"]
    assert x.severity == "warn" and fig(x, "ratio") == pytest.approx(1024 / 1128)


def test_host_nvme() -> None:
    assert "host.nvme" not in ids(plan_facts("llama3-8b", H100, 8))  # 30.7 TB
    # 1e13 tokens of int32 ids (vocabulary 128k) over 8 Atlas 800T A2 nodes: 5 TB each against 0.96 TB
    x = ids(plan_facts("llama3-8b", "ascend-910b", 64, tokens=1e13))["host.nvme"]
    assert fig(x, "local_nvme") == pytest.approx(0.96)
    assert fig(x, "dataset_share_per_node") == pytest.approx(1e13 * 4 / 8 / 1e12)


def test_local_nvme_is_what_the_job_stages_and_caches() -> None:
    """Buyer check: Qwen2.5-7B on 2e12 tokens over 32 Atlas 800T A2 nodes warned that each node 'needs 3.84 TB' of NVMe
    (a floor copied from DGX H100's data cache) although its two checkpoint shards are 7 GB and its share of the
    tokenized dataset 0.25 TB: the need is now those two figures, and 0.96 TB is enough."""
    f = plan_facts("llama3-8b", "ascend-910b", 64, tokens=1e12)
    assert f.server is not None and f.server.local_nvme_tb == pytest.approx(0.96)
    assert "host.nvme" not in ids(f)
    found = ids(replace(f, server=None))["host.nvme_unknown"]
    need = fig(found, "two_checkpoint_shards_per_node") + fig(found, "dataset_share_per_node")
    assert need < 0.96 and fig(found, "dataset_share_per_node") == pytest.approx(1e12 * 4 / 8 / 1e12)
    assert "tokenized dataset" in found.message["en"] and "已分词数据" in found.message["zh"]


def test_the_dataset_share_reads_the_models_vocabulary_not_its_name() -> None:
    """Regression: the rule re-resolved the model from the plan's display name to learn its vocabulary, so a model
    given as a config.json (no preset of that name) was costed at int32 ids; a 32k vocabulary stores uint16."""
    f = plan_facts("llama2-7b", "ascend-910b", 64, tokens=1e12)
    assert f.vocab_size == 32000
    uploaded = replace(f, model="my-finetune (config.json)", server=None)
    found = ids(uploaded)["host.nvme_unknown"]
    assert fig(found, "dataset_share_per_node") == pytest.approx(1e12 * 2 / 8 / 1e12)
    unknown = ids(replace(uploaded, vocab_size=None))["host.nvme_unknown"]
    assert fig(unknown, "dataset_share_per_node") == pytest.approx(1e12 * 4 / 8 / 1e12)


def test_storage_read_and_iops() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    assert "storage.read" not in ids(f)
    x = ids(f, shared_fs_single_server_iops=1.0)["storage.read"]
    assert fig(x, "random_reads_per_s") == pytest.approx(f.tokens_per_s / 4096)


def test_storage_checkpoint_and_parallel_fs() -> None:
    big = plan_facts("llama3-70b", H100, 1024)
    found = ids(big)
    need = fig(found["storage.checkpoint"], "write_gbyte_s_needed")
    assert big.checkpoint_bytes and big.checkpoint_interval_s
    assert need == pytest.approx(big.checkpoint_bytes / (0.02 * big.checkpoint_interval_s) / 1e9)
    assert "storage.parallel_fs" in found
    small = ids(plan_facts("llama3-8b", H100, 8))
    assert "storage.checkpoint" not in small and "storage.parallel_fs" not in small


def test_roce_lossless() -> None:
    assert "net.roce_lossless" in ids(plan_facts("llama3-8b", "ascend-910b", 64))
    assert "net.roce_lossless" not in ids(plan_facts("llama3-8b", H100, 64))


def test_nics_per_device() -> None:
    f = plan_facts("llama3-70b", H100, 16, None, 2)
    x = ids(f)["net.nics"]
    assert fig(x, "nics_per_device") == pytest.approx(0.25)
    assert "net.nics" not in ids(plan_facts("llama3-70b", H100, 16))


def test_rail_optimized() -> None:
    assert "net.rail" in ids(plan_facts("llama3-8b", H100, 32))
    assert "net.rail" not in ids(plan_facts("llama3-70b", H100, 16))


def test_oversubscription_is_the_planner_at_half_bandwidth() -> None:
    f = plan_facts("llama3-70b", H100, 1024)
    x = ids(f)["net.oversubscription"]
    assert f.step_s_oversubscribed and f.step_time_s
    assert fig(x, "loss") == pytest.approx(f.step_s_oversubscribed / f.step_time_s - 1) and fig(x, "loss") > 0.03
    assert "net.oversubscription" not in ids(plan_facts("llama3-8b", H100, 32))


def test_precision() -> None:
    h100 = ids(plan_facts("llama3-8b", H100, 8))
    assert 0.1 < fig(h100["precision.fp8"], "step_gain") < 1
    assert "precision.fp8" not in ids(plan_facts("llama3-8b", "a100-sxm4-80gb", 8))  # no FP8 on Ampere
    f = plan_facts("llama3-8b", "a100-sxm4-80gb", 8)
    assert "precision.fp32" in ids(replace(f, precision="fp32"))
    assert not any(k.startswith("precision.fp") for k in ids(f))


def test_ecosystem_porting_risk() -> None:
    x = ids(plan_facts("llama3-8b", "ascend-910b", 64))["ecosystem.porting"]
    assert x.severity == "warn" and fig(x, "poc_weeks") > 0 and "MindSpeed" in x.text("en")
    assert "ecosystem.porting" not in ids(plan_facts("llama3-8b", H100, 8))


def test_export_notes_by_market() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    assert "market.export" not in ids(f)
    x = ids(replace(f, market="cn"))["market.export"]
    assert x.severity == "critical" and "2022-10-07" in x.text("en")
    asc = plan_facts("llama3-8b", "ascend-910b", 64)
    assert "market.export" not in ids(asc)
    assert "2025-05-13" in ids(replace(asc, market="global"))["market.export"].text("zh")


def test_residency_and_compliance_levels() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    assert "market.residency" not in ids(f) and "market.compliance" not in ids(f)
    req = Requirements(data_residency="cn", compliance=("mlps3",))
    found = ids(replace(f, requirements=req, market="global", provider="aws"))
    assert "market.residency" in found and "market.compliance" in found
    ok = ids(replace(f, requirements=req, market="cn", provider="alibaba-cloud"))
    assert "market.residency" not in ok and "market.compliance" not in ok


def test_ecc_on_consumer_cards_for_long_runs() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    assert "reliability.ecc" not in ids(f)
    consumer = replace(f, accelerator=catalog().accelerator("rtx4090d-24gb"), server=None)
    assert ids(consumer)["reliability.ecc"].severity == "warn"


def test_cooling_and_power() -> None:
    four = ids(plan_facts("llama3-8b", H100, 32))  # 4 x dgx-h100 at 10.2 kW = 40.8 kW per rack
    assert fig(four["reliability.cooling"], "rack_kw") == pytest.approx(40.8)
    # regression: a cloud renter was told to install liquid cooling; racks are the buyer's concern only
    cool = four["reliability.cooling"]
    assert cool.message["en"].startswith("If you buy and host") and cool.message["zh"].startswith("若自购并托管")
    assert "cloud rental" in cool.fix["en"] and "云厂商" in cool.fix["zh"]
    assert "reliability.power" not in four
    # a plan on a provider's offer: the provider houses and cools the racks, so no cooling finding at all;
    # servers the team owns keep it
    assert "reliability.cooling" not in ids(replace(plan_facts("llama3-8b", H100, 32), hosting="rented"))
    owned = ids(replace(plan_facts("llama3-8b", H100, 32), hosting="owned"))["reliability.cooling"]
    assert owned.message["en"].startswith("Rack power density 41 kW") and "cloud rental" not in owned.fix["en"]
    assert owned.message["zh"].startswith("机柜功率密度") and "云厂商" not in owned.fix["zh"]
    # regression: a GB200 NVL72 (one 120 kW rack) was counted as four "nodes" per rack, 480 kW
    nvl = replace(plan_facts("llama3-70b", "gb200-186gb", 144, gpn=72), hosting="owned")
    assert nvl.server is not None and nvl.server.racks == 1
    assert fig(ids(nvl)["reliability.cooling"], "rack_kw") == pytest.approx(nvl.server.power_kw)
    two = ids(plan_facts("llama3-70b", H100, 16))
    assert "reliability.cooling" not in two
    assert "reliability.power" in ids(plan_facts("llama3-70b", H100, 1024))


def test_checkpoint_goodput() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    assert "reliability.checkpoint" not in ids(f)
    assert "reliability.checkpoint" in ids(replace(f, goodput=0.9))


def test_growth() -> None:
    f = plan_facts("llama3-70b", H100, 16)
    x = ids(f)["growth.model"]
    assert f.growth is not None and f.growth.model_devices_needed == 32 and "32" in x.text("en")
    small = plan_facts("llama3-8b", H100, 8)
    assert "growth.model" not in ids(small)
    assert small.time_s
    tight = plan_facts("llama3-8b", H100, 8, deadline_days=small.time_s / 86400 * 1.5)
    assert "growth.deadline" in ids(tight)
    assert "growth.deadline" not in ids(plan_facts("llama3-8b", H100, 8, deadline_days=small.time_s / 86400 * 3))


def test_every_finding_is_bilingual_with_provenance() -> None:
    for f in (plan_facts("llama3-70b", H100, 1024), plan_facts("llama3-8b", "ascend-910b", 64)):
        found = advise(f)
        assert [x.severity for x in found] == sorted((x.severity for x in found),
                                                     key=("critical", "warn", "info").index)
        for x in found:
            assert x.id in FINDING_IDS
            assert all(x.message[lang] and x.fix[lang] for lang in LANGS)
            assert all(g.provenance in ("measured", "estimated", "datasheet", "data") and g.source
                       for g in x.figures)


def test_unknown_host_data_asks_for_the_figure() -> None:
    f = plan_facts("llama3-8b", H100, 8)
    found = ids(replace(f, server=None))
    assert {"host.cpu_unknown", "host.ram_unknown", "host.nvme_unknown"} <= set(found)
    assert not {"host.cpu_unknown", "host.ram_unknown", "host.nvme_unknown"} & set(ids(f))
    assert fig(found["host.ram_unknown"], "accelerator_memory_per_node") == pytest.approx(8 * 80)


def test_rdma_finding_without_a_quantified_loss_and_fp16() -> None:
    f = plan_facts("llama3-70b", H100, 16, "eth-25-tcp", 1)
    blind = ids(replace(f, step_s_rdma=None))
    assert blind["net.rdma_required_unquantified"].severity == "critical" and "net.rdma_required" not in blind
    assert "precision.fp16" in ids(replace(f, precision="fp16"))
    assert "precision.fp16" not in ids(f)


def test_a_bf16_plan_on_a_part_without_bf16_says_it_trains_in_fp16() -> None:
    """Regression: `plan train --method lora --market cn` named 8 x V100 as the best plan on confirmed inputs with
    no word that Volta has no BF16: the planner times it at the FP16 peak and the job trains in FP16."""
    from gpuplan.hardware import load_catalog

    assert load_catalog(use_user_dir=False).accelerator("v100-sxm2-32gb").dense_tflops("bf16") is None
    f = plan_facts("llama3-8b", "v100-sxm2-32gb", 8)
    found = ids(f)
    assert found["precision.no_bf16"].severity == "warn" and "precision.fp16" not in found
    assert "FP16" in found["precision.no_bf16"].text("en") and "loss scaling" in found["precision.no_bf16"].text("zh")
    assert "precision.no_bf16" not in ids(plan_facts("llama3-8b", H100, 8))


def test_tcp_that_costs_nothing_is_not_called_rdma_required() -> None:
    """Regression: a LoRA job on 2 TCP nodes drew 'RDMA required ... 0% slower' as its most severe finding.
    Below `tcp_negligible_loss` the advisor says TCP is enough (info), and never both."""
    from gpuplan.advise import default_thresholds
    from gpuplan.advise.report_train import compare_training
    from gpuplan.search.train_search import PlanConstraints
    from gpuplan.workload.jobs import TrainingJob
    from gpuplan.workload.presets import get_preset

    # LoRA under DDP/ZeRO-1 sends only the adapters' gradients between nodes
    spec = get_preset("llama3-8b").spec
    job = TrainingJob(seq_len=4096, global_batch=1024, method="lora")
    doc = compare_training(spec, job, load_catalog(use_user_dir=False), ["h100-sxm5-80gb"],
                           PlanConstraints(layout_family="data_parallel", min_devices=16), tokens=2e10)
    plan = doc["options"][0]["plan"]
    assert plan["layout"].startswith("tp1 pp1 dp16") and "zero1" in plan["layout"]
    assert plan["devices"] > plan["hardware_option"]["gpus_per_node"]  # spans nodes
    assert "tcp" in plan["hardware_option"]["network"]  # on the offer's TCP network
    found = {f["id"]: f for f in doc["options"][0]["findings"]}
    assert "net.rdma_required" not in found
    assert found["net.tcp_enough"]["severity"] == "info"
    loss = next(g["value"] for g in found["net.tcp_enough"]["figures"] if g["name"] == "tcp_loss")
    assert loss <= default_thresholds().value("tcp_negligible_loss")


def test_lora_70b_sharded_over_nodes_is_not_planned_on_tcp() -> None:
    """A 70B LoRA that ZeRO-3 shards over two H200 nodes gathers its 140 GB frozen base every micro-batch: the
    offer's 25 GbE costs far more than its compute, so the plan is on InfiniBand (regression: only the adapters
    were gathered, and this job was planned on TCP as if the network cost nothing)."""
    from gpuplan.advise.report_train import compare_training
    from gpuplan.search.train_search import PlanConstraints
    from gpuplan.workload.jobs import TrainingJob
    from gpuplan.workload.presets import get_preset

    spec = get_preset("llama3-70b").spec
    job = TrainingJob(seq_len=4096, global_batch=1024, method="lora")
    doc = compare_training(spec, job, load_catalog(use_user_dir=False), ["h200-sxm-141gb"],
                           PlanConstraints(layout_family="data_parallel"), tokens=2e10)
    plan = doc["options"][0]["plan"]
    assert "zero3" in plan["layout"] and plan["devices"] > plan["hardware_option"]["gpus_per_node"]
    assert "tcp" not in plan["hardware_option"]["network"]



def test_qlora_needs_4bit_kernels_on_the_stack() -> None:
    """QLoRA runs its base through bitsandbytes' NF4 kernels: none for CANN (critical, so not recommended), only
    experimental for ROCm (warn), official for CUDA (nothing). Regression: QLoRA of Qwen2.5-7B in China was
    recommended on a single Ascend 910B2 rental."""
    on_ascend = ids(plan_facts("llama3-8b", "ascend-910b2", 1, method="qlora", tokens=5e7))
    assert on_ascend["method.qlora_none"].severity == "critical"
    assert "method.qlora_none" not in ids(plan_facts("llama3-8b", "ascend-910b2", 1, method="lora", tokens=5e7))
    assert ids(plan_facts("llama3-8b", "mi300x-192gb", 1, method="qlora", tokens=5e7))[
        "method.qlora_experimental"].severity == "warn"
    assert not {"method.qlora_none", "method.qlora_experimental"} & set(
        ids(plan_facts("llama3-8b", H100, 1, method="qlora", tokens=5e7)))


def test_a_qlora_plan_is_not_recommended_where_it_cannot_run() -> None:
    import json

    from typer.testing import CliRunner

    from cli_result import exited
    from gpuplan.cli.main import app

    res = CliRunner().invoke(app, ["plan", "train", "-m", "qwen2.5-7b", "--tokens", "5e7", "--method", "qlora",
                                   "--deadline", "3", "--market", "cn", "--json"])
    exited(res, 0)
    out = json.loads(res.stdout)
    acc = {"ascend-910b2", "ascend-910b", "ascend-910b3", "ascend-910c"}
    assert out["recommended"]["accelerator"] not in acc
    assert any(p["accelerator"] in acc for p in out["plans"])  # still listed, marked
    assert all(out["not_recommended"].get(a) == "method.qlora_none"
               for a in {p["accelerator"] for p in out["plans"]} & acc)


def test_a_moe_step_that_waits_on_the_host_names_the_flex_dispatcher() -> None:
    """Qwen3-30B-A3B under Megatron-Core's alltoall dispatcher (the default): the step's `moe_host_wait` share over
    `moe_host_wait_share` gives a warning whose figures are the wait, the step and the step without the wait; under
    the flex dispatcher the part is zero and nothing is said. A dense model never has the part."""
    spec = load_model("qwen3-30b-a3b")
    job = TrainingJob(seq_len=4096, global_batch=512, precision="bf16", moe_dispatcher="alltoall")
    out = evaluate_fixed(spec, job, catalog(), H100, 16, tokens=1e12)  # the fastest layout that fits
    assert out is not None
    hw, fg = out
    f = training_facts(spec, job, hw, fg, catalog=catalog(), tokens=1e12)
    wait = f.breakdown_s["moe_host_wait"]
    assert f.step_time_s is not None and wait / f.step_time_s > 0.1  # 48 layers x passes x micro-batches x 3 ms
    share = wait / f.step_time_s
    x = ids(f, moe_host_wait_share=share * 0.99)["train.moe_host_wait"]
    assert x.severity == "warn"
    assert fig(x, "moe_host_wait_s") == pytest.approx(wait)
    assert fig(x, "moe_host_wait_share") == pytest.approx(wait / f.step_time_s)
    assert "flex" in x.fix["en"] and "flex" in x.fix["zh"]
    assert "train.moe_host_wait" not in ids(f, moe_host_wait_share=share * 1.01)
    flex_job = job.model_copy(update={"moe_dispatcher": "flex"})
    out = evaluate_fixed(spec, flex_job, catalog(), H100, 16, tokens=1e12)
    assert out is not None
    f_flex = training_facts(spec, flex_job, out[0], out[1], catalog=catalog(), tokens=1e12)
    assert f_flex.breakdown_s["moe_host_wait"] == 0.0
    assert "train.moe_host_wait" not in ids(f_flex, moe_host_wait_share=0.0001)
    assert "train.moe_host_wait" not in ids(plan_facts("llama3-70b", H100, 16))
