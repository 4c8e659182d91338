"""The pages' common frame: the Jinja2 templates, the context every page gets (language, translator, version),
the error page and a form error's one line; every page module renders through these."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from gpuplan.i18n import LANGS
from gpuplan.service.checks import error_fields
from gpuplan.web import catalog_view
from gpuplan.web.i18n import page_lang, translator

__all__ = ["error_page", "form_error", "models_list", "render", "templates"]

templates = Jinja2Templates(directory=str(resources.files("gpuplan.web") / "templates"))
templates.env.filters["tojson_attr"] = lambda v: json.dumps(v, ensure_ascii=False)

def _ctx(request: Request, **extra: Any) -> dict[str, Any]:
    from gpuplan import __version__

    lang = page_lang(request)
    return {"request": request, "lang": lang, "t": translator(lang), "langs": LANGS, "version": __version__,
            "path": request.url.path, "csrf_token": getattr(request.state, "csrf", ""), **extra}


def render(request: Request, name: str, status: int = 200, headers: Mapping[str, str] | None = None,
           **extra: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, name, _ctx(request, **extra), status_code=status, headers=headers)


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", status=status, status_code=status, message=message)


def form_error(exc: Exception, lang: str) -> str:
    return str(error_fields(exc, lang)["message"])


def models_list() -> list[dict[str, Any]]:
    return list(catalog_view.models_json()["models"])
