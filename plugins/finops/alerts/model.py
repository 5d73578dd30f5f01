"""What an alert is: plain data every producer builds and every sink reads. Kept apart from
`events.emit` (which starts the configured routes) and `routing` (which builds them), so the
sinks and the routes import the event without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["info", "warning", "critical"]


@dataclass(frozen=True)
class AlertEvent:
    kind: str  # e.g. "validation_failed", "policy_notice", "anomaly"
    title: str
    severity: Severity = "warning"
    team: str | None = None  # routing key; None -> default route
    summary: str = ""
    facts: dict[str, Any] = field(default_factory=dict)  # name -> value, shown as a table
    dedup_key: str | None = None  # same key -> update, not a new alert
    links: dict[str, str] = field(default_factory=dict)
