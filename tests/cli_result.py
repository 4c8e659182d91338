"""Checks on a typer CliRunner result that a crash cannot pass.

CliRunner catches every exception: a crash leaves `exit_code` 1, the output empty (no "Traceback" in it) and the
exception in `res.exception`. `exited` fails on any exception other than the SystemExit of a deliberate exit,
with the traceback in the message, and then checks the exit code.
"""

from __future__ import annotations

import traceback
from typing import Any

__all__ = ["exited", "one_line_error"]


def exited(res: Any, code: int) -> None:
    """`res` ended with exit code `code` and no exception escaped the command."""
    exc = res.exception
    if exc is not None and not isinstance(exc, SystemExit):
        raise AssertionError(f"the command crashed with {type(exc).__name__}: {exc}\n"
                             + "".join(traceback.format_exception(exc)))
    assert res.exit_code == code, f"exit code {res.exit_code}, expected {code}; output:\n{res.output}"


def one_line_error(res: Any, field: str) -> None:
    """Exit code 2, no crash, and exactly one line of output that names `field`."""
    exited(res, 2)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert field in lines[0], res.output
