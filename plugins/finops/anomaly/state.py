"""Anomaly lifecycle (pure): a detected run of anomalous days becomes ONE anomaly with a
stable id (monitor + first day); later runs of the detector update it instead of opening a
new one, so it alerts once. An anomaly closes when its monitor has been quiet for longer
than the gap allowance."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any


def anomaly_id(monitor_type: str, monitor_key: str, cost_view: str, currency: str, start_day: date) -> str:
    raw = "\x1f".join([monitor_type, monitor_key, cost_view, currency, start_day.isoformat()])
    return "anm-" + hashlib.sha256(raw.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Event:
    """A run of anomalous days for one monitor series, as the detector sees it now."""

    monitor_type: str
    monitor_key: str
    cost_view: str
    currency: str
    start_day: date
    last_day: date
    peak_day: date
    actual: Decimal  # on the peak day
    expected: Decimal  # on the peak day
    total_impact: Decimal  # sum over the run of (actual - expected)
    pct: float
    score: float

    @property
    def delta(self) -> Decimal:
        return self.actual - self.expected


@dataclass(frozen=True)
class Anomaly:
    anomaly_id: str
    monitor_type: str
    monitor_key: str
    cost_view: str
    currency: str
    status: str  # open | closed
    start_day: date
    last_day: date
    peak_day: date
    actual: Decimal
    expected: Decimal
    delta: Decimal
    total_impact: Decimal
    pct: float
    score: float
    severity: str
    first_detected_at: datetime
    updated_at: datetime
    alerted_at: datetime | None = None
    contributors: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Plan:
    new: list[Anomaly] = field(default_factory=list)
    updated: list[Anomaly] = field(default_factory=list)
    closed: list[Anomaly] = field(default_factory=list)


def severity(delta: Decimal, pct: float, abs_floor: float) -> str:
    """Critical when the $ change is ten floors either way (an outage of a large service is as
    urgent as a spike), or spend tripled."""
    return "critical" if abs(float(delta)) >= 10 * abs_floor or pct >= 2.0 else "warning"


def reconcile(
    existing: list[Anomaly],
    events: list[Event],
    data_end: date,
    now: datetime,
    abs_floor: float = 50.0,
    gap_days: int = 2,
) -> Plan:
    """Match events to stored anomalies of the same series: same start day or touching the
    stored run within `gap_days` -> update (same id); otherwise new. Open anomalies with no
    event and quiet for more than gap_days before data_end -> closed."""
    plan = Plan()
    by_series: dict[tuple, list[Anomaly]] = {}
    for a in existing:
        by_series.setdefault((a.monitor_type, a.monitor_key, a.cost_view, a.currency), []).append(a)
    touched: set[str] = set()
    for ev in sorted(events, key=lambda e: (e.monitor_type, e.monitor_key, e.start_day)):
        series = (ev.monitor_type, ev.monitor_key, ev.cost_view, ev.currency)
        match = None
        for a in by_series.get(series, []):
            if a.start_day == ev.start_day or (
                ev.start_day <= a.last_day + timedelta(days=gap_days + 1) and ev.last_day >= a.start_day
            ):
                match = a
                break
        if match is None:
            new = Anomaly(
                anomaly_id=anomaly_id(*series[:2], ev.cost_view, ev.currency, ev.start_day),
                monitor_type=ev.monitor_type,
                monitor_key=ev.monitor_key,
                cost_view=ev.cost_view,
                currency=ev.currency,
                status="open",
                start_day=ev.start_day,
                last_day=ev.last_day,
                peak_day=ev.peak_day,
                actual=ev.actual,
                expected=ev.expected,
                delta=ev.delta,
                total_impact=ev.total_impact,
                pct=ev.pct,
                score=ev.score,
                severity=severity(ev.delta, ev.pct, abs_floor),
                first_detected_at=now,
                updated_at=now,
            )
            plan.new.append(new)
            by_series.setdefault(series, []).append(new)
            touched.add(new.anomaly_id)
            continue
        touched.add(match.anomaly_id)
        peak_is_new = ev.delta > match.delta
        upd = replace(
            match,
            status="open",
            start_day=min(match.start_day, ev.start_day),
            last_day=max(match.last_day, ev.last_day),
            peak_day=ev.peak_day if peak_is_new else match.peak_day,
            actual=ev.actual if peak_is_new else match.actual,
            expected=ev.expected if peak_is_new else match.expected,
            delta=ev.delta if peak_is_new else match.delta,
            total_impact=max(match.total_impact, ev.total_impact),
            pct=max(match.pct, ev.pct),
            score=max(match.score, ev.score),
            severity=max(
                match.severity, severity(ev.delta, ev.pct, abs_floor), key=["warning", "critical"].index
            ),
            updated_at=now,
        )
        if upd != match:
            plan.updated.append(upd)
    quiet_before = data_end - timedelta(days=gap_days)
    for a in existing:
        if a.status == "open" and a.anomaly_id not in touched and a.last_day < quiet_before:
            plan.closed.append(replace(a, status="closed", updated_at=now))
    return plan
