"""Write a report document as HTML, Markdown or JSON (atomically), and read a saved JSON document back."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuplan.errors import InputError

__all__ = ["REPORT_FORMATS", "load_report", "render_report", "write_report"]

REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md", ".json": "json"}


def _format(path: Path) -> str:
    fmt = REPORT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(field="report", value=str(path), allowed="a file name ending in .html, .md or .json")
    return fmt


def render_report(doc: Mapping[str, Any], fmt: str, lang: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    from gpuplan.render.report_bench import bench_html, bench_markdown

    bench = doc.get("bench") or ()  # gpuplan bench results (gpuplan report --bench): appended to every kind
    if fmt == "md":
        from gpuplan.render.report_md import render_markdown

        return render_markdown(doc, lang) + (bench_markdown(bench, lang) if bench else "")
    from gpuplan.render.report_html import render_html  # plotly is imported only for HTML

    page = render_html(doc, lang)
    if bench:
        end = page.rfind("</body>")
        page = page[:end] + bench_html(bench, lang) + page[end:]
    return page


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_report(doc: Mapping[str, Any], path: str | Path, lang: str) -> Path:
    """Render by the file suffix and write through a temporary file and a rename (never a half-written file)."""
    target = Path(path)
    fmt = _format(target)
    text = render_report(doc, fmt, lang)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(field="report", value=str(target), allowed="a path in an existing folder")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report gets the usual permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_report(path: str | Path, *, accept_infer_run: bool = False) -> dict[str, Any]:
    """A report document saved as JSON (`--report plan.json`); with `accept_infer_run`, also the JSON of
    `gpuplan plan infer --json` (returned as is, for the inference report builder)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(field="report input", value=str(p), allowed="a report JSON written by gpuplan",
                         hint=str(exc)) from None
    if accept_infer_run and isinstance(doc, dict) and {"plans", "load", "slo", "model"} <= set(doc):
        return doc
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("gpuplan.report/"):
        raise InputError(field="report input", value=str(p), allowed="a report JSON written by gpuplan (schema "
                         "gpuplan.report/1)", hint="save one with: gpuplan plan train ... --report plan.json")
    return doc
