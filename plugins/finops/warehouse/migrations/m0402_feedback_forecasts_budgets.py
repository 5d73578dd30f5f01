"""People's feedback on anomalies, month-end forecasts, and budget state.

anomaly_feedback  every label anyone gave an anomaly (who, when, label, note, snooze end):
                  append-only, so the history and the precision people report are kept;
cost_forecasts    the month-end forecast per (period, dimension, key, currency, cost view),
                  replaced on each run (finops.forecast.store);
budget_status     each budget's actual, forecast and intervals for a month (finops.budgets);
budget_alerts     each threshold a budget crossed in a month, once per (budget, month, basis,
                  threshold): the row is written before the alert goes out and alerted_at
                  after, so re-runs never alert a threshold twice and a failed delivery is retried.
"""

from __future__ import annotations

VERSION = 402
DESCRIPTION = "anomaly_feedback, cost_forecasts, budget_status, budget_alerts"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    bands = ", ".join(f"{c} {money}" for c in ("lo80", "hi80", "lo95", "hi95"))
    return [
        f"""CREATE TABLE IF NOT EXISTS anomaly_feedback (
            feedback_id {text} NOT NULL PRIMARY KEY,
            anomaly_id {text} NOT NULL,
            monitor_type {text} NOT NULL,
            monitor_key {text} NOT NULL,
            label {text} NOT NULL,
            note {text},
            snooze_until DATE,
            created_by {text} NOT NULL,
            created_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS anomaly_feedback_anomaly ON anomaly_feedback (anomaly_id)",
        "CREATE INDEX IF NOT EXISTS anomaly_feedback_monitor ON anomaly_feedback (monitor_type, monitor_key)",
        f"""CREATE TABLE IF NOT EXISTS cost_forecasts (
            billing_period {text} NOT NULL,
            dimension {text} NOT NULL,
            series_key {text} NOT NULL,
            currency {text} NOT NULL,
            cost_view {text} NOT NULL,
            as_of DATE NOT NULL,
            days_left INTEGER NOT NULL,
            to_date {money} NOT NULL,
            forecast {money} NOT NULL,
            {bands},
            replays INTEGER NOT NULL,
            computed_at TIMESTAMP NOT NULL,
            PRIMARY KEY (billing_period, dimension, series_key, currency, cost_view)
        )""",
        f"""CREATE TABLE IF NOT EXISTS budget_status (
            budget {text} NOT NULL,
            billing_period {text} NOT NULL,
            scope {text} NOT NULL,
            scope_value {text} NOT NULL,
            kind {text} NOT NULL,
            team {text},
            currency {text} NOT NULL,
            amount {money} NOT NULL,
            actual {money} NOT NULL,
            forecast {money} NOT NULL,
            {bands},
            as_of DATE,
            days_left INTEGER NOT NULL,
            computed_at TIMESTAMP NOT NULL,
            PRIMARY KEY (budget, billing_period)
        )""",
        f"""CREATE TABLE IF NOT EXISTS budget_alerts (
            budget {text} NOT NULL,
            billing_period {text} NOT NULL,
            basis {text} NOT NULL,
            threshold_pct INTEGER NOT NULL,
            currency {text} NOT NULL,
            amount {money} NOT NULL,
            observed {money} NOT NULL,
            first_crossed_at TIMESTAMP NOT NULL,
            alerted_at TIMESTAMP,
            PRIMARY KEY (budget, billing_period, basis, threshold_pct)
        )""",
    ]
