"""Task bodies of finops_budgets (kept out of dags/ so the DAG file only wires). Each opens the
warehouse itself and returns a small JSON-able summary for XCom."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any


def run_forecast_task() -> dict[str, Any]:
    from finops.forecast.store import run_forecasts
    from finops.warehouse import connect

    wh = connect()
    try:
        return {view: run_forecasts(wh, view) for view in ("amortised", "billed")}
    finally:
        wh.close()


def run_budgets_task(send_alerts: bool = True) -> dict[str, Any]:
    from finops.alerts.dedup import AlertLedger
    from finops.alerts.events import clear_sinks
    from finops.alerts.routing import register_configured_sinks
    from finops.budgets.store import run_budgets
    from finops.config import get_config
    from finops.warehouse import connect

    wh = connect()
    try:
        clear_sinks()
        if send_alerts:
            register_configured_sinks(ledger=AlertLedger(wh))
        res = run_budgets(
            wh, get_config().budgets, now=datetime.now(UTC).replace(tzinfo=None), deliver=send_alerts
        )
        if res.alert_errors:
            raise RuntimeError(
                f"{res.alert_errors} budget alert deliveries failed; they stay pending and are "
                "retried on the next run"
            )
        return asdict(res)
    finally:
        clear_sinks()
        wh.close()
