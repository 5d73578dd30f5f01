"""The process's alert sinks: `events.emit` hands each event to every registered sink,
`routing` registers the configured Slack / email routes as one. Neither imports the other
to reach this list."""

from __future__ import annotations

from collections.abc import Callable

from finops.alerts.model import AlertEvent

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


def registered() -> list[Sink]:
    """A copy: a sink may unregister itself (or another) while an event is handed round."""
    return list(_SINKS)
