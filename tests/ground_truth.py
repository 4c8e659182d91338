"""Where the tests find the ground-truth case files, and the rule when they are missing.

The rows ship inside the package (`gpuplan/validate/data/ground_truth`, gpuplan.validate.ground_truth): a fresh
clone runs every golden test without `../shared` beside it. Tests that read them carry
`@pytest.mark.ground_truth("training.csv", ...)` (or `pytestmark = ...`). tests/conftest.py skips them when a
named file is missing and fails them when the environment variable CI is set (.ci/run sets CI=1): a broken path
in CI must not pass with nothing checked. GPUPLAN_GROUND_TRUTH points at another folder (the test of this rule
uses it). tests/validate/test_shipped_rows.py checks that the shipped copy equals ../shared/ground-truth when that
folder is present.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpuplan.validate.ground_truth import shipped_dir

__all__ = ["GROUND_TRUTH", "SHARED", "case_file", "missing_files"]

GROUND_TRUTH = Path(os.environ.get("GPUPLAN_GROUND_TRUTH") or shipped_dir())
# The project's shared ground truth beside a checkout (absent on a fresh clone).
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "ground-truth"


def case_file(name: str) -> Path:
    """One case file of the ground truth (it may be missing; see the ground_truth marker)."""
    return GROUND_TRUTH / name


def missing_files(names: tuple[str, ...]) -> list[str]:
    """The named case files (the folder itself when none is named) that are not there."""
    return [n for n in names or ("",) if not (GROUND_TRUTH / n).exists()]
