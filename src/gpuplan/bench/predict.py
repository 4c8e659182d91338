"""gpuplan's prediction of each benchmark on a catalog accelerator (torch-free).

    GEMM        dense peak(dtype) x gemm_reference_efficiency.<dtype> x n / (n + gemm_half_width)
                (n = the narrowest GEMM side; gemm_half_width is the training model's width term)
    memory      hbm_bandwidth_gbps x memory_copy_fraction (copy) or memory_read_fraction (read)
    host<->dev  PCIe per-direction rate of host_interface x pcie_bw_efficiency (links.yaml)
    dev<->dev   intra_node_link (links.py): link GB/s per direction x <kind>_bw_efficiency
    collective  comm.collective_s on the intra-node link (alpha-beta), turned into algbw and busbw
    train       tokens/s = peak16 x compute_efficiency(part) / training FLOPs per token
    decode      tokens/s = batch x memory bandwidth x memory_read_fraction / bytes read per step (weights)

A CPU, or a part not in the catalog, gets a null prediction with the reason.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from gpuplan import yamlio
from gpuplan.bench.formulas import busbw_factor, collective_bytes
from gpuplan.bench.records import Prediction
from gpuplan.estimate import comm
from gpuplan.estimate.calibration import Calibration, CalibrationTerm, default_calibration
from gpuplan.estimate.links import (
    default_link_calibration,
    host_link,
    inter_node_link,
    intra_node_link,
    pcie_gbyte_s,
)
from gpuplan.hardware import Accelerator, Network

__all__ = ["Predictor", "match_device", "predictor_for", "ratio", "reference_terms"]


@cache
def reference_terms() -> dict[str, CalibrationTerm]:
    """The bench reference efficiencies (data/reference.yaml)."""
    raw = yamlio.safe_load((resources.files("gpuplan.bench") / "data" / "reference.yaml").read_text(encoding="utf-8"))
    return {k: CalibrationTerm.model_validate(v) for k, v in raw["terms"].items()}


def _ref(name: str) -> float:
    return reference_terms()[name].value


class Predictor:
    """Predictions for one accelerator (None: no catalog entry, every prediction null with `reason`)."""

    def __init__(self, accelerator: Accelerator | None, *, reason: str = "",
                 calibration: Calibration | None = None, network: Network | None = None) -> None:
        self.acc = accelerator
        self.network = network  # the scale-out fabric for collectives that span nodes
        self.reason = reason or "no catalog accelerator for this device"
        self.cal = calibration or default_calibration()

    def none(self, unit: str, why: str | None = None) -> Prediction:
        return Prediction(value=None, unit=unit, reason=why or self.reason)

    def gemm_tflops(self, dtype: str, m: int, n: int, k: int) -> Prediction:
        if self.acc is None:
            return self.none("TFLOP/s")
        peak = self.acc.dense_tflops(dtype)
        if peak is None:
            return self.none("TFLOP/s", f"the catalog has no dense {dtype} peak for {self.acc.id}")
        if f"gemm_reference_efficiency.{dtype}" not in reference_terms():
            return self.none("TFLOP/s", f"no gemm_reference_efficiency for {dtype} (bench/data/reference.yaml)")
        eff = _ref(f"gemm_reference_efficiency.{dtype}")
        w = self.cal.value("gemm_half_width")
        narrow = min(m, n, k)
        value = peak * eff * narrow / (narrow + w)
        return Prediction(value=value, unit="TFLOP/s",
                          basis=f"{dtype}_dense_tflops x gemm_reference_efficiency.{dtype} x n/(n + gemm_half_width)",
                          terms={f"{dtype}_dense_tflops": peak, f"gemm_reference_efficiency.{dtype}": eff,
                                 "gemm_half_width": w, "n": float(narrow)})

    def memory_gbyte_s(self, kind: str) -> Prediction:
        if self.acc is None:
            return self.none("GB/s")
        if self.acc.hbm_bandwidth_gbps is None:
            return self.none("GB/s", f"the catalog has no hbm_bandwidth_gbps for {self.acc.id}")
        name = f"memory_{kind}_fraction"
        frac = _ref(name)
        return Prediction(value=self.acc.hbm_bandwidth_gbps * frac, unit="GB/s",
                          basis=f"hbm_bandwidth_gbps x {name}",
                          terms={"hbm_bandwidth_gbps": self.acc.hbm_bandwidth_gbps, name: frac})

    def host_device_gbyte_s(self, pinned: bool) -> Prediction:
        if self.acc is None:
            return self.none("GB/s")
        if not pinned:
            return self.none("GB/s", "pageable copies are staged through host memory (host-dependent); "
                                     "gpuplan predicts the pinned rate only")
        cal = default_link_calibration()
        nominal = pcie_gbyte_s(self.acc.host_interface, cal)
        if nominal is None:
            return self.none("GB/s", f"host_interface of {self.acc.id} names no PCIe generation")
        eff = cal.value("pcie_bw_efficiency")
        return Prediction(value=nominal * eff, unit="GB/s", basis="PCIe per-direction rate x pcie_bw_efficiency",
                          terms={"pcie_gbyte_s": nominal, "pcie_bw_efficiency": eff})

    def device_device_gbyte_s(self) -> Prediction:
        if self.acc is None:
            return self.none("GB/s")
        link = intra_node_link(self.acc) or host_link(self.acc)
        if link is None:
            return self.none("GB/s", f"no intra-node link figure for {self.acc.id}")
        return Prediction(value=float(link.bandwidth_gbyte_s), unit="GB/s", basis=link.label,
                          terms={"link_gbyte_s": float(link.bandwidth_gbyte_s)})

    def collective(self, kind: str, per_rank_bytes: int, n: int, metric: str, *, nodes: int = 1) -> Prediction:
        """Predicted algbw or busbw (GB/s) of a collective among n ranks on `nodes` nodes (evenly spread)."""
        if self.acc is None:
            return self.none("GB/s")
        link = intra_node_link(self.acc) or host_link(self.acc)
        if link is None:
            return self.none("GB/s", f"no intra-node link figure for {self.acc.id}")
        size = collective_bytes(kind, per_rank_bytes, n)
        terms = {"link_gbyte_s": float(link.bandwidth_gbyte_s), "alpha_s": float(link.latency_s)}
        basis = f"alpha-beta {kind} on {link.label}"
        if nodes > 1:
            if self.network is None:
                return self.none("GB/s", "no scale-out network to price a multi-node collective")
            rpn = max(n // nodes, 1)
            inter = inter_node_link(self.network, nics_per_node=float(rpn), gpus_per_node=rpn)
            terms |= {"inter_gbyte_s": float(inter.bandwidth_gbyte_s), "inter_alpha_s": float(inter.latency_s)}
            basis += f" and {inter.label} ({nodes} nodes, one NIC per GPU assumed)"
            seconds = float(comm.hier_p2p_s(size, False, link, inter) if kind == "send_recv"
                            else comm.collective_s(kind, size, n, rpn, link, inter))
        elif kind == "send_recv":
            seconds = float(comm.p2p_s(size, link))
        else:  # comm's size conventions match nccl-tests' (gathered output, full input, send buffer)
            seconds = float(comm.collective_s(kind, size, n, n, link))
        algbw = size / seconds / 1e9
        value = algbw * busbw_factor(kind, n) if metric == "busbw" else algbw
        return Prediction(value=value, unit="GB/s", basis=basis, terms=terms)

    def train_tokens_per_s(self, flops_per_token: float, dtype: str, width: int) -> Prediction:
        if self.acc is None:
            return self.none("tokens/s")
        peak = self.acc.dense_tflops(dtype) or self.acc.dense_tflops("fp16")
        if peak is None:
            return self.none("tokens/s", f"the catalog has no dense {dtype} peak for {self.acc.id}")
        name = f"compute_efficiency.{self.acc.id}.bf16"
        if name not in self.cal.terms:
            name = "compute_efficiency.default.bf16"
        eff = self.cal.value(name)
        w = self.cal.value("gemm_half_width")
        value = peak * 1e12 * eff * width / (width + w) / flops_per_token
        return Prediction(value=value, unit="tokens/s",
                          basis=f"{dtype} peak x {name} x h/(h + gemm_half_width) / training FLOPs per token",
                          terms={f"{dtype}_dense_tflops": peak, name: eff, "gemm_half_width": w,
                                 "flops_per_token": flops_per_token})

    def decode_tokens_per_s(self, bytes_per_step: float, batch: int) -> Prediction:
        if self.acc is None:
            return self.none("tokens/s")
        bw = self.memory_gbyte_s("read")
        if bw.value is None:
            return self.none("tokens/s", bw.reason)
        value = batch * bw.value * 1e9 / bytes_per_step
        return Prediction(value=value, unit="tokens/s", basis="batch x read bandwidth / weight bytes per step",
                          terms={**bw.terms, "bytes_per_step": bytes_per_step})


def ratio(value: float, pred: Prediction) -> float | None:
    """measured / predicted, or None without a prediction."""
    return value / pred.value if pred.value else None


def predictor_for(catalog_id: str | None, backend_kind: str, device_name: str,
                  catalog: Any = None) -> tuple[Predictor, str | None, str]:
    """(predictor, accelerator id, note): the catalog part given, else one matched by device name."""
    from gpuplan.hardware import load_catalog

    if backend_kind == "cpu" and catalog_id is None:
        return Predictor(None, reason="CPU backend: the catalog has no CPU entries"), None, \
            "CPU run: no catalog accelerator, predictions are null"
    cat = catalog or load_catalog()
    if catalog_id is not None:
        acc = cat.accelerator(catalog_id)
        note = "from --accelerator"
    else:
        guess = match_device(device_name, cat.accelerators)
        if guess is None:
            why = f"device {device_name!r} matches no catalog accelerator; pass --accelerator ID"
            return Predictor(None, reason=why), None, why
        acc = cat.accelerator(guess)
        note = f"matched from the device name {device_name!r}"
    from gpuplan.bench.calibration_files import load_user_calibration
    from gpuplan.search.cluster import usual_network

    net_id, _ = usual_network(cat, acc.id)
    network = cat.network(net_id) if net_id in cat.networks else None
    # the terms later estimates use, measured ones (gpuplan calibrate) included
    return Predictor(acc, network=network, calibration=load_user_calibration()), acc.id, note


def match_device(device_name: str, accelerators: Any) -> str | None:
    """The catalog id whose name/aliases best match a driver device name (e.g. 'NVIDIA H200' -> h200-sxm-141gb)."""
    norm = device_name.lower().replace("nvidia", "").replace("-", " ").strip()
    best: tuple[int, str] | None = None
    for acc_id, acc in accelerators.items():
        names = [acc.name, acc_id, *getattr(acc, "aliases", ())]
        for nm in names:
            cand = str(nm).lower().replace("nvidia", "").replace("-", " ").strip()
            if cand and (cand in norm or norm in cand):
                score = len(cand) if cand in norm else len(norm)
                if best is None or score > best[0]:
                    best = (score, acc_id)
    return best[1] if best else None
