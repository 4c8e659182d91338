"""Cross-validate gpuplan's estimators on the published runs: one source, one part, one engine version out.

Every shipped row (validate/data/ground_truth: the dev files and released/) is predicted three ways, each with
every term tuned on rows refitted without the held-out rows (gpuplan.validate.refit; `tuned_on` in
estimate/data/calibration.yaml and workload/data/engines.yaml; the rule-set default efficiencies re-derived):
- leave one source out: the rows of one publication (gpuplan.validate.sources) held out together;
- leave one part out: all rows of one accelerator held out and its own terms removed (the error of a part
  without rows, on the default efficiency);
- leave one engine version out: serving rows of one engine and stated version (settings engine_version) held
  out together; for training and memory rows, those of one framework (settings framework).
Rows that cannot be evaluated (no input/output lengths, no request rate, an empty architecture field, an author's
estimate) are skipped, counted on stderr and listed with the reason in accuracy.json `skipped`: never guessed.
The result, per row and per class of estimate, is written to src/gpuplan/estimate/data/accuracy.json, which sets
the 80% bands every plan shows (gpuplan.estimate.uncertainty) and how far they widen for what is new about a figure
(gpuplan.validate.fold_bands); the generated tables of docs/validation.md are rewritten in place.

The rerun after any estimator or term change, one command (about 75 minutes of CPU on this 2-core machine):
    python benchmarks/cross_validate.py
`--rebuild` recomputes bands, coverage and tables from the folds stored in accuracy.json (seconds); `--markdown`
prints the tables; `--files`, `--folds` and `--merge` run parts and combine them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import __version__
from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.uncertainty import EstimateClass, summarize
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.validate.cases import Row, read_rows
from gpuplan.validate.fold_bands import fold_summary, novelty_scales
from gpuplan.validate.ground_truth import case_files, shipped_dir
from gpuplan.validate.memory_cases import CaseResult, evaluate_memory_row
from gpuplan.validate.refit import SOURCE_BALANCE, affected_ids, error_ratio, part_terms, refit
from gpuplan.validate.row_class import row_dims
from gpuplan.validate.row_settings import resolve_row
from gpuplan.validate.serving_terms import serving_calibration, serving_evaluator
from gpuplan.validate.sources import row_source
from gpuplan.validate.training_cases import TRAIN_METRICS, evaluate_training_row

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GT = shipped_dir()
OUT = ROOT / "src" / "gpuplan" / "estimate" / "data" / "accuracy.json"
DOCS = ROOT / "docs" / "validation.md"


def base_terms(file: str) -> Calibration:
    """The shipped terms a file's rows were tuned with (serving terms live in engines.yaml)."""
    return serving_calibration() if file == "inference" else default_calibration()


@cache
def _catalog() -> Catalog:
    """The catalog, built once per process (building it is a fifth of a training row's evaluation)."""
    return load_catalog()


def evaluate(file: str, row: Row, cal: Calibration) -> CaseResult:
    cat = _catalog()
    if file == "training":
        return evaluate_training_row(row, cat, cal)
    if file == "inference":
        return serving_evaluator(cat)(row, cal)
    return evaluate_memory_row(row, cat, cal)


def _evaluator(file: str) -> Any:
    return lambda row, cal: evaluate(file, row, cal)


def run_fold(file: str, rows: list[Row], held: list[str], fold: str, name: str, evals: int,
             affected: dict[tuple[str, ...], frozenset[str]] | None = None,
             source_balance: float | None = None) -> list[dict[str, Any]]:
    """Refit without the held-out rows and predict them."""
    held_set = set(held)
    train = [r for r in rows if r["id"] not in held_set]
    test = [r for r in rows if r["id"] in held_set]
    drop = {name} if fold == "accelerator" else set()
    cal, _ = refit(train, base_terms(file), _evaluator(file), file=file, drop_accelerators=drop, evals=evals,
                   affected=affected, source_balance=source_balance)
    left = {r.get("accelerator", "") for r in train}
    out = []
    for row in test:
        try:
            res = evaluate(file, row, cal)
        except (GpuplanError, ValueError):
            continue
        acc = row.get("accelerator", "")
        own = (bool(part_terms(cal, [acc])) if file == "training" else acc in left and fold != "accelerator"
               if file == "inference" else True)
        out.append({"id": row["id"], "fold": fold, "efficiency": "validated" if own else "default",
                    "cv_pred": res.predicted, "cv_ratio": error_ratio(res.metric, res.measured, res.predicted)})
    return out


