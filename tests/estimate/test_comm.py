"""Alpha-beta collectives and catalog-derived links (gpuplan.estimate.comm / links).

Hand values use a 100 GB/s link with 10 us per step unless said otherwise.
"""

from __future__ import annotations

import typing
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.errors import InputError
from gpuplan.estimate import comm
from gpuplan.estimate.comm import (
    Link,
    all_to_all_s,
    collective_s,
    hier_all_gather_s,
    hier_all_reduce_s,
    hier_all_to_all_s,
    hier_p2p_s,
    hier_reduce_scatter_s,
    hierarchical,
    host_link,
    inter_node_link,
    intra_node_link,
    load_link_calibration,
    node_link,
    p2p_s,
    pcie_gbyte_s,
    ranks_per_node,
    ring_all_gather_s,
    ring_all_reduce_s,
    ring_reduce_scatter_s,
    select_link,
)
from gpuplan.estimate.links import default_link_calibration
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.hardware.schema_devices import LinkKind

LINK = Link(100.0, 10e-6)
GB = 1e9


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog(use_user_dir=False)


# --- single-link collectives against hand computation --------------------------------
def test_ring_all_reduce_hand_value() -> None:
    # 2(n-1)/n x size / bw + 2(n-1) alpha = 1.5 x 1e9 / 100e9 + 6 x 10 us
    assert ring_all_reduce_s(1e9, 4, LINK) == pytest.approx(0.015 + 60e-6)


def test_all_gather_and_reduce_scatter_hand_value() -> None:
    # (n-1)/n x size / bw + (n-1) alpha = 0.75 x 0.01 + 3 x 10 us
    assert ring_all_gather_s(1e9, 4, LINK) == pytest.approx(0.0075 + 30e-6)
    assert ring_reduce_scatter_s(1e9, 4, LINK) == pytest.approx(0.0075 + 30e-6)


def test_all_to_all_hand_value() -> None:
    # 8 ranks, 8 GB send buffer: 7/8 x 8e9 / 100e9 + 7 x 10 us
    assert all_to_all_s(8e9, 8, LINK) == pytest.approx(0.07 + 70e-6)


def test_p2p_hand_value() -> None:
    assert p2p_s(1e9, LINK) == pytest.approx(0.01 + 10e-6)
    assert p2p_s(0.0, LINK) == 0.0


def test_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    size, n = 3.2e8, 16
    assert ring_all_reduce_s(size, n, LINK) == pytest.approx(
        ring_reduce_scatter_s(size, n, LINK) + ring_all_gather_s(size, n, LINK)
    )


def test_busbw_matches_nccl_tests_definition() -> None:
    """nccl-tests: busbw = algbw x 2(n-1)/n for all-reduce; with alpha = 0 busbw is the link bandwidth."""
    link = Link(360.0, 0.0)
    size, n = 4e9, 8
    t = ring_all_reduce_s(size, n, link)
    assert isinstance(t, float)
    algbw = size / t / GB
    assert algbw * 2 * (n - 1) / n == pytest.approx(360.0)


def test_one_rank_and_zero_bytes_are_free() -> None:
    for f in (ring_all_reduce_s, ring_all_gather_s, ring_reduce_scatter_s, all_to_all_s):
        assert f(1e9, 1, LINK) == 0.0
        assert f(0.0, 8, LINK) == 0.0


