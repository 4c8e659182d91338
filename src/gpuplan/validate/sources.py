"""Which publication a ground-truth row comes from: the unit that cross-validation holds out.

A row's `source` is free text ("mosaicml/llm-foundry scripts/train/benchmarking/README.md @4953...",
"https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/...", "Touvron et al. 2023 LLaMA
arXiv:2302.13971 Table 15"). Rows of one publication share authors, software and clusters, so
leave-one-source-out holds them out together: a GitHub repository, an arXiv paper, or the first
address (host and first path segment) or words of the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["row_source", "source_key"]

_GITHUB = re.compile(r"github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)")
_REPO_FIRST = re.compile(r"^([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)(\s|$)")
_ARXIV = re.compile(r"arXiv[: ]?(\d{4}\.\d{4,5})", re.IGNORECASE)
_URL = re.compile(r"https?://([^/\s)]+)(/[^/\s)#?]*)?")


def source_key(text: str) -> str:
    """A short, stable key for the publication `text` names (rows with one key are held out together)."""
    t = text.strip()
    m = _GITHUB.search(t) or _REPO_FIRST.match(t)
    if m:
        return f"github:{m.group(1).lower()}/{m.group(2).lower().removesuffix('.git')}"
    m = _ARXIV.search(t)
    if m:
        return f"arxiv:{m.group(1)}"
    m = _URL.search(t)
    if m:
        host = m.group(1).lower().removeprefix("www.")
        return f"web:{host}{(m.group(2) or '').lower()}"
    words = re.findall(r"[A-Za-z0-9]+", t.split("(")[0])[:3]
    return "text:" + " ".join(w.lower() for w in words) if words else "text:unknown"


def row_source(row: Mapping[str, str]) -> str:
    """The publication key (`source_key`) of a validation row: rows with one key are held out together and, in a
    training fit, weigh as one (validate/refit.SOURCE_BALANCE)."""
    return source_key(row.get("source", ""))
