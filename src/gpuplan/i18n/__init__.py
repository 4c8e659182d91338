"""One message catalog for every human-facing text of the CLI and the reports (English and Chinese).

Messages live in `data/messages.yaml` as `key: {en: ..., zh: ...}` with `str.format` placeholders
shared by both languages. Technical terms keep their usual English form in Chinese (GPU, NVLink,
RDMA, MFU, ZeRO...). The language defaults from the locale (LC_ALL, then LC_MESSAGES, then LANG).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Literal

from gpuplan import cache as data_cache
from gpuplan import yamlio
from gpuplan.errors import InputError

__all__ = ["LANGS", "Duration", "Lang", "both", "default_lang", "help_text", "messages", "not_recommended",
           "resolve_lang", "tr"]

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")


@cache
def messages() -> dict[str, dict[str, str]]:
    """The whole catalog: key -> {lang: template}."""
    path = resources.files("gpuplan.i18n") / "data" / "messages.yaml"
    raw = path.read_bytes()
    key = data_cache.digest([raw])
    hit = data_cache.load("messages", key)
    if isinstance(hit, dict):
        return hit
    data = yamlio.safe_load(raw.decode("utf-8"))
    out = {str(k): {str(lang): str(text) for lang, text in v.items()} for k, v in data.items()}
    data_cache.store("messages", key, out)
    return out


def default_lang(env: Mapping[str, str] | None = None) -> Lang:
    """'zh' when the locale says Chinese (zh_CN.UTF-8, zh_TW...), else 'en'."""
    env = os.environ if env is None else env
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def resolve_lang(lang: str | None) -> Lang:
    """A `--lang` value checked against the catalog's languages; None means the locale's."""
    if lang is None or lang == "":
        return default_lang()
    if lang not in LANGS:
        raise InputError(field="lang", value=lang, allowed=", ".join(LANGS))
    return "zh" if lang == "zh" else "en"


class Duration:
    """A length of time that reads in the unit that suits it, in each language: minutes below an hour,
    hours below two days, else days (so a short run never shows as "0.0 days")."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)

    def text(self, lang: str) -> str:
        s = self.seconds
        if s < 3600:
            return tr("report.dur.min", lang, v=max(s / 60, 1))
        if s < 48 * 3600:
            return tr("report.dur.h", lang, v=s / 3600)
        return tr("report.dur.d", lang, v=s / 86400)


def tr(key: str, lang: str, /, **params: Any) -> str:
    """The message `key` in `lang`, formatted with `params` (KeyError names a missing key); a `Duration`
    parameter is written in `lang`."""
    try:
        template = messages()[key][lang]
    except KeyError:
        raise KeyError(f"message {key!r} has no {lang!r} text in gpuplan/i18n/data/messages.yaml") from None
    if not params:
        return template
    return template.format(**{k: v.text(lang) if isinstance(v, Duration) else v for k, v in params.items()})


def help_text(key: str, /, **params: Any) -> str:
    """A `--help` text (`help.<command>.<option>`) in the locale's language.

    Called when the CLI modules are imported: help is printed before options are parsed, so `--lang` cannot
    steer it; LC_ALL / LC_MESSAGES / LANG do (the rule of `resolve_lang(None)`)."""
    return tr(key, default_lang(), **params)


def both(key: str, /, **params: Any) -> dict[str, str]:
    """The message in every language: {'en': ..., 'zh': ...}."""
    return {lang: tr(key, lang, **params) for lang in LANGS}


def not_recommended(finding: str, lang: str, /) -> str:
    """'not recommended: <reason> (<finding id>)': the reason in words where messages.yaml has one
    (`report.block.<id>`), else the finding id alone."""
    key = f"report.block.{finding}"
    reason = tr(key, lang) if key in messages() else finding
    return tr("report.not_recommended", lang, reason=reason, finding=finding)
