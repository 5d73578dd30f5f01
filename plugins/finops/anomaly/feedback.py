"""People's verdicts on anomalies: acknowledge (a real anomaly), mark as expected (not one),
or snooze the monitor key until a date. Every label is kept (anomaly_feedback, append-only:
who, when, label, note); the latest label of an anomaly is its verdict.

What a label changes:
  expected      that anomaly never alerts (if its alert had not gone out yet) and counts as a
                false alert in the precision people report;
  acknowledged  counts as a true alert; changes no delivery;
  snoozed       no anomaly of that monitor key (monitor type + key) that starts on or before
                `snooze_until` alerts; says nothing about precision.
Precision people report = acknowledged / (acknowledged + expected), over anomalies whose
latest verdict is one of the two.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from finops.exceptions import FinopsError

if TYPE_CHECKING:
    from finops.anomaly.state import Anomaly
    from finops.warehouse.base import Warehouse

Label = Literal["acknowledged", "expected", "snoozed"]
LABELS: tuple[Label, ...] = ("acknowledged", "expected", "snoozed")
VERDICTS = {"acknowledged": True, "expected": False}
MAX_SNOOZE_DAYS = 366
NOTE_MAX = 2000


class FeedbackError(FinopsError, ValueError):
    """A label that cannot be recorded (unknown anomaly, bad label or date); the message says why."""


@dataclass(frozen=True)
class Feedback:
    feedback_id: str
    anomaly_id: str
    monitor_type: str
    monitor_key: str
    label: Label
    note: str | None
    snooze_until: date | None
    created_by: str
    created_at: datetime


def _is_label(value: str) -> TypeGuard[Label]:
    return value in LABELS


def validate(label: str, snooze_until: date | None, note: str | None, today: date) -> Label:
    """The label, checked (the caller stores the returned Literal); raises FeedbackError."""
    if not _is_label(label):
        raise FeedbackError(f"label must be one of {', '.join(LABELS)}, not {label!r}")
    if label == "snoozed":
        if snooze_until is None:
            raise FeedbackError("snooze_until is required to snooze (the last day alerts stay muted)")
        if not today <= snooze_until <= today + timedelta(days=MAX_SNOOZE_DAYS):
            raise FeedbackError(
                f"snooze_until must be between today ({today}) and {MAX_SNOOZE_DAYS} days ahead"
            )
    elif snooze_until is not None:
        raise FeedbackError("snooze_until only goes with the label 'snoozed'")
    if note is not None and len(note) > NOTE_MAX:
        raise FeedbackError(f"note is longer than {NOTE_MAX} characters")
    return label


def suppression(a: Anomaly, latest_label: str | None, snoozes: Iterable[date]) -> str | None:
    """Why `a` must not alert, or None (pure)."""
    if latest_label == "expected":
        return "marked expected"
    until = max((d for d in snoozes if d >= a.start_day), default=None)
    return f"monitor snoozed until {until.isoformat()}" if until else None


def record(
    wh: Warehouse,
    anomaly_id: str,
    label: str,
    user: str,
    *,
    note: str | None = None,
    snooze_until: date | None = None,
    now: datetime | None = None,
) -> Feedback:
    """Validate and append one label; the anomaly must exist."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    note = (note or "").strip() or None
    checked = validate(label, snooze_until, note, now.date())
    rows = wh.query("SELECT monitor_type, monitor_key FROM anomalies WHERE anomaly_id = ?", [anomaly_id])
    if not rows:
        raise FeedbackError(f"no anomaly with id {anomaly_id!r}")
    fb = Feedback(
        f"fb-{uuid.uuid4().hex}",
        anomaly_id,
        rows[0][0],
        rows[0][1],
        checked,
        note,
        snooze_until,
        user,
        now,
    )
    wh.execute(
        "INSERT INTO anomaly_feedback (feedback_id, anomaly_id, monitor_type, monitor_key, label, note, "
        "snooze_until, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            fb.feedback_id,
            fb.anomaly_id,
            fb.monitor_type,
            fb.monitor_key,
            fb.label,
            fb.note,
            fb.snooze_until,
            fb.created_by,
            fb.created_at,
        ],
    )
    return fb


def latest_labels(wh: Warehouse, anomaly_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """anomaly_id -> its latest label row (label, note, snooze_until, created_by, created_at)."""
    if not wh.table_exists("anomaly_feedback"):
        return {}
    ids = list(anomaly_ids) if anomaly_ids is not None else None
    if ids == []:
        return {}
    where, params = "", []
    if ids is not None:
        where, params = f" WHERE anomaly_id IN ({', '.join('?' for _ in ids)})", ids
    out: dict[str, dict[str, Any]] = {}
    for aid, label, note, until, by, at in wh.query(
        "SELECT anomaly_id, label, note, snooze_until, created_by, created_at FROM anomaly_feedback"
        f"{where} ORDER BY created_at, feedback_id",
        params,
    ):
        out[aid] = {"label": label, "note": note, "snooze_until": until, "created_by": by, "created_at": at}
    return out


def suppressed(wh: Warehouse, anomalies: list[Anomaly]) -> dict[str, str]:
    """anomaly_id -> reason, for the anomalies people muted."""
    if not anomalies or not wh.table_exists("anomaly_feedback"):
        return {}
    labels = latest_labels(wh, [a.anomaly_id for a in anomalies])
    snoozes: dict[tuple[str, str], list[date]] = {}
    for mt, mk, until in wh.query(
        "SELECT monitor_type, monitor_key, snooze_until FROM anomaly_feedback "
        "WHERE label = 'snoozed' AND snooze_until IS NOT NULL"
    ):
        snoozes.setdefault((mt, mk), []).append(
            until if isinstance(until, date) else date.fromisoformat(str(until))
        )
    out = {}
    for a in anomalies:
        why = suppression(
            a, (labels.get(a.anomaly_id) or {}).get("label"), snoozes.get((a.monitor_type, a.monitor_key), [])
        )
        if why:
            out[a.anomaly_id] = why
    return out


def precision(labels: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The precision people report, from latest labels (pure)."""
    verdicts = [VERDICTS[v["label"]] for v in labels.values() if v["label"] in VERDICTS]
    true = sum(verdicts)
    return {
        "labelled": len(verdicts),
        "true_alerts": true,
        "false_alerts": len(verdicts) - true,
        "precision": round(true / len(verdicts), 4) if verdicts else None,
    }
