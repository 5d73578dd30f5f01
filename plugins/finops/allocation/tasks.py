"""Task bodies for the showback / anomaly / report DAGs (kept out of dags/ so DAG files only
wire tasks and stay cheap to parse). Each opens the warehouse itself and returns a small
JSON-able summary for XCom."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from finops.anomaly.settings import Source


def showback_periods(param: str | None, today: date) -> list[str]:
    """The periods asked for; with none asked, the default window plus every period reloaded
    since its last showback (a restated older month must reach chargeback and the reports)."""
    from finops.periods import resolve_periods

    periods = resolve_periods(param, today)
    if param and str(param).strip():
        return periods
    from finops.allocation.store import stale_periods
    from finops.warehouse import connect

    wh = connect()
    try:
        return sorted(set(periods) | set(stale_periods(wh)))
    finally:
        wh.close()


def previous_period(today: date) -> str:
    from finops.periods import period_of, shift

    return shift(period_of(today), -1)


def run_showback_task(period: str) -> dict[str, Any]:
    from finops.allocation.settings import allocation_rules
    from finops.allocation.store import run_showback
    from finops.warehouse import connect

    wh = connect()
    try:
        return run_showback(wh, period, allocation_rules()).as_dict()
    finally:
        wh.close()


def run_anomalies_task(
    send_alerts: bool = True, lookback_days: int | None = None, source: Source | None = None
) -> dict[str, Any]:
    from dataclasses import asdict

    from finops.alerts.dedup import AlertLedger
    from finops.alerts.events import clear_sinks
    from finops.alerts.routing import register_configured_sinks
    from finops.anomaly.settings import anomaly_settings
    from finops.anomaly.store import run_anomalies
    from finops.warehouse import connect

    settings = anomaly_settings()
    if lookback_days:
        settings = settings.model_copy(update={"lookback_days": int(lookback_days)})
    wh = connect()
    try:
        clear_sinks()
        if send_alerts:
            register_configured_sinks(ledger=AlertLedger(wh))
        res = run_anomalies(
            wh, settings, now=datetime.now(UTC).replace(tzinfo=None), deliver=send_alerts, source=source
        )
        if res.alert_errors:
            raise RuntimeError(
                f"{res.alert_errors} alert deliveries failed; anomalies stay pending and are "
                "retried on the next run"
            )
        return asdict(res)
    finally:
        clear_sinks()
        wh.close()


def run_report_task(
    period: str,
    cost_view: str,
    send_email: bool,
    teams: list[str] | None = None,
    resend: bool = False,
    run_id: str | None = None,
) -> dict[str, Any]:
    from finops.alerts.dedup import AlertLedger
    from finops.allocation.report import build_reports, email_reports, save_reports
    from finops.config import get_config
    from finops.warehouse import connect

    wh = connect()
    try:
        reports = build_reports(wh, period, cost_view, teams or None)
        paths = save_reports(reports, prune=not teams)  # all teams: a restated month's old ones go
        # the ledger (alert_state) makes a retry or re-run send each unchanged report once per route, and
        # a retry of a "Send again" run repeat only what that run has not re-sent yet
        sent = (
            email_reports(reports, get_config().alerts, AlertLedger(wh), resend=resend, run_id=run_id)
            if send_email
            else {}
        )
    finally:
        wh.close()
    return {
        "period": period,
        "teams": [r.team for r in reports],
        "files": [str(p) for p in paths],
        "emailed": sent,
    }
