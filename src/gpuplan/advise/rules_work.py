"""Rules on the work itself, the host and the storage: stage, CPU cores, host RAM, NVMe, reads, checkpoints.

Each rule is a pure function (PlanFacts, Thresholds) -> list[Finding]; thresholds come from
advise/data/thresholds.yaml. Formulas:
* cores per node = base cores per accelerator x accelerators + tokenizer cores at the planned
  per-node token rate (plan figures, data_pipeline);
* host RAM ratio = node RAM / (accelerators per node x device memory) (NVIDIA-Certified guide: >= 2x);
* checkpoint write bandwidth = checkpoint bytes / (stall share x Young/Daly interval);
* random reads per second = tokens/s / sequence length (one read per shuffled sample);
* serving fleet load time = replicas x parameters x weight bytes / one shared server's bandwidth (every
  replica reads the whole model at a cold start or a restart wave; serving writes no checkpoints).
"""

from __future__ import annotations

import math

from gpuplan.advise.facts import PlanFacts
from gpuplan.advise.findings import Figure, Finding, Thresholds, make_finding
from gpuplan.i18n import Duration
from gpuplan.units import DTYPE_BYTES, GIB, sig

__all__ = ["WORK_RULES"]

_TH = "advise/data/thresholds.yaml"
_PLAN = "training planner (plan figures)"


def _est(name: str, value: float | None, unit: str, source: str = _PLAN) -> Figure:
    return Figure(name=name, value=value, unit=unit, provenance="estimated", source=source)


def _ds(name: str, value: float | str | None, unit: str, source: str) -> Figure:
    return Figure(name=name, value=value, unit=unit, provenance="datasheet", source=source)


def _th(th: Thresholds, name: str) -> Figure:
    t = th.terms[name]
    return Figure(name=name, value=t.value, unit=t.unit, provenance="data", source=f"{_TH}: {t.source}")


