"""SQLAlchemy dialect that lets Great Expectations run its SQL against DuckDB.

Why: GX's SQL engine reads a query's rows *after* handing the connection back
(`with get_connection(): result = execute(...)`, then `result.fetchall()`). SQLAlchemy then
rolls the connection back, and DuckDB drops a pending result on rollback, so every metric
comes back empty (duckdb-engine 0.17, SQLAlchemy 2.1, GX 1.24). Validation only reads, so
there is nothing to commit or roll back: this dialect runs in DuckDB's autocommit mode
(begin / commit / rollback are no-ops) and the results survive.

It can also hand GX a DuckDB connection we already hold (`shared(con)`): the embedded
warehouse validates a partition inside the very transaction that inserted it, so GX must
see that transaction's uncommitted rows. GX only takes a connection string plus
`create_engine` kwargs, so the connection travels as a token in `connect_args`.

Importing this module needs duckdb-engine but not GX; it registers `duckdb+finops_ro://`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import duckdb_engine
from sqlalchemy.dialects import registry
from sqlalchemy.exc import NoSuchTableError

SCHEME = "duckdb+finops_ro"
SHARED_ARG = "finops_shared"
_SHARED: dict[str, duckdb.DuckDBPyConnection] = {}


class _BorrowedConnection(duckdb_engine.ConnectionWrapper):
    """A connection GX may use but never close: its owner does (SQLAlchemy closes pooled
    connections on dispose)."""

    def close(self) -> None:
        self.closed = True


class ReadOnlyDuckDBDialect(duckdb_engine.Dialect):
    """duckdb-engine in autocommit: safe only for read-only use (validation)."""

    supports_statement_cache = True  # SQLAlchemy asks each dialect subclass to opt in explicitly

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        token = cparams.pop(SHARED_ARG, None)
        if token is None:
            return super().connect(*cargs, **cparams)
        try:
            return _BorrowedConnection(_SHARED[token])
        except KeyError:
            raise RuntimeError("shared DuckDB connection is no longer registered") from None

    def get_columns(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> Any:
        """Skip reflection: duckdb-engine inherits PostgreSQL's catalog query, which fails on
        DuckDB (no pg_collation) and, inside a transaction, aborts it. GX catches this error
        and reads the columns from `SELECT * ... LIMIT 1` instead, which works everywhere."""
        raise NoSuchTableError(table_name)

    def get_pk_constraint(
        self, connection: Any, table_name: str, schema: str | None = None, **kw: Any
    ) -> Any:
        """No catalog query either: the inherited one compiles a PostgreSQL `unnest` construct
        that SQLAlchemy warns about in every task log, and validation needs no primary key."""
        return {"constrained_columns": [], "name": None}

    def do_begin(self, dbapi_connection: Any) -> None:
        pass

    def do_commit(self, dbapi_connection: Any) -> None:
        pass

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass


@contextmanager
def shared(con: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    """`create_engine` kwargs that make every pooled connection `con` itself, while inside."""
    token = uuid.uuid4().hex
    _SHARED[token] = con
    try:
        yield {"connect_args": {SHARED_ARG: token}}
    finally:
        _SHARED.pop(token, None)


registry.register(SCHEME.replace("+", "."), __name__, "ReadOnlyDuckDBDialect")
