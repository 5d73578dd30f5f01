"""Showback / chargeback / anomaly tables.

showback_daily and chargeback_monthly are rebuilt per billing period (delete + insert in one
transaction); anomalies keep a stable id per (monitor, start day) so re-runs update a row
instead of adding one; alert_state remembers which dedup keys were already delivered.
"""

from __future__ import annotations

VERSION = 400
DESCRIPTION = "showback_daily, chargeback_monthly, showback_gpu_monthly, anomalies, alert_state"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    js = "JSON" if dialect == "duckdb" else "JSONB"
    dbl = "DOUBLE" if dialect == "duckdb" else "DOUBLE PRECISION"
    return [
        f"""CREATE TABLE IF NOT EXISTS showback_daily (
            day DATE NOT NULL,
            billing_period {text} NOT NULL,
            cost_view {text} NOT NULL,
            team {text} NOT NULL,
            cost_centre {text},
            allocation {text} NOT NULL,
            rule {text},
            provider {text},
            billing_account_id {text},
            sub_account_id {text},
            service_name {text},
            line {text} NOT NULL,
            currency {text} NOT NULL,
            cost {money} NOT NULL,
            computed_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS showback_daily_period ON showback_daily (billing_period, cost_view, team)",
        f"""CREATE TABLE IF NOT EXISTS chargeback_monthly (
            billing_period {text} NOT NULL,
            cost_view {text} NOT NULL,
            team {text} NOT NULL,
            cost_centre {text},
            currency {text} NOT NULL,
            direct_cost {money} NOT NULL,
            shared_cost {money} NOT NULL,
            unallocated_cost {money} NOT NULL,
            gpu_cost {money} NOT NULL,
            storage_cost {money} NOT NULL,
            egress_cost {money} NOT NULL,
            total_cost {money} NOT NULL,
            total_cents {money} NOT NULL,
            computed_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS chargeback_monthly_period ON chargeback_monthly (billing_period, cost_view)",
        f"""CREATE TABLE IF NOT EXISTS showback_gpu_monthly (
            billing_period {text} NOT NULL,
            cost_view {text} NOT NULL,
            team {text} NOT NULL,
            gpu_model {text} NOT NULL,
            purchase_option {text} NOT NULL,
            currency {text} NOT NULL,
            cost {money} NOT NULL,
            list_cost {money} NOT NULL,
            savings {money} NOT NULL,
            idle_cost {money} NOT NULL,
            computed_at TIMESTAMP NOT NULL
        )""",
        f"""CREATE TABLE IF NOT EXISTS anomalies (
            anomaly_id {text} NOT NULL PRIMARY KEY,
            monitor_type {text} NOT NULL,
            monitor_key {text} NOT NULL,
            cost_view {text} NOT NULL,
            currency {text},
            status {text} NOT NULL,
            start_day DATE NOT NULL,
            last_day DATE NOT NULL,
            peak_day DATE NOT NULL,
            actual {money} NOT NULL,
            expected {money} NOT NULL,
            delta {money} NOT NULL,
            total_impact {money} NOT NULL,
            pct {dbl},
            score {dbl},
            severity {text} NOT NULL,
            contributors {js},
            first_detected_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            alerted_at TIMESTAMP
        )""",
        "CREATE INDEX IF NOT EXISTS anomalies_monitor ON anomalies (monitor_type, monitor_key, status)",
        f"""CREATE TABLE IF NOT EXISTS alert_state (
            dedup_key {text} NOT NULL,
            channel {text} NOT NULL,
            first_sent_at TIMESTAMP NOT NULL,
            last_sent_at TIMESTAMP NOT NULL,
            send_count INTEGER NOT NULL,
            PRIMARY KEY (dedup_key, channel)
        )""",
    ]
