"""The built wheel and sdist (issue 16): every data file inside; the wheel installed into a fresh virtual environment
outside the source tree answers `plan train`, `catalog validate` on its own data and `version`.

The fresh environment gets the runtime dependencies of this one through a .pth line (no download; the wheel's own
site-packages comes first, so the gpuplan that runs is the installed wheel, which the test checks)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "gpuplan"
pytestmark = pytest.mark.slow


def _data_files() -> set[str]:
    """Every non-Python file of the package that git knows, relative to src/ (gpuplan/...)."""
    out = subprocess.run(["git", "ls-files", "src/gpuplan"], cwd=ROOT, capture_output=True, text=True, check=False)
    files = out.stdout.split() if out.returncode == 0 and out.stdout else [
        str(p.relative_to(ROOT)) for p in PKG.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return {f.removeprefix("src/") for f in files if not f.endswith(".py") and (ROOT / f).is_file()}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
                         capture_output=True, text=True, check=False, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def test_wheel_and_sdist_hold_every_data_file(dist: Path) -> None:
    wheel, = dist.glob("gpuplan-*.whl")
    sdist, = dist.glob("gpuplan-*.tar.gz")
    data = _data_files()
    assert any(f.startswith("gpuplan/hardware/data/") for f in data) and any(f.endswith(".json") for f in data)
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert sorted(data - in_wheel) == []
    with tarfile.open(sdist) as tar:
        in_sdist = {n.split("/", 1)[1].removeprefix("src/") for n in tar.getnames() if "/" in n}
    assert sorted(data - in_sdist) == []
    assert wheel.name.startswith(f"gpuplan-{installed_version('gpuplan')}-")


def test_installed_wheel_plans_validates_and_says_its_version(dist: Path, tmp_path: Path) -> None:
    wheel, = dist.glob("gpuplan-*.whl")
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / ("python.exe" if os.name == "nt" else "python")
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True,
                   timeout=300)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz_runtime_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {**os.environ, "GPUPLAN_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": ""}
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*args: str) -> str:
        res = subprocess.run([str(bindir / "gpuplan"), *args], cwd=work, env=env, capture_output=True, text=True,
                             check=False, timeout=300)
        assert res.returncode == 0, (args, res.stdout[-2000:], res.stderr[-2000:])
        return res.stdout

    where = subprocess.run([str(py), "-c", "import gpuplan, sys; print(gpuplan.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(env_dir.resolve()), where
    assert run("version").strip() == installed_version("gpuplan")
    assert "Recommended" in run("plan", "train", "-m", "llama3-8b", "--tokens", "1e11", "--max-devices", "16",
                                "--lang", "en")
    data_dir = subprocess.run([str(py), "-c", "from gpuplan.hardware import builtin_data_dir as b; print(b())"],
                              cwd=work, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(data_dir).resolve().is_relative_to(env_dir.resolve())
    assert run("catalog", "validate", data_dir, "--lang", "en").startswith("OK")
