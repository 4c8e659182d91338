"""Request length distributions: fixed, uniform, inline bins, or a histogram file.

A distribution is a frozen record built from a short spec string (`512`, `fixed:512`,
`uniform:128-2048`, `bins:128-512=3,512-2048=1`, `hist:path.csv`) and sampled with a seeded
numpy Generator. Inline bins are `LO-HI=WEIGHT` (lengths drawn uniformly in [LO, HI]) or
`N=WEIGHT` (one length), comma-separated. A histogram file is CSV with a header, either
`length,weight` (each row one length) or `low,high,weight` (each row a bin).

Only a caller that speaks for the machine's own user (the CLI) may read a file: `files=True`.
A request from a client (the web app, the API, a stored or imported plan) never names a path
on the server; `hist:` then fails with one text whatever the path, before anything is opened.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from gpuplan.errors import InputError

__all__ = ["MAX_BINS", "LengthDist", "bins_spec", "parse_length_dist"]

_ALLOWED = ("a positive integer, fixed:N, uniform:LO-HI (1 <= LO <= HI), bins:LO-HI=W,... (inline histogram) "
            "or hist:FILE.csv")
_ALLOWED_NO_FILES = ("a positive integer, fixed:N, uniform:LO-HI (1 <= LO <= HI) or bins:LO-HI=W,... "
                     "(an inline histogram; a server never reads a file named in a request)")
MAX_LENGTH = 16 * 1024 * 1024  # tokens: past every served model's context window
MAX_BINS = 256  # an inline or file histogram: enough for any published length distribution, bounded for a server


@dataclass(frozen=True, slots=True, kw_only=True)
class LengthDist:
    """A distribution of token counts (each >= 1)."""

    kind: Literal["fixed", "uniform", "hist"]
    low: tuple[int, ...]  # per bin (one bin for fixed/uniform)
    high: tuple[int, ...]
    weight: tuple[float, ...]
    label: str

    def __post_init__(self) -> None:
        if not (len(self.low) == len(self.high) == len(self.weight)) or not self.low:
            raise InputError(field="length distribution", value=self.label, allowed="at least one bin")
        for lo, hi, w in zip(self.low, self.high, self.weight, strict=True):
            if lo < 1 or hi < lo or not w >= 0:
                raise InputError(field="length distribution", value=self.label,
                                 allowed="lengths >= 1, low <= high, weights >= 0",
                                 hint="zero or negative lengths cannot be served")
        if sum(self.weight) <= 0:
            raise InputError(field="length distribution", value=self.label, allowed="a positive total weight")
        if max(self.high) > MAX_LENGTH:
            raise InputError(field="length distribution", value=self.label[:120],
                             allowed=f"lengths up to {MAX_LENGTH:,} tokens",
                             hint="no served model takes a longer request; check the units (tokens, not bytes)")

    @staticmethod
    def fixed(n: int) -> LengthDist:
        return LengthDist(kind="fixed", low=(int(n),), high=(int(n),), weight=(1.0,), label=f"fixed:{n}")

    @staticmethod
    def uniform(lo: int, hi: int) -> LengthDist:
        return LengthDist(kind="uniform", low=(int(lo),), high=(int(hi),), weight=(1.0,), label=f"uniform:{lo}-{hi}")

    @property
    def _p(self) -> np.ndarray:
        w = np.asarray(self.weight, dtype=np.float64)
        return np.asarray(w / w.sum(), dtype=np.float64)

    @property
    def mean(self) -> float:
        lo = np.asarray(self.low, dtype=np.float64)
        hi = np.asarray(self.high, dtype=np.float64)
        return float((self._p * (lo + hi) / 2.0).sum())

    @property
    def max(self) -> int:
        return max(h for h, w in zip(self.high, self.weight, strict=True) if w > 0)

    def quantile(self, q: float) -> float:
        """Approximate q-quantile (bins treated as uniform)."""
        order = np.argsort(self.low)
        p = self._p[order]
        cum = np.cumsum(p)
        i = min(int(np.searchsorted(cum, q)), len(p) - 1)
        lo, hi = self.low[order[i]], self.high[order[i]]
        prev = cum[i - 1] if i else 0.0
        frac = (q - prev) / p[i] if p[i] > 0 else 0.0
        return float(lo + (hi - lo) * min(max(frac, 0.0), 1.0))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """`n` lengths as int64."""
        if self.kind == "fixed":
            return np.full(n, self.low[0], dtype=np.int64)
        lo = np.asarray(self.low, dtype=np.int64)
        hi = np.asarray(self.high, dtype=np.int64)
        b = rng.choice(len(lo), size=n, p=self._p) if len(lo) > 1 else np.zeros(n, dtype=np.int64)
        return rng.integers(lo[b], hi[b] + 1, dtype=np.int64)


def _read_hist(path: Path, label: str) -> LengthDist:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise InputError(field="length histogram", value=str(path), allowed="a readable CSV file",
                         hint=str(exc)) from None
    return hist_rows(rows, label=label, field="length histogram", value=str(path))


def hist_rows(rows: list[dict[str, str]], *, label: str, field: str, value: str | None = None) -> LengthDist:
    """A histogram from CSV rows with header `length,weight` (one length a row) or `low,high,weight` (a bin a row):
    a file's (`hist:`) or an upload's (`bins_spec`); InputError naming `field` on a malformed row."""
    low: list[int] = []
    high: list[int] = []
    weight: list[float] = []
    try:
        for r in rows:
            if "length" in r:
                low.append(int(r["length"]))
                high.append(int(r["length"]))
            else:
                low.append(int(r["low"]))
                high.append(int(r["high"]))
            weight.append(float(r["weight"]))
    except (KeyError, TypeError, ValueError):
        raise InputError(field=field, value=value,
                         allowed="CSV with header length,weight or low,high,weight and numeric rows") from None
    return LengthDist(kind="hist", low=tuple(low), high=tuple(high), weight=tuple(weight), label=label)


def _inline_bins(arg: str, label: str, field: str, allowed: str) -> LengthDist:
    """`LO-HI=W,N=W,...` as a histogram (ValueError on a malformed number)."""
    items = [i.strip() for i in arg.split(",") if i.strip()]
    if not items or len(items) > MAX_BINS:
        raise InputError(field=field, value=label[:120], allowed=allowed,
                         hint=f"give 1 to {MAX_BINS} bins, e.g. bins:128-512=3,512-2048=1")
    low: list[int] = []
    high: list[int] = []
    weight: list[float] = []
    for item in items:
        span, eq, w = item.partition("=")
        lo_s, dash, hi_s = span.partition("-")
        lo = int(lo_s)
        low.append(lo)
        high.append(int(hi_s) if dash else lo)
        weight.append(float(w) if eq else 1.0)
    if not all(np.isfinite(weight)):
        raise ValueError("weight")
    return LengthDist(kind="hist", low=tuple(low), high=tuple(high), weight=tuple(weight), label=label)


def parse_length_dist(text: str | int, *, field: str = "length", files: bool = False) -> LengthDist:
    """A LengthDist from `512`, `fixed:512`, `uniform:128-2048`, `bins:128-512=3,512-2048=1` or (with
    `files=True`, the CLI only) `hist:lengths.csv`."""
    s = str(text).strip()
    allowed = _ALLOWED if files else _ALLOWED_NO_FILES
    kind, _, arg = s.partition(":")
    if kind == "hist" and not files:
        # one answer whatever the path: nothing is opened, statted or echoed (a client must not learn which
        # server paths exist, nor block a worker on a pipe or a device)
        raise InputError(field=field, value="hist:<path>", allowed=allowed,
                         hint="send the histogram's bins inline (bins:LO-HI=WEIGHT,...) or upload its CSV "
                              "on the serving form")
    try:
        if not arg:
            n = int(kind)
            if n < 1:
                raise InputError(field=field, value=text, allowed=allowed,
                                 hint="zero or negative lengths cannot be served")
            return LengthDist.fixed(n)
        if kind == "fixed":
            return parse_length_dist(arg, field=field)
        if kind == "uniform":
            lo_s, _, hi_s = arg.partition("-")
            lo, hi = int(lo_s), int(hi_s)
            if lo < 1 or hi < lo:
                raise InputError(field=field, value=text, allowed=allowed)
            return LengthDist.uniform(lo, hi)
        if kind == "bins":
            return _inline_bins(arg, s, field, allowed)
        if kind == "hist":
            return _read_hist(Path(arg), s)
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(field=field, value=s[:120], allowed=allowed) from None
    raise InputError(field=field, value=s[:120], allowed=allowed)


def bins_spec(rows: list[dict[str, str]], *, field: str = "length histogram") -> str:
    """An uploaded histogram CSV's rows (header `length,weight` or `low,high,weight`) as a `bins:` spec, checked
    as an inline histogram is (at most MAX_BINS bins, finite weights, lengths in range)."""
    dist = hist_rows(rows[: MAX_BINS + 1], label="upload", field=field)
    spec = "bins:" + ",".join(f"{lo}-{hi}={w:g}" if hi != lo else f"{lo}={w:g}"
                              for lo, hi, w in zip(dist.low, dist.high, dist.weight, strict=True))
    parse_length_dist(spec, field=field)
    return spec
