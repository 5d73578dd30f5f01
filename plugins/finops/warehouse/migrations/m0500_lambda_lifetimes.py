"""Lambda Cloud instance lifetimes (the raw material of Lambda cost) and the poll log.

`lambda_polls` records every successful poll so the gap rule (finops.focus.lambda_cloud)
can be audited: billing after a last sighting never exceeds one poll interval."""

from __future__ import annotations

VERSION = 500
DESCRIPTION = "lambda_instance_lifetimes, lambda_polls"


def statements(dialect: str) -> list[str]:
    text = "VARCHAR" if dialect == "duckdb" else "TEXT"
    return [
        f"""CREATE TABLE IF NOT EXISTS lambda_instance_lifetimes (
            source {text} NOT NULL,
            instance_id {text} NOT NULL,
            name {text},
            instance_type {text} NOT NULL,
            region {text},
            price_cents_per_hour INTEGER NOT NULL,
            first_seen TIMESTAMP NOT NULL,
            last_seen TIMESTAMP NOT NULL,
            ended_at TIMESTAMP,
            status {text},
            updated_at TIMESTAMP NOT NULL,
            PRIMARY KEY (source, instance_id)
        )""",
        f"""CREATE TABLE IF NOT EXISTS lambda_polls (
            source {text} NOT NULL,
            polled_at TIMESTAMP NOT NULL,
            instance_count INTEGER NOT NULL,
            PRIMARY KEY (source, polled_at)
        )""",
        "CREATE INDEX IF NOT EXISTS lambda_lifetimes_open ON lambda_instance_lifetimes (source, ended_at)",
    ]
