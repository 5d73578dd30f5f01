"""Edge: daily cost per monitor from the warehouse -> detector -> anomalies table -> alerts.

Idempotent: re-running over the same data updates the same anomaly rows (stable ids) and
sends nothing new; an anomaly whose alert could not be delivered stays pending
(alerted_at NULL) and is retried on the next run.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from finops.anomaly.contributors import contributors
from finops.anomaly.detect import Thresholds, detect
from finops.anomaly.series import build_matrix, to_events
from finops.anomaly.settings import AnomalySettings, Monitor, Source, source_of
from finops.anomaly.state import Anomaly, Event, reconcile

if TYPE_CHECKING:
    from finops.warehouse.base import Warehouse

log = logging.getLogger(__name__)
ZERO = Decimal(0)
_COST = {"billed": "billed_cost", "amortised": "effective_cost"}
_KEY_SQL = {
    "provider": "x_provider",
    "service": "x_provider || ' / ' || service_name",
    "account": "COALESCE(sub_account_id, billing_account_id)",
}


def _day(v: Any) -> date:
    return (
        v
        if isinstance(v, date) and not isinstance(v, datetime)
        else (v.date() if isinstance(v, datetime) else date.fromisoformat(str(v)[:10]))
    )


def data_end(wh: Warehouse, source: Source = "focus_costs") -> date | None:
    """The last day with cost in the source: a showback monitor's series ends where the
    showback does (a period not allocated yet is not a drop to zero)."""
    if source == "showback":
        r = wh.query("SELECT MAX(day) FROM showback_daily") if wh.table_exists("showback_daily") else []
    else:
        r = wh.query("SELECT MAX(charge_period_start) FROM focus_costs")
    return _day(r[0][0]) if r and r[0][0] is not None else None


def _tag_value(tags_text: Any, tag_key: str) -> str | None:
    from finops.allocation.engine import canonical_tags
    from finops.allocation.settings import allocation_rules

    tags = tags_text if isinstance(tags_text, dict) else json.loads(tags_text or "{}")
    return canonical_tags(
        {str(k): str(v) for k, v in tags.items() if v is not None}, allocation_rules().tag_keys
    ).get(tag_key)


def monitor_rows(wh: Warehouse, m: Monitor, view: str, start: date, end: date) -> list[tuple]:
    """(day, key, currency, cost) for one monitor over [start, end]."""
    hi = end + timedelta(days=1)
    if m.type == "team":
        return (
            [
                (_day(d), k, c, v)
                for d, k, c, v in wh.query(
                    "SELECT day, team, currency, SUM(cost) FROM showback_daily WHERE cost_view = ? AND day >= ? AND day < ? "
                    "GROUP BY 1, 2, 3",
                    [view, start, hi],
                )
            ]
            if wh.table_exists("showback_daily")
            else []
        )
    col = _COST[view]
    if m.type == "tag":
        acc: dict[tuple, Decimal] = defaultdict(lambda: ZERO)
        for d, tags, cur, v in wh.query(
            f"SELECT CAST(charge_period_start AS DATE), CAST(tags AS TEXT), billing_currency, SUM({col}) "
            "FROM focus_costs WHERE charge_period_start >= ? AND charge_period_start < ? GROUP BY 1, 2, 3",
            [start, hi],
        ):
            val = _tag_value(tags, m.tag_key or "")
            if val:
                acc[(_day(d), val, cur)] += Decimal(v or 0)
        return [(*k, v) for k, v in acc.items()]
    return [
        (_day(d), k, c, v)
        for d, k, c, v in wh.query(
            f"SELECT CAST(charge_period_start AS DATE), {_KEY_SQL[m.type]}, billing_currency, SUM({col}) "
            "FROM focus_costs WHERE charge_period_start >= ? AND charge_period_start < ? GROUP BY 1, 2, 3",
            [start, hi],
        )
        if k is not None
    ]


def _breakdown(wh: Warehouse, m: Monitor, ev: Event, view: str, days: list[date]) -> dict[str, Decimal]:
    """Cost by root-cause key (usage type / SKU / resource) over `days` for the event's series."""
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    marks = ", ".join("?" for _ in days)
    if m.type == "team":
        for prov, svc, v in wh.query(
            f"SELECT provider, service_name, SUM(cost) FROM showback_daily WHERE cost_view = ? AND team = ? "
            f"AND currency = ? AND day IN ({marks}) GROUP BY 1, 2",
            [view, ev.monitor_key, ev.currency, *days],
        ):
            out[f"{prov} / {svc}"] += Decimal(v or 0)
        return out
    col = _COST[view]
    key_sql = "COALESCE(x_usage_type, sku_id, service_name) || ' | ' || COALESCE(resource_id, '-')"
    where, params = "", []
    if m.type in _KEY_SQL:
        where, params = f" AND {_KEY_SQL[m.type]} = ?", [ev.monitor_key]
    rows = wh.query(
        f"SELECT {key_sql}, CAST(tags AS TEXT), SUM({col}) FROM focus_costs "
        f"WHERE CAST(charge_period_start AS DATE) IN ({marks}) AND billing_currency = ?{where} GROUP BY 1, 2",
        [*days, ev.currency, *params],
    )
    for k, tags, v in rows:
        if m.type == "tag" and _tag_value(tags, m.tag_key or "") != ev.monitor_key:
            continue
        out[k] += Decimal(v or 0)
    return out