def screen(file: str, row: Row) -> tuple[str, CaseResult | None]:
    """Whether a row enters the folds: ("", its in-sample result), or (why it is skipped, None). Skipped: an
    author's estimate (confidence low), a training metric that is not a step rate, a row the estimators cannot
    express (the error's message)."""
    reason = ("confidence low: an author's estimate, not a measurement" if row.get("confidence") == "low"
              else f"metric {row.get('metric')!r} is not a step-rate figure" if file == "training"
              and row.get("metric") not in TRAIN_METRICS else "")
    if reason:
        return reason, None
    try:
        return "", evaluate(file, row, base_terms(file))
    except (GpuplanError, ValueError) as exc:
        return str(exc), None


def _in_classes(e: dict[str, Any]) -> bool:
    """The entries the planner's classes are built from: held out by source on a part with rows, and (training,
    serving) held out with the whole part, the error of a part without rows."""
    return bool((e["fold"] == "source" and e["efficiency"] == "validated")
                or (e["fold"] == "accelerator" and e["file"] != "memory"))


def stack_key(file: str, row: Row) -> str:
    """The software a row ran, the unit of the leave-one-engine-version-out fold: for serving the engine and the
    version the row states (`engine_version` in settings; "version unstated" otherwise), for training and memory
    the framework the row names (settings `framework`; "framework unstated" otherwise)."""
    _, st = resolve_row(row)
    if file == "inference":
        return f"{row.get('engine') or 'generic'} {st.engine_version or 'version unstated'}"
    return st.framework or "framework unstated"


def _cls(e: dict[str, Any]) -> EstimateClass:
    return EstimateClass(kind=e["kind"], efficiency=e["efficiency"], family=e["family"], arch=e["arch"],
                         scale=e["scale"], stack=e.get("stack", "unstated"))


META_KEYS = ("file", "id", "source", "accelerator", "metric", "stack_key", "released", "measured", "in_sample",
             "in_sample_ratio", "kind", "family", "arch", "scale", "stack")
# The hold-outs: one source (publication), one part (accelerator, its own terms removed), one engine version
# (serving) or framework (training, memory) at a time.
FOLDS = ("source", "accelerator", "stack")


