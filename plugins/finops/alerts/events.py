"""The one alert hook. Producers build an AlertEvent and call `emit()`; they never talk to
Slack or SMTP themselves. Sinks are registered callables (the logging sink is built in;
Slack / email sinks are added by finops.alerts.delivery from the configured routes).

Fields are plain data: user-controlled strings (tag values, resource names) travel as
values and are escaped by each sink for its own medium, never pre-formatted here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

log = logging.getLogger("finops.alerts")

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


Sink = Callable[[AlertEvent], None]
_SINKS: list[Sink] = []


def register_sink(sink: Sink) -> None:
    if sink not in _SINKS:
        _SINKS.append(sink)


def unregister_sink(sink: Sink) -> None:
    if sink in _SINKS:
        _SINKS.remove(sink)


def clear_sinks() -> None:
    _SINKS.clear()


def is_registered(sink: Sink) -> bool:
    return sink in _SINKS


def _ensure_configured_routes() -> None:
    """First emit in a process registers the Slack / email routes from finops.yaml, so every
    producer (validation failures, policy notices, anomalies) shares one delivery path. A
    broken or missing config must never hide the alert: it still reaches the log."""
    try:
        from finops.alerts.routing import ensure_configured_sinks

        ensure_configured_sinks()
    except Exception as e:  # noqa: BLE001 - the log line below still carries the alert
        log.error("alert routes not registered (%s); alert goes to the log only", e)


def emit(event: AlertEvent) -> list[Exception]:
    """Log the event, then hand it to every sink. A failing sink never hides the alert from
    the others or from the log; its error is returned (and logged) for the caller to act on."""
    log.warning("ALERT [%s] %s: %s %s", event.severity, event.kind, event.title, event.facts)
    _ensure_configured_routes()
    errors: list[Exception] = []
    for sink in list(_SINKS):
        try:
            sink(event)
        except Exception as e:  # noqa: BLE001 - one broken sink must not stop the others
            log.error("alert sink %r failed: %s", sink, e)
            errors.append(e)
    return errors