def root_cause(wh: Warehouse, m: Monitor, ev: Event, view: str, top: int) -> list[dict[str, Any]]:
    base_days = [ev.peak_day - timedelta(days=7 * k) for k in range(1, 5)]
    actual = _breakdown(wh, m, ev, view, [ev.peak_day])
    base = _breakdown(wh, m, ev, view, base_days)
    expected = {k: v / len(base_days) for k, v in base.items()}
    return [c.as_dict() for c in contributors(actual, expected, top=top)]


def _load_open(wh: Warehouse) -> list[Anomaly]:
    cols = [f.name for f in Anomaly.__dataclass_fields__.values()]
    out = []
    for r in wh.query(f"SELECT {', '.join(cols)} FROM anomalies WHERE status = 'open'"):
        d = dict(zip(cols, r, strict=True))
        for k in ("start_day", "last_day", "peak_day"):
            d[k] = _day(d[k])
        d["contributors"] = (
            json.loads(d["contributors"]) if isinstance(d["contributors"], str) else (d["contributors"] or [])
        )
        d["pct"] = math.inf if d["pct"] is None else d["pct"]
        out.append(Anomaly(**d))
    return out


def _save(wh: Warehouse, anomalies: list[Anomaly]) -> None:
    if not anomalies:
        return
    import pyarrow as pa

    m, s, ts, dt, f = pa.decimal128(38, 10), pa.string(), pa.timestamp("us"), pa.date32(), pa.float64()
    schema = pa.schema(
        [
            ("anomaly_id", s),
            ("monitor_type", s),
            ("monitor_key", s),
            ("cost_view", s),
            ("currency", s),
            ("status", s),
            ("start_day", dt),
            ("last_day", dt),
            ("peak_day", dt),
            ("actual", m),
            ("expected", m),
            ("delta", m),
            ("total_impact", m),
            ("pct", f),
            ("score", f),
            ("severity", s),
            ("contributors", s),
            ("first_detected_at", ts),
            ("updated_at", ts),
            ("alerted_at", ts),
        ]
    )
    rows = []
    for a in anomalies:
        d = asdict(a)
        d["contributors"] = json.dumps(a.contributors)
        d["pct"] = None if not math.isfinite(a.pct) else a.pct
        d["score"] = None if not math.isfinite(a.score) else a.score
        rows.append(d)
    wh.upsert_arrow("anomalies", pa.Table.from_pylist(rows, schema=schema), keys=["anomaly_id"])


