"""`finops migrate --sql`: the warehouse DDL as one script, for a DBA to review and apply.

Where the role that runs the DAGs may not create tables, a DBA applies this script instead of
`finops migrate`; it records every migration in `schema_migrations` exactly as `migrate()` does,
so the DAGs then find nothing to apply. Built from the same migration modules, without
connecting to anything: a DBA reviews it before any connection exists."""

from __future__ import annotations

import re

from finops import __version__
from finops.sql_text import sql_literal
from finops.warehouse.migrations import Migration, all_migrations

DIALECTS = ("postgres", "duckdb")
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")  # what PostgresWarehouse accepts

# The bookkeeping table as each warehouse's migrate() creates it (same columns and defaults).
_SCHEMA_MIGRATIONS = {
    "postgres": "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT, "
    "applied_at TIMESTAMP DEFAULT (now() AT TIME ZONE 'UTC'))",
    "duckdb": "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description VARCHAR, "
    "applied_at TIMESTAMP DEFAULT current_timestamp)",
}


def _statement(sql: str) -> str:
    sql = sql.strip()
    return sql if sql.endswith(";") else sql + ";"


def _block(m: Migration, dialect: str) -> list[str]:
    """One migration in its own transaction, as migrate() applies it."""
    lines = [f"-- {m.version}: {m.description}", "BEGIN;"]
    lines += [_statement(s) for s in m.statements(dialect)]
    lines.append(
        "INSERT INTO schema_migrations (version, description) "
        f"VALUES ({m.version}, {sql_literal(m.description)});"
    )
    lines += ["COMMIT;", ""]
    return lines


def migration_script(dialect: str = "postgres", schema: str = "finops", since: int = 0) -> str:
    """The DDL of every migration newer than `since` (0: all, for an empty warehouse; on an
    existing one, `SELECT max(version) FROM schema_migrations`)."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {dialect!r}")
    if dialect == "postgres" and not _SCHEMA_RE.match(schema):
        raise ValueError(f"schema must be a lower-case identifier (as warehouse.schema), got {schema!r}")
    pending = [m for m in all_migrations() if m.version > since]
    versions = ", ".join(str(m.version) for m in pending) or "none"
    lines = [
        f"-- airflow-finops {__version__}: warehouse DDL, dialect {dialect}"
        + (f", schema {schema}" if dialect == "postgres" else ""),
        f"-- migrations newer than {since}: {versions}",
    ]
    if dialect == "postgres":
        lines += [
            "-- apply with: psql -v ON_ERROR_STOP=1 -f THIS_FILE (the role the DAGs use then needs",
            "-- USAGE on the schema and SELECT / INSERT / UPDATE / DELETE on its tables)",
            f'CREATE SCHEMA IF NOT EXISTS "{schema}";',
            f'SET search_path TO "{schema}";',
        ]
    lines += [_statement(_SCHEMA_MIGRATIONS[dialect]), ""]
    for m in pending:
        lines += _block(m, dialect)
    return "\n".join(lines)
