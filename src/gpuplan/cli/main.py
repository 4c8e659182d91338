"""The `gpuplan` command: one typer app with a sub-app per command group."""

from __future__ import annotations

import typer

from gpuplan import __version__
from gpuplan.cli import advise as advise_cmd
from gpuplan.cli import bench as bench_cmd
from gpuplan.cli import catalog as catalog_cmd
from gpuplan.cli import infer as infer_cmd  # noqa: F401  (registers `estimate infer`)
from gpuplan.cli import infer_plan as infer_plan_cmd  # noqa: F401  (registers `plan infer`)
from gpuplan.cli import memory as memory_cmd
from gpuplan.cli import model as model_cmd
from gpuplan.cli import tco as tco_cmd
from gpuplan.cli import train as train_cmd
from gpuplan.cli import validate as validate_cmd
from gpuplan.cli.usage import GpuplanGroup
from gpuplan.i18n import help_text

app = typer.Typer(
    name="gpuplan",
    cls=GpuplanGroup,
    help=help_text("help.gpuplan"),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(model_cmd.app, name="model")
app.add_typer(memory_cmd.app, name="memory")
app.add_typer(train_cmd.estimate_app, name="estimate")
app.add_typer(train_cmd.plan_app, name="plan")
app.command("validate", help=help_text("help.validate"))(validate_cmd.validate_cmd)
app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(bench_cmd.app, name="bench")
app.command("calibrate", help=help_text("help.calibrate"))(bench_cmd.calibrate_cmd)
app.command("compare", help=help_text("help.compare"))(advise_cmd.compare_cmd)
app.command("report", help=help_text("help.report"))(advise_cmd.report_cmd)
app.command("tco", help=help_text("help.tco"))(tco_cmd.tco_cmd)


@app.command(help=help_text("help.version"))
def version() -> None:
    """Print the gpuplan version."""
    typer.echo(__version__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
