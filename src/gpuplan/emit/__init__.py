"""From plan to launch: the files that run a plan (training frameworks, launchers, serving engines,
fleet manifests), each with a header naming the plan, its predicted figures with their 80% bands
and which settings gpuplan chose. Pure functions from a plan to {file name: text}; `write_files`
writes them atomically. Flag lists of each targeted tool version are data (data/flags)."""

from __future__ import annotations

from gpuplan.emit.context import ServeTarget, TrainTarget, plan_id
from gpuplan.emit.dispatch import SERVE_FORMATS, TRAIN_FORMATS, emit_serve, emit_train, parse_formats
from gpuplan.emit.write import write_files

__all__ = ["SERVE_FORMATS", "TRAIN_FORMATS", "ServeTarget", "TrainTarget", "emit_serve", "emit_train",
           "parse_formats", "plan_id", "write_files"]
