"""SQLAlchemy dialect that lets Great Expectations run its SQL against DuckDB.

Why: GX's SQL engine reads a query's rows *after* handing the connection back
(`with get_connection(): result = execute(...)`, then `result.fetchall()`). SQLAlchemy then
rolls the connection back, and DuckDB drops a pending result on rollback, so every metric
comes back empty (duckdb-engine 0.17, SQLAlchemy 2.1, GX 1.24). Validation only reads a view
over the staging parquet, so there is nothing to commit or roll back: this dialect runs in
DuckDB's autocommit mode (begin / commit / rollback are no-ops) and the results survive.

Importing this module needs duckdb-engine but not GX; it registers `duckdb+finops_ro://`.
"""

from __future__ import annotations

from typing import Any

import duckdb_engine
from sqlalchemy.dialects import registry

SCHEME = "duckdb+finops_ro"


class ReadOnlyDuckDBDialect(duckdb_engine.Dialect):
    """duckdb-engine in autocommit: safe only for read-only use (validation)."""

    supports_statement_cache = True  # SQLAlchemy asks each dialect subclass to opt in explicitly

    def do_begin(self, dbapi_connection: Any) -> None:
        pass

    def do_commit(self, dbapi_connection: Any) -> None:
        pass

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass


registry.register(SCHEME.replace("+", "."), __name__, "ReadOnlyDuckDBDialect")
