"""The page language: `?lang=`, then the `lang` cookie, then Accept-Language, else English; texts come from the
one message catalog (`web.*` keys in i18n/data/messages.yaml)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from gpuplan.i18n import LANGS, tr

__all__ = ["accept_language", "page_lang", "translator"]


def accept_language(header: str) -> str | None:
    """The first catalog language in an Accept-Language header, by quality."""
    best: list[tuple[float, int, str]] = []
    for i, part in enumerate(header.split(",")[:20]):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        base = tag.strip().lower().split("-")[0]
        if base in LANGS and q > 0:
            best.append((-q, i, base))
    return min(best)[2] if best else None


def page_lang(request: Request) -> str:
    for value in (request.query_params.get("lang"), request.cookies.get("lang")):
        if value in LANGS:
            return str(value)
    return accept_language(request.headers.get("accept-language", "")) or "en"


def translator(lang: str) -> Any:
    def t(key: str, **params: Any) -> str:
        return tr(key, lang, **params)

    return t
