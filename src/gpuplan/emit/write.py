"""Writing emitted files: all or nothing. Every file is written to a temporary name in the target
folder, then renamed into place (os.replace is atomic on POSIX); a failure removes what was written."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_files"]


def write_files(files: Mapping[str, str], out: Path) -> list[Path]:
    """Write `files` (name -> text) into `out`; scripts (*.sh, *.sbatch) become executable."""
    out.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in files.items():
            fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", dir=out)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp_name, 0o755 if name.endswith((".sh", ".sbatch")) else 0o644)
            staged.append((name, Path(tmp_name)))
    except BaseException:
        for _, staged_tmp in staged:
            staged_tmp.unlink(missing_ok=True)
        raise
    done = []
    for name, path in staged:
        os.replace(path, out / name)
        done.append(out / name)
    return done
