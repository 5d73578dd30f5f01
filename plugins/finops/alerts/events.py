"""The one alert hook. Producers build an AlertEvent and call `emit()`; they never talk to
Slack or SMTP themselves. Sinks are registered callables (the logging sink is built in;
Slack / email sinks are added by finops.alerts.routing from the configured routes).

Fields are plain data: user-controlled strings (tag values, resource names) travel as
values and are escaped by each sink for its own medium, never pre-formatted here.

The event type (finops.alerts.model) and the sink list (finops.alerts.sinks) live below this
module and routing, and are re-exported here for producers.
"""

from __future__ import annotations

import logging

from finops.alerts.model import AlertEvent, Severity
from finops.alerts.sinks import (
    _SINKS,
    Sink,
    clear_sinks,
    is_registered,
    register_sink,
    registered,
    unregister_sink,
)

__all__ = [
    "_SINKS",
    "AlertEvent",
    "Severity",
    "Sink",
    "clear_sinks",
    "emit",
    "is_registered",
    "register_sink",
    "unregister_sink",
]

log = logging.getLogger("finops.alerts")


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
    for sink in registered():
        try:
            sink(event)
        except Exception as e:  # noqa: BLE001 - one broken sink must not stop the others
            log.error("alert sink %r failed: %s", sink, e)
            errors.append(e)
    return errors
