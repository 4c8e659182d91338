"""`gpuplan serve`: the web app and JSON API on one machine (loopback by default)."""

from __future__ import annotations

import importlib.util
import os

import typer

from gpuplan.cli.common import LANG_OPT, err_console, fail, positives, ui_lang
from gpuplan.errors import GpuplanError
from gpuplan.i18n import help_text, resolve_lang, tr
from gpuplan.service.access import auth_from_env

__all__ = ["serve_cmd"]


def serve_cmd(
    host: str = typer.Option("127.0.0.1", help=help_text("help.serve.host")),
    port: int = typer.Option(8000, help=help_text("help.serve.port")),
    workers: int = typer.Option(1, help=help_text("help.serve.workers")),
    slots: int = typer.Option(2, help=help_text("help.serve.slots")),
    time_limit: float = typer.Option(120.0, "--time-limit", help=help_text("help.serve.time_limit")),
    lang: str | None = LANG_OPT,
) -> None:
    """Serve the planner as a web app and a JSON API (the pages choose their language per visitor)."""
    try:
        positives(resolve_lang(lang), ("port", port, True), ("workers", workers, True), ("slots", slots, True),
                  ("time-limit", time_limit, False))
        auth_from_env()  # a GPUPLAN_AUTH that reads wrong stops here, not in every worker
    except GpuplanError as exc:
        fail(exc, lang)
    lang = ui_lang(lang)
    try:
        import uvicorn

        # the web app's own dependencies, checked by name: the CLI starts the app, it does not import it
        for name in ("fastapi", "jinja2", "sqlalchemy", "python_multipart"):
            if importlib.util.find_spec(name) is None:
                raise ImportError(name=name)
    except ImportError as exc:
        err_console.print(tr("cli.serve.missing", lang, name=exc.name or str(exc)), style="red", markup=False)
        raise typer.Exit(code=2) from None
    os.environ["GPUPLAN_SLOTS"] = str(slots)
    os.environ["GPUPLAN_TIME_LIMIT"] = str(time_limit)
    err_console.print(tr("cli.serve.listening", lang, host=host, port=port), markup=False, highlight=False)
    uvicorn.run("gpuplan.web.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="warning", server_header=False, access_log=False)
