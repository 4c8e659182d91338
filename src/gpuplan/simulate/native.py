"""The simulator's compiled twins, used only when they were built from the source beside them.

The package build compiles `engine_sim` and `fleet_sim` with mypyc (hatch_build.py at the project root) into
`_c_engine_sim` / `_c_fleet_sim`, each recording the SHA-256 of both sources. `twin(name)` returns the compiled
module while that hash matches the `.py` files here, else None: an edited source is never shadowed by a stale
build, and without a build (no C compiler, GPUPLAN_PURE_PYTHON=1 at build or run time) the same source runs
interpreted. The twin is the same code: `plan infer` answers identically either way (tests/simulate/test_native.py).
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from importlib import import_module
from pathlib import Path
from types import ModuleType

__all__ = ["MODULES", "compiled", "source_sha", "twin"]

MODULES = ("engine_sim", "fleet_sim")  # keep in step with hatch_build.py


@cache
def source_sha() -> str:
    """SHA-256 of the compiled modules' sources, in order (as hatch_build.source_sha computes it)."""
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in MODULES:
        h.update((here / f"{name}.py").read_bytes())
    return h.hexdigest()


def twin(name: str) -> ModuleType | None:
    """The compiled twin of gpuplan.simulate.`name` if one was built from the current source, else None."""
    if os.environ.get("GPUPLAN_PURE_PYTHON"):
        return None
    try:
        mod = import_module(f"gpuplan.simulate._c_{name}")
    except ImportError:
        return None
    return mod if getattr(mod, "SOURCE_SHA256", None) == source_sha() else None


def compiled() -> bool:
    """Whether the simulator runs compiled in this process."""
    return all(twin(name) is not None for name in MODULES)
