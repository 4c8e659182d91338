"""Catalog problems: each names its file, line, record and field; all are reported at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from gpuplan.errors import GpuplanError

__all__ = ["CatalogError", "CatalogIssue"]


@dataclass(frozen=True)
class CatalogIssue:
    """One problem in a catalog file."""

    path: str
    line: int | None
    message: str
    kind: str = ""  # accelerators, servers, ... ("" for file-level problems)
    record: str = ""  # record id where known
    field: str = ""  # dotted field path where known

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        what = self.kind
        if self.record:
            what += f"[{self.record}]"
        if self.field:
            what += f".{self.field}" if what else self.field
        return f"{where}: {what}: {self.message}" if what else f"{where}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class CatalogError(GpuplanError):
    """The catalog (built-in plus overrides) has problems; nothing was loaded."""

    def __init__(self, issues: Sequence[CatalogIssue]) -> None:
        self.issues = tuple(issues)
        n = len(self.issues)
        first = str(self.issues[0]) if self.issues else "unknown problem"
        more = f" (and {n - 1} more; run `gpuplan catalog validate DIR` to list them)" if n > 1 else ""
        super().__init__(f"catalog not loaded, {n} problem(s): {first}{more}")
