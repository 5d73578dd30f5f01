"""UI helper: cost per resource and billing period, with the team resolved from the team tag's
accepted spellings at rollup time (the showback drill-down and tag-compliance costs read this
instead of scanning and JSON-parsing a month of line items; finops.ui.rollup keeps it current)."""

from __future__ import annotations

VERSION = 601
DESCRIPTION = "ui_resource_monthly rollup"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS ui_resource_monthly (
            x_source {text} NOT NULL,
            x_billing_period {text} NOT NULL,
            provider_name {text},
            resource_id {text},
            resource_name {text},
            service_name {text},
            team {text},
            billing_currency {text},
            billed_cost {money} NOT NULL,
            effective_cost {money} NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS ui_resource_monthly_team ON ui_resource_monthly (x_billing_period, team)",
        "CREATE INDEX IF NOT EXISTS ui_resource_monthly_partition ON ui_resource_monthly (x_source, x_billing_period)",
        "CREATE INDEX IF NOT EXISTS ui_resource_monthly_resource ON ui_resource_monthly (resource_id)",
    ]
