"""DuckDB: drop the ART indexes on focus_costs.

Measured on a 2M-row month (bench/ingest.py): a repeat replace of a partition took 87 s with
them and 51 s without, at the same peak RSS. DuckDB's per-row-group min/max zone maps already
prune the (x_source, x_billing_period) and charge-date filters these indexes served; ART
indexes only pay for point lookups, which the warehouse does not do. PostgreSQL keeps its
B-tree indexes (there they are what makes partition deletes and date ranges cheap)."""

from __future__ import annotations

VERSION = 2
DESCRIPTION = "duckdb: drop focus_costs ART indexes (zone maps suffice; faster replaces)"


def statements(dialect: str) -> list[str]:
    if dialect != "duckdb":
        return []
    return [
        "DROP INDEX IF EXISTS focus_costs_partition",
        "DROP INDEX IF EXISTS focus_costs_charge_day",
    ]
