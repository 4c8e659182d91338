"""Print the planner's answer to "2-4 nodes over TCP vs RoCE vs InfiniBand" (docs/training.md, docs/advisor.md).

Two views, both through the library the CLI uses:
1. `plan train -m llama3-8b --tokens 1e12 --max-devices 32 --network NET` for each fabric: the
   recommended plan, its time and cost, and the advisor's network findings;
2. `compare -m llama3-70b --tokens 1e12 --accelerators h100-sxm5-80gb --max-devices 32 --network NET`:
   the 4-node plan per fabric, its step time and layout.
Usage: python benchmarks/network_question.py
"""

from __future__ import annotations

from gpuplan.advise.report_train import compare_training, training_report
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import load_catalog
from gpuplan.search.train_search import PlanConstraints, choose_layout_family
from gpuplan.workload.jobs import TrainingJob, default_global_batch
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

FABRICS = (("eth-25-tcp", 1.0), ("roce-200", 8.0), ("ib-ndr-400", 8.0))


def _cons(model: str, net: str, nics: float, **kw: object) -> PlanConstraints:
    spec = get_preset(model).spec
    family, why = choose_layout_family("full", None, float(count_params(spec).total), default_calibration())
    return PlanConstraints(max_devices=32, network=net, nics_per_node=nics, layout_family=family,
                           layout_reason=why, **kw)  # type: ignore[arg-type]


def main() -> None:
    catalog = load_catalog(use_user_dir=False)
    job = TrainingJob(seq_len=4096, global_batch=default_global_batch(4096))
    print("plan train -m llama3-8b --tokens 1e12 --max-devices 32 --network NET")
    print(f"{'fabric':12s} {'NICs':>5s} {'recommended':28s} {'days':>7s} {'cost USD':>11s}  network findings")
    for net, nics in FABRICS:
        doc = training_report(get_preset("llama3-8b").spec, job, catalog, _cons("llama3-8b", net, nics),
                              tokens=1e12)
        rec = doc["recommendation"]
        found = "; ".join(f["message"]["en"] for f in doc["findings"] if f["id"].startswith("net."))
        print(f"{net:12s} {nics:5g} {rec['devices']:>4d} x {rec['accelerator']:21s} {rec['days']:7.1f} "
              f"{rec['cost_usd'] or 0:11,.0f}  {found or '-'}")
    print()
    print("compare -m llama3-70b --tokens 1e12 --accelerators h100-sxm5-80gb --max-devices 32 --network NET")
    print(f"{'fabric':12s} {'NICs':>5s} {'devices':>7s} {'step s':>8s} {'days':>7s}  layout")
    for net, nics in FABRICS:
        doc = compare_training(get_preset("llama3-70b").spec, job, catalog, ["h100-sxm5-80gb"],
                               _cons("llama3-70b", net, nics), tokens=1e12)
        p = doc["options"][0]["plan"]
        print(f"{net:12s} {nics:5g} {p['devices']:7d} {p['step_time_s']:8.1f} {p['days']:7.1f}  {p['layout']}")


if __name__ == "__main__":
    main()