def test_scalars_give_floats_and_arrays_broadcast() -> None:
    assert isinstance(ring_all_reduce_s(1e6, 8, LINK), float)
    sizes = np.array([1e6, 1e7, 1e8])
    ns = np.array([[2], [8]])
    t = ring_all_reduce_s(sizes, ns, LINK)
    assert isinstance(t, np.ndarray)
    assert t.shape == (2, 3)
    assert t[1, 2] == pytest.approx(ring_all_reduce_s(1e8, 8, LINK))
    wide = Link(np.array([50.0, 100.0, 200.0]), 10e-6)
    t2 = ring_all_gather_s(1e9, 4, wide)
    assert isinstance(t2, np.ndarray)
    assert t2[1] == pytest.approx(ring_all_gather_s(1e9, 4, LINK))


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: ring_all_reduce_s(-1.0, 4, LINK), "size_bytes"),
        (lambda: ring_all_reduce_s(1.0, 0, LINK), "n"),
        (lambda: ring_all_gather_s(np.array([1.0, np.nan]), 4, LINK), "size_bytes"),
        (lambda: Link(0.0, 1e-6), "bandwidth_gbyte_s"),
        (lambda: Link(10.0, -1.0), "latency_s"),
        (lambda: hier_all_reduce_s(1.0, 8, 0, LINK, LINK), "ranks_per_node"),
    ],
)
def test_bad_inputs_name_the_field(call: Callable[[], object], field: str) -> None:
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field


# --- hierarchical -------------------------------------------------------------------------
def test_hier_all_reduce_hand_value() -> None:
    """16 GPUs on 2 nodes of 8: RS_intra(1 GB, 8), AR_inter(1 GB / 8, 2), AG_intra(1 GB, 8)."""
    intra = Link(360.0, 3.4e-6)
    inter = Link(5.625, 8e-6)  # a100 + roce-100, 4 NICs per 8 GPUs (see test below)
    rs_beta, rs_alpha = 7 / 8 * 1e9 / 360e9, 7 * 3.4e-6
    ar_beta, ar_alpha = 2 * (1 / 2) * (1e9 / 8) / 5.625e9, 2 * 1 * 8e-6
    serial = 2 * (rs_beta + rs_alpha) + ar_beta + ar_alpha
    assert serial == pytest.approx(0.027146933333, rel=1e-9)
    assert hier_all_reduce_s(1e9, 16, 8, intra, inter, pipelined=False) == pytest.approx(serial)
    # pipelined (default): the bandwidth terms overlap, the slower level bounds; latencies add
    pipelined = max(2 * rs_beta, ar_beta) + 2 * rs_alpha + ar_alpha
    assert pipelined == pytest.approx(0.0222222222 + 6.36e-5, rel=1e-9)
    assert hier_all_reduce_s(1e9, 16, 8, intra, inter) == pytest.approx(pipelined)


def test_two_dgx_h100_nodes_reach_the_ring_busbw_nccl_reports(cat: Catalog) -> None:
    """NVIDIA/nccl-tests#319 (maintainer): 2 nodes of 8 H100 + 8 x 400G reach up to ~396 GB/s busbw on RING."""
    intra = intra_node_link(cat.accelerator("h100-sxm5-80gb"))
    inter = inter_node_link(cat.network("ib-ndr-400"), nics_per_node=8, gpus_per_node=8)
    assert intra is not None
    size, n = 8e9, 16
    t = hier_all_reduce_s(size, n, 8, intra, inter)
    assert isinstance(t, float)
    busbw = size / t / GB * 2 * (n - 1) / n
    assert 340 <= busbw <= 400
    serial = hier_all_reduce_s(size, n, 8, intra, inter, pipelined=False)
    assert isinstance(serial, float)
    assert size / serial / GB * 2 * (n - 1) / n < 260  # summing the phases would undershoot badly


def test_hier_all_gather_and_reduce_scatter_hand_value() -> None:
    intra, inter = Link(200.0, 2e-6), Link(20.0, 5e-6)
    # 32 ranks, 4 per node, 8 nodes, 2 GB gathered: AG_inter(0.5 GB, 8) and AG_intra(2 GB, 4)
    b_e, a_e = 7 / 8 * 0.5e9 / 20e9, 7 * 5e-6
    b_i, a_i = 3 / 4 * 2e9 / 200e9, 3 * 2e-6
    for f in (hier_all_gather_s, hier_reduce_scatter_s):
        assert f(2e9, 32, 4, intra, inter, pipelined=False) == pytest.approx(b_e + a_e + b_i + a_i)
        # pipelined, as NCCL runs it: one ring through all 32 ranks, 31 steps, 7 of them across nodes
        assert f(2e9, 32, 4, intra, inter) == pytest.approx(max(b_e, b_i) + 7 * 5e-6 + (32 - 8) * 2e-6)