def stage(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """Experiments / fine-tuning, pretraining under 10B or above, from the method, tokens and parameters."""
    if f.kind != "train":
        return _serve_stage(f)
    ratio = (f.tokens or 0.0) / f.params_total
    device_hours = f.devices * (f.time_s or 0.0) / 3600.0
    days = (f.time_s or 0.0) / 86400.0
    figs = (_est("tokens_per_parameter", ratio, "tokens/parameter"), _est("device_hours", device_hours, "h"),
            _est("days", days, "days"), _ds("parameters", f.params_total, "", "model spec (parameter count)"))
    common = {"model": f.model, "params_b": f.params_total / 1e9, "tokens": f.tokens or 0.0, "ratio": ratio,
              "devices": f.devices, "acc": f.accelerator.id, "nodes": f.nodes, "days": Duration(f.time_s or 0.0),
              "device_hours": device_hours, "method": f.method}
    if f.method != "full" or ratio < th.value("finetune_max_tokens_per_param"):
        fid = "stage.finetune"
        used: tuple[str, ...] = ("finetune_max_tokens_per_param",)
    elif f.params_total < th.value("large_pretrain_params"):
        fid, used = "stage.pretrain_small", ("finetune_max_tokens_per_param", "large_pretrain_params")
    else:
        fid, used = "stage.pretrain_large", ("large_pretrain_params",)
    return [make_finding(fid, "info", figs + tuple(_th(th, u) for u in used), used, **common)]


def _serve_stage(f: PlanFacts) -> list[Finding]:
    sv = f.serving
    if not sv:
        return []
    src = "inference planner (simulation per replica)"
    figs = (_est("usd_per_hour", sv["usd_per_hour"], "USD/h", src),
            _est("usd_per_million_tokens", sv["usd_per_million_tokens"], "USD/1M tokens", src),
            _est("ttft_p99_s", sv["ttft_p99_s"], "s", src), _est("tpot_p99_s", sv["tpot_p99_s"], "s", src),
            _est("utilization", sv["utilization"], "fraction", src))
    return [make_finding("stage.serve", "info", figs, (), model=f.model, qps=sv["qps"], tokens_s=f.tokens_per_s,
                         devices=f.devices, replicas=sv["replicas"], acc=f.accelerator.id, weights=f.precision,
                         usd_h=sv["usd_per_hour"], usd_m=sig(sv["usd_per_million_tokens"]), util=sv["utilization"])]


def host_cpu(f: PlanFacts, th: Thresholds) -> list[Finding]:
    base = th.value("host_cores_per_device_base") * f.gpus_per_node
    tok = f.tokenize_cores_per_node or 0.0  # printed with two significant digits (0.0042, 0.3, 1.5)
    need = float(math.ceil(base + round(tok, 1) - 1e-9))  # whole cores: 0.03 of a core adds none
    have = f.server.cpu_cores if f.server else None
    rate = f.tokens_per_s / f.nodes
    figs: tuple[Figure, ...] = (
        _est("cores_needed_per_node", need, "cores"), _est("tokenizer_cores_per_node", tok, "cores"),
            _est("tokens_per_s_per_node", rate, "tokens/s"), _th(th, "host_cores_per_device_base"))
    params = {"need": need, "base": base, "tok": tok, "rate": rate, "per_dev": th.value("host_cores_per_device_base")}
    # a serving fleet tokenizes every prompt online, in the engine's API server: no loaders, nothing to pre-tokenize
    fid = "host.cpu_serve" if f.kind == "infer" else "host.cpu"
    if have is None:
        return [make_finding(f"{fid}_unknown", "info", figs, ("host_cores_per_device_base",), **params)]
    if have >= need:
        return []
    figs += (_ds("cores_in_server", have, "cores", f"catalog server {f.server.id if f.server else ''}"),)
    return [make_finding(fid, "warn", figs, ("host_cores_per_device_base",), have=have,
                         server=f.server.id if f.server else "", **params)]


def host_ram(f: PlanFacts, th: Thresholds) -> list[Finding]:
    node_dev_gib = f.gpus_per_node * f.device_memory_bytes / GIB
    lo, hi = th.value("host_ram_per_device_memory_min"), th.value("host_ram_per_device_memory_max")
    used = ("host_ram_per_device_memory_min", "host_ram_per_device_memory_max")
    figs: tuple[Figure, ...] = (
        _ds("accelerator_memory_per_node", node_dev_gib, "GiB", f"catalog accelerator {f.accelerator.id}"),
            _th(th, used[0]), _th(th, used[1]))
    params = {"dev_gib": node_dev_gib, "lo": lo, "hi": hi, "need_lo": lo * node_dev_gib, "need_hi": hi * node_dev_gib}
    ram = f.server.ram_gib if f.server else None
    if ram is None:
        return [make_finding("host.ram_unknown", "info", figs, used, **params)]
    ratio = ram / node_dev_gib
    figs += (_ds("host_ram", ram, "GiB", f"catalog server {f.server.id if f.server else ''}"),
             _est("ratio", ratio, "x"))
    if ratio < lo:
        return [make_finding("host.ram_low", "warn", figs, used, ram=ram, ratio=ratio, **params)]
    if ratio > hi:
        return [make_finding("host.ram_high", "info", figs, used, ram=ram, ratio=ratio, **params)]
    return []


def _token_bytes(vocab_size: int | None) -> int:
    """Bytes per token id of the pre-tokenized dataset: Megatron's indexed dataset stores uint16 ids below a vocabulary
    of 65,500 and int32 ids above (megatron/core/datasets/indexed_dataset.py, DType.optimal_dtype); int32 when the
    vocabulary is not known."""
    return 2 if vocab_size is not None and vocab_size < 65500 else 4


def host_nvme(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """Local NVMe a training node uses: two checkpoint shards staged before they drain to shared storage (the one
    being written and the last good one) and its share of the tokenized dataset, cached locally (each node reads
    1/nodes of the samples per pass)."""
    if f.checkpoint_bytes is None:
        return []
    shard_tb = 2 * f.checkpoint_bytes / f.nodes / 1e12
    data_tb = (f.tokens or 0.0) * _token_bytes(f.vocab_size) / f.nodes / 1e12
    need = shard_tb + data_tb
    figs: tuple[Figure, ...] = (_est("two_checkpoint_shards_per_node", shard_tb, "TB"),
                                _est("dataset_share_per_node", data_tb, "TB"))
    have = f.server.local_nvme_tb if f.server else None
    if have is None:
        return [make_finding("host.nvme_unknown", "info", figs, (), need=need, shard=shard_tb, data=data_tb)]
    if have >= need:
        return []
    figs += (_ds("local_nvme", have, "TB", f"catalog server {f.server.id if f.server else ''}"),)
    return [make_finding("host.nvme", "warn", figs, (), need=need, shard=shard_tb, data=data_tb, have=have)]


def storage_read(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if f.read_mbyte_s is None or not f.seq_len:
        return []
    gbs = f.read_mbyte_s / 1e3
    iops = f.tokens_per_s / f.seq_len
    lim_bw, lim_iops = th.value("shared_fs_single_server_gbyte_s"), th.value("shared_fs_single_server_iops")
    if gbs <= lim_bw and iops <= lim_iops:
        return []
    used = ("shared_fs_single_server_gbyte_s", "shared_fs_single_server_iops")
    figs = (_est("read_gbyte_s", gbs, "GB/s"), _est("random_reads_per_s", iops, "1/s"), _th(th, used[0]),
            _th(th, used[1]))
    return [make_finding("storage.read", "warn", figs, used, gbs=gbs, iops=iops, lim_bw=lim_bw, lim_iops=lim_iops)]


def _ckpt_need(f: PlanFacts, th: Thresholds) -> float | None:
    if not f.checkpoint_bytes or not f.checkpoint_interval_s or f.checkpoint_interval_s == float("inf"):
        return None
    return f.checkpoint_bytes / (th.value("checkpoint_stall_max_fraction") * f.checkpoint_interval_s) / 1e9


def storage_checkpoint(f: PlanFacts, th: Thresholds) -> list[Finding]:
    need = _ckpt_need(f, th)
    if need is None or need <= th.value("shared_fs_single_server_gbyte_s"):
        return []
    used = ("checkpoint_stall_max_fraction", "shared_fs_single_server_gbyte_s")
    figs = (_est("checkpoint_bytes", f.checkpoint_bytes, "B"), _est("checkpoint_interval_s", f.checkpoint_interval_s,
                                                                     "s", "Young 1974 / Daly 2006 (plan figures)"),
            _est("write_gbyte_s_needed", need, "GB/s"), _th(th, used[0]), _th(th, used[1]))
    return [make_finding("storage.checkpoint", "warn", figs, used, need=need,
                         ckpt_gb=(f.checkpoint_bytes or 0.0) / 1e9, interval_min=(f.checkpoint_interval_s or 0) / 60,
                         stall=th.value("checkpoint_stall_max_fraction"))]


def storage_parallel_fs(f: PlanFacts, th: Thresholds) -> list[Finding]:
    if f.kind != "train":
        return _serve_model_load(f, th)
    if f.nodes < th.value("parallel_fs_min_nodes"):
        return []
    need = _ckpt_need(f, th) or 0.0
    figs = (_est("nodes", f.nodes, "nodes"), _est("write_gbyte_s_needed", need, "GB/s"),
            _th(th, "parallel_fs_min_nodes"))
    return [make_finding("storage.parallel_fs", "info", figs, ("parallel_fs_min_nodes",), nodes=f.nodes, need=need,
                         min_nodes=th.value("parallel_fs_min_nodes"))]


def _serve_model_load(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """A serving fleet writes no checkpoints; its storage load is every replica reading the whole model at
    once (first start, a restart wave, a scale-out): replicas x parameters x weight bytes from one server."""
    replicas = int(f.serving.get("replicas", 0)) if f.serving else 0
    if not replicas or not f.params_total or f.precision not in DTYPE_BYTES:
        return []
    model_bytes = f.params_total * DTYPE_BYTES[f.precision]
    bw = th.value("shared_fs_single_server_gbyte_s")
    load_s = replicas * model_bytes / (bw * 1e9)
    if load_s <= th.value("model_load_max_s"):
        return []
    used = ("shared_fs_single_server_gbyte_s", "model_load_max_s")
    src = "inference planner (replicas) x model spec (parameters x weight bytes)"
    figs = (_est("model_bytes", model_bytes, "B", src), _est("replicas", replicas, "replicas", src),
            _est("fleet_load_s", load_s, "s", "replicas x model bytes / single-server bandwidth"),
            _th(th, used[0]), _th(th, used[1]))
    return [make_finding("storage.model_load", "info", figs, used, replicas=replicas, model_gb=model_bytes / 1e9,
                         total_gb=replicas * model_bytes / 1e9, bw=bw, load=Duration(load_s),
                         limit=Duration(th.value("model_load_max_s")))]


def moe_host_wait(f: PlanFacts, th: Thresholds) -> list[Finding]:
    """A MoE step that waits on the host: the share of the step Megatron-Core's alltoall dispatcher spends with the
    GPU idle on its token-count sync (search/train_eval._moe_host_wait_s), and the step without it (the flex
    dispatcher's, as `--recipe moe_dispatcher=flex` times it: the same layout less the wait)."""
    wait = float(f.breakdown_s.get("moe_host_wait", 0.0)) if f.kind == "train" else 0.0
    if not wait or not f.step_time_s:
        return []
    share = wait / f.step_time_s
    if share < th.value("moe_host_wait_share"):
        return []
    used = ("moe_host_wait_share",)
    figs = (_est("moe_host_wait_s", wait, "s"), _est("step_time_s", f.step_time_s, "s"),
            _est("moe_host_wait_share", share, "fraction"), _th(th, used[0]))
    return [make_finding("train.moe_host_wait", "warn", figs, used, share=share, wait=wait, step=f.step_time_s,
                         without=f.step_time_s - wait, model=f.model)]


WORK_RULES = (stage, host_cpu, host_ram, host_nvme, storage_read, storage_checkpoint, storage_parallel_fs,
              moe_host_wait)
