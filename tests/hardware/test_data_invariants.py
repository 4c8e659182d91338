"""Invariants of the shipped catalog data (issue 3 acceptance)."""

from __future__ import annotations

import re

import pytest
import yaml

from gpuplan.hardware import Accelerator, Catalog, Instance, Server, builtin_data_dir
from gpuplan.hardware.parse import KINDS

CANONICAL_ACCELERATORS = [
    "a100-sxm4-40gb",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "a800-sxm4-80gb",
    "h100-sxm5-80gb",
    "h100-pcie-80gb",
    "h800-sxm5-80gb",
    "h200-sxm-141gb",
    "h20-96gb",
    "l40s-48gb",
    "l20-48gb",
    "l4-24gb",
    "a10-24gb",
    "v100-sxm2-32gb",
    "rtx4090-24gb",
    "b200-sxm-180gb",
    "mi300x-192gb",
    "ascend-910b",
    "ascend-910b2",
    "ascend-910b3",
    "ascend-910b4",
    "ascend-910c",
    "mlu370-x8",
    "hygon-k100",
    "kunlunxin-p800",
]
CANONICAL_NETWORKS = ["ib-hdr-200", "ib-ndr-400", "roce-100", "roce-200", "roce-400", "eth-25-tcp", "eth-100-tcp"]


def all_records(cat: Catalog) -> list[tuple[str, object]]:
    return [(k, r) for k in KINDS for r in cat.records(k)]


def test_canonical_ids_exist(builtin: Catalog) -> None:
    assert set(CANONICAL_ACCELERATORS) <= set(builtin.accelerators)
    assert set(CANONICAL_NETWORKS) <= set(builtin.networks)


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("A100-80G", "a100-sxm4-80gb"),
        ("H800", "h800-sxm5-80gb"),
        ("910B", "ascend-910b"),
        ("h100", "h100-sxm5-80gb"),
        ("L40S", "l40s-48gb"),
        ("MI300X", "mi300x-192gb"),
        ("HDR", "ib-hdr-200"),
    ],
)
def test_issue_aliases_resolve(builtin: Catalog, alias: str, expected: str) -> None:
    assert builtin.resolve(alias) == expected


def test_every_record_has_source_and_as_of(builtin: Catalog) -> None:
    for _, r in all_records(builtin):
        assert r.source.strip() and re.match(r"^\d{4}(-\d{2}(-\d{2})?)?$", r.as_of), r.id  # type: ignore[attr-defined]
    for inst in builtin.instances.values():
        for p in inst.prices:
            assert p.source.strip() and p.as_of, inst.id
    for net in builtin.networks.values():
        for term in net.calibration:
            assert term.source.strip(), (net.id, term.name)


