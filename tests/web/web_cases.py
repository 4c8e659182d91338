"""The requests the web tests share (a module of its own: `conftest` is not importable by name across folders)."""

from __future__ import annotations

TRAIN = {"model": "llama3-8b", "tokens": 1e12, "deadline": 30, "top": 3}
INFER = {"model": "llama3.1-8b", "qps": 5, "ttft_p99": 2, "tpot_p99": 0.05}
