"""`gpuplan serve`: registered, checks its options, and serves on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from cli_result import exited, one_line_error
from gpuplan.cli.main import app, build_app

runner = CliRunner()


def test_serve_is_a_command_with_loopback_default() -> None:
    res = runner.invoke(build_app(["serve"]), ["serve", "--help"])
    exited(res, 0)
    assert "--host" in res.output and "127.0.0.1" in res.output and "--workers" in res.output
    assert "serve" in runner.invoke(app, ["--help"]).output


def test_bad_port_is_one_line() -> None:
    one_line_error(runner.invoke(app, ["serve", "--port", "0"]), "port")


def test_serves_on_loopback(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "GPUPLAN_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}"}
    proc = subprocess.Popen([sys.executable, "-m", "gpuplan.cli.main", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200 and b'"ok"' in r.read()
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_time_limit_is_an_option_checked_like_the_others() -> None:
    res = runner.invoke(build_app(["serve"]), ["serve", "--help"])
    assert "--time-limit" in res.output and "--slots" in res.output
    one_line_error(runner.invoke(app, ["serve", "--time-limit", "0"]), "time-limit")
