"""CloudMatrix384 (Huawei Atlas 900 A3 SuperPoD): 384 Ascend 910C on one Unified Bus domain, expressed as data the
way GB200 NVL72 is (a part whose fully connected domain is the rack-scale system), and instances as large as their
server (its accelerators_per_node), not a fixed cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.estimate.infer_step import node_devices
from gpuplan.estimate.links import intra_node_link
from gpuplan.hardware import load_catalog
from gpuplan.search.cluster import default_gpus_per_node

CAT = load_catalog(use_user_dir=False)


def test_cloudmatrix_part_carries_the_papers_ub_figures() -> None:
    # arXiv 2506.12708 sec. 3: 384 x 910C, 752 TFLOPS BF16, 128 GB at 3.2 TB/s, > 392 GB/s UB per 910C one way
    cm = CAT.accelerator("ascend-910c-cm384")
    assert cm.intra_node_link == "ub" and cm.fully_connected_domain == 384
    assert cm.intra_node_link_gbps == pytest.approx(2 * 392)
    assert cm.bf16_dense_tflops == pytest.approx(752) and cm.hbm_bandwidth_gbps == pytest.approx(3200)
    srv = CAT.server("cloudmatrix-384")
    assert srv.accelerator == cm.id and srv.accelerators_per_node == 384 and srv.topology == "ub_supernode"
    # the Atlas 800T A3 node on its own stays an 8-package HCCS mesh
    assert CAT.accelerator("ascend-910c").fully_connected_domain == 8


def test_expert_groups_stay_on_ub() -> None:
    cm, node = CAT.accelerator("ascend-910c-cm384"), CAT.accelerator("ascend-910c")
    assert node_devices(cm) == 384 and node_devices(node) == 8
    assert default_gpus_per_node(cm, 256) == 256 and default_gpus_per_node(node, 256) == 8
    ub = intra_node_link(cm)
    assert ub is not None and float(ub.bandwidth_gbyte_s) == pytest.approx(392 * 0.70)  # ub_bw_efficiency


def _instance(count: int) -> str:
    return f"""instances:
  - id: test-cm384-whole
    provider: test-cloud
    name: whole CloudMatrix384
    server: cloudmatrix-384
    accelerator_count: {count}
    tenancy: bare_metal
    market: cn
    source: test
    as_of: 2026-12
    confidence: low
"""


def test_an_instance_may_hold_a_whole_supernode_but_not_more(tmp_path: Path) -> None:
    ok = tmp_path / "ok"
    ok.mkdir()
    (ok / "instances.yaml").write_text(_instance(384), encoding="utf-8")
    cat = load_catalog([ok], use_user_dir=False)
    assert cat.instance("test-cm384-whole").accelerator_count == 384  # once refused by a 72-device schema cap
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "instances.yaml").write_text(_instance(385), encoding="utf-8")
    with pytest.raises(Exception, match="385 exceeds the server's 384 per node"):
        load_catalog([bad], use_user_dir=False)