def test_nccl_ring_gather_latency_grows_with_every_rank() -> None:
    """All-gather and reduce-scatter run as one ring (NCCL tuning.cc: nRanks - 1 steps, nNodes - 1 across the
    network): 512 ranks on 64 nodes pay 448 intra-node and 63 network steps, not 7 + 63 as two levels would
    (regression: FSDP over 512 H100s hid every collective, and LLM Foundry's step times fall with scale)."""
    intra, inter = Link(360.0, 3.4e-6), Link(47.0, 5e-6)
    tiny = hier_all_gather_s(1.0, 512, 8, intra, inter)
    assert tiny == pytest.approx(448 * 3.4e-6 + 63 * 5e-6, rel=1e-3)
    assert hier_all_gather_s(1.0, 8, 8, intra, inter) == pytest.approx(7 * 3.4e-6, rel=1e-3)


def test_hier_all_to_all_hand_value() -> None:
    intra, inter = Link(200.0, 2e-6), Link(20.0, 5e-6)
    # 16 ranks, 8 per node, 1.6 GB send buffer: 7 peers local, 8 remote
    b_i, a_i = 7 / 16 * 1.6e9 / 200e9, 7 * 2e-6
    b_e, a_e = 8 / 16 * 1.6e9 / 20e9, 8 * 5e-6
    assert hier_all_to_all_s(1.6e9, 16, 8, intra, inter, pipelined=False) == pytest.approx(b_i + a_i + b_e + a_e)
    assert hier_all_to_all_s(1.6e9, 16, 8, intra, inter) == pytest.approx(max(b_i, b_e) + a_i + a_e)


def test_group_inside_a_node_uses_the_intra_link_only() -> None:
    intra, inter = Link(360.0, 3.4e-6), Link(5.0, 8e-6)
    for n in (2, 4, 8):
        assert hier_all_reduce_s(1e9, n, n, intra, inter) == pytest.approx(ring_all_reduce_s(1e9, n, intra))
        assert hier_all_gather_s(1e9, n, n, intra, inter) == pytest.approx(ring_all_gather_s(1e9, n, intra))
        assert hier_all_to_all_s(1e9, n, n, intra, inter) == pytest.approx(all_to_all_s(1e9, n, intra))
        # ranks_per_node larger than the group is clipped to it
        assert hier_all_reduce_s(1e9, n, 8, intra, inter) == pytest.approx(ring_all_reduce_s(1e9, n, intra))


def test_one_member_per_node_uses_the_inter_link_only() -> None:
    intra, inter = Link(360.0, 3.4e-6), Link(5.0, 8e-6)
    assert hier_all_reduce_s(1e9, 16, 1, intra, inter) == pytest.approx(ring_all_reduce_s(1e9, 16, inter))
    assert hier_reduce_scatter_s(1e9, 16, 1, intra, inter) == pytest.approx(ring_reduce_scatter_s(1e9, 16, inter))
    assert hier_all_to_all_s(1e9, 16, 1, intra, inter) == pytest.approx(all_to_all_s(1e9, 16, inter))


def test_hierarchical_beats_a_flat_ring_on_the_slow_link() -> None:
    intra, inter = Link(360.0, 3.4e-6), Link(5.625, 8e-6)
    for pipe in (True, False):
        assert hier_all_reduce_s(1e9, 64, 8, intra, inter, pipelined=pipe) < ring_all_reduce_s(1e9, 64, inter)


def test_hier_p2p_picks_the_link() -> None:
    intra, inter = Link(100.0, 1e-6), Link(10.0, 5e-6)
    t = hier_p2p_s(1e9, np.array([True, False]), intra, inter)
    assert isinstance(t, np.ndarray)
    assert t == pytest.approx([0.01 + 1e-6, 0.1 + 5e-6])


