"""--help texts come from the catalog (help.*) in the locale's language, resolved when the CLI is imported."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan.i18n import help_text, messages

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuplan"
HELP_CALL = re.compile(r"""\bhelp_text\(\s*["'](help\.[a-z0-9_.]+)["']""")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _help_keys_in_code() -> set[str]:
    keys: set[str] = set()
    for path in (SRC / "cli").glob("*.py"):
        keys |= set(HELP_CALL.findall(path.read_text(encoding="utf-8")))
    return keys


def test_every_help_key_exists_and_every_help_message_is_used() -> None:
    used = _help_keys_in_code()
    catalog = {k for k in messages() if k.startswith("help.")}
    assert len(used) > 140
    assert sorted(used - catalog) == []
    assert sorted(catalog - used) == []


def test_no_literal_help_strings_left_in_the_cli() -> None:
    for path in (SRC / "cli").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert re.findall(r"""\bhelp=f?["']""", text) == [], path.name


def test_help_texts_are_english_and_chinese() -> None:
    for key, texts in messages().items():
        if not key.startswith("help."):
            continue
        assert not CJK.search(texts["en"]), key
        # Chinese text, or a pure list of option values / units kept as is (e.g. "USD", "auto, cuda, npu or cpu")
        assert CJK.search(texts["zh"]) or texts["zh"] == texts["en"] or "、" in texts["zh"], key


def test_chinese_help_keeps_technical_terms() -> None:
    m = messages()
    assert "ZeRO / FSDP" in m["help.memory_train.zero"]["zh"]
    assert "KV cache" in m["help.group.memory"]["zh"]
    assert "TTFT" in m["help.plan_infer.ttft_p99"]["zh"] and "TPOT" in m["help.plan_infer.tpot_p99"]["zh"]
    assert "MFU" in m["help.estimate_train"]["zh"]
    assert "JSON" in m["help.common.json_out"]["zh"]


@pytest.mark.parametrize(("locale", "expected"), [("zh_CN.UTF-8", "估算一个固定配置。"),
                                                   ("en_US.UTF-8", "Estimate one fixed configuration.")])
def test_help_text_follows_the_locale(monkeypatch: pytest.MonkeyPatch, locale: str, expected: str) -> None:
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", locale)
    assert help_text("help.group.estimate") == expected
    formats = help_text("help.plan_infer.weights", formats="bf16, fp8")
    assert formats.endswith("bf16, fp8）" if locale.startswith("zh") else "bf16, fp8)")


def _help(args: list[str], locale: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    env.update(LANG=locale, COLUMNS="200", TERM="dumb", NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-m", "gpuplan.cli.main", *args, "--help"], env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(("args", "zh", "en"), [
    (["plan", "train"], ["为训练任务对硬件", "训练 tokens 数", "zh 或 en"], ["Rank hardware", "training tokens"]),
    ([], ["估算一个固定配置。", "硬件目录"], ["Estimate one fixed configuration.", "The hardware catalog"]),
])
def test_help_in_the_locale_language(args: list[str], zh: list[str], en: list[str]) -> None:
    z = _help(args, "zh_CN.UTF-8")
    e = _help(args, "en_US.UTF-8")
    assert all(t in z for t in zh), z
    assert all(t in e for t in en), e
    assert not CJK.search(e)


def test_memory_train_help_lists_the_optimizer_recipe_options_in_both_languages() -> None:
    """Issue 13: each recipe fact is a CLI option, with help in Chinese and English."""
    def flat(text: str) -> str:
        return "".join(c for c in text if not c.isspace() and c not in "│")

    z, e = flat(_help(["memory", "train"], "zh_CN.UTF-8")), flat(_help(["memory", "train"], "en_US.UTF-8"))
    for text in (z, e):
        assert "--optimizer-offload" in text and "--optimizer-in-bwd" in text and "--loss" in text
    assert "分页优化器" in z and "同一时刻只保留一个梯度" in z
    assert "pagedoptimizers" in e and "onegradientliveatatime" in e
    assert "--compile" in z and "--compile" in e
    assert "编译后的交叉熵为反向保留16位logits" in z and "keepsthe16-bitlogitsforbackward" in e