def _ape(ratio: float) -> float:
    return abs(1.0 / ratio - 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ground-truth", type=Path, default=DEFAULT_GT)
    ap.add_argument("--files", default="training,memory,inference")
    ap.add_argument("--folds", default=",".join(FOLDS), help="which hold-outs to run (source, accelerator, stack)")
    ap.add_argument("--merge", type=Path, action="append", default=[],
                    help="an earlier output whose entries for other files are kept (repeatable)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--resume", action="store_true", help="keep the folds already in the checkpoint beside --out")
    ap.add_argument("--evals", type=int, default=8, help="objective evaluations per refitted group")
    ap.add_argument("--source-balance", type=float, default=None,
                    help="a row weighs 1 / (its source's rows) ** this in a fit (0: rows alike; default: "
                    + ", ".join(f"{k} {v:g}" for k, v in SOURCE_BALANCE.items()) + ")")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--markdown", action="store_true", help="print the docs tables from --out and exit")
    ap.add_argument("--docs", type=Path, default=DOCS,
                    help="the page whose generated tables are rewritten (default docs/validation.md)")
    ap.add_argument("--no-docs", dest="docs", action="store_const", const=None, help="leave the docs alone")
    ap.add_argument("--rebuild", action="store_true",
                    help="recompute bands, coverage and tables from the entries of --out (no folds run)")
    args = ap.parse_args()
    if args.markdown:
        print_markdown(json.loads(args.out.read_text(encoding="utf-8")))
        return
    if args.rebuild:  # the folds' entries of --out kept; everything derived from them recomputed
        old = json.loads(args.out.read_text(encoding="utf-8"))
        ents = old["entries"]
        data = assemble(ents, [{k: e.get(k) for k in META_KEYS} for e in _first_per_row(ents)],
                        old.get("skipped", []), args.ground_truth, old["evals_per_group"])
        args.out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        if args.docs is not None:
            write_docs(args.docs, data)
        print_markdown(data)
        return
    t0 = time.time()
    entries: list[dict[str, Any]] = []
    tasks = []
    meta: dict[str, dict[str, Any]] = {}
    skipped: list[dict[str, str]] = []
    for file in (f for f in args.files.split(",") if f):
        rows, released = [], set()
        for path in case_files(file, args.ground_truth):
            for r in read_rows(path):
                rows.append(r)
                if path.parent.name == "released":
                    released.add(r["id"])
        good = []
        for r in rows:
            reason, res = screen(file, r)
            if res is None:
                skipped.append({"file": file, "id": r["id"], "reason": reason})
                continue
            good.append(r)
            meta[f"{file}:{r['id']}"] = {"file": file, "id": r["id"], "source": row_source(r),
                                         "accelerator": r.get("accelerator", ""), "metric": r["metric"],
                                         "stack_key": stack_key(file, r), "released": r["id"] in released,
                                         "measured": res.measured, "in_sample": res.predicted,
                                         "in_sample_ratio": error_ratio(res.metric, res.measured, res.predicted),
                                         **row_dims(file, r)}
        n_skip = sum(1 for k in skipped if k["file"] == file)
        print(f"{file}: {len(good)} rows evaluated, {n_skip} skipped (not guessed; reasons in accuracy.json "
              f"'skipped')", file=sys.stderr)
        groups: dict[str, dict[str, list[str]]] = {f: defaultdict(list) for f in FOLDS}
        for r in good:
            groups["source"][row_source(r)].append(r["id"])
            groups["accelerator"][r.get("accelerator", "")].append(r["id"])
            groups["stack"][stack_key(file, r)].append(r["id"])
        moves = affected_ids(good, base_terms(file), _evaluator(file), file=file)  # once, not per fold
        for fold in FOLDS:
            if fold in args.folds.split(","):
                tasks += [(file, good, ids, fold, k, args.evals, moves, args.source_balance)
                          for k, ids in sorted(groups[fold].items())]
    # Each finished fold is appended to a checkpoint beside --out; --resume takes the folds found there instead of
    # running them again (a run that was stopped goes on where it stopped).
    ckpt = args.out.with_name(args.out.stem + ".folds.jsonl")
    kept: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    if args.resume and ckpt.exists():
        for line in ckpt.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            kept[(rec["file"], rec["fold"], rec["name"])] = rec["entries"]
    elif ckpt.exists():
        ckpt.unlink()
    todo = [t for t in tasks if (t[0], t[3], t[4]) not in kept]
    print(f"{len(tasks)} folds ({len(tasks) - len(todo)} from {ckpt.name})", file=sys.stderr)
    if todo:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool, ckpt.open("a", encoding="utf-8") as log:
            futures = {pool.submit(run_fold, *t): t for t in todo}
            for fut in as_completed(futures):
                file, _, _, fold, name, *_ = futures[fut]
                kept[(file, fold, name)] = fut.result()
                log.write(json.dumps({"file": file, "fold": fold, "name": name,
                                      "entries": kept[(file, fold, name)]}) + "\n")
                log.flush()
    for (file, _, _), result in sorted(kept.items()):
        entries += [{**meta[f"{file}:{e['id']}"], **e} for e in result if f"{file}:{e['id']}" in meta]
    done = {(f, fold) for f in args.files.split(",") if f for fold in args.folds.split(",")}
    for path in args.merge:  # the other files' and folds' entries from earlier runs
        old = json.loads(path.read_text(encoding="utf-8"))
        entries += [e for e in old.get("entries", old["rows"]) if (e["file"], e["fold"]) not in done]
        skipped += [k for k in old.get("skipped", []) if k["file"] not in {f for f, _ in done}]
        done |= {(e["file"], e["fold"]) for e in old.get("entries", old["rows"])}
        for e in entries:
            meta.setdefault(f"{e['file']}:{e['id']}", {k: e.get(k) for k in META_KEYS})
    data = assemble(entries, list(meta.values()), skipped, args.ground_truth, args.evals)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(entries)} entries, {time.time() - t0:.0f} s)", file=sys.stderr)
    ckpt.unlink(missing_ok=True)  # every fold is in --out now
    if args.docs is not None:
        write_docs(args.docs, data)
    print_markdown(data)