def test_ranks_per_node_for_strided_groups() -> None:
    assert ranks_per_node(4, 8) == 4.0  # TP=4 inside an 8-GPU node
    assert ranks_per_node(16, 8) == 8.0  # contiguous group of 16: 8 per node
    assert ranks_per_node(16, 8, stride=8) == 1.0  # DP group under TP=8: one per node
    assert ranks_per_node(16, 8, stride=2) == 4.0  # DP group under TP=2: 4 per node
    assert ranks_per_node(4, 8, stride=16) == 1.0
    r = ranks_per_node(np.array([2, 16, 64]), 8, np.array([1, 4, 8]))
    assert isinstance(r, np.ndarray)
    assert r.tolist() == [2.0, 2.0, 1.0]


def test_dispatch_by_kind_and_short_names() -> None:
    intra, inter = Link(200.0, 2e-6), Link(20.0, 5e-6)
    assert comm.all_reduce is ring_all_reduce_s and comm.p2p is p2p_s
    assert hierarchical("all_reduce", 1e9, 16, 8, intra, inter) == hier_all_reduce_s(1e9, 16, 8, intra, inter)
    assert collective_s("all_to_all", 1e9, 16, 8, intra, inter) == hier_all_to_all_s(1e9, 16, 8, intra, inter)
    assert collective_s("all_gather", 1e9, 8, 8, intra) == ring_all_gather_s(1e9, 8, intra)
    with pytest.raises(InputError):
        collective_s("all_gather", 1e9, 16, 8, intra)  # spans nodes but no inter-node link
    with pytest.raises(InputError) as err:
        hierarchical("allreduce", 1e9, 16, 8, intra, inter)
    assert "all_reduce" in str(err.value)


# --- links from the catalog ------------------------------------------------------------------
def test_h100_nvlink_is_half_the_bidirectional_figure_times_efficiency(cat: Catalog) -> None:
    acc = cat.accelerator("h100-sxm5-80gb")
    assert acc.intra_node_link_gbps == 900
    eff = default_link_calibration().value("nvlink_bw_efficiency")
    link = intra_node_link(acc)
    assert link is not None
    assert link.bandwidth_gbyte_s == pytest.approx(450 * eff)
    assert link.latency_s == pytest.approx(default_link_calibration().value("nvlink_alpha_us") * 1e-6)
    assert link.terms == ("nvlink_bw_efficiency", "nvlink_alpha_us")


def test_override_changes_the_link(cat: Catalog) -> None:
    cal = load_link_calibration({"nvlink_bw_efficiency": 0.85})
    link = intra_node_link(cat.accelerator("h100-sxm5-80gb"), calibration=cal)
    assert link is not None
    assert link.bandwidth_gbyte_s == pytest.approx(382.5)
    assert cal.terms["nvlink_bw_efficiency"].overridden
    assert cal.used("nvlink_bw_efficiency")["nvlink_bw_efficiency"]["source"] == "user override"
    with pytest.raises(InputError):
        load_link_calibration({"nvlink_bw_eficiency": 0.85})
    with pytest.raises(InputError):
        load_link_calibration({"pcie_bw_efficiency": 1.5})


def test_h800_is_capped(cat: Catalog) -> None:
    h800 = intra_node_link(cat.accelerator("h800-sxm5-80gb"))
    h100 = intra_node_link(cat.accelerator("h100-sxm5-80gb"))
    assert h800 is not None and h100 is not None
    assert h800.bandwidth_gbyte_s == pytest.approx(200 * default_link_calibration().value("nvlink_bw_efficiency"))
    assert h800.bandwidth_gbyte_s < h100.bandwidth_gbyte_s


