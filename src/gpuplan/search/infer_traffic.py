"""Traffic over a day (or a week): the request rate per hour a fleet serves, and its replicas hour by hour.

A curve is read from CSV text with header `hour,qps` (one day: hours 0-23, each once) or `day,hour,qps` (one
week: days mon..sun or 0-6 with 0 = Monday, as Python's `date.weekday()`, each day's 24 hours once), or from
rows a client sends inline (the API). Every bad row is refused with its line number, the field, the allowed
values and a fix.

The schedule (`schedule`) keeps the part, layout, engine and weight format of the fleet planned at the peak hour
and sizes each hour on its own:
* replicas_h = max(minimum, ceil(qps_h x (1 + load_headroom) / L), ceil(qps_h / capacity)), where
  L = qps_peak x (1 + load_headroom) / replicas_peak is the per-replica rate the peak fleet was verified at by
  simulation (infer_finalists.verify_candidates) and capacity is the replica's SLO-bound rate (infer_capacity):
  no hour loads a replica more than the verified peak does, nor past 100% utilization;
* a replica takes `scale_up_s` to serve (instance start + weights read + engine start, `scale_up`): it is
  started that many whole hours before the hour that needs it, so replicas_h is the largest need of the hours
  h .. h + lead (the curve repeats: the last hour looks ahead into the first);
* instances_h hosts replicas_h replicas on the peak fleet's instance type (`units_for`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuplan.errors import InputError

__all__ = ["DAYS", "HOURS_PER_MONTH", "MAX_TRAFFIC_BYTES", "ScaleUp", "ScheduleHour", "TrafficCurve",
           "TrafficHour", "lead_hours", "read_traffic", "schedule", "scale_up", "traffic_from_rows", "units_for"]

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_NAMES = {d: i for i, d in enumerate(DAYS)} | {
    n: i for i, n in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
HOURS_PER_MONTH = 730.0  # 8760 h / 12: the month every monthly price in the catalog is turned into hours with
MAX_QPS = 1e6  # as a request's qps (service.requests.InferPlanRequest)
MAX_TRAFFIC_BYTES = 64 * 1024  # 168 rows of day,hour,qps with comments to spare
FIX = ("a header `hour,qps` (hours 0-23, each once) or `day,hour,qps` (days mon..sun or 0-6, each day's "
       "hours 0-23 once) and one row an hour, e.g. `9,12.5`")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficHour:
    day: int | None  # 0 = Monday; None in a one-day curve
    hour: int
    qps: float

    def to_json(self) -> dict[str, object]:
        return {**({"day": DAYS[self.day]} if self.day is not None else {}), "hour": self.hour, "qps": self.qps}


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficCurve:
    """One day (24 rows) or one week (168 rows) of request rates, in time order; it repeats over a month."""

    rows: tuple[TrafficHour, ...]
    label: str

    @property
    def weekly(self) -> bool:
        return self.rows[0].day is not None

    @property
    def peak_qps(self) -> float:
        return max(r.qps for r in self.rows)

    @property
    def hours_per_row(self) -> float:
        """How many hours of a 730-hour month each row stands for (730/24 for a day, 730/168 for a week)."""
        return HOURS_PER_MONTH / len(self.rows)

    @property
    def requests_per_month(self) -> float:
        return sum(r.qps for r in self.rows) * 3600.0 * self.hours_per_row


def _bad(line: int, field: str, value: object, allowed: str, fix: str) -> InputError:
    return InputError(field=f"traffic line {line}: {field}", value=value, allowed=allowed, hint=fix)


def _hour(text: object, line: int) -> int:
    s = str(text).strip()
    if not s.isdigit() or not 0 <= int(s) <= 23:
        raise _bad(line, "hour", text, "a whole hour from 0 to 23", "write the hour the rate starts, e.g. 0 for "
                   "00:00-01:00 and 23 for 23:00-24:00")
    return int(s)


def _day(text: object, line: int) -> int:
    s = str(text).strip().lower()
    if s.isdigit() and 0 <= int(s) <= 6:
        return int(s)
    if s in _DAY_NAMES:
        return _DAY_NAMES[s]
    raise _bad(line, "day", text, "mon, tue, wed, thu, fri, sat, sun or 0-6 (0 = Monday)",
               "name the day, e.g. mon, or drop the day column for a one-day curve")


def _qps(text: object, line: int) -> float:
    try:
        v = float(str(text).strip()) if not isinstance(text, (int, float)) or isinstance(text, bool) else float(text)
    except ValueError:
        v = math.nan
    if isinstance(text, bool) or not (math.isfinite(v) and 0.0 <= v <= MAX_QPS):
        raise _bad(line, "qps", text, f"a number of requests per second from 0 to {MAX_QPS:g}",
                   "write the mean rate of that hour, e.g. 12.5 (0 for an hour without traffic)")
    return v


def _curve(items: Iterable[tuple[int, Mapping[str, object]]], weekly: bool, label: str) -> TrafficCurve:
    seen: dict[tuple[int | None, int], int] = {}
    rows: list[TrafficHour] = []
    for line, item in items:
        day = _day(item.get("day"), line) if weekly else None
        hour = _hour(item.get("hour"), line)
        qps = _qps(item.get("qps"), line)
        key = (day, hour)
        if key in seen:
            when = f"{DAYS[day]} " if day is not None else ""
            raise _bad(line, "hour", f"{when}{hour}", "each hour once",
                       f"line {seen[key]} gives the same hour already; keep one of the two rows")
        seen[key] = line
        rows.append(TrafficHour(day=day, hour=hour, qps=qps))
    days: Sequence[int | None] = range(7) if weekly else (None,)
    for d in days:
        for h in range(24):
            if (d, h) not in seen:
                when = f"{DAYS[d]} hour {h}" if d is not None else f"hour {h}"
                raise InputError(field="traffic", value=f"{label}: no row for {when}",
                                 allowed=f"every hour of the {'week' if weekly else 'day'} once "
                                         f"({168 if weekly else 24} rows)",
                                 hint=f"add a row for {when} (0 if it has no traffic)")
    rows.sort(key=lambda r: ((r.day or 0), r.hour))
    if not max(r.qps for r in rows) > 0:
        raise InputError(field="traffic", value=f"{label}: every hour at 0 qps",
                         allowed="at least one hour with a positive rate", hint="zero loads need no hardware")
    return TrafficCurve(rows=tuple(rows), label=label)


def read_traffic(text: str, *, label: str = "traffic.csv") -> TrafficCurve:
    """A curve from CSV text (a file's or an upload's); InputError on the first bad line."""
    if len(text.encode("utf-8", "replace")) > MAX_TRAFFIC_BYTES:
        raise InputError(field="traffic", value=label, allowed=f"at most {MAX_TRAFFIC_BYTES} bytes",
                         hint="one row an hour: 24 rows for a day, 168 for a week")
    lines = [(n, s) for n, s in enumerate(text.lstrip("\ufeff").splitlines(), start=1)
             if s.strip() and not s.lstrip().startswith("#")]
    if not lines:
        raise InputError(field="traffic", value=f"{label}: empty", allowed=FIX, hint="give the header and 24 rows")
    head_line, head_text = lines[0]
    header = [c.strip().lower() for c in next(csv.reader([head_text]))]
    if header not in (["hour", "qps"], ["day", "hour", "qps"]):
        raise _bad(head_line, "header", head_text.strip()[:80], "`hour,qps` or `day,hour,qps`", f"use {FIX}")
    items: list[tuple[int, Mapping[str, object]]] = []
    for n, s in lines[1:]:
        cells = [c.strip() for c in next(csv.reader([s]))]
        if len(cells) != len(header):
            raise _bad(n, "row", s.strip()[:80], f"{len(header)} values ({','.join(header)})", f"use {FIX}")
        items.append((n, dict(zip(header, cells, strict=True))))
    return _curve(items, weekly=header[0] == "day", label=label)


def traffic_from_rows(rows: Sequence[Mapping[str, object]], *, label: str = "traffic") -> TrafficCurve:
    """A curve from rows sent inline ({hour, qps} or {day, hour, qps}, all with a day or none); line n is row n."""
    if not rows:
        raise InputError(field="traffic", value="[]", allowed="24 rows {hour, qps} or 168 rows {day, hour, qps}",
                         hint="leave traffic out to plan for one rate")
    weekly = rows[0].get("day") is not None
    for n, r in enumerate(rows, start=1):
        if (r.get("day") is not None) != weekly:
            raise _bad(n, "day", r.get("day"), "a day on every row or on none",
                       "give every row its day (a week) or none (a day)")
    return _curve(enumerate(rows, start=1), weekly=weekly, label=label)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleUp:
    """How long a new replica takes to serve: instance start + weights read + engine start, seconds."""

    instance_start_s: float
    weights_read_s: float
    engine_start_s: float

    @property
    def total_s(self) -> float:
        return self.instance_start_s + self.weights_read_s + self.engine_start_s

    def to_json(self) -> dict[str, float | int]:
        return {"total_s": self.total_s, "instance_start_s": self.instance_start_s,
                "weights_read_s": self.weights_read_s, "engine_start_s": self.engine_start_s,
                "lead_hours": lead_hours(self.total_s)}


def scale_up(weights_bytes: float, *, instance_start_s: float, read_gb_per_s: float,
             engine_start_s: float) -> ScaleUp:
    """The scale-up time of one replica: weights_bytes / the storage read rate (a replica reads its whole
    weights once; infer_plan.yaml `scale_up_read_gb_per_s`) plus the instance and engine start terms."""
    if not read_gb_per_s > 0:
        raise InputError(field="term", value=f"scale_up_read_gb_per_s={read_gb_per_s}", allowed="a positive GB/s")
    return ScaleUp(instance_start_s=instance_start_s, weights_read_s=weights_bytes / (read_gb_per_s * 1e9),
                   engine_start_s=engine_start_s)


def lead_hours(scale_up_s: float) -> int:
    """Whole hours a replica is started ahead of the hour that needs it (billing counted by the hour)."""
    return math.ceil(scale_up_s / 3600.0 - 1e-9)


def units_for(replicas: int, *, devices_per_replica: int, devices_per_unit: int) -> int:
    """Instances (units of rent) that host `replicas` replicas: several replicas share an instance when it holds
    more devices than one replica, else each replica takes ceil(devices / per instance) instances
    (infer_fleet's placement)."""
    if devices_per_unit >= devices_per_replica:
        return math.ceil(replicas / (devices_per_unit // devices_per_replica))
    return replicas * math.ceil(devices_per_replica / devices_per_unit)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleHour:
    day: int | None
    hour: int
    qps: float
    need: int  # replicas this hour's rate needs
    replicas: int  # replicas up this hour: the need of this and the next `lead` hours
    devices: int
    units: int  # instances

    def to_json(self) -> dict[str, object]:
        return {**({"day": DAYS[self.day]} if self.day is not None else {}), "hour": self.hour, "qps": self.qps,
                "replicas_needed": self.need, "replicas": self.replicas, "devices": self.devices,
                "instances": self.units}


def schedule(curve: TrafficCurve, *, peak_replicas: int, capacity_rps: float, headroom: float, min_replicas: int,
             lead: int, devices_per_replica: int, devices_per_unit: int) -> tuple[ScheduleHour, ...]:
    """Replicas per hour (module docstring): never above the verified peak's per-replica load, never below
    `min_replicas`, kept up `lead` hours ahead of a rise."""
    if min_replicas < 1:
        raise InputError(field="term", value=f"traffic_min_replicas={min_replicas}", allowed="a whole number >= 1",
                         hint="one replica stays up so the first request of a quiet hour is served")
    verified = curve.peak_qps * (1.0 + headroom) / peak_replicas  # requests/s per replica the peak sim met
    need = [max(min_replicas, math.ceil(r.qps * (1.0 + headroom) / verified - 1e-9),
                math.ceil(r.qps / capacity_rps - 1e-9)) for r in curve.rows]
    n = len(need)
    up = [max(need[(i + k) % n] for k in range(min(lead, n - 1) + 1)) for i in range(n)]
    return tuple(ScheduleHour(day=r.day, hour=r.hour, qps=r.qps, need=need[i], replicas=up[i],
                              devices=up[i] * devices_per_replica,
                              units=units_for(up[i], devices_per_replica=devices_per_replica,
                                              devices_per_unit=devices_per_unit))
                 for i, r in enumerate(curve.rows))
