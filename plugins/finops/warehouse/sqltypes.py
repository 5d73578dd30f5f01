"""Logical FOCUS kinds -> SQL types per dialect. Money is exact decimal everywhere."""

from __future__ import annotations

from finops.focus.schema import (
    COLUMNS,
    MONEY_PRECISION,
    MONEY_SCALE,
    QUANTITY_PRECISION,
    QUANTITY_SCALE,
    Column,
    Kind,
)

Dialect = str  # "duckdb" | "postgres"

_TYPES: dict[str, dict[Kind, str]] = {
    "duckdb": {
        Kind.STRING: "VARCHAR",
        Kind.MONEY: f"DECIMAL({MONEY_PRECISION},{MONEY_SCALE})",
        Kind.QUANTITY: f"DECIMAL({QUANTITY_PRECISION},{QUANTITY_SCALE})",
        Kind.TIMESTAMP: "TIMESTAMP",
        Kind.JSON: "JSON",
    },
    "postgres": {
        Kind.STRING: "TEXT",
        Kind.MONEY: f"NUMERIC({MONEY_PRECISION},{MONEY_SCALE})",
        Kind.QUANTITY: f"NUMERIC({QUANTITY_PRECISION},{QUANTITY_SCALE})",
        Kind.TIMESTAMP: "TIMESTAMP",
        Kind.JSON: "JSONB",
    },
}


def sql_type(kind: Kind, dialect: Dialect) -> str:
    return _TYPES[dialect][kind]


def column_ddl(col: Column, dialect: Dialect) -> str:
    null = "" if col.nullable else " NOT NULL"
    return f"{col.snake} {sql_type(col.kind, dialect)}{null}"


def focus_costs_ddl(dialect: Dialect, table: str = "focus_costs") -> str:
    cols = ",\n  ".join(column_ddl(c, dialect) for c in COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {table} (\n  {cols}\n)"
