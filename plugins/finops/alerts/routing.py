"""Routes from finops.yaml `alerts:` -> sinks. An event goes to every route whose team is
the event's team, plus the catch-all routes (team "*"); when none match, to default_route.
Each route may name a Slack connection (webhook, or API + channel) and / or an SMTP
connection with recipients. With a ledger, a dedup_key is delivered once per channel (claimed
before it is sent: see finops.alerts.dedup)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from finops.alerts.dedup import AlertLedger
from finops.alerts.model import AlertEvent
from finops.alerts.sinks import is_registered, register_sink, unregister_sink
from finops.config import AlertRoute, AlertsConfig

log = logging.getLogger(__name__)


def routes_for(team: str | None, alerts: AlertsConfig) -> list[AlertRoute]:
    hits = [r for r in alerts.routes if r.team == "*" or (team is not None and r.team == team)]
    if not hits and alerts.default_route is not None:
        hits = [alerts.default_route]
    return hits


def email_channel(conn_id: str, to: list[str]) -> str:
    """The ledger's name for one e-mail route (the same recipients in any order are one channel)."""
    return f"email:{conn_id}:{','.join(sorted(to))}"


def _deliveries(route: AlertRoute) -> list[tuple[str, Callable[[AlertEvent], None]]]:
    from finops.alerts.email import send_alert_email
    from finops.alerts.slack import send_slack

    out: list[tuple[str, Callable[[AlertEvent], None]]] = []
    if route.slack_conn_id:
        s_conn, chan = route.slack_conn_id, route.slack_channel
        out.append((f"slack:{s_conn}:{chan or ''}", lambda e: send_slack(e, s_conn, chan)))
    if route.email_conn_id and route.email_to:
        m_conn, to = route.email_conn_id, list(route.email_to)
        out.append((email_channel(m_conn, to), lambda e: send_alert_email(e, m_conn, to)))
    return out


def make_sink(alerts: AlertsConfig, ledger: AlertLedger | None = None) -> Callable[[AlertEvent], None]:
    """One sink delivering to every matching route; it raises if any delivery failed (after
    trying them all), so emit() reports it and the caller can retry later."""

    def sink(event: AlertEvent) -> None:
        errors: list[str] = []
        seen: set[str] = set()
        for route in routes_for(event.team, alerts):
            for channel, deliver in _deliveries(route):
                if channel in seen:
                    continue
                seen.add(channel)
                try:
                    if ledger and event.dedup_key:
                        if not ledger.deliver_once(event.dedup_key, channel, partial(deliver, event)):
                            log.info("alert %s already delivered to %s", event.dedup_key, channel)
                    else:
                        deliver(event)
                except Exception as e:  # noqa: BLE001 - try the other channels, then report
                    errors.append(f"{channel}: {e}")
        if errors:
            raise RuntimeError("; ".join(errors))

    sink.__name__ = "finops_routes_sink"
    return sink


_REGISTERED: dict[str, Callable[[AlertEvent], None]] = {}


def register_configured_sinks(alerts: AlertsConfig | None = None, ledger: AlertLedger | None = None) -> None:
    """Register the routing sink once per process (re-registering replaces the ledger)."""
    if alerts is None:
        from finops.config import get_config

        alerts = get_config().alerts
    old = _REGISTERED.pop("routes", None)
    if old is not None:
        unregister_sink(old)
    sink = make_sink(alerts, ledger)
    _REGISTERED["routes"] = sink
    register_sink(sink)


def ensure_configured_sinks() -> None:
    """For producers outside the anomaly DAG (validation failures, policy notices, the
    task-failure callback): register the configured routes once per process, without a delivery
    ledger. Registered means still among the sinks: the anomaly task clears the sinks when it
    ends (its ledger's warehouse is closed), and a task_failed alert emitted after it must
    still reach the routes, not the log alone."""
    sink = _REGISTERED.get("routes")
    if sink is None or not is_registered(sink):
        register_configured_sinks()
