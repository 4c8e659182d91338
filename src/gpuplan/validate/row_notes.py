"""Notes on ground-truth case rows kept inside the package (`data/row_notes.yaml`), keyed by row id.

The case files live outside the repository and may not be editable where the tests run, so
facts about a row's source that the estimator must not guess from its text (that the part's own
vendor published it; that its run depends on a mechanism gpuplan does not model yet) are kept here.
Nothing here changes a prediction; the notes weigh a row in a refit of terms.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from gpuplan import yamlio

__all__ = ["VendorNote", "row_weight", "unmodelled", "vendor_note"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class VendorNote(BaseModel):
    """Rows published by the vendor of the part they ran on."""

    model_config = _STRICT

    vendor: str = Field(min_length=1)
    source: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    ids: tuple[str, ...] = Field(min_length=1)


class _NotesFile(BaseModel):
    model_config = _STRICT

    schema_version: int
    as_of: str
    vendor_weight: float = Field(gt=0, le=1)
    vendor_published: tuple[VendorNote, ...]
    unmodelled: dict[str, str] = Field(default_factory=dict)


@cache
def _notes() -> tuple[_NotesFile, dict[str, VendorNote]]:
    path = resources.files("gpuplan.validate") / "data" / "row_notes.yaml"
    parsed = _NotesFile.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))
    by_id: dict[str, VendorNote] = {}
    for note in parsed.vendor_published:
        for i in note.ids:
            if i in by_id:
                raise RuntimeError(f"row_notes.yaml: row {i} listed twice")
            by_id[i] = note
    return parsed, by_id


def vendor_note(row_id: str) -> VendorNote | None:
    """The vendor-published note of a row, or None for a third-party row."""
    return _notes()[1].get(row_id)


def unmodelled() -> dict[str, str]:
    """Rows whose run depends on a mechanism gpuplan does not model yet -> that mechanism (row_notes.yaml)."""
    return dict(_notes()[0].unmodelled)


def row_weight(row_id: str) -> float:
    """The weight of a row in a fit of terms: 0 for an unmodelled row, `vendor_weight` for vendor-published rows,
    else 1."""
    if row_id in _notes()[0].unmodelled:
        return 0.0
    return _notes()[0].vendor_weight if vendor_note(row_id) is not None else 1.0