def test_l40s_has_no_nvlink_only_pcie(cat: Catalog) -> None:
    acc = cat.accelerator("l40s-48gb")
    assert acc.nvlink_gbps is None
    cal = default_link_calibration()
    link = intra_node_link(acc)
    assert link is not None
    assert link.bandwidth_gbyte_s == pytest.approx(32 * cal.value("pcie_bw_efficiency"))  # Gen4 x16 = 64 both ways
    assert link.latency_s == pytest.approx(cal.value("pcie_alpha_us") * 1e-6)
    no_p2p = intra_node_link(acc, p2p=False)
    assert no_p2p is not None
    assert no_p2p.bandwidth_gbyte_s == pytest.approx(32 * cal.value("pcie_no_p2p_bw_efficiency"))
    # the PCIe card is far slower than NVLink for the same collective
    h100 = intra_node_link(cat.accelerator("h100-sxm5-80gb"))
    assert h100 is not None
    assert ring_all_reduce_s(1e9, 8, link) > 10 * ring_all_reduce_s(1e9, 8, h100)


def test_bridge_pairs_fall_back_to_pcie_beyond_the_pair(cat: Catalog) -> None:
    acc = cat.accelerator("h100-pcie-80gb")
    assert acc.fully_connected_domain == 2
    cal = default_link_calibration()
    pair = node_link(acc, 2)
    four = node_link(acc, 4)
    assert pair is not None and four is not None
    assert pair.bandwidth_gbyte_s == pytest.approx(300 * cal.value("nvlink_bridge_bw_efficiency"))
    assert four.bandwidth_gbyte_s == pytest.approx(64 * cal.value("pcie_bw_efficiency"))  # Gen5 x16
    arr = node_link(acc, np.array([1, 2, 4, 8]))
    assert arr is not None
    assert np.asarray(arr.bandwidth_gbyte_s).tolist() == pytest.approx(
        [pair.bandwidth_gbyte_s, pair.bandwidth_gbyte_s, four.bandwidth_gbyte_s, four.bandwidth_gbyte_s]
    )
    # a switched NVLink part keeps its link for the whole node
    h100 = node_link(cat.accelerator("h100-sxm5-80gb"), 8)
    assert h100 == intra_node_link(cat.accelerator("h100-sxm5-80gb"))


def test_other_link_kinds(cat: Catalog) -> None:
    cal = default_link_calibration()
    ascend = intra_node_link(cat.accelerator("ascend-910b"))
    assert ascend is not None
    assert ascend.bandwidth_gbyte_s == pytest.approx(392 / 2 * cal.value("hccs_bw_efficiency"))
    mi300 = intra_node_link(cat.accelerator("mi300x-192gb"))
    assert mi300 is not None
    assert mi300.bandwidth_gbyte_s == pytest.approx(896 / 2 * cal.value("xgmi_bw_efficiency"))
    v100 = host_link(cat.accelerator("v100-pcie-32gb"))
    assert v100 is not None
    assert v100.bandwidth_gbyte_s == pytest.approx(16 * cal.value("pcie_bw_efficiency"))


def test_unknown_links_are_none(cat: Catalog) -> None:
    assert intra_node_link(cat.accelerator("hygon-k100")) is None  # PCIe, generation not in the catalog
    assert intra_node_link(cat.accelerator("kunlunxin-p800")) is None
    assert intra_node_link(cat.accelerator("ascend-910b4")) is None


@pytest.mark.parametrize(
    ("text", "gbyte_s"),
    [
        ("PCIe Gen5 x16 (128 GB/s bidirectional)", 64.0),
        ("PCIe Gen4 x16", 32.0),
        ("PCIe Gen3 x16", 16.0),
        ("PCIe Gen5/Gen6 x16", 64.0),
        ("PCIe 4.0/5.0 (unverified)", 32.0),
        ("PCIe 4.0 x8", 16.0),
        ("PCIe x16 Gen4", 32.0),
        ("NVLink-C2C to Grace", None),
        ("PCIe (a Hygon-Link of 400 GB/s is claimed by evokernel only)", None),
        ("", None),
    ],
)
def test_pcie_text(text: str, gbyte_s: float | None) -> None:
    assert pcie_gbyte_s(text) == gbyte_s