def test_ids_and_aliases_unique_across_all_files() -> None:
    """Checked on the raw files too, so a loader bug cannot hide a duplicate."""
    seen: dict[str, str] = {}
    for path in sorted(builtin_data_dir().glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for kind in KINDS:
            for rec in data.get(kind) or []:
                for key in (rec["id"], *rec.get("aliases", [])):
                    k = str(key).lower()
                    assert seen.get(k, rec["id"]) == rec["id"], f"{key!r} in {path.name} also names {seen[k]}"
                    seen[k] = rec["id"]


def test_dense_figures_from_the_issue(builtin: Catalog) -> None:
    h100 = builtin.accelerator("h100-sxm5-80gb")
    assert h100.bf16_dense_tflops == pytest.approx(989, abs=1)
    assert h100.fp8_dense_tflops == pytest.approx(1979, abs=1)
    assert (h100.intra_node_link, h100.intra_node_link_gbps, h100.fully_connected_domain) == ("nvlink", 900, 8)
    assert "NVLink 4" in h100.intra_node_link_gen
    h200 = builtin.accelerator("h200-sxm-141gb")
    assert (h200.hbm_gib, h200.hbm_bandwidth_gbps) == (141, 4800)
    assert h200.bf16_dense_tflops == h100.bf16_dense_tflops  # same die; only memory changed
    for part in ("h800-sxm5-80gb", "a800-sxm4-80gb"):
        assert builtin.accelerator(part).nvlink_gbps == 400
    l40s = builtin.accelerator("l40s-48gb")
    assert l40s.nvlink_gbps is None and l40s.intra_node_link == "pcie"
    assert l40s.hbm_bandwidth_gbps == 864 and l40s.fully_connected_domain == 1
    assert builtin.accelerator("b200-sxm-180gb").fp8_dense_tflops == 4500  # 9 PF is the sparse figure


def test_no_sparse_figure_slipped_in(builtin: Catalog) -> None:
    """Dense BF16 never exceeds half the dense FP8 ceiling of its generation: a sparse
    figure stored as dense would double one of them and break fp8 >= bf16 or this bound."""
    for a in builtin.accelerators.values():
        if a.bf16_dense_tflops is not None:
            assert a.bf16_dense_tflops < 2600, a.id
        if a.fp8_dense_tflops is not None:  # MI355X's dense 5.03 PF (8,192 FLOPs/clk/CU x 256 CUs x 2.4 GHz) is the top
            assert a.fp8_dense_tflops <= 5100, a.id
        if a.fp4_dense_tflops is not None:  # GB300's dense 15 PF is the top; sparse FP4 figures start at 18 PF
            assert a.fp4_dense_tflops <= 16000, a.id


def test_new_parts_carry_their_sourced_specs(builtin: Catalog) -> None:
    # MI325X: 256 GB HBM3E at 6.0 TB/s, FP16 1,307 TFLOPS (Vultr ROCm hardware requirements); MI355X: 288 GB, 8 TB/s,
    # 1400 W, FP4 20.1 PF with sparsity (Tom's Hardware, ISC 2025); B300: 288 GB, FP4 13,125 dense, FP64 1.25
    # (glennklockwood B300); GB300 NVL72: 1.1 EF dense FP4 and 360 PF FP8 over 72 GPUs
    mi325 = builtin.accelerator("MI325X")
    assert (mi325.hbm_gib, mi325.hbm_bandwidth_gbps, mi325.bf16_dense_tflops) == (256, 6000, 1307.4)
    assert mi325.fp4_dense_tflops is None  # CDNA 3 has no FP4 matrix format
    mi355 = builtin.accelerator("MI355X")
    assert (mi355.hbm_gib, mi355.hbm_bandwidth_gbps, mi355.tdp_w) == (288, 8000, 1400)
    assert mi355.fp4_dense_tflops == pytest.approx(20100 / 2, rel=0.01)
    b300 = builtin.accelerator("B300")
    assert (b300.hbm_gib, b300.fp4_dense_tflops, b300.fp64_dense_tflops) == (288, 13125, 1.25)
    gb300 = builtin.accelerator("GB300")
    assert gb300.fp4_dense_tflops == pytest.approx(1.1e6 / 72, rel=0.1)
    assert gb300.fp8_dense_tflops == pytest.approx(360e3 / 72, rel=0.01)
    assert gb300.fully_connected_domain == 72


def test_fp8_at_least_bf16(builtin: Catalog) -> None:
    for a in builtin.accelerators.values():
        if a.fp8_dense_tflops is not None and a.bf16_dense_tflops is not None:
            assert a.fp8_dense_tflops >= a.bf16_dense_tflops, a.id


def test_references_resolve(builtin: Catalog) -> None:
    for inst in builtin.instances.values():
        assert inst.server in builtin.servers, inst.id
        assert inst.accelerator_count <= builtin.servers[inst.server].accelerators_per_node, inst.id
        assert inst.rdma_network is None or inst.rdma_network in builtin.networks, inst.id
    for srv in builtin.servers.values():
        assert srv.accelerator in builtin.accelerators, srv.id
        assert srv.network is None or srv.network in builtin.networks, srv.id


def test_prices_are_null_or_positive(builtin: Catalog) -> None:
    for inst in builtin.instances.values():
        for p in inst.prices:
            assert p.amount is None or p.amount > 0
            assert p.currency in ("CNY", "USD")


def test_providers_of_the_issue_are_present(builtin: Catalog) -> None:
    providers = {i.provider for i in builtin.instances.values()}
    assert {
        "alibaba-cloud",
        "tencent-cloud",
        "huawei-cloud",
        "baidu-ai-cloud",
        "volcano-engine",
        "aws",
        "azure",
        "gcp",
        "cn-910b-rental",
    } <= providers
    storage = {s.provider for s in builtin.storage.values() if s.kind == "parallel_fs"}
    assert {"aws", "alibaba-cloud", "tencent-cloud", "huawei-cloud"} <= storage


def test_networks_carry_alpha_beta_terms(builtin: Catalog) -> None:
    for net in builtin.networks.values():
        assert net.term("alpha_us") > 0
        assert 0 < net.term("bw_efficiency") <= 1
        assert net.achievable_gbyte_per_s <= net.nic_gbyte_per_s
    assert builtin.network("ib-ndr-400").nic_gbyte_per_s == 50


def test_low_confidence_values_are_marked(builtin: Catalog) -> None:
    for part in ("ascend-910b", "ascend-910b4", "hygon-k100"):
        assert builtin.accelerator(part).confidence == "low"
    assert builtin.accelerator("kunlunxin-p800").confidence == "none"
    assert builtin.accelerator("h20-96gb").confidence_of("tdp_w") == "low"
    assert builtin.accelerator("h20-96gb").confidence_of("bf16_dense_tflops") == "medium"


def test_accelerators_carry_planner_fields(builtin: Catalog) -> None:
    for a in builtin.accelerators.values():
        assert isinstance(a, Accelerator)
        assert a.software_stack and a.markets
        if a.confidence in ("high", "medium"):
            assert a.hbm_gib and a.hbm_bandwidth_gbps and a.bf16_dense_tflops or a.fp16_dense_tflops, a.id
            assert a.intra_node_link_gbps is not None and a.fully_connected_domain is not None, a.id
    assert all(isinstance(s, Server) for s in builtin.servers.values())
    assert all(isinstance(i, Instance) for i in builtin.instances.values())


def test_yaml_comments_do_not_truncate_values() -> None:
    """In YAML ' #' starts a comment even inside an unquoted value ('issue #75' would lose
    its tail); such values must be quoted."""
    pattern = re.compile(r"^\s*(?:- )?[a-z_]+: ([^\"'{\[&*\s][^#]*) #(?! )")
    for path in builtin_data_dir().glob("*.yaml"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not pattern.match(line), f"{path.name}:{n}: quote this value: {line.strip()}"


def test_every_cuda_part_states_its_compute_capability_with_a_source() -> None:
    """Engines state the lowest CUDA compute capability they run on (SGLang and TensorRT-LLM 8.0): every CUDA part
    must state its own, sourced, or an engine could be planned where it cannot run."""
    from gpuplan.hardware import load_catalog

    for acc in load_catalog(use_user_dir=False).accelerators.values():
        if acc.software_stack == "cuda":
            assert acc.cuda_compute_capability is not None, acc.id
            assert "cuda_compute_capability" in acc.field_sources, acc.id
