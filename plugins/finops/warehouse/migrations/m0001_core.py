"""Core tables: focus_costs (FOCUS 1.2 + x_ lineage), load_log, quarantine."""

from __future__ import annotations

from finops.warehouse.sqltypes import focus_costs_ddl

VERSION = 1
DESCRIPTION = "focus_costs, load_log, quarantine"


def statements(dialect: str) -> list[str]:
    money = "DECIMAL(38,10)" if dialect == "duckdb" else "NUMERIC(38,10)"
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    js = "JSON" if dialect == "duckdb" else "JSONB"
    return [
        focus_costs_ddl(dialect),
        "CREATE INDEX IF NOT EXISTS focus_costs_partition ON focus_costs (x_source, x_billing_period)",
        "CREATE INDEX IF NOT EXISTS focus_costs_charge_day ON focus_costs (charge_period_start)",
        f"""CREATE TABLE IF NOT EXISTS load_log (
            load_id {text} NOT NULL,
            source {text} NOT NULL,
            provider {text} NOT NULL,
            billing_period {text} NOT NULL,
            status {text} NOT NULL,
            manifest_key {text},
            assembly_id {text},
            files {js},
            file_count INTEGER,
            row_count BIGINT,
            raw_billed_total {money},
            focus_billed_total {money},
            focus_effective_total {money},
            currency {text},
            message {text},
            quarantine_path {text},
            run_id {text},
            started_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP
        )""",
        "CREATE INDEX IF NOT EXISTS load_log_partition ON load_log (source, billing_period, finished_at)",
    ]