def test_a100_on_roce_100_with_4_nics_per_8_gpus(cat: Catalog) -> None:
    net = cat.network("roce-100")
    link = inter_node_link(net, nics_per_node=4, gpus_per_node=8)
    # 4 x 100 Gbit/s = 50 GB/s per node x 0.9 / 8 GPUs
    assert link.bandwidth_gbyte_s == pytest.approx(4 * 12.5 * net.term("bw_efficiency") / 8)
    assert link.bandwidth_gbyte_s == pytest.approx(5.625)
    assert link.latency_s == pytest.approx(net.term("alpha_us") * 1e-6)
    assert link.terms == ("roce-100.bw_efficiency", "roce-100.alpha_us")


def test_ndr_one_nic_per_gpu_and_no_gdr(cat: Catalog) -> None:
    ndr = inter_node_link(cat.network("ib-ndr-400"), nics_per_node=8, gpus_per_node=8)
    assert ndr.bandwidth_gbyte_s == pytest.approx(50 * 0.94)
    hdr = cat.network("ib-hdr-200")
    no_gdr = inter_node_link(hdr, nics_per_node=4, gpus_per_node=8, gpudirect=False)
    assert no_gdr.bandwidth_gbyte_s == pytest.approx(4 * 25 * hdr.term("bw_efficiency_no_gdr") / 8)
    # a network without the no-GDR term keeps its bw_efficiency (TCP already includes host copies)
    tcp = cat.network("eth-25-tcp")
    plain = inter_node_link(tcp, nics_per_node=1, gpus_per_node=8, gpudirect=False)
    assert plain.bandwidth_gbyte_s == pytest.approx(25 / 8 * tcp.term("bw_efficiency") / 8)
    with pytest.raises(InputError):
        inter_node_link(tcp, nics_per_node=0, gpus_per_node=8)
    with pytest.raises(InputError):
        inter_node_link(tcp, nics_per_node=1, gpus_per_node=0)


def test_stack_and_select(cat: Catalog) -> None:
    links = [intra_node_link(cat.accelerator(a)) for a in ("h100-sxm5-80gb", "a100-sxm4-80gb", "l40s-48gb")]
    stacked = Link.stack([lk for lk in links if lk is not None])
    t = ring_all_reduce_s(1e9, 8, stacked)
    assert isinstance(t, np.ndarray)
    assert t.tolist() == pytest.approx([ring_all_reduce_s(1e9, 8, lk) for lk in links if lk is not None])
    chosen = select_link(np.array([True, False]), Link(1.0, 0.0), Link(2.0, 1.0))
    assert np.asarray(chosen.bandwidth_gbyte_s).tolist() == [1.0, 2.0]


def test_every_link_kind_has_its_terms_with_sources() -> None:
    cal = default_link_calibration()
    for kind in typing.get_args(LinkKind):
        for suffix in ("_bw_efficiency", "_alpha_us"):
            assert f"{kind}{suffix}" in cal.terms, f"{kind}{suffix} missing from links.yaml"
    for name, term in cal.terms.items():
        assert term.source.strip(), name
        if name.endswith("_bw_efficiency"):
            assert 0 < term.value <= 1, name
    nv = cal.value("nvlink_bw_efficiency")
    assert 0.75 <= nv <= 0.85  # nccl-tests reports for NVLink ring busbw


# --- properties (hypothesis) ------------------------------------------------------------------
sizes = st.floats(min_value=0.0, max_value=1e12, allow_nan=False)
ranks = st.integers(min_value=1, max_value=4096)
bws = st.floats(min_value=1e-2, max_value=1e4, allow_nan=False)
lats = st.floats(min_value=0.0, max_value=1e-3, allow_nan=False)
factors = st.floats(min_value=1.0, max_value=1e3, allow_nan=False)

Flat = Callable[..., object]
FLAT: list[Flat] = [ring_all_reduce_s, ring_all_gather_s, ring_reduce_scatter_s, all_to_all_s]
HIER: list[Flat] = [hier_all_reduce_s, hier_all_gather_s, hier_reduce_scatter_s, hier_all_to_all_s]


def _f(x: object) -> float:
    assert isinstance(x, float)
    return x


