"""Build hook: the serving simulator's hot modules compiled with mypyc, beside their pure-Python source.

`gpuplan.simulate.engine_sim` and `fleet_sim` run every simulated request of `plan infer`; mypyc (mypy's compiler)
compiles them as they are, about twice as fast (docs/speed.md). Their compiled twins are built as
`gpuplan.simulate._c_engine_sim` / `_c_fleet_sim` from a copy of the source that records the SHA-256 of both source
files; `gpuplan.simulate.native` uses a twin only while that hash matches the source beside it, so an edited
module is never shadowed by a stale build. Where mypyc or a C compiler is missing, or GPUPLAN_PURE_PYTHON is set,
the build goes on without them: gpuplan then runs the same source interpreted.

Wheels carry the twins as platform files; an editable install (`pip install -e .`) writes them into `src/`
(ignored by git) and skips the compile when the twins there were built from the current source.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULES = ("engine_sim", "fleet_sim")  # gpuplan/simulate/<name>.py; keep in step with gpuplan/simulate/native.py
MARKER = "# --- end of the compiled twin"  # the lines from here on stay out of it (they pick the twin)
STAMP = "_c_stamp.txt"


def source_sha(simulate_dir: Path) -> str:
    """The SHA-256 of the compiled modules' sources, in order (gpuplan.simulate.native.source_sha agrees)."""
    h = hashlib.sha256()
    for name in MODULES:
        h.update((simulate_dir / f"{name}.py").read_bytes())
    return h.hexdigest()


def twin_source(text: str, sha: str) -> str:
    """A module's source as its compiled twin: up to the marker, imports of its sibling twins, and the hash."""
    body = text.split(MARKER, 1)[0]
    for name in MODULES:
        body = body.replace(f"from gpuplan.simulate.{name} import", f"from gpuplan.simulate._c_{name} import")
    return body + f'\nSOURCE_SHA256 = "{sha}"\n'


class CompiledSimulator(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("GPUPLAN_PURE_PYTHON"):
            return
        src = Path(self.root) / "src"
        sim = src / "gpuplan" / "simulate"
        sha = source_sha(sim)
        tag = f"{sha} {sys.implementation.cache_tag}"
        if version == "editable" and (sim / STAMP).is_file() and (sim / STAMP).read_text().strip() == tag:
            return  # the twins in src/ were built from this source for this interpreter
        self._tmp = Path(tempfile.mkdtemp(prefix="gpuplan-mypyc-"))
        try:
            built = self._compile(src, sha)
        except (OSError, subprocess.CalledProcessError) as exc:
            why = (exc.stdout or b"").decode(errors="replace").strip().splitlines()[-3:] if isinstance(
                exc, subprocess.CalledProcessError) else [str(exc)]
            self.app.display_warning("gpuplan: the simulator is not compiled, it runs as pure Python: "
                                     + " | ".join(why))
            return
        if version == "editable":
            for old in src.glob("*__mypyc*"):  # the shared runtime of an earlier build
                old.unlink()
            for path, rel in built:
                shutil.copy2(path, src / rel)
            (sim / STAMP).write_text(tag + "\n")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        for path, rel in built:
            build_data["force_include"][str(path)] = rel

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    def _compile(self, src: Path, sha: str) -> list[tuple[Path, str]]:
        """mypyc on twins of the modules in a copy of the package; (built file, its path in the wheel)."""
        work = self._tmp / "src"
        shutil.copytree(src / "gpuplan", work / "gpuplan", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        sim = work / "gpuplan" / "simulate"
        twins = []
        for name in MODULES:
            (sim / f"_c_{name}.py").write_text(twin_source((sim / f"{name}.py").read_text(), sha))
            twins.append(f"gpuplan/simulate/_c_{name}.py")
        # third-party packages are not installed in the build environment: their types are Any to mypyc. gpuplan's
        # own (the step cost, the decode table, the engine config) are read from the copy, whose type errors there
        # (pydantic-typed fields seen as Any) are not the twins' concern: `mypy` in CI checks the real environment
        (self._tmp / "mypyc.ini").write_text(
            "[mypy]\nignore_missing_imports = True\n\n[mypy-gpuplan.*]\nignore_errors = True\n\n"
            + "".join(f"[mypy-gpuplan.simulate._c_{name}]\nignore_errors = False\n\n" for name in MODULES))
        subprocess.run([sys.executable, "-m", "mypyc", "--config-file", str(self._tmp / "mypyc.ini"), *twins],
                       cwd=work, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        built: list[tuple[Path, str]] = []
        for path in sorted(work.glob("*.so")) + sorted(work.glob("*.pyd")):  # the shared runtime of the twins
            built.append((path, path.name))
        for path in sorted(sim.glob("_c_*.so")) + sorted(sim.glob("_c_*.pyd")):
            built.append((path, f"gpuplan/simulate/{path.name}"))
        if len([b for b in built if "/_c_" in b[1]]) != len(MODULES):
            raise OSError("mypyc built no extension modules")
        return built