@dataclass
class AnomalyRun:
    data_end: str | None
    series: int = 0
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    alerted: list[str] = field(default_factory=list)
    alert_errors: int = 0
    suppressed: dict[str, str] = field(default_factory=dict)  # anomaly_id -> why people muted it


def run_anomalies(
    wh: Warehouse,
    settings: AnomalySettings,
    now: datetime | None = None,
    end: date | None = None,
    deliver: bool = True,
    source: Source | None = None,
) -> AnomalyRun:
    """Detect and store; with `deliver` False (a dry run) nothing is emitted and new anomalies
    stay pending (alerted_at NULL), so a later run with delivery on still alerts them once.
    emit() itself is not enough to hold back: it registers the configured routes on first use.

    `source`: only the monitors reading that source, and only their stored anomalies (closed,
    retried): the focus_costs and showback runs are separate DAGs and must not close or
    re-alert each other's. None: every monitor, up to the focus_costs data end."""
    from finops.alerts import emit
    from finops.anomaly.render import alert_event

    now = now or datetime.now(UTC).replace(tzinfo=None)
    end = end or data_end(wh, source or "focus_costs")
    result = AnomalyRun(end.isoformat() if end else None)
    if end is None:
        return result
    start = end - timedelta(days=settings.lookback_days - 1)
    view = settings.cost_view
    events: list[tuple[Monitor, Event]] = []
    for mon in settings.monitors:
        if source is not None and mon.source != source:
            continue
        mat = build_matrix(monitor_rows(wh, mon, view, start, end), start, end)
        result.series += len(mat.keys)
        if not mat.keys:
            continue
        floor, pct, z = settings.thresholds(mon)
        det = detect(mat.x, Thresholds(abs_floor=floor, pct=pct, z=z, drop_pct=settings.drop_pct_for(mon)))
        events += [
            (mon, e)
            for e in to_events(mat, det, mon.name, view, settings.alert_window_days, settings.gap_days)
        ]
    existing = [a for a in _load_open(wh) if source is None or source_of(a.monitor_type) == source]
    plan = reconcile(existing, [e for _, e in events], end, now, settings.abs_floor, settings.gap_days)
    mon_of = {m.name: m for m in settings.monitors}
    changed: dict[str, Anomaly] = {}
    for a in [*plan.new, *plan.updated]:
        owner = mon_of.get(a.monitor_type)
        ev = next(
            (
                e
                for _, e in events
                if e.monitor_type == a.monitor_type
                and e.monitor_key == a.monitor_key
                and e.peak_day == a.peak_day
            ),
            None,
        )
        if owner and ev:
            a = replace(a, contributors=root_cause(wh, owner, ev, view, settings.top_contributors))
        changed[a.anomaly_id] = a
    for a in plan.closed:
        changed[a.anomaly_id] = a
    # alert: every open anomaly not yet delivered (new ones, and earlier failures)
    pending = {a.anomaly_id: a for a in existing if a.alerted_at is None and a.status == "open"}
    pending.update({k: v for k, v in changed.items() if v.alerted_at is None and v.status == "open"})
    # marked expected / snoozed in the FinOps view: not sent (and not marked alerted: the label decides)
    from finops.anomaly.feedback import suppressed

    result.suppressed = suppressed(wh, list(pending.values()))
    for aid in result.suppressed:
        pending.pop(aid)
    for aid, a in sorted(pending.items()) if deliver else ():
        errors = emit(alert_event(a))
        if errors:
            result.alert_errors += len(errors)
            continue
        changed[aid] = replace(changed.get(aid, a), alerted_at=now)
        result.alerted.append(aid)
    _save(wh, list(changed.values()))
    result.new = [a.anomaly_id for a in plan.new]
    result.updated = [a.anomaly_id for a in plan.updated]
    result.closed = [a.anomaly_id for a in plan.closed]
    log.info(
        "anomalies up to %s: %d series, %d new, %d updated, %d closed, %d alerted",
        end,
        result.series,
        len(result.new),
        len(result.updated),
        len(result.closed),
        len(result.alerted),
    )
    return result
