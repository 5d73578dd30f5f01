"""UI helpers: a daily cost rollup of focus_costs so the FinOps view reads thousands of rows
instead of a year of line items (1M rows/day), and the state that says which (source,
billing period) partitions of the rollup are current (finops.ui.rollup keeps both up to date)."""

from __future__ import annotations

VERSION = 600
DESCRIPTION = "ui_cost_daily rollup, ui_rollup_state, UI indexes"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS ui_cost_daily (
            day DATE NOT NULL,
            x_source {text} NOT NULL,
            x_billing_period {text} NOT NULL,
            provider_name {text},
            service_name {text},
            service_category {text},
            billing_currency {text},
            billed_cost {money} NOT NULL,
            effective_cost {money} NOT NULL,
            row_count BIGINT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS ui_cost_daily_day ON ui_cost_daily (day)",
        "CREATE INDEX IF NOT EXISTS ui_cost_daily_partition ON ui_cost_daily (x_source, x_billing_period)",
        f"""CREATE TABLE IF NOT EXISTS ui_rollup_state (
            x_source {text} NOT NULL,
            x_billing_period {text} NOT NULL,
            loaded_at TIMESTAMP,
            refreshed_at TIMESTAMP NOT NULL,
            row_count BIGINT NOT NULL,
            PRIMARY KEY (x_source, x_billing_period)
        )""",
        "CREATE INDEX IF NOT EXISTS tag_compliance_day ON tag_compliance (snapshot_date, compliant)",
        "CREATE INDEX IF NOT EXISTS policy_actions_created ON policy_actions (created_at)",
        "CREATE INDEX IF NOT EXISTS showback_daily_day ON showback_daily (day, cost_view, currency)",
    ]