def assemble(entries: list[dict[str, Any]], meta: list[dict[str, Any]], skipped: list[dict[str, str]], gt: Path,
             evals: int) -> dict[str, Any]:
    """accuracy.json from the folds' entries: the classes and bands, coverage per fold type, the parts table."""
    _refresh_dims(entries, gt)
    classed = [e for e in entries if _in_classes(e)]
    classes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in classed:
        for k in _cls(e).levels():
            classes[k].append(e)
    folds = fold_summary(entries, classed)
    return {
        "produced_by": "benchmarks/cross_validate.py", "gpuplan_version": __version__,
        "as_of": date.today().isoformat(), "evals_per_group": evals,
        "method": ("leave one source out, leave one part out, leave one engine version (serving) or framework "
                   "(training, memory) out; every term tuned on rows refitted per fold, rule-set defaults "
                   "re-derived"),
        "coverage": {k: {"coverage": v["coverage"], "rows": v["rows"]} for k, v in folds.get("source", {}).items()},
        "folds": folds,
        "novelty_scale": novelty_scales(folds),
        "classes": {k: asdict(summarize(k, [e["cv_ratio"] for e in v], [e["source"] for e in v]))
                    for k, v in sorted(classes.items())},
        "parts": _parts(meta, entries, _precisions(gt)),
        "skipped": sorted(skipped, key=lambda k: (k["file"], k["id"])),
        "rows": sorted(classed, key=lambda e: (e["file"], e["id"], e["fold"])),
        "entries": sorted(entries, key=lambda e: (e["file"], e["id"], e["fold"])),
    }