@settings(max_examples=60, deadline=None)
@given(size=sizes, n=ranks, bw=bws, lat=lats, k=factors)
def test_flat_collectives_properties(size: float, n: int, bw: float, lat: float, k: float) -> None:
    link, faster = Link(bw, lat), Link(bw * k, lat)
    for f in FLAT:
        t = _f(f(size, n, link))
        assert t >= 0.0
        assert _f(f(size, n, faster)) <= t * (1 + 1e-12)  # more bandwidth never slows
        assert _f(f(size * k, n, link)) >= t * (1 - 1e-12)  # more bytes never speeds
        assert f(size, 1, link) == 0.0  # one rank is free
    t = _f(p2p_s(size, link))
    assert t >= 0.0
    assert _f(p2p_s(size, faster)) <= t * (1 + 1e-12)
    assert _f(p2p_s(size * k, link)) >= t * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(size=sizes, n=ranks, local=st.integers(min_value=1, max_value=72), bw_i=bws, bw_e=bws, lat=lats, k=factors)
def test_hier_collectives_properties(
    size: float, n: int, local: int, bw_i: float, bw_e: float, lat: float, k: float
) -> None:
    intra, inter = Link(bw_i, lat), Link(bw_e, 2 * lat)
    for f in HIER:
        for pipe in (True, False):
            t = _f(f(size, n, local, intra, inter, pipelined=pipe))
            assert t >= 0.0
            assert _f(f(size, n, local, Link(bw_i * k, lat), inter, pipelined=pipe)) <= t * (1 + 1e-12)
            assert _f(f(size, n, local, intra, Link(bw_e * k, 2 * lat), pipelined=pipe)) <= t * (1 + 1e-12)
            assert _f(f(size * k, n, local, intra, inter, pipelined=pipe)) >= t * (1 - 1e-12)
            assert f(size, 1, local, intra, inter, pipelined=pipe) == 0.0
        # overlapping the levels never costs more bandwidth time than running them one after the other; NCCL's
        # one-ring all-gather and reduce-scatter pay a step per rank, so only their bandwidth part obeys this
        if f in (hier_all_gather_s, hier_reduce_scatter_s):
            free_i, free_e = Link(bw_i, 0.0), Link(bw_e, 0.0)
            assert _f(f(size, n, local, free_i, free_e)) <= _f(f(size, n, local, free_i, free_e, pipelined=False)) * (
                1 + 1e-12)
        else:
            assert _f(f(size, n, local, intra, inter)) <= _f(f(size, n, local, intra, inter, pipelined=False)) * (
                1 + 1e-12)
    for same in (True, False):
        t = _f(hier_p2p_s(size, same, intra, inter))
        assert t >= 0.0
        assert _f(hier_p2p_s(size, same, Link(bw_i * k, lat), Link(bw_e * k, 2 * lat))) <= t * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(st.tuples(sizes, ranks, st.integers(1, 16), bws, bws, lats), min_size=1, max_size=20)
)
def test_arrays_and_scalars_agree(rows: list[tuple[float, int, int, float, float, float]]) -> None:
    size, n, local, bw_i, bw_e, lat = (np.array(c, dtype=np.float64) for c in zip(*rows, strict=True))
    intra_arr, inter_arr = Link(bw_i, lat), Link(bw_e, lat)
    for f in FLAT:
        got = f(size, n, intra_arr)
        want = [_f(f(r[0], r[1], Link(r[3], r[5]))) for r in rows]
        assert np.allclose(np.asarray(got), want, rtol=1e-12, atol=0)
    for f in HIER:
        got = f(size, n, local, intra_arr, inter_arr)
        want = [_f(f(r[0], r[1], r[2], Link(r[3], r[5]), Link(r[4], r[5]))) for r in rows]
        assert np.allclose(np.asarray(got), want, rtol=1e-12, atol=0)
    got_p2p = p2p_s(size, inter_arr)
    assert np.allclose(np.asarray(got_p2p), [_f(p2p_s(r[0], Link(r[4], r[5]))) for r in rows], rtol=1e-12, atol=0)
