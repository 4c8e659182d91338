"""A small on-disk cache of parsed data files, in the user's cache folder, never inside the package.

Entries are keyed by a SHA-256 of everything they depend on: the bytes of the input files, the
gpuplan version, the Python version and the source of the modules whose classes are stored.
Any change to any input makes a new key; stale entries are simply never read again. The cache is
only an accelerator: an unreadable, unwritable, missing or corrupt cache, or any error while
reading it, falls back to parsing the files, and nothing is stored for input with problems (so
every error message, with its line numbers, comes from the full parse).

Folder: $GPUPLAN_CACHE_DIR, else $XDG_CACHE_HOME/gpuplan, else ~/.cache/gpuplan
(%LOCALAPPDATA%\\gpuplan\\cache on Windows). GPUPLAN_NO_CACHE=1 turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "digest", "load", "store"]

_FORMAT = b"gpuplan-cache-1"


def cache_dir() -> Path | None:
    """The cache folder (it need not exist), or None when caching is off."""
    if os.environ.get("GPUPLAN_NO_CACHE", "").strip() not in ("", "0"):
        return None
    explicit = os.environ.get("GPUPLAN_CACHE_DIR", "")
    if explicit:
        return Path(explicit)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "gpuplan" / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "gpuplan"


def digest(parts: Iterable[bytes]) -> str:
    """SHA-256 over `parts` (each length-prefixed, so boundaries count), plus the format and Python version."""
    h = hashlib.sha256(_FORMAT)
    h.update(sys.version.encode())
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _path(kind: str, key: str) -> Path | None:
    d = cache_dir()
    return None if d is None else d / f"{kind}-{key[:40]}.pickle"


def load(kind: str, key: str) -> Any | None:
    """The stored object for (kind, key), or None on a miss or on any problem reading it."""
    try:
        path = _path(kind, key)
        if path is None or not path.is_file():
            return None
        with path.open("rb") as f:
            stored_key, obj = pickle.load(f)  # noqa: S301 (the user's own cache folder)
        return obj if stored_key == key else None
    except Exception:  # a corrupt or foreign file is a miss
        return None


def store(kind: str, key: str, obj: Any) -> None:
    """Store `obj` under (kind, key), atomically; silently does nothing when the folder cannot be written."""
    try:
        path = _path(kind, key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump((key, obj), f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except Exception:  # read-only home, full disk, unpicklable object: no cache, same answer
        return