def _first_per_row(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries:
        seen.setdefault((e["file"], e["id"]), e)
    return list(seen.values())


def _refresh_dims(entries: list[dict[str, Any]], gt: Path) -> None:
    """Recompute each entry's class dimensions from its row (merged entries of older runs included)."""
    for file in {e["file"] for e in entries}:
        rows = {r["id"]: r for path in case_files(file, gt) for r in read_rows(path)}
        for e in entries:
            if e["file"] == file and e["id"] in rows:
                e.update(row_dims(file, rows[e["id"]]))


def _precisions(gt: Path) -> dict[tuple[str, str], str]:
    """(file, id) -> the precision family a row ran at: bf16 (16-bit) or fp8 (training rows only)."""
    out: dict[tuple[str, str], str] = {}
    for path in case_files("training", gt):
        for r in read_rows(path):
            out[("training", r["id"])] = "fp8" if r.get("precision") == "fp8" else "bf16"
    return out


def _parts(meta: list[dict[str, Any]], entries: list[dict[str, Any]],
           precision: dict[tuple[str, str], str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for kind in {m["kind"] for m in meta}:
        for acc in sorted({m["accelerator"] for m in meta if m["kind"] == kind}):
            rows = [m for m in meta if m["kind"] == kind and m["accelerator"] == acc]
            loso = [e["cv_ratio"] for e in entries if e["kind"] == kind and e["accelerator"] == acc
                    and e["fold"] == "source"]
            loao = [e["cv_ratio"] for e in entries if e["kind"] == kind and e["accelerator"] == acc
                    and e["fold"] == "accelerator"]
            out[kind][acc] = {
                "rows": len(rows), "sources": len({m["source"] for m in rows}),
                "in_sample_median_ape": float(np.median([_ape(m["in_sample_ratio"]) for m in rows])),
                "cv_median_ape": float(np.median([_ape(r) for r in loso])) if loso else None,
                "cv_p90_ape": float(np.percentile([_ape(r) for r in loso], 90)) if loso else None,
                "default_median_ape": float(np.median([_ape(r) for r in loao])) if loao else None,
            }
            if kind == "train":  # a part's 16-bit and fp8 efficiencies are separate terms
                fam = {m["id"]: precision.get(("training", m["id"]), "bf16") for m in rows}
                fams = list(fam.values())
                out[kind][acc]["rows_by_precision"] = {f: fams.count(f) for f in ("bf16", "fp8")}
                out[kind][acc]["sources_by_precision"] = {
                    f: len({m["source"] for m in rows if fam[m["id"]] == f}) for f in ("bf16", "fp8")}
                by_prec = {f: [_ape(e["cv_ratio"]) for e in entries if e["kind"] == kind and e["accelerator"] == acc
                               and e["fold"] == "source" and fam.get(e["id"]) == f] for f in ("bf16", "fp8")}
                out[kind][acc]["cv_median_ape_by_precision"] = {
                    f: float(np.median(v)) if v else None for f, v in by_prec.items()}
    return dict(out)


def _pct(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.0%}"


_FILES = (("training", "training"), ("inference", "serving"), ("memory", "memory"))


def _median_p90(values: list[float]) -> str:
    return f"{np.median(values):.2%} / {np.percentile(values, 90):.2%}" if values else "-"


def _headline(data: dict[str, Any]) -> list[str]:
    """The docs' "At a glance" table: per family, the median and p90 error held out by source, by part and by
    engine version (serving) or framework, and in sample (the error of the rate each row implies, `_ape`)."""
    out = ["| family | rows | leave one source out: median / p90 | leave one part out: median / p90 "
           "| leave one engine version / framework out: median / p90 | in-sample: median / p90 |",
           "|---|---|---|---|---|---|"]
    for file, label in _FILES:
        by_fold = {fold: [_ape(e["cv_ratio"]) for e in data["entries"] if e["file"] == file and e["fold"] == fold]
                   for fold in FOLDS}
        loso = [e for e in data["entries"] if e["file"] == file and e["fold"] == "source"]
        if not loso:
            continue
        out.append(f"| {label} | {len(loso)} | {_median_p90(by_fold['source'])} | "
                   f"{_median_p90(by_fold['accelerator'])} | {_median_p90(by_fold['stack'])} | "
                   f"{_median_p90([_ape(e['in_sample_ratio']) for e in loso])} |")
    return out


def _parts_table(data: dict[str, Any]) -> list[str]:
    out = ["| kind | part | rows | sources | in-sample median | cross-validated median | cross-validated p90 "
           "| as a part without rows |", "|---|---|---|---|---|---|---|---|"]
    for kind, parts in data["parts"].items():
        for acc, p in parts.items():
            out.append(f"| {kind} | {acc} | {p['rows']} | {p['sources']} | {_pct(p['in_sample_median_ape'])} | "
                       f"{_pct(p['cv_median_ape'])} | {_pct(p['cv_p90_ape'])} | {_pct(p['default_median_ape'])} |")
    return out


def _sources_table(data: dict[str, Any]) -> list[str]:
    from gpuplan.estimate.uncertainty import source_accuracy

    out = ["| kind | source (its rows held out together) | rows | parts | in-sample median | held-out median "
           "| held-out p90 |", "|---|---|---|---|---|---|---|"]
    for kind, rows in source_accuracy(data).items():
        for r in rows:
            out.append(f"| {kind} | `{r['source']}` | {r['rows']} | {', '.join(r['parts'])} | "
                       f"{_pct(r['in_sample_median_ape'])} | {_pct(r['cv_median_ape'])} | {_pct(r['cv_p90_ape'])} |")
    return out


def _classes_table(data: dict[str, Any]) -> list[str]:
    out = ["| class | rows | sources | 80% band of measured / predicted | median error |", "|---|---|---|---|---|"]
    for k, c in data["classes"].items():
        out.append(f"| {k} | {c['n']} | {c['sources']} | {c['q10']:.2f} - {c['q90']:.2f} | {_pct(c['median_ape'])} |")
    return out


_FOLD_NAMES = {"source": "leave one source out", "accelerator": "leave one part out",
               "stack": "leave one engine version (serving) / framework out"}
_KINDS = (("train", "training"), ("serve", "serving"), ("memory", "memory"))


def _folds_table(data: dict[str, Any]) -> list[str]:
    """Every fold type: error, band coverage (plain, and widened by the novelty factor learned without the row's
    source), the factor and the median width of the widened band, per family."""
    out = ["| fold | family | rows | sources | median / p90 error | 80% band coverage (plain) | coverage "
           "(widened) | widening factor | median band width |", "|---|---|---|---|---|---|---|---|---|"]
    for fold, name in _FOLD_NAMES.items():
        for kind, label in _KINDS:
            f = data.get("folds", {}).get(fold, {}).get(kind)
            if f is None:
                continue
            out.append(f"| {name} | {label} | {f['rows']} | {f['sources']} | {f['median_ape']:.2%} / "
                       f"{f['p90_ape']:.2%} | {_pct(f['coverage_plain'])} | {_pct(f['coverage'])} | "
                       f"x{f['scale']:.2f} | {_pct(f['median_band_width'])} |")
    return out


def tables(data: dict[str, Any]) -> dict[str, str]:
    """The generated tables of docs/validation.md by marker name (`<!-- cv:NAME -->` ... `<!-- /cv:NAME -->`)."""
    return {"headline": "\n".join(_headline(data)), "folds": "\n".join(_folds_table(data)),
            "parts": "\n".join(_parts_table(data)), "sources": "\n".join(_sources_table(data)),
            "classes": "\n".join(_classes_table(data))}


def print_markdown(data: dict[str, Any]) -> None:
    print("\n\n".join(tables(data).values()))


def write_docs(path: Path, data: dict[str, Any]) -> None:
    """Replace each generated table of `path` (between its markers) with today's."""
    text = path.read_text(encoding="utf-8")
    for name, table in tables(data).items():
        start, end = f"<!-- cv:{name} -->", f"<!-- /cv:{name} -->"
        if start not in text or end not in text:
            raise SystemExit(f"{path}: markers {start} ... {end} missing; put them around the {name} table")
        head, rest = text.split(start, 1)
        text = f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
