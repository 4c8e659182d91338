"""From plan to launch: the files that run a plan (training frameworks, launchers, serving engines,
fleet manifests), each with a header naming the plan, its predicted figures with their 80% bands
and which settings gpuplan chose. Pure functions from a plan to {file name: text}; `write_files`
writes them atomically. Flag lists of each targeted tool version are data (data/flags)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuplan.emit.context import ServeTarget, TrainTarget, plan_id
    from gpuplan.emit.dispatch import emit_serve, emit_train
    from gpuplan.emit.formats import SERVE_FORMATS, TRAIN_FORMATS, parse_formats
    from gpuplan.emit.write import write_files

__all__ = ["SERVE_FORMATS", "TRAIN_FORMATS", "ServeTarget", "TrainTarget", "emit_serve", "emit_train",
           "parse_formats", "plan_id", "write_files"]

# Loaded on first use (PEP 562): a command that only checks a format name (`--emit`, before planning) or runs
# without emitting does not load every emitter.
_WHERE = {"SERVE_FORMATS": "formats", "TRAIN_FORMATS": "formats", "parse_formats": "formats",
          "ServeTarget": "context", "TrainTarget": "context", "plan_id": "context",
          "emit_serve": "dispatch", "emit_train": "dispatch", "write_files": "write"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"gpuplan.emit.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'gpuplan.emit' has no attribute {name!r}")
