"""The published measurements that ship with gpuplan (`validate/data/ground_truth/`), and where they live.

The rows are published facts with their sources (the folder's README.md gives the case format): the dev files
(`training.csv`, `inference.csv`, `memory.csv`) and, under `released/`, rows kept aside until the estimators had
been checked on them (released/README.md). They are copies of the project's shared ground truth
(`../shared/ground-truth` beside a checkout): `differences` names every file where a copy and the shipped
folder part, so that CI can tell when one was edited without the other.

`case_files(file)` lists every shipped CSV of one family: what `gpuplan validate training` reads and what
benchmarks/cross_validate.py holds out one source (or engine version, or part) at a time. The project's own rows,
gathered from public sources for classes the shared rows lack (`validate/data/added_rows/`, issue 35), belong to
every family's list but not to the shared copy, so `differences` never asks for them there.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

__all__ = ["FILES", "added_dir", "case_files", "differences", "family_of", "shipped_dir"]

# Case-file families: the dev file of each and the released files of the same format (released/README.md).
FILES: dict[str, tuple[str, ...]] = {
    "training": ("training.csv", "released/training.csv"),
    "inference": ("inference.csv", "released/inference.csv", "released/inference_newparts.csv"),
    "memory": ("memory.csv", "released/memory.csv", "released/memory_newparts.csv"),
}


def shipped_dir() -> Path:
    """The shipped ground-truth folder inside the installed package."""
    return Path(str(resources.files("gpuplan.validate") / "data" / "ground_truth"))


def added_dir() -> Path:
    """The project's own rows (same case format), kept apart from the shared ground-truth copy."""
    return Path(str(resources.files("gpuplan.validate") / "data" / "added_rows"))


def case_files(file: str, root: Path | None = None, added: bool = True) -> list[Path]:
    """Every CSV of one family (`training`, `inference` or `memory`) under `root` (the shipped folder by
    default), dev file first, then the project's added rows of the family (unless `added` is False); files
    missing are left out."""
    base = root if root is not None else shipped_dir()
    out = [base / name for name in FILES[file] if (base / name).exists()]
    extra = added_dir() / f"{file}.csv"
    return out + [extra] if added and extra.exists() else out


def family_of(path: Path) -> str | None:
    """The family a case file belongs to by its name (`released/inference_newparts.csv` -> inference)."""
    stem = path.stem.split("_")[0]
    return stem if stem in FILES else None


def _first_difference(a: Path, b: Path) -> str:
    """Where two CSV files first part: the row id (or line) and how."""
    with a.open(encoding="utf-8", newline="") as fa, b.open(encoding="utf-8", newline="") as fb:
        ra, rb = list(csv.reader(fa)), list(csv.reader(fb))
    for i, (x, y) in enumerate(zip(ra, rb, strict=False)):
        if x != y:
            return f"line {i + 1} (row {x[0] if x else '?'}) differs"
    if len(ra) != len(rb):
        return f"{len(ra)} lines here against {len(rb)} in the shipped copy"
    return "same rows, different bytes (line endings or quoting)"


def differences(other: Path, shipped: Path | None = None) -> list[str]:
    """Every file under `other` (a ground-truth folder, e.g. ../shared/ground-truth) that the shipped folder
    lacks or holds with other bytes, and every shipped file `other` lacks; empty when the two are equal."""
    mine = shipped if shipped is not None else shipped_dir()

    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix in (".csv", ".md")}

    theirs, ours = files(other), files(mine)
    out = [f"{name}: in {other} but not shipped (copy it to {mine / name})" for name in sorted(theirs - ours)]
    out += [f"{name}: shipped but not in {other}" for name in sorted(ours - theirs)]
    for name in sorted(theirs & ours):
        if (other / name).read_bytes() != (mine / name).read_bytes():
            how = _first_difference(other / name, mine / name) if name.endswith(".csv") else "text differs"
            out.append(f"{name}: {how}; copy {other / name} over {mine / name}")
    return out
