"""The `gpuplan` command: one typer app with a sub-app per command group.

`main()` imports only the command module(s) of the command asked for (`gpuplan memory train` never
imports the planner, the advisor or plotly); `--help`, no command or an unknown one build the whole
app. `app` (the whole app, for tests and tools) is built on first access.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

import typer

from gpuplan.cli.usage import GpuplanGroup
from gpuplan.i18n import help_text

if TYPE_CHECKING:
    app: typer.Typer

# top-level command -> the gpuplan.cli modules that define it (in registration order)
COMMANDS: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "memory": ("memory",),
    "estimate": ("train", "infer"),
    "plan": ("train", "infer_plan"),
    "validate": ("validate",),
    "catalog": ("catalog",),
    "bench": ("bench",),
    "calibrate": ("bench",),
    "compare": ("advise",),
    "report": ("advise",),
    "tco": ("tco",),
    "serve": ("serve",),
    "version": (),
}


def _mod(name: str) -> Any:
    return import_module(f"gpuplan.cli.{name}")


def version() -> None:
    """Print the gpuplan version."""
    from gpuplan import __version__

    typer.echo(__version__)


def _group() -> None:
    """Which GPU servers or cloud instances to rent or buy for LLM work, and why."""


def build_app(commands: Iterable[str] | None = None) -> typer.Typer:
    """The typer app with `commands` (default: all of them), in the order of `gpuplan --help`."""
    want = set(COMMANDS if commands is None else commands)
    for name in want:
        for module in COMMANDS[name]:
            _mod(module)  # imports register `estimate infer` and `plan infer` on their groups
    out = typer.Typer(
        name="gpuplan",
        cls=GpuplanGroup,
        help=help_text("help.gpuplan"),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    if len(want) == 1:
        out.callback()(_group)  # with one command typer would otherwise drop the `gpuplan` level
    if "model" in want:
        out.add_typer(_mod("model").app, name="model")
    if "memory" in want:
        out.add_typer(_mod("memory").app, name="memory")
    if "estimate" in want:
        out.add_typer(_mod("train").estimate_app, name="estimate")
    if "plan" in want:
        out.add_typer(_mod("train").plan_app, name="plan")
    if "validate" in want:
        out.command("validate", help=help_text("help.validate"))(_mod("validate").validate_cmd)
    if "catalog" in want:
        out.add_typer(_mod("catalog").app, name="catalog")
    if "bench" in want:
        out.add_typer(_mod("bench").app, name="bench")
    if "calibrate" in want:
        out.command("calibrate", help=help_text("help.calibrate"))(_mod("bench").calibrate_cmd)
    if "compare" in want:
        out.command("compare", help=help_text("help.compare"))(_mod("advise").compare_cmd)
    if "report" in want:
        out.command("report", help=help_text("help.report"))(_mod("advise").report_cmd)
    if "tco" in want:
        out.command("tco", help=help_text("help.tco"))(_mod("tco").tco_cmd)
    if "serve" in want:
        out.command("serve", help=help_text("help.serve"))(_mod("serve").serve_cmd)
    if "version" in want:
        out.command("version", help=help_text("help.version"))(version)
    return out


def command_of(args: Sequence[str]) -> str | None:
    """The top-level command named by `args` when it is a known one (its options may follow), else None."""
    if not args or args[0].startswith("-") or args[0] not in COMMANDS:
        return None
    return args[0]


_full: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    global _full
    if name != "app":
        raise AttributeError(f"module 'gpuplan.cli.main' has no attribute {name!r}")
    if _full is None:
        _full = build_app()
    return _full


def main() -> None:
    from gpuplan.errors import InputError
    from gpuplan.search import parallel

    try:  # the planner's worker processes (search/parallel.py): GPUPLAN_JOBS, else one per CPU
        parallel.set_jobs(parallel.jobs_from_env())
    except InputError as exc:
        from gpuplan.cli.common import fail

        try:
            fail(exc)
        except typer.Exit as stop:
            sys.exit(stop.exit_code)
    command = command_of(sys.argv[1:])
    app = build_app(None if command is None else [command])
    # the modules, schemas and catalog loaded so far live until exit: moved out of the collector's generations, no
    # collection during the run scans them again (Python docs, gc.freeze: for long-lived objects made at startup)
    gc.freeze()
    app()


if __name__ == "__main__":
    main()
