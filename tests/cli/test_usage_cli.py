"""typer/click usage errors (missing option, bad choice, bad number, unknown option or command) print one line in
the locale's language (or --lang's, when given) on stderr, exit code 2, nothing on stdout."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.cli.usage import lang_from_args, usage_line
from gpuplan.i18n import default_lang

runner = CliRunner()
ZH = {"LC_ALL": None, "LC_MESSAGES": None, "LANG": "zh_CN.UTF-8"}
EN = {"LC_ALL": None, "LC_MESSAGES": None, "LANG": "en_US.UTF-8"}
MEM = ["memory", "train", "-m", "llama3-8b"]


@pytest.mark.parametrize(("args", "zh", "en"), [
    (["estimate", "train", "--accelerator", "h100-nvl-94gb"], "错误：缺少选项 '--model' / '-m'",
     "error: missing option '--model' / '-m'"),
    ([*MEM, "--precision", "fp7", "--json"], "错误：'--precision' 的值无效：'fp7' 不在可选值 'bf16', 'fp16', 'fp32'",
     "error: invalid value for '--precision': 'fp7' is not one of 'bf16', 'fp16', 'fp32'"),
    ([*MEM, "--seq-len", "4k", "--json"], "'--seq-len' 的值无效：'4k' 不是有效的整数",
     "invalid value for '--seq-len': '4k' is not a valid integer"),
    ([*MEM, "--zero", "4"], "'--zero' 的值无效：'4' 超过上限 3",
     "invalid value for '--zero': '4' is above the maximum 3"),
    ([*MEM, "--bogus"], "错误：没有选项 '--bogus'", "error: no such option '--bogus'"),
    (["catalog", "lst"], "错误：没有命令 'lst'；是否要用 'list'？",
     "error: no such command 'lst'; did you mean 'list'?"),
    (["validate"], "错误：缺少参数 'CASES'", "error: missing argument 'CASES'"),
])
def test_usage_errors_in_the_locale_language(args: list[str], zh: str, en: str) -> None:
    z = runner.invoke(app, args, env=ZH)
    e = runner.invoke(app, args, env=EN)
    exited(z, 2)
    exited(e, 2)
    assert z.stdout == "" and e.stdout == ""  # stdout stays clean for --json
    assert zh in z.stderr and en in e.stderr, z.stderr + e.stderr
    assert len(z.stderr.strip().splitlines()) == 1 and len(e.stderr.strip().splitlines()) == 1
    assert "--help`" in e.stderr


def test_lang_option_steers_the_usage_error() -> None:
    r = runner.invoke(app, [*MEM, "--precision", "fp7", "--lang", "zh"], env=EN)
    assert r.exit_code == 2 and "的值无效" in r.stderr
    r = runner.invoke(app, [*MEM, "--precision", "fp7", "--lang=en"], env=ZH)
    assert r.exit_code == 2 and "invalid value" in r.stderr
    assert lang_from_args(["--lang", "fr"]) == default_lang()  # not a catalog language: the locale's


def test_help_version_and_gpuplan_errors_keep_their_exit_codes() -> None:
    assert runner.invoke(app, ["memory", "train", "--help"], env=ZH).exit_code == 0
    assert runner.invoke(app, ["version"]).exit_code == 0
    assert runner.invoke(app, []).exit_code == 2  # no command: the help, exit code 2 (typer's no_args_is_help)
    r = runner.invoke(app, [*MEM, "--accelerator", "no-such-part"], env=ZH)
    assert r.exit_code == 2 and r.stderr.startswith("错误：")  # gpuplan's own fail() line


def test_unknown_click_wording_is_kept_inside_the_frame() -> None:
    assert usage_line(ValueError("something new"), "zh") == "错误：something new"


def test_a_switch_given_a_value_says_switches_take_none_and_help_shows_no_bool_metavar() -> None:
    """Regression: `plan train --help` listed `--domestic-only <bool>`, so a buyer wrote `--domestic-only true` and
    read only "unexpected extra argument: true". Switches now show no metavar, and the error says what to write."""
    args = ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--domestic-only"]
    z = runner.invoke(app, [*args, "true"], env=ZH)
    e = runner.invoke(app, [*args, "yes"], env=EN)
    exited(z, 2)
    exited(e, 2)
    assert "开关选项不带值" in z.stderr and "a switch takes no value" in e.stderr
    other = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "stray"], env=EN)
    exited(other, 2)
    assert "switch" not in other.stderr  # a stray word that is no boolean gets the plain message
    helped = runner.invoke(app, ["plan", "train", "--help"], env={**EN, "COLUMNS": "120"})
    line = next(x for x in helped.stdout.splitlines() if "--domestic-only" in x)
    assert "<bool>" not in line
